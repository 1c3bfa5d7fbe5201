#!/usr/bin/python3
"""Data-parallel training, measured (make bench-mpi).  Not a test: timings
on a shared machine are noisy, so nothing here passes or fails on speed.

On this machine, for the default dense model and the default GRU model, in
one run:
  - 1 process x 2 threads against 2 MPI ranks x 1 thread (and 2 replicas x
    1 thread, the same sums without MPI), at a global batch of 32, in
    frames/s;
  - the bytes each step sums across ranks and what the sum takes.
Then a cluster model: the compute of one step measured here at several
batches per rank (one thread), and a ring allreduce over N ranks costing
2 (N-1)/N x gradient bytes / bandwidth + 2 (N-1) x latency, for 25 and 100
Gbit/s links; the smallest batch per rank that keeps 90% of the compute
(no overlap assumed).

Usage: mpi_scale.py BUILD_DIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
FRAE = os.path.abspath(os.path.join(BUILD, "frae"))
FRAE_MPI = os.path.abspath(os.path.join(BUILD, "frae-mpi"))
MPIRUN = shutil.which("mpirun")
TMP = tempfile.mkdtemp(prefix="frae-mpi-bench-")
DATA = ["--sequences", "256", "--frames", "200", "--epochs", "3", "--progress", "off",
        "--save", "none"]
MODELS = {"dense (default)": [], "gru (default)": ["--family", "gru"]}
LATENCY = 5e-6  # seconds per message on a cluster interconnect (typical TCP/RoCE)


def train(args, mpi=0):
    cmd = [FRAE, "train"] + args
    if mpi:
        cmd = [MPIRUN, "-q", "--allow-run-as-root", "--oversubscribe", "-np", str(mpi),
               "--bind-to", "none", FRAE_MPI, "train"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=TMP)
    if p.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    fps = [float(m.group(1)) for m in re.finditer(r"  (\d+) frames/s", p.stdout)]
    red = re.search(r"([\d.]+) KiB of gradients summed per step, ([\d.]+) ms per step",
                    p.stdout)
    # the first epoch warms up: the best of the others
    return max(fps[1:]), (float(red.group(1)), float(red.group(2))) if red else None


def main():
    if not (MPIRUN and os.access(FRAE_MPI, os.X_OK)):
        sys.exit("needs mpirun and %s (WITH_MPI=1 scripts/install-deps.sh; make mpi)"
                 % FRAE_MPI)
    print("== data-parallel training on this machine (%d CPUs), global batch 32"
          % os.cpu_count())
    print("%-16s %14s %14s %14s %8s %11s %9s" % (
        "model", "1 x 2 threads", "2 MPI x 1", "2 replicas", "MPI/1p", "KiB/step",
        "sum ms"))
    model_costs = {}
    for name, fam in MODELS.items():
        one, _ = train(fam + DATA + ["--batch", "32", "--threads", "2"])
        mpi, (kib, ms) = train(fam + DATA + ["--batch", "32", "--threads", "1"], mpi=2)
        rep, _ = train(fam + DATA + ["--batch", "32", "--threads", "1", "--replicas", "2"])
        print("%-16s %11.0f f/s %11.0f f/s %11.0f f/s %7.2fx %11.1f %9.3f" % (
            name, one, mpi, rep, mpi / one, kib, ms))
        # compute per step at b sequences per rank, one thread, alone
        steps = {}
        for b in (1, 4, 16, 32, 64):
            fps, _ = train(fam + DATA + ["--batch", str(b), "--threads", "1"])
            steps[b] = 100.0 * b / fps  # one step: a window of 100 frames x b
        model_costs[name] = (kib * 1024, steps)

    print("\n== cluster model: compute measured here (1 thread per rank), ring allreduce "
          "2(N-1)/N x bytes / bandwidth + 2(N-1) x %.0f us, no overlap" % (LATENCY * 1e6))
    for name, (nbytes, steps) in model_costs.items():
        bs = sorted(steps)
        # t(b) = a + c b, least squares over the measured batches
        n = len(bs)
        mb = sum(bs) / n
        mt = sum(steps[b] for b in bs) / n
        c = sum((b - mb) * (steps[b] - mt) for b in bs) / sum((b - mb) ** 2 for b in bs)
        a = mt - c * mb
        print("%s: %.2f MB of gradients; a step takes %.2f ms + %.3f ms per sequence"
              % (name, nbytes / 1e6, 1e3 * a, 1e3 * c))
        print("    measured: " + ", ".join("b=%d %.2f ms" % (b, 1e3 * steps[b]) for b in bs))
        for gbit in (25, 100):
            bw = gbit * 1e9 / 8
            row = []
            for N in (8, 32, 128):
                comm = 2 * (N - 1) / N * nbytes / bw + 2 * (N - 1) * LATENCY
                # efficiency t(b) / (t(b) + comm) >= 0.9  <=>  t(b) >= 9 comm
                b = max(1, -(-(9 * comm - a) // c)) if c > 0 else float("inf")
                eff1 = (a + c) / (a + c + comm)
                row.append("N=%d: comm %.2f ms, b>=%d (b=1: %.0f%%)"
                           % (N, 1e3 * comm, b, 100 * eff1))
            print("    %3d Gbit/s  %s" % (gbit, ";  ".join(row)))
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
