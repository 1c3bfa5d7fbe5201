#!/usr/bin/python3
"""The Python module from several threads (issue 33): one frae.FRAE, and
one of the extension's models, hammered by threads that predict, encode,
decode, evaluate, set weights, fit, re-plan (a larger batch) and close.
Every result must be the serial result to the bit, and a call that loses
the race to close() must raise FraeError, never crash or read freed
memory.  Run by tests/python_thread_test.sh, which loads a sanitizer
build's runtime first (ASan, TSan): the races are what the sanitizers see.

Every model computes on one thread (threads=1): the concurrency under test
is the callers'.  A model whose products split over OpenMP threads makes
TSan report races between the caller and libgomp's workers in gemm.c
(checked): libgomp is not instrumented, and TSan cannot see its barriers.

Usage: thread_test.py BUILD_DIR   Prints "N passed, N failed" last."""
import faulthandler
import os
import random
import sys
import tempfile
import threading

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/checks.py
import numpy as np  # noqa: E402

import frae  # noqa: E402
from checks import check, summary  # noqa: E402

N_THREADS = 4
# the small model of tests/py/test_python.py, wider so that a call's C part
# outlasts the Python around it and the threads' calls overlap
SMALL = dict(frame_dim=8, history=2, latent=4, quantizer="binary", enc=(32,), dec=(32,),
             window=20, threads=1)


def data(n, t, d=8, seed=1):
    rng = np.random.default_rng(seed)
    tt = np.arange(t)[None, :, None]
    return (0.5 * np.sin(tt * rng.uniform(0.05, 0.2, (n, 1, d)) + rng.uniform(0, 6, (n, 1, d)))
            ).astype(np.float32)


X = data(4, 300)


def same(a, b):
    if isinstance(a, (bytes, float)):
        return a == b
    return a.shape == b.shape and np.array_equal(a, b)


def in_threads(work, n=N_THREADS):
    """Runs work(i) in n threads started together; returns what each
    raised that it did not expect (a list, empty when none)."""
    start = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            start.wait()
            work(i)
        except BaseException as e:  # noqa: B902 - reported, not swallowed
            errors.append("thread %d: %s: %s" % (i, type(e).__name__, e))
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def closed_error(e):
    return isinstance(e, frae.FraeError) and "closed" in str(e)


# each call the threads make, and the serial answer it must give
CALLS = {
    "predict": lambda m, ref: m.predict(X, batch_size=1),
    "predict, larger batch": lambda m, ref: m.predict(X, batch_size=4),
    "encode": lambda m, ref: m.encode(X),
    "decode": lambda m, ref: m.decode(ref["encode"]),
    "evaluate": lambda m, ref: m.evaluate(X, batch_size=2),
    "set_weights, then predict": lambda m, ref: (m.set_weights(ref["weights"]),
                                                 m.predict(X[:1], batch_size=1))[1],
}


def serial_refs(ck):
    m = frae.load(ck, threads=1)
    ref = {"weights": m.get_weights()}
    ref["encode"] = m.encode(X)
    for name, call in CALLS.items():
        ref[name] = call(m, ref)
    m.close()
    return ref


def test_calls_run_as_alone(ck, ref, rounds=6, calls=6):
    """A fresh object per round, so that the first larger-batch predict
    re-plans (replaces and closes the inference model) under the others."""
    names = list(CALLS)
    wrong = {}
    errors = []
    for r in range(rounds):
        m = frae.load(ck, threads=1)

        def work(i):
            rng = random.Random(100 * r + i)
            for _ in range(calls):
                name = rng.choice(names)
                if not same(CALLS[name](m, ref), ref[name]):
                    wrong[name] = wrong.get(name, 0) + 1
        errors += in_threads(work)
        m.close()
    check(not errors, "calls from %d threads on one FRAE raise nothing" % N_THREADS,
          "; ".join(errors[:3]))
    check(not wrong, "%d calls from %d threads on one FRAE, each the serial result to the bit"
          % (rounds * N_THREADS * calls, N_THREADS),
          ", ".join("%s: %d wrong" % kv for kv in wrong.items()))


def test_close_during_calls(ck, ref, rounds=8):
    """close() from the main thread while the others call: a call finishes
    with the serial result or raises FraeError ("closed"); none crashes."""
    names = list(CALLS)
    wrong, errors, after = [], [], []
    closed_calls = [0]
    for r in range(rounds):
        m = frae.load(ck, threads=1)
        rng = random.Random(r)
        delay = rng.uniform(0.0, 0.01)

        def work(i):
            if i == 0:
                threading.Event().wait(delay)
                m.close()
                return
            trng = random.Random(1000 * r + i)
            for _ in range(5000):  # ends at the first "closed"
                name = trng.choice(names)
                try:
                    y = CALLS[name](m, ref)
                except Exception as e:
                    if not closed_error(e):
                        raise
                    closed_calls[0] += 1
                    return
                if not same(y, ref[name]):
                    wrong.append(name)
        errors += in_threads(work)
        try:
            m.predict(X)
            after.append("predict after close returned")
        except Exception as e:
            if not closed_error(e):
                after.append("%s: %s" % (type(e).__name__, e))
        m.close()  # twice: no error
    check(not errors, "close() during calls from %d threads: only FraeError('closed')"
          % (N_THREADS - 1), "; ".join(errors[:3]))
    check(not wrong, "calls that finished before close() hold the serial result",
          ", ".join(wrong[:5]))
    check(not after and closed_calls[0] == rounds * (N_THREADS - 1),
          "every thread's next call after close() raised FraeError (%d)" % closed_calls[0],
          "; ".join(after[:3]))


def test_fits_run_one_at_a_time(ck):
    """Two threads fit (re-planning the training model: another batch than
    the checkpoint's) while two predict: the fits run one after the other,
    as four serial fits of one epoch do, and every predict sees the weights
    after a whole number of them."""
    fits = 2
    serial = frae.load(ck, threads=1)
    after = [serial.predict(X, batch_size=1)]
    for _ in range(2 * fits):
        serial.fit(X, epochs=1, batch_size=2, verbose=0)
        after.append(serial.predict(X, batch_size=1))
    final = serial.get_weights()
    serial.close()

    # re-entrant: a callback calls the object from inside its own fit
    m = frae.load(ck, threads=1)
    seen = []
    m.fit(X, epochs=2, batch_size=2, verbose=0,
          callbacks=[lambda epoch, logs: seen.append(m.predict(X, batch_size=1))])
    check(len(seen) == 2 and all(np.array_equal(a, b) for a, b in zip(seen, after[1:]))
          and np.array_equal(m.predict(X, batch_size=1), after[2]),
          "a fit's callback calls predict on the same object: no deadlock, the epoch's "
          "model, and the fit's own after it")
    m.close()

    m = frae.load(ck, threads=1)
    fitted = [threading.Event(), threading.Event()]
    torn = []

    def work(i):
        if i < 2:
            for _ in range(fits):
                m.fit(X, epochs=1, batch_size=2, verbose=0)
            fitted[i].set()
            return
        while not all(e.is_set() for e in fitted):
            y = m.predict(X, batch_size=1)
            if not any(np.array_equal(y, a) for a in after):
                torn.append(1)
    errors = in_threads(work)
    check(not errors, "fit from 2 threads and predict from 2 raise nothing",
          "; ".join(errors[:3]))
    got = m.get_weights()
    check(all(np.array_equal(a, b) for a, b in zip(got, final)),
          "fits from 2 threads end in the weights of %d serial fits" % (2 * fits))
    check(not torn, "every predict during the fits: the model after a whole number of fits",
          "%d torn" % len(torn))
    m.close()


def test_extension_model_alone(ck, ref, rounds=8):
    """The extension's own model (frae._frae.Model, under FRAE's lock in
    normal use) locks by itself: forward from 3 threads, close from one."""
    T = X.shape[1]
    want = ref["predict"]
    wrong, errors = [], []
    for r in range(rounds):
        raw = frae._frae.load(ck, 0, 1, 0, 1, 0)  # inference, batch 1, 1 thread
        delay = random.Random(r).uniform(0.0, 0.005)

        def work(i):
            if i == 0:
                threading.Event().wait(delay)
                raw.close()
                return
            y = np.empty((1, T, 8), np.float32)
            for k in range(5000):  # ends at the first "closed"
                s = k % len(X)
                try:
                    raw.forward(X[s:s + 1], y, 1, T)
                except frae.FraeError as e:
                    if "closed" not in str(e):
                        raise
                    return
                if not np.array_equal(y[0], want[s]):
                    wrong.append(s)
        errors += in_threads(work)
    check(not errors, "the extension's model: forward from 3 threads, close from one, "
          "only FraeError('closed')", "; ".join(errors[:3]))
    check(not wrong, "the extension's model: every forward the serial result",
          "%d wrong" % len(wrong))


def test_objects_in_parallel(ck, ref, calls=6):
    """One object per thread: the C calls really run at once (no lock in
    common), and each gives its serial result."""
    wrong = []
    models = [frae.load(ck, threads=1) for _ in range(N_THREADS)]

    def work(i):
        for k in range(calls):
            name = ("predict", "encode", "decode")[(i + k) % 3]
            if not same(CALLS[name](models[i], ref), ref[name]):
                wrong.append(name)
    errors = in_threads(work)
    for m in models:
        m.close()
    check(not errors and not wrong, "%d objects in %d threads at once: the serial results"
          % (N_THREADS, N_THREADS), "; ".join(errors[:3]) + " %d wrong" % len(wrong))


def main():
    # a deadlock (the bug this guards against) ends the run with every
    # thread's stack, not a hang
    faulthandler.dump_traceback_later(300, exit=True)
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "m.safetensors")
        m = frae.FRAE(**SMALL)
        m.fit(X, epochs=2, batch_size=4, verbose=0)  # weights away from the initial ones
        m.save(ck)
        m.close()
        ref = serial_refs(ck)
        test_calls_run_as_alone(ck, ref)
        test_close_during_calls(ck, ref)
        test_fits_run_one_at_a_time(ck)
        test_extension_model_alone(ck, ref)
        test_objects_in_parallel(ck, ref)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
