#!/usr/bin/env python3
"""How far, in dB, the power of a speech codec's decoded envelope falls
below the speech's, on directories of log-mel features (issue 50).

The codec's decoded envelope is an estimate in the log domain (trained on
the squared error of log-mel features): where it cannot code the detail
of a spectrum it gives the mean log, and a mean in dB is below the mean
power (the harmonics' peaks averaged with the valleys beside them).  A
vocoder that keeps the power of the features it is given makes decoded
speech that much quieter.  This measures it:

  bias = 10 log10(sum P_in / sum P_decoded)

P the mel power summed over the bands of a frame, over the frames within
40 dB of their file's loudest (the speech, as an active level counts it),
the decoded frames being 'frae predict's (the codec's, as decoding gives
them).  Every --every'th file of each directory, in name order.  The
figures are in docs/results.md, "Loudness".

usage: tools/power_bias.py MODEL DIR... [--every N] [--frae PATH]
prints the bias in dB, two decimals."""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

ACTIVE_DB = 40.0
BATCH = 32


def mel_power(feats, offset=5.0, scale=5.0):
    """Summed mel power of each frame of [T, n_mels] log-mel features
    (frae features: (ln power + offset) / scale)."""
    return np.exp(feats.astype(np.float64) * scale - offset).sum(axis=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--every", type=int, default=4, help="every N'th file (4)")
    p.add_argument("--frae", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "frae"))
    a = p.parse_args()
    if a.every < 1:
        sys.exit("power_bias.py: --every must be 1 or more")
    files = []
    for d in a.dirs:
        got = sorted(glob.glob(os.path.join(d, "*.npy")))
        if not got:
            sys.exit("power_bias.py: no .npy features in %s" % d)
        files += got[:: a.every]
    sum_in = sum_out = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for at in range(0, len(files), BATCH):
            seqs = [np.load(f) for f in files[at:at + BATCH]]
            for f, x in zip(files[at:at + BATCH], seqs):
                if x.ndim != 2 or not np.isfinite(x).all():
                    sys.exit("power_bias.py: %s: not finite [T, n_mels] features" % f)
            width = seqs[0].shape[1]
            longest = max(len(x) for x in seqs)
            # padding after a sequence's end changes none of its frames
            batch = np.full((len(seqs), longest, width), seqs[0].min(), np.float32)
            for i, x in enumerate(seqs):
                batch[i, :len(x)] = x
            inp, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, batch)
            subprocess.run([a.frae, "predict", a.model, inp, "-o", out], check=True,
                           stdout=subprocess.DEVNULL)
            dec = np.load(out)
            for i, x in enumerate(seqs):
                p_in = mel_power(x)
                p_out = mel_power(dec[i, :len(x), :width])
                active = p_in >= p_in.max() * 10 ** (-ACTIVE_DB / 10)
                sum_in += p_in[active].sum()
                sum_out += p_out[active].sum()
    print("%.2f" % (10 * np.log10(sum_in / sum_out)))


if __name__ == "__main__":
    main()
