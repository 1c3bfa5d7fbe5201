#!/usr/bin/python3
"""scripts/augment-corpus.py on a small many-voices corpus made here (two
dozen one-second voiced clips, half at f0 120 Hz, half at 220 Hz, and a
held-out one):

  - it makes voices-aug, voices-fast and voices-high, each with
    .complete, clips.tsv, a WAV and 80-band features for each clip it
    lists, and nothing else (no pitch file left behind);
  - each set holds exactly the clips its draw names: voices-high only the
    220 Hz ones (frae's tracker reads their median f0 over 165 Hz), never
    a 120 Hz one;
  - a faster clip is shorter by its factor, and its pitch higher by it;
  - the held-out side is never touched;
  - a second run keeps the sets (not a file rewritten); a changed voices
    corpus remakes them;
  - no voices corpus: one line and exit 2.

Usage: tests/augment_corpus_test.py [FRAE]   Prints "N passed, N failed" last."""
import importlib.util
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

SCRIPT = os.path.join(ROOT, "scripts", "augment-corpus.py")
spec = importlib.util.spec_from_file_location("augment_corpus", SCRIPT)
AC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(AC)

RATE = 16000
SETS = ("voices-aug", "voices-fast", "voices-high")


def voice(f0, seconds=1.0):
    """A voiced clip: 20 harmonics of f0 under a slow swell, peak -6 dBFS."""
    t = np.arange(int(seconds * RATE)) / RATE
    x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 21) if f0 * k < 7000)
    x = x * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    return 0.5 * x / np.abs(x).max()


def run(corpus, frae):
    return subprocess.run([sys.executable, SCRIPT, corpus, frae], capture_output=True, text=True)


def listed(corpus, name):
    with open(os.path.join(corpus, name, "clips.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return {r[0]: r[1] for r in rows}


def main():
    frae = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "frae"))
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        r = run(corpus, frae)
        check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
              "no voices corpus: one line and exit 2", r.stderr)

        train = os.path.join(corpus, "voices", "wav", "train")
        test = os.path.join(corpus, "voices", "wav", "test")
        os.makedirs(train)
        os.makedirs(test)
        low = ["low-%02d" % i for i in range(12)]
        high = ["high-%02d" % i for i in range(12)]
        for name in low:
            A.write_wav(os.path.join(train, name + ".wav"), voice(120.0))
        for name in high:
            A.write_wav(os.path.join(train, name + ".wav"), voice(220.0))
        A.write_wav(os.path.join(test, "held-00.wav"), voice(220.0))
        with open(os.path.join(corpus, "voices", ".complete"), "w") as f:
            f.write("a test corpus\n")

        r = run(corpus, frae)
        check(r.returncode == 0, "made the sets", r.stderr)
        if r.returncode != 0:
            return summary()

        want = {
            "voices-aug": {c for c in low + high if AC.draw(c)[0]},
            "voices-fast": {c for c in low + high if AC.draw_fast(c)},
            "voices-high": {c for c in high
                            if AC.draw_fast(c, AC.HIGH_SHARE, AC.HIGH_FACTORS)},
        }
        for name in SETS:
            got = listed(corpus, name)
            d = os.path.join(corpus, name)
            check(os.path.exists(os.path.join(d, ".complete")), "%s: .complete" % name)
            check(set(got) == want[name] and want[name],
                  "%s: the clips its draw names (%d)" % (name, len(want[name])),
                  "got %s, wanted %s" % (sorted(got), sorted(want[name])))
            wavs = sorted(f[:-4] for f in os.listdir(os.path.join(d, "wav", "train")))
            feats = sorted(f[:-4] for f in os.listdir(os.path.join(d, "feats", "train")))
            check(wavs == sorted(got) and feats == sorted(got),
                  "%s: a WAV and features for each listed clip, nothing else" % name)
            check(sorted(os.listdir(d)) == [".complete", "clips.tsv", "feats", "wav"],
                  "%s: no file left behind" % name, str(os.listdir(d)))
            shapes = {np.load(os.path.join(d, "feats", "train", c + ".npy")).shape[1]
                      for c in got}
            check(shapes == {80}, "%s: 80-band features" % name, str(shapes))
            check("held-00" not in got and not os.path.exists(os.path.join(d, "wav", "test")),
                  "%s: the held-out side is untouched" % name)

        f0_low = AC.median_f0(os.path.join(train, low[0] + ".wav"), frae, tmp)
        f0_high = AC.median_f0(os.path.join(train, high[0] + ".wav"), frae, tmp)
        check(abs(f0_low - 120) < 3 and abs(f0_high - 220) < 5,
              "the tracker reads the clips at 120 and 220 Hz (%.1f, %.1f)" % (f0_low, f0_high))

        for name in ("voices-fast", "voices-high"):
            for clip, factor in sorted(listed(corpus, name).items())[:2]:
                p, q = (int(v) for v in factor.split("/"))
                n_in = len(A.read_wav(os.path.join(train, clip + ".wav"))[0])
                out = os.path.join(corpus, name, "wav", "train", clip + ".wav")
                n_out = len(A.read_wav(out)[0])
                check(n_out == -(-n_in * q // p), "%s %s: %s times faster, %d samples from %d"
                      % (name, clip, factor, n_out, n_in))
                f0_in = f0_high if clip.startswith("high") else f0_low
                f0_out = AC.median_f0(out, frae, tmp)
                check(abs(f0_out / f0_in - p / q) < 0.03,
                      "%s %s: pitch %.1f Hz from %.1f, x%.3f (%s)"
                      % (name, clip, f0_out, f0_in, f0_out / f0_in, factor))

        stamps = {}
        for name in SETS:
            wav_dir = os.path.join(corpus, name, "wav", "train")
            stamps[name] = {f: os.stat(os.path.join(wav_dir, f)).st_mtime_ns
                            for f in os.listdir(wav_dir)}
        r = run(corpus, frae)
        for name in SETS:
            wav_dir = os.path.join(corpus, name, "wav", "train")
            now = {f: os.stat(os.path.join(wav_dir, f)).st_mtime_ns for f in os.listdir(wav_dir)}
            check(r.returncode == 0 and now == stamps[name],
                  "%s: a second run keeps it, not a file rewritten" % name)

        with open(os.path.join(corpus, "voices", ".complete"), "w") as f:
            f.write("another test corpus\n")
        r = run(corpus, frae)
        for name in SETS:
            with open(os.path.join(corpus, name, ".complete")) as f:
                line = f.read()
            check(r.returncode == 0 and "another test corpus" in line,
                  "%s: a changed voices corpus remakes it" % name, line)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
