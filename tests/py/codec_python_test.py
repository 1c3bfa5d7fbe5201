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


def stdout_outputs(py, env, tmp, p):
    """python3 -m frae X ... -o - (and /dev/stdout): the frae command's
    standard output, byte for byte, and its exit code; no file named -,
    -.npy or /dev/stdout.npy; a name without .npy kept as given."""
    cases = (("encode", [WAV, "-o", "-"]), ("encode", [WAV, "-o", "/dev/stdout"]),
             ("features", [WAV, "-o", "-"]),  # refused by both: the header comes first
             ("features", [WAV, "--pitch", "-o", "/dev/stdout"]),  # stdout is a file here
             ("decode", [p("cli.fbs"), "-o", "-"]), ("decode", [p("cli.fbs"), "-o", "/dev/stdout"]),
             ("decode", [p("cli.fbs"), "--wav", "-"]),
             ("decode", [p("cli.fbs"), "-o", "-", "--wav", p("side.wav")]),
             ("decode", [p("cli.fbs"), "-o", "-", "--wav", "/dev/stdout"]),  # refused by both
             ("vocode", [p("g.npy"), "-o", "-"]))
    for cmd, args in cases:
        got = []
        for argv in ([FRAE], py):
            with open(p("out"), "wb") as out:  # stdout a regular file, as "> out"
                r = subprocess.run(argv + [cmd] + args, stdout=out, stderr=subprocess.PIPE,
                                   env=env, cwd=tmp)
            got.append((r.returncode, open(p("out"), "rb").read(), r.stderr.decode()))
        (rc_c, out_c, _), (rc_p, out_p, err_p) = got
        check(rc_c == rc_p and out_c == out_p and (rc_c != 0 or out_c),
              "python3 -m frae %s %s: the command's stdout bytes (%d), exit %d"
              % (cmd, " ".join(a if a.startswith(("-", "/dev/")) else os.path.basename(a)
                               for a in args), len(out_c), rc_c),
              "exit %d/%d, %d/%d bytes: %s" % (rc_c, rc_p, len(out_c), len(out_p), err_p))
    stray = [f for f in ("-", "-.npy", "out.npy") if os.path.exists(p(f))]
    check(not stray and not os.path.exists("/dev/stdout.npy"),
          "python3 -m frae ... -o -: no file named -, -.npy or /dev/stdout.npy", str(stray))
    r = subprocess.run(py + ["features", WAV, "-o", "/dev/stdout"], capture_output=True, env=env)
    check(r.returncode == 2 and not r.stdout and r.stderr.count(b"\n") == 1,
          "python3 -m frae features -o /dev/stdout into a pipe: refused in one line, exit 2 "
          "(as frae features)", r.stderr.decode())
    r = subprocess.run(py + ["decode", p("cli.fbs"), "-o", p("frames")], capture_output=True,
                       env=env)
    run(FRAE, "decode", p("cli.fbs"), "-o", p("frames-cli"))
    check(r.returncode == 0 and not os.path.exists(p("frames.npy")) and
          open(p("frames"), "rb").read() == open(p("frames-cli"), "rb").read(),
          "python3 -m frae decode -o NAME (no .npy): NAME itself, the command's bytes")
    for f in ("out", "frames", "frames-cli", "side.wav"):
        if os.path.exists(p(f)):
            os.unlink(p(f))


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
    stdout_outputs(py, env, tmp, p)
    open(p("forged.fbs"), "wb").write(bytes(forged))
    r = run(*py, "decode", p("forged.fbs"), "--wav", p("x.wav"), env=env)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "no installed model" in r.stderr
          and not os.path.exists(p("x.wav")),
          "python3 -m frae decode of a hash no model has: one line, exit 2", r.stderr)
    subprocess.run(["rm", "-rf", tmp])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
