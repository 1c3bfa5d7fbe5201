#!/usr/bin/python3
"""The frae speech demo: train an FRAE codec on the synthetic corpus, code
the held-out voices, and compare with Codec2 and Opus in the mel domain.

  1. builds the corpus if needed (scripts/make-corpus.sh: espeak-ng, flite);
  2. trains two FRAE codecs at the same bitrate on the training voices
     (frae train, progress shown), with the held-out voices as validation
     data: the dense family (the 4 last decoded frames fed back) and the
     GRU family (the decoder's GRU state fed back, as in the FRAE paper);
  3. encodes and decodes every held-out utterance with each (frae encode /
     decode --wav) and writes the decoded WAVs;
  4. runs Codec2 (700C, 1300, 3200 bit/s) and Opus (6 kbit/s) on the same
     audio, aligns each codec's delay, and computes the metrics on the
     log-mel features of the decoded audio;
  5. prints the table (also demo/report.md) and draws demo/loss.png and
     demo/spectrogram.png.

What it measures: distance between spectral envelopes (80-band log-mel),
over speech frames (reference frame energy within 50 dB of the utterance's
loudest): LSD, the RMS difference of the log-mel power in dB, and MCD,
(10/ln 10) sqrt(2 sum_k (c_k - c'_k)^2) over mel cepstra c_1..c_12 of the
log-mel magnitude, scaled like the real cepstrum.  No vocoder and no
listening test: FRAE's figures are those of its decoded features, the
codecs' those of features of their decoded audio.  Codec2 is narrowband
(8 kHz audio), so the 0-4 kHz band is reported separately: the mel bands
wholly below 3.8 kHz (clear of the resampling filter's roll-off).

Usage: tools/demo.py [--epochs N] [--out DIR] [--frae PATH]"""
import argparse
import glob
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DB = 10.0 / math.log(10.0)   # ln -> dB
FEAT_SCALE = 5.0             # feature = (ln(mel) + 5) / 5: ln(mel) = 5 f - 5


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                   (p.stderr or p.stdout).strip()))
    return p.stdout


def mel_upper_edges(n_mels=80, fmin=0.0, fmax=8000.0):
    """Upper edge (Hz) of each triangular mel band."""
    mel = lambda hz: 2595.0 * np.log10(1.0 + hz / 700.0)
    hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    lo, hi = mel(fmin), mel(fmax)
    return hz(lo + (hi - lo) * np.arange(2, n_mels + 2) / (n_mels + 1))


def cepstrum(log_mag, order=12):
    """Mel cepstrum c_1..c_order of a log magnitude over mel bands, scaled
    like the real cepstrum (ln|X| = c_0 + 2 sum c_k cos(...)), as MCD
    expects."""
    n = log_mag.shape[-1]
    k = np.arange(1, order + 1)[:, None]
    basis = np.cos(np.pi * k * (np.arange(n)[None, :] + 0.5) / n)
    return log_mag @ basis.T / n


def speech_frames(ref):
    """Frames whose energy is within 50 dB of the loudest."""
    energy = np.log(np.exp(ref * FEAT_SCALE - 5.0).sum(axis=1))
    return energy >= energy.max() - 50.0 / DB


def metrics(ref, test, bands):
    """LSD (dB) and MCD (dB, cepstra 1..12) over speech frames."""
    keep = speech_frames(ref)
    a = (ref[keep][:, bands] * FEAT_SCALE - 5.0)   # ln mel power
    b = (test[keep][:, bands] * FEAT_SCALE - 5.0)
    lsd = np.sqrt(np.mean((DB * (a - b)) ** 2, axis=1)).mean()
    ca, cb = cepstrum(0.5 * a), cepstrum(0.5 * b)   # ln magnitude
    mcd = (DB * np.sqrt(2.0 * np.sum((ca - cb) ** 2, axis=1))).mean()
    return lsd, mcd


def align(ref, test, max_lag=25):
    """The lag (frames) of test against ref that minimises the LSD of
    their overlap; returns test shifted and cut to ref's length."""
    best, best_lag = None, 0
    for lag in range(-max_lag, max_lag + 1):
        r = ref[max(0, -lag):]
        t = test[max(0, lag):]
        n = min(len(r), len(t))
        if n < len(ref) // 2:
            continue
        d = np.mean((r[:n] - t[:n]) ** 2)
        if best is None or d < best:
            best, best_lag = d, lag
    t = test[max(0, best_lag):]
    r_off = max(0, -best_lag)
    out = np.full_like(ref, np.nan)
    n = min(len(ref) - r_off, len(t))
    out[r_off:r_off + n] = t[:n]
    return out, best_lag


def features(frae, wav, npy):
    sh([frae, "features", wav, "-o", npy])
    return np.load(npy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=45)
    ap.add_argument("--out", default=os.path.join(ROOT, "demo"))
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    a = ap.parse_args()
    frae, out = a.frae, a.out
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)

    print("== 1. corpus (espeak-ng, flite)", flush=True)
    sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), a.corpus, frae])
    print(open(os.path.join(a.corpus, ".complete")).read().strip(), flush=True)

    # the two families at the same bitrate (16 x 2 bits), same data, same
    # recipe; full-feedback BPTT learns the feedback loop's dynamics (with
    # detached feedback the dense closed loop sometimes diverged on some
    # sequences)
    families = (("dense", "FRAE dense, 4 decoded frames fed back", []),
                ("gru", "FRAE GRU, decoder state fed back", ["--family", "gru"]))
    models = {}
    for fam, label, opts in families:
        print("== 2. training the FRAE codec, %s family (%d epochs)" % (fam, a.epochs),
              flush=True)
        model = os.path.join(out, "model-%s.safetensors" % fam)
        log = os.path.join(out, "train-%s.csv" % fam)
        if os.path.exists(log):
            os.remove(log)
        cmd = [frae, "train", os.path.join(a.corpus, "feats", "train"), "--audio-features",
               "--val-data", os.path.join(a.corpus, "feats", "test"), *opts,
               "--quantizer", "uniform:4", "--latent", "16", "--batch", "16",
               "--feedback", "full", "--lr", "0.0005", "--clip-norm", "1",
               "--epochs", str(a.epochs), "--save", model, "--log-csv", log]
        if subprocess.run(cmd).returncode != 0:
            sys.exit("training failed")
        info = sh([frae, "info", model])
        bits = [l for l in info.splitlines() if "bits/frame" in l][0].split(",")[1].split()[0]
        params = [l for l in info.splitlines() if "parameters" in l]
        # the deployment form: the same model with bf16 weights
        model16 = os.path.join(out, "model-%s-bf16.safetensors" % fam)
        sh([frae, "convert", model, "-o", model16, "--weights", "bf16"])
        models[fam] = {"label": label, "path": model, "bf16": model16, "log": log,
                       "bits": bits, "kbps": float(bits) * 100 / 1000, "bytes": 0,
                       "feats": {}, "feats16": {}, "info": params[0].strip() if params else ""}
    for old in ("model.safetensors", "model-bf16.safetensors", "train.csv"):
        if os.path.exists(os.path.join(out, old)):  # an older demo's single model
            os.remove(os.path.join(out, old))

    print("== 3. coding the held-out voices", flush=True)
    tmp = tempfile.mkdtemp(prefix="frae-demo-")
    tests = sorted(glob.glob(os.path.join(a.corpus, "wav", "test", "*.wav")))
    refs = {}
    for w in tests:
        name = os.path.basename(w)[:-4]
        refs[name] = features(frae, w, os.path.join(tmp, name + "-ref.npy"))
        shutil.copy(w, os.path.join(out, "wav", name + "-original.wav"))
        for fam, m in models.items():
            fbs = os.path.join(tmp, "%s-%s.fbs" % (name, fam))
            sh([frae, "encode", m["path"], w, "-o", fbs])
            m["bytes"] += os.path.getsize(fbs)
            npy = os.path.join(tmp, "%s-%s.npy" % (name, fam))
            sh([frae, "decode", m["path"], fbs, "-o", npy, "--wav",
                os.path.join(out, "wav", "%s-frae-%s.wav" % (name, fam)), "--gl-iters", "48"])
            m["feats"][name] = np.load(npy)
            fbs16 = os.path.join(tmp, "%s-%s-bf16.fbs" % (name, fam))
            sh([frae, "encode", m["bf16"], w, "-o", fbs16])
            npy16 = os.path.join(tmp, "%s-%s-bf16.npy" % (name, fam))
            sh([frae, "decode", m["bf16"], fbs16, "-o", npy16])
            m["feats16"][name] = np.load(npy16)
    print("decoded WAVs (Griffin-Lim) in %s" % os.path.join(out, "wav"), flush=True)

    print("== 4. Codec2 and Opus on the same audio", flush=True)
    systems = {}
    for fam, m in models.items():
        systems[m["label"]] = {"kbps": m["kbps"], "feats": m["feats"], "lags": []}
        systems[m["label"] + ", bf16 weights"] = {"kbps": m["kbps"], "feats": m["feats16"],
                                                  "lags": []}
    for mode in ("700C", "1300", "3200"):
        kbps = {"700C": 0.7, "1300": 1.3, "3200": 3.2}[mode]
        feats, lags = {}, []
        for w in tests:
            name = os.path.basename(w)[:-4]
            raw8 = os.path.join(tmp, "in8.raw")
            sh(["sox", "-R", w, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
                "-t", "raw", raw8])
            c2 = os.path.join(tmp, "x.c2")
            sh(["c2enc", mode, raw8, c2])
            sh(["c2dec", mode, c2, os.path.join(tmp, "out8.raw")])
            wav = os.path.join(tmp, "c2.wav")
            sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw",
                os.path.join(tmp, "out8.raw"), "-r", "16000", wav])
            f, lag = align(refs[name], features(frae, wav, os.path.join(tmp, "c2.npy")))
            feats[name] = f
            lags.append(lag)
        systems["Codec2 %s" % mode] = {"kbps": kbps, "feats": feats, "lags": lags}
    feats, lags, opus_bytes, secs = {}, [], 0, 0
    for w in tests:
        name = os.path.basename(w)[:-4]
        ogg = os.path.join(tmp, "x.opus")
        sh(["opusenc", "--quiet", "--bitrate", "6", w, ogg])
        opus_bytes += os.path.getsize(ogg)
        secs += float(sh(["soxi", "-D", w]))
        wav = os.path.join(tmp, "opus.wav")
        sh(["opusdec", "--quiet", "--rate", "16000", ogg, wav])
        f, lag = align(refs[name], features(frae, wav, os.path.join(tmp, "opus.npy")))
        feats[name] = f
        lags.append(lag)
    systems["Opus 6 kbit/s"] = {"kbps": opus_bytes * 8 / secs / 1000, "feats": feats,
                                "lags": lags}

    full = np.arange(80)
    # narrowband: bands wholly below 3.8 kHz, clear of the roll-off of an
    # 8 kHz-sampled codec's resampling filter
    narrow = np.where(mel_upper_edges() <= 3800)[0]
    rows = []
    for label, s in systems.items():
        r = {"label": label, "kbps": s["kbps"]}
        for tag, bands in (("full", full), ("nb", narrow)):
            vals = []
            for name, ref in refs.items():
                test = s["feats"][name]
                ok = ~np.isnan(test).any(axis=1)
                vals.append(metrics(ref[ok], test[ok], bands))
            r["lsd_" + tag] = float(np.mean([v[0] for v in vals]))
            r["mcd_" + tag] = float(np.mean([v[1] for v in vals]))
        r["lag"] = (", lag %d..%d frames" % (min(s["lags"]), max(s["lags"]))) if s["lags"] else ""
        rows.append(r)

    lines = ["| system | kbit/s | LSD 0-8 kHz (dB) | MCD 0-8 kHz (dB) | LSD 0-4 kHz (dB) | MCD 0-4 kHz (dB) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            r["label"], r["kbps"], r["lsd_full"], r["mcd_full"], r["lsd_nb"], r["mcd_nb"]))
    table = "\n".join(lines)
    by = {r["label"]: r for r in rows}
    d, g = by[models["dense"]["label"]], by[models["gru"]["label"]]
    val = {fam: float(np.genfromtxt(m["log"], delimiter=",", names=True)["val_loss"][-1])
           for fam, m in models.items()}
    gain = ("What the recurrent state buys, same bitrate, same data and recipe: on the "
            "held-out voices the GRU family's LSD is %.2f dB lower than the dense family's "
            "(%.2f against %.2f; 0-4 kHz: %.2f lower) and its MCD %.2f dB lower (%.2f "
            "against %.2f); final held-out MSE %.4f against %.4f (%.1f dB)."
            % (d["lsd_full"] - g["lsd_full"], g["lsd_full"], d["lsd_full"],
               d["lsd_nb"] - g["lsd_nb"], d["mcd_full"] - g["mcd_full"], g["mcd_full"],
               d["mcd_full"], val["gru"], val["dense"],
               10 * math.log10(val["dense"] / val["gru"])))
    notes = ("%d held-out utterances (%.0f s, voices never seen in training); "
             "log-mel distances over speech frames; codec delays aligned per utterance "
             "(%s). FRAE: %s bits/frame at 100 frames/s; streams total %s bytes with "
             "headers. %s. Mel-domain envelopes only: no vocoder, no listening test."
             % (len(tests), secs, "; ".join("%s%s" % (r["label"], r["lag"]) for r in rows if r["lag"]),
                "/".join(m["bits"] for m in models.values()),
                " and ".join("%d (%s)" % (m["bytes"], fam) for fam, m in models.items()),
                "; ".join("%s: %s" % (fam, m["info"]) for fam, m in models.items())))
    print()
    print(table)
    print()
    print(gain)
    print()
    print(notes)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("# frae speech demo\n\n" + table + "\n\n" + gain + "\n\n" + notes + "\n")

    print("== 5. figures", flush=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.figure(figsize=(7, 4))
    for fam, m in models.items():
        csv = np.genfromtxt(m["log"], delimiter=",", names=True)
        line, = plt.plot(csv["epoch"], csv["loss"], label="%s: training loss" % fam)
        plt.plot(csv["epoch"], csv["val_loss"], "--", color=line.get_color(),
                 label="%s: held-out voices" % fam)
    plt.xlabel("epoch")
    plt.ylabel("MSE (log-mel features)")
    plt.yscale("log")
    plt.title("frae: FRAE codec training, both families at %s kbit/s"
              % models["dense"]["kbps"])
    plt.grid(alpha=0.3)
    plt.legend()
    plt.tight_layout()
    plt.savefig(os.path.join(out, "loss.png"), dpi=110)
    name = sorted(refs)[0]
    ref = refs[name]
    panels = [(ref, "original")] + [(m["feats"][name], "decoded by %s, %s kbit/s" % (
        m["label"], m["kbps"])) for m in models.values()]
    fig, ax = plt.subplots(len(panels), 1, figsize=(9, 2.7 * len(panels)), sharex=True)
    lim = (min(p[0].min() for p in panels), max(p[0].max() for p in panels))
    for k, (img, title) in enumerate(panels):
        im = ax[k].imshow(img.T, origin="lower", aspect="auto", vmin=lim[0], vmax=lim[1])
        ax[k].set_title("%s: %s" % (name, title))
        ax[k].set_ylabel("mel band")
        fig.colorbar(im, ax=ax[k])
    ax[-1].set_xlabel("frame (10 ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spectrogram.png"), dpi=110)
    shutil.rmtree(tmp)
    print("wrote %s, %s, %s" % (os.path.join(out, "report.md"), os.path.join(out, "loss.png"),
                                 os.path.join(out, "spectrogram.png")))


if __name__ == "__main__":
    main()
