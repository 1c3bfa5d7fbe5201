#!/usr/bin/python3
"""Hostile inputs: every file frae reads, malformed by hand, must be
refused with exit 2 and one line on stderr saying what was wrong, in
under 10 s and (uninstrumented) 512 MB of peak RSS, leaving nothing
behind.  One regression case per defect found (issue 10), plus the
bounded-memory audio path and output permissions.

Also a module: fuzz/make_seeds.py takes the hostile files from here.

Usage: hostile_test.py path/to/frae     Prints "N passed, N failed" last."""
import json
import math
import os
import re
import shutil
import signal
import stat
import struct
import zlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary  # noqa: E402

FRAE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/frae")
# sanitizer builds: shadow memory and slower code; the bars are for the
# plain build, the sanitizers check the same inputs for memory errors
SANITIZED = "asan" in FRAE
RSS_LIMIT_MB = 512
TIME_LIMIT_S = 10.0



def run(args, cwd, umask=None):
    """Runs frae in a helper process so that the peak RSS is this run's."""
    helper = r"""
import os, resource, subprocess, sys, time, json
umask = json.loads(sys.argv[1]); args = json.loads(sys.argv[2])
def pre():
    if umask is not None: os.umask(umask)
t0 = time.monotonic()
try:
    p = subprocess.run(args, capture_output=True, preexec_fn=pre, timeout=120,
                       stdin=subprocess.DEVNULL)
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired as e:  # a hang: killed, and told
    rc, out, err = -999, e.stdout or b"", b"timed out after 120 s (hung)"
dt = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
print(json.dumps([rc, out.decode(errors="replace"), err.decode(errors="replace"), dt, rss]))
"""
    p = subprocess.run([sys.executable, "-c", helper, json.dumps(umask),
                        json.dumps([FRAE] + [str(a) for a in args])],
                       capture_output=True, text=True, cwd=cwd)
    rc, out, err, dt, rss = json.loads(p.stdout)
    return rc, out, err, dt, rss


def refused(tmp, what, args, needle, code=2):
    """The case's bar: exit code, one line containing needle, time, RSS."""
    rc, out, err, dt, rss = run(args, tmp)
    lines = err.strip().splitlines()
    ok = rc == code and len(lines) == 1 and needle in lines[0]
    bars = dt < TIME_LIMIT_S and (SANITIZED or rss < RSS_LIMIT_MB)
    if ok and os.environ.get("FRAE_HOSTILE_SHOW"):
        print("         " + lines[0])
    check(ok and bars, "%s: exit %d, one line (%.2f s, %.0f MB)" % (what, code, dt, rss),
          "rc %d, %d lines, wanted '%s': %s" % (rc, len(lines), needle, err.strip()[:400]))
    return lines[0] if lines else ""


# ---- file builders (also used by fuzz/make_seeds.py) ------------------------

def hostile_npz(kind):
    """A small .npz of one deflated 64 KiB member, then edited: bomb (its
    sizes claim 3 GB), liar (it claims 1 KiB), crc (a payload byte
    flipped; crcstored: the same, stored), method (a compression frae does
    not read), dup (two members of one name: np.load takes the last)."""
    import io
    import zipfile
    buf = io.BytesIO()
    method = zipfile.ZIP_STORED if kind == "crcstored" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        z.writestr("arr_0.npy", b"\x93NUMPY" + bytes(65536))
        if kind == "dup":
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Duplicate name"
                z.writestr("arr_0.npy", b"\x93NUMPY" + bytes(64))
    if kind == "dup":
        return buf.getvalue()
    raw = bytearray(buf.getvalue())
    loc, cen = raw.find(b"PK\x03\x04"), raw.find(b"PK\x01\x02")
    if kind in ("bomb", "liar"):
        size = 3 * 10**9 if kind == "bomb" else 1024
        struct.pack_into("<I", raw, loc + 22, size)
        struct.pack_into("<I", raw, cen + 24, size)
    elif kind in ("crc", "crcstored"):
        at = loc + 30 + struct.unpack_from("<H", raw, loc + 26)[0] + 5
        raw[at] ^= 0x40
    else:
        struct.pack_into("<H", raw, loc + 8, 12)
        struct.pack_into("<H", raw, cen + 10, 12)
    return bytes(raw)


def wav_bytes(x, rate, kind):
    """A WAV of samples x ([n] or [n, channels]): pcm16 or float (IEEE)."""
    import numpy as np
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    ch = x.shape[1]
    if kind == "pcm16":
        data = (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()
        fmt, width = 1, 2
    else:
        data = x.astype("<f4").tobytes()
        fmt, width = 3, 4
    fmt_chunk = struct.pack("<HHIIHH", fmt, ch, rate, rate * ch * width, ch * width, 8 * width)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt_chunk)) + fmt_chunk
    if fmt == 3:  # float WAVs carry a fact chunk
        body += b"fact" + struct.pack("<II", 4, x.shape[0])
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def sparse_wav(path, seconds, rate=16000):
    """A 16-bit WAV of the given length: one second of tone, then a hole
    (a sparse file: it takes no disk)."""
    n = int(seconds * rate)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        f.write(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                         for i in range(rate)))
        f.truncate(44 + 2 * n)


def fnv1a64(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def st_read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def st_write(path, header, data, version=2):
    """A safetensors file with frae's checksum made anew (version 2: the
    header fields and the data; 1: the data only), as a forger would."""
    u64 = lambda v: struct.pack("<Q", v)  # noqa: E731
    h = 0xcbf29ce484222325
    meta = header.get("__metadata__", {})
    if version >= 2:
        for name, t in header.items():
            if name == "__metadata__":
                continue
            h = fnv1a64(name.encode() + b"\0" + t["dtype"].encode() + b"\0" + u64(len(t["shape"]))
                        + b"".join(u64(d) for d in t["shape"])
                        + u64(t["data_offsets"][0]) + u64(t["data_offsets"][1]), h)
        for k, v in meta.items():
            if k != "frae.checksum":
                h = fnv1a64(k.encode() + b"\0" + v.encode() + b"\0", h)
    h = fnv1a64(data, h)
    if "__metadata__" in header:
        meta["frae.checksum"] = "fnv1a64:%016x" % h
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + data)


def edited(src, dst, meta=None, drop_tensors=False, version=None, data_edit=None):
    header, data = st_read(src)
    if drop_tensors:
        header = {"__metadata__": header["__metadata__"]}
        data = b""
    for k, v in (meta or {}).items():
        if v is None:
            header["__metadata__"].pop(k, None)
        else:
            header["__metadata__"][k] = v
    if data_edit:
        data = data_edit(header, bytearray(data))
    if version:
        header["__metadata__"]["frae.format_version"] = str(version)
    st_write(dst, header, bytes(data), version or 2)


def npy_header_only(text):
    """A .npy whose header (declared length exact) ends with text."""
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


HOSTILE_NPY = {
    # headers that stop where the parser once read on past them
    "fortran_cut.npy": b"{'descr': '<f4', 'fortran_order': Fals",
    "true_cut.npy": b"{'descr': '<f4', 'fortran_order': Tr",
    "shape_cut.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4",
    "shape_digits.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (123456789",
    "descr_cut.npy": b"{'descr': '<f",
    # a dimension of 19 digits (the digit parser once overflowed)
    "shape_19_digits.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (9999999999999999999, 1), }",
    # nine dimensions (the parser once wrote the ninth past its array)
    "nine_dims.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
    # a dtype that would have put a line break in the message
    "newline_dtype.npy": b"{'descr': '<f\n4', 'fortran_order': False, 'shape': (1, 1), }",
    # a repeated key: NumPy takes the last value (big-endian here), frae
    # once took the first; it refuses the header now (issue 33, item 7)
    "dup_descr.npy": b"{'descr': '<f4', 'descr': '>f4', 'fortran_order': False, 'shape': (1, 1), }",
    # a key NumPy refuses, and a key's name inside another's value
    "extra_key.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), 'x': 1}",
    "key_in_value.npy": b"{'descr': 'shape', 'fortran_order': False, 'shape': (1, 1), }",
    # (4) is a number to Python, not a shape tuple
    "shape_not_tuple.npy": b"{'descr': '<f4', 'fortran_order': False, 'shape': (4) }",
}
NPY_NEEDLES = {"dup_descr.npy": "repeats the key 'descr'", "extra_key.npy": "key 'x'",
               "key_in_value.npy": "dtype 'shape'", "shape_not_tuple.npy": "bad 'shape'"}


def tiny_zip64():
    """A zip64 end-of-central-directory locator in a file shorter than the
    zip64 record it points at (the npz reader once wrapped around)."""
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    loc = struct.pack("<IIQI", 0x07064B50, 0, 1 << 40, 1)
    return b"PK\x03\x04" + loc + eocd


def zip64_past_int64():
    """A zip64 locator whose record offset is past 2^63: libzip refuses it
    with a system error, whose message it allocates inside the caller's
    zip_error_t (the npz reader once leaked it; the fuzzer found it)."""
    loc = struct.pack("<IIQI", 0x07064B50, 0, 0xFFFFFFFFFFFFFFF0, 1)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0, 0, 0, 0, 0)
    return b"PK\x03\x04" + bytes(26) + loc + eocd


def huge_model_checkpoint(good, dst):
    """1 KB of metadata declaring a model of billions of parameters, and no
    tensors (frae info once took 250 s and 14 GB on it)."""
    edited(good, dst, {"frae.frame_dim": "2000000", "frae.enc_hidden": "60000,60000",
                       "frae.dec_hidden": "60000,60000", "frae.history": "8"},
           drop_tensors=True)


def empty_packets(ref, frames, packet_frames, packets=None):
    """A version-4 stream for the model of ref (a stream of it: its flags
    and hash), one sequence declaring `frames` frames in packets of
    packet_frames frames, every payload empty: 3 bytes a packet with a valid
    CRC, which an encoder sure of every code could write.  Only the first
    `packets` packets if given."""
    import binascii

    def varint(v):
        b = bytearray()
        while v >= 0x80:
            b.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(b + bytes([v]))
    head = b"FRAEBS" + bytes([4, ref[7] | 1]) + ref[8:16] + varint(1) + varint(frames) + \
        varint(packet_frames)
    want = (frames + packet_frames - 1) // packet_frames
    body = b"".join(b"\0" + struct.pack("<H", binascii.crc_hqx(head + b"\0" + struct.pack("<I", k),
                                                               0xFFFF))
                    for k in range(want if packets is None else packets))
    return head + body


def fuzz_seeds(tmp, checkpoint):
    """(target, name, bytes) of the hostile files, for the fuzz corpora."""
    seeds = [("npz", "hostile_tiny_zip64.npz", tiny_zip64()),
             ("npz", "hostile_zip64_efbig.npz", zip64_past_int64())]
    for kind in ("bomb", "liar", "crc", "crcstored", "method", "dup"):
        seeds.append(("npz", "hostile_%s.npz" % kind, hostile_npz(kind)))
    for name, text in HOSTILE_NPY.items():
        seeds.append(("npy", "hostile_" + name, npy_header_only(text)))
    p = os.path.join(tmp, "huge.safetensors")
    huge_model_checkpoint(checkpoint, p)
    seeds.append(("safetensors", "hostile_huge_model.safetensors", open(p, "rb").read()))
    nan = [0.1, float("nan"), -0.2] * 200
    seeds.append(("audio", "hostile_nan.wav", wav_bytes(nan, 16000, "float")))
    huge = [0.1, 3.4e38, -3.4e38] * 200
    seeds.append(("audio", "hostile_huge_samples.wav", wav_bytes(huge, 16000, "float")))
    return seeds


# ---- the cases ----------------------------------------------------------------

def main():
    import numpy as np
    tmp = tempfile.mkdtemp(prefix="frae-hostile-")
    p = lambda name: os.path.join(tmp, name)  # noqa: E731
    small = ["--frame-dim", "6", "--history", "2", "--enc", "16", "--latent", "4",
             "--dec", "16", "--quantizer", "uniform:4"]
    rng = np.random.default_rng(5)
    data = (0.5 * np.sin(np.arange(6 * 40 * 6).reshape(6, 40, 6) * 0.05)).astype("<f4")
    np.save(p("data.npy"), data)
    rc, _, err, _, _ = run(["train", "data.npy", *small, "--epochs", "1", "--batch", "2",
                            "--window", "16", "--save", "good.safetensors", "--progress",
                            "off"], tmp)
    if rc:
        print("    FAIL cannot train the reference model: " + err)
        print("0 passed, 1 failed")
        return 1
    good = p("good.safetensors")

    def trained(name, what, *extra):
        """A small model trained for one epoch with extra options, saved as
        name; checked to train.  Returns its path."""
        rc, _, err, _, _ = run(["train", "data.npy", *small, *extra, "--epochs", "1",
                                "--batch", "2", "--window", "16", "--save", name,
                                "--progress", "off"], tmp)
        check(rc == 0, what, err)
        return p(name)

    print("== .npz: zip64 records outside the file (defect 1)")
    open(p("tiny.npz"), "wb").write(tiny_zip64())
    refused(tmp, "a 46-byte zip64 .npz", ["import", "tiny.npz", "-o", "x.safetensors"],
            "not a .npz (zip) file")
    open(p("efbig.npz"), "wb").write(zip64_past_int64())
    refused(tmp, "a zip64 record past 2^63 (no leak under the sanitizers)",
            ["import", "efbig.npz", "-o", "x.safetensors"],
            "not a .npz (zip) file: Seek error")

    print("== .npz through libzip: sizes checked before inflating, CRCs, lies")
    for name, what, needle in (
            ("bomb.npz", "a member declaring 3 GB from 88 bytes", "more than its compression"),
            ("liar.npz", "a member inflating past its declared size", "more than its declared"),
            ("crc.npz", "a deflated member with a flipped byte", "corrupted"),
            ("crcstored.npz", "a stored member with a flipped byte", "CRC error"),
            ("method.npz", "a bzip2 member", "compression method 12"),
            ("dup.npz", "two members of one name (libzip refuses it)", "File already exists")):
        open(p(name), "wb").write(hostile_npz(name.split(".")[0]))
        refused(tmp, what, ["import", name, "-o", "x.safetensors"], needle)

    print("== .npy: headers that end where the parser read on (defect 2), odd bytes")
    for name, text in HOSTILE_NPY.items():
        open(p(name), "wb").write(npy_header_only(text))
        refused(tmp, name, ["train", name, *small, "--save", "none"],
                NPY_NEEDLES.get(name, name))
        refused(tmp, name + " to predict", ["predict", "good.safetensors", name, "-o", "y.npy"],
                NPY_NEEDLES.get(name, name))

    print("== checkpoints: sizes checked against the tensors before allocating (defect 3)")
    huge_model_checkpoint(good, p("huge.safetensors"))
    for cmd in (["info", "huge.safetensors"],
                ["predict", "huge.safetensors", "data.npy", "-o", "y.npy"],
                ["encode", "huge.safetensors", "data.npy", "-o", "y.fbs"],
                ["convert", "huge.safetensors", "-o", "c.safetensors", "--weights", "bf16"],
                ["train", "data.npy", "--resume", "huge.safetensors", "--save", "none"]):
        refused(tmp, "a huge declared model, no tensors: frae " + cmd[0], cmd,
                "tensor 'enc.0.weight' missing")
    edited(good, p("empty.safetensors"), drop_tensors=True)
    refused(tmp, "no tensors at all: frae info", ["info", "empty.safetensors"], "missing")
    edited(good, p("shape.safetensors"), {"frae.latent_dim": "5"})
    refused(tmp, "metadata and tensors disagree", ["info", "shape.safetensors"],
            "should be a float")

    def put_nan(header, data):
        t = header["dec.0.weight"]
        struct.pack_into("<f", data, t["data_offsets"][0] + 4 * 7, float("nan"))
        return data
    edited(good, p("nanw.safetensors"), data_edit=put_nan)
    refused(tmp, "a NaN weight", ["predict", "nanw.safetensors", "data.npy", "-o", "y.npy"],
            "'dec.0.weight' has NaN at [0, 7]")
    edited(good, p("feat.safetensors"), {
        "features.sample_rate": "16000", "features.n_mels": "1e300", "features.hop": "160",
        "features.win": "400", "features.n_fft": "512", "features.fmin": "0",
        "features.fmax": "8000", "features.floor": "1e-07", "features.offset": "5",
        "features.scale": "5"})
    refused(tmp, "absurd audio feature metadata", ["info", "feat.safetensors"],
            "features.n_mels")
    # frae models lists it with the rest (a listing goes on past a bad file)
    os.mkdir(p("featdir"))
    shutil.copy(p("feat.safetensors"), p("featdir/feat.safetensors"))
    os.environ["FRAE_MODELS"] = p("featdir")
    try:
        rc, out, err, _, _ = run(["models"], tmp)
    finally:
        del os.environ["FRAE_MODELS"]
    check(rc == 0 and "latency unknown: its audio feature metadata is bad" in out and
          "features.n_mels" in err and "latency 52.5" not in out,
          "frae models over absurd audio feature metadata: the latency said unknown, "
          "stderr says why", out + err)
    # python3 -m frae models (the module beside the binary) alike, and on
    # past a file that does not load at all (a sanitized build's module
    # needs its runtime preloaded: the plain build's run checks this)
    pydir = os.path.join(os.path.dirname(FRAE), "python")
    if not SANITIZED and os.path.isdir(os.path.join(pydir, "frae")):
        with open(p("featdir/a-junk.safetensors"), "wb") as f:
            f.write(os.urandom(3000))
        r = subprocess.run([sys.executable, "-m", "frae", "models"], capture_output=True,
                           text=True, timeout=120, env=dict(
                               os.environ, FRAE_MODELS=p("featdir"), PYTHONPATH=pydir))
        check(r.returncode == 0 and re.search(r"(?m)^  a-junk +does not load", r.stdout) and
              re.search(r"(?m)^  feat +", r.stdout) and "latency 52.5" not in r.stdout and
              "a-junk.safetensors" in r.stderr and "features.n_mels" in r.stderr,
              "python3 -m frae models goes on past a file that does not load and one "
              "with absurd audio feature metadata, stderr says why", r.stdout + r.stderr)
    # the old (version 1) checksum covers the data alone: still read
    edited(good, p("v1.safetensors"), version=1)
    rc, out, err, _, _ = run(["info", "v1.safetensors"], tmp)
    check(rc == 0 and "format 1" in out, "a version 1 checkpoint still opens", err)

    print("== normalization and pitch: statistics and coders in the metadata")
    norm = trained("norm.safetensors", "a normalizing model trains", "--normalize", "on")
    for what, meta, needle in (
            ("a std of 0", {"frae.norm_std": "1,1,0,1,1,1"}, "value 3 of 6"),
            ("a NaN mean", {"frae.norm_mean": "0,nan,0,0,0,0"}, "value 2 of 6"),
            ("five values for six bands", {"frae.norm_std": "1,1,1,1,1"}, "has 5 values"),
            ("seven values for six bands", {"frae.norm_mean": "0,0,0,0,0,0,0"},
             "more than 6 values"),
            ("a huge mean", {"frae.norm_mean": "0,0,1e300,0,0,0"}, "value 3 of 6"),
            ("statistics gone", {"frae.norm_std": None}, "frae.norm_std' missing"),
            ("an unknown normalization", {"frae.normalize": "per-utterance"},
             "frae.normalize"),
            ("an unknown pitch coder", {"frae.pitch": "f0-8bit"}, "frae.pitch"),
            ("the range-coded pitch coder without a prior",
             {"frae.pitch": "f0-voicing-ranged"}, "needs pitch and a prior"),
            ("the envelope pitch coder without a prior",
             {"frae.pitch": "f0-voicing-envelope"}, "needs pitch and a prior")):
        edited(norm, p("n.safetensors"), meta)
        refused(tmp, what, ["predict", "n.safetensors", "data.npy", "-o", "y.npy"], needle)
    np.save(p("stats.npy"), np.ones((3, 6), "<f4"))
    refused(tmp, "--normalize with a [3, 6] file",
            ["train", "data.npy", *small, "--normalize", "stats.npy", "--save", "none"],
            "should be [2, 6]")
    st = np.ones((2, 6), "<f4")
    st[1, 4] = 0
    np.save(p("stats.npy"), st)
    refused(tmp, "--normalize with a zero std",
            ["train", "data.npy", *small, "--normalize", "stats.npy", "--save", "none"],
            "band 4 has std 0")
    refused(tmp, "--pitch without audio",
            ["train", "data.npy", *small, "--pitch", "--save", "none"], "--pitch")
    refused(tmp, "--normalize when resuming",
            ["train", "data.npy", "--resume", "norm.safetensors", "--normalize", "off",
             "--save", "none"], "--normalize cannot be combined")
    # a stream with unknown flags, and a pitch stream for a model without pitch
    rc, _, err, _, _ = run(["encode", "good.safetensors", "data.npy", "-o", "g.fbs"], tmp)
    check(rc == 0, "the reference model encodes", err)
    fbs = bytearray(open(p("g.fbs"), "rb").read())
    for flags, needle in ((0x04, "unknown bits"), (0x02, "truncated")):
        bad = bytearray(fbs)
        bad[7] |= flags
        struct.pack_into("<I", bad, len(bad) - 4, zlib.crc32(bytes(bad[:-4])))
        open(p("bad.fbs"), "wb").write(bad)
        refused(tmp, "stream flags 0x%02x" % bad[7],
                ["decode", "good.safetensors", "bad.fbs", "-o", "y.npy"], needle)

    print("== the encoder's look-ahead: its metadata, tensors and option")
    ahead = trained("ahead.safetensors", "a model with look-ahead trains", "--family", "gru",
                    "--history", "0", "--lookahead", "2")
    for what, meta, needle in (
            ("a look-ahead of 0 recorded", {"frae.lookahead": "0"}, "frae.lookahead"),
            ("a look-ahead past 8 frames", {"frae.lookahead": "9"}, "frae.lookahead"),
            ("a look-ahead that is not a number", {"frae.lookahead": "two"},
             "frae.lookahead"),
            ("a look-ahead its tensors do not have", {"frae.lookahead": "1"},
             "'enc.0.weight_ih' should be a float"),
            ("look-ahead tensors without their metadata", {"frae.lookahead": None},
             "'enc.0.weight_ih' should be a float"),
            ("look-ahead packets of 0 recorded", {"frae.lookahead_packet": "0"},
             "frae.lookahead_packet"),
            ("look-ahead packets past 8 frames", {"frae.lookahead_packet": "9"},
             "frae.lookahead_packet"),
            ("look-ahead packets shorter than the look-ahead", {"frae.lookahead_packet": "1"},
             "look-ahead packets")):
        edited(ahead, p("ah.safetensors"), meta)
        refused(tmp, what, ["encode", "ah.safetensors", "data.npy", "-o", "v.fbs"], needle)
    refused(tmp, "--lookahead 9",
            ["train", "data.npy", *small, "--family", "gru", "--history", "0",
             "--lookahead", "9", "--save", "none"], "--lookahead")
    refused(tmp, "--lookahead on a dense model",
            ["train", "data.npy", *small, "--lookahead", "1", "--save", "none"],
            "GRU family only")
    refused(tmp, "--lookahead-packet without a look-ahead",
            ["train", "data.npy", *small, "--family", "gru", "--history", "0",
             "--lookahead-packet", "4", "--save", "none"], "look-ahead packets")

    print("== a learned prior: its metadata, tensors and options")
    prior = trained("prior.safetensors", "a model with a prior trains", "--rate-lambda", "0.01",
                    "--prior", "5")
    for what, meta, needle in (
            ("a prior of width 0", {"frae.prior_hidden": "0"}, "frae.prior_hidden"),
            ("a prior width that is not a number", {"frae.prior_hidden": "five"},
             "frae.prior_hidden"),
            ("a prior width its tensors do not have", {"frae.prior_hidden": "9"},
             "prior.0.weight' should be a float [9, 12] matrix"),
            ("a negative rate lambda", {"frae.rate_lambda": "-1"}, "rate lambda"),
            ("a rate lambda without a prior", {"frae.prior_hidden": None},
             "needs a prior")):
        edited(prior, p("pr.safetensors"), meta)
        refused(tmp, what, ["predict", "pr.safetensors", "data.npy", "-o", "y.npy"], needle)
    def non_causal(header, data):  # logit column 1 sees code 1: its own unit's, or later
        t = header["prior.2.weight"]
        struct.pack_into("<f", data, t["data_offsets"][0] + 4 * (t["shape"][1] + 1), 0.5)
        return data
    edited(prior, p("ar.safetensors"), data_edit=non_causal)
    refused(tmp, "an autoregression weight that sees a code not yet coded",
            ["encode", "ar.safetensors", "data.npy", "-o", "v.fbs"],
            "'prior.2.weight' is 0.5 at [1, 1]")
    edited(prior, p("ar.safetensors"), {"frae.prior_ar": "across-frames"})
    refused(tmp, "an unknown prior autoregression", ["info", "ar.safetensors"],
            "frae.prior_ar")
    edited(good, p("ar.safetensors"), {"frae.prior_ar": "within-frame"})
    refused(tmp, "an autoregression without a prior", ["info", "ar.safetensors"],
            "needs a prior")
    refused(tmp, "--prior-ar maybe",
            ["train", "data.npy", *small, "--prior-ar", "maybe", "--save", "none"],
            "--prior-ar")
    refused(tmp, "--rate-lambda with unquantized codes",
            ["train", "data.npy", *small, "--quantizer", "none", "--rate-lambda", "0.01",
             "--save", "none"], "needs the binary or a uniform quantizer")
    refused(tmp, "--prior on a dense model with no fed-back frames",
            ["train", "data.npy", *small, "--history", "0", "--prior", "8", "--save", "none"],
            "history K > 0")
    refused(tmp, "--rate-lambda -1",
            ["train", "data.npy", *small, "--rate-lambda", "-1", "--save", "none"],
            "--rate-lambda expects a number")
    # the level term (docs/2026-12-04-loudness.md): a weight in [0, 1e6]
    refused(tmp, "--level-loss -1",
            ["train", "data.npy", *small, "--level-loss", "-1", "--save", "none"],
            "--level-loss expects a number")
    # the squared error's emphasis: a weight in [0, 1000] on values inside the frame
    refused(tmp, "--emphasis -1",
            ["train", "data.npy", *small, "--emphasis", "-1", "--save", "none"],
            "--emphasis expects a number")
    refused(tmp, "--emphasis past the frame",
            ["train", "data.npy", *small, "--emphasis", "2", "--emphasis-to", "999",
             "--save", "none"], "emphasis must weigh values")
    refused(tmp, "--emphasis over no values",
            ["train", "data.npy", *small, "--emphasis", "2", "--save", "none"],
            "emphasis must weigh values")
    for what, meta, needle in (
            ("an emphasis past the frame", {"frae.emphasis": "2", "frae.emphasis_from": "0",
                                            "frae.emphasis_to": "1000000"},
             "emphasis must weigh values"),
            ("an emphasis of nan", {"frae.emphasis": "nan", "frae.emphasis_from": "0",
                                    "frae.emphasis_to": "1"}, "emphasis"),
            ("an emphasis without its range", {"frae.emphasis": "2"}, "frae.emphasis_from"),
            ("a negative level loss", {"frae.level_loss": "-1", "frae.level_scale": "5"},
             "level loss"),
            ("a level loss without its scale", {"frae.level_loss": "0.1"},
             "frae.level_scale"),
            ("a level scale of 1e9", {"frae.level_loss": "0.1", "frae.level_scale": "1e9"},
             "level scale")):
        edited(prior, p("lv.safetensors"), meta)
        refused(tmp, what, ["info", "lv.safetensors"], needle)
    refused(tmp, "--packet-frames 0",
            ["encode", "prior.safetensors", "data.npy", "-o", "v.fbs", "--packet-frames", "0"],
            "--packet-frames expects an integer")
    refused(tmp, "--search 17",
            ["encode", "prior.safetensors", "data.npy", "-o", "v.fbs", "--search", "17"],
            "--search expects an integer")
    refused(tmp, "--search-lambda -1",
            ["encode", "prior.safetensors", "data.npy", "-o", "v.fbs", "--search", "1",
             "--search-lambda", "-1"], "--search-lambda expects a number")
    trained("raw.safetensors", "a model with raw float latents trains", "--quantizer", "none")
    refused(tmp, "--search on raw float latents",
            ["encode", "raw.safetensors", "data.npy", "-o", "v.fbs", "--search", "1"],
            "no quantizer")
    refused(tmp, "--search given to frae decode",
            ["decode", "prior.safetensors", "v.fbs", "-o", "y.npy", "--search", "1"],
            "--search is an option of 'frae encode'")
    for bad in ("101", "-1", "two"):  # the vocoder's polish: 0..100 rounds
        refused(tmp, "--polish %s" % bad,
                ["decode", "prior.safetensors", "v.fbs", "-o", "y.npy", "--polish", bad],
                "--polish expects an integer in 0..100")
    refused(tmp, "--polish given to frae encode",
            ["encode", "prior.safetensors", "data.npy", "-o", "v.fbs", "--polish", "1"],
            "--polish is an option of 'frae decode'")

    print("== GRU checkpoints: the family, its tensors and their values")
    gru = trained("gru.safetensors", "a GRU model trains", "--family", "gru")
    edited(gru, p("fam.safetensors"), {"frae.family": "lstm"})
    refused(tmp, "an unknown family", ["info", "fam.safetensors"], "frae.family")
    edited(gru, p("fam.safetensors"), {"frae.family": None})
    refused(tmp, "GRU tensors without their family (read as dense)",
            ["predict", "fam.safetensors", "data.npy", "-o", "y.npy"], "enc.0.weight")
    edited(good, p("fam.safetensors"), {"frae.family": "gru"})
    refused(tmp, "dense tensors said to be a GRU model", ["info", "fam.safetensors"],
            "enc.0.weight_ih")

    def drop(name):
        """Removes tensor name and its bytes (the others move up)."""
        def f(header, d):
            del header[name]
            out = bytearray()
            tensors = sorted((t["data_offsets"][0], k) for k, t in header.items()
                             if k != "__metadata__")
            for _, k in tensors:
                a, b = header[k]["data_offsets"]
                header[k]["data_offsets"] = [len(out), len(out) + b - a]
                out += d[a:b]
            return out
        return f
    edited(gru, p("nohh.safetensors"), data_edit=drop("dec.0.weight_hh"))
    refused(tmp, "a GRU without its recurrent matrix",
            ["encode", "nohh.safetensors", "data.npy", "-o", "y.fbs"],
            "'dec.0.weight_hh' missing")

    def nan_hh(header, d):
        struct.pack_into("<f", d, header["enc.0.weight_hh"]["data_offsets"][0] + 4 * 5,
                         float("nan"))
        return d
    edited(gru, p("nanhh.safetensors"), data_edit=nan_hh)
    refused(tmp, "a NaN recurrent weight",
            ["train", "data.npy", "--resume", "nanhh.safetensors", "--save", "none"],
            "'enc.0.weight_hh' has NaN")
    refused(tmp, "a GRU checkpoint resumed as dense",
            ["train", "data.npy", "--resume", "gru.safetensors", "--family", "dense",
             "--save", "none"], "--family")

    print("== --resume: the training state, checked field by field (defect 4)")
    raw = bytearray(open(good, "rb").read())
    hlen = struct.unpack("<Q", raw[:8])[0]
    at = raw.index(b'"train.batch":"0"', 8, 8 + hlen)
    raw[at + len(b'"train.batch":"')] = ord("7")  # edited, checksum not redone
    open(p("edited.safetensors"), "wb").write(raw)
    refused(tmp, "metadata edited without its checksum",
            ["train", "data.npy", "--resume", "edited.safetensors", "--save", "none"],
            "corrupted or edited")

    def i32_edit(name, values):
        """Writes values over the first int32s of tensor name."""
        def f(header, d):
            t = header[name]
            for i, v in enumerate(values):
                struct.pack_into("<i", d, t["data_offsets"][0] + 4 * i, v)
            return d
        return f

    def order_edit(values):
        return i32_edit("train.order", values)
    forged = [
        ("negative batch", {"train.batch": "-3"}, None, "'train.batch' = '-3'"),
        ("batch past the epoch", {"train.batch": "9"}, None, "'train.batch' = 9"),
        ("epoch 1e300", {"train.epoch": "1e300"}, None, "'train.epoch' = '1e300'"),
        ("epoch past the epochs", {"train.epoch": "12", "train.epochs": "10"}, None,
         "'train.epoch' = '12'"),
        ("rng not hex", {"train.rng": "zz"}, None, "'train.rng'"),
        ("NaN running loss", {"train.epoch_sse": "nan"}, None, "'train.epoch_sse'"),
        ("frames past the data", {"train.epoch_frames": "100000",
                                  "train.epoch_values": "600000"}, None, "frames"),
        ("order out of range", {}, order_edit([99]), "out of range"),
        ("order repeated", {}, order_edit([1, 1]), "repeated"),
        ("huge model batch", {"frae.batch": "-1"}, None, "frae.batch"),
        ("learning rate NaN", {"frae.learning_rate": "nan"}, None, "learning rate"),
    ]
    for what, meta, data_edit, needle in forged:
        edited(good, p("forged.safetensors"), meta, data_edit=data_edit)
        refused(tmp, "forged state, checksum redone: " + what,
                ["train", "data.npy", "--resume", "forged.safetensors", "--save", "none"],
                needle)
    # crops: the table and the order, checked against the data on resume
    crop = trained("crop.safetensors", "a model trains on crops", "--crop", "8")

    for what, meta, data_edit, needle in (
            ("a crop past its sequence", {}, i32_edit("train.crop_start", [40]),
             "outside its sequence"),
            ("a crop of no sequence", {}, i32_edit("train.crop_seq", [-1]),
             "not a training sequence"),
            ("crop order repeated", {}, i32_edit("train.order", [0, 0]), "repeated"),
            ("crop length 0", {"train.crop": "0"}, None, "'train.crop'"),
            ("crops gone", {}, "drop-crops", "train.crop_start")):
        if data_edit == "drop-crops":
            data_edit = drop("train.crop_start")
        edited(crop, p("forged.safetensors"), meta, data_edit=data_edit)
        refused(tmp, "forged crops, checksum redone: " + what,
                ["train", "data.npy", "--resume", "forged.safetensors", "--save", "none"],
                needle)
    edited(good, p("bigbatch.safetensors"), {"frae.batch": "1000000000",
                                             "frae.window": "1000000000"})
    rc, out, err, dt, rss = run(["train", "data.npy", "--resume", "bigbatch.safetensors",
                                 "--epochs", "2", "--save", "none", "--progress", "off"], tmp)
    check(rc == 0 and (SANITIZED or rss < RSS_LIMIT_MB),
          "a checkpoint's batch and window of 10^9 take the data's size (%.0f MB)" % rss,
          err)

    print("== option names in errors (defect 5)")
    refused(tmp, "a model flag with --resume names the flag",
            ["train", "--frame-dim", "6", "--resume", "good.safetensors", "--save", "y"],
            "--frame-dim cannot be combined with --resume")

    print("== audio: NaN samples, long files (defects 6, 7)")
    x = 0.3 * np.sin(np.arange(16000) * 0.1)
    x[12345] = np.nan
    open(p("nan.wav"), "wb").write(wav_bytes(x, 16000, "float"))
    x[12345] = np.inf
    open(p("inf.wav"), "wb").write(wav_bytes(np.stack([0.5 * x, x], 1), 16000, "float"))
    refused(tmp, "a NaN sample: frae features", ["features", "nan.wav", "-o", "f.npy"],
            "sample 12345 (0.772 s), channel 1, is NaN")
    refused(tmp, "an infinite sample: frae train",
            ["train", "inf.wav", "--epochs", "1", "--save", "none"],
            "sample 12345 (0.772 s), channel 1, is infinite")
    np.save(p("mels.npy"), rng.uniform(-1, 0, (2, 30, 80)).astype("<f4"))
    run(["train", "mels.npy", "--audio-features", "--enc", "8", "--dec", "8", "--latent",
         "2", "--history", "1", "--epochs", "1", "--save", "audio.safetensors"], tmp)
    refused(tmp, "a NaN sample: frae encode",
            ["encode", "audio.safetensors", "nan.wav", "-o", "y.fbs"],
            "sample 12345 (0.772 s), channel 1, is NaN")
    check(not os.path.exists(p("f.npy")), "a refused audio file leaves no output")
    sparse_wav(p("minutes.wav"), 180)
    sparse_wav(p("hour.wav"), 3600)
    rss = {}
    for name in ("minutes", "hour"):
        rc, out, err, dt, rss[name] = run(["features", name + ".wav", "-o", name + ".npy"], tmp)
        frames = int(out.split(": ")[1].split()[0]) if rc == 0 else -1
        want = 1 + (180 if name == "minutes" else 3600) * 16000 // 160 - 3
        check(rc == 0 and frames == want and os.path.getsize(p(name + ".npy")) ==
              128 + 4 * 80 * frames,
              "%s of audio -> %d frames, streamed to the .npy (%.1f s, %.1f MB)"
              % ("3 minutes" if name == "minutes" else "an hour", frames, dt, rss[name]), err)
        os.unlink(p(name + ".npy"))
    check(SANITIZED or rss["hour"] - rss["minutes"] < 4,
          "an hour of audio takes the memory of 3 minutes (%.1f vs %.1f MB)"
          % (rss["hour"], rss["minutes"]))
    # train, predict and encode stream it too (features in a temporary file
    # read a window at a time): 20 minutes in the memory of 3
    sparse_wav(p("twenty.wav"), 1200)
    for cmd in (["encode", "audio.safetensors", "{}.wav", "-o", "{}.fbs"],
                ["predict", "audio.safetensors", "{}.wav", "-o", "{}.npy"],
                ["train", "{}.wav", "--enc", "8", "--dec", "8", "--latent", "2", "--history",
                 "1", "--epochs", "1", "--save", "none", "--progress", "off"]):
        used = {}
        for name in ("minutes", "twenty"):
            rc, out, err, dt, used[name] = run([a.format(name) for a in cmd], tmp)
            if rc:
                break
        check(rc == 0 and (SANITIZED or used["twenty"] - used["minutes"] < 4),
              "frae %s: 20 minutes of audio in the memory of 3 (%.1f vs %.1f MB)"
              % (cmd[0], used.get("twenty", -1), used.get("minutes", -1)), err)
    os.unlink(p("hour.wav"))
    os.unlink(p("twenty.wav"))

    print("== streams that amplify, audio no audio gives (issue 33: 3 and 6)")
    # a pitch model with a prior and audio features (the vocoder's input)
    t = np.arange(3 * 16000) / 16000
    phase = 2 * np.pi * np.cumsum(140 * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))) / 16000
    v = sum(np.sin(h * phase) * np.exp(-((h * 140 - 700) / 900) ** 2) / h for h in range(1, 30))
    open(p("voice.wav"), "wb").write(wav_bytes(0.3 * v / np.abs(v).max(), 16000, "pcm16"))
    rc, _, err, _, _ = run(["train", "voice.wav", "--pitch", "--enc", "8", "--dec", "8",
                            "--latent", "2", "--history", "1", "--quantizer", "binary",
                            "--rate-lambda", "0.01", "--epochs", "1", "--save", "tp.safetensors",
                            "--progress", "off"], tmp)
    rc2, _, err2, _, _ = run(["encode", "tp.safetensors", "voice.wav", "-o", "voice.fbs"], tmp)
    check(rc == rc2 == 0, "a pitch model with a prior, and a stream of it", err + err2)
    ref = open(p("voice.fbs"), "rb").read()
    # a packet holds at most 1000 frames and takes at least 3 bytes: more
    # frames than that declared is refused before anything is allocated
    open(p("cut.fbs"), "wb").write(empty_packets(ref, 10**6, 1000, 999))
    refused(tmp, "10^6 frames declared in the bytes of 999 packets",
            ["decode", "tp.safetensors", "cut.fbs", "-o", "y.npy", "--wav", "y.wav"],
            "1 x 1000000 frames declared, in 1000 packets of up to 1000 frames")
    open(p("one.fbs"), "wb").write(empty_packets(ref, 2**32 - 1, 1000, 1))
    refused(tmp, "2^32 - 1 frames declared in a header and one packet",
            ["decode", "tp.safetensors", "one.fbs", "-o", "y.npy"],
            "1 x 4294967295 frames declared, in 4294968 packets")
    # within the bound (the 3 KB stream of 10^6 frames is one:
    # 1000 empty packets of 1000 frames) a stream decodes in memory the
    # model bounds, not the stream: 10 times the frames, the same RSS
    sizes = (1000, 4000) if SANITIZED else (6000, 60000)
    for vocoder in (["--vocoder", "hnm"], ["--vocoder", "gl", "--gl-iters", "1"], []):
        used = {}
        for frames in sizes:
            open(p("e.fbs"), "wb").write(empty_packets(ref, frames, 1000))
            wav = ["--wav", "e.wav"] if vocoder else []
            rc, out, err, dt, used[frames] = run(["decode", "tp.safetensors", "e.fbs", "-o",
                                                  "e.npy", *wav, *vocoder], tmp)
            if rc or (vocoder and os.path.getsize(p("e.wav")) != 44 + 2 * (
                    (frames - 1) * 160 + 400)):
                rc = rc or -1
                break
        what = "decode --wav " + " ".join(vocoder) if vocoder else "decode"
        check(rc == 0 and (SANITIZED or used[sizes[1]] - used[sizes[0]] < 4),
              "%s of %d empty packets of 1000 frames, %d frames: the memory of %d (%.1f vs "
              "%.1f MB)" % (what, sizes[1] // 1000, sizes[1], sizes[0], used.get(sizes[1], -1),
                            used.get(sizes[0], -1)), err)
    for name in ("e.fbs", "e.npy", "e.wav"):
        os.unlink(p(name))
    # coded audio: 1 minute and 10 (a tone, then silence), decoded through
    # the vocoder as it goes, in the same memory
    lengths = (20, 60) if SANITIZED else (60, 600)
    used = {}
    for seconds in lengths:
        sparse_wav(p("long.wav"), seconds)
        rc, _, err, _, _ = run(["encode", "tp.safetensors", "long.wav", "-o", "long.fbs"], tmp)
        if rc == 0:
            rc, out, err, dt, used[seconds] = run(["decode", "tp.safetensors", "long.fbs", "-o",
                                                   "long.npy", "--wav", "long.wav"], tmp)
        if rc:
            break
    check(rc == 0 and (SANITIZED or used[lengths[1]] - used[lengths[0]] < 4),
          "decode --wav of %d s of coded audio in the memory of %d s (%.1f vs %.1f MB)"
          % (lengths[1], lengths[0], used.get(lengths[1], -1), used.get(lengths[0], -1)), err)
    for name in ("long.wav", "long.fbs", "long.npy"):
        os.unlink(p(name))
    # features no audio gives: NaN in Griffin-Lim from about 40 up, and the
    # vocoders clamp; refused, as is audio past what the FFT takes (3.4e38
    # overflowed it into silence)
    feats = rng.uniform(-1, 1, (50, 80)).astype("<f4")
    feats[3, 7] = 40
    np.save(p("loud80.npy"), feats)
    refused(tmp, "log-mel 40 into Griffin-Lim (frae vocode)", ["vocode", "loud80.npy", "-o",
                                                               "y.wav"],
            "log-mel value 40 at [3, 7], above the 7.69 of the loudest audio")
    feats = np.concatenate([rng.uniform(-1, 1, (2, 50, 80)), np.full((2, 50, 2), 1.0)], 2)
    feats[1, 9, 70] = 1e30
    np.save(p("loud82.npy"), feats.astype("<f4"))
    refused(tmp, "log-mel 1e30 into the vocoder (frae vocode)", ["vocode", "loud82.npy", "-o",
                                                                 "y.wav"],
            "log-mel value 1e+30 at [1, 9, 70]")
    feats[1, 9, 70] = np.nan
    np.save(p("nan82.npy"), feats.astype("<f4"))
    refused(tmp, "NaN into the vocoder (frae vocode)", ["vocode", "nan82.npy", "-o", "y.wav"],
            "NaN at [1, 9, 70]")
    check(not os.path.exists(p("y.wav")) and not os.path.exists(p("y-0.wav")),
          "refused features leave no WAV")
    x = 0.3 * np.sin(np.arange(16000) * 0.1)
    x[8000:8003] = (3.4e38, -3.4e38, 3.4e38)
    open(p("huge.wav"), "wb").write(wav_bytes(x, 16000, "float"))
    refused(tmp, "finite samples of 3.4e38: frae features", ["features", "huge.wav", "-o",
                                                             "f.npy"],
            "sample 8000 (0.500 s), channel 1, is 3.4e+38, past the +-65536")
    refused(tmp, "finite samples of 3.4e38: frae encode",
            ["encode", "tp.safetensors", "huge.wav", "-o", "y.fbs"], "past the +-65536")
    # a model whose frames are louder than any audio (a forged mean):
    # decode --wav refuses to vocode them
    mean = st_read(p("tp.safetensors"))[0]["__metadata__"]["frae.norm_mean"].split(",")
    edited(p("tp.safetensors"), p("loudtp.safetensors"),
           {"frae.norm_mean": ",".join(["50"] + mean[1:])})
    rc, _, err, _, _ = run(["encode", "loudtp.safetensors", "voice.wav", "-o", "loud.fbs"], tmp)
    check(rc == 0, "a stream of a model whose first band's mean is forged to 50", err)
    refused(tmp, "decode --wav of frames louder than any audio",
            ["decode", "loudtp.safetensors", "loud.fbs", "-o", "y.npy", "--wav", "y.wav"],
            "louder than any audio: no WAV from it")
    check(not os.path.exists(p("y.npy")) and not os.path.exists(p("y.wav")),
          "the refused decode leaves neither the .npy nor the WAV")

    print("== outputs respect the umask (defect 8), no orphans (defect 9)")
    np.save(p("x6.npy"), data[:2])
    for mask, mode in ((0o022, 0o644), (0o077, 0o600)):
        outs = {"train": (["train", "data.npy", *small, "--epochs", "1", "--save",
                           "m%o.safetensors" % mask, "--progress", "off"], "m%o.safetensors" % mask),
                "predict": (["predict", "good.safetensors", "x6.npy", "-o", "y%o.npy" % mask],
                            "y%o.npy" % mask),
                "encode": (["encode", "good.safetensors", "x6.npy", "-o", "y%o.fbs" % mask],
                           "y%o.fbs" % mask)}
        for cmd, (args, out) in outs.items():
            rc, _, err, _, _ = run(args, tmp, umask=mask)
            got = os.stat(p(out)).st_mode & 0o777 if rc == 0 else -1
            check(got == mode, "frae %s under umask %03o writes mode %o" % (cmd, mask, mode),
                  "mode %o, rc %d %s" % (got, rc, err))
    dead = 4194000
    while True:
        try:
            os.kill(dead, 0)
            dead -= 1
        except ProcessLookupError:
            break
        except PermissionError:
            dead -= 1
    orphan = p("m22.safetensors.tmp-%d-0" % dead)
    open(orphan, "wb").write(b"x" * 1000)
    run(["train", "data.npy", *small, "--epochs", "1", "--save", "m22.safetensors",
         "--progress", "off"], tmp)
    check(not os.path.exists(orphan), "the next save removes a killed writer's temporary")

    print("== messages (defect 10)")
    np.save(p("d5.npy"), data[:, :, :5])
    refused(tmp, "frame dimension 5 against 6",
            ["predict", "good.safetensors", "d5.npy", "-o", "y.npy"],
            "frame dimension 5 does not match the model's 6")

    round_two(tmp, p)
    round_three_training(tmp, p)
    round_three_paths(tmp, p)

    leftovers = [n for n in os.listdir(tmp) if ".tmp-" in n or n.startswith("frae-features")]
    check(not leftovers, "no temporary files left behind", str(leftovers))
    shutil.rmtree(tmp)
    return summary()


def round_three_training(tmp, p):
    """Issue 46: what training saves, its reader reads; the library never
    ends the process."""
    import numpy as np
    print("== training saves nothing its own reader refuses (issue 46, items 7, 8)")
    small = ["--frame-dim", "6", "--history", "2", "--enc", "16", "--latent", "4",
             "--dec", "16", "--epochs", "1", "--batch", "2", "--progress", "off"]
    np.save(p("h46.npy"), np.full((2, 30, 6), 3e38, "<f4"))
    refused(tmp, "data of 3e38 (finite): refused at the input, naming the bound",
            ["train", "h46.npy", *small, "--save", "h46.safetensors"],
            "h46.npy: 3e+38 at [0, 0, 0]: training takes values up to 1e+18")
    check(not os.path.exists(p("h46.safetensors")), "  ... and saves no checkpoint")
    g = np.random.default_rng(3).standard_normal((6, 40, 6)) * 1e25
    np.save(p("g25.npy"), g.astype("<f4"))
    refused(tmp, "Gaussian data of scale 1e25 as --targets: refused",
            ["train", "data.npy", "--targets", "g25.npy", *small, "--save", "none"],
            "g25.npy: ")
    refused(tmp, "... and as --val-data", ["train", "data.npy", "--val-data", "g25.npy",
                                           *small, "--save", "none"], "g25.npy: ")
    refused(tmp, "... and with replicas (the replica that meets it says so)",
            ["train", "g25.npy", *small, "--replicas", "2", "--save", "none"],
            "training takes values up to 1e+18")
    edge = np.full((1, 1, 1), 1e18, "<f4")
    np.save(p("edge.npy"), edge)
    rc, _, err, _, _ = run(["train", "edge.npy", "--frame-dim", "1", "--epochs", "2",
                            "--save", "edge.safetensors", "--progress", "off"], tmp)
    rc2, _, err2, _, _ = run(["train", "edge.npy", "--resume", "edge.safetensors",
                              "--epochs", "3", "--save", "none", "--progress", "off"], tmp)
    check(rc == 0 and rc2 == 0, "data at the bound (1e18, one band): trains, and resumes",
          err + err2)
    np.save(p("tiny_std.npy"), np.array([[0] * 6, [1e-30] * 6], "<f4"))
    refused(tmp, "huge z-scored values (std 1e-30): refused, z-scored value named",
            ["train", "data.npy", *small, "--normalize", "tiny_std.npy", "--save", "none"],
            "z-scored: training takes z-scored values up to 1e+18")
    refused(tmp, "--rate-lambda 1e25: Adam's moments overflow: exit 1, nothing saved",
            ["train", "data.npy", *small, "--quantizer", "binary", "--rate-lambda", "1e25",
             "--save", "rl.safetensors"], "Adam's moments are not finite", code=1)
    check(not os.path.exists(p("rl.safetensors")), "  ... and saves no checkpoint")
    for what, stats, needle in (
            ("a mean of 3e38", [[3e38] * 6, [1] * 6], "band 0 has mean 3.00000001e+38"),
            ("a std of 3e38", [[0] * 6, [3e38] * 6], "band 0 has std 3.00000001e+38"),
            ("a mean of -3.3e38", [[0] * 5 + [-3.3e38], [1] * 6], "band 5 has mean")):
        np.save(p("big_stats.npy"), np.array(stats, "<f4"))
        refused(tmp, "--normalize with %s: refused as the reader would" % what,
                ["train", "data.npy", *small, "--normalize", "big_stats.npy",
                 "--save", "bs.safetensors"], needle)
        check(not os.path.exists(p("bs.safetensors")), "  ... and saves no checkpoint")
    np.save(p("huge_mean.npy"), np.full((2, 30, 6), 3.3e38, "<f4"))
    refused(tmp, "--normalize on over data of 3.3e38: its mean refused",
            ["train", "huge_mean.npy", *small, "--normalize", "on", "--save", "none"],
            "--normalize: on: band 0 has mean")
    np.save(p("edge_stats.npy"), np.array([[2.9999998e38] * 6, [2.9999998e38] * 6], "<f4"))
    rc, _, err, _, _ = run(["train", "data.npy", *small, "--normalize", "edge_stats.npy",
                            "--save", "es.safetensors"], tmp)
    rc2, _, err2, _, _ = run(["info", "es.safetensors"], tmp)
    check(rc == 0 and rc2 == 0, "statistics just under 3e38: saved, and read back", err + err2)

    print("== the library never ends the process (issue 46, item 10)")
    os.environ["FRAE_FAULT"] = "thread@2"
    try:
        refused(tmp, "a replica thread that cannot start: exit 1, one line",
                ["train", "data.npy", *small, "--replicas", "3", "--save", "t.safetensors"],
                "cannot start the 3 replica threads", code=1)
    finally:
        del os.environ["FRAE_FAULT"]
    check(not os.path.exists(p("t.safetensors")), "  ... and saves no checkpoint")


def scaled_weights(header, data, factor):
    """data_edit for edited(): every f32 weight (not bias) times factor."""
    import numpy as np
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32" or "bias" in name:
            continue
        a, b = t["data_offsets"]
        w = np.frombuffer(bytes(data[a:b]), "<f4") * np.float32(factor)
        data[a:b] = w.astype("<f4").tobytes()
    return data


def round_two(tmp, p):
    """Issue 33: the cases probed from outside in the second round."""
    import numpy as np
    print("== no non-finite output with exit 0 (issue 33, item 6)")
    good = p("good.safetensors")
    edited(good, p("huge.w.safetensors"),
           data_edit=lambda h, d: scaled_weights(h, d, 1e30))
    for cmd, out in (("predict", "y.npy"), ("encode", "y.fbs")):
        refused(tmp, "weights of 1e30 (finite): %s refuses to write Inf" % cmd,
                [cmd, "huge.w.safetensors", "data.npy", "-o", out],
                "the model's output is not finite (sequence 0, frame 0)")
        check(not os.path.exists(p(out)), "  ... and writes no %s" % out)
    small = ["--frame-dim", "6", "--history", "2", "--enc", "16", "--latent", "4",
             "--dec", "16", "--quantizer", "uniform:4"]
    refused(tmp, "--lr 1e30: the last step's divergence is caught (exit 1), nothing saved",
            ["train", "data.npy", *small, "--epochs", "1", "--lr", "1e30",
             "--save", "lr30.safetensors", "--progress", "off"],
            "diverged in the last step of epoch 1", code=1)
    check(not os.path.exists(p("lr30.safetensors")), "  ... and saves no checkpoint")
    refused(tmp, "--lr 1e30 with validation data: caught by the validation loss",
            ["train", "data.npy", *small, "--epochs", "1", "--lr", "1e30", "--val-data",
             "data.npy", "--save", "none", "--progress", "off"],
            "the validation loss after it is not finite", code=1)

    def one_big_weight(header, data):
        t = header["enc.0.weight"]
        a = t["data_offsets"][0]
        data[a:a + 4] = np.float32(3.4e38).tobytes()
        return data
    edited(good, p("big1.safetensors"), data_edit=one_big_weight)
    refused(tmp, "convert --weights bf16 of a weight of 3.4e38 (bf16 would make it Inf)",
            ["convert", "big1.safetensors", "-o", "big1.bf16.safetensors", "--weights",
             "bf16"], "which bf16 rounds to Inf")
    check(not os.path.exists(p("big1.bf16.safetensors")), "  ... and writes nothing")

    print("== a FIFO is refused before it could block (issue 33, item 5)")
    fifo = p("fifo")
    os.mkfifo(fifo)
    np.save(p("d6.npy"), np.zeros((20, 6), "<f4"))
    rc, _, err, _, _ = run(["encode", "good.safetensors", "d6.npy", "-o", "good.fbs"], tmp)
    check(rc == 0, "a stream to decode", err)
    for what, args in (
            ("as a model to info", ["info", "fifo"]),
            ("as a model to predict", ["predict", "fifo", "d6.npy", "-o", "y.npy"]),
            # (a model of plain frames refuses audio first, FIFO or not)
            ("as data to predict", ["predict", "good.safetensors", "fifo", "-o", "y.npy"]),
            ("as training data", ["train", "fifo", "--save", "none"]),
            ("as --resume", ["train", "d6.npy", "--resume", "fifo", "--save", "none"]),
            ("as --normalize statistics", ["train", "d6.npy", "--frame-dim", "6",
                                           "--normalize", "fifo", "--save", "none"]),
            ("as a stream to decode", ["decode", "good.safetensors", "fifo", "-o", "y.npy"]),
            ("as audio to features", ["features", "fifo", "-o", "y.npy"]),
            ("as audio to encode", ["encode", "good.safetensors", "fifo", "-o", "y.fbs"])):
        refused(tmp, "a FIFO %s" % what, args,
                "fifo: " if what in ("as data to predict", "as audio to encode")
                else "fifo: not a regular file")
    refused(tmp, "a FIFO nobody reads, as --log-csv", ["train", "d6.npy", "--frame-dim", "6",
                                                         "--log-csv", "fifo", "--save", "none"],
            "a FIFO that no process reads")
    refused(tmp, "a FIFO nobody reads, as -o (exit 1: the output)",
            ["predict", "good.safetensors", "d6.npy", "-o", "fifo"],
            "a FIFO that no process reads", code=1)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "  ... and the FIFO is still a FIFO")
    # a FIFO that a process reads is written in place, never renamed over
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
    rc, _, err, _, _ = run(["predict", "good.safetensors", "d6.npy", "-o", "fifo"], tmp)
    got = reader.communicate(timeout=60)[0]
    check(rc == 0 and got[:6] == b"\x93NUMPY" and stat.S_ISFIFO(os.lstat(fifo).st_mode),
          "-o a FIFO with a reader: written through it (%d bytes), the FIFO kept" % len(got),
          "rc %d %s" % (rc, err))

    print("== '-' is standard input or output, never a file name (issue 33, item 10)")
    proc = subprocess.run([FRAE, "predict", "good.safetensors", "d6.npy", "-o", "-"], cwd=tmp,
                          capture_output=True, timeout=60)
    check(proc.returncode == 0 and proc.stdout[:6] == b"\x93NUMPY"
          and b"sequence" in proc.stderr and not os.path.exists(p("-")),
          "predict -o -: the .npy on stdout, the report on stderr, no file named '-'",
          "rc %d %r" % (proc.returncode, proc.stderr[:300]))
    open(p("-"), "wb").write(open(p("good.fbs"), "rb").read())  # a stale file named '-'
    # '-' is a live stream on stdin (real-time packets), here empty
    refused(tmp, "decode MODEL - reads stdin, not a file named '-'",
            ["decode", "good.safetensors", "-", "-o", "y.npy"],
            "-: truncated: shorter than a version-5 header")
    os.unlink(p("-"))
    refused(tmp, "--save -: checkpoints go to a file", ["train", "d6.npy", "--save", "-"],
            "--save -: a checkpoint is saved at every epoch")
    refused(tmp, "features -o -: the growing .npy needs a file",
            ["features", "a.wav", "-o", "-"], "give a file, not a pipe")
    with open(p("appended.txt"), "wb") as out:
        out.write(b"kept\n")
    with open(p("appended.txt"), "ab") as out:
        proc = subprocess.run([FRAE, "predict", "good.safetensors", "d6.npy", "-o",
                               "/dev/stdout"], cwd=tmp, stdout=out, stderr=subprocess.PIPE,
                              timeout=60)
    got = open(p("appended.txt"), "rb").read()
    check(proc.returncode == 0 and got.startswith(b"kept\n\x93NUMPY")
          and os.path.islink("/dev/stdout"),
          "-o /dev/stdout appended to by the shell: written through, what was there kept, "
          "/dev/stdout still a link", "rc %d %r" % (proc.returncode, got[:20]))

    print("== small ones (issue 33, item 11)")
    rc, _, err, _, _ = run(["train", "d6.npy", "--frame-dim", "6", "--epochs", "2",
                            "--save", "two.safetensors"], tmp)
    check(rc == 0, "a run of 2 epochs to resume", err)
    refused(tmp, "--resume with --epochs at the epochs done",
            ["train", "d6.npy", "--resume", "two.safetensors", "--epochs", "2",
             "--save", "none"], "has trained 2 epochs already; --epochs 2 is the run's total")
    refused(tmp, "--resume of a complete run",
            ["train", "d6.npy", "--resume", "two.safetensors", "--save", "none"],
            "its run is complete (2 of 2 epochs)")
    np.savez(p("arrays.npz"), np.zeros((4, 6), "<f4"))
    refused(tmp, "a .npz as training data", ["train", "arrays.npz", "--save", "none"],
            "arrays.npz: a .npz (zip) archive, not audio")
    np.save(p("arr.npy"), np.zeros((4, 6), "<f4"))
    shutil.copy(p("arr.npy"), p("arr.dat"))
    refused(tmp, "a .npy not named .npy", ["train", "arr.dat", "--save", "none"],
            "arr.dat: a NumPy array, read as audio because its name does not end in .npy")

    print("== sizes before the data is built, signals while it is (issue 33, item 4)")
    refused(tmp, "a 339 GiB model is refused before its built-in data is built",
            ["train", "--frame-dim", "5000000", "--sequences", "4", "--frames", "20",
             "--save", "none"], "model needs 339.3 GiB")
    # one sequence half again as large as the machine's memory (which the
    # kernel once refused, exit 1)
    frames = int(1.5 * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 320)
    refused(tmp, "built-in data larger than the machine: exit 2, not the kernel's refusal",
            ["train", "--frames", str(min(frames, 1 << 30)), "--sequences", "1",
             "--save", "none"], "built-in data")
    # about 1.3 GB of built-in data: seconds to build; SIGINT and SIGTERM
    # end it at once (nothing is worth saving before training starts)
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([FRAE, "train", "--sequences", "200", "--frames", "20000",
                                 "--save", "none"], cwd=tmp, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(sig)
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        dt = time.monotonic() - t0
        check(rc == -sig and dt < 2.0,
              "%s while the built-in data is built ends it at once (%.2f s)"
              % (signal.Signals(sig).name, dt), "rc %s after %.1f s" % (rc, dt))


def fifo_writer(fifo, data):
    """A thread that writes data into fifo whenever a reader opens it, until
    stop is set: the writer a decoder of the FIFO could wait for."""
    import threading
    stop = threading.Event()

    def write():
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                time.sleep(0.002)
                continue
            try:
                os.write(fd, data)
            except OSError:  # EPIPE: the reader left
                pass
            os.close(fd)
    t = threading.Thread(target=write, daemon=True)
    t.start()
    return stop, t


def models_dir(d, target, decoy, forge=None):
    """A models directory of 70: 67 copies of decoy (which records its
    hash), one older-style decoy (no frae.model_hash: loaded and hashed),
    one more decoy, its record forged to forge if given (checked, passed
    over), and target last in name order, however the directory lists
    them."""
    os.mkdir(d)
    shutil.copy(target, os.path.join(d, "zz-target.safetensors"))  # first made
    for i in range(67):
        shutil.copy(decoy, os.path.join(d, "a%02d.safetensors" % i))
    edited(decoy, os.path.join(d, "a67.safetensors"), meta={"frae.model_hash": None})
    edited(decoy, os.path.join(d, "a68.safetensors"),
           meta={"frae.model_hash": forge} if forge else None)


def decode_with_models(tmp, d, args):
    """run() of frae decode with FRAE_MODELS=d."""
    os.environ["FRAE_MODELS"] = d
    try:
        return run(args, tmp)
    finally:
        del os.environ["FRAE_MODELS"]


def round_three_paths(tmp, p):
    """Issue 46: decode's model search and FIFOs (items 4 and 6)."""
    print("== decode with no MODEL: a FIFO as the stream, refused at once (issue 46, item 4)")
    fifo = p("fifo46")
    os.mkfifo(fifo)
    refused(tmp, "a FIFO with no writer, decoded with no model", ["decode", "fifo46", "-o",
                                                                  "y46.npy"],
            "fifo46: not a regular file")
    stop, writer = fifo_writer(fifo, open(p("good.fbs"), "rb").read())
    for args in (["decode", "fifo46", "-o", "y46.npy"],
                 ["decode", "fifo46", "--wav", "y46.wav"],
                 ["decode", "good.safetensors", "fifo46", "-o", "y46.npy"]):
        refused(tmp, "a FIFO a writer fills with a whole stream: %s" % " ".join(args[1:]),
                args, "fifo46: not a regular file")
    stop.set()
    writer.join(timeout=10)
    check(not writer.is_alive() and stat.S_ISFIFO(os.lstat(fifo).st_mode) and
          not os.path.exists(p("y46.npy")) and not os.path.exists(p("y46.wav")),
          "  ... nothing written, the FIFO still a FIFO, the writer let go")

    print("== decode with no MODEL among 70 models (issue 46, item 6)")
    header, _ = st_read(p("good.safetensors"))
    rc, out, err, _, _ = run(["train", "data.npy", "--frame-dim", "6", "--history", "2",
                              "--enc", "16", "--latent", "4", "--dec", "16", "--quantizer",
                              "uniform:4", "--epochs", "1", "--batch", "2", "--window", "16",
                              "--seed", "2", "--save", "decoy.safetensors", "--progress",
                              "off"], tmp)
    recorded = header["__metadata__"].get("frae.model_hash", "")
    check(rc == 0 and re.fullmatch("[0-9a-f]{16}", recorded) is not None,
          "a new checkpoint records its model hash (frae.model_hash %s)" % recorded, err)
    rc, _, err, _, _ = run(["decode", "good.safetensors", "good.fbs", "-o", "want46.npy"], tmp)
    check(rc == 0 and open(p("good.fbs"), "rb").read()[8:16] ==
          bytes.fromhex(recorded)[::-1], "  ... the hash good.fbs names", err)
    edited(p("good.safetensors"), p("old.safetensors"), meta={"frae.model_hash": None})
    for what, target, forge in (
            ("the model last in name order", "good.safetensors", None),
            ("past a decoy whose record forges the stream's hash", "good.safetensors", recorded),
            ("an older model (no recorded hash) last", "old.safetensors", recorded)):
        d = p("models46-%s-%s" % (target[:3], "forged" if forge else "plain"))
        models_dir(d, p(target), p("decoy.safetensors"), forge)
        rc, _, err, dt, _ = decode_with_models(tmp, d, ["decode", "good.fbs", "-o", "y46.npy"])
        same = rc == 0 and open(p("y46.npy"), "rb").read() == open(p("want46.npy"), "rb").read()
        check(same and dt < TIME_LIMIT_S,
              "70 models: %s, found by the stream's hash (%.2f s)" % (what, dt), err)
    d = p("models46-none")
    models_dir(d, p("decoy.safetensors"), p("decoy.safetensors"), recorded)
    os.environ["FRAE_MODELS"] = d
    refused(tmp, "70 models, none the stream's", ["decode", "good.fbs", "-o", "y46.npy"],
            "no installed model has hash %s" % recorded)
    del os.environ["FRAE_MODELS"]


if __name__ == "__main__":
    sys.exit(main())
