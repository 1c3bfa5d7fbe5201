"""PyTorch reference of the frae model (Debian's python3-torch).

Same semantics as the C library (README, "Model semantics"):
  encoder  [x_t, buffer] -> hidden (act) ... -> latent (tanh) -> quantizer
  decoder  [q_t, buffer] -> hidden (act) ... -> linear output y_t
  buffer   newest decoded frame first, zeros at the start of a sequence.
The GRU family (family="gru", the paper's FRAE) makes the first hidden
layer of each side an nn.GRUCell and feeds the decoder GRU's state back:
  encoder  GRUCell([x_t, h_dec(t-1), buffer], h_enc) -> hidden ... -> latent
  decoder  GRUCell([q_t, buffer], h_dec) -> hidden ... -> linear output y_t

The state_dict names ("enc.0.weight", ..., "latent.weight", "dec.0.weight",
..., "out.weight"; a GRU's "enc.0.weight_ih", "enc.0.weight_hh",
"enc.0.bias_ih", "enc.0.bias_hh") and layouts ([out, in]) are the ones frae
documents.
"""
import torch
from torch import nn


class FRAE(nn.Module):
    def __init__(self, frame_dim=80, history=4, enc=(512, 256), latent=16,
                 dec=(256, 512), activation="relu", quantizer="none",
                 levels=0, family="dense"):
        super().__init__()
        D, K, L = frame_dim, history, latent
        self.D, self.K, self.L = D, K, L
        self.activation = activation
        self.quantizer = quantizer
        self.levels = levels
        self.gru = family == "gru"
        fed = dec[0] if self.gru else 0
        widths = [D + fed + K * D] + list(enc)
        self.enc = nn.ModuleList(self._layer(i, a, b) for i, (a, b) in
                                 enumerate(zip(widths, widths[1:])))
        self.latent = nn.Linear(widths[-1], L)
        widths = [L + K * D] + list(dec)
        self.dec = nn.ModuleList(self._layer(i, a, b) for i, (a, b) in
                                 enumerate(zip(widths, widths[1:])))
        self.out = nn.Linear(widths[-1], D)
        for layer in self.layers():  # Keras defaults
            if isinstance(layer, nn.GRUCell):
                nn.init.xavier_uniform_(layer.weight_ih)
                nn.init.orthogonal_(layer.weight_hh)
                nn.init.zeros_(layer.bias_ih)
                nn.init.zeros_(layer.bias_hh)
            else:
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)

    def _layer(self, i, a, b):
        return nn.GRUCell(a, b) if self.gru and i == 0 else nn.Linear(a, b)

    def layers(self):
        return list(self.enc) + [self.latent] + list(self.dec) + [self.out]

    def matrices(self):
        """(weight, bias) pairs: a GRU gives two, (ih) and (hh)."""
        for layer in self.layers():
            if isinstance(layer, nn.GRUCell):
                yield layer.weight_ih, layer.bias_ih
                yield layer.weight_hh, layer.bias_hh
            else:
                yield layer.weight, layer.bias

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

    def initial_state(self, x):
        B = x.shape[0]
        buffer = x.new_zeros(B, self.K * self.D)
        if not self.gru:
            return buffer
        return (buffer, x.new_zeros(B, self.enc[0].hidden_size),
                x.new_zeros(B, self.dec[0].hidden_size))

    def forward(self, x, feedback="detached", state=None):
        """x: [B, T, D].  Returns (y [B, T, D], state): the buffer [B, K*D],
        and for the GRU family (buffer, h_enc, h_dec).  Within the call the
        GRUs' own recurrences are always differentiated; `feedback` says
        whether the fed-back frames and h_dec (into the encoder) are."""
        B, T, _ = x.shape
        if state is None:
            state = self.initial_state(x)
        buffer, h_enc, h_dec = state if self.gru else (state, None, None)
        full = feedback == "full"
        ys = []
        for t in range(T):
            if self.gru:
                fed = h_dec if full else h_dec.detach()
                h_enc = self.enc[0](torch.cat([x[:, t], fed, buffer], dim=1), h_enc)
                h = h_enc
                rest = self.enc[1:]
            else:
                h = torch.cat([x[:, t], buffer], dim=1)
                rest = self.enc
            for layer in rest:
                h = self.act(layer(h))
            q = self.quantize(torch.tanh(self.latent(h)))
            h = torch.cat([q, buffer], dim=1)
            if self.gru:
                h_dec = self.dec[0](h, h_dec)
                h = h_dec
                rest = self.dec[1:]
            else:
                rest = self.dec
            for layer in rest:
                h = self.act(layer(h))
            y = self.out(h)
            ys.append(y)
            if self.K > 0:
                fed = y if full else y.detach()
                buffer = torch.cat([fed, buffer[:, : (self.K - 1) * self.D]], dim=1)
        state = (buffer, h_enc, h_dec) if self.gru else buffer
        return torch.stack(ys, dim=1), state


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
    state, sse, count = None, 0.0, 0
    for w0 in range(0, T, window):
        xw = x[:, w0:w0 + window]
        y, state = model(xw, feedback, state)
        state = (tuple(s.detach() for s in state) if isinstance(state, tuple)
                 else state.detach())
        loss = torch.mean((y - xw) ** 2)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        if opt is not None:
            opt.step(grads)
        sse += loss.item() * xw.numel()
        count += xw.numel()
    return sse / count
