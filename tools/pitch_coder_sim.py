#!/usr/bin/python3
"""Pitch coders simulated under a codec's decoded envelope: what other ways
of coding the pitch would buy through audio, before building any of them.

For each clip: frae's features and pitch track of the input (the pitch the
encoder codes), the model's decoded features (`frae encode` then `frae
decode`: the shipped coder and the reader's back-fill), and then the same
decoded envelope under each simulated pitch, vocoded (`frae vocode`) and
measured as tools/human_study.py measures the codecs: LSD / MCD 0-4 kHz of
the vocoded audio's features against the input's, aligned.  The coders
are numpy models of src/codec/pitch_coder.c's closed-loop quantizer (its
steps, clamps and start, in float32), without the reader's back-fill:

  decoded            the stream as the codec decodes it (back-fill included)
  original pitch     the tracker's pitch under the decoded envelope (an oracle)
  original, off      the tracker's pitch on the frames the decoded pitch has
                     more than 0.05 octave off only
  steps              the shipped steps, no back-fill
  finer steps        11 steps (0, +-0.01, 0.03, 0.08, 0.2, 0.5 octave)
  onset jump         a voiced frame after an unvoiced one codes its offset
                     from the held prediction in 1/16 octave (+-2 octaves:
                     a coarse and a fine symbol of 8), then the shipped steps
  onset jump, finer  both
  look-ahead steps   the shipped steps, each frame's chosen with the frames
                     the variable-rate codec's encoder sees ahead (two, none
                     past the next 40 ms packet's first frame): the step
                     whose best continuation over them has the least summed
                     |log2 f0 error|, no back-fill (same stream format,
                     same decoder)
  f0 correction      the decoded bands + a per-band linear function of the
                     decoded voicing and log f0 (and its square), fitted on
                     the even clips by least squares; reported on the odd
                     clips beside "decoded" on the same clips

Pitch bits are estimated with adaptive counts (even starts, the codec's
growth and halving; the step in the context of the last step): only the
differences between coders mean anything.

Usage: tools/pitch_coder_sim.py --band nb|wb [--every N] [--model PATH]
  [--frae build/frae] [--corpus data/corpus] [--work DIR]
Clips: the many-voices corpus's training clips of that band (clips.tsv),
every Nth: the rules are chosen on training speakers, never held-out ones."""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402

NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]
LO, HI, START = np.float32(5.64385619), np.float32(9.22881869), np.float32(7.22881869)
STEPS = (-0.5, -0.17, -0.06, -0.015, 0.015, 0.06, 0.17, 0.5)  # src/codec/pitch_coder.c
FINER = (-0.5, -0.2, -0.08, -0.03, -0.01, 0.0, 0.01, 0.03, 0.08, 0.2, 0.5)
JUMP_UNIT = 1.0 / 16  # octave
COUNT_STEP, COUNT_LIMIT = 32, 4096  # src/codec/codec_internal.h


class AdaptiveCounts:
    """Code lengths of symbols under adaptive counts, one table a context."""

    def __init__(self):
        self.tables = {}

    def bits(self, context, n, symbol):
        c = self.tables.setdefault(context, [COUNT_STEP] * n)
        b = -math.log2(c[symbol] / sum(c))
        c[symbol] += COUNT_STEP
        if sum(c) > COUNT_LIMIT:
            self.tables[context] = [(x + 1) // 2 for x in c]
        return b


def ahead_frames(t, voiced):
    """The voiced frames after t that speech-vbr's encoder sees (--lookahead
    2 --lookahead-packet 4: 2, 2, 2 and 1 in a packet of 4), up to the
    first unvoiced one."""
    k, n = 0, min(2 if t % 4 < 3 else 1, len(voiced) - 1 - t)
    while k < n and voiced[t + 1 + k]:
        k += 1
    return k


def best_continuation(pred, targets, steps):
    """The least summed |error| of any steps over the targets from pred."""
    if not len(targets):
        return 0.0
    cand = np.clip(pred + steps, LO, HI)
    return min(float(abs(c - targets[0])) + best_continuation(c, targets[1:], steps)
               for c in cand)


def simulate(f0, voiced, steps=STEPS, onset_jump=False, lookahead=False):
    """Decoded f0 per frame (0 unvoiced) of a closed-loop coder, and its
    estimated pitch bits."""
    steps = np.asarray(steps, np.float32)
    log_f0 = np.where(voiced, np.log2(np.maximum(f0, 1.0)), 0).astype(np.float32)
    pred, out, bits = START, np.zeros(len(f0), np.float32), 0.0
    counts, last_step, last_voiced = AdaptiveCounts(), -1, False
    for t in range(len(f0)):
        if not voiced[t]:
            last_step, last_voiced = -1, False
            continue
        target = np.float32(math.log2(f0[t]))
        if onset_jump and not last_voiced:
            q = max(-32, min(31, int(round(float(target - pred) / JUMP_UNIT))))
            bits += counts.bits("coarse", 8, (q + 32) // 8) + counts.bits("fine", 8, (q + 32) % 8)
            pred = np.float32(np.clip(pred + np.float32(q * JUMP_UNIT), LO, HI))
            last_step = -2
        else:
            cand = np.clip(pred + steps, LO, HI)
            cost = np.abs(cand - target)
            if lookahead:
                ahead = log_f0[t + 1:t + 1 + ahead_frames(t, voiced)]
                cost = [float(e) + best_continuation(c, ahead, steps) for c, e in zip(cand, cost)]
            best = int(np.argmin(cost))
            bits += counts.bits(last_step, len(steps), best)
            pred, last_step = cand[best], best
        last_voiced = True
        out[t] = np.float32(2.0) ** pred
    return out, bits


def correction_inputs(d):
    v = (d[:, 81] >= 0.5).astype(np.float64)
    x = np.where(v > 0, np.log2(np.maximum(d[:, 80], 1.0)) - 7.2, 0.0)
    return np.stack([np.ones(len(d)), v, v * x, v * x * x], 1)


def vocoded_metrics(frae, work, ref, feats):
    test = demo.vocoded_features(frae, feats, work)
    ok = ~np.isnan(test).any(axis=1)
    return demo.metrics(ref[ok], test[ok], NARROW)[:2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--band", choices=("nb", "wb"), required=True)
    demo.training_clip_args(ap, every=1)
    a = ap.parse_args()
    clips, work = demo.training_clips_and_work(a, "pitch-sim-", a.band)
    data = []
    for i, wav in enumerate(clips):
        base = os.path.join(work, "%d" % i)
        demo.sh([a.frae, "features", "--pitch", wav, "-o", base + ".o.npy"])
        demo.sh([a.frae, "encode", a.model, wav, "-o", base + ".fbs"])
        demo.sh([a.frae, "decode", a.model, base + ".fbs", "-o", base + ".d.npy"])
        o, d = np.load(base + ".o.npy"), np.load(base + ".d.npy")
        n = min(len(o), len(d))
        data.append((o[:n], d[:n]))
    fit = [p for k, p in enumerate(data) if k % 2 == 0]
    weights = np.linalg.lstsq(np.concatenate([correction_inputs(d) for _, d in fit]),
                              np.concatenate([o[:, :80] - d[:, :80] for o, d in fit]),
                              rcond=None)[0]
    names = ["decoded", "original pitch", "original, off", "steps", "finer steps",
             "onset jump", "onset jump, finer", "look-ahead steps"]
    sums = {k: np.zeros(3) for k in names + ["decoded (odd clips)", "f0 correction (odd clips)"]}
    counts = dict.fromkeys(sums, 0)
    for k, (o, d) in enumerate(data):
        ref = o[:, :80]
        voiced = (d[:, 81] >= 0.5) & (o[:, 80] > 0)
        off = np.abs(np.log2(np.maximum(d[:, 80], 1.0) / np.maximum(o[:, 80], 1.0))) > 0.05
        variants = {"decoded": (d, 0.0)}
        e = d.copy()
        e[:, 80] = np.where(voiced, o[:, 80], d[:, 80])
        variants["original pitch"] = (e, 0.0)
        e = d.copy()
        e[:, 80] = np.where(voiced & off, o[:, 80], d[:, 80])
        variants["original, off"] = (e, 0.0)
        for name, steps, jump, ahead in (("steps", STEPS, False, False),
                                         ("finer steps", FINER, False, False),
                                         ("onset jump", STEPS, True, False),
                                         ("onset jump, finer", FINER, True, False),
                                         ("look-ahead steps", STEPS, False, True)):
            f0, bits = simulate(o[:, 80], voiced, steps, jump, ahead)
            e = d.copy()
            e[:, 80] = np.where(voiced, f0, 0.0)
            variants[name] = (e, bits)
        if k % 2 == 1:
            e = d.copy()
            e[:, :80] += (correction_inputs(d) @ weights).astype(np.float32)
            variants["decoded (odd clips)"] = (d, 0.0)
            variants["f0 correction (odd clips)"] = (e, 0.0)
        for name, (feats, bits) in variants.items():
            sums[name] += list(vocoded_metrics(a.frae, work, ref, feats)) + [bits]
            counts[name] += 1
    print("| %s training clips (%d), %s | LSD 0-4 kHz | MCD 0-4 kHz | pitch bits a clip "
          "(estimated) |" % (a.band, len(data), os.path.basename(a.model)))
    print("| --- | --- | --- | --- |")
    for name, s in sums.items():
        m = s / max(counts[name], 1)
        print("| %s | %.3f | %.3f | %s |" % (name, m[0], m[1], "%.0f" % m[2] if m[2] else "-"))


if __name__ == "__main__":
    main()
