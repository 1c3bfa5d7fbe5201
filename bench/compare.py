"""Old build against new, in one run: frae_bench's rows on two builds of
frae, interleaved (old, new, new, old, ...) so that the machine's load
falls on both alike, each row ROUNDS times a side.  Prints per row the
median of each side, and new/old as the median of the paired ratios with
their range: training rows in frames/s (above 1: new is faster), codec
rows in microseconds a frame (below 1: new is faster).

Usage: bench/compare.py OLD_BUILD NEW_BUILD [--rounds N] [--seconds S]
  (make bench-compare REV=<git rev> builds REV in a worktree and runs it)
"""
import argparse
import os
import statistics
import subprocess
import sys

ROWS = [  # (name, frae_bench arguments, the figure, larger is better)
    ("dense b1 detached", ["--batch", "1"], "frames_per_s", True),
    ("dense b1 full", ["--batch", "1", "--feedback", "full"], "frames_per_s", True),
    ("dense b32 full", ["--batch", "32", "--feedback", "full"], "frames_per_s", True),
    ("GRU b1 full", ["--family", "gru", "--batch", "1", "--feedback", "full"], "frames_per_s", True),
    ("GRU b32 full", ["--family", "gru", "--batch", "32", "--feedback", "full"], "frames_per_s", True),
    ("codec dense binary encode", ["--codec", "binary"], "encode_us", False),
    ("codec dense binary decode", ["--codec", "binary"], "decode_us", False),
    ("codec GRU uniform:4 encode", ["--family", "gru", "--codec", "uniform:4"], "encode_us", False),
    ("codec GRU uniform:4 decode", ["--family", "gru", "--codec", "uniform:4"], "decode_us", False),
]


def bench(build, args, seconds, threads):
    out = subprocess.run([os.path.join(build, "frae_bench"), "--seconds", str(seconds),
                          "--threads", str(threads)] + args,
                         capture_output=True, text=True, check=True).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    print("old build %s against new %s: %d paired rounds of %g s a side, %d thread(s)"
          % (a.old, a.new, a.rounds, a.seconds, a.threads))
    print("| row | old | new | new/old, median [range] |")
    print("| --- | --- | --- | --- |")
    cache = {}
    for name, args, key, larger in ROWS:
        olds, news, ratios = [], [], []
        for r in range(a.rounds):
            order = [(a.old, olds), (a.new, news)] if r % 2 == 0 else [(a.new, news), (a.old, olds)]
            got = {}
            for build, sink in order:
                ck = (build, tuple(args), r)
                if ck not in cache:
                    cache[ck] = bench(build, args, a.seconds, a.threads)
                v = float(cache[ck][key])
                sink.append(v)
                got[build] = v
            ratios.append(got[a.new] / got[a.old])
        print("| %s (%s) | %.2f | %.2f | %.3f [%.3f, %.3f] |"
              % (name, key, statistics.median(olds), statistics.median(news),
                 statistics.median(ratios), min(ratios), max(ratios)))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
