#!/usr/bin/python3
"""The bit-error study (issue 46): what each stream version that frae still
writes survives on a noisy channel, against Codec2 at the same bit error
rates, measured through the decoded audio.

  1. 40 held-out human clips (the Dutch cast of Fish Fillets,
     scripts/make-corpus.sh --human, as the demo's table), each coded by
     the shipped codecs (models/) as every stream version frae writes:
     - version 2, the fixed-rate file (frae encode speech);
     - version 4, the variable-rate file (frae encode speech-vbr);
     - version 5, 40 ms real-time packets (--packet-ms 40), fixed-rate
       and variable-rate, and the fixed-rate one decoded --through;
     and by Codec2 1300 and 3200 (c2enc, raw frames at 8 kHz);
  2. every bit after the header flipped with probability BER (numpy,
     seeded per clip and rate; the same flips for every frae system of a
     clip): frae's header (22 to 40 bytes) is sent first or out of band
     and kept, every other byte of the file, the framing included, is hit;
     Codec2's raw frames have no header, every bit is hit;
  3. each damaged file decoded as a user would (frae decode --wav, c2dec
     then sox to 16 kHz): a stream "decodes to the end" when the decoder
     exits 0 and its audio is within one packet (40 ms) of the clean
     decode's length; LSD and MCD (dB, 0-4 kHz, tools/demo.py's measures
     against the original, lag aligned) over the clips that decoded;
  4. with --old FRAE (an earlier frae, e.g. 0.7.0 built from its tag),
     that build's version-5 decoder on the same damaged files, as the
     'before' rows.

Usage: tools/ber_study.py [--frae build/frae] [--old FRAE] [--n 40]
                          [--bers 0,1e-4,1e-3,3e-3,1e-2] [--out DIR] [--docs DIR]
Writes OUT/report.md and OUT/results.json (--docs DIR copies them)."""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402  (the measures)

ROOT = demo.ROOT
NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]
PACKET_SAMPLES = 640  # 40 ms at 16 kHz
C2_BITS = {"1300": 52, "3200": 64}  # bits a frame (40 and 20 ms)

# (label, model, encode options, decode options, binary: new or old)
FRAE_SYSTEMS = [
    ("frae v5 fixed-rate, 40 ms packets", "speech", ["--packet-ms", "40"], [], "new"),
    ("frae v5 fixed-rate --through", "speech", ["--packet-ms", "40"], ["--through"], "new"),
    ("frae v5 variable-rate, 40 ms packets", "speech-vbr", ["--packet-ms", "40"], [], "new"),
    ("frae v2 fixed-rate file", "speech", [], [], "new"),
    ("frae v4 variable-rate file", "speech-vbr", [], [], "new"),
    ("before (0.7.0): v5 fixed-rate", "speech", ["--packet-ms", "40"], [], "old"),
    ("before (0.7.0): v5 fixed-rate --through", "speech", ["--packet-ms", "40"],
     ["--through"], "old"),
    ("before (0.7.0): v5 variable-rate", "speech-vbr", ["--packet-ms", "40"], [], "old"),
]


def header_len(data):
    """The bytes of a frae stream's header (versions 2, 4 and 5)."""
    v = data[6]
    if v == 5:
        at = 16
        for _ in range(3):
            while data[at] & 0x80:
                at += 1
            at += 1
        return at + 2
    if v == 4:  # version 2's first 16 bytes, then 3 varints (each packet's
        at = 16  # CRC-16 covers the header)
        for _ in range(3):
            while data[at] & 0x80:
                at += 1
            at += 1
        return at
    return 36  # version 2's fixed header (frae_codec.h FRAE_STREAM_HEADER)


def flip(data, start, ber, seed):
    b = np.frombuffer(data, np.uint8).copy()
    rng = np.random.default_rng(seed)
    bits = np.unpackbits(b[start:])
    bits ^= (rng.random(len(bits)) < ber).astype(np.uint8)
    b[start:] = np.packbits(bits)
    return b.tobytes()


def wav_len(path):
    with wave.open(path) as w:
        return w.getnframes()


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stderr.strip()


class Study:
    def __init__(self, a, tmp, clips):
        self.a, self.tmp, self.clips = a, tmp, clips
        self.models = {k: os.path.join(ROOT, "models", k + ".safetensors")
                       for k in ("speech", "speech-vbr")}
        self.refs = {}
        for w in clips:
            name = os.path.basename(w)[:-4]
            self.refs[name] = demo.features(a.frae, w, os.path.join(tmp, name + "-ref.npy"))

    def quality(self, name, wav):
        ref = self.refs[name]
        got = demo.features(self.a.frae, wav, wav[:-4] + "-feat.npy")
        test = demo.shift(len(ref), got, demo.best_lag(ref, got))
        ok = ~np.isnan(test).any(axis=1)
        return demo.metrics(ref[ok], test[ok], NARROW)

    def frae_cell(self, system, k, w, ber):
        label, model, enc, dec, which = system
        frae = self.a.frae if which == "new" else self.a.old
        name = os.path.basename(w)[:-4]
        d = os.path.join(self.tmp, "%s-%d" % (name, FRAE_SYSTEMS.index(system)))
        os.makedirs(d, exist_ok=True)
        fbs, clean_wav = os.path.join(d, "s.fbs"), os.path.join(d, "clean.wav")
        if not os.path.exists(clean_wav):  # the clean stream, made by the new frae
            subprocess.run([self.a.frae, "encode", self.models[model], w, "-o", fbs] + enc,
                           check=True, capture_output=True)
            subprocess.run([frae, "decode", self.models[model], fbs, "--wav", clean_wav] +
                           dec, check=True, capture_output=True)
        data = open(fbs, "rb").read()
        bad = os.path.join(d, "b%g.fbs" % ber)
        open(bad, "wb").write(flip(data, header_len(data), ber, 1000 * k + 7) if ber else data)
        out = os.path.join(d, "b%g.wav" % ber)
        rc, err = run([frae, "decode", self.models[model], bad, "--wav", out] + dec)
        if rc != 0:
            return {"end": False, "rc": rc, "err": err[-200:]}
        n, n0 = wav_len(out), wav_len(clean_wav)
        lsd, mcd = self.quality(name, out)
        return {"end": abs(n - n0) <= PACKET_SAMPLES, "rc": 0, "lsd": lsd, "mcd": mcd,
                "len_dev": n - n0}

    def c2_cell(self, mode, k, w, ber):
        name = os.path.basename(w)[:-4]
        d = os.path.join(self.tmp, "%s-c2-%s" % (name, mode))
        os.makedirs(d, exist_ok=True)
        raw8, bits = os.path.join(d, "in8.raw"), os.path.join(d, "x.bit")
        if not os.path.exists(bits):
            subprocess.run(["sox", "-R", w, "-r", "8000", "-c", "1", "-b", "16", "-e",
                            "signed-integer", "-t", "raw", raw8], check=True)
            subprocess.run(["c2enc", mode, raw8, bits], check=True, capture_output=True)
        data = open(bits, "rb").read()
        bad = os.path.join(d, "b%g.bit" % ber)
        open(bad, "wb").write(flip(data, 0, ber, 1000 * k + 7) if ber else data)
        raw = os.path.join(d, "out%g.raw" % ber)
        rc, err = run(["c2dec", mode, bad, raw])
        if rc != 0:
            return {"end": False, "rc": rc, "err": err[-200:]}
        out = os.path.join(d, "b%g.wav" % ber)
        subprocess.run(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e",
                        "signed-integer", "-t", "raw", raw, "-r", "16000", out], check=True)
        lsd, mcd = self.quality(name, out)
        return {"end": True, "rc": 0, "lsd": lsd, "mcd": mcd, "len_dev": 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--old", help="an earlier frae build: its version-5 decoder's rows")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--bers", default="0,1e-4,1e-3,3e-3,1e-2")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--out", default=os.path.join(ROOT, "demo", "ber-study"))
    ap.add_argument("--docs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    a.frae = os.path.abspath(a.frae)
    human = os.path.join(a.corpus, "human")
    if not os.path.exists(os.path.join(human, ".complete")):
        subprocess.run(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--human",
                        "--per-speaker", "1", "--test-per-speaker", "20", a.corpus, a.frae],
                       check=True)
    clips = sorted(glob.glob(os.path.join(human, "wav", "test", "*.wav")))
    clips = clips[::max(1, len(clips) // a.n)][:a.n]
    bers = [float(b) for b in a.bers.split(",")]
    systems = [s for s in FRAE_SYSTEMS if s[4] == "new" or a.old]
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="frae-ber-")
    try:
        st = Study(a, tmp, clips)
        secs = sum(wav_len(w) for w in clips) / 16000.0
        jobs = {}
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            # the clean streams first, then the damaged ones (one clip's
            # system directory is written by its first cell)
            for ber in bers:
                for k, w in enumerate(clips):
                    for s in systems:
                        jobs[(s[0], ber, k)] = (st.frae_cell, s, k, w, ber)
                    for mode in C2_BITS:
                        jobs[("Codec2 " + mode, ber, k)] = (st.c2_cell, mode, k, w, ber)
            results = {}
            first = [key for key in jobs if key[1] == bers[0]]
            for group in (first, [key for key in jobs if key[1] != bers[0]]):
                futs = {key: ex.submit(*jobs[key]) for key in group}
                for key, f in futs.items():
                    results[key] = f.result()
        labels = [s[0] for s in systems] + ["Codec2 " + m for m in C2_BITS]
        table = {}
        for lab in labels:
            for ber in bers:
                cells = [results[(lab, ber, k)] for k in range(len(clips))]
                ended = [c for c in cells if c["end"]]
                stopped = [c for c in cells if c["rc"] != 0]
                table[(lab, ber)] = {
                    "ended": len(ended), "stopped": len(stopped), "n": len(cells),
                    "lsd": float(np.mean([c["lsd"] for c in ended])) if ended else None,
                    "mcd": float(np.mean([c["mcd"] for c in ended])) if ended else None,
                    "max_len_dev": max((abs(c["len_dev"]) for c in cells if c["rc"] == 0),
                                       default=None),
                    "why": sorted({re.sub(r"^frae decode: \S+: ", "",
                                          c["err"].splitlines()[-1])[:120]
                                   for c in stopped})[:3]}
        write_report(a, clips, secs, bers, labels, table)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_report(a, clips, secs, bers, labels, table):
    lines = ["| system | " + " | ".join("BER %g" % b if b else "no errors" for b in bers) + " |",
             "| --- |" + " --- |" * len(bers)]
    for lab in labels:
        row = []
        for ber in bers:
            t = table[(lab, ber)]
            q = ("%.2f / %.2f" % (t["lsd"], t["mcd"])) if t["lsd"] is not None else "-"
            row.append("%d/%d, %s" % (t["ended"], t["n"], q))
        lines.append("| %s | %s |" % (lab, " | ".join(row)))
    why = []
    for lab in labels:
        for ber in bers:
            t = table[(lab, ber)]
            if t["stopped"]:
                why.append("- %s at BER %g: %d stopped (%s)" % (lab, ber, t["stopped"],
                                                              "; ".join(t["why"])))
    report = ["# Bit errors: what each stream version survives",
              "",
              "%d held-out human clips (%.0f s), every bit after frae's header flipped at "
              "each rate (Codec2: every bit); each cell: the streams that decoded to the end "
              "(exit 0, within 40 ms of the clean decode's length) / all, then LSD / MCD "
              "(dB, 0-4 kHz) over those." % (len(clips), secs),
              ""] + lines + ["", "Streams that stopped, and why:", ""] + (why or ["- none"])
    text = "\n".join(report) + "\n"
    open(os.path.join(a.out, "report.md"), "w").write(text)
    json.dump({"%s @ %g" % k: v for k, v in table.items()},
              open(os.path.join(a.out, "results.json"), "w"), indent=1)
    print(text)
    if a.docs:
        os.makedirs(a.docs, exist_ok=True)
        for f in ("report.md", "results.json"):
            shutil.copy(os.path.join(a.out, f), a.docs)


if __name__ == "__main__":
    main()
