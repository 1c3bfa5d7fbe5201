#!/usr/bin/python3
"""Issue 48's tools on a spoken test clip (espeak-ng, made here):

  - tools/augment.py: each condition does what it says, measured on its
    output: the peak or active-speech level, the SNR of the added noise,
    the band limits of the 8 kHz, telephone and SSB radio sources, the
    radio's frequency shift, the room's reverberation time, the
    microphone's response, the DC offset; the same seed gives the same
    bytes; a bad condition is one line and exit 2;
  - the shipped models (models/speech, speech-vbr, speech-3k2, speech-3k2-vbr) encode and
    decode the clip under every condition without refusing, falling silent
    or clipping (the decoded level within 20 dB of the input's over its active speech,
    no sample at full scale);
  - tools/intelligibility.py (STOI, ESTOI), by the properties the papers
    give, there being no reference implementation to install: identical
    signals score exactly 1; a gain changes nothing; more noise scores
    lower at every step from 30 to -10 dB SNR; white noise at 0 dB lands
    where the papers' figures put it; a misaligned copy scores lower the
    further it is shifted; a clip too short for one 384 ms segment has no
    score; the command refuses a missing file in one line; band by band,
    the bands' mean is STOI, and a copy whose spectrum over 1 kHz is noise
    keeps the bands under it and loses those over it.

Usage: tests/voices_test.py [FRAE]   Prints "N passed, N failed" last."""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from checks import check, summary  # noqa: E402
import augment as A  # noqa: E402
import intelligibility as I  # noqa: E402

TEXT = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue "
        "background. It is easy to tell the depth of a well.")
RATE = 16000


def spectrum(x):
    return np.fft.rfftfreq(len(x), 1.0 / RATE), np.abs(np.fft.rfft(x)) ** 2


def clip(tmp):
    raw, wav = os.path.join(tmp, "raw.wav"), os.path.join(tmp, "clean.wav")
    subprocess.run(["espeak-ng", "-v", "en-us+m3", "-s", "150", "-w", raw, TEXT], check=True)
    subprocess.run(["sox", "-R", raw, "-r", "16000", "-b", "16", wav, "norm", "-3"], check=True)
    return A.read_wav(wav)[0], wav


def augment_checks(x, tmp):
    y = A.apply(x, "level:-40")
    check(abs(A.db(np.abs(y).max()) + 40) < 0.01, "level:-40: peak at -40 dBFS (%.3f)" %
          A.db(np.abs(y).max()))
    y = A.apply(x, "level:-3")
    check(abs(A.db(np.abs(y).max()) + 3) < 0.01, "level:-3: peak at -3 dBFS")
    y = A.apply(x, "rms:-12")
    m = A.active(x)
    lv = A.db(np.sqrt(np.mean(y[m] ** 2)))
    check(abs(lv + 12) < 0.01 and A.db(np.abs(y).max()) <= -1.0 + 1e-9,
          "rms:-12: active speech at -12 dBFS RMS (%.2f), peak at most -1 dBFS (%.2f)" % (
              lv, A.db(np.abs(y).max())))
    for snr in (5, 10, 30):
        for colour in ("white", "pink", "brown"):
            y = A.apply(x, "noise:%d:%s" % (snr, colour), seed=3)
            got = 10 * np.log10(np.mean(x[m] ** 2) / np.mean((y - x)[m] ** 2))
            check(abs(got - snr) < 0.01, "noise:%d:%s: SNR %.3f dB over the active speech" % (
                snr, colour, got))
    # the noise's colour: pink falls 10 dB a decade, brown 20
    for colour, slope in (("white", 0), ("pink", -10), ("brown", -20)):
        nz = A.noise(1 << 18, colour, np.random.default_rng(1))
        f, p = spectrum(nz)
        lo = 10 * np.log10(p[(f > 200) & (f < 400)].mean())
        hi = 10 * np.log10(p[(f > 2000) & (f < 4000)].mean())
        check(abs((hi - lo) - slope) < 1.0, "%s noise: %.1f dB a decade (%d)" % (
            colour, hi - lo, slope))
    y = A.apply(x, "nb8k")
    f, p = spectrum(y)
    above = 10 * np.log10(p[f > 4000].sum() / p.sum() + 1e-30)
    check(above < -100, "nb8k: nothing above 4 kHz (%.0f dB of the total)" % above)
    y = A.apply(x, "tel")
    f, p = spectrum(y)
    inb = p[(f > 300) & (f < 3400)].sum()
    below = 10 * np.log10(p[f < 250].sum() / inb)
    above = 10 * np.log10(p[f > 3500].sum() / inb)
    check(below < -40 and above < -40, "tel: 300-3400 Hz; below 250 Hz %.1f dB, above 3.5 kHz "
          "%.1f dB of the band" % (below, above))
    # an SSB radio 50 Hz off tune: a 1 kHz tone comes out at 1050 Hz, and
    # the channel is 300-2700 Hz moved by 50 (tones of whole cycles in 1 s,
    # so that nothing leaks)
    t = np.arange(RATE) / RATE
    tones = sum(0.2 * np.sin(2 * np.pi * hz * t) for hz in (200, 1000, 3000))
    f, p = spectrum(A.apply(tones, "ssb:50"))
    share = [10 * np.log10(p[(f > hz - 10) & (f < hz + 10)].sum() / p.sum() + 1e-30)
             for hz in (1050, 1000, 250, 3050)]
    check(share[0] > -0.01 and max(share[1:]) < -100,
          "ssb:50: 1 kHz moved to 1050 Hz (%.3f dB of the power), nothing at 1000, 250 or "
          "3050 Hz (%.0f dB at most)" % (share[0], max(share[1:])))
    y = A.apply(x, "ssb:-50")
    f, p = spectrum(y)
    inb = p[(f > 250) & (f < 2650)].sum()
    out = 10 * np.log10(p[(f < 200) | (f > 2750)].sum() / inb)
    check(out < -40, "ssb:-50: the channel 250-2650 Hz; %.1f dB outside it" % out)
    # the room: the impulse response's Schroeder decay from -5 to -35 dB
    for rt in (0.3, 0.6):
        h = A.room(rt, np.random.default_rng(2))
        edc = 10 * np.log10(np.cumsum((h ** 2)[::-1])[::-1] / np.sum(h ** 2))
        t5, t35 = np.argmax(edc < -5) / RATE, np.argmax(edc < -35) / RATE
        got = 2 * (t35 - t5)
        check(abs(got - rt) < 0.1 * rt, "reverb:%.1f: RT60 %.3f s by the Schroeder decay" % (
            rt, got))
    y = A.apply(x, "reverb:0.5")
    check(abs(np.abs(y).max() - np.abs(x).max()) < 1e-12, "reverb: the peak kept")
    y = A.apply(x, "mic:-3:6")
    f, px = spectrum(x)
    _, py = spectrum(y)
    want = A.mic_response(-3, 6)
    for hz in (300, 1000, 3000, 6000):
        k = int(round(hz * len(x) / RATE))
        got = 10 * np.log10(py[k] / px[k])
        check(abs(got - 20 * np.log10(want(np.array([hz]))[0])) < 0.01,
              "mic:-3:6: %.2f dB at %d Hz, as designed" % (got, hz))
    y = A.apply(x, "dc:0.05")
    check(abs(np.mean(y - x) - 0.05) < 1e-12, "dc:0.05: the mean moved by 0.05")
    a = os.path.join(tmp, "a.wav")
    b = os.path.join(tmp, "b.wav")
    c = os.path.join(tmp, "c.wav")
    src = os.path.join(tmp, "clean.wav")
    tool = os.path.join(ROOT, "tools", "augment.py")
    for out, seed in ((a, "7"), (b, "7"), (c, "8")):
        subprocess.run([sys.executable, tool, src, out, "noisy,reverb", "--seed", seed],
                       check=True)
    same = open(a, "rb").read() == open(b, "rb").read()
    differ = open(a, "rb").read() != open(c, "rb").read()
    check(same and differ, "the same seed gives the same bytes, another seed other noise")
    p = subprocess.run([sys.executable, tool, src, a, "hum:50"], capture_output=True, text=True)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
          "an unknown condition: exit 2 and one line", p.stderr)


CONDITIONS = ["clean", "narrowband", "nb8k", "noise:5", "noisy", "noise:30", "quiet",
              "level:-3", "loud", "radio", "reverb", "reverb:1.0", "mic", "mic:6:-6", "dc",
              "tel,noise:15,level:-30"]


def decode_checks(x, frae, tmp):
    models = [os.path.join(ROOT, "models", m + ".safetensors")
              for m in ("speech", "speech-vbr", "speech-3k2", "speech-3k2-vbr")]
    for cond in CONDITIONS:
        y = A.apply(x, cond, seed=5)
        src = os.path.join(tmp, "in.wav")
        A.write_wav(src, y)
        y = A.read_wav(src)[0]
        m = A.active(y - np.mean(y))
        level = A.db(np.sqrt(np.mean((y - np.mean(y))[m] ** 2)))
        bad = []
        for model in models:
            fbs, out = os.path.join(tmp, "x.fbs"), os.path.join(tmp, "out.wav")
            p = subprocess.run([frae, "encode", model, src, "-o", fbs], capture_output=True,
                               text=True)
            q = p.returncode == 0 and subprocess.run(
                [frae, "decode", model, fbs, "--wav", out], capture_output=True, text=True)
            name = os.path.basename(model)
            if p.returncode != 0 or q.returncode != 0:
                bad.append("%s refused: %s" % (name, (p.stderr or q.stderr).strip()[-200:]))
                continue
            z = A.read_wav(out)[0]
            n = min(len(z), len(m))
            got = A.db(np.sqrt(np.mean(z[:n][m[:n]] ** 2)))
            full = int(np.sum(np.abs(z) >= 32767 / 32768))
            if got < level - 20 or got > level + 20:
                bad.append("%s: decoded at %.1f dBFS against %.1f in" % (name, got, level))
            if full:
                bad.append("%s: %d samples at full scale" % (name, full))
        check(not bad, "%s (%.1f dBFS RMS in): every shipped model decodes it, none silent "
              "nor clipped" % (cond, level), "; ".join(bad))


def stoi_checks(x, tmp):
    s, e = I.scores(x, x, RATE)
    check(s == 1.0 and e == 1.0, "identical signals: STOI and ESTOI exactly 1 (%r, %r)" % (s, e))
    y = A.apply(x, "noise:5:pink", seed=1)
    s1, e1 = I.scores(x, y, RATE)
    s2, e2 = I.scores(x, 0.01 * y, RATE)
    s3, e3 = I.scores(0.3 * x, y, RATE)
    check(max(abs(s1 - s2), abs(e1 - e2), abs(s1 - s3), abs(e1 - e3)) < 1e-9,
          "a gain on either signal changes nothing (%.6f, %.6f)" % (s1, e1))
    for colour in ("white", "pink"):
        got = [I.scores(x, A.apply(x, "noise:%d:%s" % (snr, colour), seed=1), RATE)
               for snr in (30, 20, 10, 5, 0, -5, -10)]
        st, es = [g[0] for g in got], [g[1] for g in got]
        check(all(a > b for a, b in zip(st, st[1:])) and all(a > b for a, b in zip(es, es[1:])),
              "%s noise from 30 to -10 dB SNR: STOI %s, ESTOI %s, each step lower" % (
                  colour, " ".join("%.3f" % v for v in st), " ".join("%.3f" % v for v in es)))
        if colour == "white":
            check(0.70 <= st[4] <= 0.90 and 0.40 <= es[4] <= 0.70,
                  "white noise at 0 dB SNR: STOI %.3f in [0.70, 0.90], ESTOI %.3f in "
                  "[0.40, 0.70] (Taal 2011, Jensen 2016)" % (st[4], es[4]))
    got = [I.scores(x, np.concatenate([np.zeros(lag), x])[:len(x)], RATE)
           for lag in (0, 80, 160, 480, 1600)]
    check(all(a[0] > b[0] and a[1] > b[1] for a, b in zip(got, got[1:])) and got[-1][0] < 0.3,
          "shifted by 0, 5, 10, 30, 100 ms: lower with every step (STOI %s)" % " ".join(
              "%.3f" % g[0] for g in got))
    s, e = I.scores(x[:4000], x[:4000], RATE)
    check(np.isnan(s) and np.isnan(e), "a 0.25 s clip: no score (nan)")
    # band by band: their mean is STOI; a copy whose spectrum over 1 kHz
    # is noise keeps the bands under it (STOI's clipping at the clean
    # envelope's times 6.6 leaves the noisy bands some correlation)
    bands = I.band_scores(x, y, RATE)
    freqs = np.fft.rfftfreq(len(x), 1.0 / RATE)
    low, high = np.fft.rfft(x), np.fft.rfft(np.random.default_rng(2).standard_normal(len(x)))
    low[freqs > 1000], high[freqs <= 1000] = 0, 0
    high = np.fft.irfft(high, len(x))
    mixed = np.fft.irfft(low, len(x)) + 0.3 * np.std(x) / np.std(high) * high
    got = I.band_scores(x, mixed, RATE)
    centres = I.MIN_FREQ * 2.0 ** (np.arange(I.BANDS) / 3)
    check(len(bands) == I.BANDS and abs(bands.mean() - s1) < 1e-12
          and np.all(I.band_scores(x, x, RATE) > 1 - 1e-12)
          and np.all(got[centres < 700] > 0.99) and np.all(got[centres > 1500] < 0.7)
          and I.band_scores(x[:4000], x[:4000], RATE) is None,
          "STOI band by band: their mean is STOI (%.6f), a copy's all 1; noise over 1 kHz: "
          "%.3f under 700 Hz at least, %.3f over 1.5 kHz at most; none for a 0.25 s clip"
          % (bands.mean(), got[centres < 700].min(), got[centres > 1500].max()))
    tool = os.path.join(ROOT, "tools", "intelligibility.py")
    p = subprocess.run([sys.executable, tool, os.path.join(tmp, "clean.wav"),
                        os.path.join(tmp, "none.wav")], capture_output=True, text=True)
    check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
          "a missing file: exit 2 and one line", p.stderr)
    p = subprocess.run([sys.executable, tool, os.path.join(tmp, "clean.wav"),
                        os.path.join(tmp, "clean.wav")], capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.strip() == "STOI 1.0000 ESTOI 1.0000",
          "the command prints both scores", p.stdout + p.stderr)


def main():
    frae = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "frae")
    with tempfile.TemporaryDirectory(prefix="frae-voices-") as tmp:
        x, _ = clip(tmp)
        augment_checks(x, tmp)
        stoi_checks(x, tmp)
        decode_checks(x, frae, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
