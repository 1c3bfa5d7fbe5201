#!/usr/bin/python3
"""Fits the start counts of the "f0-voicing-ranged" pitch coder (README,
"Entropy coding") to the pitch tracks of a speech corpus and prints them as
the C table src/pitch_counts.h.

Usage: tools/fit_pitch_counts.py WAV_DIR [--frae build/frae] > src/pitch_counts.h

The tracks are frae's own (frae features --pitch), quantized by the coder's
closed-loop quantizer as the encoder runs it; the counts are the contexts'
symbol frequencies with one added to each (so a context never seen starts
even), scaled to TOTAL and rounded, none below 1.  The committed table was
fitted on the demo corpus's training voices (scripts/make-corpus.sh,
data/corpus/wav/train), never on its held-out ones."""
import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

STEPS = (-0.5, -0.17, -0.06, -0.015, 0.015, 0.06, 0.17, 0.5)  # octaves, as src/codec.c
LO, HI, START = math.log2(50.0), math.log2(600.0), math.log2(150.0)
TOTAL = 512


def codes(f0, voiced):
    """Step index per frame (-1 unvoiced) of the closed-loop quantizer."""
    pred, out = START, []
    for f, v in zip(f0, voiced):
        if not (v >= 0.5 and f > 0 and math.isfinite(f)):
            out.append(-1)
            continue
        target = math.log2(f)
        cand = [min(max(pred + s, LO), HI) for s in STEPS]
        best = min(range(len(STEPS)), key=lambda i: (abs(cand[i] - target), i))
        pred = cand[best]
        out.append(best)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wav_dir")
    ap.add_argument("--frae", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                   "frae"))
    a = ap.parse_args()
    wavs = sorted(glob.glob(os.path.join(a.wav_dir, "*.wav")))
    if not wavs:
        sys.exit("no .wav files in %s" % a.wav_dir)
    n = len(STEPS)
    voicing = np.zeros((2, 2))
    steps = np.zeros(((n + 1) * (n + 1), n))
    with tempfile.TemporaryDirectory() as tmp:
        for w in wavs:
            npy = os.path.join(tmp, "f.npy")
            subprocess.run([a.frae, "features", "--pitch", w, "-o", npy], check=True,
                           capture_output=True)
            f = np.load(npy)
            c = codes(f[:, -2], f[:, -1])
            prev = [-1, -1]  # the last frame's step and the one before (-1: unvoiced)
            for k in c:
                voicing[int(prev[0] >= 0), int(k >= 0)] += 1
                if k >= 0:
                    steps[(prev[0] + 1) * (n + 1) + prev[1] + 1, k] += 1
                prev = [k, prev[0]]

    def scaled(row):
        p = (row + 1) / (row.sum() + len(row))
        return [max(1, int(round(TOTAL * x))) for x in p]
    print("/* Start counts of the f0-voicing-ranged pitch coder (src/codec.c), fitted")
    print(" * by tools/fit_pitch_counts.py on the pitch tracks of %d utterances" % len(wavs))
    print(" * (%d frames, %d voiced) of the demo corpus's training voices.  Part of"
          % (int(voicing.sum()), int(steps.sum())))
    print(" * the stream format: changing them changes every stream. */")
    print("static const uint16_t pitch_voicing_start[2][2] = {")
    print(",\n".join("    {%s}" % ", ".join("%d" % v for v in scaled(r)) for r in voicing) + "};")
    print("/* [(last step + 1) x %d + (the step before + 1)][step]; -1: unvoiced */" % (n + 1))
    print("static const uint16_t pitch_step_start[%d][%d] = {" % ((n + 1) * (n + 1), n))
    print(",\n".join("    {%s}" % ", ".join("%d" % v for v in scaled(r)) for r in steps) + "};")


if __name__ == "__main__":
    main()
