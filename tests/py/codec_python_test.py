#!/usr/bin/python3
"""The Python codec over the shipped models (frae.Codec) and python3 -m
frae, against the frae command: the same stream bytes from a WAV, from its
samples and from its feature frames; the same decoded WAV; a variable-rate
stream decoded by the default Codec through the hash it names; python3 -m
frae encode / decode / models / features / vocode as the command's; bad
streams raise FraeError, and python3 -m frae exits 2 with one line.

Usage: codec_python_test.py [BUILD_DIR]   (the module from BUILD/python)"""
import os
import re
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


def decode_chunks_bit_identical(c, v, streams, p):
    """Codec.decode(stream), decode_chunks(stream) (chunks of an odd size,
    joined) and decode_to_wav: the old implementation's samples to the bit,
    vocode(decode(stream, frames=True)), through the vocoder (the shipped
    models, fixed and variable rate, with DTX) and through Griffin-Lim (a
    model without pitch); the WAVs the command's."""
    def same(a, b):
        return a.dtype == b.dtype == np.float32 and np.array_equal(a.view(np.uint32),
                                                                   b.view(np.uint32))
    for codec, s, what in streams:
        ref = frae.vocode(codec.decode(s, frames=True))
        y = codec.decode(s)
        chunks = list(codec.decode_chunks(s, chunk=777))
        check(same(y, ref) and same(np.concatenate(chunks), ref) and
              all(len(k) == 777 for k in chunks[:-1]) and 0 < len(chunks[-1]) <= 777,
              "decode / decode_chunks of %s: vocode(decode(frames=True))'s samples, "
              "bit for bit (%d samples)" % (what, len(ref)))
    open(p("chunks.fbs"), "wb").write(streams[0][1])
    run(FRAE, "decode", p("chunks.fbs"), "--wav", p("chunks-cli.wav"))
    n = c.decode_to_wav(p("chunks.fbs"), p("chunks.wav"))
    check(open(p("chunks.wav"), "rb").read() == open(p("chunks-cli.wav"), "rb").read() and
          n == len(c.decode(streams[0][1])),
          "decode_to_wav(path, wav): frae decode --wav's file, byte for byte")
    # Griffin-Lim: a model without pitch, its frames log-mel (untrained)
    m = frae.FRAE(frame_dim=80, history=4, latent=16, quantizer="binary", threads=1)
    feats = (16000, 80, 160, 400, 512, 0.0, 8000.0, 1e-7, 5.0, 5.0)
    m._any().save(p("gl.safetensors"), True,
                  {"features." + k: "%.9g" % v for k, v in zip(frae._FEATURE_KEYS, feats)})
    g = frae.Codec(p("gl.safetensors"))
    s = g.encode(frae.features(WAV)[:120])
    ref = frae.vocode(g.decode(s, frames=True))
    check(same(g.decode(s), ref) and same(np.concatenate(list(g.decode_chunks(s, 1000))), ref),
          "decode / decode_chunks without pitch (Griffin-Lim): vocode's samples, bit for bit")
    gen = c.decode_chunks(streams[0][1], chunk=1000)
    next(gen)
    c.model.close()
    try:
        next(gen)
        check(False, "decode_chunks after the model is closed raises FraeError")
    except frae.FraeError as e:
        check("closed" in str(e), "decode_chunks after the model is closed raises FraeError: %s"
              % e)


# the child's peak RSS, kB: a small wrapper runs it and reads RUSAGE_CHILDREN
# (so the test process's own pages never count in it)
PEAK = ("import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:])\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
CHILD = """import sys, numpy as np, frae
what, path = sys.argv[1], sys.argv[2]
c = frae.Codec()
s = open(path, "rb").read()
c._model_for(s)  # the stream's model loaded: the baseline's too
if what == "decode":
    y = c.decode(s)
    assert y.dtype == np.float32 and y.nbytes == 4 * ((len(y) - 240) // 160 * 160 + 240)
    open(path + ".bytes", "w").write(str(y.nbytes))
elif what == "chunks":
    n = sum(len(k) for k in c.decode_chunks(s, chunk=16000))
elif what == "wav":
    c.decode_to_wav(s, path + ".wav")
elif what == "tiny":
    c.decode(s)
"""


def peak_rss(env, *args):
    r = subprocess.run(["/usr/bin/python3", "-c", PEAK, "/usr/bin/python3", "-c", CHILD] +
                       list(args), capture_output=True, text=True, env=env)
    rc, kb = r.stdout.split()
    return int(rc), int(kb) * 1024


def decode_memory_bounded(env, p):
    """Codec.decode of a 300,000-frame stream (3,000 s of DTX silence from
    speech-vbr, 300 empty packets): peak RSS within the returned array plus
    the interpreter's, NumPy's and the model's baseline plus 64 MB (it held
    every frame and two copies of the samples: 514 MB); decode_chunks and
    decode_to_wav: no more peak for 60,000 frames than for 3,000."""
    make = ("import sys, numpy as np, frae\n"
            "v = frae.Codec('speech-vbr')\n"
            "for n, path in zip((300000, 60000, 3000, 10), sys.argv[1:]):\n"
            "    open(path, 'wb').write(v.model.encode(np.zeros((n, 82), np.float32),\n"
            "                                          silent=np.ones(n, bool)))\n")
    names = [p("f%d.fbs" % n) for n in (300000, 60000, 3000, 10)]
    subprocess.run(["/usr/bin/python3", "-c", make] + names, check=True, env=env)
    base = peak_rss(env, "tiny", names[3])[1]
    rc, peak = peak_rss(env, "decode", names[0])
    array = int(open(names[0] + ".bytes").read()) if rc == 0 else 0
    mb = 1 << 20
    check(rc == 0 and os.path.getsize(names[0]) < 20000 and array == 4 * 48000240 and
          peak <= base + array + 64 * mb,
          "decode of a 300,000-frame stream of %d bytes: peak RSS %.0f MB <= baseline %.0f MB "
          "+ the array %.0f MB + 64 MB" % (os.path.getsize(names[0]), peak / mb, base / mb,
                                           array / mb))
    for what in ("chunks", "wav"):
        (r1, short), (r2, long_) = peak_rss(env, what, names[2]), peak_rss(env, what, names[1])
        check(r1 == r2 == 0 and long_ - short < 16 * mb,
              "decode_%s: peak RSS for 60,000 frames %.1f MB, for 3,000 %.1f MB: no growth "
              "with the stream" % ("chunks" if what == "chunks" else "to_wav", long_ / mb,
                                   short / mb))


def codec_options_one_table(c, v, py, env, p):
    """Issue 47, item 1: the codec's options come from libfrae's one table:
    every row is an option of 'frae encode' or 'frae decode' (its --help)
    and of python3 -m frae's, and a keyword of Codec.encode/decode that
    gives the command's bytes; a row of the other end, or none, refused."""
    rows = frae.codec_options()
    helps = {side: run(FRAE, side, "--help").stdout + run(*py, side, "--help", env=env).stdout
             for side in ("encode", "decode")}
    listed = [k for k, (sides, _, _) in rows.items()
              if all(("--" + k.replace("_", "-")) in helps[s] for s in sides)]
    check(len(rows) >= 12 and len(listed) == len(rows),
          "frae.codec_options(): %d rows, each in frae's and python3 -m frae's --help of "
          "its end" % len(rows), str(sorted(set(rows) - set(listed))))
    same = []
    for model, opts, argv in (
            (c, {"packet_ms": 40, "resync_ms": 120, "resync_state": True},
             ["--packet-ms", "40", "--resync-ms", "120", "--resync-state"]),
            (c, {"search": 1}, ["--search", "1"]),
            (v, {"packet_ms": 60, "dtx": True}, ["--packet-ms", "60", "--dtx"])):
        run(FRAE, "encode", model.path, WAV, "-o", p("o.fbs"), *argv)
        same.append(model.encode(WAV, **opts) == open(p("o.fbs"), "rb").read())
    check(all(same), "Codec.encode(packet_ms=, resync_ms=, resync_state=, search=, dtx=): "
          "frae encode's bytes with the same options (%s)" % same)
    run(FRAE, "decode", p("cli.fbs"), "--wav", p("gl.wav"), "--vocoder", "gl",
        "--gl-iters", "4")
    c.decode(p("cli.fbs"), wav=p("pygl.wav"), vocoder="gl", gl_iters=4)
    check(open(p("pygl.wav"), "rb").read() == open(p("gl.wav"), "rb").read(),
          "Codec.decode(vocoder='gl', gl_iters=4): frae decode --vocoder gl --gl-iters 4's WAV")
    refused = []
    for call in (lambda: c.encode(WAV, through=True), lambda: c.decode(p("cli.fbs"), search=1),
                 lambda: c.encode(WAV, packet_mss=40), lambda: c.encode(WAV, search=17),
                 lambda: c.encode(WAV, packet_ms=45)):
        try:
            call()
            refused.append("none")
        except (TypeError, ValueError, frae.FraeError) as e:
            refused.append(type(e).__name__)
    check(refused == ["TypeError", "TypeError", "TypeError", "ValueError", "FraeError"],
          "an option of the other end, an unknown one, a bad value, a packet of 45 ms: "
          "refused (%s)" % refused)


def packets_from_python(c, v, p):
    """Real-time packets (stream version 5), clean and damaged, decoded by
    Codec.decode through libfrae's reader: frae decode's WAV and frames,
    byte for byte; a header with no packet refused."""
    import random
    same = []
    for model, through in ((c, False), (c, True), (v, False)):
        stream = bytearray(model.encode(WAV, packet_ms=40))
        rng = random.Random(7)
        for i in range(40, len(stream)):  # after the header: 1% bit errors
            for bit in range(8):
                if rng.random() < 0.01:
                    stream[i] ^= 1 << bit
        open(p("d5.fbs"), "wb").write(stream)
        extra = ["--through"] if through else []
        r = run(FRAE, "decode", model.path, p("d5.fbs"), "--wav", p("d5c.wav"), "-o",
                p("d5c.npy"), *extra)
        model.decode(bytes(stream), wav=p("d5p.wav"), through=through)
        frames = model.decode(bytes(stream), frames=True) if not through else None
        same.append(r.returncode == 0 and "concealed" in r.stderr and
                    open(p("d5p.wav"), "rb").read() == open(p("d5c.wav"), "rb").read() and
                    (frames is None or np.array_equal(frames, np.load(p("d5c.npy")))))
    check(all(same), "Codec.decode of 40 ms packets at 1%% bit errors (fixed, --through, "
          "variable rate): frae decode's WAV and frames to the byte (%s)" % same)
    head = c.encode(WAV, packet_ms=40)[:22]
    try:
        c.decode(head)
        ok = False
    except frae.FraeError as e:
        ok = "no packet follows" in str(e)
    check(ok, "Codec.decode of a version-5 header and no packet: FraeError")


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
    decode_chunks_bit_identical(c, v, [(c, s, "a speech stream"), (v, vs, "a speech-vbr stream"),
                                       (v, v.encode(WAV, dtx=True), "speech-vbr with DTX")], p)
    c = frae.Codec()
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
    with open(os.path.join(ROOT, "models", "MANIFEST")) as f:
        shipped = [line.split("\t")[0] for line in f if line.strip() and line[0] != "#"]
    check(r.returncode == 0 and all(m[:-len(".safetensors")] + " " in r.stdout
                                    for m in shipped) and
          r.stdout.count("trained on:") == len(shipped) and
          r.stdout.count("latency 52.5 ms") == len(shipped) - 2 and
          re.search(r"speech-vbr .*latency 62.5 ms", r.stdout) is not None and
          re.search(r"speech-3k2-vbr .*latency 62.5 ms", r.stdout) is not None,
          "python3 -m frae models: every model MANIFEST lists (%d), each with its data "
          "and its latency (the variable-rate ones' look-ahead 10 ms more)" % len(shipped),
          r.stdout + r.stderr)
    lat = {n: frae.load(os.path.join(ROOT, "models", n + ".safetensors")).latency
           for n in ("speech", "speech-vbr")}
    try:
        frae._frae.speech_latency(0, 80, 160, 400, 512, 0.0, 8000.0, 0)
        refused = False
    except ValueError:
        refused = True
    check(lat == {"speech": 52.5, "speech-vbr": 62.5} and refused and
          frae.FRAE(frame_dim=4, latent=2).latency is None,
          "m.latency: 52.5 ms (30 and the polish's 22.5), 62.5 with a frame of look-ahead, "
          "None without audio features; "
          "a bad sample rate is a ValueError", repr(lat))
    delays = [frae._frae.lookahead_delay(dict(family=1, lookahead=a, lookahead_packet=p))
              for a, p in ((0, 0), (3, 0), (4, 4), (2, 4))]
    check(delays == [0, 3, 1, 1],
          "the frames a look-ahead delays a packet by: its own, one when it stops at packets",
          repr(delays))
    r = run(*py, "features", WAV, "-o", p("f.npy"), "--pitch", env=env)
    run(FRAE, "features", WAV, "-o", p("g.npy"), "--pitch")
    check(r.returncode == 0 and np.array_equal(np.load(p("f.npy")), np.load(p("g.npy"))),
          "python3 -m frae features --pitch: the command's frames", r.stderr)
    for steps in ("yin", "yin-hp", "refined"):
        r = run(*py, "features", WAV, "-o", p("f-%s.npy" % steps), "--f0", steps, env=env)
        run(FRAE, "features", WAV, "-o", p("g-%s.npy" % steps), "--f0", steps)
        g = np.load(p("g-%s.npy" % steps))
        check(r.returncode == 0 and np.array_equal(np.load(p("f-%s.npy" % steps)), g) and
              np.array_equal(frae.features(WAV, f0=steps), g),
              "python3 -m frae features --f0 %s and features(f0=%r): the command's frames"
              % (steps, steps), r.stderr)
    check(not np.array_equal(np.load(p("g-yin.npy")), np.load(p("g-refined.npy"))),
          "--f0 yin is not the refined track (the test would not see a step ignored)")
    r = run(*py, "features", WAV, "-o", p("f-bad.npy"), "--f0", "aubio", env=env)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "yin-hp" in r.stderr and
          not os.path.exists(p("f-bad.npy")),
          "python3 -m frae features --f0 aubio: one line, exit 2, no file", r.stderr)
    for bad in ("aubio", 1, ""):
        try:
            frae.features(WAV, f0=bad)
            check(False, "features(f0=%r) raises ValueError" % (bad,))
        except ValueError as e:
            check("yin" in str(e), "features(f0=%r) raises ValueError: %s" % (bad, e))
    r = run(*py, "vocode", p("f.npy"), "-o", p("f.wav"), env=env)
    run(FRAE, "vocode", p("g.npy"), "-o", p("g.wav"))
    check(r.returncode == 0 and open(p("f.wav"), "rb").read() == open(p("g.wav"), "rb").read(),
          "python3 -m frae vocode: the command's WAV", r.stderr)
    stdout_outputs(py, env, tmp, p)
    codec_options_one_table(c, v, py, env, p)
    packets_from_python(c, v, p)
    decode_memory_bounded(env, p)
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
