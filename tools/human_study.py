#!/usr/bin/python3
"""Where the dB go on recorded human voices (issue 38): frae's stages one
at a time, and Opus 6 kbit/s and Codec2 1300 on the same clips, every
system measured as the demo measures it (tools/demo.py: the log-mel
features of the decoded WAV by frae features, aligned to the original's,
LSD and MCD over its speech frames, 0-4 and 0-8 kHz; GPE and VDE of
aubio's track of the WAV against aubio's track of the original).

On each held-out set (--sets: the human one, data/corpus/human/wav/test,
made by scripts/make-corpus.sh --human; the synthetic one,
data/corpus/wav/test), for every clip:
  - the vocoder alone: frae features --pitch, then frae vocode on those
    original features (f0 and voicing from frae's tracker), through audio;
  - the pitch tracker: frae's YIN track of the original against aubio's
    (the demo's reference: yinfft f0, YIN confidence >= 0.8);
  - each model (--model NAME=PATH, a frae checkpoint with --pitch): frae
    encode, frae decode -o NPY --wav WAV; its decoded features against the
    original's (no vocoder: the envelope coding alone), its decoded f0 and
    voicing against aubio's track (the pitch coding), the WAV through audio
    (everything), and two mixtures through the vocoder that tell the
    envelope's and the pitch's share apart: the decoded envelope with the
    original pitch, and the original envelope with the decoded pitch; its
    streams' kbit/s, every header byte counted;
  - Opus 6 kbit/s (opusenc --bitrate 6, opusdec) and Codec2 1300 (sox to
    8 kHz, c2enc, c2dec, sox back to 16 kHz), as the demo runs them.

Writes OUT/report.md (a table per set, and per speaker for the human set)
and OUT/results.json.

Usage: tools/human_study.py --model NAME=PATH [...] [--sets human,synthetic]
       [--corpus DIR] [--frae PATH] [--out DIR] [--jobs N]"""
import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402  (the measures, as the demo takes them)

ROOT = demo.ROOT
FULL = np.arange(80)
NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]


def through_audio(frae, ref, ref_pitch, wav, tmp):
    """The demo's step 5 for one decoded WAV: its features aligned to the
    original's, LSD/MCD both bands, and the pitch error counts."""
    got = demo.features(frae, wav, os.path.join(tmp, "got.npy"))
    lag = demo.best_lag(ref, got)
    test = demo.shift(len(ref), got, lag)
    ok = ~np.isnan(test).any(axis=1)
    f0, v = demo.pitch_track(wav, len(got))
    f0, v = demo.shift(len(ref), f0, lag), demo.shift(len(ref), v.astype(float), lag)
    okp = ~np.isnan(v)
    return {"nb": demo.metrics(ref[ok], test[ok], NARROW),
            "full": demo.metrics(ref[ok], test[ok], FULL),
            "pitch": demo.pitch_errors(ref_pitch, (np.nan_to_num(f0), v == 1, okp)),
            "lag": lag}


def in_features(ref, dec):
    """Decoded features against the original's, frame for frame (the
    decoder's frames are the input's)."""
    n = min(len(ref), len(dec))
    return {"nb": demo.metrics(ref[:n], dec[:n, :80], NARROW),
            "full": demo.metrics(ref[:n], dec[:n, :80], FULL)}


def pitch_vs(ref_pitch, f0, voiced):
    n = len(ref_pitch[0])
    f0 = np.concatenate([f0, np.zeros(max(0, n - len(f0)))])[:n]
    v = np.concatenate([voiced, np.zeros(max(0, n - len(voiced)))])[:n] > 0.5
    return demo.pitch_errors(ref_pitch, (np.where(v, f0, 0.0), v, np.ones(n, bool)))


def one_clip(a, models, wav, work):
    """Every measure of one held-out clip: {system: {measure: value}}."""
    frae = a.frae
    name = os.path.basename(wav)[:-4]
    tmp = os.path.join(work, name)
    os.makedirs(tmp, exist_ok=True)
    sh = demo.sh
    orig = os.path.join(tmp, "orig.npy")
    sh([frae, "features", "--pitch", wav, "-o", orig])
    feats = np.load(orig)
    ref = feats[:, :80]
    ref_pitch = demo.pitch_track(wav, len(ref))
    secs = float(sh(["soxi", "-D", wav]))
    res = {"_secs": secs}
    res["frae's pitch tracker (on the original)"] = {
        "pitch_only": pitch_vs(ref_pitch, feats[:, 80], feats[:, 81])}
    out = os.path.join(tmp, "vocoded.wav")
    sh([frae, "vocode", orig, "-o", out])
    res["vocoder alone (original features and pitch)"] = through_audio(
        frae, ref, ref_pitch, out, tmp)
    for key, path in models:
        fbs = os.path.join(tmp, key + ".fbs")
        sh([frae, "encode", path, wav, "-o", fbs])
        npy = os.path.join(tmp, key + ".npy")
        out = os.path.join(tmp, key + ".wav")
        sh([frae, "decode", path, fbs, "-o", npy, "--wav", out])
        dec = np.load(npy)
        r = through_audio(frae, ref, ref_pitch, out, tmp)
        r.update({"feat_" + k: v for k, v in in_features(ref, dec).items()})
        r["coded_pitch"] = pitch_vs(ref_pitch, dec[:, 80], dec[:, 81])
        r["bytes"] = os.path.getsize(fbs)
        res["FRAE %s" % key] = r
        n = min(len(dec), len(feats))
        for label, mixed in (("coded envelope, original pitch",
                              np.concatenate([dec[:n, :80], feats[:n, 80:]], axis=1)),
                             ("original envelope, coded pitch",
                              np.concatenate([feats[:n, :80], dec[:n, 80:]], axis=1))):
            p = os.path.join(tmp, "mix.npy")
            np.save(p, mixed.astype(np.float32))
            out = os.path.join(tmp, "mix.wav")
            sh([frae, "vocode", p, "-o", out])
            res["FRAE %s: %s" % (key, label)] = through_audio(frae, ref, ref_pitch, out, tmp)
    # Opus 6 kbit/s and Codec2 1300, as tools/demo.py runs them
    ogg = os.path.join(tmp, "x.opus")
    sh(["opusenc", "--quiet", "--bitrate", "6", wav, ogg])
    out = os.path.join(tmp, "opus.wav")
    sh(["opusdec", "--quiet", "--rate", "16000", ogg, out])
    r = through_audio(frae, ref, ref_pitch, out, tmp)
    r["bytes"] = sum(demo.opus_packet_sizes(ogg))
    res["Opus 6 kbit/s"] = r
    raw8 = os.path.join(tmp, "in8.raw")
    sh(["sox", "-R", wav, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
        "-t", "raw", raw8])
    c2 = os.path.join(tmp, "x.c2")
    sh(["c2enc", "1300", raw8, c2])
    sh(["c2dec", "1300", c2, os.path.join(tmp, "out8.raw")])
    out = os.path.join(tmp, "codec2.wav")
    sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t",
        "raw", os.path.join(tmp, "out8.raw"), "-r", "16000", out])
    r = through_audio(frae, ref, ref_pitch, out, tmp)
    r["bytes"] = os.path.getsize(c2)
    res["Codec2 1300"] = r
    shutil.rmtree(tmp)
    return name, res


def summarise(per_clip):
    """Means over clips (as the demo: each clip's mean, then their mean),
    pitch errors over the pooled frames, kbit/s over the total duration."""
    secs = sum(r["_secs"] for r in per_clip.values())
    systems = [k for k in next(iter(per_clip.values())) if not k.startswith("_")]
    out = {}
    for s in systems:
        rows = [r[s] for r in per_clip.values()]
        o = {}
        for m in ("nb", "full", "feat_nb", "feat_full"):
            if m in rows[0]:
                o["lsd_" + m] = float(np.mean([r[m][0] for r in rows]))
                o["mcd_" + m] = float(np.mean([r[m][1] for r in rows]))
        for m in ("pitch", "pitch_only", "coded_pitch"):
            if m in rows[0]:
                c = np.sum([r[m] for r in rows], axis=0)
                o["gpe_" + m] = 100.0 * c[0] / max(c[1], 1)
                o["vde_" + m] = 100.0 * c[2] / max(c[3], 1)
        if "bytes" in rows[0]:
            o["stream_kbps"] = sum(r["bytes"] for r in rows) * 8 / secs / 1000
        out[s] = o
    return {"clips": len(per_clip), "seconds": secs, "systems": out}


def table(summary):
    f = lambda o, k, fmt="%.2f": fmt % o[k] if k in o else "-"
    lines = ["| system | stream kbit/s | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz | MCD 0-8 kHz "
             "| GPE | VDE | features LSD 0-4 | features MCD 0-4 | coded pitch GPE / VDE |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s, o in summary["systems"].items():
        gpe = "gpe_pitch" if "gpe_pitch" in o else "gpe_pitch_only"
        vde = "vde_pitch" if "vde_pitch" in o else "vde_pitch_only"
        cp = ("%.1f%% / %.1f%%" % (o["gpe_coded_pitch"], o["vde_coded_pitch"])
              if "gpe_coded_pitch" in o else "-")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s, f(o, "stream_kbps", "%.3f"), f(o, "lsd_nb"), f(o, "mcd_nb"), f(o, "lsd_full"),
            f(o, "mcd_full"), f(o, gpe, "%.1f%%"), f(o, vde, "%.1f%%"), f(o, "lsd_feat_nb"),
            f(o, "mcd_feat_nb"), cp))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--sets", default="human,synthetic")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--out", default=os.path.join(ROOT, "human-study"))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    models = []
    for m in a.model:
        if "=" not in m:
            sys.exit("human_study.py: --model wants NAME=PATH, not %s" % m)
        models.append(tuple(m.split("=", 1)))
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="frae-human-study-")
    dirs = {"human": os.path.join(a.corpus, "human", "wav", "test"),
            "synthetic": os.path.join(a.corpus, "wav", "test")}
    results, report = {}, ["# frae on recorded human voices: where the dB go", ""]
    for s in a.sets.split(","):
        wavs = sorted(glob.glob(os.path.join(dirs[s], "*.wav")))
        if not wavs:
            sys.exit("human_study.py: no clips in %s (scripts/make-corpus.sh%s)" % (
                dirs[s], " --human" if s == "human" else ""))
        print("== %s held-out set: %d clips" % (s, len(wavs)), flush=True)
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            per = dict(ex.map(lambda w: one_clip(a, models, w, work), wavs))
        results[s] = summarise(per)
        report += ["## %s held-out set (%d clips, %.0f s)" % (s, len(wavs),
                                                            results[s]["seconds"]), "",
                   table(results[s]), ""]
        if s == "human":  # per held-out speaker
            spk = sorted({"-".join(n.split("-")[:2]) for n in per})
            results["human_by_speaker"] = {}
            for sp in spk:
                sub = summarise({n: r for n, r in per.items() if n.startswith(sp + "-")})
                results["human_by_speaker"][sp] = sub
                report += ["### speaker %s (%d clips, %.0f s)" % (sp, sub["clips"],
                                                                  sub["seconds"]), "",
                           table(sub), ""]
        print("\n".join(report[-40:]), flush=True)
    shutil.rmtree(work)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(report) + "\n")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("wrote %s and results.json" % os.path.join(a.out, "report.md"))


if __name__ == "__main__":
    main()
