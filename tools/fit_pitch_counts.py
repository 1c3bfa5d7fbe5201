#!/usr/bin/python3
"""Fits the start counts of the "f0-voicing-ranged" and "f0-voicing-envelope"
pitch coders (README, "Entropy coding") to the pitch tracks and features of
a speech corpus and prints them as the C tables of src/codec/pitch_counts.h.

Usage: tools/fit_pitch_counts.py WAV_DIR [--frae build/frae] > src/codec/pitch_counts.h

The tracks are frae's own (frae features --pitch), quantized by the coder's
closed-loop quantizer as the encoder runs it; the counts are the contexts'
symbol frequencies with one added to each (so a context never seen starts
even), scaled to TOTAL (ENV_TOTAL for the envelope coder's voicing, whose
288 contexts each see fewer frames) and rounded, none below 1.  The
envelope coder's bin edges are quantiles of the features' level, tilt and
change of tilt (envelope_features, as src/codec/codec.c computes them) over all
frames, so each bin holds about as many.  The committed table was
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

STEPS = (-0.5, -0.17, -0.06, -0.015, 0.015, 0.06, 0.17, 0.5)  # octaves, as src/codec/codec.c
LO, HI, START = math.log2(50.0), math.log2(600.0), math.log2(150.0)
TOTAL = 512
ENV_TOTAL = 256
ENV_BINS = (6, 6, 4)  # level, tilt, change of tilt: src/codec/codec.c's ENV_BINS_*


def envelope_features(env):
    """Per frame of env [T, D]: level (the mean of the D values), tilt (the
    mean of the lowest quarter minus that of the top three eighths) and the
    change of tilt from the frame before (0 for the first)."""
    d = env.shape[1]
    lo, hi = max(1, d // 4), min(5 * d // 8, d - 1)
    tilt = env[:, :lo].mean(1) - env[:, hi:].mean(1)
    return np.stack([env.mean(1), tilt, np.r_[0.0, np.diff(tilt)]], 1)


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
    tracks = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in wavs:
            npy = os.path.join(tmp, "f.npy")
            subprocess.run([a.frae, "features", "--pitch", w, "-o", npy], check=True,
                           capture_output=True)
            f = np.load(npy)
            c = codes(f[:, -2], f[:, -1])
            tracks.append((envelope_features(f[:, :-2].astype(np.float64)), c))
            prev = [-1, -1]  # the last frame's step and the one before (-1: unvoiced)
            for k in c:
                voicing[int(prev[0] >= 0), int(k >= 0)] += 1
                if k >= 0:
                    steps[(prev[0] + 1) * (n + 1) + prev[1] + 1, k] += 1
                prev = [k, prev[0]]

    # the envelope coder's voicing: bins of the three features, then the
    # counts in the context of the last voicing and the frame's bins
    allf = np.vstack([t[0] for t in tracks])
    edges = [np.quantile(allf[:, i], np.linspace(0, 1, b + 1)[1:-1])
             for i, b in enumerate(ENV_BINS)]
    env_voicing = np.zeros((2 * int(np.prod(ENV_BINS)), 2))
    for feats, c in tracks:
        prev = 0
        for t, k in enumerate(c):
            ctx = prev
            for i, b in enumerate(ENV_BINS):
                ctx = ctx * b + int((feats[t, i] > edges[i]).sum())
            env_voicing[ctx, int(k >= 0)] += 1
            prev = int(k >= 0)

    def scaled(row, total=TOTAL):
        p = (row + 1) / (row.sum() + len(row))
        return [max(1, int(round(total * x))) for x in p]
    print("/* Start counts of the f0-voicing-ranged and f0-voicing-envelope pitch")
    print(" * coders (src/codec/codec.c), fitted")
    print(" * by tools/fit_pitch_counts.py on the pitch tracks of %d utterances" % len(wavs))
    print(" * (%d frames, %d voiced) of the demo corpus's training voices.  Part of"
          % (int(voicing.sum()), int(steps.sum())))
    print(" * the stream format: changing them changes every stream. */")
    print("static const uint16_t pitch_voicing_start[2][2] = {")
    print(",\n".join("    {%s}" % ", ".join("%d" % v for v in scaled(r)) for r in voicing) + "};")
    print("/* [(last step + 1) x %d + (the step before + 1)][step]; -1: unvoiced */" % (n + 1))
    print("static const uint16_t pitch_step_start[%d][%d] = {" % ((n + 1) * (n + 1), n))
    print(",\n".join("    {%s}" % ", ".join("%d" % v for v in scaled(r)) for r in steps) + "};")
    print("/* f0-voicing-envelope: the voicing bit in the context of the last")
    print(" * voicing and of the decoded frame's level, tilt and change of tilt, each")
    print(" * binned by these edges (a value above k of them is in bin k), fitted on")
    print(" * the same voices' features */")
    names = ("LEVEL", "TILT", "CHANGE")
    for name, b in zip(names, ENV_BINS):
        print("#define PITCH_ENV_BINS_%s %d" % (name, b))
    print("#define PITCH_ENV_CONTEXTS (2 * PITCH_ENV_BINS_LEVEL * PITCH_ENV_BINS_TILT * "
          "PITCH_ENV_BINS_CHANGE)")
    for name, var, e in zip(names, ("level", "tilt", "tilt_change"), edges):
        print("static const float pitch_env_%s_edges[PITCH_ENV_BINS_%s - 1] = {%s};"
              % (var, name, ", ".join("%.9gf" % v for v in e)))
    print("/* [((last voicing x %d + level) x %d + tilt) x %d + change][voiced] */"
          % ENV_BINS)
    print("static const uint16_t pitch_env_voicing_start[PITCH_ENV_CONTEXTS][2] = {")
    rows = ["{%s}" % ", ".join("%d" % v for v in scaled(r, ENV_TOTAL)) for r in env_voicing]
    b = ENV_BINS[-1]  # a line per level and tilt: the changes' bins side by side
    print(",\n".join("    " + ", ".join(rows[i:i + b]) for i in range(0, len(rows), b)) + "};")


if __name__ == "__main__":
    main()
