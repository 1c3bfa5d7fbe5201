"""PyTorch reference of the frae model (Debian's python3-torch).

Same semantics as the C library (README, "Model semantics"):
  encoder  [x_t, buffer] -> hidden (act) ... -> latent (tanh) -> quantizer
  decoder  [q_t, buffer] -> hidden (act) ... -> linear output y_t
  buffer   newest decoded frame first, zeros at the start of a sequence.

The state_dict names ("enc.0.weight", ..., "latent.weight", "dec.0.weight",
..., "out.weight") and layouts ([out, in]) are the ones frae documents.
"""
import torch
from torch import nn


class FRAE(nn.Module):
    def __init__(self, frame_dim=80, history=4, enc=(512, 256), latent=16,
                 dec=(256, 512), activation="relu", quantizer="none",
                 levels=0):
        super().__init__()
        D, K, L = frame_dim, history, latent
        self.D, self.K, self.L = D, K, L
        self.activation = activation
        self.quantizer = quantizer
        self.levels = levels
        widths = [D + K * D] + list(enc)
        self.enc = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.latent = nn.Linear(widths[-1], L)
        widths = [L + K * D] + list(dec)
        self.dec = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.out = nn.Linear(widths[-1], D)
        for layer in self.layers():  # Keras Dense defaults
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def layers(self):
        return list(self.enc) + [self.latent] + list(self.dec) + [self.out]

    def act(self, z):
        return torch.relu(z) if self.activation == "relu" else torch.tanh(z)

    def quantize(self, a):
        if self.quantizer == "binary":
            q = torch.where(a >= 0, torch.ones_like(a), -torch.ones_like(a))
        elif self.quantizer == "uniform":
            top = float(self.levels - 1)
            idx = torch.clamp(torch.round((a + 1.0) * 0.5 * top), 0.0, top)
            q = idx * (2.0 / top) - 1.0
        else:
            return a
        return a + (q - a).detach()  # straight-through

    def forward(self, x, feedback="detached", buffer=None):
        """x: [B, T, D].  Returns (y [B, T, D], buffer [B, K*D])."""
        B, T, _ = x.shape
        if buffer is None:
            buffer = x.new_zeros(B, self.K * self.D)
        ys = []
        for t in range(T):
            h = torch.cat([x[:, t], buffer], dim=1)
            for layer in self.enc:
                h = self.act(layer(h))
            q = self.quantize(torch.tanh(self.latent(h)))
            h = torch.cat([q, buffer], dim=1)
            for layer in self.dec:
                h = self.act(layer(h))
            y = self.out(h)
            ys.append(y)
            if self.K > 0:
                fed = y if feedback == "full" else y.detach()
                buffer = torch.cat([fed, buffer[:, : (self.K - 1) * self.D]], dim=1)
        return torch.stack(ys, dim=1), buffer


class KerasAdam:
    """Adam as Keras computes it (epsilon added to the uncorrected sqrt(v)).
    torch.optim.Adam places epsilon after the bias correction instead."""

    def __init__(self, params, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-7):
        self.params = list(params)
        self.lr, self.b1, self.b2, self.eps = lr, beta1, beta2, eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    @torch.no_grad()
    def step(self, grads):
        self.t += 1
        alpha = self.lr * (1 - self.b2 ** self.t) ** 0.5 / (1 - self.b1 ** self.t)
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m.mul_(self.b1).add_((1 - self.b1) * g)
            v.mul_(self.b2).add_((1 - self.b2) * (g * g))
            p.sub_(alpha * m / (v.sqrt() + self.eps))


def train_batch(model, opt, x, window, feedback):
    """Truncated BPTT as frae does it: windows of `window` frames, one Adam
    step per window, the buffer carried (as a constant) across windows.
    Returns the MSE over all frames."""
    T = x.shape[1]
    buffer, sse, count = None, 0.0, 0
    for w0 in range(0, T, window):
        xw = x[:, w0:w0 + window]
        y, buffer = model(xw, feedback, buffer)
        buffer = buffer.detach()
        loss = torch.mean((y - xw) ** 2)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        if opt is not None:
            opt.step(grads)
        sse += loss.item() * xw.numel()
        count += xw.numel()
    return sse / count
