#!/usr/bin/python3
"""Damaged and hostile real-time packet streams (version 5), through
'frae decode' as a user runs it (issue 46, items 1-3): a damaged stream
keeps playing to its end, a hostile header is refused fast, and every
refusal says why in one line.

The shipped codecs (models/: the 1.6 kbit/s fixed-rate one and the
variable-rate one) code 4 s of espeak-ng speech into 40 ms packets; the
streams are then damaged as a noisy channel or a hostile file would:
- a header that declares frames no packet brings (10^6, 2^32-1);
- every single-bit flip of the first 12 packets' length bytes;
- a packet length of 65536;
- random bit errors after the header (the header is sent first or out of
  band) at 1e-3 and 1e-2, from a file and from a pipe, --through too.
The live input (frae encode MODEL - -) is fed hostile WAV headers on
stdin, and a WAV against its samples as raw PCM.
A damaged stream must decode with exit 0 to within one packet of its
length; a refusal must be exit 2 with one line on stderr.

Usage: stream_damage_test.py path/to/frae    Prints "N passed, N failed" last."""
import binascii
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary, v5_split  # noqa: E402

FRAE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/frae")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {"fixed-rate": os.path.join(ROOT, "models", "speech.safetensors"),
          "variable-rate": os.path.join(ROOT, "models", "speech-vbr.safetensors")}
# sanitizer builds run each decode several times slower: fewer cases there
SANITIZED = "asan" in FRAE
P = 4  # frames a 40 ms packet


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def header(stream, frames):
    """The stream's header with another frame count, its CRC-16 made anew."""
    fields, _, _ = v5_split(stream)
    body = stream[:16] + varint(fields[0]) + varint(fields[1]) + varint(frames)
    crc = binascii.crc_hqx(body, 0xFFFF)
    return body + bytes([crc & 0xFF, crc >> 8])


def decode(tmp, model, name, *extra, stdin=None):
    """frae decode MODEL NAME -o y.npy: (exit code, stderr, frames or None,
    seconds)."""
    out = os.path.join(tmp, "y.npy")
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.monotonic()
    p = subprocess.run([FRAE, "decode", model, name, "-o", out] + list(extra),
                       cwd=tmp, capture_output=True, timeout=120, input=stdin)
    dt = time.monotonic() - t0
    frames = None
    if p.returncode == 0 and os.path.exists(out):
        with open(out, "rb") as f:  # the .npy's shape, without NumPy
            h = f.read(128).decode("latin1")
            frames = int(h.split("'shape': (")[1].split(",")[0])
    return p.returncode, p.stderr.decode(errors="replace"), frames, dt


def one_line(err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return len(lines) == 1


def flip_bits(stream, start, ber, seed):
    rng = random.Random(seed)
    b = bytearray(stream)
    for i in range(start, len(b)):
        for bit in range(8):
            if rng.random() < ber:
                b[i] ^= 1 << bit
    return bytes(b)


def hostile_headers(tmp, model, stream, frames):
    print("== a header's frame count bounds nothing by itself (item 1)")
    _, head_len, starts = v5_split(stream)
    path = os.path.join(tmp, "h.fbs")
    open(path, "wb").write(header(stream, 10 ** 6))
    rc, err, _, dt = decode(tmp, model, "h.fbs", "--wav", "h.wav")
    check(rc == 2 and one_line(err) and "declares 1000000 frames and no packet" in err
          and not os.path.exists(os.path.join(tmp, "h.wav"))
          and not [f for f in os.listdir(tmp) if f.startswith(".")] and dt < 5,
          "a 23-byte header that declares 10^6 frames and no packet: exit 2, one line, "
          "no WAV, %.2f s" % dt, "rc %d %r" % (rc, err))
    open(path, "wb").write(header(stream, 2 ** 32 - 1) + stream[starts[0]:starts[3]])
    rc, err, got, dt = decode(tmp, model, "h.fbs", "--wav", "h.wav")
    wav = os.path.getsize(os.path.join(tmp, "h.wav")) if rc == 0 else 0
    check(rc == 0 and got == 3 * P + 100 and dt < 10 and wav < 100000,
          "2^32-1 frames declared, 3 packets came: their %d frames and 1 s of the end's "
          "loss concealed (%s frames, a %d-byte WAV, %.2f s)" % (3 * P, got, wav, dt),
          "rc %d %r" % (rc, err))
    # the end cut off: up to 1 s of it concealed, the length kept
    open(path, "wb").write(stream[:starts[-10] + 3])
    rc, err, got, _ = decode(tmp, model, "h.fbs")
    check(rc == 0 and got == frames and "concealed" in err,
          "the last 10 packets cut off (one inside): the end concealed, %s of %d frames"
          % (got, frames), "rc %d %r" % (rc, err))
    # a live stream's header (no frame count) with no packet: nothing
    open(path, "wb").write(header(stream, 0))
    rc, err, got, _ = decode(tmp, model, "h.fbs")
    check(rc == 0 and got == 0, "a live stream's header and no packet: 0 frames (%s)" % got,
          "rc %d %r" % (rc, err))


def damaged_lengths(tmp, kind, model, stream, frames):
    print("== %s: a damaged packet length is found again (items 2 and 3)" % kind)
    _, head_len, starts = v5_split(stream)
    path = os.path.join(tmp, "l.fbs")
    stops, wrong, cases = [], [], 0
    for k in range(12):
        for bit in range(8):
            if SANITIZED and (k * 8 + bit) % 4:
                continue
            b = bytearray(stream)
            b[starts[k]] ^= 1 << bit
            open(path, "wb").write(b)
            rc, err, got, _ = decode(tmp, model, "l.fbs")
            cases += 1
            if rc != 0:
                stops.append("packet %d bit %d: %s" % (k, bit, err.strip()))
            elif abs(got - frames) > P:
                wrong.append("packet %d bit %d: %d frames" % (k, bit, got))
    check(not stops and not wrong,
          "%d single-bit flips of the first 12 packets' lengths: every one decoded to the "
          "end, within a packet of %d frames" % (cases, frames),
          "; ".join((stops + wrong)[:3]))
    if kind == "fixed-rate":
        # 80 packets in a row overwritten with random bytes: more than the
        # index counts (64), told apart by the bytes they took
        rng = random.Random(5)
        b = bytearray(stream)
        for i in range(starts[10], starts[90]):
            b[i] = rng.randrange(256)
        open(path, "wb").write(b)
        rc, err, got, _ = decode(tmp, model, "l.fbs")
        check(rc == 0 and got == frames,
              "80 packets in a row destroyed (more than the index's 64): decoded on, "
              "%s of %d frames" % (got, frames), "rc %d %r" % (rc, err))
    # a length of 65536 (3 bytes where 1 was): decoded on, and said
    b = stream[:starts[2]] + b"\x80\x80\x04" + stream[starts[2] + 1:]
    open(path, "wb").write(b)
    rc, err, got, _ = decode(tmp, model, "l.fbs")
    check(rc == 0 and abs(got - frames) <= P and "damaged framing" in err,
          "a packet length of 65536: decoded on (%s frames), the damage said" % got,
          "rc %d %r" % (rc, err))


def bit_errors(tmp, kind, model, stream, frames, through=False):
    _, head_len, _ = v5_split(stream)
    n = 4 if SANITIZED else 10
    extra = ["--through"] if through else []
    for ber in (1e-3, 1e-2):
        stops, wrong = [], []
        for seed in range(n):
            noisy = flip_bits(stream, head_len, ber, seed)
            open(os.path.join(tmp, "n.fbs"), "wb").write(noisy)
            # from a file, and (every other) from a pipe
            pipe = seed % 2 == 1
            rc, err, got, _ = decode(tmp, model, "-" if pipe else "n.fbs", *extra,
                                     stdin=noisy if pipe else None)
            if rc != 0:
                stops.append("seed %d: %s%s" % (seed, err.strip() or "(no word)",
                                                 "" if err.strip() else " rc %d" % rc))
            elif abs(got - frames) > P:
                wrong.append("seed %d: %d frames" % (seed, got))
        check(not stops and not wrong,
              "%s%s: bit error rate %g after the header, %d streams (file and pipe): none "
              "stops, each within a packet of %d frames"
              % (kind, " --through" if through else "", ber, n, frames),
              "; ".join((stops + wrong)[:3]))


def live_inputs(tmp, model, wav):
    """The live input (frae encode MODEL - -, libfrae-audio's frae_pcm_in):
    a hostile WAV header on stdin is one line and exit 2, fast; a WAV and
    the same samples as raw PCM make the same packets."""
    print("== live PCM on stdin: hostile WAV headers refused, WAV and raw PCM alike")
    import struct

    def fmt(tag, ch, rate, bits, size=16):
        body = struct.pack("<HHIIHH", tag, ch, rate, rate * ch * bits // 8,
                           ch * bits // 8, bits) + bytes(size - 16)
        return b"fmt " + struct.pack("<I", size) + body

    def riff(*chunks):
        body = b"WAVE" + b"".join(chunks)
        return b"RIFF" + struct.pack("<I", len(body)) + body
    cases = [(b"", "no audio on standard input"),
             (b"RIFF\x24\0\0\0WAVX", "a RIFF header, but not a WAV"),
             (riff(fmt(1, 1, 16000, 24)) + b"data\0\0\0\0", "format 1, 24 bits"),
             (riff(fmt(1, 40, 16000, 16)) + b"data\0\0\0\0", "40 channels"),
             (riff(fmt(1, 1, 500, 16)) + b"data\0\0\0\0", "at 500 Hz"),
             (riff(fmt(1, 1, 16000, 16, 4000)), "fmt chunk of 4000 bytes"),
             (riff(b"LIST\xff\xff\xff\x7f"), "without its data"),
             (riff(), "without its data"),
             (riff(b"data\0\0\0\0"), "without its fmt chunk")]
    for data, needle in cases:
        t0 = time.monotonic()
        p = subprocess.run([FRAE, "encode", model, "-", "-", "--packet-ms", "40"],
                           input=data, capture_output=True, timeout=60)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 2 and one_line(err) and needle in err and not p.stdout
              and time.monotonic() - t0 < 10,
              "live input %r...: exit 2, one line: %s" % (data[:12], needle),
              "rc %d: %s" % (p.returncode, err[:300]))
    pcm = open(wav, "rb").read()
    # espeak-ng writes 22.05 kHz 16-bit mono: its samples raw, at the rate
    # frae reads raw PCM at, against the same samples as a 16 kHz WAV
    data = pcm[pcm.index(b"data") + 8:]
    as_wav = riff(fmt(1, 1, 16000, 16)) + b"data" + struct.pack("<I", len(data)) + data
    outs = [subprocess.run([FRAE, "encode", model, "-", "-", "--packet-ms", "40"],
                           input=x, capture_output=True, timeout=60) for x in (as_wav, data)]
    check(all(p.returncode == 0 for p in outs) and outs[0].stdout == outs[1].stdout
          and len(outs[0].stdout) > 100,
          "live input: a 16 kHz WAV and its samples as raw PCM make the same %d bytes"
          % len(outs[0].stdout), " / ".join(p.stderr.decode(errors="replace")[:200]
                                            for p in outs))


def main():
    tmp = tempfile.mkdtemp(prefix="frae-damage-")
    try:
        wav = os.path.join(tmp, "s.wav")
        subprocess.run(["espeak-ng", "-w", wav, "The quick brown fox jumps over the lazy "
                        "dog, and then it runs far away into the quiet woods."],
                       check=True, capture_output=True)
        streams = {}
        for kind, model in MODELS.items():
            name = os.path.join(tmp, kind + ".fbs")
            p = subprocess.run([FRAE, "encode", model, wav, "-o", name, "--packet-ms", "40"],
                               capture_output=True, text=True)
            rc, err, frames, _ = decode(tmp, model, name)
            check(p.returncode == 0 and rc == 0 and frames and frames > 300,
                  "%s: 40 ms packets, the clean decode: %s frames" % (kind, frames),
                  p.stderr + err)
            streams[kind] = (model, open(name, "rb").read(), frames or 0)
        model, stream, frames = streams["fixed-rate"]
        live_inputs(tmp, model, wav)
        hostile_headers(tmp, model, stream, frames)
        for kind, (model, stream, frames) in streams.items():
            damaged_lengths(tmp, kind, model, stream, frames)
        print("== random bit errors: every stream decodes to its end (item 2)")
        for kind, (model, stream, frames) in streams.items():
            bit_errors(tmp, kind, model, stream, frames)
        model, stream, frames = streams["fixed-rate"]
        bit_errors(tmp, "fixed-rate", model, stream, frames, through=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
