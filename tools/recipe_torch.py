#!/usr/bin/python3
"""The PyTorch reference recipe for the speech codec, side by side with frae.

Trains the same FRAE (tools/frae_torch.py: the GRU family, K = 0, GRUs of
240 units, the same latent and quantizer, so the same envelope bits per
frame) on the demo corpus's training voices, the way a PyTorch user would:

  - z-score each mel band (mean and std over the training frames),
  - shuffled 100-frame crops cut from the utterances at a random offset
    each epoch, batch 32,
  - torch.optim.Adam, lr 1e-3, gradients clipped to norm 1,
  - back-propagation through the whole crop, feedback included,

and trains frae with its own default recipe on the same data, for the same
number of epochs (`frae train ... --audio-features`, as tools/demo.py
does: per-band normalization, by default for audio features, shuffled
100-frame crops in batches of 16, Adam with Keras's epsilon at lr 1e-3,
clipping 1).  Both are then run closed loop, quantized, on
the held-out voices, and measured by one metric: LSD and MCD of the decoded
log-mel envelope against the original's (tools/demo.py's metrics, over
speech frames, 0-4 kHz and 0-8 kHz).  One run prints both, side by side.

Usage: tools/recipe_torch.py [--epochs N] [--quantizer binary|uniform:4]
                             [--latent L] [--frae PATH] [--threads N]
Needs python3-torch (scripts/install-deps.sh installs it with
WITH_OPTIONAL=1)."""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import demo  # noqa: E402  (metrics, mel band edges)

# frae's default recipe for the speech codec: what tools/demo.py trains with
FRAE_RECIPE = ["--family", "gru", *demo.RECIPE]


def load(folder):
    return [np.load(p).astype(np.float32)
            for p in sorted(glob.glob(os.path.join(folder, "*.npy")))]


def crops(seqs, n, rng):
    """Every sequence cut at a random offset into n-frame crops (a shorter
    sequence whole, zero-padded, its padding masked)."""
    out = []
    for s in seqs:
        if len(s) <= n:
            out.append((s, len(s)))
            continue
        at = rng.integers(0, min(n, len(s) - n + 1))
        while at + n <= len(s):
            out.append((s[at:at + n], n))
            at += n
    rng.shuffle(out)
    return out


def train_torch(train, args):
    import torch
    from frae_torch import FRAE
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    frames = np.concatenate(train)
    mean, std = frames.mean(0), frames.std(0)
    std = np.where(std > 1e-6, std, 1.0).astype(np.float32)
    norm = [(s - mean) / std for s in train]
    q, levels = ("uniform", int(args.quantizer.split(":")[1])) \
        if args.quantizer.startswith("uniform") else (args.quantizer, 0)
    model = FRAE(frame_dim=80, history=0, enc=(240,), latent=args.latent, dec=(240,),
                 quantizer=q, levels=levels, family="gru")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(args.seed)
    for epoch in range(args.epochs):
        t0, sse, count = time.time(), 0.0, 0
        batches = crops(norm, 100, rng)
        for b in range(0, len(batches), 32):
            part = batches[b:b + 32]
            T = max(n for _, n in part)
            x = np.zeros((len(part), T, 80), np.float32)
            mask = np.zeros((len(part), T, 1), np.float32)
            for i, (s, n) in enumerate(part):
                x[i, :n], mask[i, :n] = s[:n], 1
            x, mask = torch.from_numpy(x), torch.from_numpy(mask)
            y, _ = model(x, "full")
            loss = (((y - x) ** 2) * mask).sum() / (mask.sum() * 80)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sse += loss.item() * mask.sum().item()
            count += mask.sum().item()
        print("torch epoch %d/%d  loss %.6f  %.1f s" % (epoch + 1, args.epochs, sse / count,
                                                       time.time() - t0), flush=True)
    model.eval()

    def decode(seq):
        with torch.no_grad():
            z = torch.from_numpy(((seq - mean) / std)[None].astype(np.float32))
            y, _ = model(z, "full")
        return y[0].numpy() * std + mean
    return decode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--quantizer", default="binary")
    ap.add_argument("--latent", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    args = ap.parse_args()
    feats = os.path.join(args.corpus, "feats")
    train, test = load(os.path.join(feats, "train")), load(os.path.join(feats, "test"))
    names = sorted(glob.glob(os.path.join(feats, "test", "*.npy")))
    tmp = tempfile.mkdtemp(prefix="frae-recipe-")

    print("== frae, its default recipe (%d epochs)" % args.epochs, flush=True)
    t0 = time.time()
    model = os.path.join(tmp, "frae.safetensors")
    cmd = [args.frae, "train", os.path.join(feats, "train"), "--audio-features",
           "--quantizer", args.quantizer, "--latent", str(args.latent), *FRAE_RECIPE,
           "--epochs", str(args.epochs), "--seed", str(args.seed), "--save", model,
           "--progress", "off"]
    if subprocess.run(cmd).returncode:
        sys.exit("frae training failed")
    frae_secs = time.time() - t0
    frae_out = []
    for n in names:
        out = os.path.join(tmp, "y.npy")
        demo.sh([args.frae, "predict", model, n, "-o", out])  # == decode(encode)
        frae_out.append(np.load(out))

    print("== PyTorch reference recipe (%d epochs)" % args.epochs, flush=True)
    t0 = time.time()
    decode = train_torch(train, args)
    torch_secs = time.time() - t0
    torch_out = [decode(s) for s in test]

    narrow = np.where(demo.mel_upper_edges() <= 3800)[0]
    full = np.arange(80)
    rows = []
    for label, outs, secs in (("frae, default recipe", frae_out, frae_secs),
                              ("PyTorch reference recipe", torch_out, torch_secs)):
        r = [label]
        for bands in (narrow, full):
            v = [demo.metrics(ref, y, bands) for ref, y in zip(test, outs)]
            r += [np.mean([a for a, _ in v]), np.mean([b for _, b in v])]
        rows.append(r + [secs])
    print()
    print("Held-out voices (%d utterances), GRU FRAE, %s x %d latents, decoded envelope:"
          % (len(test), args.quantizer, args.latent))
    print("| recipe | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz | MCD 0-8 kHz | training s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.0f |" % tuple(r))
    f, t = rows
    ok = f[1] <= t[1] and f[2] <= t[2] and f[3] <= t[3] and f[4] <= t[4]
    print("%s: frae's default recipe is %s the PyTorch reference on every figure"
          % ("PASS" if ok else "FAIL", "at least as good as" if ok else "not as good as"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
