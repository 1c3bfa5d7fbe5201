"""The FRAE forward pass in NumPy (float64), from Keras-layout weights:
[kernel [in, out], bias [out]] per layer, in layer order.  A reference for
tests of imported weights; see README "Model semantics"."""
import numpy as np


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
        if quantizer == "binary":
            q = np.where(a >= 0, 1.0, -1.0)
        elif quantizer == "uniform":
            top = levels - 1
            q = np.clip(np.round((a + 1) * 0.5 * top), 0, top) * (2.0 / top) - 1
        else:
            q = a
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
