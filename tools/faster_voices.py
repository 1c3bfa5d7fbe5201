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

Usage: tools/faster_voices.py [OUT_DIR] [FRAE]   (data/corpus, build/frae)"""
import concurrent.futures
import hashlib
import os
import subprocess
import sys

import numpy as np
from scipy.signal import resample_poly

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import augment  # noqa: E402  (tools/augment.py: 16-bit WAV in and out)

SHARE = 0.25
FACTORS = ((6, 5), (5, 4), (4, 3), (7, 5))  # played p / q times faster


def draw(clip):
    """(p, q) for the clip called clip, or None where it is not chosen."""
    seed = int.from_bytes(hashlib.sha256(("hi:" + clip).encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    if rng.random() >= SHARE:
        return None
    return FACTORS[rng.integers(len(FACTORS))]


def one(clip, src, out, frae):
    factor = draw(clip)
    if factor is None:
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
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join("data", "corpus")
    frae = sys.argv[2] if len(sys.argv) > 2 else os.path.join("build", "frae")
    src = os.path.join(corpus, "voices", "wav", "train")
    if not os.path.isdir(src):
        sys.stderr.write("faster_voices.py: no voices corpus in %s (scripts/make-corpus.sh "
                         "--voices first)\n" % corpus)
        return 2
    out = os.path.join(corpus, "voices-fast")
    os.makedirs(os.path.join(out, "wav", "train"), exist_ok=True)
    os.makedirs(os.path.join(out, "feats", "train"), exist_ok=True)
    clips = sorted(f[:-4] for f in os.listdir(src) if f.endswith(".wav"))
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        rows = [r for r in ex.map(lambda c: one(c, src, out, frae), clips) if r]
    with open(os.path.join(out, "clips.tsv"), "w") as f:
        f.write("clip\tfactor\n")
        for clip, factor in rows:
            f.write("%s\t%s\n" % (clip, factor))
    print("%d of %d training clips played faster, in %s" % (len(rows), len(clips), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
