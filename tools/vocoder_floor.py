#!/usr/bin/python3
"""Where the vocoder's own error is: each clip's features (frae features
--pitch) vocoded (frae vocode) and analysed again, aligned as
tools/human_study.py aligns a codec's audio, and the difference split
into what a fixed per-band, per-voicing bias explains and what scatters
from frame to frame.  Then that bias, fitted on the even clips, taken off
the odd clips' features before vocoding: what a correction of the
vocoder's systematic error could buy.  LSD / MCD over 0-4 kHz, as the
study measures them.

Usage: tools/vocoder_floor.py [--every N] [--frae build/frae]
  [--corpus data/corpus] [--work DIR]
Clips: the many-voices corpus's training clips, both bands, every Nth
(training speakers only)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402

NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]


def main():
    ap = argparse.ArgumentParser()
    demo.training_clip_args(ap, every=20, model=False)
    a = ap.parse_args()
    clips, work = demo.training_clips_and_work(a, "vocoder-floor-")
    feats, residuals, voicing, floor = [], [], [], []
    for wav in clips:
        npy = os.path.join(work, "o.npy")
        demo.sh([a.frae, "features", "--pitch", wav, "-o", npy])
        o = np.load(npy)
        g = demo.vocoded_features(a.frae, o, work)
        ok = ~np.isnan(g).any(axis=1)
        feats.append(o)
        residuals.append(o[ok, :80] - g[ok, :80])
        voicing.append(o[ok, 81] >= 0.5)
        floor.append(demo.metrics(o[ok, :80], g[ok, :80], NARROW)[:2])
    print("| %d training clips (every %dth) | frames | mean square, 0-4 kHz bands | a fixed "
          "bias's share |" % (len(clips), a.every))
    print("| --- | --- | --- | --- |")
    r_all, v_all = np.concatenate(residuals), np.concatenate(voicing)
    for name, sel in (("all frames", np.ones(len(v_all), bool)), ("voiced", v_all),
                      ("unvoiced", ~v_all)):
        r = r_all[sel][:, NARROW]
        ms = (r ** 2).mean()
        print("| %s | %d | %.4f | %.1f%% |" % (name, sel.sum(), ms,
                                              100 * (r.mean(0) ** 2).mean() / ms))
    even = [k for k in range(len(clips)) if k % 2 == 0]
    r_fit = np.concatenate([residuals[k] for k in even])
    v_fit = np.concatenate([voicing[k] for k in even])
    bias = np.stack([r_fit[~v_fit].mean(0), r_fit[v_fit].mean(0)])
    before, after = [], []
    for k in range(1, len(clips), 2):
        o = feats[k].copy()
        before.append(floor[k])
        o[:, :80] += bias[(o[:, 81] >= 0.5).astype(int)].astype(np.float32)
        g = demo.vocoded_features(a.frae, o, work)
        ok = ~np.isnan(g).any(axis=1)
        after.append(demo.metrics(feats[k][ok, :80], g[ok, :80], NARROW)[:2])
    print()
    print("| vocoder alone, odd clips (%d) | LSD 0-4 kHz | MCD 0-4 kHz |" % len(before))
    print("| --- | --- | --- |")
    print("| as it is | %.3f | %.3f |" % tuple(np.mean(before, 0)))
    print("| the even clips' bias taken off first | %.3f | %.3f |" % tuple(np.mean(after, 0)))


if __name__ == "__main__":
    main()
