#!/usr/bin/python3
"""Runs frae and, when python3-torch is installed, the same model in PyTorch,
each configuration in its own process (so peak RSS is its own), and prints
them side by side with ratios.  Usage: bench/run.py BUILD_DIR [--seconds S]"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(line):
    return dict(kv.split("=", 1) for kv in line.split())


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), out.stderr.strip()))
    return parse(out.stdout.strip().splitlines()[-1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    seconds = sys.argv[sys.argv.index("--seconds") + 1] if "--seconds" in sys.argv else "4"
    have_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                                capture_output=True).returncode == 0
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print("Default FRAE (D=80, K=4, 512-256-16-256-512, 599,648 params), "
          "sequences of 100 frames, training, 1 thread.")
    print("%-6s %-9s | %12s %9s | %12s %9s | %8s %8s" % (
        "batch", "feedback", "frae fr/s", "RSS MB", "torch fr/s", "RSS MB",
        "speed x", "RSS /"))
    for batch in (1, 32):
        for fb in ("detached", "full"):
            f = run([os.path.join(build, "frae_bench"), "--batch", str(batch),
                     "--feedback", fb, "--seconds", seconds], env)
            if have_torch:
                t = run(["/usr/bin/python3", os.path.join(HERE, "torch_frae.py"),
                         "--batch", str(batch), "--feedback", fb, "--threads", "1",
                         "--seconds", seconds], env)
                tf, tr = float(t["frames_per_s"]), float(t["peak_rss_mb"])
                ratio = "%8.1f %8.1f" % (float(f["frames_per_s"]) / tf,
                                         tr / float(f["peak_rss_mb"]))
                tcols = "%12.0f %9.1f" % (tf, tr)
            else:
                tcols, ratio = "%12s %9s" % ("n/a", "n/a"), "%8s %8s" % ("", "")
            print("%-6d %-9s | %12.0f %9.1f | %s | %s" % (
                batch, fb, float(f["frames_per_s"]), float(f["peak_rss_mb"]),
                tcols, ratio))
            sys.stdout.flush()
    print("speed x: frae frames/s over torch's; RSS /: torch peak RSS over "
          "frae's. frae kernels: %s." % f["isa"])
    print()
    print("Streaming codec, default model, batch 1, 1 core (encode runs the "
          "decoder too, closed loop):")
    print("%-12s %10s %12s %12s %14s %20s" % ("quantizer", "bits/frame", "encode us",
                                              "decode us", "decode x RT", "enc+dec x RT"))
    for q in ("binary", "uniform:4"):
        c = run([os.path.join(build, "frae_bench"), "--seconds", seconds, "--codec", q], env)
        print("%-12s %10s %12s %12s %14s %20s" % (q, c["bits_per_frame"], c["encode_us"],
                                                  c["decode_us"], c["rt_decode"],
                                                  c["rt_encode_decode"]))
    print("x RT: real-time factor at 100 frames/s (10 ms frames).")
    if not have_torch:
        print("python3-torch is not installed: PyTorch columns skipped.")


if __name__ == "__main__":
    main()
