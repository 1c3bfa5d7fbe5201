#!/usr/bin/python3
"""End-to-end tests of the frae command on real files: data loading and its
errors, validation, logs, early stopping, checkpoints, exact resume (also
after Ctrl-C), divergence, predict, info and imports from Keras and
PyTorch layouts.  Needs NumPy (Debian's python3-numpy), not torch.

Usage: workflow_test.py path/to/frae     Prints "N passed, N failed" last."""
import binascii
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import select
import time
import wave

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import frae_numpy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary, v5_split  # noqa: E402

FRAE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/frae")
TMP = tempfile.mkdtemp(prefix="frae-wf-")
SMALL = ["--enc", "24", "--latent", "4", "--dec", "24", "--history", "2"]



def run(*args, **kw):
    args = [str(a) for a in args]
    # frae encode searches each frame's codes by default; these checks are
    # of the network's own codes (decode(encode(x)) == predict(x) to the
    # bit) unless they ask for a search: encode_default_search tests the default
    if args and args[0] == "encode" and "--search" not in args:
        args += ["--search", "0"]
    p = subprocess.run([FRAE] + args, capture_output=True, text=True, cwd=TMP, **kw)
    return p.returncode, p.stdout, p.stderr


def path(name):
    return os.path.join(TMP, name)


def one_line_error(rc, err, code, needle):
    lines = err.strip().splitlines()
    return rc == code and len(lines) == 1 and needle in lines[0]


def smooth(n, t, d, seed):
    rng = np.random.default_rng(seed)
    tt = np.arange(t)[None, :, None]
    f = rng.uniform(0.01, 0.08, (n, 1, d))
    ph = rng.uniform(0, 6.28, (n, 1, d))
    return (0.5 * np.sin(6.28 * f * tt + ph)).astype(np.float32)


def write_wav(p, x, rate):
    with wave.open(p, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())


def voiced(seconds, rate, f0, seed):
    """A vowel-like sound: harmonics of a wobbling f0 under a formant."""
    t = np.arange(int(seconds * rate)) / rate
    rng = np.random.default_rng(seed)
    f = f0 * (1 + 0.05 * np.sin(2 * np.pi * rng.uniform(2, 5) * t))
    phase = 2 * np.pi * np.cumsum(f) / rate
    x = sum(np.sin(h * phase) * np.exp(-((h * f0 - 700 * (1 + seed % 3)) / 900) ** 2) / h
            for h in range(1, 30))
    return 0.3 * x / np.abs(x).max()


def read_safetensors(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def v5_packets(path_):
    """A version-5 file's header bytes and its framed packets (each the
    varint length, the packet, the CRC-16), as a list."""
    b = open(path_, "rb").read()
    _, head_len, starts = v5_split(b)
    return b[:head_len], [b[a:z] for a, z in zip(starts, starts[1:] + [len(b)])]


def on_the_wire(pitch_fixed, pitch_prior):
    """Issue 37: real-time packets, lost and damaged ones, live pipes."""
    print("== on the wire: real-time packets, loss, live pipes")
    src = "speech/u3.wav"
    for model, ranged in ((pitch_fixed, False), (pitch_prior, True)):
        kind = "entropy-coded" if ranged else "fixed-rate"
        rates = {}
        for ms in (20, 40, 60):
            rc, out, err = run("encode", model, src, "-o", "w%d.fbs" % ms, "--packet-ms", ms)
            m = re.search(r"= ([0-9.]+) kbit/s at 100 frames/s as datagrams", out)
            rates[ms] = float(m.group(1)) if rc == 0 and m else 0
        check(rates[20] > rates[40] > rates[60] > 0,
              "%s: --packet-ms 20/40/60, the rate as datagrams: %s kbit/s" % (kind, rates), err)
        # without resynchronisation points (entropy-coded: no restart) the
        # network runs on as predict's: the envelope to the bit
        rc, _, err = run("encode", model, src, "-o", "nr.fbs", "--packet-ms", "40",
                         "--resync-ms", "off")
        rc2, _, err2 = run("decode", model, "nr.fbs", "-o", "nr.npy")
        rc3, _, err3 = run("predict", model, src, "-o", "nrp.npy")
        ok = rc == rc2 == rc3 == 0 and np.array_equal(np.load(path("nr.npy"))[:, :80],
                                                    np.load(path("nrp.npy")))
        check(ok, "%s: real-time packets decode to predict's envelope, to the bit" % kind,
              err + err2 + err3)
        rc, _, err = run("decode", model, "w40.fbs", "-o", "clean.npy")
        clean = np.load(path("clean.npy")) if rc == 0 else None
        head, packets = v5_packets(path("w40.fbs"))
        # lost, damaged, duplicated, swapped, cut: decoding goes on
        cases = {"two lost": [p for k, p in enumerate(packets) if k not in (5, 20)],
                 "one damaged": [p if k != 9 else p[:-3] + bytes([p[-3] ^ 0x20]) + p[-2:]
                                 for k, p in enumerate(packets)],
                 "one duplicated": packets[:12] + [packets[11]] + packets[12:],
                 "two swapped": packets[:7] + [packets[8], packets[7]] + packets[9:],
                 "cut mid-packet": None}
        for what, ps in cases.items():
            data = head + b"".join(ps) if ps else open(path("w40.fbs"), "rb").read()[:-5]
            open(path("lossy.fbs"), "wb").write(data)
            rc, out, err = run("decode", model, "lossy.fbs", "-o", "lossy.npy", "--wav",
                               "lossy.wav")
            y = np.load(path("lossy.npy")) if rc == 0 else None
            m = re.search(r"concealed (\d+) of (\d+) frames", err)
            ok = (rc == 0 and y is not None and clean is not None and y.shape == clean.shape
                  and np.isfinite(y).all() and os.path.exists(path("lossy.wav"))
                  and (m or what == "one duplicated"))
            if ok and what in ("two lost", "one damaged") and not ranged:
                # a fixed-rate decoder goes on with the next packet: the
                # frames before the first loss are the clean decode's
                first = 5 if what == "two lost" else 9
                ok = (np.array_equal(y[:4 * first], clean[:4 * first])
                      and int(m.group(1)) == 4 * (2 if what == "two lost" else 1))
            check(ok, "%s: %s: decoded, %s" % (kind, what, m.group(0) if m else "nothing "
                                                 "concealed"), err)
    # decoding through bit errors: a fixed-rate stream's bytes flipped at
    # 1% of its bits, the CRCs not believed
    rc, _, err = run("encode", pitch_fixed, src, "-o", "wfix.fbs", "--packet-ms", "40")
    head, packets = v5_packets(path("wfix.fbs"))
    rng = np.random.default_rng(11)
    noisy = []
    for p in packets:
        b = bytearray(p)
        for i in range(1, len(b) - 2):  # the packet, not the file's framing
            for bit in range(8):
                if rng.random() < 0.01:
                    b[i] ^= 1 << bit
        noisy.append(bytes(b))
    open(path("ber.fbs"), "wb").write(head + b"".join(noisy))
    rc, out, err = run("decode", pitch_fixed, "ber.fbs", "-o", "ber.npy", "--through")
    y = np.load(path("ber.npy")) if rc == 0 else None
    check(rc == 0 and y is not None and np.isfinite(y).all(),
          "--through: a fixed-rate stream at 1%% bit errors decodes through them "
          "(%s frames)" % (len(y) if y is not None else 0), err)
    # --resync-state: the fixed-rate network starts afresh at each
    # resynchronisation point (every 3 packets here), so one lost packet
    # leaves the decode the clean one's, to the bit, from the next point on
    rc, _, err = run("encode", pitch_fixed, src, "-o", "rs.fbs", "--packet-ms", "40",
                     "--resync-ms", "120", "--resync-state")
    rc2, _, err2 = run("decode", pitch_fixed, "rs.fbs", "-o", "rs-clean.npy")
    head, packets = v5_packets(path("rs.fbs"))
    open(path("rs-lost.fbs"), "wb").write(head + b"".join(p for k, p in enumerate(packets)
                                                          if k != 4))
    rc3, _, err3 = run("decode", pitch_fixed, "rs-lost.fbs", "-o", "rs-lost.npy")
    ok = rc == rc2 == rc3 == 0
    if ok:
        y0, y = np.load(path("rs-clean.npy")), np.load(path("rs-lost.npy"))
        ok = (y.shape == y0.shape and np.array_equal(y[:16], y0[:16])
              and not np.array_equal(y[16:24], y0[16:24]) and np.array_equal(y[24:], y0[24:]))
    check(ok, "--resync-state: after a lost packet, the clean decode to the bit from the "
          "next resynchronisation point on", err + err2 + err3)
    # a live pipe: raw PCM in 10 ms at a time, packets out as they are
    # made, audio out as it is decoded: output long before the input ends,
    # and behind it by at most the packet and 40 ms
    with wave.open(path(src)) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    for model in (pitch_fixed, pitch_prior):
        enc_err = open(path("live-enc.err"), "w+")
        dec_err = open(path("live-dec.err"), "w+")
        enc = subprocess.Popen([FRAE, "encode", model, "-", "-", "--packet-ms", "40"],
                               cwd=TMP, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=enc_err)
        dec = subprocess.Popen([FRAE, "decode", model, "-", "-"], cwd=TMP, stdin=enc.stdout,
                               stdout=subprocess.PIPE, stderr=dec_err)
        enc.stdout.close()
        fd = dec.stdout.fileno()
        os.set_blocking(fd, False)
        got, lags, broken = b"", [], False
        for i in range(0, len(pcm) - 160, 160):
            try:
                enc.stdin.write(pcm[i:i + 160].tobytes())
                enc.stdin.flush()
            except BrokenPipeError:  # the encoder is gone: say why below
                broken = True
                break
            idle = time.monotonic()
            while time.monotonic() - idle < 0.03:  # until the output rests
                if select.select([fd], [], [], 0.005)[0]:
                    b = os.read(fd, 1 << 16)
                    if b:
                        got, idle = got + b, time.monotonic()
            if i > 4000:
                lags.append((i + 160 - max(0, (len(got) - 44) // 2)) / 16.0)
        before_end = max(0, (len(got) - 44) // 2)
        try:
            enc.stdin.close()
        except BrokenPipeError:
            broken = True
        rest = b""
        os.set_blocking(fd, True)
        rest = dec.stdout.read()
        dec.wait()
        enc.wait()
        worst = max(lags) if lags else 1e9
        enc_err.seek(0)
        dec_err.seek(0)
        why = "encoder exit %s%s: %s; decoder exit %s: %s" % (
            enc.returncode, " (its input pipe broke)" if broken else "",
            enc_err.read()[-2000:], dec.returncode, dec_err.read()[-2000:])
        enc_err.close()
        dec_err.close()
        check(enc.returncode == 0 and dec.returncode == 0 and not broken and
              before_end > len(pcm) * 0.9 and worst <= 40 + 40,
              "live pipe (%s): %d of %d samples out before the input ended; the output "
              "behind the input by %.1f ms at most (median %.1f; the bar: the 40 ms "
              "packet + 40)" % (model, before_end, len(pcm), worst,
                                float(np.median(lags)) if lags else 0), why)


def weights(p):
    """A checkpoint's tensors: their table (names, shapes, offsets) and
    bytes, without the metadata."""
    head, data = read_safetensors(p)
    head.pop("__metadata__", None)
    return head, data


def decodes_own_wavs(model, d):
    """Whether model encodes every WAV of d and decodes each back to a
    WAV, both exit 0."""
    ok = True
    for name in sorted(os.listdir(d)):
        stem = os.path.splitext(name)[0]
        fbs, wav = "%s-%s.fbs" % (model, stem), "%s-%s.wav" % (model, stem)
        rc1, _, err1 = run("encode", model, os.path.join(d, name), "-o", fbs)
        rc2, _, err2 = run("decode", model, fbs, "--wav", wav)
        if rc1 or rc2 or not os.path.getsize(path(wav)):
            print("    %s on %s: encode %d, decode %d: %s" % (model, name, rc1, rc2,
                                                         (err1 + err2).strip()))
            ok = False
    return ok


def recipes():
    """Issue 39: frae train --recipe NAME is the demo's flags, bit for bit;
    audio with no model option trains the speech recipe and says so."""
    print("== recipes by name")
    d = path("rwav")
    os.makedirs(d)
    for i in range(3):
        write_wav(os.path.join(d, "u%d.wav" % i), voiced(0.6, 16000, 100 + 25 * i, i), 16000)
    demo = ["--family", "gru", "--quantizer", "binary", "--latent", "12", "--pitch",
            "--crop", "100", "--batch", "16", "--feedback", "full", "--lr", "0.001",
            "--clip-norm", "1"]
    one = ["--epochs", "1", "--progress", "off"]
    rc1, _, err1 = run("train", d, "--recipe", "speech", *one, "--save", "r-speech.st")
    rc2, _, err2 = run("train", d, *demo, *one, "--save", "r-demo.st")
    check(rc1 == 0 and rc2 == 0 and err1 == "" and err2 == "" and
          weights(path("r-speech.st")) == weights(path("r-demo.st")),
          "--recipe speech trains the demo's flags' model, bit for bit", err1 + err2)
    meta = read_safetensors(path("r-speech.st"))[0]["__metadata__"]
    check(meta.get("train.recipe") == "speech" and
          "train.recipe" not in read_safetensors(path("r-demo.st"))[0]["__metadata__"],
          "the checkpoint records the recipe (train.recipe)", str(meta.get("train.recipe")))
    rc, out, err = run("info", "r-speech.st")
    check(rc == 0 and "recipe speech: the fixed-rate 1.6 kbit/s" in out and
          "latent L 12" in out and "pitch 4" in out, "frae info names the recipe", out + err)
    rc, out, err = run("train", d, *one, "--save", "r-auto.st")
    lines = err.strip().splitlines()
    check(rc == 0 and len(lines) == 1 and "the speech recipe" in lines[0] and
          weights(path("r-auto.st")) == weights(path("r-speech.st")),
          "audio with no model option: the speech recipe, said in one line", err)
    check(rc == 0 and len(lines) == 1 and "audio" in lines[0] and
          "--recipe none" in lines[0],
          "... the line says why (audio) and how to override (--recipe none)", err)
    check(decodes_own_wavs("r-auto.st", d),
          "audio training with no recipe decodes each of its own training WAVs "
          "to a WAV (frae encode, frae decode --wav: exit 0)", "")
    rc, out, err = run("train", d, "--seed", "1", "--lr", "0.001", *one, "--save", "r-auto2.st")
    check(rc == 0 and "speech recipe" in err and
          weights(path("r-auto2.st")) == weights(path("r-speech.st")),
          "... also with training options given (the seed, the learning rate)", err)
    rc, out, err = run("train", d, "--recipe", "none", *one, "--save", "r-none.st")
    _, info, _ = run("info", "r-none.st")
    check(rc == 0 and err == "" and "family dense" in info and "recipe" not in info,
          "--recipe none: frae's plain defaults, nothing said", err + info)
    check(decodes_own_wavs("r-none.st", d),
          "--recipe none still decodes its own training WAVs to WAVs", "")
    rc, out, err = run("train", d, "--latent", "6", *one, "--save", "r-own.st")
    _, info, _ = run("info", "r-own.st")
    check(rc == 0 and err == "" and "family dense" in info and "latent L 6" in info,
          "a model option given: no recipe", err + info)
    rc, out, err = run("train", d, "--latent", "8", "--recipe", "speech", "--batch", "2",
                       *one, "--save", "r-win.st")
    _, info, _ = run("info", "r-win.st")
    check(rc == 0 and "latent L 8" in info and "batch 2" in info and "family gru" in info
          and "recipe speech" in info, "options given with a recipe win", err + info)
    vbr = ["--family", "gru", "--quantizer", "binary", "--latent", "12",
           "--rate-lambda", "0.0002"] + demo[6:]
    rc1, _, err1 = run("train", d, "--recipe", "speech-vbr", *one, "--save", "r-vbr.st")
    rc2, _, err2 = run("train", d, *vbr, *one, "--save", "r-vbr-demo.st")
    _, info, _ = run("info", "r-vbr.st")
    check(rc1 == 0 and rc2 == 0 and
          weights(path("r-vbr.st")) == weights(path("r-vbr-demo.st")) and
          "prior: 16 tanh units" in info and "0.0002 x rate" in info,
          "--recipe speech-vbr: the demo's variable-rate model, bit for bit", err1 + err2)
    rc, out, err = run("train", d, "--recipe", "denoise", *one, "--save", "none")
    check(one_line_error(rc, err, 2, "--recipe denoise trains toward clean targets"),
          "--recipe denoise without --targets: one line", err)
    rc1, _, err1 = run("train", d, "--targets", d, "--recipe", "denoise", *one,
                       "--save", "r-dn.st")
    rc2, _, err2 = run("train", d, "--targets", d, *demo, *one, "--save", "r-dn-demo.st")
    _, info, _ = run("info", "r-dn.st")
    check(rc1 == 0 and rc2 == 0 and "recipe denoise" in info and "targets:" in info and
          weights(path("r-dn.st")) == weights(path("r-dn-demo.st")),
          "--recipe denoise: the demo's denoising flags, bit for bit", err1 + err2)
    rc, out, err = run("train", d, "--recipe", "opus", *one, "--save", "none")
    check(one_line_error(rc, err, 2, "--recipe got 'opus'; expected one of: none, speech"),
          "an unknown recipe: one line listing them", err)
    rc, out, err = run("train", d, "--recipe", "speech", "--resume", "r-speech.st")
    check(one_line_error(rc, err, 2, "--recipe cannot be combined with --resume"),
          "--recipe with --resume: one line", err)
    rc, out, err = run("train", d, "--resume", "r-speech.st", "--epochs", "2",
                       "--progress", "off", "--save", "r-resumed.st")
    _, info, _ = run("info", "r-resumed.st")
    check(rc == 0 and err == "" and "recipe speech" in info and "epoch 2 of 2" in info,
          "a resumed checkpoint keeps its recipe", err + info)
    # decode to a WAV alone (issue 39: -o OUT.npy no longer needed)
    rc, _, err = run("encode", "r-speech.st", os.path.join(d, "u0.wav"), "-o", "r.fbs")
    before = set(os.listdir(TMP))
    rc1, out1, err1 = run("decode", "r-speech.st", "r.fbs", "--wav", "r-only.wav")
    made = set(os.listdir(TMP)) - before
    rc2, _, err2 = run("decode", "r-speech.st", "r.fbs", "-o", "r.npy", "--wav", "r-both.wav")
    check(rc == 0 and rc1 == 0 and rc2 == 0 and made == {"r-only.wav"} and
          "r.fbs -> r-only.wav" in out1 and
          open(path("r-only.wav"), "rb").read() == open(path("r-both.wav"), "rb").read(),
          "frae decode MODEL IN.fbs --wav OUT.wav: the WAV alone, as with -o", err + err1 + err2)
    rc, out, _ = run("train", "--help")
    check(rc == 0 and "--recipe R" in out and "speech-vbr" in out,
          "frae train --help lists --recipe", out[:200])


def main():
    D = 6
    os.makedirs(path("data"))
    # variable lengths: two [T, D] files and one [N, T, D] file
    np.save(path("data/a.npy"), smooth(1, 37, D, 1)[0])
    np.save(path("data/b.npy"), smooth(1, 23, D, 2)[0].astype(np.float64))
    np.save(path("data/c.npy"), smooth(5, 30, D, 3))
    np.save(path("val.npy"), smooth(3, 30, D, 4))

    print("== data files")
    rc, out, err = run("train", "data", *SMALL, "--epochs", "2", "--batch", "3",
                       "--window", "16", "--save", "none")
    check(rc == 0 and out.count("epoch ") == 2 and "7 training sequences" in out,
          "trains on a directory of .npy files of different lengths", err + out)
    bad = {
        "dim.npy": (smooth(1, 10, D + 1, 5)[0], "frame dimension 7 does not match"),
        "nan.npy": (np.where(np.arange(60).reshape(10, 6) == 45, np.nan,
                             smooth(1, 10, D, 5)[0]).astype(np.float32), "NaN at [7, 3]"),
        "int.npy": (np.zeros((10, D), np.int32), "unsupported dtype '<i4'"),
        "fortran.npy": (np.asfortranarray(smooth(1, 10, D, 6)[0]), "Fortran-order"),
        "big.npy": (smooth(1, 10, D, 7)[0].astype(">f4"), "big-endian"),
        "empty.npy": (np.zeros((0, D), np.float32), "empty array"),
    }
    for name, (arr, needle) in bad.items():
        np.save(path(name), arr)
        rc, out, err = run("train", "data/a.npy", name, *SMALL, "--epochs", "1",
                           "--save", "none")
        check(one_line_error(rc, err, 2, needle) and name in err,
              "%s: one line naming the file, exit 2" % name, "rc %d: %s" % (rc, err))
    raw = open(path("data/a.npy"), "rb").read()
    open(path("trunc.npy"), "wb").write(raw[:-100])
    rc, out, err = run("train", "trunc.npy", *SMALL, "--save", "none")
    check(one_line_error(rc, err, 2, "truncated") and "trunc.npy" in err,
          "truncated .npy: one line, exit 2", err)
    rc, out, err = run("train", "nothere.npy", *SMALL, "--save", "none")
    check(one_line_error(rc, err, 2, "cannot open"), "missing file: one line, exit 2", err)

    print("== validation, logs, early stopping, best model")
    rc, out, err = run("train", "data", *SMALL, "--epochs", "3", "--val-split", "0.3",
                       "--log-csv", "log.csv", "--save", "none", "--batch", "2")
    check(rc == 0 and out.count("val_loss") == 3, "--val-split reports val_loss each epoch", err)
    rows = open(path("log.csv")).read().strip().splitlines()
    check(rows[0].startswith("epoch,loss,mae,val_loss") and len(rows) == 4,
          "CSV log: a header and one row per epoch", str(rows))
    rc, out, err = run("train", "data", *SMALL, "--epochs", "20", "--val-data", "val.npy",
                       "--lr", "1e-30", "--patience", "2", "--save", "none",
                       "--save-best", "best.safetensors")
    epochs_run = sum(1 for line in out.splitlines() if line.startswith("epoch "))
    check(rc == 0 and "early stop" in out and epochs_run == 3,
          "early stopping after --patience epochs without improvement", out + err)
    rc, out, err = run("info", "best.safetensors")
    check(rc == 0 and "weights only" in out, "--save-best writes a model", out + err)

    print("== exact resume")
    common = ["data", *SMALL, "--batch", "2", "--window", "10", "--val-split", "0.25",
              "--feedback", "full", "--seed", "5"]
    def straight_and_resumed(args, name):
        """Trains 4 epochs straight and 2 + resume + 2; returns whether all
        ran and the two checkpoints are the same bytes, the errors, and the
        straight one's path."""
        a, b = name + "_straight.safetensors", name + "_halves.safetensors"
        rc1, _, e1 = run("train", *args, "--epochs", "4", "--save", a)
        rc2, _, e2 = run("train", *args, "--epochs", "2", "--save", b)
        rc3, out3, e3 = run("train", "data", "--resume", b, "--epochs", "4", "--save", b)
        same = open(path(a), "rb").read() == open(path(b), "rb").read()
        return rc1 == rc2 == rc3 == 0 and same and "resuming" in out3, e1 + e2 + e3, a

    ok, errs, plain = straight_and_resumed(common, "p")
    check(ok, "4 epochs straight == 2 + resume + 2, to the byte", errs)
    shutil.copy(path("p_halves.safetensors"), path("halves.safetensors"))
    sched = [*common, "--warmup", "5", "--decay-steps", "20", "--lr-floor", "0.1"]
    ok, errs, straight = straight_and_resumed(sched, "s")
    differs = open(path(straight), "rb").read() != open(path(plain), "rb").read()
    rc4, info, e4 = run("info", straight)
    check(ok and rc4 == 0 and differs
          and "warm-up 5 steps, cosine decay over 20 steps to 0.1 x lr" in info,
          "with a learning-rate schedule (warm-up, cosine): 4 epochs straight == 2 + "
          "resume + 2, to the byte; frae info shows it", errs + e4)
    ok, errs, straight = straight_and_resumed([*common, "--crop", "7"], "c")
    hdr, _ = read_safetensors(path(straight))
    meta = hdr.get("__metadata__", {})
    n_crops = hdr.get("train.crop_seq", {}).get("shape", [0])[0]
    rc4, info, e4 = run("info", straight)
    check(ok and rc4 == 0 and meta.get("train.crop") == "7"
          and n_crops > 0 and "crops of 7 frames" in info,
          "with --crop (shuffled random crops, %d this epoch): 4 epochs straight == 2 + "
          "resume + 2, to the byte; frae info shows it" % n_crops, errs + e4)
    # ten runs of one epoch (--resume with --epochs k + 1) are one run of ten
    tens = [*common, "--crop", "7", "--family", "gru", "--normalize", "on"]
    rc1, _, e1 = run("train", *tens, "--epochs", "10", "--save", "ten.safetensors")
    rcs, errs = [run("train", *tens, "--epochs", "1", "--save", "ones.safetensors")], ""
    for k in range(1, 10):
        rcs.append(run("train", "data", "--resume", "ones.safetensors", "--epochs", str(k + 1),
                       "--save", "ones.safetensors"))
    same = open(path("ten.safetensors"), "rb").read() == open(path("ones.safetensors"),
                                                              "rb").read()
    check(rc1 == 0 and all(r[0] == 0 for r in rcs) and same,
          "ten runs of one epoch (--resume --epochs k+1) == one run of ten, to the byte "
          "(GRU, crops, a validation split, normalization)",
          e1 + "".join(r[2] for r in rcs))
    prior = [*common, "--quantizer", "binary", "--rate-lambda", "0.01", "--prior", "8",
             "--log-csv", "prior.csv"]
    ok, errs, straight = straight_and_resumed(prior, "r")
    rc4, info, e4 = run("info", straight)
    rows = open(path("prior.csv")).read().strip().splitlines()
    check(ok and rc4 == 0 and "prior: 8 tanh units on the fed-back frames" in info
          and "distortion + 0.01 x rate" in info and rows[0].endswith(",rate,val_rate"),
          "with a learned prior and a rate term: 4 epochs straight == 2 + resume + 2, to the "
          "byte; frae info shows the prior; the CSV logs rate and val_rate", errs + e4)
    rc, out, err = run("train", "data", "--resume", "halves.safetensors", "--lr", "0.1")
    check(one_line_error(rc, err, 2, "cannot be combined with --resume"),
          "a model option with --resume is refused", err)
    rc, out, err = run("train", "data/c.npy", "--resume", "halves.safetensors")
    check(one_line_error(rc, err, 2, "give the same data"),
          "resuming on other data is refused", err)

    print("== Ctrl-C")
    np.save(path("many.npy"), smooth(1500, 40, D, 9))
    big = ["many.npy", "--enc", "64", "--latent", "4", "--dec", "64", "--history", "2",
           "--batch", "1", "--epochs", "3", "--seed", "3"]
    rc, _, err = run("train", *big, "--save", "ref.safetensors")
    check(rc == 0, "reference run", err)
    p = subprocess.Popen([FRAE, "train", *big, "--save", "int.safetensors"], cwd=TMP,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:  # interrupt early in epoch 2, mid-epoch
        if line.startswith("epoch 1/"):
            p.send_signal(signal.SIGINT)
            break
    out, err = p.communicate()
    check(p.returncode == 130 and "interrupted" in err and os.path.exists(path("int.safetensors")),
          "Ctrl-C saves a checkpoint and exits 130", "rc %d %s" % (p.returncode, err))
    rc, out, err = run("train", "many.npy", "--resume", "int.safetensors", "--save",
                       "int.safetensors")
    same = open(path("ref.safetensors"), "rb").read() == open(path("int.safetensors"), "rb").read()
    check(rc == 0 and same, "resuming after Ctrl-C ends exactly as the uninterrupted run",
          err)

    rc, _, err = run("train", *big, "--crop", "15", "--save", "cref.safetensors")
    check(rc == 0, "reference run with crops", err)
    p = subprocess.Popen([FRAE, "train", *big, "--crop", "15", "--save", "cint.safetensors"],
                         cwd=TMP, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("epoch 1/"):
            p.send_signal(signal.SIGINT)
            break
    out, err = p.communicate()
    rc, out2, err2 = run("train", "many.npy", "--resume", "cint.safetensors", "--save",
                         "cint.safetensors")
    same = (open(path("cref.safetensors"), "rb").read()
            == open(path("cint.safetensors"), "rb").read())
    check(p.returncode == 130 and rc == 0 and same,
          "with --crop: resuming after Ctrl-C mid-epoch ends exactly as the uninterrupted "
          "run", "rc %d %s %s" % (p.returncode, err, err2))

    print("== targets other than inputs (a denoising autoencoder)")
    rng = np.random.default_rng(8)
    for sub in ("clean", "noisy", "vclean", "vnoisy", "short", "wide"):
        os.makedirs(path(sub), exist_ok=True)
    for i in range(10):
        t = 30 + 4 * i
        c = (0.5 * np.sin(np.arange(t)[:, None] * rng.uniform(0.05, 0.2, (1, D)))).astype(np.float32)
        n = (c + rng.normal(0, 0.15, c.shape)).astype(np.float32)
        np.save(path("clean/s%02d.npy" % i), c)
        np.save(path("noisy/s%02d.npy" % i), n)
        np.save(path("short/s%02d.npy" % i), c[:-1] if i == 6 else c)
        np.save(path("wide/s%02d.npy" % i), np.concatenate([c, c[:, :1]], 1))
        if i < 3:
            np.save(path("vclean/s%02d.npy" % i), c)
            np.save(path("vnoisy/s%02d.npy" % i), n)
    den = ["noisy", "--targets", "clean", *SMALL, "--batch", "3", "--seed", "4"]
    rc, out, err = run("train", *den, "--epochs", "4", "--save", "den4.safetensors",
                       "--log-csv", "den.csv")
    losses = [float(l.split("loss ")[1].split()[0]) for l in out.splitlines()
              if l.startswith("epoch ")]
    rc2, info, _ = run("info", "den4.safetensors")
    check(rc == 0 and len(losses) == 4 and losses[-1] < losses[0] and "targets:" in info,
          "training toward targets: loss goes down, info says so", err + info)
    rc, _, err = run("train", *den, "--epochs", "2", "--save", "den2.safetensors")
    rc, _, err = run("train", "noisy", "--targets", "clean", "--resume", "den2.safetensors",
                     "--epochs", "4", "--save", "den2.safetensors")
    check(rc == 0 and open(path("den4.safetensors"), "rb").read()
          == open(path("den2.safetensors"), "rb").read(),
          "resuming with targets ends to the byte as the straight run", err)
    rc, _, err = run("train", "noisy", "--resume", "den2.safetensors", "--epochs", "5")
    check(one_line_error(rc, err, 2, "give --targets again"),
          "resuming a targets model without --targets is refused", err)
    rc, _, err = run("train", "clean", "--targets", "noisy", "--resume", "ref.safetensors",
                     "--epochs", "9")
    check(one_line_error(rc, err, 2, "cannot be added when resuming"),
          "adding --targets to a resumed plain model is refused", err)
    rc, _, err = run("train", "noisy", "--targets", "vclean", *SMALL, "--epochs", "1")
    check(one_line_error(rc, err, 2, "10 input sequences but 3 target sequences"),
          "a count mismatch: one line", err)
    rc, _, err = run("train", "noisy", "--targets", "short", *SMALL, "--epochs", "1")
    check(one_line_error(rc, err, 2, "pair 6 (") and "s06.npy" in err
          and "has 54 input frames and 53 target frames" in err,
          "a length mismatch: one line naming the pair", err)
    rc, _, err = run("train", "noisy", "--targets", "wide", *SMALL, "--epochs", "1")
    check(one_line_error(rc, err, 2, "frame dimension"),
          "a frame-dimension mismatch: one line", err)
    rc, _, err = run("train", "noisy", "--targets", "clean", "--val-data", "vnoisy", *SMALL,
                     "--epochs", "1")
    check(one_line_error(rc, err, 2, "needs --val-targets"),
          "--val-data without --val-targets is refused", err)
    rc, _, err = run("train", "noisy", "--val-targets", "vclean", *SMALL, "--epochs", "1")
    check(one_line_error(rc, err, 2, "--val-targets needs --targets"),
          "--val-targets without --targets is refused", err)
    rc, out, err = run("train", *den, "--val-data", "vnoisy", "--val-targets", "vclean",
                       "--epochs", "1", "--save", "none")
    check(rc == 0 and "val_loss" in out, "validation pairs: val_loss against the targets",
          err)
    rc, _, err = run("predict", "den4.safetensors", "noisy/s03.npy", "-o", "den_y.npy")
    check(rc == 0 and np.load(path("den_y.npy")).shape == np.load(path("noisy/s03.npy")).shape,
          "predict is unchanged for a targets model", err)

    print("== divergence keeps the last good checkpoint")
    rc, out, err = run("train", "data", *SMALL, "--lr", "3e5", "--epochs", "50",
                       "--save", "keep.safetensors")
    # a step that diverges is caught by the next forward pass: the next
    # batch's, or for an epoch's last step the check before its save
    import re
    found = re.search(r"diverged (at|in the last step of) epoch (\d+)", err)
    last_good = int(found.group(2)) - 1 if found else -1  # epoch N was not saved
    if last_good == 0:
        kept = not os.path.exists(path("keep.safetensors"))
        info = "nothing saved"
    else:
        rc2, info, _ = run("info", "keep.safetensors")
        rc3, _, err3 = run("predict", "keep.safetensors", "data/a.npy", "-o", "keep_y.npy")
        kept = (rc2 == 0 and "epoch %d of" % last_good in info and rc3 == 0
                and np.isfinite(np.load(path("keep_y.npy"))).all())
    check(one_line_error(rc, err, 1, "diverged") and found and kept,
          "diverged: exit 1, one line; the checkpoint is the last good epoch's (%d), and "
          "predicts finite frames" % last_good, "rc %d %s | %s" % (rc, err, info))

    print("== predict, info")
    rc, out, err = run("predict", "ref.safetensors", "val.npy", "-o", "rec.npy")
    rec = np.load(path("rec.npy")) if os.path.exists(path("rec.npy")) else None
    check(rc == 0 and rec is not None and rec.shape == (3, 30, D) and "mse" in out,
          "predict writes the input's shape", err)
    np.save(path("one.npy"), np.load(path("val.npy"))[1])
    rc, out, err = run("predict", "ref.safetensors", "one.npy", "-o", "one_rec.npy")
    check(rc == 0 and np.array_equal(np.load(path("one_rec.npy")), rec[1]),
          "predict on [T, D] equals the same sequence in a batch", err)
    rc, out, err = run("predict", "ref.safetensors", "data/a.npy", "-o", "x.npy", "--bogus")
    check(one_line_error(rc, err, 2, "unknown option"), "predict: unknown option, exit 2", err)
    rc, out, err = run("predict", "ref.safetensors", "dim.npy", "-o", "x.npy")
    check(one_line_error(rc, err, 2, "does not match the model"), "predict: wrong D, exit 2", err)
    rc, out, err = run("info", "ref.safetensors")
    check(rc == 0 and "parameters" in out and "epoch 3 of 3" in out,
          "info shows architecture and training state", out + err)
    raw = open(path("ref.safetensors"), "rb").read()
    open(path("cut.safetensors"), "wb").write(raw[: len(raw) // 2])
    rc, out, err = run("info", "cut.safetensors")
    check(one_line_error(rc, err, 2, "truncated"), "info on a truncated checkpoint: exit 2", err)
    hdr, data = read_safetensors(path("ref.safetensors"))
    w = hdr["enc.0.weight"]
    check(w["shape"] == [64, 3 * D] and hdr["__metadata__"]["frae.format"] == "frae-model",
          "checkpoint tensors use PyTorch names and [out, in] layouts", str(w))

    print("== imports")
    rng = np.random.default_rng(11)
    K, L, enc, dec = 2, 3, [10, 8], [8, 10]
    widths = [D + K * D] + enc + [L]
    dwidths = [L + K * D] + dec + [D]
    keras = []
    for a, b in list(zip(widths, widths[1:])) + list(zip(dwidths, dwidths[1:])):
        keras += [rng.uniform(-0.5, 0.5, (a, b)).astype(np.float32),
                  rng.uniform(-0.1, 0.1, b).astype(np.float32)]
    x = smooth(1, 25, D, 12)[0]
    np.save(path("x.npy"), x)
    for act, quant in (("relu", "none"), ("tanh", "uniform:5")):
        ref = frae_numpy.forward([w.astype(np.float64) for w in keras], x.astype(np.float64),
                                 K, len(enc), act, quant.split(":")[0],
                                 int(quant.split(":")[1]) if ":" in quant else 0)
        np.savez(path("keras.npz"), *keras)
        rc, out, err = run("import", "keras.npz", "-o", "k.safetensors", "--activation", act,
                           "--quantizer", quant)
        rc2, _, err2 = run("predict", "k.safetensors", "x.npy", "-o", "ky.npy")
        ky = np.load(path("ky.npy")) if rc2 == 0 else None
        rel = np.abs(ky - ref).max() / np.abs(ref).max() if ky is not None else 1
        check(rc == 0 and rc2 == 0 and rel <= 1e-5,
              "Keras .npz (%s, %s) reproduces the NumPy reference (rel %.1e)" % (act, quant, rel),
              err + err2)
        # the same weights as a PyTorch state_dict in safetensors, written by hand
        names = ["enc.0", "enc.1", "latent", "dec.0", "dec.1", "out"]
        tensors, blob, off = {}, b"", 0
        for i, n in enumerate(names):
            for suffix, arr in (("weight", keras[2 * i].T), ("bias", keras[2 * i + 1])):
                b = np.ascontiguousarray(arr, "<f4").tobytes()
                tensors[n + "." + suffix] = {"dtype": "F32", "shape": list(arr.shape),
                                             "data_offsets": [off, off + len(b)]}
                blob += b
                off += len(b)
        head = json.dumps(tensors).encode()
        open(path("torch.safetensors"), "wb").write(struct.pack("<Q", len(head)) + head + blob)
        rc, out, err = run("import", "torch.safetensors", "-o", "t.safetensors",
                           "--activation", act, "--quantizer", quant)
        rc2, _, err2 = run("predict", "t.safetensors", "x.npy", "-o", "ty.npy")
        same = rc2 == 0 and np.array_equal(np.load(path("ty.npy")), ky)
        check(rc == 0 and same, "PyTorch safetensors (%s) gives the same model" % act,
              err + err2)
    # weights trained on z-scored frames, imported with their statistics:
    # the model takes and gives frames in their own units, exactly the
    # plain model on (x - mean) / std, scaled back (float32, as frae)
    xs = np.load(path("x.npy"))
    d = xs.shape[-1]
    mean = np.linspace(-0.5, 0.5, d).astype("<f4")
    std = np.linspace(0.5, 2.0, d).astype("<f4")
    np.save(path("stats.npy"), np.stack([mean, std]))
    np.save(path("xz.npy"), ((xs - mean) / std).astype("<f4"))
    rc, out, err = run("import", "torch.safetensors", "-o", "tn.safetensors", "--activation",
                       act, "--quantizer", quant, "--normalize", "stats.npy")
    rc2, _, err2 = run("predict", "tn.safetensors", "x.npy", "-o", "tny.npy")
    rc3, _, err3 = run("predict", "t.safetensors", "xz.npy", "-o", "tzy.npy")
    rc4, info, _ = run("info", "tn.safetensors")
    same = (rc2 == rc3 == 0 and np.array_equal(
        np.load(path("tny.npy")), (np.load(path("tzy.npy")) * std + mean).astype("<f4")))
    check(rc == rc4 == 0 and same and "normalization: per band" in info,
          "import --normalize: the model == the plain model on z-scored frames, scaled "
          "back, to the bit", err + err2 + err3)
    np.save(path("stats.npy"), np.stack([mean, np.zeros(d, "<f4")]))
    rc, out, err = run("import", "torch.safetensors", "-o", "tn.safetensors", "--normalize",
                       "stats.npy")
    check(one_line_error(rc, err, 2, "has std 0"), "import --normalize with a zero std: "
          "one line, exit 2", err)
    np.savez_compressed(path("zipped.npz"), *keras)
    np.savez(path("stored.npz"), *keras)
    rc, out, err = run("import", "zipped.npz", "-o", "z.safetensors")
    rc2, _, err2 = run("import", "stored.npz", "-o", "s.safetensors")
    same = rc == rc2 == 0 and (open(path("z.safetensors"), "rb").read()
                               == open(path("s.safetensors"), "rb").read())
    check(same, "np.savez_compressed .npz imports as np.savez's, to the byte", err + err2)
    np.savez(path("odd.npz"), *keras[:-1])
    rc, out, err = run("import", "odd.npz", "-o", "z.safetensors")
    check(one_line_error(rc, err, 2, "pairs"), "odd number of Keras arrays: exit 2", err)
    print("== the GRU family")
    gru = ["data", "--family", "gru", "--enc", "12,8", "--latent", "3", "--dec", "10",
           "--history", "1", "--batch", "2", "--window", "10", "--val-split", "0.25",
           "--feedback", "full", "--seed", "5", "--quantizer", "uniform:5"]
    rc1, _, e1 = run("train", *gru, "--epochs", "4", "--save", "gstraight.safetensors")
    rc2, _, e2 = run("train", *gru, "--epochs", "2", "--save", "ghalves.safetensors")
    rc3, out3, e3 = run("train", "data", "--resume", "ghalves.safetensors", "--epochs", "4",
                        "--save", "ghalves.safetensors")
    same = open(path("gstraight.safetensors"), "rb").read() == \
        open(path("ghalves.safetensors"), "rb").read()
    check(rc1 == rc2 == rc3 == 0 and same and "resuming" in out3,
          "GRU: 4 epochs straight == 2 + resume + 2, to the byte", e1 + e2 + e3)
    rc, out, err = run("info", "gstraight.safetensors")
    check(rc == 0 and "family gru" in out and "GRU 12" in out and "GRU 10" in out,
          "info shows the family and the GRUs", out + err)
    hdr, _ = read_safetensors(path("gstraight.safetensors"))
    check(hdr["enc.0.weight_ih"]["shape"] == [36, D + 10 + D] and
          hdr["dec.0.weight_hh"]["shape"] == [30, 10] and hdr["dec.0.bias_hh"]["shape"] == [30],
          "GRU tensors use torch.nn.GRUCell's names and shapes", str(hdr.get("enc.0.weight_ih")))
    for src in ("val.npy", "one.npy"):
        rc, out, err = run("encode", "gstraight.safetensors", src, "-o", "g.fbs")
        rc2, _, err2 = run("decode", "gstraight.safetensors", "g.fbs", "-o", "gdec.npy")
        rc3, _, err3 = run("predict", "gstraight.safetensors", src, "-o", "gpred.npy")
        ok = rc == rc2 == rc3 == 0 and np.array_equal(np.load(path("gdec.npy")),
                                                      np.load(path("gpred.npy")))
        check(ok, "GRU: decode(encode(%s)) equals predict, to the bit" % src,
              err + err2 + err3)
    rc, out, err = run("decode", "ref.safetensors", "g.fbs", "-o", "x.npy")
    check(one_line_error(rc, err, 2, ""), "a GRU stream refused by a dense model", err)
    # Keras GRU(reset_after=True) weights: the gates z, r, h
    K, L, He, Hd = 1, 3, 7, 5
    gw = [rng.uniform(-0.5, 0.5, (D + Hd + K * D, 3 * He)),
          rng.uniform(-0.5, 0.5, (He, 3 * He)), rng.uniform(-0.2, 0.2, (2, 3 * He)),
          rng.uniform(-0.5, 0.5, (He, 6)), rng.uniform(-0.1, 0.1, 6),
          rng.uniform(-0.5, 0.5, (6, L)), rng.uniform(-0.1, 0.1, L),
          rng.uniform(-0.5, 0.5, (L + K * D, 3 * Hd)),
          rng.uniform(-0.5, 0.5, (Hd, 3 * Hd)), rng.uniform(-0.2, 0.2, (2, 3 * Hd)),
          rng.uniform(-0.5, 0.5, (Hd, D)), rng.uniform(-0.1, 0.1, D)]
    gw = [w.astype(np.float32) for w in gw]
    ref = frae_numpy.forward_gru([w.astype(np.float64) for w in gw], x.astype(np.float64),
                                 K, 1, 0, "tanh")
    np.savez(path("kgru.npz"), *gw)
    rc, out, err = run("import", "kgru.npz", "-o", "kg.safetensors", "--activation", "tanh",
                       "--family", "gru")
    rc2, _, err2 = run("predict", "kg.safetensors", "x.npy", "-o", "kgy.npy")
    kgy = np.load(path("kgy.npy")) if rc2 == 0 else None
    rel = np.abs(kgy - ref).max() / np.abs(ref).max() if kgy is not None else 1
    check(rc == 0 and rc2 == 0 and rel <= 1e-5 and "gru" in out,
          "Keras GRU .npz reproduces the NumPy reference (rel %.1e)" % rel, err + err2)
    rc, out, err = run("import", "kgru.npz", "-o", "kg2.safetensors", "--family", "dense")
    check(one_line_error(rc, err, 2, "holds a gru model"),
          "importing a GRU model as dense is refused", err)

    def torch_gru_file(name, weights, bad_hh=False):
        """The Keras weights as torch.nn.GRUCell tensors: [3H, in], gates r, z, n."""
        def gates(a):  # Keras z, r, h -> torch r, z, n along the last axis
            H = a.shape[-1] // 3
            return np.concatenate([a[..., H:2 * H], a[..., :H], a[..., 2 * H:]], axis=-1)
        (k0, r0, b0, k1, b1, k2, b2, k3, r3, b3, k4, b4) = weights
        named = {"enc.0.weight_ih": gates(k0).T, "enc.0.weight_hh": gates(r0).T,
                 "enc.0.bias_ih": gates(b0[0]), "enc.0.bias_hh": gates(b0[1]),
                 "enc.1.weight": k1.T, "enc.1.bias": b1, "latent.weight": k2.T,
                 "latent.bias": b2, "dec.0.weight_ih": gates(k3).T,
                 "dec.0.weight_hh": gates(r3).T[:, :-1] if bad_hh else gates(r3).T,
                 "dec.0.bias_ih": gates(b3[0]), "dec.0.bias_hh": gates(b3[1]),
                 "out.weight": k4.T, "out.bias": b4}
        tensors, blob, off = {}, b"", 0
        for n, arr in named.items():
            b = np.ascontiguousarray(arr, "<f4").tobytes()
            tensors[n] = {"dtype": "F32", "shape": list(arr.shape),
                          "data_offsets": [off, off + len(b)]}
            blob += b
            off += len(b)
        head = json.dumps(tensors).encode()
        open(path(name), "wb").write(struct.pack("<Q", len(head)) + head + blob)

    torch_gru_file("tgru.safetensors", gw)
    rc, out, err = run("import", "tgru.safetensors", "-o", "tg.safetensors", "--activation",
                       "tanh")
    rc2, _, err2 = run("predict", "tg.safetensors", "x.npy", "-o", "tgy.npy")
    same = rc2 == 0 and kgy is not None and np.array_equal(np.load(path("tgy.npy")), kgy)
    check(rc == 0 and same, "PyTorch GRUCell safetensors give the same model as Keras",
          err + err2)
    torch_gru_file("tbad.safetensors", gw, bad_hh=True)
    rc, out, err = run("import", "tbad.safetensors", "-o", "x.safetensors")
    check(one_line_error(rc, err, 2, "'dec.0.weight_hh' should be a float [15, 5] matrix"),
          "a wrong GRU gate shape names the tensor and the shape it needs", err)
    bad = list(gw)
    bad[8] = bad[8][:, :-3]
    np.savez(path("kbad.npz"), *bad)
    rc, out, err = run("import", "kbad.npz", "-o", "x.safetensors")
    check(one_line_error(rc, err, 2, "arr_8") and "[5, 15]" in err,
          "a wrong Keras recurrent kernel names the array and the shape it needs", err)
    rc, out, err = run("predict", "kg.safetensors", "dim.npy", "-o", "x.npy")
    check(one_line_error(rc, err, 2, ""), "GRU model on data of another dimension: exit 2", err)

    print("== codec: encode, decode")
    rc, out, err = run("train", "data", *SMALL, "--quantizer", "uniform:6", "--epochs", "2",
                       "--save", "q.safetensors", "--seed", "8")
    rc2, out2, err2 = run("train", "data", *SMALL, "--quantizer", "uniform:6", "--epochs", "2",
                          "--save", "q2.safetensors", "--seed", "9")
    check(rc == 0 and rc2 == 0, "codec models trained", err + err2)
    for src in ("val.npy", "one.npy"):
        rc, out, err = run("encode", "q.safetensors", src, "-o", "s.fbs")
        rc2, _, err2 = run("decode", "q.safetensors", "s.fbs", "-o", "dec.npy")
        rc3, _, err3 = run("predict", "q.safetensors", src, "-o", "pred.npy")
        dec, pred = (np.load(path("dec.npy")), np.load(path("pred.npy"))) if rc2 == rc3 == 0 else (0, 1)
        check(rc == rc2 == rc3 == 0 and np.array_equal(dec, pred) and dec.shape == np.load(path(src)).shape,
              "decode(encode(%s)) equals predict, to the bit, same shape" % src, err + err2 + err3)
    n = 4 * 3  # L x ceil(log2 6) bits
    check("%d bits/frame" % n in out and "%.3f kbit/s at 100 frames/s" % (n * 100 / 1000) in out
          and "snr" in out and "mse" in out, "encode reports bitrate and distortion", out)
    rc, out, _ = run("encode", "q.safetensors", "val.npy", "-o", "s50.fbs", "--frame-rate", "50")
    check("%.3f kbit/s at 50 frames/s" % (n * 50 / 1000) in out, "--frame-rate", out)
    size = os.path.getsize(path("s.fbs"))
    check(size == 36 + (30 * n + 7) // 8 + 4, "the stream is header + %d bits per frame + CRC" % n,
          str(size))
    run("encode", "q.safetensors", "val.npy", "-o", "a.fbs")
    run("encode", "q.safetensors", "val.npy", "-o", "b.fbs")
    subprocess.run([FRAE, "encode", "q.safetensors", "val.npy", "-o", "c.fbs", "--search", "0"], cwd=TMP,
                   env=dict(os.environ, FRAE_ISA="scalar"), capture_output=True)
    a, b, c = (open(path(f), "rb").read() for f in ("a.fbs", "b.fbs", "c.fbs"))
    check(a == b == c, "same model and input: the same bitstream, on every run and ISA")
    raw = open(path("a.fbs"), "rb").read()
    open(path("cut.fbs"), "wb").write(raw[:-7])
    flip = bytearray(raw)
    flip[40] ^= 0x10
    open(path("flip.fbs"), "wb").write(bytes(flip))
    for name, needle in (("cut.fbs", "truncated"), ("flip.fbs", "corrupted"),
                         ("val.npy", "not a frae bitstream"), ("nothere.fbs", "cannot open")):
        rc, out, err = run("decode", "q.safetensors", name, "-o", "x.npy")
        check(one_line_error(rc, err, 2, needle) and name in err,
              "decode %s: one line, exit 2" % name, "rc %d %s" % (rc, err))
    rc, out, err = run("decode", "q2.safetensors", "a.fbs", "-o", "x.npy")
    check(one_line_error(rc, err, 2, "another model"), "decode with another model: exit 2", err)
    rc, out, err = run("encode", "q.safetensors", "dim.npy", "-o", "x.fbs")
    check(one_line_error(rc, err, 2, "does not match the model"), "encode: wrong D, exit 2", err)
    rc, out, err = run("encode", "ref.safetensors", "many.npy", "-o", "f.fbs")
    check(rc == 0 and "128 bits/frame (4 x 32 bits)" in out,
          "a model without a quantizer streams 32-bit floats", out + err)
    print("== variable rate: a prior, stream version 4")
    rc, out, err = run("train", "data", *SMALL, "--family", "gru", "--quantizer", "uniform:6",
                       "--rate-lambda", "0.01", "--epochs", "2", "--save", "vr.safetensors",
                       "--val-split", "0.25")
    check(rc == 0 and "prior: 16 units" in out and " rate " in out and "val_rate" in out,
          "train --rate-lambda: a prior of 16 units by default; rate and val_rate each epoch",
          out + err)
    for src in ("val.npy", "one.npy"):
        rc, out, err = run("encode", "vr.safetensors", src, "-o", "v.fbs", "--packet-frames", "4")
        rc2, _, err2 = run("decode", "vr.safetensors", "v.fbs", "-o", "dec.npy")
        rc3, _, err3 = run("predict", "vr.safetensors", src, "-o", "pred.npy")
        dec, pred = (np.load(path("dec.npy")), np.load(path("pred.npy"))) if rc2 == rc3 == 0 else (0, 1)
        check(rc == rc2 == rc3 == 0 and np.array_equal(dec, pred), "version 4: decode(encode(%s)) "
              "equals predict, to the bit" % src, err + err2 + err3)
    raw = open(path("v.fbs"), "rb").read()
    m = re.search(r"-> v.fbs \((\d+) bytes: header (\d+), (\d+) packets", out)
    m2 = re.search(r"bitrate: ([0-9.]+) bits/frame on average", out)
    frames = np.load(path("one.npy")).shape[0]
    check(raw[6] == 4 and m and int(m.group(1)) == len(raw) and m2
          and abs(float(m2.group(1)) - 8.0 * len(raw) / frames) < 0.01,
          "encode reports the bytes and bits per frame the file takes, headers included", out)
    subprocess.run([FRAE, "encode", "vr.safetensors", "one.npy", "-o", "vs.fbs", "--search", "0",
                    "--packet-frames", "4"], cwd=TMP, env=dict(os.environ, FRAE_ISA="scalar"),
                   capture_output=True)
    check(open(path("vs.fbs"), "rb").read() == raw, "the same version-4 stream on every ISA")
    rc, out, err = run("import", "vr.safetensors", "-o", "vri.safetensors", "--quantizer",
                       "uniform:6")
    rc2, _, err2 = run("encode", "vri.safetensors", "one.npy", "-o", "vi.fbs",
                       "--packet-frames", "4")
    check(rc == rc2 == 0 and open(path("vi.fbs"), "rb").read() == raw,
          "a prior model's state_dict imports with its prior: the same stream", err + err2)
    # the packets (README, "Bitstream version 4"): the payload's length as
    # a varint, the payload, CRC-16/IBM-3740 of the header, the bytes
    # before it and the packet's index (u32)
    starts, at = [], int(m.group(2)) if m else 0
    header = raw[:at]
    while m and at < len(raw):
        n, shift, lb = 0, 0, 0
        while True:
            b = raw[at + lb]
            n |= (b & 0x7f) << shift
            shift, lb = shift + 7, lb + 1
            if not b & 0x80:
                break
        end = at + lb + n
        crc = binascii.crc_hqx(header + raw[at:end] + struct.pack("<I", len(starts)), 0xffff)
        starts.append((at, crc == raw[end] | raw[end + 1] << 8))
        at = end + 2
    check(m and at == len(raw) and len(starts) == int(m.group(3)) and all(s[1] for s in starts),
          "version 4's packets walk as documented: each CRC-16 over the header, the packet and "
          "its index", str(starts))
    # packet 1 dropped; a byte of packet 0 flipped
    p1, p2 = starts[1][0], starts[2][0]
    open(path("lost.fbs"), "wb").write(raw[:p1] + raw[p2:])
    flip = bytearray(raw)
    flip[starts[0][0] + 4] ^= 1
    open(path("vflip.fbs"), "wb").write(bytes(flip))
    head = bytearray(raw)
    head[12] ^= 1  # the model's hash: every packet's CRC covers the header
    open(path("vhead.fbs"), "wb").write(bytes(head))
    for name, needle in (("lost.fbs", "packet 1 is missing: found packet 2"),
                         ("vflip.fbs", "packet 0: corrupted"),
                         ("vhead.fbs", "packet 0: corrupted (CRC-16 mismatch: the packet or "
                                       "the header)")):
        rc, out, err = run("decode", "vr.safetensors", name, "-o", "x.npy")
        check(one_line_error(rc, err, 2, needle), "decode %s: one line naming the packet" % name,
              "rc %d %s" % (rc, err))
    rc, out, err = run("decode", "q.safetensors", "v.fbs", "-o", "x.npy")
    check(one_line_error(rc, err, 2, "version 4"), "a version-4 stream and a model without "
          "a prior: one line", err)
    rc, out, err = run("encode", "q.safetensors", "val.npy", "-o", "x.fbs", "--packet-frames", "4")
    check(one_line_error(rc, err, 2, "has no prior"), "--packet-frames without a prior: one "
          "line", err)
    # the encoder's search: any decoder reads its stream and gives the
    # encoder's frames (encode's distortion is the decoded frames'); with a
    # rate weight the stream is smaller; the same stream on every ISA
    args = ("vr.safetensors", "one.npy", "-o", "vsearch.fbs", "--packet-frames", "4",
            "--search", "2", "--search-lambda", "0.05")
    rc, out, err = run("encode", *args)
    rc2, _, err2 = run("decode", "vr.safetensors", "vsearch.fbs", "-o", "dsearch.npy")
    ms = re.search(r"distortion: mse ([0-9.e+-]+)", out)
    ok = rc == rc2 == 0 and ms
    if ok:
        d = np.load(path("dsearch.npy")).astype(np.float64)
        x = np.load(path("one.npy")).astype(np.float64)
        mse = float(np.mean((d - x) ** 2))
        ok = abs(mse - float(ms.group(1))) <= 1e-5 * mse
    searched = open(path("vsearch.fbs"), "rb").read()
    check(ok and len(searched) < len(raw), "encode --search 2 --search-lambda 0.05: %d bytes "
          "against %d; the decoded frames are the encoder's (mse %s)"
          % (len(searched), len(raw), ms.group(1) if ms else "?"), out + err + err2)
    subprocess.run([FRAE, "encode", *args[:3], "vsearch2.fbs", *args[4:]], cwd=TMP,
                   env=dict(os.environ, FRAE_ISA="scalar"), capture_output=True)
    check(open(path("vsearch2.fbs"), "rb").read() == searched,
          "the search makes the same stream on every ISA")
    print("== bf16 weights: frae convert")
    rc, out, err = run("convert", "q.safetensors", "-o", "q16.safetensors", "--weights", "bf16")
    check(rc == 0 and os.path.getsize(path("q16.safetensors")) < 0.6 * os.path.getsize(path("q.safetensors")),
          "convert --weights bf16 halves the checkpoint", out + err)
    with open(path("q16.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
    check(head["enc.0.weight"]["dtype"] == "BF16" and head["enc.0.bias"]["dtype"] == "F32"
          and head["__metadata__"]["frae.weights"] == "bf16",
          "bf16 checkpoint: BF16 weight tensors, F32 biases", json.dumps(head)[:300])
    rc, info, err = run("info", "q16.safetensors")
    check(rc == 0 and "bf16 weights" in info, "info shows the weight format", info + err)
    rc, out, err = run("encode", "q16.safetensors", "val.npy", "-o", "s16.fbs")
    rc2, _, err2 = run("decode", "q16.safetensors", "s16.fbs", "-o", "dec16.npy")
    rc3, _, err3 = run("predict", "q16.safetensors", "val.npy", "-o", "pred16.npy")
    ok = rc == rc2 == rc3 == 0 and np.array_equal(np.load(path("dec16.npy")), np.load(path("pred16.npy")))
    check(ok, "bf16 model: decode(encode(x)) equals predict, to the bit", err + err2 + err3)
    rc, out, err = run("convert", "q16.safetensors", "-o", "q16f.safetensors", "--weights", "f32")
    rc2, _, err2 = run("decode", "q16f.safetensors", "s16.fbs", "-o", "dec16f.npy")
    ok = rc == rc2 == 0 and np.array_equal(np.load(path("dec16f.npy")), np.load(path("dec16.npy")))
    check(ok, "an f32 model of the rounded weights decodes the bf16 stream identically", err + err2)
    rc, out, err = run("decode", "q16.safetensors", "a.fbs", "-o", "x.npy")
    check(one_line_error(rc, err, 2, "another model"), "bf16 model refuses the f32 model's stream", err)
    rc, out, err = run("convert", "q.safetensors", "-o", "x.safetensors", "--weights", "fp8")
    check(one_line_error(rc, err, 2, "not bf16 or f32"), "convert --weights fp8: one line, exit 2", err)
    rc, out, err = run("convert", "q.safetensors", "-o", "x.safetensors")
    check(one_line_error(rc, err, 2, "--weights"), "convert without --weights: one line, exit 2", err)
    rc, out, err = run("train", "data", "--resume", "q16.safetensors")
    check(one_line_error(rc, err, 2, "inference only"), "training a bf16 model is refused", err)
    print("== speech: audio in and out")
    os.makedirs(path("speech"))
    for i in range(6):
        write_wav(path("speech/u%d.wav" % i), voiced(1.2 + 0.2 * i, 16000, 110 + 20 * i, i), 16000)
    write_wav(path("at22k.wav"), voiced(1.0, 22050, 150, 9), 22050)
    rc, out, err = run("features", "speech/u0.wav", "-o", "f0.npy")
    f0 = np.load(path("f0.npy")) if rc == 0 else None
    check(rc == 0 and f0.shape == (1 + (19200 - 400) // 160, 80),
          "frae features: [T, 80] log-mel frames", err)
    rc, out, err = run("train", "speech", "--enc", "64", "--dec", "64", "--latent", "8",
                       "--quantizer", "binary", "--epochs", "2", "--save", "sp.safetensors",
                       "--batch", "3")
    rc2, info, _ = run("info", "sp.safetensors")
    check(rc == 0 and "80 mels, 16000 Hz" in info, "trains on WAV files; the model records "
          "its features", err + info)
    rc, out, err = run("encode", "sp.safetensors", "at22k.wav", "-o", "sp.fbs")
    rc2, out2, err2 = run("decode", "sp.safetensors", "sp.fbs", "-o", "sp.npy", "--wav", "sp.wav",
                          "--gl-iters", "8")
    ok = rc == rc2 == 0 and os.path.exists(path("sp.wav"))
    if ok:
        with wave.open(path("sp.wav")) as w:
            secs = w.getnframes() / w.getframerate()
        ok = w.getframerate() == 16000 and abs(secs - 1.0) < 0.05
    check(ok, "encode a 22.05 kHz WAV (resampled), decode --wav to 16 kHz audio", err + err2)
    # '-': the WAV from stdin, the stream and the audio to stdout, the
    # reports to stderr; the same bytes as through files
    with open(path("at22k.wav"), "rb") as wav_in:
        p = subprocess.run([FRAE, "encode", "sp.safetensors", "-", "-o", "-", "--search", "0"], cwd=TMP,
                           stdin=wav_in, capture_output=True, timeout=120)
    same_stream = p.returncode == 0 and p.stdout == open(path("sp.fbs"), "rb").read()
    p2 = subprocess.run([FRAE, "decode", "sp.safetensors", "sp.fbs", "-o", "/dev/null",
                         "--wav", "-", "--gl-iters", "8"], cwd=TMP, capture_output=True,
                        timeout=120)
    same_wav = ok and p2.returncode == 0 and p2.stdout == open(path("sp.wav"), "rb").read()
    check(same_stream and same_wav and b"bitrate" in p.stderr,
          "encode - -o - and decode --wav -: stdin and stdout, the same bytes as files, the "
          "report on stderr", "%r %r" % (p.stderr[-300:], p2.stderr[-300:]))
    rc, out, err = run("encode", "sp.safetensors", "at22k.wav", "-o", "x.fbs", "--no-resample")
    check(one_line_error(rc, err, 2, "resampling is off"), "--no-resample refuses 22.05 kHz", err)
    rc, out, err = run("encode", "sp.safetensors", "speech/u1.wav", "-o", "x.fbs", "--mels", "40")
    check(one_line_error(rc, err, 2, "was trained on features of 80 mels"),
          "features other than the model's are refused", err)
    rc, out, err = run("encode", "q.safetensors", "speech/u1.wav", "-o", "x.fbs")
    check(one_line_error(rc, err, 2, "trained on frames, not audio features"),
          "audio into a model trained on plain frames is refused", err)
    write_wav(path("silent.wav"), np.zeros(8000), 16000)
    write_wav(path("short.wav"), voiced(0.01, 16000, 200, 1), 16000)
    open(path("text.wav"), "w").write("not audio at all\n")
    for name, needle in (("silent.wav", "only silence"), ("short.wav", "shorter than one"),
                         ("text.wav", "not a readable audio file")):
        rc, out, err = run("features", name, "-o", "x.npy")
        check(one_line_error(rc, err, 2, needle) and name in err,
              "%s: one line, exit 2" % name, err)
    rc, out, err = run("decode", "q.safetensors", "a.fbs", "-o", "x.npy", "--wav", "x.wav")
    check(one_line_error(rc, err, 2, "not trained on audio features"),
          "decode --wav with a frames model is refused", err)
    print("== speech: pitch, the vocoder, normalization")
    rc, out, err = run("features", "--pitch", "speech/u2.wav", "-o", "fp.npy")
    fp = np.load(path("fp.npy")) if rc == 0 else np.zeros((1, 82))
    mid = fp[10:-10]
    check(rc == 0 and fp.shape[1] == 82 and (mid[:, 81] == 1).all()
          and np.abs(mid[:, 80] / 150.0 - 1).max() < 0.06,
          "frae features --pitch: [T, 82], a voice at 150 Hz +-5% voiced within it", err)
    # the tracker's earlier steps (the corpus scripts'): the same mels; the
    # refinement moves f0 by 60 cents at most and never the voicing
    rc, out, err = run("features", "--f0", "yin-hp", "speech/u2.wav", "-o", "fh.npy")
    rc2, out2, err2 = run("features", "--f0", "yin", "speech/u2.wav", "-o", "fy.npy")
    fh = np.load(path("fh.npy")) if rc == 0 else np.zeros((1, 82))
    fy = np.load(path("fy.npy")) if rc2 == 0 else np.zeros((1, 82))
    same = fh.shape == fy.shape == fp.shape and (fh[:, :80] == fp[:, :80]).all() and \
        (fy[:, :80] == fp[:, :80]).all() and (fh[:, 81] == fp[:, 81]).all()
    v = fp[:, 81] == 1 if same else np.zeros(0, bool)
    cents = 1200 * np.abs(np.log2(fp[v, 80] / fh[v, 80])) if v.any() else [99]
    check(rc == rc2 == 0 and same and max(cents) <= 60.01 and (np.asarray(cents) > 0).any(),
          "frae features --f0 yin-hp, --f0 yin: the same mels (and voicing), f0 unrefined "
          "(--pitch moves %d of %d voiced frames, by %.1f cents at most)"
          % (np.sum(np.asarray(cents) > 0), len(cents), max(cents)), err + err2)
    rc, out, err = run("features", "--f0", "yinfft", "speech/u2.wav", "-o", "fz.npy")
    check(one_line_error(rc, err, 2, "--f0"), "frae features --f0 yinfft: one line, exit 2", err)
    rc, out, err = run("vocode", "fp.npy", "-o", "voc.wav")
    rc2, out2, err2 = run("features", "--pitch", "voc.wav", "-o", "fv.npy")
    fv = np.load(path("fv.npy")) if rc == rc2 == 0 else np.zeros((1, 82))
    n = min(len(fv), len(fp))
    lsd = np.sqrt(np.mean((25 / np.log(10) * (fv[10:n - 10, :80] - fp[10:n - 10, :80])) ** 2,
                          axis=1)).mean() if n > 20 else 99
    f0_kept = n > 20 and np.abs(fv[10:n - 10, 80] / fp[10:n - 10, 80] - 1).max() < 0.02
    check(rc == rc2 == 0 and "harmonic-plus-noise" in out and lsd < 2.5 and f0_kept,
          "frae vocode: features with pitch back to audio, and again to features: LSD "
          "%.2f dB, f0 kept" % lsd, err + err2)
    rc, out, err = run("train", "speech", "--enc", "64", "--dec", "64", "--latent", "8",
                       "--quantizer", "binary", "--epochs", "2", "--save", "pp.safetensors",
                       "--batch", "3", "--pitch", "--crop", "50")
    rc2, info, err2 = run("info", "pp.safetensors")
    check(rc == rc2 == 0 and "8 x 1, pitch 4" in info and "normalization: per band" in info
          and "crops of 50 frames" in info,
          "--pitch: 12 bits/frame (envelope 8 x 1, pitch 4); normalization on by default "
          "for audio; crops; frae info shows all three", err + err2 + info)
    # encode_default_search: frae encode searches a speech codec's codes
    # by default (a model with pitch: --search 2's stream, closer than the
    # network's codes); a model without pitch keeps the network's codes
    def encoded(model, src, *extra):  # subprocess itself: run() adds --search 0
        p = subprocess.run([FRAE, "encode", model, src, "-o", "def.fbs", *extra], cwd=TMP,
                           capture_output=True, text=True)
        m = re.search(r"distortion: mse ([0-9.e+-]+)", p.stdout)
        return (p.returncode == 0 and m is not None,
                open(path("def.fbs"), "rb").read() if p.returncode == 0 else b"",
                float(m.group(1)) if m else float("nan"))
    (ok0, s0, mse0), (ok2, s2, mse2), (okd, sd, msed) = (
        encoded("pp.safetensors", "speech/u3.wav", "--search", "0"),
        encoded("pp.safetensors", "speech/u3.wav", "--search", "2"),
        encoded("pp.safetensors", "speech/u3.wav"))
    check(ok0 and ok2 and okd and sd == s2 and sd != s0 and len(sd) == len(s0)
          and msed < mse0,
          "encode searches a pitch model's codes by default: --search 2's stream, not the "
          "network's codes, mse %g against %g" % (msed, mse0))
    (ok0, s0, _), (okd, sd, _) = (encoded("q.safetensors", "val.npy", "--search", "0"),
                                  encoded("q.safetensors", "val.npy"))
    check(ok0 and okd and sd == s0, "... and a model without pitch by the network's codes")
    rc, out, err = run("encode", "pp.safetensors", "speech/u3.wav", "-o", "pp.fbs")
    rc2, out2, err2 = run("decode", "pp.safetensors", "pp.fbs", "-o", "pp.npy", "--wav",
                          "pp.wav")
    rc3, _, err3 = run("predict", "pp.safetensors", "speech/u3.wav", "-o", "ppp.npy")
    run("features", "--pitch", "speech/u3.wav", "-o", "fp3.npy")
    dec = np.load(path("pp.npy")) if rc2 == 0 else np.zeros((1, 82))
    pred = np.load(path("ppp.npy")) if rc3 == 0 else np.zeros((1, 80))
    src = np.load(path("fp3.npy"))
    both = (dec[:, 81] == 1) & (src[:len(dec), 81] == 1)
    both[:5] = False  # the predictive quantizer's first frames catch up
    check(rc == rc2 == rc3 == 0 and "+ 4 pitch" in out and "harmonic-plus-noise" in out2
          and dec.shape[1] == 82 and np.array_equal(dec[:, :80], pred)
          and both.sum() > 50 and np.abs(dec[both, 80] / src[:len(dec)][both, 80] - 1).max() < 0.03
          and os.path.exists(path("pp.wav")),
          "a pitch model: encode from audio, decode --wav through the vocoder; the envelope "
          "== predict to the bit, f0 decoded within 3%", err + err2 + err3 + out)
    # decode --wav vocodes each frame as it is decoded, frae vocode reads
    # the .npy a chunk at a time: the same WAVs, byte for byte, with either
    # vocoder, one per sequence
    np.save(path("two.npy"), np.stack([src[:120], src[50:170]]))
    for vocoder in ("hnm", "gl"):
        rc, _, err = run("encode", "pp.safetensors", "two.npy", "-o", "two.fbs")
        rc2, out2, err2 = run("decode", "pp.safetensors", "two.fbs", "-o", "two_d.npy", "--wav",
                              "two.wav", "--vocoder", vocoder, "--gl-iters", "4")
        rc3, out3, err3 = run("vocode", "two_d.npy", "-o", "twov.wav", "--vocoder", vocoder,
                              "--gl-iters", "4")
        ok = rc == rc2 == rc3 == 0 and "two-1.wav" in out2 and "twov-1.wav" in out3
        for k in (0, 1):
            ok = ok and open(path("two-%d.wav" % k), "rb").read() == \
                open(path("twov-%d.wav" % k), "rb").read()
            if ok:
                with wave.open(path("two-%d.wav" % k)) as w:
                    ok = w.getnframes() == 119 * 160 + 400
        check(ok, "decode --wav --vocoder %s of two sequences: two WAVs of 119 hops + a window, "
              "byte for byte frae vocode's of the decoded .npy" % vocoder, err + err2 + err3)
    # with a prior the pitch gets the coder made for range coding, the
    # voicing in the context of the decoded envelope, unless --pitch-coder
    # ranged or 4bit: all decode the envelope to predict's bits and keep
    # f0; the range-coding ones spend fewer bits on it
    sizes = {}
    for coder in ("", "ranged", "4bit"):
        name = "ppr%s.safetensors" % coder
        rc, out, err = run("train", "speech", "--enc", "64", "--dec", "64", "--latent", "8",
                           "--quantizer", "binary", "--epochs", "2", "--save", name,
                           "--batch", "3", "--pitch", "--crop", "50", "--rate-lambda", "0.01",
                           *(("--pitch-coder", coder) if coder else ()))
        rc2, info, err2 = run("info", name)
        rc3, out3, err3 = run("encode", name, "speech/u3.wav", "-o", "ppr.fbs")
        rc4, _, err4 = run("decode", name, "ppr.fbs", "-o", "ppr.npy")
        rc5, _, err5 = run("predict", name, "speech/u3.wav", "-o", "pprp.npy")
        ok = rc == rc2 == rc3 == rc4 == rc5 == 0
        if ok:
            dec, pred = np.load(path("ppr.npy")), np.load(path("pprp.npy"))
            both = (dec[:, 81] == 1) & (src[:len(dec), 81] == 1)
            both[:5] = False
            ok = (np.array_equal(dec[:, :80], pred) and both.sum() > 50
                  and np.abs(dec[both, 80] / src[:len(dec)][both, 80] - 1).max() < 0.03)
            sizes[coder] = os.path.getsize(path("ppr.fbs"))
        want = "f0-voicing-" + (coder or "envelope")
        check(ok and want in info, "--pitch with a prior%s: %s; the envelope == predict to "
              "the bit, f0 within 3%%" % (", --pitch-coder " + coder if coder else "", want),
              err + err2 + err3 + err4 + err5 + info)
    check(len(sizes) == 3 and max(sizes[""], sizes["ranged"]) < sizes["4bit"],
          "the range-coding pitch coders' streams are the smaller: %s bytes" % sizes)
    # --dtx: a pause between two voiced stretches is sent as silence: a
    # flag a frame, the decoder repeating its last frame (quiet, unvoiced)
    rng = np.random.default_rng(5)
    pause = 1e-5 * rng.standard_normal(24000)  # 1.5 s at -100 dBFS
    write_wav(path("pause.wav"), np.concatenate([voiced(1.0, 16000, 140, 3), pause,
                                                 voiced(1.0, 16000, 120, 4)]), 16000)
    rc, out, err = run("encode", "ppr.safetensors", "pause.wav", "-o", "nodtx.fbs")
    rc2, out2, err2 = run("encode", "ppr.safetensors", "pause.wav", "-o", "dtx.fbs", "--dtx")
    rc3, _, err3 = run("decode", "ppr.safetensors", "dtx.fbs", "-o", "dtx.npy")
    m = re.search(r"dtx: (\d+) of (\d+) frames silent", out2)
    ok = rc == rc2 == rc3 == 0 and m and 130 <= int(m.group(1)) <= 150
    if ok:
        dec = np.load(path("dtx.npy"))
        quiet = dec[110:240]  # inside the pause, past the hangover
        ok = ((quiet == quiet[0]).all() and (quiet[:, 80:] == 0).all()
              and os.path.getsize(path("dtx.fbs")) < 0.75 * os.path.getsize(path("nodtx.fbs")))
    check(ok, "encode --dtx: a 1.5 s pause sent as silence (%s frames), %d bytes against %d; "
          "decoded as the last frame held, unvoiced" % (m.group(1) if m else "?",
          os.path.getsize(path("dtx.fbs")) if rc2 == 0 else 0,
          os.path.getsize(path("nodtx.fbs")) if rc == 0 else 0), out2 + err + err2 + err3)
    on_the_wire("pp.safetensors", "ppr.safetensors")
    for model, arg, needle in (("pp.safetensors", "--dtx", "need a model with a prior"),
                               ("vr.safetensors", "--dtx", "not trained on audio"),
                               ("ppr.safetensors", "--dtx-level=5", "--dtx-level")):
        src_file = "one.npy" if model == "vr.safetensors" else "pause.wav"
        rc, out, err = run("encode", model, src_file, "-o", "x.fbs", *arg.split("="))
        check(one_line_error(rc, err, 2, needle), "encode %s with %s: one line, exit 2"
              % (arg, model), "rc %d %s" % (rc, err))
    rc, out, err = run("train", "speech", "--latent", "8", "--quantizer", "binary",
                       "--pitch", "--pitch-coder", "ranged", "--save", "none")
    check(one_line_error(rc, err, 2, "needs pitch and a prior"),
          "--pitch-coder ranged without a prior: one line", err)
    rc, out, err = run("decode", "sp.safetensors", "sp.fbs", "-o", "x.npy", "--wav", "x.wav",
                       "--vocoder", "hnm")
    check(one_line_error(rc, err, 2, "carries no pitch"),
          "--vocoder hnm on a stream without pitch is refused", err)
    rc, out, err = run("decode", "sp.safetensors", "pp.fbs", "-o", "x.npy")
    check(one_line_error(rc, err, 2, "carries pitch"),
          "a pitch stream into a model without pitch is refused", err)
    np.save(path("p80.npy"), fp[:, :80])
    rc, out, err = run("encode", "pp.safetensors", "p80.npy", "-o", "x.fbs")
    check(one_line_error(rc, err, 2, "codes pitch and needs 82"),
          "80 columns into a pitch model: one line naming the 82 it needs", err)
    rc, out, err = run("vocode", "p80.npy", "-o", "gl.wav", "--gl-iters", "4")
    check(rc == 0 and "Griffin-Lim" in out, "frae vocode on features without pitch: "
          "Griffin-Lim", err)
    for cmd in ("train", "predict", "info", "import", "encode", "decode", "features",
                "vocode"):
        rc, out, err = run(cmd, "--help")
        check(rc == 0 and "usage: frae " + cmd in out and "Exit codes" in out,
              "frae %s --help" % cmd, err)

    recipes()

    shutil.rmtree(TMP)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
