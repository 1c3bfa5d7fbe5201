"""frae: Feedback Recurrent AutoEncoders, from Python.

A Keras-shaped front to libfrae (README, "Python")::

    import frae
    m = frae.FRAE(frame_dim=80, history=4, latent=16, quantizer="binary")
    history = m.fit(x, epochs=10, batch_size=32, validation_split=0.1)
    y = m.predict(x)
    stream = m.encode(x)          # the .fbs bytes 'frae encode' writes
    m.save("model.safetensors")   # opens in 'frae predict', PyTorch, ...

Arrays are NumPy float32: a C-contiguous float32 input is used in place;
another floating-point array is converted once; anything else is refused
with a clear error.  The GIL is released while frae computes.  One FRAE
object may be shared by any number of threads: its calls run one at a
time (see FRAE); for calls that run at once, each thread loads its own.
fit() trains as 'frae train' does (same order, same windows, same bits for
the same seed and data); Ctrl-C in fit saves the checkpoint (if one was
asked for) and raises KeyboardInterrupt.
"""
import csv
import functools
import math
import os
import sys
import threading
import time

import numpy as np

from . import _frae
from ._frae import FraeError

__all__ = ["FRAE", "load", "features", "FraeError", "History"]
__version__ = _frae.version

_FEEDBACK = {"detached": 0, "full": 1}
_ISA = {"auto": 0, "scalar": 1, "avx2": 2, "avx512": 3}
_SPLIT_SALT = 0x5A17C0DE            # frae train's validation split
_SHUFFLE_SALT = 0x0123456789ABCDEF  # ... and its epochs' shuffles


class History(dict):
    """What fit returns: {"loss": [...], "mae": [...], "val_loss": ...},
    a dict that is also its own .history, as Keras's History object."""

    @property
    def history(self):
        return self


def _cpus():
    return max(1, min(64, os.cpu_count() or 1))


def _check_finite(a, what):
    if not np.isfinite(a).all():
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
        raise ValueError("%s: %s at %s" % (what, a[at], list(at)))


def _as_frames(a, dim, what):
    """One array of frames as float32 [T, D] or [N, T, D]: in place when it
    already is C-contiguous float32, else converted once."""
    if not isinstance(a, np.ndarray):
        raise TypeError("%s: needs a NumPy array (or a list of them), got %s"
                        % (what, type(a).__name__))
    if a.dtype.kind != "f":
        raise TypeError("%s: needs floating-point frames, got dtype %s" % (what, a.dtype))
    if a.ndim not in (2, 3):
        raise ValueError("%s: needs [T, D] or [N, T, D] frames, got %d dimension%s"
                         % (what, a.ndim, "" if a.ndim == 1 else "s"))
    if a.shape[-1] != dim:
        raise ValueError("%s: frame dimension %d does not match the model's %d"
                         % (what, a.shape[-1], dim))
    if a.size == 0:
        raise ValueError("%s: no frames" % what)
    if a.dtype != np.float32 or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=np.float32)
    _check_finite(a, what)
    return a


def _sequences(x, dim, what):
    """x as a list of [T_i, D] float32 sequences (views, no copies, of a
    C-contiguous float32 input), and whether it was one [T, D] array."""
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError("%s: an empty list" % what)
        seqs = []
        for i, a in enumerate(x):
            a = _as_frames(a, dim, "%s[%d]" % (what, i))
            if a.ndim != 2:
                raise ValueError("%s[%d]: each sequence of a list is [T, D]" % (what, i))
            seqs.append(a)
        return seqs, False
    a = _as_frames(x, dim, what)
    if a.ndim == 2:
        return [a], True
    return [a[i] for i in range(a.shape[0])], False


def _pair(seqs, y, dim, what):
    """The targets y as sequences paired with seqs: as many, each as long."""
    tseqs, _ = _sequences(y, dim, what)
    if len(tseqs) != len(seqs):
        raise ValueError("%s: %d target sequences for %d input sequences"
                         % (what, len(tseqs), len(seqs)))
    for i, (a, b) in enumerate(zip(seqs, tseqs)):
        if len(a) != len(b):
            raise ValueError("%s: pair %d has %d input frames and %d target frames"
                             % (what, i, len(a), len(b)))
    return tseqs


def _serialised(method):
    """The method under its object's lock, held for the whole call: the
    models underneath are one batch state each, and a call may replace
    them (a larger batch, fit) or close them.  Re-entrant, so methods call
    each other and fit's callbacks may call the object; a thread waiting
    for it waits with the GIL released, as any Python lock does."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return locked


class FRAE:
    """A Feedback Recurrent AutoEncoder.

    Model options are 'frae train''s (README "Command line"): frame_dim,
    history, enc and dec (widths: a tuple or "512,256"), latent, family
    ("dense" or "gru"), activation, quantizer ("none", "binary",
    "uniform:N"), prior (units; with rate_lambda), prior_ar (the prior's
    within-frame autoregression: on with a prior unless False), seed.
    Training options: learning_rate, clip_norm, feedback ("detached" or
    "full"), window, warmup, decay_steps, lr_floor, rate_lambda, normalize
    (per-band z-scoring from the training data), threads (all CPUs), isa.
    What is
    not given is 'frae train''s default for the family (history 4 and
    layers 512, 256 for dense; history 0 and a 240-unit GRU for gru).

    Threads: every method holds the object's lock while it runs, so calls
    from several threads run one at a time, each with the bits it would
    get alone; close() waits for a running call, and any call after it
    raises FraeError.  fit's callbacks run under the lock: they may call
    the object, but not wait for another thread that does."""

    def __init__(self, frame_dim=80, history=None, latent=16, quantizer="none",
                 enc=None, dec=None, family="dense", activation=None, prior=None,
                 prior_ar=None, seed=1, learning_rate=1e-3, clip_norm=0.0, feedback="detached",
                 window=100, warmup=0, decay_steps=0, lr_floor=0.0, rate_lambda=0.0,
                 normalize=False, threads=None, isa="auto", _model=None):
        self._lock = threading.RLock()
        self._train = self._infer = None
        self._infer_stale = True
        self._shuffled = None  # (training set, epoch order, RNG, data size)
        if _model is not None:  # load()
            self._train = _model
            cfg = _model.config()
            self._gru = cfg["family"] == 1
            self._opts = []
            self._fields = {k: cfg[k] for k in (
                "frame_dim", "latent_dim", "history", "family", "quantizer",
                "quant_levels", "prior_hidden", "prior_ar", "pitch", "pitch_ranged", "activation",
                "seed",
                "feedback", "learning_rate", "clip_norm", "rate_lambda", "lr_warmup",
                "lr_decay_steps", "lr_floor", "normalize", "window", "threads", "isa",
                "targets")}
            self._enc, self._dec = cfg["enc"], cfg["dec"]
            self._normalized = bool(cfg["normalize"])
            return
        if family not in ("dense", "gru"):
            raise ValueError("family: 'dense' or 'gru', got %r" % (family,))
        if feedback not in _FEEDBACK:
            raise ValueError("feedback: 'detached' or 'full', got %r" % (feedback,))
        if isa not in _ISA:
            raise ValueError("isa: one of %s, got %r" % (", ".join(_ISA), isa))
        opts = [("--family", family), ("--frame-dim", frame_dim), ("--latent", latent),
                ("--quantizer", quantizer), ("--seed", seed)]
        if history is not None:  # else the family's: 4 dense, 0 GRU
            opts.append(("--history", history))
        for flag, v in (("--enc", enc), ("--dec", dec)):
            if v is not None:
                opts.append((flag, v if isinstance(v, str) else ",".join(str(int(w)) for w in v)))
        if activation is not None:
            opts.append(("--activation", activation))
        if prior is None and rate_lambda:
            prior = 16  # as 'frae train --rate-lambda': a rate needs a prior
        if prior:
            opts.append(("--prior", prior))
            # as 'frae train': the frame's codes coded in order, unless off
            opts.append(("--prior-ar", "off" if prior_ar is False else "on"))
        self._gru = family == "gru"
        self._opts = [(f, str(v)) for f, v in opts]
        self._fields = {"learning_rate": float(learning_rate), "clip_norm": float(clip_norm),
                        "feedback": _FEEDBACK[feedback], "window": int(window),
                        "lr_warmup": int(warmup), "lr_decay_steps": int(decay_steps),
                        "lr_floor": float(lr_floor), "rate_lambda": float(rate_lambda),
                        "normalize": int(bool(normalize)),
                        "threads": int(threads) if threads else _cpus(), "isa": _ISA[isa]}
        cfg = _frae.make_config(self._gru, self._opts, self._fields)  # checks it
        self._enc, self._dec = cfg["enc"], cfg["dec"]
        self._fields.update(frame_dim=cfg["frame_dim"])
        self._normalized = False

    # ---- models underneath -------------------------------------------------

    def _config(self):
        m = self._train or self._infer
        if m is None:
            return _frae.make_config(self._gru, self._opts, self._fields)
        return m.config()

    @property
    @_serialised
    def frame_dim(self):
        return self._config()["frame_dim"]

    def _check_open(self):
        if self._fields is None:
            raise FraeError("the model is closed")

    def _new_model(self, batch, window, training):
        """A model of this one's shape and settings with other capacity
        (its own initial weights: callers copy theirs in)."""
        fields = dict(self._fields, batch=int(batch), window=int(window),
                      training=int(training))
        opts = self._opts or [("--family", "gru" if self._gru else "dense"),
                              ("--enc", ",".join(map(str, self._enc))),
                              ("--dec", ",".join(map(str, self._dec)))]
        return _frae.create(self._gru, opts, fields)

    @staticmethod
    def _copy_weights(src, dst):
        p = np.empty(src.info()["params"], np.float32)
        src.params(p, False)
        dst.params(p, True)
        if src.config()["normalize"]:
            d = src.config()["frame_dim"]
            mean, std = np.empty(d, np.float32), np.empty(d, np.float32)
            src.normalization(mean, std, False)
            dst.normalization(mean, std, True)

    def _inference(self, batch):
        """A model for predict/evaluate/encode with room for batch
        sequences, holding the current weights."""
        self._check_open()
        m = self._infer
        if m is None or m.config()["batch"] < batch:
            new = self._new_model(batch, 1, False)
            src = self._train or m
            if src is not None:
                self._copy_weights(src, new)
            if m is not None:
                m.close()
            self._infer = m = new
        elif self._infer_stale and self._train is not None:
            self._copy_weights(self._train, m)
        self._infer_stale = False
        return m

    @_serialised
    def close(self):
        """Frees the models; any later call raises FraeError."""
        for m in (self._train, self._infer):
            if m is not None:
                m.close()
        self._train = self._infer = None
        self._fields = None

    # ---- training ------------------------------------------------------------

    @_serialised
    def fit(self, x, y=None, epochs=1, batch_size=32, validation_data=None,
            validation_split=0.0, shuffle=True, patience=0, save_best=None,
            checkpoint=None, csv_log=None, verbose="auto", callbacks=()):
        """Trains as 'frae train' does; returns the History (a dict of
        per-epoch loss, mae, and with validation val_loss, val_mae; with a
        prior rate and val_rate).

        x: [N, T, D] or [T, D] frames, or a list of [T_i, D] sequences of
        different lengths (each batch is zero-padded, the padding masked).
        y: targets paired with x (as 'frae train --targets': the same
        shapes; e.g. clean frames for noisy x, a denoising codec: the loss
        compares the output with y, the encoder sees x, and feedback is the
        model's own output); None (or x) for an autoencoder.
        validation_split: this seeded fraction of the sequences is held
        out (as --val-split), targets alike; validation_data: other
        sequences, (x_val, y_val) with targets.
        patience: stop after this many epochs without a better monitored
        loss (validation loss if any); save_best: path of the best model;
        checkpoint: path written (with Adam state) after every epoch and on
        Ctrl-C; csv_log: per-epoch CSV, 'frae train --log-csv''s columns;
        callbacks: called after every epoch as f(epoch, logs) (or
        f.on_epoch_end(epoch, logs), as Keras), logs holding the epoch's
        figures; one that returns True stops training.  The shuffling
        carries on from one fit to the next on the same training set, so
        ten fits of one epoch train as one fit of ten."""
        self._check_open()
        targets = y is not None and y is not x
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError("epochs: a positive integer, got %r" % (epochs,))
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("batch_size: a positive integer, got %r" % (batch_size,))
        if not 0.0 <= validation_split < 1.0:
            raise ValueError("validation_split: in [0, 1), got %r" % (validation_split,))
        if validation_split and validation_data is not None:
            raise ValueError("use validation_split or validation_data, not both")
        D = self.frame_dim
        seqs, _ = _sequences(x, D, "x")
        n_all = len(seqs)
        tseqs = _pair(seqs, y, D, "y") if targets else None
        self._fields["targets"] = int(targets)  # a change: a new model, weights kept
        cfg = self._config()
        seed = cfg["seed"]
        perm = np.arange(n_all, dtype=np.int32)
        n_split = int(validation_split * n_all + 0.5)
        if validation_split and (n_split < 1 or n_split >= n_all):
            raise ValueError("validation_split %g of %d sequences leaves an empty "
                             "training or validation set" % (validation_split, n_all))
        if n_split:
            _frae.shuffle(perm, seed ^ _SPLIT_SALT)
            perm[:n_all - n_split].sort()
        n_train = n_all - n_split
        vtseqs = tseqs
        if validation_data is not None:
            vx, vy = validation_data if isinstance(validation_data, tuple) and \
                len(validation_data) == 2 and targets else (validation_data, None)
            vseqs, _ = _sequences(vx, D, "validation_data")
            if targets and vy is None:
                raise ValueError("validation_data: with targets, give (x_val, y_val)")
            vtseqs = _pair(vseqs, vy, D, "validation_data y") if targets else None
            val = list(range(len(vseqs)))
        else:
            vseqs, val = seqs, [int(i) for i in perm[n_train:]]
        # the epochs' order and RNG carry on across fits of the same set
        train_ids = perm[:n_train]
        if self._shuffled is not None and np.array_equal(self._shuffled[0], train_ids) \
                and len(seqs) == self._shuffled[3]:
            _, order, rng, _ = self._shuffled
        else:
            order, rng = perm[:n_train].copy(), seed ^ _SHUFFLE_SALT
        # frae train's capacity: a batch no larger than a set, a window no
        # longer than the longest sequence (the same model, the same bits)
        longest = max(len(s) for s in seqs + (vseqs if vseqs is not seqs else []))
        B = min(batch_size, max(n_train, len(val)))
        W = min(self._fields["window"], longest)
        m = self._train
        if m is None or m.config()["batch"] != B or m.config()["window"] != W or \
                m.config()["targets"] != int(targets):
            old = m
            m = self._new_model(B, W, True)
            if old is not None or self._infer is not None:
                self._copy_weights(old or self._infer, m)
            if old is not None:
                old.close()
            self._train = m
        self._infer_stale = True
        if cfg["normalize"] and not self._normalized:
            mean, std = _frae.band_stats([seqs[i] for i in order], D)
            m.normalization(np.frombuffer(mean, np.float32), np.frombuffer(std, np.float32),
                            True)
            self._normalized = True
        lam = m.config()["rate_lambda"]
        prior = m.config()["prior_hidden"] > 0
        bar = (sys.stdout.isatty() or "ipykernel" in sys.modules) if verbose == "auto" \
            else bool(verbose) and verbose != 2
        lines = bool(verbose)
        win = np.zeros(B * W * D, np.float32)
        twin = np.zeros(B * W * D, np.float32) if targets else None
        valid = np.zeros(B, np.int32)
        history = History(loss=[], mae=[])
        if val:
            history.update(val_loss=[], val_mae=[])
        if prior:
            history["rate"] = []
            if val:
                history["val_rate"] = []
        best, bad_epochs = math.inf, 0
        csv_file = None
        if csv_log:
            fresh = not os.path.exists(csv_log) or os.path.getsize(csv_log) == 0
            csv_file = open(csv_log, "a", newline="")
            if fresh:
                csv_file.write("epoch,loss,mae,val_loss,val_mae,frames_per_s,seconds%s\n"
                               % (",rate,val_rate" if prior else ""))
        try:
            for epoch in range(1, epochs + 1):
                if shuffle:
                    rng = _frae.shuffle(order, rng)
                    self._shuffled = (train_ids, order, rng, len(seqs))
                t0 = time.monotonic()
                sums = np.zeros(5)
                n_batches = (len(order) + B - 1) // B
                for k in range(n_batches):
                    ids = order[k * B:(k + 1) * B]
                    s, bad = self._run_batch(m, [seqs[i] for i in ids], win, valid, W, True,
                                             [tseqs[i] for i in ids] if targets else None,
                                             twin)
                    # new weights: a callback's predict may have copied the old
                    self._infer_stale = True
                    if bad:
                        raise FraeError("training diverged at epoch %d, batch %d (loss or "
                                        "gradient is not finite); try a lower "
                                        "learning_rate or clip_norm" % (epoch, k + 1))
                    sums += s
                    if bar:
                        _progress(epoch, epochs, k + 1, n_batches, sums, time.monotonic() - t0)
                secs = time.monotonic() - t0
                rate = sums[2] / sums[4] if sums[4] else 0.0
                loss = sums[0] / sums[3] + lam * rate
                history["loss"].append(loss)
                history["mae"].append(sums[1] / sums[3])
                if prior:
                    history["rate"].append(rate)
                vloss = vmae = vrate = float("nan")
                if val:
                    v = self._evaluate_seqs(m, [vseqs[i] for i in val], B, win, valid, W,
                                            [vtseqs[i] for i in val] if targets else None,
                                            twin)
                    vrate = v[2] / v[4] if v[4] else 0.0
                    vloss, vmae = v[0] / v[3] + lam * vrate, v[1] / v[3]
                    history["val_loss"].append(vloss)
                    history["val_mae"].append(vmae)
                    if prior:
                        history["val_rate"].append(vrate)
                if lines:
                    line = "epoch %d/%d  loss %.6f  mae %.6f" % (epoch, epochs, loss,
                                                                 history["mae"][-1])
                    if prior:
                        line += "  rate %.3f" % rate
                    if val:
                        line += "  val_loss %.6f  val_mae %.6f" % (vloss, vmae)
                    print(("\r\033[K" if bar else "") + line
                          + "  %.0f frames/s  %.2f s" % (sums[4] / secs, secs), flush=True)
                if csv_file:
                    row = "%d,%.9g,%.9g,%.9g,%.9g,%.1f,%.3f" % (
                        epoch, loss, history["mae"][-1], vloss, vmae, sums[4] / secs, secs)
                    csv_file.write(row + (",%.9g,%.9g" % (rate, vrate) if prior else "") + "\n")
                    csv_file.flush()
                monitored = vloss if val else loss
                stop = False
                if monitored < best:
                    best, bad_epochs = monitored, 0
                    if save_best:
                        m.save(save_best, False, {})
                elif patience:
                    bad_epochs += 1
                    stop = bad_epochs >= patience
                if checkpoint:
                    m.save(checkpoint, True, {})
                logs = {k: v[-1] for k, v in history.items()}
                for cb in callbacks:
                    f = getattr(cb, "on_epoch_end", cb)
                    stop |= f(epoch - 1, logs) is True
                if stop:
                    if lines and patience and bad_epochs >= patience:
                        print("early stop: no better %s for %d epochs (best %.6f)"
                              % ("val_loss" if val else "loss", patience, best))
                    break
        except KeyboardInterrupt:
            if bar:
                print()
            if checkpoint:
                m.save(checkpoint, True, {})
            print("frae: interrupted%s" % ("; checkpoint saved to %s" % checkpoint
                                           if checkpoint else ""), file=sys.stderr)
            raise
        finally:
            if csv_file:
                csv_file.close()
        return history

    @staticmethod
    def _run_batch(m, batch, win, valid, W, train, tbatch=None, twin=None):
        """frae train's batch: windows of W frames over the longest sequence,
        shorter ones zero-padded and masked (tbatch: their targets).
        Returns the sums (sse, sae, rate bits, values, frames) and whether a
        loss went non-finite."""
        nb = len(batch)
        D = batch[0].shape[1]
        longest = max(len(s) for s in batch)
        sums = np.zeros(5)
        bad = False
        m.reset()
        for w0 in range(0, longest, W):
            nt = min(W, longest - w0)
            x = win[:nb * nt * D].reshape(nb, nt, D)
            tx = None if tbatch is None else twin[:nb * nt * D].reshape(nb, nt, D)
            for b, s in enumerate(batch):
                have = max(0, min(nt, len(s) - w0))
                x[b, :have] = s[w0:w0 + have]
                x[b, have:] = 0
                if tx is not None:
                    tx[b, :have] = tbatch[b][w0:w0 + have]
                    tx[b, have:] = 0
                valid[b] = have
            sse, sae, bits, values, frames, gnorm = m.run(x, nb, nt, valid[:nb], train, tx)
            bad |= not math.isfinite(sse) or not math.isfinite(gnorm)
            sums += (sse, sae, bits, values, frames)
        return sums, bad

    def _evaluate_seqs(self, m, seqs, B, win, valid, W, tseqs=None, twin=None):
        sums = np.zeros(5)
        for i in range(0, len(seqs), B):
            s, _ = self._run_batch(m, seqs[i:i + B], win, valid, W, False,
                                   None if tseqs is None else tseqs[i:i + B], twin)
            sums += s
        return sums

    # ---- inference -------------------------------------------------------------

    @_serialised
    def predict(self, x, batch_size=32, out=None):
        """The model's reconstruction of x ([T, D], [N, T, D] or a list of
        sequences), the same shape; out (a C-contiguous float32 array of
        x's shape) receives it in place."""
        self._check_open()
        D = self.frame_dim
        seqs, _ = _sequences(x, D, "x")
        if isinstance(x, (list, tuple)):
            if out is not None:
                raise ValueError("out: not for a list of sequences")
            return [self.predict(s, batch_size) for s in seqs]
        shape = (len(seqs), len(seqs[0]), D) if np.ndim(x) == 3 else (len(seqs[0]), D)
        if out is None:
            out = np.empty(shape, np.float32)
        elif not (isinstance(out, np.ndarray) and out.dtype == np.float32
                  and out.flags.c_contiguous and out.flags.writeable
                  and out.shape == shape):
            raise ValueError("out: needs a writable C-contiguous float32 array of shape %s"
                             % (shape,))
        B = max(1, min(batch_size, len(seqs)))
        m = self._inference(B)
        n, t = len(seqs), len(seqs[0])
        x3 = seqs[0].reshape(1, t, D) if n == 1 else _as_frames(x, D, "x")
        y3 = out.reshape(n, t, D)
        for i in range(0, n, B):
            nb = min(B, n - i)
            m.forward(x3[i:i + nb], y3[i:i + nb], nb, t)
        return out

    @_serialised
    def evaluate(self, x, batch_size=32):
        """The loss on x as fit reports it (mean squared error, + rate_lambda
        x rate with a prior)."""
        self._check_open()
        D = self.frame_dim
        seqs, _ = _sequences(x, D, "x")
        B = max(1, min(batch_size, len(seqs)))
        m = self._inference(B)
        W = max(len(s) for s in seqs)
        win, valid = np.zeros(B * W * D, np.float32), np.zeros(B, np.int32)
        s = self._evaluate_seqs(m, seqs, B, win, valid, W)
        rate = s[2] / s[4] if s[4] else 0.0
        return float(s[0] / s[3] + m.config()["rate_lambda"] * rate)

    @_serialised
    def encode(self, x, search=0, search_lambda=None, silent=None, dtx=None):
        """x ([T, D] or [N, T, D]) as the bytes of a .fbs stream, exactly
        what 'frae encode' writes.  search (0..16 passes) and search_lambda
        (the rate's weight; None: the model's rate_lambda) as 'frae encode
        --search N --search-lambda X': the encoder's analysis-by-synthesis
        search of each frame's codes, the same format.  silent (a model
        with a prior): booleans, one per frame ([T] or [N, T]), the frames
        to send as silence (DTX: a flag each, the decoder repeating its
        last frame); or dtx (a model loaded from a checkpoint trained on
        audio): True, or a level in dB (-60), picks them by level as
        'frae encode --dtx' (--dtx-level) does, the same bytes."""
        self._check_open()
        if isinstance(x, (list, tuple)):
            raise TypeError("encode: needs one array ([T, D] or [N, T, D])")
        if isinstance(search, bool) or not isinstance(search, int) or not 0 <= search <= 16:
            raise ValueError("encode: search must be an int of 0..16 passes, got %r" % (search,))
        if search_lambda is not None and not (np.isfinite(search_lambda) and search_lambda >= 0):
            raise ValueError("encode: search_lambda must be a finite number >= 0, got %r"
                             % (search_lambda,))
        cfg = self._config()
        width = cfg["frame_dim"] + 2 * cfg["pitch"]
        a = _as_frames(x, width, "x")
        n, t = (1, a.shape[0]) if a.ndim == 2 else a.shape[:2]
        mask = None
        if dtx is not None and dtx is not False:
            if silent is not None:
                raise ValueError("encode: give silent or dtx, not both")
            feats = getattr(self, "_features", None)
            if feats is None:
                raise FraeError("encode: dtx: the model was not loaded from a checkpoint "
                                "trained on audio features, so its frames have no level to "
                                "gate on (give silent=)")
            level = -60.0 if dtx is True else float(dtx)
            silent = np.frombuffer(_frae.dtx_mask(
                np.ascontiguousarray(a, np.float32), n, t, width,
                *[feats[k] for k in _FEATURE_KEYS], level), np.int32).reshape(
                    a.shape[:-1]).astype(bool)
        if silent is not None:
            mask = np.asarray(silent)
            if mask.dtype != np.bool_ or mask.shape != a.shape[:-1]:
                raise ValueError("encode: silent must be booleans of shape %s (one per "
                                 "frame), got %s of shape %s"
                                 % (a.shape[:-1], mask.dtype, mask.shape))
            mask = np.ascontiguousarray(mask, dtype=np.int32)
        return self._inference(1).encode(a, n, t, a.ndim == 2, search,
                                         -1.0 if search_lambda is None else float(search_lambda),
                                         mask)

    @_serialised
    def decode(self, stream):
        """The frames of a .fbs stream ([T, D] or [N, T, D], as encoded)."""
        self._check_open()
        if not isinstance(stream, (bytes, bytearray, memoryview)):
            raise TypeError("decode: needs bytes, got %s" % type(stream).__name__)
        m = self._inference(1)
        n, t, width, two_d = m.stream_info(stream)
        y = np.empty((n, t, width), np.float32)
        m.decode(stream, y)
        return y[0] if two_d else y

    # ---- weights and files -----------------------------------------------------

    def _any(self):
        self._check_open()
        return self._train or self._inference(1)

    @_serialised
    def get_weights(self):
        """The weights as NumPy arrays in Keras get_weights() order: per
        dense layer kernel [in, out] and bias [out]; per GRU kernel
        [in, 3H], recurrent_kernel [H, 3H] and bias [2, 3H] (gates z, r, h)."""
        m = self._any()
        flat = np.empty(m.info()["params"], np.float32)
        m.exchange(flat, False)
        out, at, tensors = [], 0, m.tensors()
        k = 0
        while k < len(tensors):
            name, rows, cols, gru = tensors[k]
            n = rows * (cols or 1)
            if gru and name.endswith("bias_ih"):  # with bias_hh: Keras's [2, 3H]
                out.append(flat[at:at + 2 * n].reshape(2, rows).copy())
                at += 2 * n
                k += 2
                continue
            out.append(flat[at:at + n].reshape((rows, cols) if cols else (rows,)).copy())
            at += n
            k += 1
        return out

    @_serialised
    def set_weights(self, weights):
        """Sets the weights from get_weights()' list (shapes checked)."""
        m = self._any()
        want = [w.shape for w in self.get_weights()]
        if not isinstance(weights, (list, tuple)) or len(weights) != len(want):
            raise ValueError("set_weights: needs a list of %d arrays" % len(want))
        parts = []
        for i, (w, shape) in enumerate(zip(weights, want)):
            w = np.asarray(w)
            if w.dtype.kind != "f" or w.shape != shape:
                raise ValueError("set_weights: array %d is %s %s; the model's is "
                                 "float %s" % (i, w.dtype, w.shape, shape))
            parts.append(np.ascontiguousarray(w, np.float32).reshape(-1))
        m.exchange(np.concatenate(parts), True)
        if m is self._train:
            self._infer_stale = True
        elif self._train is not None:
            self._copy_weights(m, self._train)

    @_serialised
    def save(self, path):
        """A checkpoint (safetensors, README "Checkpoint format"), with the
        Adam state when the model has trained; atomic."""
        m = self._any()
        m.save(os.fspath(path), m is self._train, {})

    @_serialised
    def summary(self):
        m = self._any()
        info = m.info()
        cfg = m.config()
        return ("FRAE (%s): %d parameters, %.0f bits/frame, frame_dim %d, history %d, "
                "enc %s, latent %d, dec %s, kernels %s"
                % ("gru" if cfg["family"] else "dense", info["params"],
                   info["bits_per_frame"], cfg["frame_dim"], cfg["history"],
                   list(cfg["enc"]), cfg["latent_dim"], list(cfg["dec"]), info["isa"]))

    def __repr__(self):
        # never waits: a debugger's repr during another thread's fit
        if not self._lock.acquire(blocking=False):
            return "<frae.FRAE, busy in another thread>"
        try:
            return "<frae.FRAE closed>" if self._fields is None else "<%s>" % self.summary()
        finally:
            self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _progress(epoch, epochs, done, total, sums, elapsed):
    width = 24
    filled = width * done // total
    bar = "=" * filled + (">" if filled < width else "") + "." * max(0, width - filled - 1)
    loss = sums[0] / sums[3] if sums[3] else 0.0
    eta = elapsed / done * (total - done)
    sys.stdout.write("\repoch %d/%d [%s] %d/%d  loss %.6f  %.0f frames/s  ETA %.0fs\033[K"
                     % (epoch, epochs, bar, done, total, loss,
                        sums[4] / elapsed if elapsed > 0 else 0, eta))
    sys.stdout.flush()


def load(path, threads=None, isa="auto"):
    """A model from a checkpoint (frae's, or one 'frae import' made); with
    its Adam state, fit() continues it."""
    if isa not in _ISA:
        raise ValueError("isa: one of %s, got %r" % (", ".join(_ISA), isa))
    path = os.fspath(path)
    weights = _frae.meta(path, "frae.weights")
    training = weights != "bf16"
    m = _frae.load(path, int(training), 0, 0, int(threads) if threads else _cpus(),
                   _ISA[isa])
    model = FRAE(_model=m)
    # the audio features it was trained on (checkpoint metadata), for dtx
    vals = [_frae.meta(path, "features." + k) for k in _FEATURE_KEYS]
    if all(v is not None for v in vals):
        model._features = {k: (int(float(v)) if k in _FEATURE_INTS else float(v))
                           for k, v in zip(_FEATURE_KEYS, vals)}
    return model


# the checkpoint's features.* keys, in _frae.dtx_mask's order
_FEATURE_KEYS = ("sample_rate", "n_mels", "hop", "win", "n_fft", "fmin", "fmax", "floor",
                 "offset", "scale")
_FEATURE_INTS = ("sample_rate", "n_mels", "hop", "win", "n_fft")


def features(path, sample_rate=16000, n_mels=80, hop=160, win=400, n_fft=512,
             fmin=0.0, fmax=8000.0, resample=True):
    """The log-mel features of an audio file, [frames, n_mels] float32:
    exactly 'frae features' (README "Speech")."""
    raw, frames, mels = _frae.features(os.fspath(path), int(sample_rate), int(n_mels),
                                       int(hop), int(win), int(n_fft), float(fmin),
                                       float(fmax), bool(resample))
    return np.frombuffer(raw, np.float32).reshape(frames, mels).copy()
