"""frae: Feedback Recurrent AutoEncoders, from Python.

A Keras-shaped front to libfrae (docs/python.md)::

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
fit() is libfrae's training run, the loop 'frae train' runs (same order,
same windows, same bits for the same seed and data; crops, resume and
replicas too); Ctrl-C in fit saves the checkpoint (if one was asked for)
and raises KeyboardInterrupt.  The options are libfrae's option table, the
one 'frae train' parses: each keyword is a row of it.
"""
import contextlib
import errno
import functools
import math
import os
import re
import stat
import struct
import sys
import threading
import time

import numpy as np

from . import _frae
from ._frae import FraeError

__all__ = ["codec_options", "FRAE", "load", "features", "vocode", "write_wav", "recipes", "FraeError",
           "History", "Codec", "models", "models_dirs"]
__version__ = _frae.version

_ISA = {"auto": 0, "scalar": 1, "avx2": 2, "avx512": 3, "neon": 4}
# libfrae's option table: keyword -> (name, keyword, type, flags)
_OPTIONS = {row[1]: row for row in _frae.options()}
_FIT = 2  # FRAE_OPTION_FIT: a setting of fit rather than of the model


class History(dict):
    """What fit returns: {"loss": [...], "mae": [...], "val_loss": ...},
    a dict that is also its own .history, as Keras's History object."""

    @property
    def history(self):
        return self


def _cpus():
    """The library's default thread count: the CPUs this process may run
    on (its affinity and its cgroup's CPU quota), not the machine's."""
    return _frae.cpus_available()


def _option_text(keyword, value):
    """A keyword's value as the option table parses it (None for a flag
    that is set)."""
    _, _, kind, _ = _OPTIONS[keyword]
    if kind == "flag":
        return None
    if isinstance(value, bool):
        return ("on" if value else "off") if kind in ("choice", "text") else str(int(value))
    if kind == "widths" and not isinstance(value, str):
        return ",".join(str(int(w)) for w in value) or "none"
    if kind == "float" and isinstance(value, (int, float, np.floating, np.integer)):
        return repr(float(value))
    if kind == "int" and isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(os.fspath(value) if isinstance(value, os.PathLike) else value)


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

    The keywords are libfrae's option table, the options of 'frae train'
    (docs/command-line.md) spelt as Python names: model options frame_dim,
    history, enc and dec (widths: a tuple or "512,256"), latent, family
    ("dense" or "gru"), activation, quantizer ("none", "binary",
    "uniform:N"), prior (units; with rate_lambda), prior_ar (the prior's
    within-frame autoregression: on with a prior unless False), lookahead
    (GRU: the encoder also sees the next N frames), seed;
    training options learning_rate, clip_norm, feedback ("detached" or
    "full"), window, warmup, decay_steps, lr_floor, rate_lambda, erasure
    and erasure_frames (erasure training, GRU), level_loss (audio features:
    the decoded envelope keeps the input's power), emphasis,
    emphasis_from and emphasis_to (values from..to-1 of each frame weigh
    emphasis in the squared error), normalize
    (per-band z-scoring from the training data), threads (all CPUs), isa.
    What is not given is 'frae train''s default (for the family: history 4
    and layers 512, 256 for dense; history 0 and a 240-unit GRU for gru).
    fit takes the run's settings (batch_size, validation_split, ...).

    Threads: every method holds the object's lock while it runs, so calls
    from several threads run one at a time, each with the bits it would
    get alone; close() waits for a running call, and any call after it
    raises FraeError.  fit's callbacks run under the lock: they may call
    the object, but not wait for another thread that does."""

    # the keywords that may also come positionally, in the order they
    # always had
    _POSITIONAL = ("frame_dim", "history", "latent", "quantizer", "enc", "dec", "family",
                   "activation", "prior", "prior_ar", "seed", "learning_rate", "clip_norm",
                   "feedback", "window", "warmup", "decay_steps", "lr_floor", "rate_lambda",
                   "normalize", "threads", "isa")

    def __init__(self, *args, _model=None, **options):
        if len(args) > len(self._POSITIONAL):
            raise TypeError("FRAE() takes at most %d positional arguments"
                            % len(self._POSITIONAL))
        for k, v in zip(self._POSITIONAL, args):
            if k in options:
                raise TypeError("FRAE() got multiple values for argument %r" % k)
            options[k] = v
        self._lock = threading.RLock()
        self._train = self._infer = None
        self._infer_stale = True
        self._run = None  # the last fit's run, which the next one continues
        if _model is not None:  # load()
            self._train = _model
            self._cfg = _model.config()
            self._threads_given = True
            self._normalized = bool(self._cfg["normalize"])
            self._recipe = None
            return
        text = {}
        for k, v in options.items():
            if k not in _OPTIONS:
                raise TypeError("FRAE() got an unexpected keyword argument %r" % k)
            if _OPTIONS[k][3] & _FIT:
                raise TypeError("FRAE(): %s is an argument of fit" % k)
            if v is None or (_OPTIONS[k][2] == "flag" and not v) or (k == "threads" and not v):
                continue  # not given: the table's default (threads: all CPUs)
            text[k] = _option_text(k, v)
        self._threads_given = "threads" in text
        # a recipe: its model options come through make_config (those
        # given win); fit takes its run's (batch_size, crop) unless given
        self._recipe = text.get("recipe") if text.get("recipe") != "none" else None
        if not self._threads_given:
            text["threads"] = str(_cpus())
        self._cfg = _frae.make_config(text)  # checks it
        self._normalized = False

    # ---- models underneath -------------------------------------------------

    def _config(self):
        m = self._train or self._infer
        return self._cfg if m is None else m.config()

    @property
    @_serialised
    def frame_dim(self):
        return self._config()["frame_dim"]

    @property
    @_serialised
    def latency(self):
        """A speech codec's latency in ms (libfrae's frae_speech_latency):
        sample n of the decoded audio is out once the input reaches n +
        this, real-time packets aside, with the decoder's default polish
        (22.5 ms of it; polish=0 takes that off); a look-ahead encoder adds
        a frame each (one, if it stops at packets: frae_lookahead_delay).  None
        for a model not loaded from a checkpoint trained on audio
        features."""
        f = getattr(self, "_features", None)
        if f is None:
            return None
        return 1000.0 * _frae.speech_latency(
            f["sample_rate"], f["n_mels"], f["hop"], f["win"], f["n_fft"], f["fmin"],
            f["fmax"], _frae.lookahead_delay(self._config())) / f["sample_rate"]

    def _check_open(self):
        if self._cfg is None:
            raise FraeError("the model is closed")

    def _new_model(self, batch, window, training):
        """A model of this one's shape and settings with other capacity
        (its own initial weights: callers copy theirs in)."""
        return _frae.create(dict(self._cfg, batch=int(batch), window=int(window),
                                 training=int(training)))

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
        self._train = self._infer = self._run = None
        self._cfg = None

    # ---- training ------------------------------------------------------------

    @_serialised
    def fit(self, x, y=None, epochs=1, batch_size=None, validation_data=None,
            validation_split=None, shuffle=True, patience=None, save_best=None,
            checkpoint=None, csv_log=None, verbose="auto", callbacks=(), crop=None,
            resume=None, replicas=None):
        """Trains as 'frae train' does, through the same loop (libfrae's
        run); returns the History (a dict of per-epoch loss, mae, and with
        validation val_loss, val_mae; with a prior rate and val_rate).

        x: [N, T, D] or [T, D] frames, or a list of [T_i, D] sequences of
        different lengths (each batch is zero-padded, the padding masked).
        y: targets paired with x (as 'frae train --targets': the same
        shapes; e.g. clean frames for noisy x, a denoising codec: the loss
        compares the output with y, the encoder sees x, and feedback is the
        model's own output); None (or x) for an autoencoder.
        epochs: epochs this call trains.  batch_size: sequences per step
        (32).  validation_split: this seeded fraction of the sequences is
        held out (as --val-split), targets alike; validation_data: other
        sequences, (x_val, y_val) with targets.
        patience: stop after this many epochs without a better monitored
        loss (validation loss if any); save_best: path of the best model;
        checkpoint: path written (with Adam state and where training
        stands) after every epoch and on Ctrl-C; csv_log: per-epoch CSV,
        'frae train --log-csv''s columns; crop: train on crops of this many
        frames (as --crop); replicas: data-parallel threads (as --replicas,
        the same bits); resume: a checkpoint to continue exactly where it
        stands, for `epochs` more (the model and its settings come from it);
        callbacks: called after every epoch as f(epoch, logs) (or
        f.on_epoch_end(epoch, logs), as Keras), logs holding the epoch's
        figures; one that returns True stops training.  A fit continues the
        last one's epochs (order, shuffling, crops) when it trains on the
        same data with the same settings, so ten fits of one epoch train as
        one fit of ten."""
        self._check_open()
        targets = y is not None and y is not x
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError("epochs: a positive integer, got %r" % (epochs,))
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError("batch_size: a positive integer, got %r" % (batch_size,))
        if validation_split is not None and not 0.0 <= validation_split < 1.0:
            raise ValueError("validation_split: in [0, 1), got %r" % (validation_split,))
        if validation_split and validation_data is not None:
            raise ValueError("use validation_split or validation_data, not both")
        D = int(_frae.meta(os.fspath(resume), "frae.frame_dim") or 0) if resume \
            else self.frame_dim
        seqs, _ = _sequences(x, D, "x")
        n_all = len(seqs)
        tseqs = _pair(seqs, y, D, "y") if targets else None
        if validation_split:
            n_split = int(validation_split * n_all + 0.5)
            if n_split < 1 or n_split >= n_all:
                raise ValueError("validation_split %g of %d sequences leaves an empty "
                                 "training or validation set" % (validation_split, n_all))
        vseqs = vtseqs = None
        if validation_data is not None:
            vx, vy = validation_data if isinstance(validation_data, tuple) and \
                len(validation_data) == 2 and targets else (validation_data, None)
            vseqs, _ = _sequences(vx, D, "validation_data")
            if targets and vy is None:
                raise ValueError("validation_data: with targets, give (x_val, y_val)")
            vtseqs = _pair(vseqs, vy, D, "validation_data y") if targets else None
        recipe = recipes()[self._recipe][1] if self._recipe and resume is None else {}
        if batch_size is None and "batch_size" in recipe:
            batch_size = int(recipe["batch_size"])
        if crop is None and "crop" in recipe:
            crop = int(recipe["crop"])
        if batch_size is None and resume is None:
            batch_size = 32
        given = dict(batch_size=batch_size, validation_split=validation_split,
                     patience=patience, save_best=save_best, checkpoint=checkpoint,
                     csv_log=csv_log, crop=crop, resume=resume, replicas=replicas)
        settings = {k: _option_text(k, v) for k, v in given.items() if v is not None}
        settings.update(more_epochs=epochs, shuffle=bool(shuffle))
        if self._recipe:  # recorded in the checkpoints (train.recipe)
            settings["recipe"] = self._recipe
        cfg = dict(self._cfg, targets=int(targets))
        if replicas and replicas > 1 and not self._threads_given:
            cfg["threads"] = max(1, _cpus() // replicas)  # the CPUs shared out
        run = _frae.Run(cfg, settings)
        if resume is None and self._run is not None:
            run.continue_from(self._run)
        elif resume is None and (self._train or self._infer) is not None:
            run.start_from(self._train or self._infer, self._normalized)
        bar = (sys.stdout.isatty() or "ipykernel" in sys.modules) if verbose == "auto" \
            else bool(verbose) and verbose != 2
        lines = bool(verbose)
        history = History(loss=[], mae=[])
        done = [0]  # epochs of this fit

        def on_epoch(log):
            done[0] += 1
            if log["model"] is not None:  # callbacks see the weights trained
                self._train = log["model"]
            self._infer_stale = True
            for k in ("loss", "mae") + (("val_loss", "val_mae") if log["has_val"] else ()):
                history.setdefault(k, []).append(log[k])
            if log["prior"]:
                history.setdefault("rate", []).append(log["rate"])
                if log["has_val"]:
                    history.setdefault("val_rate", []).append(log["val_rate"])
            if lines:
                line = "epoch %d/%d  loss %.6f  mae %.6f" % (done[0], epochs, log["loss"],
                                                             log["mae"])
                if log["prior"]:
                    line += "  rate %.3f" % log["rate"]
                if log["has_val"]:
                    line += "  val_loss %.6f  val_mae %.6f" % (log["val_loss"], log["val_mae"])
                print(("\r\033[K" if bar else "") + line + "  %.0f frames/s  %.2f s"
                      % (log["frames_per_s"], log["seconds"]), flush=True)
            logs = {k: v[-1] for k, v in history.items()}
            stop = False
            for cb in callbacks:
                f = getattr(cb, "on_epoch_end", cb)
                stop |= f(done[0] - 1, logs) is True
            if log["early_stop"] and lines:
                print("early stop: no better %s for %d epochs (best %.6f)"
                      % ("val_loss" if log["has_val"] else "loss", patience, log["best"]))
            return stop

        def on_batch(epoch, total, k, n, loss, frames, seconds):
            _progress(done[0] + 1, epochs, k, n, loss, frames, seconds)

        try:
            run.train(seqs, tseqs, vseqs, vtseqs, D, on_epoch, on_batch if bar else None)
        except KeyboardInterrupt:
            if bar:
                print()
            print("frae: interrupted%s" % ("; checkpoint saved to %s" % checkpoint
                                           if checkpoint else ""), file=sys.stderr)
            raise
        finally:
            m = run.take_model()
            if m is not None:  # trained (also when stopped): the run's model
                self._train, self._run = m, run
                self._infer_stale = True
                # the model's shape and settings; the window and threads
                # asked for, not the run's (capped at its data, shared out)
                self._cfg = dict(m.config(), window=self._cfg["window"],
                                 threads=self._cfg["threads"]) if resume is None \
                    else m.config()
                self._normalized = bool(self._cfg["normalize"])
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
    def encode(self, x, silent=None, **options):
        """x ([T, D] or [N, T, D]) as the bytes of a .fbs stream, exactly
        what 'frae encode' writes with the same options.  options are the
        encoder's rows of libfrae's codec table (frae.codec_options(): the
        command's --packet-ms is packet_ms=40, --search search=2, a flag
        True), e.g. search (0..16 passes; by default 2 for a speech codec,
        a model with pitch but not a variable-rate one with look-ahead,
        else 0) and search_lambda (the rate's
        weight; None: the model's rate_lambda): the encoder's
        analysis-by-synthesis search of each frame's codes, the same
        format; packet_ms: real-time packets (stream version 5), with
        resync_ms and resync_state.  silent (a model with a prior):
        booleans, one per frame ([T] or [N, T]), the frames to send as
        silence (DTX: a flag each, the decoder repeating its last frame);
        or dtx (a model loaded from a checkpoint trained on audio): True,
        or a level in dB (-60; or dtx_level=), picks them by level as
        'frae encode --dtx' (--dtx-level) does, the same bytes."""
        self._check_open()
        if isinstance(x, (list, tuple)):
            raise TypeError("encode: needs one array ([T, D] or [N, T, D])")
        dtx = options.pop("dtx", None)
        level = options.pop("dtx_level", None)
        if dtx is not None and dtx is not True and dtx is not False:
            level, dtx = dtx, True  # dtx=-50: the level
        if level is not None:
            dtx = True
        pairs = _codec_pairs("encode", options, ENCODES)
        cfg = self._config()
        width = cfg["frame_dim"] + 2 * cfg["pitch"]
        a = _as_frames(x, width, "x")
        n, t = (1, a.shape[0]) if a.ndim == 2 else a.shape[:2]
        mask = None
        if dtx:
            if silent is not None:
                raise ValueError("encode: give silent or dtx, not both")
            feats = getattr(self, "_features", None)
            if feats is None:
                raise FraeError("encode: dtx: the model was not loaded from a checkpoint "
                                "trained on audio features, so its frames have no level to "
                                "gate on (give silent=)")
            _codec_pairs("encode", {"dtx_level": level if level is not None else -60.0},
                         ENCODES)  # checked as the table checks it
            level = -60.0 if level is None else float(level)
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
        return self._inference(1).encode(a, n, t, a.ndim == 2, pairs, mask)

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
        """A checkpoint (safetensors, docs/formats.md, "Checkpoint format"), with the
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
            return "<frae.FRAE closed>" if self._cfg is None else "<%s>" % self.summary()
        finally:
            self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _progress(epoch, epochs, done, total, loss, frames, elapsed):
    width = 24
    filled = width * done // total if total else width
    bar = "=" * filled + (">" if filled < width else "") + "." * max(0, width - filled - 1)
    eta = elapsed / done * (total - done) if done else 0
    sys.stdout.write("\repoch %d/%d [%s] %d/%d  loss %.6f  %.0f frames/s  ETA %.0fs\033[K"
                     % (epoch, epochs, bar, done, total, loss,
                        frames / elapsed if elapsed > 0 else 0, eta))
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
    # the audio features it was trained on (checkpoint metadata, read and
    # checked by libfrae-audio as frae's commands read them), for dtx
    vals = _frae.checkpoint_features(path)
    if vals is not None:
        model._features = dict(zip(_FEATURE_KEYS, vals))
    return model


# the checkpoint's features.* keys, in _frae.dtx_mask's and
# _frae.checkpoint_features's order
_FEATURE_KEYS = ("sample_rate", "n_mels", "hop", "win", "n_fft", "fmin", "fmax", "floor",
                 "offset", "scale")


def features(path, sample_rate=16000, n_mels=80, hop=160, win=400, n_fft=512,
             fmin=0.0, fmax=8000.0, resample=True, pitch=False, f0=None):
    """The log-mel features of an audio file, [frames, n_mels] float32:
    exactly 'frae features' (docs/speech.md); pitch=True adds f0 (Hz, 0
    when unvoiced) and voicing (0 or 1), [frames, n_mels + 2], exactly
    'frae features --pitch': what a speech codec (trained with pitch, as
    recipe="speech") encodes.  f0="yin", "yin-hp" or "refined" (implies
    pitch): the tracker's steps up to that one, exactly 'frae features
    --f0' (None: every step, "refined")."""
    if f0 is not None and not isinstance(f0, str):
        raise ValueError("features: f0 must be 'yin', 'yin-hp', 'refined' or None, got %r"
                         % (f0,))
    raw, frames, width = _frae.features(os.fspath(path), int(sample_rate), int(n_mels),
                                        int(hop), int(win), int(n_fft), float(fmin),
                                        float(fmax), bool(resample), bool(pitch), f0)
    return np.frombuffer(raw, np.float32).reshape(frames, width).copy()


def vocode(feats, sample_rate=16000, n_mels=80, hop=160, win=400, n_fft=512,
           fmin=0.0, fmax=8000.0, gl_iters=32, polish=None):
    """Features back to audio, float32 samples at sample_rate, as 'frae
    vocode' and 'frae decode --wav' make them: [T, n_mels + 2] (with pitch:
    features(pitch=True), or what a pitch model decodes) through the
    harmonic-plus-noise vocoder, then polish rounds (None: the codec
    table's default, as 'frae decode --polish'); [T, n_mels] through
    Griffin-Lim (gl_iters iterations).  (T - 1) * hop + win samples, on the
    features' timeline."""
    a = np.asarray(feats)
    if a.ndim != 2 or a.dtype.kind != "f":
        raise ValueError("vocode: needs [T, n_mels] or [T, n_mels + 2] float features, got "
                         "%s %s" % (a.dtype, a.shape))
    a = np.ascontiguousarray(a, np.float32)
    _check_finite(a, "vocode")
    if polish is None:
        polish = _frae.codec_settings([])["polish"]
    raw = _frae.vocode(a, a.shape[0], a.shape[1], int(sample_rate), int(n_mels), int(hop),
                       int(win), int(n_fft), float(fmin), float(fmax), int(gl_iters),
                       int(polish))
    return np.frombuffer(raw, np.float32).copy()


def write_wav(path, samples, sample_rate=16000):
    """Samples (float, -1..1) as a 16-bit PCM WAV, written as 'frae decode
    --wav' writes it (atomically): write_wav("y.wav", vocode(m.decode(s)))."""
    a = np.ascontiguousarray(np.asarray(samples, np.float32).reshape(-1))
    _check_finite(a, "write_wav")
    _frae.write_wav(os.fspath(path), a.tobytes(), int(sample_rate))


def _output_fd(path):
    """The descriptor an output path names, or -1, as the frae command
    reads it (frae_output_descriptor): "-" and /dev/stdout are standard
    output, /dev/stderr standard error, /dev/fd/N and /proc/self/fd/N
    descriptor N."""
    if path in ("-", "/dev/stdout"):
        return 1
    if path == "/dev/stderr":
        return 2
    m = re.fullmatch(r"/(?:dev|proc/self)/fd/([0-9]{1,7})", path)
    return int(m.group(1)) if m else -1


def _output_seekable(path):
    """Whether an output can be written out of order (a .npy whose header
    is finished last): not "-", and a regular file or none yet."""
    path = os.fspath(path)
    try:
        return path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return path != "-"


@contextlib.contextmanager
def _output(path):
    """A binary file to write an output to, opened as the frae command
    opens one (frae_atomic_begin): "-" and /dev/stdout (and /dev/fd/N) are
    written through a copy of the descriptor, a FIFO only if a process
    reads it, a device in place; a regular file (or a new one) is written
    to a temporary file beside it, renamed over it once complete (a link
    keeps the link and its target is replaced), so a failure leaves the old
    file.  The path is used as it is: no suffix is added (np.save on a
    path would add .npy)."""
    path = os.fspath(path)
    fd = _output_fd(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if fd >= 0 or (st is not None and not stat.S_ISREG(st.st_mode)):
        if fd >= 0:
            for f in (sys.stdout, sys.stderr):
                f.flush()
            f = os.fdopen(os.dup(fd), "wb")
        elif stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            try:  # a FIFO nobody reads is refused, not waited on
                f = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    raise OSError(e.errno, "%s: a FIFO that no process reads" % path)
                raise
            os.set_blocking(f, True)
            f = os.fdopen(f, "wb")
        else:
            raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                          "%s: %s" % (path, "is a directory" if stat.S_ISDIR(st.st_mode)
                                      else "not a file frae can write"))
        with f:
            yield f
        return
    target = os.path.realpath(path) if os.path.islink(path) else path
    for n in range(1000):
        tmp = "%s.tmp-%d-%d" % (target, os.getpid(), n)
        try:
            tfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(errno.EEXIST, "%s: cannot create a temporary file" % path)
    if st is not None:
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
    try:
        with os.fdopen(tfd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


ENCODES, DECODES = 1, 2  # codec_options()' sides


def codec_options():
    """libfrae's codec option table, the rows 'frae encode' and 'frae
    decode' parse: {keyword: (sides, help, default)}, sides a set of
    "encode" and "decode"; FRAE.encode and Codec.encode/decode take them
    as keywords (packet_ms=40 is --packet-ms 40)."""
    return {name.replace("-", "_"): ({s for b, s in ((ENCODES, "encode"), (DECODES, "decode"))
                                      if sides & b}, help_, deflt)
            for name, _, sides, help_, deflt in _frae.codec_options()}


def _codec_pairs(what, options, side):
    """options {keyword: value} as [(keyword, value text or None)] for the
    library, which checks each: a flag True (False: left out), None left
    out; an option of the other end, or none, refused."""
    rows = {name.replace("-", "_"): (metavar, sides)
            for name, metavar, sides, _, _ in _frae.codec_options()}
    pairs = []
    for k, v in options.items():
        if k not in rows or not rows[k][1] & side:
            other = k in rows and "; it is an option of %s" % (
                "encode" if rows[k][1] & ENCODES else "decode")
            raise TypeError("%s: unexpected keyword %r%s (frae.codec_options() lists them)"
                            % (what, k, other or ""))
        if v is None or v is False:
            continue
        if rows[k][0] is None:  # a flag
            if v is not True:
                raise ValueError("%s: %s is a flag: True or False, got %r" % (what, k, v))
            pairs.append((k, None))
        else:
            if isinstance(v, bool):
                raise ValueError("%s: %s takes a value, got %r" % (what, k, v))
            if isinstance(v, str):
                pairs.append((k, v))
            elif isinstance(v, (int, np.integer)):
                pairs.append((k, str(int(v))))
            else:
                pairs.append((k, repr(float(v))))
    return pairs


def recipes():
    """The recipes by name (FRAE(recipe=...), 'frae train --recipe'): {name:
    (summary, {keyword: value})}, the options each sets."""
    return {name: (summary, dict(opts)) for name, summary, opts in _frae.recipes()}


# ---- the shipped models and a codec over them -----------------------------------

DEFAULT_MODEL = "speech"  # the fixed-rate 1.6 kbit/s codec (FRAE_DEFAULT_MODEL)


def _add_models_dirs():
    """Tells libfrae where this package's models are, its search's step 4
    (include/frae_codec.h): the package's own frae/models ('pip install .'
    puts the shipped models there), then the source tree's models/ when the
    package runs from the tree (python/frae, build/python/frae)."""
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.path.join(here, "models")] + [
        os.path.join(here, *[".."] * up, "models") for up in (2, 3)
        if os.path.exists(os.path.join(here, *[".."] * up, "models", "MANIFEST"))]
    for d in dirs:
        if os.path.isdir(d):
            try:
                _frae.models_add_dir(d)
            except FraeError:  # the library's table full (8): the search goes on without it
                pass


_add_models_dirs()


def models_dirs():
    """The directories the shipped models are looked for in, in libfrae's
    search order, the one 'frae models' prints (frae_models_dir):
    FRAE_MODELS (colon-separated; alone when set), else the user's
    ($XDG_DATA_HOME/frae/models or ~/.local/share/frae/models),
    PREFIX/share/frae/models beside the library and the program, this
    package's frae/models ('pip install .' installs the shipped models
    there) and the source tree's models/ when run from the tree, then the
    build's PREFIX/share/frae/models; those that exist."""
    return _frae.models_dirs()


def models():
    """The shipped models found: {name: path}, in the order 'frae models'
    lists them, each name's first readable file in models_dirs()'s order
    (the one Codec(name) loads)."""
    return {name: path for name, path, used in _frae.models() if used}


def _open_regular(path):
    """path opened for reading as 'frae decode' opens a stream: a regular
    file; a FIFO or a device is refused at once (FraeError), not waited on
    for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FraeError("%s: not a regular file" % os.fsdecode(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _stream_hash(stream):
    b = bytes(stream[:16])
    if len(b) < 16 or b[:6] != b"FRAEBS":
        raise FraeError("not a frae stream (no FRAEBS header)")
    return int.from_bytes(b[8:16], "little")


class Codec:
    """The speech codec over a shipped model (README "Quick start: Python")::

        c = frae.Codec()                      # the default: speech, 1.6 kbit/s
        stream = c.encode("in.wav")           # the bytes 'frae encode' writes
        samples = c.decode(stream, "out.wav") # float32 audio, also written

    model: a shipped model's name ("speech", "speech-vbr", "speech-3k2":
    frae.models()), a checkpoint's path, or None (the default).  encode takes
    a WAV (or any audio file libsndfile reads) by path, a 1-D float array of
    samples at the model's rate, or feature frames ([T, D + 2] with pitch,
    as frae.features(pitch=True) gives); it returns the .fbs bytes (and
    writes them to fbs if given).  decode takes those bytes (or a .fbs path)
    and returns the decoded audio (and writes wav if given); frames=True
    gives the decoded feature frames instead.  A stream another shipped model
    made is decoded with that model, found by the hash the stream names, as
    'frae decode IN.fbs --wav OUT.wav' does."""

    def __init__(self, model=None, threads=None):
        self._threads = threads
        self._loaded = {}
        self.path = self._resolve(DEFAULT_MODEL if model is None else model)
        self.model = self._load(self.path)

    @staticmethod
    def _resolve(model):
        model = os.fspath(model)
        if os.sep not in model and not os.path.exists(model):
            found = models()
            if model not in found:
                raise FraeError("no shipped model %r (found: %s; searched %s)"
                                % (model, ", ".join(sorted(found)) or "none",
                                   ", ".join(models_dirs()) or "no models directory"))
            return found[model]
        return model

    def _load(self, path):
        if path not in self._loaded:
            m = load(path, threads=self._threads)
            if getattr(m, "_features", None) is None:
                raise FraeError("%s was not trained on audio features" % path)
            self._loaded[path] = m
        return self._loaded[path]

    @staticmethod
    def _hash(m):
        return m._inference(1).info()["hash"]

    @property
    def hash(self):
        """The model's hash: what its streams name (bytes 8-15)."""
        return self._hash(self.model)

    def _feature_args(self, m):
        f = m._features
        return dict(sample_rate=f["sample_rate"], n_mels=f["n_mels"], hop=f["hop"],
                    win=f["win"], n_fft=f["n_fft"], fmin=f["fmin"], fmax=f["fmax"])

    def features(self, audio):
        """The frames the model codes: features(pitch=True) of a file, or of
        samples (a 1-D array at the model's rate, through a 32-bit float
        WAV, so exactly as given: a 16-bit file's samples read as k / 32768
        give that file's frames to the bit)."""
        args = self._feature_args(self.model)
        if isinstance(audio, (str, bytes, os.PathLike)):
            return features(audio, pitch=bool(self.model._config()["pitch"]), **args)
        a = np.asarray(audio)
        if a.ndim != 1:
            raise ValueError("Codec: samples must be 1-D, got shape %s" % (a.shape,))
        a = np.ascontiguousarray(a, "<f4")
        _check_finite(a, "Codec.features")
        import tempfile
        with tempfile.TemporaryDirectory(prefix="frae-codec-") as d:
            p = os.path.join(d, "in.wav")
            with open(p, "wb") as f:  # WAVE_FORMAT_IEEE_FLOAT, mono
                rate, n = int(args["sample_rate"]), a.nbytes
                if n > 0xFFFFFFFF - 64:
                    raise ValueError("Codec: %d samples are more than a WAV holds" % a.size)
                f.write(b"RIFF" + struct.pack("<I", 4 + 26 + 12 + 8 + n) + b"WAVE")
                f.write(b"fmt " + struct.pack("<IHHIIHHH", 18, 3, 1, rate, 4 * rate, 4, 32, 0))
                f.write(b"fact" + struct.pack("<II", 4, a.size))
                f.write(b"data" + struct.pack("<I", n) + a.tobytes())
            return features(p, pitch=bool(self.model._config()["pitch"]), **args)

    def encode(self, x, fbs=None, **options):
        """x (a path, samples, or feature frames) as .fbs bytes; options go
        to FRAE.encode (search, search_lambda, dtx)."""
        a = np.asarray(x) if not isinstance(x, (str, bytes, os.PathLike)) else None
        frames = a if a is not None and a.ndim == 2 else self.features(x)
        stream = self.model.encode(frames, **options)
        if fbs is not None:  # as frae encode -o: "-" is standard output
            with _output(fbs) as f:
                f.write(stream)
        return stream

    def _model_for(self, stream):
        h = _stream_hash(stream)
        if h == self.hash:
            return self.model
        for m in self._loaded.values():
            if self._hash(m) == h:
                return m
        for d in models_dirs():  # libfrae's search, however many files
            path = _frae.models_dir_find(d, h)
            if path is not None:
                return self._load(path)
        raise FraeError("no installed model has hash %016x (frae.models() lists them; "
                        "give the model that made the stream)" % h)

    def decode(self, stream, wav=None, frames=False, **options):
        """A .fbs stream (bytes or a path) back to audio (float32 samples at
        the model's rate; wav: also written there, as they are made) or,
        frames=True, to its decoded feature frames.  options: the decoder's
        rows of frae.codec_options() (vocoder="gl", gl_iters=64), as
        'frae decode' takes them.  Memory: the returned
        array (4 bytes a sample: 100 frames make 16,000 samples at 16 kHz,
        64 KB) and a bounded amount; decode_chunks and decode_to_wav decode
        in memory that does not grow with the stream."""
        if isinstance(stream, (str, os.PathLike)):
            with _open_regular(stream) as f:
                stream = f.read()
        if not isinstance(stream, (bytes, bytearray, memoryview)):
            raise TypeError("decode: needs bytes or a path, got %s" % type(stream).__name__)
        settings = self._decode_settings(options)
        m = self._model_for(stream)
        if frames:
            return m.decode(stream)
        # frame by frame through the vocoder into the one array returned
        # (and the WAV): memory is the samples' and a bounded amount
        d = self._audio_decoder(m, stream, wav, settings)
        try:
            samples = np.empty(d.samples, np.float32)
            d.read(samples, len(samples))
        finally:
            d.close()
        return samples

    @staticmethod
    def _decode_settings(options):
        """The decoder's options (frae.codec_options()), checked by libfrae."""
        return _frae.codec_settings(_codec_pairs("decode", options, DECODES))

    def _audio_decoder(self, m, stream, wav=None, settings=None):
        """The extension's decoder of a one-sequence stream's audio through
        m, a chunk at a time (and into wav, committed at its end)."""
        args = self._feature_args(m)
        s = settings or self._decode_settings({})
        with m._lock:
            model = m._inference(1)
        return _frae.decoder(model, stream, args["sample_rate"], args["n_mels"], args["hop"],
                             args["win"], args["n_fft"], float(args["fmin"]),
                             float(args["fmax"]), s["gl_iters"],
                             None if wav is None else os.fspath(wav), s["vocoder"],
                             s["through"], s["polish"])

    def _stream_decoder(self, stream, wav=None, options=None):
        if isinstance(stream, (str, os.PathLike)):
            with open(stream, "rb") as f:
                stream = f.read()
        if not isinstance(stream, (bytes, bytearray, memoryview)):
            raise TypeError("decode: needs bytes or a path, got %s" % type(stream).__name__)
        settings = self._decode_settings(options or {})
        return self._audio_decoder(self._model_for(stream), stream, wav, settings)

    def decode_chunks(self, stream, chunk=16000, **options):
        """A .fbs stream (bytes or a path) as its audio, a chunk at a time:
        an iterator of float32 arrays of chunk samples (the last shorter),
        together decode(stream)'s samples to the bit, in memory that does
        not grow with the stream (a chunk, the model and the vocoder).  A
        bad stream raises here; bytes no encoder writes, at the chunk that
        reaches them."""
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError("decode_chunks: chunk must be a positive int, got %r" % (chunk,))
        d = self._stream_decoder(stream, options=options)

        def chunks():
            try:
                while True:
                    y = np.empty(chunk, np.float32)
                    n = d.read(y, chunk)
                    if n == 0:
                        return
                    yield y if n == chunk else y[:n].copy()
            finally:
                d.close()
        return chunks()

    def decode_to_wav(self, stream, wav, **options):
        """A .fbs stream (bytes or a path) decoded straight into the WAV at
        wav (as 'frae decode --wav' writes it, "-" standard output), in
        memory that does not grow with the stream; returns its number of
        samples."""
        d = self._stream_decoder(stream, wav, options)
        try:
            d.read(None, 0)
        finally:
            d.close()
        return d.samples

    def __repr__(self):
        return "<frae.Codec %s>" % self.path
