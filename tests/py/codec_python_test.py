#!/usr/bin/python3
"""The Python codec over the shipped models (frae.Codec) and python3 -m
frae, against the frae command: the same stream bytes from a WAV, from its
samples and from its feature frames; the same decoded WAV; a variable-rate
stream decoded by the default Codec through the hash it names; python3 -m
frae encode / decode / models / features / vocode as the command's; bad
streams raise FraeError, and python3 -m frae exits 2 with one line.

Usage: codec_python_test.py [BUILD_DIR]   (the module from BUILD/python)"""
import os
import subprocess
import sys
import tempfile
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # tests/py -> the repository
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(HERE, ".."))  # tests/checks.py
import numpy as np  # noqa: E402
import frae  # noqa: E402
from checks import check, summary  # noqa: E402

FRAE = os.path.join(BUILD, "frae")
# the demo's held-out voice: from data/corpus when the user made it, else
# from a corpus made in the test's own directory (the checkout is left alone)
WAV = os.path.join(ROOT, "data", "corpus", "wav", "test", "005-0.wav")


def run(*cmd, env=None):
    return subprocess.run(list(cmd), capture_output=True, text=True, env=env)


def main():
    global WAV
    os.environ.pop("FRAE_MODELS", None)
    tmp = tempfile.mkdtemp(prefix="frae-codec-py-")
    p = lambda name: os.path.join(tmp, name)  # noqa: E731
    if not os.path.exists(WAV):
        subprocess.run(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"),
                        p("corpus"), FRAE], check=True, capture_output=True)
        WAV = p("corpus/wav/test/005-0.wav")
    found = frae.models()
    check(set(found) >= {"speech", "speech-vbr"} and
          found["speech"] == os.path.join(ROOT, "models", "speech.safetensors"),
          "frae.models(): the source tree's shipped models", str(found))
    c = frae.Codec()
    check(c.path == found["speech"], "frae.Codec(): the default, speech", c.path)
    run(FRAE, "encode", WAV, "-o", p("cli.fbs"))
    run(FRAE, "decode", p("cli.fbs"), "--wav", p("cli.wav"))
    cli = open(p("cli.fbs"), "rb").read()
    s = c.encode(WAV, fbs=p("py.fbs"))
    check(s == cli and open(p("py.fbs"), "rb").read() == cli,
          "Codec().encode(WAV): frae encode's bytes (and written to fbs=)")
    with wave.open(WAV) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    check(c.encode(x) == cli, "encode(samples): the same bytes")
    check(c.encode(frae.features(WAV, pitch=True)) == cli,
          "encode(feature frames [T, 82]): the same bytes")
    y = c.decode(s, wav=p("py.wav"))
    check(open(p("py.wav"), "rb").read() == open(p("cli.wav"), "rb").read(),
          "decode(stream, wav=): frae decode --wav's file, byte for byte")
    check(y.dtype == np.float32 and y.ndim == 1 and abs(len(y) / 16000 - 3.48) < 0.02,
          "decode returns the samples", "%s %s" % (y.dtype, y.shape))
    check(c.decode(p("cli.fbs"), frames=True).shape == (346, 82),
          "decode(path, frames=True): the decoded frames")
    v = frae.Codec("speech-vbr")
    vs = v.encode(WAV)
    run(FRAE, "encode", "speech-vbr", WAV, "-o", p("v.fbs"))
    check(vs == open(p("v.fbs"), "rb").read(), "Codec('speech-vbr'): frae encode speech-vbr's bytes")
    check(np.array_equal(c.decode(vs), v.decode(vs)),
          "the default Codec decodes a speech-vbr stream through its hash")
    forged = bytearray(s)
    forged[9] ^= 0x40
    for bad, what in ((bytes(forged), "a hash no model has"), (b"RIFF" + bytes(40), "not a stream"),
                      (s[:10], "a stream cut in its header")):
        try:
            c.decode(bad)
            check(False, "decode of %s raises FraeError" % what)
        except frae.FraeError as e:
            check("\n" not in str(e), "decode of %s raises FraeError: %s" % (what, e))
    try:
        frae.Codec("no-such-model")
        check(False, "Codec('no-such-model') raises")
    except frae.FraeError as e:
        check("no shipped model" in str(e), "Codec of an unknown name raises FraeError")

    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    py = ["/usr/bin/python3", "-m", "frae"]
    r1 = run(*py, "encode", WAV, "-o", p("m.fbs"), env=env)
    r2 = run(*py, "decode", p("m.fbs"), "--wav", p("m.wav"), env=env)
    check(r1.returncode == 0 and r2.returncode == 0 and
          open(p("m.fbs"), "rb").read() == cli and
          open(p("m.wav"), "rb").read() == open(p("cli.wav"), "rb").read(),
          "python3 -m frae encode IN -o / decode IN --wav: the command's bytes",
          r1.stderr + r2.stderr)
    r = run(*py, "models", env=env)
    check(r.returncode == 0 and "speech " in r.stdout and "speech-vbr" in r.stdout and
          r.stdout.count("trained on:") == 2, "python3 -m frae models", r.stdout + r.stderr)
    r = run(*py, "features", WAV, "-o", p("f.npy"), "--pitch", env=env)
    run(FRAE, "features", WAV, "-o", p("g.npy"), "--pitch")
    check(r.returncode == 0 and np.array_equal(np.load(p("f.npy")), np.load(p("g.npy"))),
          "python3 -m frae features --pitch: the command's frames", r.stderr)
    r = run(*py, "vocode", p("f.npy"), "-o", p("f.wav"), env=env)
    run(FRAE, "vocode", p("g.npy"), "-o", p("g.wav"))
    check(r.returncode == 0 and open(p("f.wav"), "rb").read() == open(p("g.wav"), "rb").read(),
          "python3 -m frae vocode: the command's WAV", r.stderr)
    open(p("forged.fbs"), "wb").write(bytes(forged))
    r = run(*py, "decode", p("forged.fbs"), "--wav", p("x.wav"), env=env)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "no installed model" in r.stderr
          and not os.path.exists(p("x.wav")),
          "python3 -m frae decode of a hash no model has: one line, exit 2", r.stderr)
    fifo_refused(tmp, p, c, py, env)
    many_models(tmp, p, vs, v.decode(vs, frames=True), py, env)
    subprocess.run(["rm", "-rf", tmp])
    return summary()


def fifo_refused(tmp, p, c, py, env):
    """Issue 46, item 4: a FIFO as the stream is refused at once, as frae
    decode refuses it, not opened to wait for a writer."""
    import threading
    import time
    fifo = p("fifo")
    os.mkfifo(fifo)
    result = []

    def decode():
        try:
            c.decode(fifo)
            result.append("decoded")
        except frae.FraeError as e:
            result.append(str(e))
    t = threading.Thread(target=decode, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(timeout=30)
    check(not t.is_alive() and result == ["%s: not a regular file" % fifo],
          "Codec().decode(FIFO path) raises FraeError at once (%.2f s)" % (time.monotonic() - t0),
          "hung" if t.is_alive() else str(result))
    for args in ((fifo, "--wav", p("y.wav")), ("speech", fifo, "--wav", p("y.wav"))):
        try:
            r = subprocess.run(py + ["decode", *args], capture_output=True, text=True, env=env,
                               timeout=60)
            ok = (r.returncode == 2 and r.stderr.count("\n") == 1 and
                  "not a regular file" in r.stderr and not os.path.exists(p("y.wav")))
            detail = r.stderr
        except subprocess.TimeoutExpired:
            ok, detail = False, "hung"
        check(ok, "python3 -m frae decode %s: one line, exit 2"
              % " ".join(os.path.basename(a) for a in args), detail)


def many_models(tmp, p, vs, want, py, env):
    """Issue 46, item 6: a models directory of 71 (69 small decoys that
    record their hash, speech, which records none, and speech-vbr last in
    name order): the default Codec decodes a speech-vbr stream, found by
    its hash, loading two models, not 71."""
    import time
    d = p("many")
    os.mkdir(d)
    r = run(FRAE, "convert", os.path.join(ROOT, "models", "speech-vbr.safetensors"), "-o",
            os.path.join(d, "zz-speech-vbr.safetensors"), "--weights", "bf16")
    np.save(p("d6.npy"), np.zeros((2, 20, 6), np.float32))
    r2 = run(FRAE, "train", p("d6.npy"), "--frame-dim", "6", "--epochs", "1", "--save",
             p("decoy.safetensors"), "--progress", "off")
    check(r.returncode == 0 and r2.returncode == 0, "a models directory of 71",
          r.stderr + r2.stderr)
    for i in range(69):
        os.symlink(p("decoy.safetensors"), os.path.join(d, "a%02d.safetensors" % i))
    os.symlink(os.path.join(ROOT, "models", "speech.safetensors"),
               os.path.join(d, "speech.safetensors"))
    os.environ["FRAE_MODELS"] = d
    try:
        c = frae.Codec()
        t0 = time.monotonic()
        y = c.decode(vs, frames=True)
        dt = time.monotonic() - t0
        check(np.array_equal(y, want) and len(c._loaded) == 2 and dt < 10,
              "71 models: the default Codec finds the stream's, last in name order, "
              "loading 2 (%.2f s)" % dt, "%d loaded" % len(c._loaded))
    finally:
        del os.environ["FRAE_MODELS"]
    open(p("vs.fbs"), "wb").write(vs)
    r = run(*py, "decode", p("vs.fbs"), "-o", p("vs.npy"), env=dict(env, FRAE_MODELS=d))
    check(r.returncode == 0 and np.array_equal(np.load(p("vs.npy")), want),
          "python3 -m frae decode among 71 models", r.stderr)
    r = run(FRAE, "decode", p("vs.fbs"), "-o", p("vs2.npy"), env=dict(os.environ, FRAE_MODELS=d))
    check(r.returncode == 0 and np.array_equal(np.load(p("vs2.npy")), want),
          "frae decode among 71 models", r.stderr)


if __name__ == "__main__":
    sys.exit(main())
