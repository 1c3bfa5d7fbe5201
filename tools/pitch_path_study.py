#!/usr/bin/python3
"""What the pitch path costs a listener: STOI of each held-out clip through
the vocoder and through a variable-rate codec, with frae's f0 and with
another tracker's (aubio's yinfft), coded and not
(docs/2026-12-07-seeds.md).  Per clip of the corpus's held-out side:

  - vocoder alone, frae's f0: frae features --pitch, then frae vocode;
  - vocoder alone, aubio's f0: the same frames with the f0 of demo.py's
    reference tracker (aubio's yinfft, the track run.sh's pitch errors are
    counted against) wherever both it and frae's tracker read voiced;
    frae's voicing throughout, so that only the f0 differs;
  - coded: frae encode MODEL on those frames (with frae's f0), frae decode
    --wav (the decoder's own audio);
  - coded envelope, input f0: the decoded frames with the encoder's input
    f0 wherever both are voiced (the pitch coder's error taken away),
    through frae vocode;
  - coded envelope, aubio's f0: the same with aubio's f0;
  - coded from aubio's f0: the frames with aubio's f0 encoded and decoded;
  - the same three with frae's f0 refined (refined_f0(): each voiced
    frame's f0 moved within +-60 cents to where the mean of its harmonics'
    square-root magnitudes up to 3.5 kHz is largest), the numpy model that
    chose the tracker's last step, frae_f0_refine (frae's own f0 has been
    refined since, so this column refines it again).

STOI (a clip too short for a 384 ms segment has none) is intelligibility.py's, at the best of eleven shifts within +-10 ms
(every variant alike; a study's own alignment is human_study.py's, so
these figures sit above its).  Also the coded f0's mean |f0 / f0 in - 1|
over the frames voiced at both ends, and the bitrate.

Usage: tools/pitch_path_study.py [--frae BIN] [--model PATH]
       [--corpus DIR] [--jobs N] [--sets a,b,...] [--split train --every N]
       [--condition NAME]  (augment.py's, as human_study.py applies it)
Prints a markdown table per speaker set."""
import argparse
import collections
import multiprocessing
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import augment  # noqa: E402  (16-bit WAV in and out)
import demo  # noqa: E402  (the reference tracker, aubio's, and running frae)
import intelligibility  # noqa: E402  (STOI)
import pitch_refine_ref  # noqa: E402  (the refinement's reference)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOP, RATE = 160, 16000
VARIANTS = ("vocoder alone, frae's f0", "vocoder alone, aubio's f0", "coded",
            "coded envelope, input f0", "coded envelope, aubio's f0",
            "coded from aubio's f0", "vocoder alone, refined f0",
            "coded envelope, refined f0", "coded from refined f0")
# refined_f0's window and the FFT it reads the harmonics from (frae's
# tracker reads 4096 points: docs/2026-12-07-pitch-refine.md)
REFINE_WIN, REFINE_FFT = 640, 8192


def refined_f0(x, f0, voiced):
    """Each voiced frame's f0 moved within +-60 cents to where its harmonics
    up to 3.5 kHz have the largest mean square-root magnitude in a Hann
    window of REFINE_WIN samples centred on the frame (t HOP + 200): the
    model that chose frae_f0_refine, by its reference (tools/
    pitch_refine_ref.py) at this study's FFT and without the valley test
    frae added after it (docs/2026-12-07-pitch-refine.md)."""
    out = f0.copy()
    pad = np.concatenate([np.zeros(REFINE_WIN), x, np.zeros(2 * REFINE_WIN)])
    for t in np.nonzero(voiced)[0]:
        c = t * HOP + 200 + REFINE_WIN
        out[t] = pitch_refine_ref.refine(pad[c - REFINE_WIN // 2:c + REFINE_WIN // 2], f0[t], RATE,
                                         n_fft=REFINE_FFT, valleys=False)[0]
    return out


def stoi(x, wav):
    y = augment.read_wav(wav)[0]
    y = np.concatenate([y, np.zeros(max(0, len(x) - len(y)))])[:len(x)]
    return max(intelligibility.scores(x, np.roll(y, s), RATE)[0] for s in range(-160, 161, 32))


def vocoded(a, frames, f0, work, name):
    g = frames.copy()
    g[:, -2] = f0
    np.save(os.path.join(work, name + ".npy"), g.astype(np.float32))
    demo.sh([a.frae, "vocode", os.path.join(work, name + ".npy"), "-o", os.path.join(work, name + ".wav")])
    return os.path.join(work, name + ".wav")


def coded(a, frames, work, name):
    """(decoded frames, decoder's WAV, kbit/s) of frames through the codec."""
    p = lambda ext: os.path.join(work, name + ext)
    np.save(p(".npy"), frames.astype(np.float32))
    out = demo.sh([a.frae, "encode", a.model, p(".npy"), "-o", p(".fbs")])
    demo.sh([a.frae, "decode", p(".fbs"), "-o", p(".out.npy"), "--wav", p(".wav")])
    return np.load(p(".out.npy")), p(".wav"), float(re.search(r"= ([\d.]+) kbit/s", out).group(1))


def f0_error(dec, ref):
    both = (dec[:, -1] > 0.5) & (ref[:, -1] > 0.5) & (ref[:, -2] > 0)
    return float(np.mean(np.abs(dec[both, -2] / ref[both, -2] - 1))) if both.any() else np.nan


def one_clip(job):
    a, clip, wav = job
    with tempfile.TemporaryDirectory() as work:
        x = augment.read_wav(wav)[0]
        if a.condition != "clean":  # as human_study.py's --conditions: measured against the input as conditioned
            wav = os.path.join(work, "conditioned.wav")
            augment.write_wav(wav, augment.apply(x, a.condition, sum(map(ord, clip + a.condition))))
            x = augment.read_wav(wav)[0]
        demo.sh([a.frae, "features", wav, "--pitch", "-o", os.path.join(work, "in.npy")])
        inp = np.load(os.path.join(work, "in.npy"))
        voiced = inp[:, -1] > 0.5
        fa = demo.pitch_track(wav, len(inp))[0]  # 0 where aubio reads unvoiced
        f0_aubio = np.where(voiced & (fa > 0), fa, inp[:, -2])
        with_aubio = inp.copy()
        with_aubio[:, -2] = f0_aubio
        f0_refined = refined_f0(x, inp[:, -2], voiced)
        with_refined = inp.copy()
        with_refined[:, -2] = f0_refined
        dec, dec_wav, kbps = coded(a, inp, work, "c")
        dec_a, dec_a_wav, kbps_a = coded(a, with_aubio, work, "ca")
        dec_r, dec_r_wav, _ = coded(a, with_refined, work, "cr")
        both = (dec[:, -1] > 0.5) & voiced
        s = {VARIANTS[0]: stoi(x, vocoded(a, inp, inp[:, -2], work, "v")),
             VARIANTS[1]: stoi(x, vocoded(a, inp, f0_aubio, work, "va")),
             VARIANTS[2]: stoi(x, dec_wav),
             VARIANTS[3]: stoi(x, vocoded(a, dec, np.where(both, inp[:, -2], dec[:, -2]), work, "di")),
             VARIANTS[4]: stoi(x, vocoded(a, dec, np.where(both, f0_aubio, dec[:, -2]), work, "da")),
             VARIANTS[5]: stoi(x, dec_a_wav),
             VARIANTS[6]: stoi(x, vocoded(a, inp, f0_refined, work, "vr")),
             VARIANTS[7]: stoi(x, vocoded(a, dec, np.where(both, f0_refined, dec[:, -2]), work, "dr")),
             VARIANTS[8]: stoi(x, dec_r_wav)}
        return clip, s, (f0_error(dec, inp), f0_error(dec_a, with_aubio)), (kbps, kbps_a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "speech-vbr.safetensors"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus", "voices"))
    ap.add_argument("--sets", default="", help="speaker sets, comma-separated (all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--split", default="test", help="test (held out) or train")
    ap.add_argument("--every", type=int, default=1, help="every Nth clip of the split")
    ap.add_argument("--condition", default="clean", help="a recording condition of augment.py (clean)")
    a = ap.parse_args()
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(a.corpus, "clips.tsv"))]
    col = {name: i for i, name in enumerate(rows[0])}
    want = set(filter(None, a.sets.split(",")))
    jobs = [(a, r[col["clip"]], os.path.join(a.corpus, "wav", a.split, r[col["clip"]] + ".wav"))
            for r in rows[1:] if r[col["split"]] == a.split and (not want or r[col["speaker"]] in want)]
    jobs = jobs[::a.every]
    speaker = {r[col["clip"]]: r[col["speaker"]] for r in rows[1:]}
    with multiprocessing.Pool(a.jobs) as pool:
        results = pool.map(one_clip, jobs)
    by = collections.defaultdict(list)
    for clip, s, err, kbps in results:
        by[speaker[clip]].append((s, err, kbps))
        by["all"].append((s, err, kbps))
    print("| speaker set | clips | " + " | ".join(VARIANTS) +
          " | coded f0 off, frae's / aubio's | kbit/s, frae's / aubio's |")
    print("| --- " * (len(VARIANTS) + 4) + "|")
    for name in sorted(by, key=lambda k: (k == "all", k)):
        v = by[name]
        cells = ["%.4f" % np.nanmean([r[0][k] for r in v]) for k in VARIANTS]
        err = np.nanmean([r[1] for r in v], axis=0)
        kb = np.mean([r[2] for r in v], axis=0)
        print("| %s | %d | %s | %.1f%% / %.1f%% | %.3f / %.3f |" %
              (name, len(v), " | ".join(cells), 100 * err[0], 100 * err[1], kb[0], kb[1]))


if __name__ == "__main__":
    main()
