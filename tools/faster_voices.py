#!/usr/bin/python3
"""Adult voices played faster, for training (docs/2026-12-07-emphasis.md,
"Adult voices played faster"): a quarter of OUT/voices/wav/train's clips,
each resampled so that it plays 6/5, 5/4, 4/3 or 7/5 times faster, which
raises its pitch and its formants together, as from an adult's voice
towards a child's (speed perturbation).  A clip is chosen, and its factor
drawn, from a hash of its name alone, so the set is the same on every
machine.  Writes OUT/voices-fast/wav/train/*.wav, their features in
OUT/voices-fast/feats/train/ (frae features) and clips.tsv (clip,
factor).  The held-out side is never touched.  An experiment: no shipped
model is trained on it yet.

--high writes the second variant instead, OUT/voices-high: half of the
clips whose voiced frames' median f0 (frae's tracker) is 165 Hz or more,
5/4, 4/3, 7/5 or 3/2 times faster, so that most come out above 250 Hz,
where the held-out sets that frae codes worst are (the twenty-seventh
session's study).

Usage: tools/faster_voices.py [--high] [OUT_DIR] [FRAE]   (data/corpus, build/frae)"""
import concurrent.futures
import hashlib
import os
import subprocess
import sys

import numpy as np
from scipy.signal import resample_poly

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import augment  # noqa: E402  (tools/augment.py: 16-bit WAV in and out)

# (directory, share of the eligible clips, lowest median f0 in Hz, factors
# p / q: played p / q times faster)
VARIANTS = {
    "voices-fast": ("voices-fast", 0.25, 0.0, ((6, 5), (5, 4), (4, 3), (7, 5))),
    "voices-high": ("voices-high", 0.5, 165.0, ((5, 4), (4, 3), (7, 5), (3, 2))),
}


def draw(clip, share, factors):
    """(p, q) for the clip called clip, or None where it is not chosen."""
    seed = int.from_bytes(hashlib.sha256(("hi:" + clip).encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    if rng.random() >= share:
        return None
    return factors[rng.integers(len(factors))]


def median_f0(wav, frae, work):
    """The median f0 of the clip's voiced frames (frae's tracker), 0 if none."""
    npy = os.path.join(work, os.path.basename(wav)[:-4] + ".f0.npy")
    subprocess.run([frae, "features", "--pitch", wav, "-o", npy], check=True,
                   capture_output=True)
    frames = np.load(npy)
    os.unlink(npy)
    voiced = frames[:, -1] > 0.5
    return float(np.median(frames[voiced, -2])) if voiced.any() else 0.0


def one(clip, src, out, frae, variant):
    _, share, lowest_f0, factors = variant
    factor = draw(clip, share, factors)
    if factor is None:
        return None
    if lowest_f0 > 0 and median_f0(os.path.join(src, clip + ".wav"), frae, out) < lowest_f0:
        return None
    p, q = factor
    x, rate = augment.read_wav(os.path.join(src, clip + ".wav"))
    if rate != augment.RATE:
        raise ValueError("%s: %d Hz" % (clip, rate))
    wav = os.path.join(out, "wav", "train", clip + ".wav")
    augment.write_wav(wav, np.clip(resample_poly(x, q, p), -1, 1))
    subprocess.run([frae, "features", wav, "-o",
                    os.path.join(out, "feats", "train", clip + ".npy")],
                   check=True, capture_output=True)
    return clip, "%d/%d" % (p, q)


def main():
    args = sys.argv[1:]
    variant = VARIANTS["voices-fast"]
    if args[:1] == ["--high"]:
        variant, args = VARIANTS["voices-high"], args[1:]
    corpus = args[0] if args else os.path.join("data", "corpus")
    frae = args[1] if len(args) > 1 else os.path.join("build", "frae")
    src = os.path.join(corpus, "voices", "wav", "train")
    if not os.path.isdir(src):
        sys.stderr.write("faster_voices.py: no voices corpus in %s (scripts/make-corpus.sh "
                         "--voices first)\n" % corpus)
        return 2
    out = os.path.join(corpus, variant[0])
    os.makedirs(os.path.join(out, "wav", "train"), exist_ok=True)
    os.makedirs(os.path.join(out, "feats", "train"), exist_ok=True)
    clips = sorted(f[:-4] for f in os.listdir(src) if f.endswith(".wav"))
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        rows = [r for r in ex.map(lambda c: one(c, src, out, frae, variant), clips) if r]
    with open(os.path.join(out, "clips.tsv"), "w") as f:
        f.write("clip\tfactor\n")
        for clip, factor in rows:
            f.write("%s\t%s\n" % (clip, factor))
    print("%d of %d training clips played faster, in %s" % (len(rows), len(clips), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
