#!/usr/bin/python3
"""The loss study (issue 37): frae, Opus and Codec2 on the same lost
packets and flipped bits, measured through their decoded audio on the
demo's held-out voices.

  1. the corpus (scripts/make-corpus.sh) and two of the demo's speech
     codecs: the fixed-rate GRU 1.6 kbit/s one (gru-1k6) and the
     variable-rate 12-code one at its distortion (gru-vr12-0.0002), taken
     from the demo's directory when it has them (tools/demo.py saves
     model-<key>.safetensors there), else trained here with the demo's
     recipe (tools/demo.py MODELS and RECIPE; --epochs, 50 as the demo);
     and gru-1k6's recipe on 20-frame crops (gru-1k6-crop20, trained here),
     coded with --resync-state: the network starts afresh at each 200 ms
     resynchronisation point, which is where its training started it;
  2. seeded loss traces for 40 ms packets, written to OUT/traces: 0, 1, 5,
     10 and 20% random (independent) loss, and a Gilbert channel (the
     Gilbert-Elliott model with loss 1 in the bad state and 0 in the good
     one) at 5% and 10% average loss, mean burst 3 packets; one channel
     run over the utterances in turn, each utterance's packets a line;
  3. the same trace on every codec, packet k the audio's k-th 40 ms:
     - frae: encode --packet-ms 40, packet k dropped from the .fbs (its
       varint length, bytes and CRC-16), frae decode conceals;
     - Opus 6 kbit/s: opusenc --bitrate 6 --framesize 40 (one 40 ms Opus
       frame a packet), the Ogg packets read here and decoded through
       libopus (ctypes): a lost one by opus_decode(NULL) (PLC), or, with
       in-band FEC (opusenc --expect-loss N --set-ctl-int 4012=1, i.e.
       OPUS_SET_INBAND_FEC(1); --expect-loss alone does not turn it on), by
       decode_fec=1 on the next packet when that one came;
     - Codec2 1300 and 700C (a 40 ms frame each, one frame a packet):
       c2dec has no concealment (it decodes whatever bits it gets), so a
       lost frame's bits are the last received frame's (a frame repeat);
       1300 also with a lost frame's bits zeroed;
  4. bit errors: c2dec --ber at 0.1% and 1% (its own seeded rand()) against
     frae's fixed-rate packets with every bit of each datagram (index byte
     included) flipped at the same rate (numpy, seeded), decoded with frae
     decode --through;
  5. figures, every system on its decoded WAV as the demo measures it
     (tools/demo.py: frae features of the WAV, the loss-free decode's lag,
     LSD and MCD over 0-4 kHz, GPE and VDE against aubio on the original);
     frae's rate as datagrams (the packets' bytes, no file framing; the
     stream header is sent once, out of band, and said apart) at 20, 40,
     60 ms; the resynchronisation time after one lost packet, on the
     decoded features (80 mels) against the loss-free decode's, from the
     first lost frame: until the frame LSD is within 1 dB for 100 ms on
     end (the bar's figure), until it is within 1 dB to the utterance's
     end, and until the decoded f0 is the loss-free one's again; median
     over held-out utterances (3 single losses each, in speech, one decode
     per loss; each utterance's median);
  6. OUT/report.md (the tables and the bars, each PASS or FAIL with its
     numbers), OUT/results.json, OUT/loss_lsd.png (LSD and MCD against the
     loss rate, a line per codec); --docs DIR copies them and the traces.

Usage: tools/loss_study.py [--epochs N] [--out DIR] [--demo DIR] [--docs DIR]
                           [--system NAME ...] [--conditions random-5,...]
                           [--model KEY=PATH ...]
(--model gru-1k6=models/speech.safetensors runs "frae fixed" on the shipped
codec, gru-vr12-0.0002=models/speech-vbr.safetensors "frae VR".)"""
import argparse
import concurrent.futures
import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402  (the data, the recipe, the measures)

ROOT = demo.ROOT
PACKET_MS = 40
FRAMES = PACKET_MS // 10          # frae frames a packet
SAMPLES = 16 * PACKET_MS          # 16 kHz samples a packet
FIXED, VR = "gru-1k6", "gru-vr12-%g" % demo.VR12_LAMBDA
# the fixed-rate codec trained for resynchronisation points that start the
# network afresh (frae encode --resync-state, every 200 ms): the demo's
# gru-1k6 recipe on crops as long as the interval, so that a reset state is
# what it was trained from
RS_CROP = 20
FIXED_RS = "gru-1k6-crop%d" % RS_CROP
CONDITIONS = (  # key, label, kind, average loss, mean burst (packets)
    ("random-0", "0%", "random", 0.00, 1),
    ("random-1", "1% random", "random", 0.01, 1),
    ("random-5", "5% random", "random", 0.05, 1),
    ("random-10", "10% random", "random", 0.10, 1),
    ("random-20", "20% random", "random", 0.20, 1),
    ("gilbert-5", "5% bursty (GE, burst 3)", "gilbert", 0.05, 3),
    ("gilbert-10", "10% bursty (GE, burst 3)", "gilbert", 0.10, 3),
)
BERS = (0.001, 0.01)
# frae's systems: (model key, encode options)
FRAE_SYS = {"frae fixed": (FIXED, []), "frae VR": (VR, []),
            "frae VR, resync 200 ms": (VR, ["--resync-ms", "200"]),
            "frae fixed crop %d, state resync 200 ms" % RS_CROP: (FIXED_RS, ["--resync-state"])}
ALL_SYSTEMS = ["frae fixed", "frae VR", "frae VR, resync 200 ms",
               "frae fixed crop %d, state resync 200 ms" % RS_CROP, "Opus 6k PLC", "Opus 6k FEC",
               "Codec2 1300", "Codec2 1300, zeroed", "Codec2 700C"]
SEED = 37


def log(*a):
    print(*a, flush=True)


# ---- 1. the models ------------------------------------------------------

def recipe_for(key):
    """The demo's recipe for key; FIXED_RS: gru-1k6's on RS_CROP-frame crops."""
    if key != FIXED_RS:
        return demo.RECIPE
    r = list(demo.RECIPE)
    r[r.index("--crop") + 1] = str(RS_CROP)
    return r


def get_models(a, frae, keys=(FIXED, VR, FIXED_RS)):
    """{key: path}: the demo's trained model if it has one, else one trained
    here with the demo's recipe (and kept in OUT for the next run)."""
    opts = {k: o for k, _, o in demo.MODELS}
    opts[FIXED_RS] = opts[FIXED]
    paths = {}
    for key in keys:
        if key in a.given:   # --model KEY=PATH: that checkpoint, no training
            paths[key] = a.given[key]
            log("model %s: %s (given)" % (key, paths[key]))
            continue
        for d in (a.demo, a.out):
            p = os.path.join(d, "model-%s.safetensors" % key)
            if os.path.exists(p):
                paths[key] = p
                log("model %s: %s" % (key, p))
                break
        else:
            p = os.path.join(a.out, "model-%s.safetensors" % key)
            cmd = [frae, "train", os.path.join(a.corpus, "feats", "train"), "--audio-features",
                   "--val-data", os.path.join(a.corpus, "feats", "test"), *opts[key],
                   *recipe_for(key), "--epochs", str(a.epochs), "--save", p + ".part",
                   "--log-csv", os.path.join(a.out, "train-%s.csv" % key)]
            log("training %s with the demo's recipe (%d epochs)" % (key, a.epochs))
            t = time.time()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            os.replace(p + ".part", p)
            log("  %.0f s" % (time.time() - t))
            paths[key] = p
    return paths


# ---- 2. the traces --------------------------------------------------------

def make_trace(kind, p, burst, n, seed):
    """n packets, True where lost: independent loss at p, or a two-state
    Gilbert channel (bad: lost) whose bad runs average burst packets and
    whose stationary loss is p."""
    rng = np.random.default_rng(seed)
    if p <= 0:
        return np.zeros(n, bool)
    if kind == "random":
        return rng.random(n) < p
    leave = 1.0 / burst                 # bad -> good
    enter = p * leave / (1.0 - p)       # good -> bad
    u, lost, bad = rng.random(n), np.zeros(n, bool), rng.random() < p
    for i in range(n):
        lost[i] = bad
        bad = u[i] >= leave if bad else u[i] < enter
    return lost


def runs(lost):
    """Lengths of the runs of losses."""
    out, k = [], 0
    for x in list(lost) + [False]:
        if x:
            k += 1
        elif k:
            out.append(k)
            k = 0
    return out


def write_traces(out, names, n_packets):
    """{cond: {name: bool array}}, and OUT/traces/<cond>.txt each."""
    os.makedirs(os.path.join(out, "traces"), exist_ok=True)
    total = sum(n_packets[n] for n in names)
    traces, stats = {}, {}
    for i, (key, label, kind, p, burst) in enumerate(CONDITIONS):
        seed = SEED * 1000 + i
        whole = make_trace(kind, p, burst, total, seed)
        at, traces[key] = 0, {}
        for n in names:
            traces[key][n] = whole[at:at + n_packets[n]]
            at += n_packets[n]
        r = runs(whole)
        stats[key] = {"packets": total, "lost": int(whole.sum()),
                      "rate": float(whole.mean()), "mean_burst": float(np.mean(r)) if r else 0.0}
        with open(os.path.join(out, "traces", key + ".txt"), "w") as f:
            f.write("# frae loss study (issue 37): %s, %d ms packets, 1 = lost\n" % (label,
                                                                                     PACKET_MS))
            f.write("# %s, loss %g, mean burst %g packets, numpy default_rng(%d)\n" % (
                "independent" if kind == "random" else "Gilbert channel", p, burst, seed))
            f.write("# %d packets, %d lost (%.2f%%), mean run of losses %.2f\n" % (
                total, stats[key]["lost"], 100 * stats[key]["rate"], stats[key]["mean_burst"]))
            for n in names:
                f.write("%s %s\n" % (n, "".join("1" if x else "0" for x in traces[key][n])))
    return traces, stats


def lost_at(trace, k):
    return k < len(trace) and bool(trace[k])


# ---- 3. the codecs ----------------------------------------------------------

def varint(b, at):
    v, s = 0, 0
    while True:
        c = b[at]
        at += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, at


def fbs_split(data):
    """A version-5 file: (its header's bytes, [(packet bytes, framing bytes)])."""
    assert data[:6] == b"FRAEBS" and data[6] == 5, "not a version-5 stream"
    at = 16
    for _ in range(3):
        _, at = varint(data, at)
    head, at = data[:at + 2], at + 2
    packets = []
    while at < len(data):
        n, body = varint(data, at)
        packets.append((data[body:body + n], data[at:body + n + 2]))
        at = body + n + 2
    return head, packets


def frae_encode(frae, model, wav, fbs, extra=()):
    demo.sh([frae, "encode", model, wav, "-o", fbs, "--packet-ms", str(PACKET_MS), *extra])
    return fbs_split(open(fbs, "rb").read())


def frae_decode(frae, model, fbs, npy=None, wav=None, through=False):
    cmd = [frae, "decode", model, fbs]
    if npy:
        cmd += ["-o", npy]
    if wav:
        cmd += ["--wav", wav]
    if through:
        cmd.append("--through")
    demo.sh(cmd)


def frae_lossy(head, packets, trace, path):
    with open(path, "wb") as f:
        f.write(head)
        for k, (_, framed) in enumerate(packets):
            if not lost_at(trace, k):
                f.write(framed)


def frae_flipped(head, packets, ber, rng, path):
    """Every bit of every datagram flipped with probability ber; the file's
    framing kept (the channel gives the lengths, --through ignores CRCs)."""
    with open(path, "wb") as f:
        f.write(head)
        for pk, framed in packets:
            bits = np.unpackbits(np.frombuffer(pk, np.uint8))
            bits ^= (rng.random(len(bits)) < ber).astype(np.uint8)
            f.write(framed[:len(framed) - len(pk) - 2] + np.packbits(bits).tobytes() +
                    framed[-2:])


def ogg_packets(path):
    """Every packet of an Ogg stream (OpusHead, OpusTags, then audio)."""
    data, at, pkts, cur = open(path, "rb").read(), 0, [], b""
    while at < len(data):
        assert data[at:at + 4] == b"OggS", "%s: no Ogg page at %d" % (path, at)
        lacing = data[at + 27:at + 27 + data[at + 26]]
        body = at + 27 + len(lacing)
        for n in lacing:
            cur += data[body:body + n]
            body += n
            if n < 255:
                pkts.append(cur)
                cur = b""
        at = body
    return pkts


class Opus:
    """libopus 1.x through ctypes, decoding at 16 kHz."""

    def __init__(self):
        self.lib = ctypes.CDLL("libopus.so.0")
        self.lib.opus_decoder_create.restype = ctypes.c_void_p
        self.lib.opus_decoder_create.argtypes = (ctypes.c_int32, ctypes.c_int,
                                                 ctypes.POINTER(ctypes.c_int))
        self.lib.opus_decode.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                         ctypes.POINTER(ctypes.c_int16), ctypes.c_int,
                                         ctypes.c_int)
        self.lib.opus_decoder_destroy.argtypes = (ctypes.c_void_p,)
        self.lib.opus_get_version_string.restype = ctypes.c_char_p

    def version(self):
        return self.lib.opus_get_version_string().decode()

    def decode(self, ogg, trace, fec, n_out):
        """The audio of an Ogg Opus file with trace's packets lost: PLC, or
        with fec the next packet's in-band redundancy where it came.
        Returns (samples, packets concealed by FEC)."""
        pkts = ogg_packets(ogg)
        pre = int.from_bytes(pkts[0][10:12], "little") // 3   # 48 kHz -> 16 kHz
        err = ctypes.c_int()
        dec = self.lib.opus_decoder_create(16000, 1, ctypes.byref(err))
        assert err.value == 0
        buf = (ctypes.c_int16 * 5760)()
        out, by_fec = [], 0
        audio = pkts[2:]
        for k, pk in enumerate(audio):
            if not lost_at(trace, k):
                n = self.lib.opus_decode(dec, pk, len(pk), buf, 5760, 0)
            elif fec and k + 1 < len(audio) and not lost_at(trace, k + 1):
                nxt = audio[k + 1]
                n = self.lib.opus_decode(dec, nxt, len(nxt), buf, SAMPLES, 1)
                by_fec += 1
            else:
                n = self.lib.opus_decode(dec, None, 0, buf, SAMPLES, 0)
            assert n > 0, "opus_decode: %d" % n
            out.append(np.frombuffer(buf, np.int16, n).copy())
        self.lib.opus_decoder_destroy(dec)
        x = np.concatenate(out)[pre:pre + n_out]
        return x.astype(np.float32) / 32768.0, by_fec


C2_BITS = {"1300": 52, "700C": 28}  # a 40 ms frame each


def c2_lossy(bits_path, mode, trace, path, how):
    """A raw Codec2 bit file (no header) with trace's frames replaced: the
    last received frame's bits (repeat) or zeros."""
    nb = (C2_BITS[mode] + 7) // 8
    data = open(bits_path, "rb").read()
    frames = [data[i:i + nb] for i in range(0, len(data), nb)]
    last, out = bytes(nb), []
    for k, fr in enumerate(frames):
        if lost_at(trace, k):
            out.append(last if how == "repeat" else bytes(nb))
        else:
            out.append(fr)
            last = fr
    open(path, "wb").write(b"".join(out))


# ---- measures ---------------------------------------------------------------

NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]


class Measure:
    """The demo's measures against the held-out originals."""

    def __init__(self, frae, tmp, tests):
        self.frae, self.tmp = frae, tmp
        self.refs, self.pitch, self.n_samples = {}, {}, {}
        for w in tests:
            name = os.path.basename(w)[:-4]
            self.refs[name] = demo.features(frae, w, os.path.join(tmp, name + "-ref.npy"))
            self.pitch[name] = demo.pitch_track(w, len(self.refs[name]))
            self.n_samples[name] = len(demo.read_wav(w))

    def utterance(self, name, wav, lag=None):
        """(lsd, mcd, pitch counts, lag) of one decoded WAV, 0-4 kHz."""
        ref = self.refs[name]
        got = demo.features(self.frae, wav, wav[:-4] + "-feat.npy")
        if lag is None:
            lag = demo.best_lag(ref, got)
        test = demo.shift(len(ref), got, lag)
        ok = ~np.isnan(test).any(axis=1)
        lsd, mcd = demo.metrics(ref[ok], test[ok], NARROW)
        f0, v = demo.pitch_track(wav, len(got))
        f0, v = demo.shift(len(ref), f0, lag), demo.shift(len(ref), v.astype(float), lag)
        okp = ~np.isnan(v)
        counts = np.array(demo.pitch_errors(self.pitch[name], (np.nan_to_num(f0), v == 1, okp)),
                          float)
        return lsd, mcd, counts, lag


def summarise(per):
    """per: {name: (lsd, mcd, counts, lag)} -> the mean figures."""
    c = sum(v[2] for v in per.values())
    return {"lsd": float(np.mean([v[0] for v in per.values()])),
            "mcd": float(np.mean([v[1] for v in per.values()])),
            "gpe": 100.0 * c[0] / max(c[1], 1), "vde": 100.0 * c[2] / max(c[3], 1)}


HOLD = 10  # frames: "within 1 dB" must hold this long (100 ms)


def resync_frames(y, y0, first):
    """Frames from the first lost frame until the decode y is back at the
    loss-free decode y0: held, frame LSD within 1 dB for HOLD frames on end;
    strict, within 1 dB to the utterance's end; f0, the decoded f0 (a model
    with pitch) equal again (0.5 Hz) to the end."""
    d = frame_lsd(y, y0)[first:]
    ok = d <= 1.0
    held = next((f for f in range(len(d)) if ok[f:f + HOLD].all()), len(d))
    bad = np.where(~ok)[0]
    fbad = np.where(np.abs(y[first:, 80] - y0[first:, 80]) > 0.5)[0] if y.shape[1] > 80 else []
    return {"held": held, "strict": int(bad[-1]) + 1 if len(bad) else 0,
            "f0": int(fbad[-1]) + 1 if len(fbad) else 0}


def frame_lsd(a, b):
    """Per-frame LSD (dB, 80 mels) between two decoded feature arrays."""
    return np.sqrt(np.mean((demo.DB * demo.FEAT_SCALE * (a[:, :80] - b[:, :80])) ** 2, axis=1))


# ---- the study --------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--out", default=os.path.join(ROOT, "demo", "loss-study"))
    ap.add_argument("--demo", default=os.path.join(ROOT, "demo"),
                    help="where tools/demo.py keeps its trained models")
    ap.add_argument("--docs", default=None,
                    help="also copy the traces and the picture here")
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="the first N utterances only (a test)")
    ap.add_argument("--system", action="append", dest="systems", default=None,
                    help="run this system (again for more; all by default): a faster run, "
                    "with the bit errors, rates and resynchronisation of those among them")
    ap.add_argument("--conditions", default=None,
                    help="a comma-separated subset of the loss conditions' keys (random-5, "
                    "gilbert-10, ...; the loss-free one is always run)")
    ap.add_argument("--model", action="append", default=[], metavar="KEY=PATH",
                    help="use this checkpoint for KEY (%s, %s or %s) instead of the demo's "
                    "recipe, e.g. %s=models/speech.safetensors (the shipped codec)"
                    % (FIXED, VR, FIXED_RS, FIXED))
    a = ap.parse_args()
    a.given = {}
    for kv in a.model:
        key, _, path = kv.partition("=")
        if key not in (FIXED, VR, FIXED_RS) or not os.path.isfile(path):
            sys.exit("loss_study: --model wants KEY=PATH with KEY %s, %s or %s and PATH a "
                     "file, got %r" % (FIXED, VR, FIXED_RS, kv))
        a.given[key] = path
    frae, started = a.frae, time.time()
    os.makedirs(a.out, exist_ok=True)
    log("== 1. corpus and models")
    if not os.path.exists(os.path.join(a.corpus, "speakers.tsv")):  # not a human corpus
        demo.sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), a.corpus, frae])
    systems = a.systems or ALL_SYSTEMS
    unknown = [x for x in systems if x not in ALL_SYSTEMS]
    if unknown:
        sys.exit("loss_study: unknown systems %s (of: %s)" % (unknown, "; ".join(ALL_SYSTEMS)))
    conds = [c for c in CONDITIONS if c[0] == "random-0" or not a.conditions
             or c[0] in a.conditions.split(",")]
    keys = sorted({FRAE_SYS[x][0] for x in systems if x in FRAE_SYS})
    models = get_models(a, frae, keys)
    tests = sorted(glob.glob(os.path.join(a.corpus, "wav", "test", "*.wav")))
    if a.limit:
        tests = tests[:a.limit]
    names = [os.path.basename(w)[:-4] for w in tests]
    wav_of = dict(zip(names, tests))
    tmp = tempfile.mkdtemp(prefix="frae-loss-")
    meas = Measure(frae, tmp, tests)
    secs = sum(meas.n_samples.values()) / 16000.0
    log("%d held-out utterances, %.1f s" % (len(names), secs))

    log("== 2. loss traces (%d ms packets)" % PACKET_MS)
    n_packets = {n: -(-meas.n_samples[n] // SAMPLES) + 1 for n in names}
    traces, tstats = write_traces(a.out, names, n_packets)
    for key, label, *_ in CONDITIONS:
        s = tstats[key]
        log("  %-26s %4d of %d packets lost (%.2f%%), mean burst %.2f" % (
            label, s["lost"], s["packets"], 100 * s["rate"], s["mean_burst"]))

    log("== 3. encoding (frae, Opus, Codec2)")
    opus = Opus()
    enc = {}   # (system, name) -> what its decoder needs
    for n in names:
        w = wav_of[n]
        for sysname, (key, extra) in FRAE_SYS.items():
            if sysname not in systems:
                continue
            fbs = os.path.join(tmp, "%s-%s.fbs" % (n, sysname.replace(" ", "_").replace(",", "")))
            enc[sysname, n] = frae_encode(frae, models[key], w, fbs, extra)
        raw8 = os.path.join(tmp, n + "-8k.raw")
        demo.sh(["sox", "-R", w, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
                 "-t", "raw", raw8])
        for mode in C2_BITS:
            bits = os.path.join(tmp, "%s-%s.bit" % (n, mode))
            demo.sh(["c2enc", mode, raw8, bits])
            enc["c2 " + mode, n] = bits
        ogg = os.path.join(tmp, n + "-opus.opus")
        demo.sh(["opusenc", "--quiet", "--bitrate", "6", "--framesize", str(PACKET_MS), w, ogg])
        enc["opus", n] = ogg
        for pct in sorted({max(1, round(100 * c[3])) for c in CONDITIONS if c[3] > 0}):
            ogg = os.path.join(tmp, "%s-opus-fec%d.opus" % (n, pct))
            demo.sh(["opusenc", "--quiet", "--bitrate", "6", "--framesize", str(PACKET_MS),
                     "--expect-loss", str(pct), "--set-ctl-int", "4012=1", w, ogg])
            enc["opus fec%d" % pct, n] = ogg

    SYSTEMS = systems
    fec_used = {}

    def decode_one(sysname, cond, n, p, job):
        """One utterance through one system under one trace: its WAV."""
        trace = traces[cond][n]
        wav = os.path.join(tmp, "%s.wav" % job)
        if sysname.startswith("frae"):
            head, packets = enc[sysname, n]
            fbs = os.path.join(tmp, job + ".fbs")
            frae_lossy(head, packets, trace, fbs)
            frae_decode(frae, models[FRAE_SYS[sysname][0]], fbs, wav=wav)
        elif sysname.startswith("Opus"):
            fec = "FEC" in sysname and p > 0
            ogg = enc["opus fec%d" % max(1, round(100 * p)), n] if fec else enc["opus", n]
            x, by_fec = opus.decode(ogg, trace, fec, meas.n_samples[n])
            fec_used[sysname, cond, n] = by_fec
            demo.write_wav(wav, x)
        else:
            mode = sysname.split()[1].rstrip(",")
            bits = os.path.join(tmp, job + ".bit")
            c2_lossy(enc["c2 " + mode, n], mode, trace, bits,
                     "zero" if "zeroed" in sysname else "repeat")
            raw = os.path.join(tmp, job + ".raw")
            demo.sh(["c2dec", mode, bits, raw])
            demo.sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
                     "-t", "raw", raw, "-r", "16000", wav])
        return wav

    log("== 4. every codec on every trace, through its audio")
    results, lags = {}, {}

    def run_cell(sysname, cond, p):
        per = {}
        for n in names:
            job = "%s-%s-%s" % (sysname.replace(" ", "_").replace(",", ""), cond, n)
            wav = decode_one(sysname, cond, n, p, job)
            per[n] = meas.utterance(n, wav, lags.get((sysname, n)))
            if cond == "random-0":
                lags[sysname, n] = per[n][3]
            for ext in (".wav", ".fbs", ".bit", ".raw", "-feat.npy"):
                if os.path.exists(os.path.join(tmp, job + ext)):
                    os.remove(os.path.join(tmp, job + ext))
        return summarise(per)

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        # loss-free first: its lags align every lossy decode of the system
        futs = {pool.submit(run_cell, s, "random-0", 0.0): s for s in SYSTEMS}
        for f in concurrent.futures.as_completed(futs):
            results[futs[f], "random-0"] = f.result()
        futs = {pool.submit(run_cell, s, c[0], c[3]): (s, c[0])
                for c in conds[1:] for s in SYSTEMS}
        for f in concurrent.futures.as_completed(futs):
            results[futs[f]] = f.result()
            r = results[futs[f]]
            log("  %-24s %-11s LSD %.2f MCD %.2f GPE %.1f%% VDE %.1f%%" % (
                futs[f][0], futs[f][1], r["lsd"], r["mcd"], r["gpe"], r["vde"]))
    fec_share = {c[0]: sum(v for (s, cond, n), v in fec_used.items()
                           if s == "Opus 6k FEC" and cond == c[0]) for c in conds}

    log("== 5. bit errors: frae --through and c2dec --ber")
    ber_res = {}

    def run_ber(sysname, ber):
        per, rng = {}, np.random.default_rng(SEED * 1000 + 100 + int(round(ber * 1e4)))
        for n in names:
            job = "ber-%s-%g-%s" % (sysname.replace(" ", "_"), ber, n)
            wav = os.path.join(tmp, job + ".wav")
            if sysname == "frae fixed":
                head, packets = enc[sysname, n]
                fbs = os.path.join(tmp, job + ".fbs")
                frae_flipped(head, packets, ber, rng, fbs)
                frae_decode(frae, models[FIXED], fbs, wav=wav, through=True)
            else:
                mode = sysname.split()[1]
                raw = os.path.join(tmp, job + ".raw")
                demo.sh(["c2dec", mode, enc["c2 " + mode, n], raw, "--ber", "%g" % ber])
                demo.sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e",
                         "signed-integer", "-t", "raw", raw, "-r", "16000", wav])
            per[n] = meas.utterance(n, wav, lags[sysname, n])
        return summarise(per)

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futs = {pool.submit(run_ber, s, ber): (s, ber)
                for s in ("frae fixed", "Codec2 1300", "Codec2 700C") for ber in BERS
                if s in SYSTEMS}
        for f in concurrent.futures.as_completed(futs):
            ber_res[futs[f]] = r = f.result()
            log("  %-12s BER %g%%: LSD %.2f MCD %.2f GPE %.1f%% VDE %.1f%%" % (
                futs[f][0], 100 * futs[f][1], r["lsd"], r["mcd"], r["gpe"], r["vde"]))

    log("== 6. frae's rate as datagrams at 20, 40, 60 ms packets")
    RATE_SYS = [("fixed 1.6 kbit/s", FIXED, []), ("fixed, resync 120 ms", FIXED,
                                                   ["--resync-ms", "120"]),
                ("fixed, resync off", FIXED, ["--resync-ms", "off"]),
                ("VR 12 codes (resync 1 s)", VR, []),
                ("VR 12 codes, resync 200 ms", VR, ["--resync-ms", "200"]),
                ("VR 12 codes, resync off", VR, ["--resync-ms", "off"]),
                ("fixed crop %d, state resync 200 ms" % RS_CROP, FIXED_RS, ["--resync-state"])]
    RATE_SYS = [r for r in RATE_SYS if r[1] in models]
    rates = {}
    frames_total = sum(len(meas.refs[n]) for n in names)
    for label, key, extra in RATE_SYS:
        for ms in (20, 40, 60):
            pk_bytes = head_bytes = 0
            for n in names:
                fbs = os.path.join(tmp, "rate.fbs")
                demo.sh([frae, "encode", models[key], wav_of[n], "-o", fbs, "--packet-ms",
                         str(ms), *extra])
                head, packets = fbs_split(open(fbs, "rb").read())
                pk_bytes += sum(len(p) for p, _ in packets)
                head_bytes += len(head)
            rates[label, ms] = {"kbps": pk_bytes * 8 / (frames_total / 100.0) / 1000.0,
                                "header": head_bytes / len(names)}
        log("  %-28s %s" % (label, "  ".join("%d ms %.3f" % (ms, rates[label, ms]["kbps"])
                                            for ms in (20, 40, 60))))

    log("== 7. resynchronisation after one lost packet")
    RESYNC_SYS = [("fixed (resync 200 ms)", FIXED, []),
                  ("fixed, resync 120 ms", FIXED, ["--resync-ms", "120"]),
                  ("fixed, resync off", FIXED, ["--resync-ms", "off"]),
                  ("VR (resync 1 s)", VR, []),
                  ("VR, resync 200 ms", VR, ["--resync-ms", "200"]),
                  ("fixed crop %d, state resync 200 ms" % RS_CROP, FIXED_RS, ["--resync-state"])]
    RESYNC_SYS = [r for r in RESYNC_SYS if r[1] in models]
    rng = np.random.default_rng(SEED * 1000 + 200)
    where = {}
    for n in names:   # 3 packets whose frames are all speech, spread out
        sp = demo.speech_frames(meas.refs[n])
        cand = [k for k in range(1, len(sp) // FRAMES - 1)
                if sp[k * FRAMES:(k + 1) * FRAMES].all()]
        thirds = np.array_split(np.array(cand), 3)
        where[n] = [int(rng.choice(t)) for t in thirds if len(t)]
    resync = {}
    for label, key, extra in RESYNC_SYS:
        times = {"held": [], "strict": [], "f0": []}
        for n in names:
            fbs = os.path.join(tmp, "rs.fbs")
            head, packets = frae_encode(frae, models[key], wav_of[n], fbs, extra)
            clean = os.path.join(tmp, "rs-clean.npy")
            frae_decode(frae, models[key], fbs, npy=clean)
            y0 = np.load(clean)
            per_utt = {k: [] for k in times}
            for k in where[n]:
                trace = np.zeros(len(packets), bool)
                trace[k] = True
                frae_lossy(head, packets, trace, os.path.join(tmp, "rs-lost.fbs"))
                npy = os.path.join(tmp, "rs-lost.npy")
                frae_decode(frae, models[key], os.path.join(tmp, "rs-lost.fbs"), npy=npy)
                y = np.load(npy)
                for kind, t in resync_frames(y, y0, k * FRAMES).items():
                    per_utt[kind].append(t)
            for kind in times:
                times[kind].append(float(np.median(per_utt[kind])))
        resync[label] = {kind: {"median_ms": 10.0 * float(np.median(t)),
                                "mean_ms": 10.0 * float(np.mean(t)),
                                "p90_ms": 10.0 * float(np.percentile(t, 90)),
                                "max_ms": 10.0 * float(np.max(t))} for kind, t in times.items()}
        log("  %-24s %s" % (label, "; ".join(
            "%s: median %.0f ms, mean %.0f, 90%% %.0f, max %.0f" % (
                kind, r["median_ms"], r["mean_ms"], r["p90_ms"], r["max_ms"])
            for kind, r in resync[label].items())))

    log("== 8. the picture and the report")
    json.dump({"conditions": CONDITIONS, "trace_stats": tstats, "opus": opus.version(),
               "loss": {"%s|%s" % k: v for k, v in results.items()},
               "ber": {"%s|%g" % k: v for k, v in ber_res.items()},
               "rates": {"%s|%d" % k: v for k, v in rates.items()},
               "resync": resync, "fec_packets": fec_share, "seconds": secs,
               "utterances": len(names), "epochs": a.epochs, "models": models,
               "systems": SYSTEMS},
              open(os.path.join(a.out, "results.json"), "w"), indent=1)
    picture(a.out, results, SYSTEMS, tstats, conds)
    report = write_report(a.out, results, SYSTEMS, ber_res, rates, resync, tstats, fec_share,
                          opus.version(), secs, len(names), conds)
    if a.docs:
        os.makedirs(os.path.join(a.docs, "traces"), exist_ok=True)
        for f in glob.glob(os.path.join(a.out, "traces", "*.txt")):
            shutil.copy(f, os.path.join(a.docs, "traces"))
        for f in ("loss_lsd.png", "report.md", "results.json"):
            shutil.copy(os.path.join(a.out, f), a.docs)
    print(report)
    shutil.rmtree(tmp)
    log("done in %.0f s: %s" % (time.time() - started, a.out))


def picture(out, results, systems, tstats, conds=CONDITIONS):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    rnd = [c for c in conds if c[2] == "random"]
    ge = [c for c in conds if c[2] == "gilbert"]
    for ax, m, name in ((axes[0], "lsd", "LSD"), (axes[1], "mcd", "MCD")):
        for s in systems:
            xs = [100 * tstats[c[0]]["rate"] for c in rnd]
            line, = ax.plot(xs, [results[s, c[0]][m] for c in rnd], "-o", markersize=4,
                            label=s)
            ax.plot([100 * tstats[c[0]]["rate"] for c in ge], [results[s, c[0]][m] for c in ge],
                    "s", mfc="none", color=line.get_color(), markersize=7)
        ax.set_xlabel("packets lost (%, realised on the trace); squares: bursty "
                      "(Gilbert, burst 3)", fontsize=8)
        ax.set_ylabel("%s 0-4 kHz through audio (dB)" % name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("40 ms packets, the same loss traces for every codec (lower is better)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "loss_lsd.png"), dpi=100)
    plt.close(fig)


def bars(results, ber_res, rates, resync):
    """Each of issue 37's measured bars: PASS or FAIL with its numbers (those
    whose systems and conditions the run had)."""
    def bar(ok, name, text):
        return "- %s %s: %s" % ("PASS" if ok else "FAIL", name, text)

    def have(*keys):
        return all(k in results for k in keys)
    out = []
    if have(("frae fixed", "random-0"), ("frae VR", "random-0")) and \
            ("fixed 1.6 kbit/s", 40) in rates and ("VR 12 codes (resync 1 s)", 40) in rates:
        fx, vr = results["frae fixed", "random-0"], results["frae VR", "random-0"]
        rf = rates["fixed 1.6 kbit/s", 40]["kbps"]
        rv = rates["VR 12 codes (resync 1 s)", 40]["kbps"]
        level = vr["lsd"] <= fx["lsd"] + 0.05 and vr["mcd"] <= fx["mcd"] + 0.05
        out.append(bar(level and rv <= 0.85 * rf,
                       "40 ms: variable rate >= 15% below the fixed-rate codec, within 0.05 dB",
                       "VR %.3f kbit/s against fixed %.3f as 40 ms datagrams (%.1f%% below; "
                       "%.1f%% below the nominal 1.6); LSD %.2f vs %.2f, MCD %.2f vs %.2f dB "
                       "(0-4 kHz, through audio, loss-free)" % (
                           rv, rf, 100 * (1 - rv / rf), 100 * (1 - rv / 1.6), vr["lsd"],
                           fx["lsd"], vr["mcd"], fx["mcd"])))
    frae_sys = [s for s in FRAE_SYS if s != "frae VR"] + ["frae VR"]
    if have(("Codec2 1300", "random-0")):
        c13 = results["Codec2 1300", "random-0"]
        for s in frae_sys:
            if not have((s, "random-0"), (s, "random-5")):
                continue
            r0, r5 = results[s, "random-0"], results[s, "random-5"]
            ok = r5["lsd"] - r0["lsd"] <= 1.0 and r5["lsd"] < c13["lsd"] and \
                r5["mcd"] < c13["mcd"]
            out.append(bar(ok, "5%% random loss, %s: LSD rise <= 1 dB, beats Codec2 1300 "
                           "loss-free" % s,
                           "LSD %.2f -> %.2f (%+.2f dB); against Codec2 1300 loss-free LSD "
                           "%.2f, MCD %.2f vs %.2f" % (r0["lsd"], r5["lsd"],
                                                      r5["lsd"] - r0["lsd"], c13["lsd"],
                                                      r5["mcd"], c13["mcd"])))
    if have(("Opus 6k PLC", "gilbert-10")):
        op = results["Opus 6k PLC", "gilbert-10"]
        for s in frae_sys[:-1]:
            if not have((s, "gilbert-10")):
                continue
            r = results[s, "gilbert-10"]
            out.append(bar(r["lsd"] <= op["lsd"] and r["mcd"] <= op["mcd"],
                           "10%% bursty loss, %s >= Opus 6k PLC" % s,
                           "LSD %.2f vs %.2f, MCD %.2f vs %.2f dB" % (r["lsd"], op["lsd"],
                                                                    r["mcd"], op["mcd"])))
    if ("frae fixed", 0.01) in ber_res and ("Codec2 1300", 0.01) in ber_res:
        fb, cb = ber_res["frae fixed", 0.01], ber_res["Codec2 1300", 0.01]
        out.append(bar(fb["lsd"] < cb["lsd"] and fb["mcd"] < cb["mcd"],
                       "BER 1%: fixed-rate frae beats Codec2 1300",
                       "LSD %.2f vs %.2f, MCD %.2f vs %.2f dB" % (fb["lsd"], cb["lsd"],
                                                                fb["mcd"], cb["mcd"])))
    for label, rr in resync.items():
        r = rr["held"]
        out.append(bar(r["median_ms"] <= 200, "resynchronisation <= 200 ms, %s" % label,
                       "median %.0f ms (within 1 dB for %d ms; to the end: %.0f ms; f0: %.0f ms)"
                       % (r["median_ms"], 10 * HOLD, rr["strict"]["median_ms"],
                          rr["f0"]["median_ms"])))
    return out


def write_report(out, results, systems, ber_res, rates, resync, tstats, fec_share, opus_v,
                 secs, n_utt, conds=CONDITIONS):
    L = ["# Loss study (issue 37): %d held-out utterances, %.0f s, 40 ms packets" % (n_utt, secs),
         ""]
    L += ["| system | " + " | ".join(c[1] for c in conds) + " |",
          "| --- |" + " --- |" * len(conds)]
    for m, name in (("lsd", "LSD"), ("mcd", "MCD"), ("gpe", "GPE %"), ("vde", "VDE %")):
        for s in systems:
            L.append("| %s, %s | " % (s, name) + " | ".join(
                ("%.2f" if m in ("lsd", "mcd") else "%.1f") % results[s, c[0]][m]
                for c in conds) + " |")
    L += ["", "Realised loss: " + ", ".join(
        "%s %.2f%% (mean burst %.2f)" % (c[1], 100 * tstats[c[0]]["rate"],
                                         tstats[c[0]]["mean_burst"]) for c in conds[1:]),
          ""]
    if "Opus 6k FEC" in systems:
        L += ["Opus lost packets rebuilt from the next packet's FEC: " + ", ".join(
            "%s %d" % (c[1], fec_share[c[0]]) for c in conds[1:]) + " (libopus %s)" % opus_v, ""]
    L += ["| bit errors | BER | LSD | MCD | GPE % | VDE % |", "| --- | --- | --- | --- | --- | --- |"]
    for (s, ber), r in sorted(ber_res.items()):
        L.append("| %s | %g%% | %.2f | %.2f | %.1f | %.1f |" % (s, 100 * ber, r["lsd"], r["mcd"],
                                                              r["gpe"], r["vde"]))
    L += ["", "| frae as datagrams (kbit/s) | 20 ms | 40 ms | 60 ms | header (bytes, once) |",
          "| --- | --- | --- | --- | --- |"]
    for label in dict.fromkeys(k[0] for k in rates):
        L.append("| %s | %.3f | %.3f | %.3f | %.0f |" % (
            label, rates[label, 20]["kbps"], rates[label, 40]["kbps"], rates[label, 60]["kbps"],
            rates[label, 40]["header"]))
    L += ["", "| resynchronisation after one lost 40 ms packet | measure | median | mean "
          "| 90th pct | max |", "| --- | --- | --- | --- | --- | --- |"]
    what = {"held": "within 1 dB LSD for %d ms" % (10 * HOLD),
            "strict": "within 1 dB LSD to the end", "f0": "f0 the loss-free one's again"}
    for label, rr in resync.items():
        for kind, r in rr.items():
            L.append("| %s | %s | %.0f ms | %.0f ms | %.0f ms | %.0f ms |" % (
                label, what[kind], r["median_ms"], r["mean_ms"], r["p90_ms"], r["max_ms"]))
    L += ["", "Bars (issue 37):"] + bars(results, ber_res, rates, resync)
    text = "\n".join(L) + "\n"
    open(os.path.join(out, "report.md"), "w").write(text)
    return text


if __name__ == "__main__":
    main()
