#!/usr/bin/python3
"""Exports the PyTorch reference fixtures that tests/c/test_fixtures.c reads.

Usage: /usr/bin/python3 tools/export_fixtures.py tests/fixtures

Writes small.bin (the dense family), gru.bin (the GRU family with a buffer
of K = 2 frames and a dense layer after each GRU), gru_k0.bin (GRUs
alone, state feedback only) and gru_lookahead.bin (gru.bin's with two
frames of look-ahead) and gru_lookahead_packet.bin (the same, none past
the next packet of 3 frames' first); and with a learned prior and a rate term,
prior_dense.bin (the dense family, binary codes) and prior_gru.bin (GRUs
alone, uniform codes of 5 levels), and the same two with the prior's
within-frame autoregression, prior_ar_dense.bin and prior_ar_gru.bin; and
trained toward targets other than
their inputs (denoising), targets_dense.bin and targets_gru.bin; and
trained with the level term (--level-loss), level_dense.bin and
level_gru.bin.

File format (little-endian), small enough to commit:
  "FRAEFIX1", u32 count, then per tensor:
  u32 name length, name (ASCII), u32 ndim, u32 dims[ndim], f32 data.
Weights are stored as PyTorch keeps them, [out, in].
"""
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frae_torch import FRAE, KerasAdam, train_batch  # noqa: E402

CFG = dict(frame_dim=5, history=2, enc=(7, 6), latent=3, dec=(6, 7))
CONFIGS = {
    "small": CFG,
    "gru": dict(CFG, family="gru"),
    "gru_k0": dict(frame_dim=5, history=0, enc=(7,), latent=3, dec=(6,),
                   family="gru"),
    # the encoder's look-ahead: two frames, held at the sequence's end, and
    # across truncated BPTT's windows
    "gru_lookahead": dict(CFG, family="gru", lookahead=2),
    # ... none past the first frame of the next packet of 3 (T = 6: both
    # packets, and a window boundary inside the second)
    "gru_lookahead_packet": dict(CFG, family="gru", lookahead=2, lookahead_packet=3),
}
B, T = 2, 6
# Non-default Adam settings: updates large against the float resolution of
# the parameters, and an epsilon big enough that putting it where torch does
# instead of where Keras does would show.
ADAM = dict(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-4)


def write(path, tensors):
    with open(path, "wb") as f:
        f.write(b"FRAEFIX1")
        f.write(struct.pack("<I", len(tensors)))
        for name, t in tensors:
            t = t.detach().to(torch.float32).contiguous()
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb)
            f.write(struct.pack("<I", t.dim()))
            f.write(struct.pack("<%dI" % t.dim(), *t.shape))
            f.write(t.numpy().astype("<f4").tobytes())


def model_with(init_state, cfg=CFG, **kw):
    m = FRAE(**cfg, **kw)
    m.load_state_dict(init_state)
    return m


def margin_to_rounding(model, x, levels):
    """Smallest distance of a latent from a rounding boundary, so a 1-ulp
    difference in tanh cannot flip a quantized value."""
    mins = []

    def hook(_, __, out):
        a = torch.tanh(out)
        s = (a + 1) * 0.5 * (levels - 1)
        mins.append((s - torch.floor(s) - 0.5).abs().min().item())

    h = model.latent.register_forward_hook(hook)
    with torch.no_grad():
        model(x)
    h.remove()
    return min(mins)


def seeded_init(cfg, seed):
    """The reference model's initial state: torch's init under seed, then
    non-zero biases so bias handling is exercised."""
    torch.manual_seed(seed)
    base = FRAE(**cfg)
    with torch.no_grad():
        for _, bias in base.matrices():
            bias.uniform_(-0.2, 0.2)
    return {k: v.clone() for k, v in base.state_dict().items()}


def export(outdir, which):
    cfg = CONFIGS[which]
    init = seeded_init(cfg, 1234)
    x = torch.rand(B, T, cfg["frame_dim"]) * 2 - 1
    out = [("x", x), ("adam.hparams", torch.tensor(
        [ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"]]))]
    out += [("param." + k, v) for k, v in init.items()]

    for quant, levels in (("none", 0), ("binary", 0), ("uniform", 5)):
        m = model_with(init, cfg, quantizer=quant, levels=levels)
        if quant == "uniform":
            assert margin_to_rounding(m, x, levels) > 1e-4
        with torch.no_grad():
            y, _ = m(x)
        out.append(("y." + quant, y))

    for mode in ("detached", "full"):
        m = model_with(init, cfg)
        y, _ = m(x, mode)
        loss = torch.mean((y - x) ** 2)
        grads = torch.autograd.grad(loss, list(m.parameters()))
        out.append(("loss." + mode, loss.reshape(1)))
        for (k, _), g in zip(m.named_parameters(), grads):
            out.append(("grad.%s.%s" % (mode, k), g))
        # three Adam steps on the same batch, one window each
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        for _ in range(3):
            train_batch(m, opt, x, T, mode)
        for k, v in m.state_dict().items():
            out.append(("adam3.%s.%s" % (mode, k), v))
        # truncated BPTT: windows of 4 then 2 frames, two Adam steps
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        tloss = train_batch(m, opt, x, 4, mode)
        out.append(("tbptt.%s.loss" % mode, torch.tensor([tloss])))
        for k, v in m.state_dict().items():
            out.append(("tbptt.%s.%s" % (mode, k), v))

    # bf16 weights (inference): torch rounds the weight matrices with
    # .bfloat16() and computes in float32; biases stay float32
    m = model_with(init, cfg)
    with torch.no_grad():
        for weight, _ in m.matrices():
            weight.copy_(weight.bfloat16().float())
        y, _ = m(x)
    out.append(("y.bf16", y))
    out += [("bf16.param." + k, v) for k, v in m.state_dict().items()]

    path = os.path.join(outdir, which + ".bin")
    write(path, out)
    print("wrote %s: %d tensors, %d bytes" % (path, len(out), os.path.getsize(path)))


PRIOR_CONFIGS = {
    "prior_dense": dict(CFG, quantizer="binary", prior=4),
    "prior_gru": dict(CONFIGS["gru_k0"], quantizer="uniform", levels=5,
                      prior=4),
    # the within-frame autoregression, over binary and uniform codes
    "prior_ar_dense": dict(CFG, quantizer="binary", prior=4, prior_ar=True),
    "prior_ar_gru": dict(CONFIGS["gru_k0"], quantizer="uniform", levels=5,
                         prior=4, prior_ar=True),
}
RATE_LAMBDA = 0.05


def export_prior(outdir, which):
    cfg = PRIOR_CONFIGS[which]
    init = seeded_init(cfg, 4321)
    if cfg.get("prior_ar"):  # non-zero where it may see a code, zero elsewhere
        torch.manual_seed(8765)
        mask = model_with(init, cfg).ar_mask
        init["prior.2.weight"] = (torch.rand(mask.shape) - 0.5) * mask
    x = torch.rand(B, T, cfg["frame_dim"]) * 2 - 1
    if cfg["quantizer"] == "uniform":
        assert margin_to_rounding(model_with(init, cfg), x, cfg["levels"]) > 1e-4
    out = [("x", x), ("adam.hparams", torch.tensor(
        [ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"]])),
        ("rate_lambda", torch.tensor([RATE_LAMBDA]))]
    out += [("param." + k, v) for k, v in init.items()]
    m = model_with(init, cfg)
    with torch.no_grad():
        y, _ = m(x)
    out += [("y", y), ("rate", m.last_rate.mean().reshape(1))]
    for mode in ("detached", "full"):
        m = model_with(init, cfg)
        y, _ = m(x, mode)
        mse = torch.mean((y - x) ** 2)
        loss = mse + RATE_LAMBDA * m.last_rate.mean()
        grads = torch.autograd.grad(loss, list(m.parameters()))
        out.append(("loss.%s" % mode, mse.reshape(1)))
        out.append(("rate.%s" % mode, m.last_rate.mean().reshape(1)))
        for (k, _), g in zip(m.named_parameters(), grads):
            out.append(("grad.%s.%s" % (mode, k), g))
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        for _ in range(3):
            train_batch(m, opt, x, T, mode, RATE_LAMBDA)
        for k, v in m.state_dict().items():
            out.append(("adam3.%s.%s" % (mode, k), v))
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        tloss = train_batch(m, opt, x, 4, mode, RATE_LAMBDA)
        out.append(("tbptt.%s.loss" % mode, torch.tensor([tloss])))
        out.append(("tbptt.%s.rate" % mode, torch.tensor([m.train_rate])))
        for k, v in m.state_dict().items():
            out.append(("tbptt.%s.%s" % (mode, k), v))
    path = os.path.join(outdir, which + ".bin")
    write(path, out)
    print("wrote %s: %d tensors, %d bytes" % (path, len(out), os.path.getsize(path)))


TARGET_CONFIGS = {"targets_dense": CFG, "targets_gru": CONFIGS["gru"]}


def export_targets(outdir, which):
    """A model trained toward targets other than its inputs (a denoising
    autoencoder): the loss against the target; feedback on its own output."""
    cfg = TARGET_CONFIGS[which]
    init = seeded_init(cfg, 2468)
    x = torch.rand(B, T, cfg["frame_dim"]) * 2 - 1
    target = torch.rand(B, T, cfg["frame_dim"]) * 2 - 1
    out = [("x", x), ("target", target), ("adam.hparams", torch.tensor(
        [ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"]]))]
    out += [("param." + k, v) for k, v in init.items()]
    with torch.no_grad():
        y, _ = model_with(init, cfg)(x)
    out.append(("loss", torch.mean((y - target) ** 2).reshape(1)))
    for mode in ("detached", "full"):
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        for _ in range(3):
            train_batch(m, opt, x, T, mode, target=target)
        for k, v in m.state_dict().items():
            out.append(("adam3.%s.%s" % (mode, k), v))
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        tloss = train_batch(m, opt, x, 4, mode, target=target)
        out.append(("tbptt.%s.loss" % mode, torch.tensor([tloss])))
        for k, v in m.state_dict().items():
            out.append(("tbptt.%s.%s" % (mode, k), v))
    path = os.path.join(outdir, which + ".bin")
    write(path, out)
    print("wrote %s: %d tensors, %d bytes" % (path, len(out), os.path.getsize(path)))


LEVEL_CONFIGS = {"level_dense": CFG, "level_gru": CONFIGS["gru"],
                 "level_emphasis_gru": CONFIGS["gru"]}
LEVEL = (0.5, 2.0)  # level_loss, level_scale
EMPHASIS = (3.0, 1, 4)  # cfg.emphasis, emphasis_from, emphasis_to


def export_level(outdir, which):
    """A model trained with the level term (cfg.level_loss): the squared
    log ratio of decoded to input power over each window's active frames;
    one input frame 30 dB and more below the rest, so not all are.  The
    _emphasis_ set also weighs values 1..3 of each frame 3 in the squared
    error (cfg.emphasis)."""
    cfg = LEVEL_CONFIGS[which]
    emphasis = EMPHASIS if "emphasis" in which else None
    init = seeded_init(cfg, 1357)
    x = torch.rand(B, T, cfg["frame_dim"]) * 2 - 1
    x[0, 2] = -5.0  # quiet: outside the level term
    out = [("x", x), ("level", torch.tensor(LEVEL)), ("adam.hparams", torch.tensor(
        [ADAM["lr"], ADAM["beta1"], ADAM["beta2"], ADAM["eps"]]))]
    if emphasis:
        out.append(("emphasis", torch.tensor(emphasis, dtype=torch.float32)))
    out += [("param." + k, v) for k, v in init.items()]
    for mode in ("detached", "full"):
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        for _ in range(3):
            train_batch(m, opt, x, T, mode, level_loss=LEVEL[0], level_scale=LEVEL[1],
                        emphasis=emphasis)
        for k, v in m.state_dict().items():
            out.append(("adam3.%s.%s" % (mode, k), v))
        m = model_with(init, cfg)
        opt = KerasAdam(m.parameters(), **ADAM)
        tloss = train_batch(m, opt, x, 4, mode, level_loss=LEVEL[0], level_scale=LEVEL[1],
                            emphasis=emphasis)
        out.append(("tbptt.%s.loss" % mode, torch.tensor([tloss])))
        out.append(("tbptt.%s.level" % mode, torch.tensor([m.train_level])))
        for k, v in m.state_dict().items():
            out.append(("tbptt.%s.%s" % (mode, k), v))
    path = os.path.join(outdir, which + ".bin")
    write(path, out)
    print("wrote %s: %d tensors, %d bytes" % (path, len(out), os.path.getsize(path)))


def main(outdir, which=None):
    os.makedirs(outdir, exist_ok=True)
    for name in LEVEL_CONFIGS:
        if which in (None, name):
            export_level(outdir, name)
    for name in TARGET_CONFIGS:
        if which in (None, name):
            export_targets(outdir, name)
    for name in CONFIGS:
        if which in (None, name):
            export(outdir, name)
    for name in PRIOR_CONFIGS:
        if which in (None, name):
            export_prior(outdir, name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures",
         sys.argv[2] if len(sys.argv) > 2 else None)
