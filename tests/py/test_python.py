"""The Python module (import frae): every call, fit against 'frae train' to
the bit, memory over 1,000 calls, and bad input.  Run by tests/python_test.sh
(pytest, with PYTHONPATH at the build's python/ and FRAE_BIN the command)."""
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import wave

import numpy as np
import pytest

import frae

FRAE = os.environ.get("FRAE_BIN", "build/frae")
SMALL = dict(frame_dim=8, history=2, latent=4, quantizer="binary", enc=(24,), dec=(24,),
             window=20, threads=1)
CLI_SMALL = ["--history", "2", "--latent", "4", "--quantizer", "binary", "--enc", "24",
             "--dec", "24", "--window", "20", "--threads", "1", "--progress", "off"]


def data(n=20, t=50, d=8, seed=1):
    rng = np.random.default_rng(seed)
    tt = np.arange(t)[None, :, None]
    return (0.5 * np.sin(tt * rng.uniform(0.05, 0.2, (n, 1, d)) + rng.uniform(0, 6, (n, 1, d)))
            ).astype(np.float32)


def cli(*args):
    p = subprocess.run([FRAE] + [str(a) for a in args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def same_weights(a, b):
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(np.array_equal(x, y) for x, y in zip(wa, wb))


def rss_bytes():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# ---- fit against the command line ----------------------------------------------

@pytest.mark.parametrize("family,extra,cli_extra", [
    ("dense", {}, []),
    ("gru", dict(feedback="full", normalize=True), ["--feedback", "full", "--normalize", "on"]),
    ("gru", dict(rate_lambda=0.01), ["--rate-lambda", "0.01"]),
    ("gru", dict(feedback="full", erasure=0.2, erasure_frames=3),
     ["--feedback", "full", "--erasure", "0.2", "--erasure-frames", "3"]),
    ("gru", dict(feedback="full", lookahead=2), ["--feedback", "full", "--lookahead", "2"]),
])
def test_fit_matches_frae_train(tmp_path, family, extra, cli_extra):
    x = data()
    np.save(tmp_path / "x.npy", x)
    m = frae.FRAE(family=family, **SMALL, **extra)
    h = m.fit(x, epochs=3, batch_size=4, validation_split=0.2, verbose=0,
              csv_log=str(tmp_path / "py.csv"))
    cli("train", tmp_path / "x.npy", "--family", family, *CLI_SMALL, *cli_extra, "--epochs", 3,
        "--batch", 4, "--val-split", 0.2, "--save", tmp_path / "cli.st", "--log-csv",
        tmp_path / "cli.csv")
    assert same_weights(m, frae.load(tmp_path / "cli.st")), "weights differ from frae train's"
    py = [l.split(",") for l in open(tmp_path / "py.csv").read().split()]
    cl = [l.split(",") for l in open(tmp_path / "cli.csv").read().split()]
    assert py[0] == cl[0]
    for a, b in zip(py[1:], cl[1:]):  # every figure but the timings
        assert a[:5] == b[:5] and a[7:] == b[7:]
    assert h["loss"][0] == pytest.approx(float(cl[1][1]), rel=1e-8)
    assert ("rate" in h) == ("rate_lambda" in extra)


def test_fit_with_targets_matches_frae_train(tmp_path):
    rng = np.random.default_rng(5)
    os.makedirs(tmp_path / "clean"), os.makedirs(tmp_path / "noisy")
    ys = [data(n=1, t=30 + 3 * i, seed=i)[0] for i in range(10)]
    xs = [(y + rng.normal(0, 0.2, y.shape)).astype(np.float32) for y in ys]
    for i, (a, b) in enumerate(zip(xs, ys)):
        np.save(tmp_path / ("noisy/s%d.npy" % i), a)
        np.save(tmp_path / ("clean/s%d.npy" % i), b)
    m = frae.FRAE(**dict(SMALL, family="gru"), normalize=True)
    h = m.fit(xs, ys, epochs=3, batch_size=4, validation_split=0.2, verbose=0)
    cli("train", tmp_path / "noisy", "--targets", tmp_path / "clean", "--family", "gru",
        "--normalize", "on", *CLI_SMALL, "--epochs", 3, "--batch", 4, "--val-split", 0.2,
        "--save", tmp_path / "cli.st")
    assert same_weights(m, frae.load(tmp_path / "cli.st"))
    m.save(tmp_path / "py.st")
    assert "targets:" in cli("info", tmp_path / "py.st")
    v = m.fit(xs[:8], ys[:8], epochs=1, batch_size=4, verbose=0,
              validation_data=(xs[8:], ys[8:]))
    assert np.isfinite(v["val_loss"][0]) and h["val_loss"][-1] > 0
    with pytest.raises(ValueError, match=r"\(x_val, y_val\)"):
        m.fit(xs, ys, validation_data=xs[:2], verbose=0)


def test_fits_carry_on(tmp_path):
    x = data()
    a = frae.FRAE(**SMALL)
    for _ in range(3):
        a.fit(x, epochs=1, batch_size=4, verbose=0)
    b = frae.FRAE(**SMALL)
    h = b.fit(x, epochs=3, batch_size=4, verbose=0)
    assert same_weights(a, b), "three fits of one epoch differ from one fit of three"
    assert isinstance(h, dict) and h.history is h and len(h["loss"]) == 3


def varied(tmp_path, n=12, d=8):
    """Sequences of 30..140 frames as a list, and as a directory of .npy
    files in the same order (the command's data)."""
    rng = np.random.default_rng(4)
    seqs = [(0.5 * np.sin(0.05 * (1 + i % 4) * np.arange(30 + 10 * i)[:, None]
                          + rng.uniform(0, 6, (1, d)))).astype(np.float32) for i in range(n)]
    os.makedirs(tmp_path / "varied", exist_ok=True)
    for i, s in enumerate(seqs):
        np.save(tmp_path / "varied" / ("s%02d.npy" % i), s)
    return seqs


CROP = dict(batch_size=4, crop=16, validation_split=0.25, verbose=0)
CLI_CROP = ["--batch", "4", "--crop", "16", "--val-split", "0.25"]


def test_fit_crops_split_resume_are_frae_train(tmp_path):
    # one loop (libfrae's run) under both: crops, a validation split and a
    # resume give the command's weights to the bit
    seqs = varied(tmp_path)
    straight = frae.FRAE(**SMALL)
    straight.fit(seqs, epochs=4, **CROP)
    cli("train", tmp_path / "varied", *CLI_SMALL, *CLI_CROP, "--epochs", 4,
        "--save", tmp_path / "cli.st")
    assert same_weights(straight, frae.load(tmp_path / "cli.st")), "fit with crops differs"
    half = frae.FRAE(**SMALL)
    half.fit(seqs, epochs=2, checkpoint=str(tmp_path / "half.st"), **CROP)
    back = frae.FRAE()
    h = back.fit(seqs, epochs=2, resume=str(tmp_path / "half.st"), verbose=0)
    assert len(h["loss"]) == 2 and "val_loss" in h
    assert same_weights(back, straight), "fit(resume=) differs from the straight fit"
    # the command resumes Python's checkpoint, Python the command's
    cli("train", tmp_path / "varied", "--resume", tmp_path / "half.st", "--epochs", 4,
        "--threads", 1, "--progress", "off", "--save", tmp_path / "half.st")
    assert same_weights(frae.load(tmp_path / "half.st"), straight)


def test_ten_fits_of_one_epoch_are_one_fit_of_ten(tmp_path):
    seqs = varied(tmp_path)
    a = frae.FRAE(**dict(SMALL, family="gru"), normalize=True)
    for _ in range(10):
        a.fit(seqs, epochs=1, **CROP)
    b = frae.FRAE(**dict(SMALL, family="gru"), normalize=True)
    h = b.fit(seqs, epochs=10, **CROP)
    assert len(h["loss"]) == 10
    assert same_weights(a, b), "ten fits of one epoch differ from one fit of ten"
    cli("train", tmp_path / "varied", "--family", "gru", "--normalize", "on", *CLI_SMALL,
        *CLI_CROP, "--epochs", 10, "--save", tmp_path / "ten.st")
    assert same_weights(b, frae.load(tmp_path / "ten.st")), "fit differs from frae train"


def test_fit_replicas_are_frae_train_replicas(tmp_path):
    seqs = varied(tmp_path)
    m = frae.FRAE(**SMALL)
    m.fit(seqs, epochs=2, replicas=2, **CROP)
    cli("train", tmp_path / "varied", *CLI_SMALL, *CLI_CROP, "--epochs", 2, "--replicas", 2,
        "--save", tmp_path / "rep.st")
    assert same_weights(m, frae.load(tmp_path / "rep.st")), "fit(replicas=2) differs"


def test_variable_lengths_and_validation_data(tmp_path):
    rng = np.random.default_rng(2)
    seqs = [rng.normal(0, 0.3, (t, 8)).astype(np.float32) for t in (12, 30, 45, 7, 33)]
    m = frae.FRAE(**SMALL)
    h = m.fit(seqs, epochs=2, batch_size=2, validation_data=seqs[:2], verbose=0)
    assert len(h["val_loss"]) == 2 and all(np.isfinite(h["val_loss"]))
    y = m.predict(seqs)
    assert [a.shape for a in y] == [s.shape for s in seqs]


def test_early_stopping_best_checkpoint_callbacks(tmp_path):
    x = data()
    m = frae.FRAE(**dict(SMALL, learning_rate=1e-30))  # nothing improves
    seen = []
    h = m.fit(x, epochs=10, batch_size=4, validation_split=0.2, patience=2, verbose=0,
              save_best=str(tmp_path / "best.st"), checkpoint=str(tmp_path / "ck.st"),
              callbacks=[lambda e, logs: seen.append((e, sorted(logs)))])
    assert len(h["loss"]) == 3, "patience 2 stops after epoch 3"
    assert seen[0] == (0, ["loss", "mae", "val_loss", "val_mae"])
    assert frae.load(tmp_path / "best.st") and frae.load(tmp_path / "ck.st")
    stop = frae.FRAE(**SMALL).fit(x, epochs=10, batch_size=4, verbose=0,
                                  callbacks=[lambda e, logs: e == 1])
    assert len(stop["loss"]) == 2, "a callback returning True stops"


def test_ctrl_c_saves_then_raises(tmp_path):
    x = data(n=400, t=100)
    m = frae.FRAE(**dict(SMALL, enc=(256, 256), dec=(256, 256)))
    # Python's own Ctrl-C handler, whatever this process inherited: a shell
    # starts background jobs with SIGINT ignored, and Python keeps that
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    ck = tmp_path / "int.st"
    try:
        with pytest.raises(KeyboardInterrupt):
            m.fit(x, epochs=1000, batch_size=4, checkpoint=str(ck), verbose=0)
    finally:
        t.cancel()
        signal.signal(signal.SIGINT, previous)
    t.join()
    back = frae.load(ck)
    assert same_weights(back, m), "the checkpoint is the model at the interruption"
    assert "optimizer.m" in open(ck, "rb").read(4096).decode("latin-1")


def test_gil_released_while_training():
    x = data(n=64, t=100)
    m = frae.FRAE(**dict(SMALL, enc=(256, 256), dec=(256, 256)))
    done = threading.Event()
    th = threading.Thread(target=lambda: (m.fit(x, epochs=3, batch_size=8, verbose=0),
                                          done.set()))
    th.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0)
    th.join()
    assert ticks > 1000, "the main thread hardly ran while fit computed (%d)" % ticks


# ---- inference, codec, weights, files --------------------------------------------

def test_predict_evaluate_against_cli(tmp_path):
    x = data()
    m = frae.FRAE(**SMALL)
    m.fit(x, epochs=2, batch_size=4, verbose=0)
    m.save(tmp_path / "m.st")
    np.save(tmp_path / "x.npy", x)
    cli("predict", tmp_path / "m.st", tmp_path / "x.npy", "-o", tmp_path / "y.npy")
    y = m.predict(x, batch_size=3)
    assert np.array_equal(y, np.load(tmp_path / "y.npy"))
    assert np.array_equal(m.predict(x[0]), y[0])
    out = np.empty_like(x)
    assert m.predict(x, out=out) is out and np.array_equal(out, y)
    assert m.evaluate(x) == pytest.approx(float(np.mean((y.astype(np.float64) - x) ** 2)),
                                          rel=1e-6)


def test_encode_decode_are_frae_encode(tmp_path):
    x = data()
    for kw in ({}, dict(family="gru", rate_lambda=0.01),
               dict(family="gru", rate_lambda=0.01, lookahead=2)):
        m = frae.FRAE(**SMALL, **kw)
        m.fit(x, epochs=1, batch_size=4, verbose=0)
        m.save(tmp_path / "m.st")
        np.save(tmp_path / "x.npy", x)
        cli("encode", tmp_path / "m.st", tmp_path / "x.npy", "-o", tmp_path / "x.fbs")
        stream = m.encode(x)
        assert stream == open(tmp_path / "x.fbs", "rb").read()
        assert np.array_equal(m.decode(stream), m.predict(x))
        assert m.decode(m.encode(x[3])).shape == x[3].shape
        # the encoder's search, as 'frae encode --search'
        cli("encode", tmp_path / "m.st", tmp_path / "x.npy", "-o", tmp_path / "s.fbs",
            "--search", "2", "--search-lambda", "0.01")
        searched = m.encode(x, search=2, search_lambda=0.01)
        assert searched == open(tmp_path / "s.fbs", "rb").read() and searched != stream
        assert m.decode(searched).shape == x.shape
    with pytest.raises(ValueError, match="search expects an integer in 0..16"):
        m.encode(x, search=17)
    with pytest.raises(ValueError, match="search_lambda expects a number"):
        m.encode(x, search=1, search_lambda=-1.0)


def test_weights_in_keras_order(tmp_path):
    m = frae.FRAE(**dict(SMALL, family="gru"))
    w = m.get_weights()
    H = w[1].shape[0]
    assert w[0].shape == (8 + H + 2 * 8, 3 * H) and w[1].shape == (H, 3 * H)
    assert w[2].shape == (2, 3 * H)
    x = data()
    y = m.predict(x)
    m.set_weights(w)
    assert np.array_equal(m.predict(x), y)
    w2 = [a * 0.5 for a in w]
    m.set_weights(w2)
    assert all(np.array_equal(a, b) for a, b in zip(m.get_weights(), w2))
    assert not np.array_equal(m.predict(x), y)
    d = frae.FRAE(**SMALL).get_weights()
    assert [a.shape for a in d] == [(24, 24), (24,), (24, 4), (4,), (20, 24), (24,), (24, 8),
                                    (8,)]


def test_save_load_summary(tmp_path):
    x = data()
    m = frae.FRAE(**SMALL)
    m.fit(x, epochs=1, batch_size=4, verbose=0)
    m.save(tmp_path / "m.st")
    back = frae.load(tmp_path / "m.st")
    assert np.array_equal(back.predict(x), m.predict(x))
    assert "1404 parameters" in back.summary() and "dense" in repr(back)
    cli("info", tmp_path / "m.st")  # opens elsewhere
    back.fit(x, epochs=1, batch_size=4, verbose=0)  # continues, Adam state and all


def test_decode_reads_dtx_streams(tmp_path):
    # a stream 'frae encode --dtx' made (a speech model with a prior and
    # pitch; a pause in the audio) decodes in Python as with 'frae decode'
    rate = 16000
    t = np.arange(rate) / rate
    tone = 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    s = (np.concatenate([tone, np.zeros(rate), tone]) * 32767).astype("<i2")
    for i in range(3):
        (tmp_path / "speech").mkdir(exist_ok=True)
        with wave.open(str(tmp_path / "speech" / ("u%d.wav" % i)), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
            w.writeframes(s.tobytes())
    cli("train", tmp_path / "speech", "--latent", "6", "--enc", "32", "--dec", "32",
        "--quantizer", "binary", "--pitch", "--rate-lambda", "0.01", "--epochs", "1",
        "--batch", "3", "--crop", "50", "--save", tmp_path / "m.st")
    cli("encode", tmp_path / "m.st", tmp_path / "speech" / "u0.wav", "-o", tmp_path / "d.fbs",
        "--dtx")
    cli("decode", tmp_path / "m.st", tmp_path / "d.fbs", "-o", tmp_path / "d.npy")
    stream = open(tmp_path / "d.fbs", "rb").read()
    assert stream[7] & 4  # the DTX flag
    with frae.load(tmp_path / "m.st") as m:
        assert np.array_equal(m.decode(stream), np.load(tmp_path / "d.npy"))
        # the caller's own silent frames: sent as a flag each, decoded as the
        # last frame held, unvoiced; 'frae decode' reads the stream alike
        cli("features", "--pitch", tmp_path / "speech" / "u0.wav", "-o", tmp_path / "f.npy")
        x = np.load(tmp_path / "f.npy")
        mask = np.zeros(len(x), bool)
        mask[120:180] = True
        mine = m.encode(x, silent=mask)
        assert len(mine) < len(m.encode(x))
        y = m.decode(mine)
        assert (y[120:180, :80] == y[119, :80]).all() and (y[120:180, 80:] == 0).all()
        open(tmp_path / "mine.fbs", "wb").write(mine)
        cli("decode", tmp_path / "m.st", tmp_path / "mine.fbs", "-o", tmp_path / "mine.npy")
        assert np.array_equal(y, np.load(tmp_path / "mine.npy"))
        with pytest.raises(ValueError, match="silent must be booleans"):
            m.encode(x, silent=mask[:-1])
        # one stream coder (frae_stream_encoder) behind both: the same bytes
        # as 'frae encode', with the search and the DTX gate too
        for extra, kw in (([], {}), (["--search", "2"], {"search": 2}),
                          (["--dtx"], {"dtx": True}),
                          (["--dtx-level", "-40", "--search", "1"],
                           {"dtx": -40, "search": 1})):
            cli("encode", tmp_path / "m.st", tmp_path / "f.npy", "-o", tmp_path / "c.fbs",
                *extra)
            assert m.encode(x, **kw) == open(tmp_path / "c.fbs", "rb").read(), extra
    m = frae.FRAE(**SMALL)
    with pytest.raises(frae.FraeError, match="need a model with a prior"):
        m.encode(data()[0], silent=np.zeros(data().shape[1], bool))


def test_features_are_frae_features(tmp_path):
    rate = 16000
    t = np.arange(rate) / rate
    s = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2")
    with wave.open(str(tmp_path / "a.wav"), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes(s.tobytes())
    f = frae.features(tmp_path / "a.wav")
    cli("features", tmp_path / "a.wav", "-o", tmp_path / "f.npy")
    assert f.dtype == np.float32 and np.array_equal(f, np.load(tmp_path / "f.npy"))


# ---- memory and references ----------------------------------------------------------

def test_thousand_calls_flat_memory():
    x = data(n=4, t=20)
    m = frae.FRAE(**SMALL)
    for _ in range(100):  # warm up: models, buffers, caches
        m.fit(x, epochs=1, batch_size=2, verbose=0)
        m.predict(x)
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(1000):
        m.fit(x, epochs=1, batch_size=2, verbose=0)
        m.predict(x)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grew = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    rss1 = rss_bytes()
    assert grew < 16384, "Python allocations grew by %d bytes over 1,000 calls" % grew
    assert rss1 - rss0 < 1 << 20, "RSS grew by %d bytes over 1,000 calls" % (rss1 - rss0)


def test_no_leaked_references():
    x = data(n=4, t=20)
    m = frae.FRAE(**SMALL)
    m.fit(x, epochs=1, batch_size=2, verbose=0)
    before = sys.getrefcount(x)
    for _ in range(50):
        m.fit(x, epochs=1, batch_size=2, verbose=0)
        y = m.predict(x)
        s = m.encode(x)
        z = m.decode(s)
        w = m.get_weights()
        m.set_weights(w)
    assert sys.getrefcount(x) == before
    assert sys.getrefcount(y) == 2 and sys.getrefcount(z) == 2 and sys.getrefcount(s) == 2


def test_float32_input_used_in_place():
    x = data(n=3, t=10)
    seqs, _ = frae._sequences(x, 8, "x")
    assert all(np.shares_memory(s, x) for s in seqs)
    x64 = x.astype(np.float64)
    conv, _ = frae._sequences(x64, 8, "x")
    assert not np.shares_memory(conv[0], x64) and conv[0].dtype == np.float32


# ---- bad input -------------------------------------------------------------------------

def test_bad_input_gives_clear_exceptions(tmp_path):
    m = frae.FRAE(**SMALL)
    x = data(n=4, t=20)
    m.fit(x, epochs=1, batch_size=2, verbose=0)
    with pytest.raises(TypeError, match="floating-point"):
        m.predict(x.astype(np.int32))
    with pytest.raises(TypeError, match="floating-point"):
        m.fit(x.astype(np.complex64), verbose=0)
    with pytest.raises(ValueError, match="dimension"):
        m.predict(x[0, 0])
    with pytest.raises(ValueError, match="dimension"):
        m.predict(x[None])
    with pytest.raises(ValueError, match="frame dimension 7"):
        m.predict(x[..., :7])
    bad = x.copy()
    bad[1, 5, 2] = np.nan
    with pytest.raises(ValueError, match=r"nan at \[1, 5, 2\]"):
        m.fit(bad, verbose=0)
    with pytest.raises(ValueError, match="inf"):
        m.predict(np.full((3, 8), np.inf, np.float32))
    strided = np.asfortranarray(x)  # converted once, same answer
    assert np.array_equal(m.predict(strided), m.predict(x))
    with pytest.raises(ValueError, match="C-contiguous"):
        m.predict(x, out=np.empty_like(x)[:, ::-1])
    with pytest.raises(ValueError, match="C-contiguous"):
        m.predict(x, out=np.empty(x.shape, np.float64))
    with pytest.raises(TypeError, match="NumPy array"):
        m.predict("frames")
    with pytest.raises(TypeError, match="NumPy array"):
        m.fit([[1.0, 2.0]], verbose=0)
    with pytest.raises(TypeError, match="bytes"):
        m.decode(123)
    with pytest.raises(frae.FraeError):
        m.decode(b"not a stream at all, not at all")
    with pytest.raises(ValueError, match="set_weights"):
        m.set_weights(m.get_weights()[:-1])
    with pytest.raises(ValueError, match="set_weights"):
        m.set_weights([w.T for w in m.get_weights()])
    with pytest.raises(ValueError, match="epochs"):
        m.fit(x, epochs=0)
    with pytest.raises(ValueError, match="validation_split"):
        m.fit(x, validation_split=1.5)
    with pytest.raises(ValueError, match="3 target sequences for 4"):
        m.fit(x, x[:3], verbose=0)
    with pytest.raises(ValueError, match="pair 1 has 20 input frames and 19"):
        m.fit(list(x), [x[0], x[1, :19], x[2], x[3]], verbose=0)
    with pytest.raises(ValueError, match="^latent expects an integer"):
        frae.FRAE(latent=0)
    with pytest.raises(ValueError, match="family"):
        frae.FRAE(family="lstm")
    with pytest.raises(frae.FraeError, match="cannot open"):
        frae.load(tmp_path / "missing.st")
    (tmp_path / "junk.st").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{junk}")
    with pytest.raises(frae.FraeError):
        frae.load(tmp_path / "junk.st")
    with pytest.raises(frae.FraeError, match="cannot open|No such"):
        frae.features(tmp_path / "missing.wav")
    m.close()
    with pytest.raises(frae.FraeError, match="closed"):
        m.predict(x)
    with pytest.raises(frae.FraeError, match="closed"):
        m.fit(x, verbose=0)


# ---- issue 46: what fit saves reads back; the library never ends the process ------

def test_fit_refuses_data_past_what_training_takes(tmp_path):
    m = frae.FRAE(**SMALL)
    x = np.full((4, 20, 8), 3e38, np.float32)
    with pytest.raises(frae.FraeError, match=r"3e\+38 at \[0, 0, 0\]: training takes "
                                             r"values up to 1e\+18"):
        m.fit(x, epochs=1, batch_size=2, verbose=0, checkpoint=str(tmp_path / "c.st"))
    assert not (tmp_path / "c.st").exists()
    n = frae.FRAE(normalize=True, **SMALL)  # statistics the reader would refuse
    with pytest.raises(frae.FraeError, match="band 0 has mean 3.29999997e"):
        n.fit(np.full((4, 20, 8), 3.3e38, np.float32), epochs=1, batch_size=2, verbose=0)


def test_fit_raises_when_a_replica_thread_cannot_start(monkeypatch):
    m = frae.FRAE(**SMALL)
    x = data(n=8, t=20)
    monkeypatch.setenv("FRAE_FAULT", "thread@1")
    with pytest.raises(frae.FraeError, match="cannot start the 2 replica threads"):
        m.fit(x, epochs=1, batch_size=4, replicas=2, verbose=0)
    monkeypatch.delenv("FRAE_FAULT")
    h = m.fit(x, epochs=1, batch_size=4, replicas=2, verbose=0)  # the interpreter lives on
    assert np.isfinite(h.history["loss"][0])
