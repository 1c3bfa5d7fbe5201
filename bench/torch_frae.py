#!/usr/bin/python3
"""Training throughput of the same default FRAE in PyTorch (CPU), the way
the seed trained it: frame-by-frame loop, cat for the buffer, Adam.
Usage: torch_frae.py --batch B --feedback detached|full --threads N
                     [--family dense|gru]
Prints one line of key=value pairs, read by bench/run.py."""
import argparse
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from frae_torch import FRAE  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--feedback", default="detached")
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--family", default="dense")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    # the default GRU model is frae_config_default_gru's
    model = FRAE(history=0, enc=(240,), dec=(240,), family="gru") \
        if a.family == "gru" else FRAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    xs = [torch.rand(a.batch, a.frames, 80) for _ in range(2)]

    def step(x):
        y, _ = model(x, a.feedback)
        loss = torch.mean((y - x) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    step(xs[0])  # warm-up
    done, t0 = 0, time.perf_counter()
    while True:
        loss = step(xs[done % len(xs)])
        done += 1
        t = time.perf_counter() - t0
        if t >= a.seconds:
            break
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("system=torch batch=%d feedback=%s threads=%d frames_per_s=%.1f "
          "peak_rss_mb=%.1f torch=%s loss=%.6f" % (
              a.batch, a.feedback, a.threads, done * a.batch * a.frames / t,
              rss, torch.__version__, loss))


if __name__ == "__main__":
    main()
