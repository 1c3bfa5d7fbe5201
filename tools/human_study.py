#!/usr/bin/python3
"""Where the dB go on recorded human voices (issue 38): frae's stages one
at a time, and Opus 6 kbit/s and Codec2 1300 on the same clips, every
system measured as the demo measures it (tools/demo.py: the log-mel
features of the decoded WAV by frae features, aligned to the original's,
LSD and MCD over its speech frames, 0-4 and 0-8 kHz; GPE and VDE of
aubio's track of the WAV against aubio's track of the original).

On each held-out set (--sets: the human one, data/corpus/human/wav/test,
made by scripts/make-corpus.sh --human; the synthetic one,
data/corpus/wav/test; the many-voices one, data/corpus/voices/wav/test,
made by scripts/make-corpus.sh --voices), for every clip:
  - the vocoder alone: frae features --pitch, then frae vocode on those
    original features (f0 and voicing from frae's tracker), through audio;
  - the pitch tracker: frae's YIN track of the original against aubio's
    (the demo's reference: yinfft f0, YIN confidence >= 0.8);
  - each model (--model NAME=PATH, a frae checkpoint with --pitch;
    NAME=PATH,--search,2 gives frae encode those options too, and
    NAME=PATH,--decode,--polish,2 frae decode those after --decode): frae
    encode, frae decode -o NPY --wav WAV; its decoded features against the
    original's (no vocoder: the envelope coding alone), its decoded f0 and
    voicing against aubio's track (the pitch coding), the WAV through audio
    (everything), and two mixtures through the vocoder that tell the
    envelope's and the pitch's share apart: the decoded envelope with the
    original pitch, and the original envelope with the decoded pitch; its
    streams' kbit/s, every header byte counted;
  - Opus 6 kbit/s (opusenc --bitrate 6, opusdec) and Codec2 1300 and 3200
    (sox to 8 kHz, c2enc, c2dec, sox back to 16 kHz), as the demo runs them.
Every system through audio also gets a listener's measure: STOI and ESTOI
(tools/intelligibility.py) of its decoded WAV against the original, the WAV
aligned by the features' lag, then to the millisecond by its envelope.

With --conditions (e.g. clean,narrowband,noisy,quiet,loud: tools/augment.py's
presets), each held-out clip is first put under each recording condition
(seeded by its name), and the shipped or given models, Opus 6 kbit/s and
Codec2 1300 and 3200 code it; each is measured against its own input (LSD,
MCD, STOI, ESTOI; no pitch measures), per condition and per held-out
speaker.  --per-speaker N takes at most N clips of each held-out speaker.
With --conditions, --analysis "--win 640 --fft 1024" measures every system
with those frae features options (the original's and each decoded WAV's
features alike): a second look whose frames are not the codec's own.

Under each set's table, every model less Opus 6 kbit/s clip by clip: the
mean difference of LSD, MCD, STOI and ESTOI with its standard error over
the clips, and the clips where the model's STOI is ahead.

Writes OUT/report.md (a table per set, and per speaker for the human and
many-voices sets) and OUT/results.json (the tables' figures, and each
clip's LSD / MCD 0-4 kHz, STOI and ESTOI by system: SET_per_clip).

Usage: tools/human_study.py --model NAME=PATH [...] [--sets human,synthetic,voices]
       [--conditions C1,C2,...] [--analysis OPTS] [--per-speaker N]
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
import augment  # noqa: E402  (the recording conditions, issue 48)
import intelligibility  # noqa: E402  (STOI and ESTOI, numpy)

ROOT = demo.ROOT
FULL = np.arange(80)
NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]


def aligned(orig, wav, lag):
    """A decoded WAV's samples as long as the original's, moved by the
    features' lag (frames of 160 samples) and then to the best millisecond
    within +-10 ms by its energy envelope's correlation with the original's
    (a vocoder's waveform does not follow the original's phase, its
    envelope does)."""
    y = augment.read_wav(wav)[0]
    env = lambda a: np.sqrt(np.convolve(a ** 2, np.ones(64) / 64, "same")[::16] + 1e-12)
    ex = env(orig)
    best, at = None, 0
    for s in range(lag * 160 - 160, lag * 160 + 161, 16):
        z = y[max(0, s):] if s >= 0 else np.concatenate([np.zeros(-s), y])
        ez = env(z[:len(orig)])
        n = min(len(ex), len(ez))
        c = np.corrcoef(ex[:n], ez[:n])[0, 1] if n > 10 else -1
        if best is None or c > best:
            best, at = c, s
    z = y[max(0, at):] if at >= 0 else np.concatenate([np.zeros(-at), y])
    return np.concatenate([z, np.zeros(max(0, len(orig) - len(z)))])[:len(orig)]


def listener(orig, wav, lag):
    """STOI and ESTOI of a decoded WAV against the original samples, the
    WAV aligned (aligned())."""
    return list(intelligibility.scores(orig, aligned(orig, wav, lag), 16000))


def through_audio(frae, ref, ref_pitch, wav, tmp, orig=None):
    """The demo's step 5 for one decoded WAV: its features aligned to the
    original's, LSD/MCD both bands, and the pitch error counts (ref_pitch
    None: none); with the original's samples, STOI and ESTOI too."""
    got = demo.features(frae, wav, os.path.join(tmp, "got.npy"))
    lag = demo.best_lag(ref, got)
    test = demo.shift(len(ref), got, lag)
    ok = ~np.isnan(test).any(axis=1)
    out = {"nb": demo.metrics(ref[ok], test[ok], NARROW),
           "full": demo.metrics(ref[ok], test[ok], FULL), "lag": lag}
    if ref_pitch is not None:
        f0, v = demo.pitch_track(wav, len(got))
        f0, v = demo.shift(len(ref), f0, lag), demo.shift(len(ref), v.astype(float), lag)
        okp = ~np.isnan(v)
        out["pitch"] = demo.pitch_errors(ref_pitch, (np.nan_to_num(f0), v == 1, okp))
    if orig is not None:
        out["stoi"] = listener(orig, wav, lag)
    return out


def codec2(frae, ref, ref_pitch, wav, mode, tmp, orig):
    """Codec2 at MODE as tools/demo.py runs it: sox to 8 kHz, c2enc, c2dec,
    sox back to 16 kHz."""
    sh = demo.sh
    raw8 = os.path.join(tmp, "in8.raw")
    sh(["sox", "-R", wav, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
        "-t", "raw", raw8])
    c2 = os.path.join(tmp, "x.c2")
    sh(["c2enc", mode, raw8, c2])
    sh(["c2dec", mode, c2, os.path.join(tmp, "out8.raw")])
    out = os.path.join(tmp, "codec2.wav")
    sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t",
        "raw", os.path.join(tmp, "out8.raw"), "-r", "16000", out])
    r = through_audio(frae, ref, ref_pitch, out, tmp, orig)
    r["bytes"] = os.path.getsize(c2)
    return r


def opus6(frae, ref, ref_pitch, wav, tmp, orig):
    sh = demo.sh
    ogg = os.path.join(tmp, "x.opus")
    sh(["opusenc", "--quiet", "--bitrate", "6", wav, ogg])
    out = os.path.join(tmp, "opus.wav")
    sh(["opusdec", "--quiet", "--rate", "16000", ogg, out])
    r = through_audio(frae, ref, ref_pitch, out, tmp, orig)
    r["bytes"] = sum(demo.opus_packet_sizes(ogg))
    return r


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


def model_options(spec):
    """PATH,ENC...,--decode,DEC... -> (PATH, encode's options, decode's)."""
    path, *opts = spec.split(",")
    at = opts.index("--decode") if "--decode" in opts else len(opts)
    return path, opts[:at], opts[at + 1:]


def mixtures(dec, feats):
    """What tells the envelope's and the pitch's share apart: (label,
    [T, mels + 2] features) for the decoded envelope with the original
    pitch and for the original envelope with the decoded pitch."""
    n = min(len(dec), len(feats))
    return (("coded envelope, original pitch", np.concatenate([dec[:n, :80], feats[:n, 80:]],
                                                              axis=1)),
            ("original envelope, coded pitch", np.concatenate([feats[:n, :80], dec[:n, 80:]],
                                                              axis=1)))


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
    x = augment.read_wav(wav)[0]
    secs = float(sh(["soxi", "-D", wav]))
    res = {"_secs": secs}
    res["frae's pitch tracker (on the original)"] = {
        "pitch_only": pitch_vs(ref_pitch, feats[:, 80], feats[:, 81])}
    out = os.path.join(tmp, "vocoded.wav")
    sh([frae, "vocode", orig, "-o", out])
    res["vocoder alone (original features and pitch)"] = through_audio(
        frae, ref, ref_pitch, out, tmp, x)
    for key, path in models:
        fbs = os.path.join(tmp, key + ".fbs")
        path, enc, dec = model_options(path)
        sh([frae, "encode", path, wav, "-o", fbs, *enc])
        npy = os.path.join(tmp, key + ".npy")
        out = os.path.join(tmp, key + ".wav")
        sh([frae, "decode", path, fbs, "-o", npy, "--wav", out, *dec])
        dec = np.load(npy)
        r = through_audio(frae, ref, ref_pitch, out, tmp, x)
        r.update({"feat_" + k: v for k, v in in_features(ref, dec).items()})
        r["coded_pitch"] = pitch_vs(ref_pitch, dec[:, 80], dec[:, 81])
        r["bytes"] = os.path.getsize(fbs)
        res["FRAE %s" % key] = r
        for label, mixed in mixtures(dec, feats):
            p = os.path.join(tmp, "mix.npy")
            np.save(p, mixed.astype(np.float32))
            out = os.path.join(tmp, "mix.wav")
            sh([frae, "vocode", p, "-o", out])
            res["FRAE %s: %s" % (key, label)] = through_audio(frae, ref, ref_pitch, out, tmp,
                                                              x)
    # Opus 6 kbit/s and Codec2 1300 and 3200, as tools/demo.py runs them
    res["Opus 6 kbit/s"] = opus6(frae, ref, ref_pitch, wav, tmp, x)
    res["Codec2 1300"] = codec2(frae, ref, ref_pitch, wav, "1300", tmp, x)
    res["Codec2 3200"] = codec2(frae, ref, ref_pitch, wav, "3200", tmp, x)
    shutil.rmtree(tmp)
    return name, res


def one_condition_clip(a, models, wav, work):
    """The systems on one held-out clip under each recording condition
    (--conditions): {condition: {system: {measure: value}}}, each measured
    against its own input (the clip as conditioned), so that a codec is
    judged on how well it carries what it was given."""
    frae = a.frae
    name = os.path.basename(wav)[:-4]
    x0 = augment.read_wav(wav)[0]
    out = {}
    for cond in a.conditions.split(","):
        tmp = os.path.join(work, name + "-" + cond.replace(":", "_"))
        os.makedirs(tmp, exist_ok=True)
        src = os.path.join(tmp, "in.wav")
        seed = sum(map(ord, name + cond))  # fixed per clip and condition
        augment.write_wav(src, augment.apply(x0, cond, seed))
        x = augment.read_wav(src)[0]
        ref = demo.features(frae, src, os.path.join(tmp, "ref.npy"))
        res = {"_secs": len(x) / 16000.0}
        for key, path in models:
            fbs = os.path.join(tmp, key + ".fbs")
            path, enc, dec_opts = model_options(path)
            demo.sh([frae, "encode", path, src, "-o", fbs, *enc])
            dec = os.path.join(tmp, key + ".wav")
            demo.sh([frae, "decode", path, fbs, "--wav", dec, *dec_opts])
            r = through_audio(frae, ref, None, dec, tmp, x)
            r["bytes"] = os.path.getsize(fbs)
            res["FRAE %s" % key] = r
        res["Opus 6 kbit/s"] = opus6(frae, ref, None, src, tmp, x)
        res["Codec2 1300"] = codec2(frae, ref, None, src, "1300", tmp, x)
        res["Codec2 3200"] = codec2(frae, ref, None, src, "3200", tmp, x)
        out[cond] = res
        shutil.rmtree(tmp)
    return name, out


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
        if "stoi" in rows[0]:  # a clip too short for a 384 ms segment has none
            v = np.array([r["stoi"] for r in rows], float)
            o["stoi"] = float(np.nanmean(v[:, 0]))
            o["estoi"] = float(np.nanmean(v[:, 1]))
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
             "| STOI | ESTOI | GPE | VDE | features LSD 0-4 | features MCD 0-4 "
             "| coded pitch GPE / VDE |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s, o in summary["systems"].items():
        gpe = "gpe_pitch" if "gpe_pitch" in o else "gpe_pitch_only"
        vde = "vde_pitch" if "vde_pitch" in o else "vde_pitch_only"
        cp = ("%.1f%% / %.1f%%" % (o["gpe_coded_pitch"], o["vde_coded_pitch"])
              if "gpe_coded_pitch" in o else "-")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s, f(o, "stream_kbps", "%.3f"), f(o, "lsd_nb"), f(o, "mcd_nb"), f(o, "lsd_full"),
            f(o, "mcd_full"), f(o, "stoi", "%.3f"), f(o, "estoi", "%.3f"), f(o, gpe, "%.1f%%"),
            f(o, vde, "%.1f%%"), f(o, "lsd_feat_nb"), f(o, "mcd_feat_nb"), cp))
    return "\n".join(lines)


def clip_measures(per):
    """Each clip's LSD / MCD 0-4 kHz, STOI and ESTOI by system, for
    results.json (paired comparisons on any subset of clips)."""
    out = {}
    for name, r in per.items():
        out[name] = {s: {"lsd_nb": v["nb"][0], "mcd_nb": v["nb"][1],
                         **({"stoi": v["stoi"][0], "estoi": v["stoi"][1]} if "stoi" in v else {})}
                     for s, v in r.items() if not s.startswith("_") and "nb" in v}
    return out


def paired(per, against="Opus 6 kbit/s"):
    """Each FRAE system less the system against, clip by clip: the mean
    difference of LSD / MCD 0-4 kHz, STOI and ESTOI, its standard error
    over the clips (how far the mean could move with other clips of the
    same speakers), and the clips where FRAE is ahead."""
    lines = ["| FRAE less %s, clip by clip | LSD 0-4 kHz | MCD 0-4 kHz | STOI | ESTOI "
             "| clips ahead on STOI |" % against, "| --- | --- | --- | --- | --- | --- |"]
    m = clip_measures(per)
    for s in next(iter(m.values())):
        if not s.startswith("FRAE") or ":" in s:
            continue
        cells, ahead = [], "-"
        for k in ("lsd_nb", "mcd_nb", "stoi", "estoi"):
            d = np.array([c[s][k] - c[against][k] for c in m.values()
                          if k in c[s] and k in c[against]], float)
            d = d[~np.isnan(d)]
            fmt = "%+.2f +- %.2f" if k[0] in "lm" else "%+.4f +- %.4f"
            cells.append(fmt % (d.mean(), d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else "-")
            if k == "stoi" and len(d):
                ahead = "%d of %d" % (np.sum(d > 0), len(d))
        lines.append("| %s | %s | %s |" % (s, " | ".join(cells), ahead))
    return lines


def condition_tables(per, speaker_of):
    """Per condition, the systems; then per held-out speaker, each system's
    LSD / MCD 0-4 kHz and STOI / ESTOI under each condition."""
    conds = list(next(iter(per.values())).keys())
    results, lines = {}, []
    for c in conds:
        sub = summarise({n: r[c] for n, r in per.items()})
        results[c] = {"all": sub, "by_speaker": {}}
        lines += ["### condition %s (%d clips, %.0f s)" % (c, sub["clips"], sub["seconds"]), "",
                  "| system | stream kbit/s | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz "
                  "| MCD 0-8 kHz | STOI | ESTOI |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for sysname, o in sub["systems"].items():
            lines.append("| %s | %.3f | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f |" % (
                sysname, o["stream_kbps"], o["lsd_nb"], o["mcd_nb"], o["lsd_full"], o["mcd_full"],
                o["stoi"], o["estoi"]))
        lines.append("")
        for sp in sorted({speaker_of(n) for n in per}):
            results[c]["by_speaker"][sp] = summarise(
                {n: r[c] for n, r in per.items() if speaker_of(n) == sp})
    systems = list(results[conds[0]]["all"]["systems"])
    for sysname in systems:
        lines += ["### %s per held-out speaker: LSD / MCD 0-4 kHz, STOI / ESTOI" % sysname, "",
                  "| speaker | " + " | ".join(conds) + " |",
                  "| --- | " + " | ".join("---" for _ in conds) + " |"]
        for sp in sorted(results[conds[0]]["by_speaker"]):
            cells = []
            for c in conds:
                o = results[c]["by_speaker"][sp]["systems"][sysname]
                cells.append("%.2f / %.2f, %.3f / %.3f" % (o["lsd_nb"], o["mcd_nb"], o["stoi"],
                                                          o["estoi"]))
            lines.append("| %s | %s |" % (sp, " | ".join(cells)))
        lines.append("")
    return results, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--sets", default="human,synthetic")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--out", default=os.path.join(ROOT, "human-study"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--conditions", default="",
                    help="with these recording conditions (tools/augment.py presets, "
                         "e.g. clean,narrowband,noisy,quiet,loud): the systems alone on each "
                         "held-out clip under each, measured against their input")
    ap.add_argument("--analysis", default="",
                    help="with --conditions: frae features options for every system's "
                         "measures (e.g. \"--win 640 --fft 1024\")")
    ap.add_argument("--per-speaker", type=int, default=0,
                    help="at most N clips a held-out speaker, taken evenly (0: all)")
    a = ap.parse_args()
    if a.analysis and not a.conditions:
        sys.exit("human_study.py: --analysis needs --conditions (the vocoder's rows "
                 "take the codec's own features)")
    demo.FEATURE_OPTS = a.analysis.split()
    models = []
    for m in a.model:
        if "=" not in m:
            sys.exit("human_study.py: --model wants NAME=PATH, not %s" % m)
        models.append(tuple(m.split("=", 1)))
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="frae-human-study-")
    dirs = {"human": os.path.join(a.corpus, "human", "wav", "test"),
            "synthetic": os.path.join(a.corpus, "wav", "test"),
            "voices": os.path.join(a.corpus, "voices", "wav", "test")}
    speaker_of = lambda n: "-".join(n.split("-")[:2])
    results, report = {}, ["# frae on recorded human voices: where the dB go", ""]
    for s in a.sets.split(","):
        wavs = sorted(glob.glob(os.path.join(dirs[s], "*.wav")))
        if not wavs:
            sys.exit("human_study.py: no clips in %s (scripts/make-corpus.sh%s)" % (
                dirs[s], {"human": " --human", "voices": " --voices"}.get(s, "")))
        if a.per_speaker:
            by = {}
            for w in wavs:
                by.setdefault(speaker_of(os.path.basename(w)), []).append(w)
            wavs = sorted(w for v in by.values() for w in (
                v if len(v) <= a.per_speaker else
                [v[int(i * len(v) / a.per_speaker)] for i in range(a.per_speaker)]))
        print("== %s held-out set: %d clips" % (s, len(wavs)), flush=True)
        if a.conditions:
            with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
                per = dict(ex.map(lambda w: one_condition_clip(a, models, w, work), wavs))
            results[s], lines = condition_tables(per, speaker_of)
            report += ["## %s held-out set under recording conditions (%d clips)" % (
                s, len(wavs)), ""] + lines
            print("\n".join(lines[:60]), flush=True)
            continue
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            per = dict(ex.map(lambda w: one_clip(a, models, w, work), wavs))
        results[s] = summarise(per)
        results[s + "_per_clip"] = clip_measures(per)
        report += ["## %s held-out set (%d clips, %.0f s)" % (s, len(wavs),
                                                            results[s]["seconds"]), "",
                   table(results[s]), ""] + paired(per) + [""]
        if s in ("human", "voices"):  # per held-out speaker
            spk = sorted({speaker_of(n) for n in per})
            results[s + "_by_speaker"] = {}
            for sp in spk:
                sub = summarise({n: r for n, r in per.items() if n.startswith(sp + "-")})
                results[s + "_by_speaker"][sp] = sub
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
