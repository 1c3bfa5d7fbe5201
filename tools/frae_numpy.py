"""The FRAE forward pass in NumPy (float64), from Keras-layout weights:
[kernel [in, out], bias [out]] per layer, in layer order.  A reference for
tests of imported weights; see README "Model semantics"."""
import numpy as np


def _quantize(a, quantizer, levels):
    if quantizer == "binary":
        return np.where(a >= 0, 1.0, -1.0)
    if quantizer == "uniform":
        top = levels - 1
        return np.clip(np.round((a + 1) * 0.5 * top), 0, top) * (2.0 / top) - 1
    return a


def forward(weights, x, history, latent_layer, activation="relu",
            quantizer="none", levels=0):
    """weights: list of arrays as model.get_weights() returns them.
    x: [T, D].  latent_layer: index of the latent layer.  Returns [T, D]."""
    kernels = weights[0::2]
    biases = weights[1::2]
    D = x.shape[1]
    act = (lambda z: np.maximum(z, 0.0)) if activation == "relu" else np.tanh
    buffer = np.zeros(history * D)
    out = np.zeros_like(x, dtype=np.float64)
    for t in range(x.shape[0]):
        h = np.concatenate([x[t], buffer])
        for i in range(latent_layer):
            h = act(h @ kernels[i] + biases[i])
        a = np.tanh(h @ kernels[latent_layer] + biases[latent_layer])
        q = _quantize(a, quantizer, levels)
        h = np.concatenate([q, buffer])
        n = len(kernels)
        for i in range(latent_layer + 1, n):
            h = h @ kernels[i] + biases[i]
            if i != n - 1:
                h = act(h)
        out[t] = h
        if history:
            buffer = np.concatenate([h, buffer[: (history - 1) * D]])
    return out


def _gru(kernel, recurrent, bias, inp, h):
    """Keras GRU(reset_after=True): gates z, r, h along the 3H columns."""
    H = h.shape[0]
    gx = inp @ kernel + bias[0]
    gh = h @ recurrent + bias[1]
    z = 1 / (1 + np.exp(-(gx[:H] + gh[:H])))
    r = 1 / (1 + np.exp(-(gx[H:2 * H] + gh[H:2 * H])))
    n = np.tanh(gx[2 * H:] + r * gh[2 * H:])
    return z * h + (1 - z) * n


def forward_gru(weights, x, history, enc_dense, dec_dense, activation="relu",
                quantizer="none", levels=0):
    """The GRU family from Keras get_weights(): encoder GRU (kernel,
    recurrent kernel, bias [2, 3H]) over [x_t, h_dec, buffer], enc_dense
    Dense layers, the latent, decoder GRU over [q_t, buffer], dec_dense
    Dense layers, the output.  x: [T, D].  Returns [T, D]."""
    w = list(weights)
    enc_gru, w = w[:3], w[3:]
    enc = [(w[2 * i], w[2 * i + 1]) for i in range(enc_dense)]
    w = w[2 * enc_dense:]
    latent, w = (w[0], w[1]), w[2:]
    dec_gru, w = w[:3], w[3:]
    dec = [(w[2 * i], w[2 * i + 1]) for i in range(dec_dense)]
    w = w[2 * dec_dense:]
    out_layer = (w[0], w[1])
    D = x.shape[1]
    act = (lambda z: np.maximum(z, 0.0)) if activation == "relu" else np.tanh
    buffer = np.zeros(history * D)
    h_enc = np.zeros(enc_gru[1].shape[0])
    h_dec = np.zeros(dec_gru[1].shape[0])
    out = np.zeros_like(x, dtype=np.float64)
    for t in range(x.shape[0]):
        h_enc = _gru(*enc_gru, np.concatenate([x[t], h_dec, buffer]), h_enc)
        h = h_enc
        for k, b in enc:
            h = act(h @ k + b)
        a = np.tanh(h @ latent[0] + latent[1])
        q = _quantize(a, quantizer, levels)
        h_dec = _gru(*dec_gru, np.concatenate([q, buffer]), h_dec)
        h = h_dec
        for k, b in dec:
            h = act(h @ k + b)
        y = h @ out_layer[0] + out_layer[1]
        out[t] = y
        if history:
            buffer = np.concatenate([y, buffer[: (history - 1) * D]])
    return out
