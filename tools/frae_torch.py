"""PyTorch reference of the frae model (Debian's python3-torch).

Same semantics as the C library (README, "Model semantics"):
  encoder  [x_t, buffer] -> hidden (act) ... -> latent (tanh) -> quantizer
  decoder  [q_t, buffer] -> hidden (act) ... -> linear output y_t
  buffer   newest decoded frame first, zeros at the start of a sequence.
The GRU family (family="gru", the paper's FRAE) makes the first hidden
layer of each side an nn.GRUCell and feeds the decoder GRU's state back:
  encoder  GRUCell([x_t, h_dec(t-1), buffer], h_enc) -> hidden ... -> latent
  decoder  GRUCell([q_t, buffer], h_dec) -> hidden ... -> linear output y_t

A learned prior (prior=P > 0, quantized codes only) predicts each code of
frame t from the decoder's state before it (h_dec(t-1), or the buffer for
the dense family), detached as the feedback is (full feedback: not): a
tanh layer of P units, then one logit per unit (binary: p(+1) = sigmoid)
or N (uniform: softmax over the levels).  With prior_ar, unit u's logits
also see the frame's codes q_0..q_{u-1}: + A q + b, A [L*S, L] masked to
those codes ("prior.2"; its gradient reaches the codes, as the rate's
does, through the straight-through quantizer).
rate(t) = -log2 p(q_t) summed over units; its gradient reaches the encoder
through the straight-through quantizer as the slope of -log2 p between q's
neighbouring levels.

The state_dict names ("enc.0.weight", ..., "latent.weight", "dec.0.weight",
..., "out.weight"; a GRU's "enc.0.weight_ih", "enc.0.weight_hh",
"enc.0.bias_ih", "enc.0.bias_hh") and layouts ([out, in]) are the ones frae
documents.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class FRAE(nn.Module):
    def __init__(self, frame_dim=80, history=4, enc=(512, 256), latent=16,
                 dec=(256, 512), activation="relu", quantizer="none",
                 levels=0, family="dense", prior=0, prior_ar=False, lookahead=0,
                 lookahead_packet=0):
        super().__init__()
        D, K, L = frame_dim, history, latent
        self.D, self.K, self.L = D, K, L
        self.A = lookahead  # GRU: the encoder also sees the next A frames
        self.P = lookahead_packet  # ... none past the next packet of P frames' first
        self.activation = activation
        self.quantizer = quantizer
        self.levels = levels
        self.gru = family == "gru"
        fed = dec[0] if self.gru else 0
        widths = [D + fed + K * D + self.A * D + (self.A if self.P else 0)] + list(enc)
        self.enc = nn.ModuleList(self._layer(i, a, b) for i, (a, b) in
                                 enumerate(zip(widths, widths[1:])))
        self.latent = nn.Linear(widths[-1], L)
        widths = [L + K * D] + list(dec)
        self.dec = nn.ModuleList(self._layer(i, a, b) for i, (a, b) in
                                 enumerate(zip(widths, widths[1:])))
        self.out = nn.Linear(widths[-1], D)
        if prior:
            ctx = dec[0] if self.gru else K * D
            syms = levels if quantizer == "uniform" else 1
            self.prior = nn.ModuleList([nn.Linear(ctx, prior),
                                        nn.Linear(prior, L * syms)])
            if prior_ar:  # "prior.2": the frame's codes -> the logits
                self.prior.append(nn.Linear(L, L * syms))
                col = torch.arange(L * syms)[:, None] // syms
                self.register_buffer("ar_mask", (torch.arange(L)[None, :] < col).float(),
                                     persistent=False)
        else:
            self.prior = None
        self.prior_ar = bool(prior and prior_ar)
        for layer in self.layers():  # Keras defaults
            if isinstance(layer, nn.GRUCell):
                nn.init.xavier_uniform_(layer.weight_ih)
                nn.init.orthogonal_(layer.weight_hh)
                nn.init.zeros_(layer.bias_ih)
                nn.init.zeros_(layer.bias_hh)
            else:
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        if self.prior_ar:  # frae's init: no autoregression yet
            nn.init.zeros_(self.prior[2].weight)

    def _layer(self, i, a, b):
        return nn.GRUCell(a, b) if self.gru and i == 0 else nn.Linear(a, b)

    def layers(self):
        return (list(self.enc) + [self.latent] + list(self.dec) + [self.out] +
                (list(self.prior) if self.prior is not None else []))

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

    def rate(self, ctx, q):
        """Bits of codes q [B, L] under the prior given ctx."""
        logit = self.prior[1](torch.tanh(self.prior[0](ctx)))
        if self.prior_ar:  # unit u's logits also see codes 0..u-1
            ar = self.prior[2]
            logit = logit + F.linear(q, ar.weight * self.ar_mask, ar.bias)
        ln2 = math.log(2.0)
        qh = q.detach()
        if self.quantizer == "binary":
            bits = F.softplus(-qh * logit) / ln2  # -log2 sigmoid(q l)
            slope = -logit.detach() / (2 * ln2)
        else:
            N = self.levels
            top = float(N - 1)
            lg = logit.reshape(q.shape[0], self.L, N)
            k = torch.clamp(torch.round((qh + 1) * 0.5 * top), 0, top).long()
            bits = -torch.log_softmax(lg, dim=2).gather(2, k[..., None])[..., 0] / ln2
            d = lg.detach()
            delta = 2.0 / top
            lo = torch.clamp(k - 1, 0, N - 1)
            hi = torch.clamp(k + 1, 0, N - 1)
            gap = (hi - lo).float() * delta  # one-sided at the ends
            slope = (d.gather(2, lo[..., None]) - d.gather(2, hi[..., None]))[..., 0] / (gap * ln2)
        # the value is the exact bits; d/dq is the neighbour slope
        return (bits + (q - qh) * slope).sum(dim=1)

    def initial_state(self, x):
        B = x.shape[0]
        buffer = x.new_zeros(B, self.K * self.D)
        if not self.gru:
            return buffer
        return (buffer, x.new_zeros(B, self.enc[0].hidden_size),
                x.new_zeros(B, self.dec[0].hidden_size))

    def forward(self, x, feedback="detached", state=None, ahead=None):
        """x: [B, T, D].  Returns (y [B, T, D], state): the buffer [B, K*D],
        and for the GRU family (buffer, h_enc, h_dec).  Within the call the
        GRUs' own recurrences are always differentiated; `feedback` says
        whether the fed-back frames and h_dec (into the encoder) are.  With
        look-ahead, ahead [B, T, A*D] is each frame's next A frames (None:
        lookahead_frames(x), x being the whole sequence)."""
        B, T, _ = x.shape
        if self.A and ahead is None:
            ahead = lookahead_frames(x, self.A, self.P)
        if state is None:
            state = self.initial_state(x)
        buffer, h_enc, h_dec = state if self.gru else (state, None, None)
        full = feedback == "full"
        ys, rates = [], []
        for t in range(T):
            if self.gru:
                fed = h_dec if full else h_dec.detach()
                parts = [x[:, t], fed, buffer] + ([ahead[:, t]] if self.A else [])
                h_enc = self.enc[0](torch.cat(parts, dim=1), h_enc)
                h = h_enc
                rest = self.enc[1:]
            else:
                h = torch.cat([x[:, t], buffer], dim=1)
                rest = self.enc
            for layer in rest:
                h = self.act(layer(h))
            q = self.quantize(torch.tanh(self.latent(h)))
            if self.prior is not None:
                ctx = h_dec if self.gru else buffer
                rates.append(self.rate(ctx if full else ctx.detach(), q))
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
        self.last_rate = torch.stack(rates, dim=1) if rates else None  # [B, T]
        return torch.stack(ys, dim=1), state


def lookahead_frames(x, A, P=0):
    """[B, T, A*D]: frames t+1..t+A of x [B, T, D] for each t, held at the
    last frame past the end (frae's cfg.lookahead).  With packets of P
    frames (cfg.lookahead_packet), [B, T, A*D + A]: none past the first
    frame of the packet after t's or past the end, each such frame zeros,
    then a flag per frame, 1 where it is there."""
    B, T = x.shape[0], x.shape[1]
    t = torch.arange(T)[:, None]
    want = t + torch.arange(1, A + 1)[None, :]  # [T, A]
    idx = torch.clamp(want, max=T - 1)
    if not P:
        return x[:, idx].reshape(B, T, -1)
    seen = (want <= torch.clamp(t - t % P + P, max=T - 1)).to(x.dtype)  # [T, A]
    frames = x[:, idx] * seen[None, :, :, None]
    return torch.cat([frames.reshape(B, T, -1), seen.expand(B, T, A)], dim=2)


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


def level_term(y, ref, scale):
    """frae's level term (cfg.level_loss) of one window, before its weight:
    per sequence, n x (ln sum P_y - ln sum P_ref)^2 over the n frames
    within 30 dB of the window's loudest ref frame, P a frame's power
    sum_d exp(scale v), summed over the sequences and divided by the
    window's frames (B x w)."""
    lx = torch.logsumexp(scale * ref, dim=2)  # [B, w]
    ly = torch.logsumexp(scale * y, dim=2)
    loudest = lx.max(dim=1, keepdim=True).values
    active = (lx >= loudest - 3.0 * math.log(10.0)).to(y.dtype)
    sx = (torch.exp(lx - loudest) * active).sum(dim=1)
    sy = (torch.exp(ly - loudest) * active).sum(dim=1)
    delta = torch.log(sy) - torch.log(sx)
    return (active.sum(dim=1) * delta ** 2).sum() / (y.shape[0] * y.shape[1])


def train_batch(model, opt, x, window, feedback, rate_lambda=0.0, target=None,
                level_loss=0.0, level_scale=5.0, emphasis=None):
    """Truncated BPTT as frae does it: windows of `window` frames, one Adam
    step per window, the buffer carried (as a constant) across windows.
    The loss is the MSE against x (or against target, [B, T, D], for a
    model trained toward other targets), + rate_lambda x the mean bits per
    frame with a prior, + level_loss x level_term; emphasis, (w, lo, hi):
    values lo..hi-1 of each frame weigh w in the squared error (frae's
    cfg.emphasis), the MSE then being that weighted one.  Returns the MSE over
    all frames (and sets model.train_rate to the mean bits per frame and
    model.train_level to the level terms' sum, each window's times its
    frames, over all frames)."""
    T = x.shape[1]
    state, sse, count, bits, level = None, 0.0, 0, 0.0, 0.0
    ahead = lookahead_frames(x, model.A, model.P) if model.A else None  # across windows
    for w0 in range(0, T, window):
        xw = x[:, w0:w0 + window]
        y, state = model(xw, feedback, state,
                         None if ahead is None else ahead[:, w0:w0 + window])
        state = (tuple(s.detach() for s in state) if isinstance(state, tuple)
                 else state.detach())
        tw = xw if target is None else target[:, w0:w0 + window]
        sq = (y - tw) ** 2
        if emphasis is not None:
            w = torch.ones(sq.shape[-1], dtype=sq.dtype)
            w[emphasis[1]:emphasis[2]] = emphasis[0]
            sq = sq * w
        loss = torch.mean(sq)
        mse = loss
        if model.prior is not None:
            loss = loss + rate_lambda * model.last_rate.mean()
            bits += model.last_rate.sum().item()
        if level_loss > 0:
            lv = level_term(y, tw, level_scale)
            loss = loss + level_loss * lv
            level += lv.item() * y.shape[0] * y.shape[1]
        grads = torch.autograd.grad(loss, list(model.parameters()),
                                    allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g
                 for p, g in zip(model.parameters(), grads)]
        if opt is not None:
            opt.step(grads)
        sse += mse.item() * xw.numel()
        count += xw.numel()
    model.train_rate = bits / (x.shape[0] * T)
    model.train_level = level / (x.shape[0] * T)
    return sse / count
