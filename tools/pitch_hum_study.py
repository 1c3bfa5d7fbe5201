#!/usr/bin/python3
"""How frae's f0 tracker holds up under mains hum and rumble
(docs/2026-12-07-hum.md).  For each frae binary given (NAME=PATH; the
first is the reference), on every Nth clip of each directory:

  - on the clip as it is: the share of voiced frames read under 80 Hz (no
    voice in these sets is that low: such a reading is hum, rumble or an
    error) and, for the binaries after the first, the share of frames whose
    voicing differs from the first's;
  - with 50 or 60 Hz hum (and its second and third harmonics) added at -10
    or -20 dB of the clip's power, or rumble (noise under 40 Hz) at -10 dB:
    voicing errors (VDE) and gross pitch errors (GPE, off by over 20%)
    against the first binary's track of the clip as it is, the truth here.

Usage: tools/pitch_hum_study.py --frae old=A --frae new=B [--every N] DIR...
Prints a markdown report."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.signal import butter, sosfilt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import augment  # noqa: E402  (tools/augment.py: 16-bit WAV in and out)

CONDITIONS = ("hum 50 Hz, -10 dB", "hum 60 Hz, -10 dB", "hum 50 Hz, -20 dB",
              "rumble, -10 dB")


def track(frae, x, work):
    """f0 and voicing of x through frae features --pitch."""
    wav = os.path.join(work, "x.wav")
    augment.write_wav(wav, np.clip(x, -1, 1))
    subprocess.run([frae, "features", "--pitch", wav, "-o", wav + ".npy"],
                   check=True, capture_output=True)
    frames = np.load(wav + ".npy")
    return frames[:, -2], frames[:, -1] > 0.5


def corrupt(x, condition, rng):
    """x with the condition's hum or rumble added."""
    power = np.mean(x ** 2)
    if condition.startswith("hum"):
        hz = float(condition.split()[1])
        db = float(condition.split()[3])
        t = np.arange(len(x)) / augment.RATE
        hum = (np.sin(2 * np.pi * hz * t) + 0.3 * np.sin(4 * np.pi * hz * t + 1)
               + 0.2 * np.sin(6 * np.pi * hz * t + 2))
    else:
        db = -10.0
        hum = sosfilt(butter(4, 40, "lowpass", fs=augment.RATE, output="sos"),
                      rng.standard_normal(len(x)))
    return x + hum * np.sqrt(power * 10 ** (db / 10) / np.mean(hum ** 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frae", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--every", type=int, default=1, help="every Nth clip")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    bins = [b.split("=", 1) for b in a.frae]
    work = tempfile.mkdtemp()
    rng = np.random.default_rng(1)
    clips = []
    for d in a.dirs:
        names = sorted(f for f in os.listdir(d) if f.endswith(".wav"))
        clips += [os.path.join(d, f) for f in names[::a.every]]
    low = {n: np.zeros(3) for n, _ in bins}  # voiced, voiced under 80, voicing differs
    errs = {(c, n): np.zeros(4) for c in CONDITIONS for n, _ in bins}
    for path in clips:
        x, rate = augment.read_wav(path)
        if rate != augment.RATE:
            raise ValueError("%s: %d Hz" % (path, rate))
        x = 0.5 * x  # room for the hum
        truth_f0, truth_v = track(bins[0][1], x, work)
        for name, frae in bins:
            f0, v = track(frae, x, work)
            low[name] += [v.sum(), (v & (f0 < 80)).sum(), (v != truth_v).sum()]
        for c in CONDITIONS:
            y = corrupt(x, c, rng)
            for name, frae in bins:
                f0, v = track(frae, y, work)
                both = v & truth_v
                gross = both & (np.abs(f0 / np.maximum(truth_f0, 1) - 1) > 0.2)
                errs[(c, name)] += [len(v), (v != truth_v).sum(), both.sum(), gross.sum()]
    print("%d clips (%s, every %d); the truth: %s on each clip as it is\n"
          % (len(clips), ", ".join(a.dirs), a.every, bins[0][0]))
    print("| tracker | voiced frames read under 80 Hz | voicing differs from %s |" % bins[0][0])
    print("| --- | --- | --- |")
    for name, _ in bins:
        v, lo, diff = low[name]
        print("| %s | %.1f%% | %.2f%% |" % (name, 100 * lo / v, 100 * diff / v if name != bins[0][0] else 0))
    print("\n| condition | " + " | ".join("%s VDE / GPE" % n for n, _ in bins) + " |")
    print("| --- |" + " --- |" * len(bins))
    for c in CONDITIONS:
        cells = []
        for name, _ in bins:
            n, vde, both, gross = errs[(c, name)]
            cells.append("%.1f%% / %.1f%%" % (100 * vde / n, 100 * gross / max(both, 1)))
        print("| %s | %s |" % (c, " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
