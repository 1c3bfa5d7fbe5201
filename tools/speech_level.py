#!/usr/bin/python3
"""Active speech level (ITU-T P.56, method B) and the level study of
issue 50: does decoded speech keep its loudness?

active_level(x, fs) is P.56's method B on samples in [-1, 1): the
envelope is the rectified signal smoothed twice by a first-order filter
of 30 ms; a sample is active at threshold c when the envelope reached c
within the last 200 ms (the hangover); for each threshold c (2 dB apart,
-120 to 0 dBFS) the level of the active samples is A(c) = 10 log10(sum
x^2 / their count), and the active level is A where A(c) - 20 log10 c
falls to the margin, 15.9 dB (interpolated between thresholds).  Levels
are dB relative to full scale by power: a full-scale square wave is 0
dBFS, a full-scale sine -3.01.  Only NumPy.

The study (python3 tools/speech_level.py --study, from the repository
root, after make): clips of held-out voices (the synthetic corpus's test
voices, the recorded Dutch cast and, when it is made, the many-voices
corpus's held-out speakers: scripts/make-corpus.sh, --human, --voices),
each in six conditions (loud: peak at -6 dBFS; compressed: active level
-12 dBFS through a soft limiter that keeps the peaks under -1 dBFS;
normal: active level -26 dBFS; quiet: -40 dBFS; narrowband: 8 kHz audio brought back to 16 kHz by
sox, at -26; noisy: white noise 15 dB under the speech, at -26), through
each model in --models DIR (models/: the shipped ones; frae encode, frae
decode --wav), Opus 6 kbit/s and Codec2 1300 (as tools/demo.py runs
them); it prints, per system and condition, the mean change of level
(decoded - input, both over the samples P.56 finds active in the clean
clip) and its range over the clips, a Markdown table (docs/results.md
has one run's).

Usage: tools/speech_level.py FILE.wav ...     the level of each file
       tools/speech_level.py --study [--clips N] [--frae build/frae] [--models DIR]"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

MARGIN_DB = 15.9  # P.56: the active level lies this far above the threshold
TIME_CONSTANT = 0.03  # s, the envelope's smoothing
HANGOVER = 0.2  # s


def smooth(x, g):
    """y[n] = g y[n-1] + (1 - g) x[n] from y[-1] = 0, in blocks (a
    matrix product a block, the carry between them)."""
    n, b = len(x), 256
    pad = (-n) % b
    xb = np.concatenate([x, np.zeros(pad)]).reshape(-1, b)
    t = np.arange(b)
    kern = np.where(t[:, None] >= t[None, :], g ** (t[:, None] - t[None, :]), 0.0)
    z = (1 - g) * xb @ kern.T  # each block from a zero start
    decay = g ** (t + 1)
    carry = 0.0
    for i in range(len(z)):
        z[i] += carry * decay
        carry = z[i, -1]
    return z.reshape(-1)[:n]


def active_level(x, fs=16000):
    """(active level in dBFS, activity in [0, 1]) of samples x in [-1, 1),
    by ITU-T P.56 method B.  Silence: (-inf, 0)."""
    level, activity, _ = active_level_mask(x, fs)
    return level, activity


def active_level_mask(x, fs=16000):
    """active_level's (level, activity), and the mask of the samples
    active at the threshold nearest the crossing (None for silence)."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    sq = float(np.sum(x * x))
    if n == 0 or sq == 0:
        return -np.inf, 0.0, None
    g = np.exp(-1.0 / (fs * TIME_CONSTANT))
    q = smooth(smooth(np.abs(x), g), g)
    hang = int(np.ceil(HANGOVER * fs))
    idx = np.arange(n)
    levels, margins, counts, masks = [], [], [], []
    for c_db in np.arange(-120.0, 0.01, 2.0):
        c = 10 ** (c_db / 20)
        last = np.maximum.accumulate(np.where(q >= c, idx, -hang - 1))
        mask = idx - last <= hang
        a = int(np.count_nonzero(mask))
        if a == 0:
            break
        level = 10 * np.log10(sq / a)
        levels.append(level)
        margins.append(level - c_db)
        counts.append(a)
        masks.append(mask)
    if not levels:
        return -np.inf, 0.0, None
    # the margin falls as the threshold rises: find where it crosses M
    for j in range(1, len(levels)):
        if margins[j] <= MARGIN_DB:
            if margins[j - 1] <= MARGIN_DB:
                break
            t = (margins[j - 1] - MARGIN_DB) / (margins[j - 1] - margins[j])
            level = levels[j - 1] + t * (levels[j] - levels[j - 1])
            count = counts[j - 1] + t * (counts[j] - counts[j - 1])
            return float(level), float(count) / n, masks[j - 1 if t < 0.5 else j]
    # never crosses (a signal above the margin at every threshold, or
    # below it at the first): the lowest threshold's
    return float(levels[0]), counts[0] / n, masks[0]


def level_over(x, mask):
    """The level (dBFS) of x over the samples mask marks (x cut or padded
    with silence to the mask's length)."""
    x = np.asarray(x, dtype=np.float64)[:len(mask)]
    x = np.concatenate([x, np.zeros(len(mask) - len(x))])
    return 10 * np.log10(np.sum(x[mask] ** 2) / np.count_nonzero(mask))


def read_wav(path):
    """16-bit PCM or 32-bit float mono WAV: (samples in [-1, 1), rate)."""
    with wave.open(path) as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError("%s: not 16-bit mono" % path)
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return x.astype(np.float64) / 32768.0, w.getframerate()


def write_wav(path, x, fs=16000):
    """16-bit mono PCM; x must lie within [-1, 1)."""
    x = np.asarray(x)
    if np.abs(x).max() > 32767 / 32768:
        raise ValueError("%s: the signal would clip" % path)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(fs)
        w.writeframes(np.round(x * 32768).astype("<i2").tobytes())


def sh(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


# ---- the conditions ---------------------------------------------------------

CONDITIONS = ("loud", "compressed", "normal", "quiet", "narrowband", "noisy")
CONDITION_TEXT = {
    "loud": "loud (peak -6 dBFS)",
    "compressed": "compressed (active -12 dBFS, peaks limited)",
    "normal": "normal (active -26 dBFS)",
    "quiet": "quiet (active -40 dBFS)",
    "narrowband": "narrowband (8 kHz source, -26)",
    "noisy": "noisy (white noise, 15 dB SNR, -26)",
}


def at_level(x, level_db):
    return x * 10 ** ((level_db - active_level(x)[0]) / 20)


def condition(x, what, tmp, seed=1):
    """The clip x (16 kHz, in [-1, 1)) in one condition."""
    if what == "loud":
        return x * (10 ** (-6 / 20) / np.abs(x).max())
    if what == "compressed":
        # a loud, limited take, as tools/augment.py's rms:-12: a tanh
        # limiter keeps the peaks under -1 dBFS and the gain lands the
        # active level on -12; a vocoder's phases are not the take's, so
        # its peaks overshoot full scale where the take's did not
        lim, want = 10 ** (-1 / 20), -12.0
        y = at_level(x, want)
        for _ in range(20):
            z = lim * np.tanh(y / lim)
            y = y * 10 ** ((want - active_level(z)[0]) / 20)
        return lim * np.tanh(y / lim)
    if what == "normal":
        return at_level(x, -26)
    if what == "quiet":
        return at_level(x, -40)
    if what == "narrowband":
        a, b, c = (os.path.join(tmp, n) for n in ("nb-in.wav", "nb8.wav", "nb16.wav"))
        write_wav(a, x * (0.5 / np.abs(x).max()))
        sh(["sox", "-R", a, "-r", "8000", b])
        sh(["sox", "-R", b, "-r", "16000", c])
        return at_level(read_wav(c)[0], -26)
    if what == "noisy":
        s = at_level(x, -26)
        rng = np.random.default_rng(seed)
        noise = rng.standard_normal(len(s)) * 10 ** ((-26 - 15) / 20)
        return s + noise
    raise ValueError(what)


# ---- the systems, through the same path -----------------------------------

def frae_codec(frae, model, env=None):
    def run(inp, out, tmp):
        fbs = os.path.join(tmp, "x.fbs")
        sh([frae, "encode", model, inp, "-o", fbs])
        sh([frae, "decode", fbs, "--wav", out], env=env)
    return run


def opus6(inp, out, tmp):
    ogg = os.path.join(tmp, "x.opus")
    sh(["opusenc", "--quiet", "--bitrate", "6", inp, ogg])
    sh(["opusdec", "--quiet", "--rate", "16000", ogg, out])


def codec2(mode):
    def run(inp, out, tmp):  # as tools/demo.py: 8 kHz raw through c2enc, c2dec
        raw8, c2, dec = (os.path.join(tmp, n) for n in ("in8.raw", "x.c2", "out8.raw"))
        sh(["sox", "-R", inp, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
            "-t", "raw", raw8])
        sh(["c2enc", mode, raw8, c2])
        sh(["c2dec", mode, c2, dec])
        sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t",
            "raw", dec, "-r", "16000", out])
    return run


def level_changes(systems, clips, conditions, tmp):
    """{(system, condition): [decoded - input level, dB, per clip]}: both
    over the same samples, those P.56 finds active in the clean clip (so
    that noise, or a codec's quieter pauses, do not move the activity and
    with it the level)."""
    out = {}
    for ci, (name, x) in enumerate(clips):
        mask = active_level_mask(x)[2]
        for cond in conditions:
            y = condition(x, cond, tmp, seed=ci + 1)
            inp = os.path.join(tmp, "in.wav")
            write_wav(inp, y)
            ref = level_over(read_wav(inp)[0], mask)
            for label, run in systems:
                dec = os.path.join(tmp, "dec.wav")
                run(inp, dec, tmp)
                out.setdefault((label, cond), []).append(
                    level_over(read_wav(dec)[0], mask) - ref)
    return out


def load_clip(path):
    x, fs = read_wav(path)
    if fs != 16000:
        raise ValueError("%s: %d Hz" % (path, fs))
    return os.path.basename(path)[:-4], x


def study(a):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frae = a.frae or os.path.join(root, "build", "frae")
    synth = sorted(glob.glob(os.path.join(root, "data/corpus/wav/test/*.wav")))
    human = sorted(glob.glob(os.path.join(root, "data/corpus/human/wav/test/*.wav")))
    voices = sorted(glob.glob(os.path.join(root, "data/corpus/voices/wav/test/*.wav")))
    if not synth or not human:
        sys.exit("speech_level.py: no held-out clips: scripts/make-corpus.sh and "
                 "scripts/make-corpus.sh --human --per-speaker 150 --test-per-speaker 20")
    pick = lambda files: files[:: max(1, len(files) // a.clips)][:a.clips]
    clips = [load_clip(p) for p in pick(synth) + pick(human) + pick(voices)]
    models = a.models or os.path.join(root, "models")
    env = dict(os.environ, FRAE_MODELS=models)
    systems = [("FRAE %s" % os.path.basename(m)[:-len(".safetensors")],
                frae_codec(frae, m, env))
               for m in sorted(glob.glob(os.path.join(models, "*.safetensors")))]
    systems += [("Opus 6 kbit/s", opus6), ("Codec2 1300", codec2("1300"))]
    with tempfile.TemporaryDirectory() as tmp:
        ch = level_changes(systems, clips, CONDITIONS, tmp)
    print("%d clips (%d synthetic, %d human, %d many-voices held-out), %s" % (
        len(clips), len(pick(synth)), len(pick(human)), len(pick(voices)),
        ", ".join(CONDITIONS)))
    print("| system | " + " | ".join(CONDITION_TEXT[c] for c in CONDITIONS) + " |")
    print("| --- " * (len(CONDITIONS) + 1) + "|")
    for label, _ in systems:
        cells = ["%+.1f (%+.1f to %+.1f)" % (np.mean(v), np.min(v), np.max(v))
                 for v in (ch[(label, c)] for c in CONDITIONS)]
        print("| %s | %s |" % (label, " | ".join(cells)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*")
    p.add_argument("--study", action="store_true")
    p.add_argument("--clips", type=int, default=6, help="clips of each held-out set (6)")
    p.add_argument("--frae")
    p.add_argument("--models", help="the models' directory: each *.safetensors in it (models/)")
    a = p.parse_args()
    if a.study:
        return study(a)
    for f in a.files:
        level, act = active_level(read_wav(f)[0], read_wav(f)[1])
        print("%s: active level %.2f dBFS, activity %.1f%%" % (f, level, 100 * act))


if __name__ == "__main__":
    main()
