#!/usr/bin/python3
"""The frae speech demo: train FRAE speech codecs on the synthetic corpus,
code the held-out voices, and compare with Codec2 and Opus through audio.

  1. builds the corpus if needed (scripts/make-corpus.sh: espeak-ng, flite);
  2. trains the FRAE codecs on the training voices (frae train, progress
     shown), each coding the log-mel envelope and, with --pitch, f0 and
     voicing (4 bits per frame, or entropy-coded with a prior):
       - GRU family at 1.6 kbit/s (12 binary latents + pitch),
       - GRU family at 3.2 kbit/s (14 latents of 2 bits + pitch),
       - dense family at 3.2 kbit/s (the same bits, 4 decoded frames fed
         back instead of the decoder's GRU state),
       - GRU family at a variable rate, four of them (issue 14): 16 binary
         latents at three lambdas and 12 at a small one, a learned prior
         (with its within-frame autoregression), trained on distortion +
         lambda x rate, the codes range-coded;
         placed at the rate their streams take;
  3. encodes and decodes every held-out utterance with each (frae encode,
     frae decode --wav: the harmonic-plus-noise vocoder);
  4. runs Codec2 (700C, 1300, 1600, 3200 bit/s) and Opus (6 kbit/s) on the same
     audio, each placed at its own rate (Codec2's bits, Opus's packets
     without the Ogg file around them), FRAE at what its streams take;
  5. measures every system the same way, on its decoded audio: the log-mel
     features of the WAV (frae features), aligned to the original's, and
     the pitch track of the WAV against the original's;
  6. prints the table (also demo/report.md) and draws demo/loss.png,
     demo/spectrogram.png and demo/rate_quality.png;
  7. denoising (issue 17): the training voices mixed with pink noise (sox)
     at 0-20 dB SNR, a GRU 1.6 kbit/s codec trained toward the clean
     features (frae train --targets), and the held-out voices at 0, 5 and
     10 dB through it and through the plain 1.6 kbit/s codec, both measured
     against the clean original, at the same bitrate;
  8. writes the listening page, demo/index.html (tools/listening_page.py):
     every held-out utterance through every system, side by side, with its
     spectrograms, the tables and the figures; and checks it in headless
     Chromium (every player and picture loads, each duration its file's),
     writing demo/index.png.

Metrics, over speech frames (reference frame energy within 50 dB of the
utterance's loudest): LSD, the RMS difference of the 80-band log-mel power
in dB; MCD, (10/ln 10) sqrt(2 sum_k (c_k - c'_k)^2) over mel cepstra c_1..c_12
of the log-mel magnitude, scaled like the real cepstrum.  Codec2 is
narrowband (8 kHz audio), so the 0-4 kHz band is reported separately (the
mel bands wholly below 3.8 kHz, clear of the resampling filter's roll-off);
the bars are set there.  Pitch: a reference tracker that is not frae's
(aubio, python3-aubio: f0 by yinfft, voiced where aubio's YIN confidence is
at least 0.8 and the frame is above -50 dB) runs on the original and on
each decoded WAV; gross pitch error (GPE) is the share of frames voiced in
both whose f0 is off by more than 20%, voicing decision error (VDE) the
share of frames whose voicing differs.

The quick mode (the default, ./run.sh) trains nothing: the shipped models
(models/) code the synthetic held-out voices and the recorded human ones
(the held-out side of scripts/make-corpus.sh --human: Fish Fillets' Dutch
cast, 20 clips a speaker), Codec2 and Opus the same audio, a table each.

Usage: tools/demo.py [--full] [--epochs N] [--out DIR] [--frae PATH]"""
import argparse
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DB = 10.0 / math.log(10.0)   # ln -> dB
FEAT_SCALE = 5.0             # feature = (ln(mel) + 5) / 5: ln(mel) = 5 f - 5

# the FRAE codecs the demo trains: (key, label, envelope options)
MODELS = (
    ("gru-1k6", "FRAE GRU 1.6 kbit/s",
     ["--family", "gru", "--quantizer", "binary", "--latent", "12"]),
    ("gru-3k2", "FRAE GRU 3.2 kbit/s",
     ["--family", "gru", "--quantizer", "uniform:4", "--latent", "14"]),
    ("dense-3k2", "FRAE dense 3.2 kbit/s",
     ["--quantizer", "uniform:4", "--latent", "14"]),
)
# variable rate (issue 14): the GRU family with 16 binary latents, a learned
# prior on h_dec(t-1) and the codes range-coded (stream version 4), trained
# on distortion + lambda x rate at three lambdas (the rate-quality curve);
# and with the fixed-rate model's 12 latents at a small lambda, which lands
# at its distortion (the bar's comparison, measured rather than
# interpolated)
VR_LATENT = 16
VR_LAMBDAS = (0.0005, 0.001, 0.002)
VR12_LAMBDA = 0.0002
MODELS += tuple(
    ("gru-vr-%g" % lam, "FRAE GRU variable, lambda %g" % lam,
     ["--family", "gru", "--quantizer", "binary", "--latent", str(VR_LATENT),
      "--rate-lambda", "%g" % lam])
    for lam in VR_LAMBDAS)
MODELS += (("gru-vr12-%g" % VR12_LAMBDA, "FRAE GRU variable, 12 codes, lambda %g" % VR12_LAMBDA,
            ["--family", "gru", "--quantizer", "binary", "--latent", "12",
             "--rate-lambda", "%g" % VR12_LAMBDA]),)
# the encoder's search (frae encode --search, analysis by synthesis): the
# fixed-rate 1.6 kbit/s model and the 12-code variable-rate one again, each
# frame's codes searched; the variable-rate one with a rate weight that
# lands it at the searched fixed-rate model's distortion.  The fair
# comparison for issue 14 pairs them: both with the network's codes, or
# both searched.
SEARCH_LAMBDA = 0.0025
SEARCH_PASSES = 2
SEARCHED = (("gru-1k6", "gru-1k6-search", "FRAE GRU 1.6 kbit/s, encoder search",
             ["--search", "%d" % SEARCH_PASSES]),
            ("gru-vr12-%g" % VR12_LAMBDA, "gru-vr12-search",
             "FRAE GRU variable, 12 codes, encoder search",
             ["--search", "%d" % SEARCH_PASSES, "--search-lambda", "%g" % SEARCH_LAMBDA]))
# discontinuous transmission (frae encode --dtx): the 12-code variable-rate
# model again, pauses below -60 dB sent as silence, with the network's
# codes and searched; a fixed-rate codec has no such mode (every frame
# costs the same), and the measures skip such frames in every system
SEARCHED += (("gru-vr12-%g" % VR12_LAMBDA, "gru-vr12-dtx", "FRAE GRU variable, 12 codes, DTX",
              ["--dtx"]),) + \
    tuple((base, key + "-dtx", label + ", DTX", enc + ["--dtx"])
          for base, key, label, enc in SEARCHED[1:])
# the recipe, the same for every model: per-band normalization (frae's
# default for audio features), shuffled 100-frame crops in batches of 16,
# Adam at lr 1e-3, full-feedback BPTT, gradients clipped to norm 1
RECIPE = ["--pitch", "--crop", "100", "--batch", "16", "--feedback", "full", "--lr", "0.001",
          "--clip-norm", "1"]


def study_encode_options(m):
    """A study row's frae encode options: its own, and the network's codes
    unless it searches (frae encode searches by default since 2026-12-04;
    the study compares the two)."""
    enc = list(m.get("enc", []))
    return enc if "--search" in enc else enc + ["--search", "0"]


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


def frame_level_db(feats):
    """Each frame's level in dB: its mel power summed."""
    return DB * np.log(np.exp(feats * FEAT_SCALE - 5.0).sum(axis=1))


def metrics(ref, test, bands):
    """LSD (dB) and MCD (dB, cepstra 1..12) over speech frames."""
    keep = speech_frames(ref)
    a = (ref[keep][:, bands] * FEAT_SCALE - 5.0)   # ln mel power
    b = (test[keep][:, bands] * FEAT_SCALE - 5.0)
    lsd = np.sqrt(np.mean((DB * (a - b)) ** 2, axis=1)).mean()
    ca, cb = cepstrum(0.5 * a), cepstrum(0.5 * b)   # ln magnitude
    mcd = (DB * np.sqrt(2.0 * np.sum((ca - cb) ** 2, axis=1))).mean()
    return lsd, mcd


def best_lag(ref, test, max_lag=25):
    """The lag (frames) of test against ref that minimises the mean squared
    difference of their overlap."""
    best, lag_at = None, 0
    for lag in range(-max_lag, max_lag + 1):
        r = ref[max(0, -lag):]
        t = test[max(0, lag):]
        n = min(len(r), len(t))
        if n < len(ref) // 2:
            continue
        d = np.mean((r[:n] - t[:n]) ** 2)
        if best is None or d < best:
            best, lag_at = d, lag
    return lag_at


def shift(ref_len, test, lag):
    """test moved by lag frames and cut to ref_len (NaN where absent)."""
    out = np.full((ref_len,) + test.shape[1:], np.nan)
    t = test[max(0, lag):]
    r_off = max(0, -lag)
    n = min(ref_len - r_off, len(t))
    out[r_off:r_off + n] = t[:n]
    return out


FEATURE_OPTS = []  # frae features options for every measure (human_study --analysis)


def features(frae, wav, npy):
    sh([frae, "features", wav, "-o", npy] + FEATURE_OPTS)
    return np.load(npy)


def vocoded_features(frae, feats, work):
    """feats [T, 80 + 2] vocoded (frae vocode) and analysed again, aligned
    to feats (NaN rows where the audio has none)."""
    npy, wav = os.path.join(work, "vocode-in.npy"), os.path.join(work, "vocoded.wav")
    np.save(npy, feats.astype(np.float32))
    sh([frae, "vocode", npy, "-o", wav])
    got = features(frae, wav, os.path.join(work, "vocoded.npy"))
    return shift(len(feats), got, best_lag(feats[:, :80], got))


def training_clip_args(ap, every, model=True):
    """The options of a tool that studies the many voices' training clips:
    --every N, --model (a shipped model, speech-vbr; model=False: none),
    --frae, --corpus and --work."""
    ap.add_argument("--every", type=int, default=every)
    if model:
        ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                        "speech-vbr.safetensors"))
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--work", default=None)


def training_clips_and_work(a, prefix, band=None):
    """A training-clip tool's clips (training_clip_args's a; every Nth, of
    one band or both) and its work directory (--work, or a new one named
    prefix); exits with one line if the corpus has none."""
    work = a.work or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(work, exist_ok=True)
    clips = voices_training_clips(a.corpus, a.every, band)
    if not clips:
        sys.exit("no training clips%s in %s" % (" of band %s" % band if band else "", a.corpus))
    return clips, work


def voices_training_clips(corpus, every=1, band=None):
    """The many-voices corpus's training clips (clips.tsv), of one band
    ("wb", "nb") or both, every Nth: for choosing rules on training
    speakers, never held-out ones."""
    with open(os.path.join(corpus, "voices", "clips.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    col = {k: i for i, k in enumerate(rows[0])}
    names = [r[col["clip"]] for r in rows[1:]
             if r[col["split"]] == "train" and band in (None, r[col["band"]])]
    return [os.path.join(corpus, "voices", "wav", "train", n + ".wav") for n in names[::every]]


def read_wav(path):
    with wave.open(path) as w:
        assert w.getframerate() == 16000 and w.getsampwidth() == 2
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return x.astype(np.float32) / 32768.0


def pitch_track(path, n_frames):
    """The reference tracker (aubio, not frae's YIN): f0 (0 when unvoiced)
    and voicing for each 10 ms frame, frame t centred where feature frame t
    is (sample 160 t + 200)."""
    import aubio
    x = read_wav(path)
    # aubio's output for hop i covers the 1024 samples ending at 160 (i+1):
    # 88 samples of leading silence centre output t + 4 on frame t's centre
    x = np.concatenate([np.zeros(88, np.float32), x, np.zeros(1024, np.float32)])
    out = {}
    for method in ("yinfft", "yin"):
        p = aubio.pitch(method, 1024, 160, 16000)
        p.set_unit("Hz")
        p.set_silence(-50)
        out[method] = np.array([(p(x[i:i + 160])[0], p.get_confidence())
                                for i in range(0, len(x) - 159, 160)])
    f0 = out["yinfft"][4:4 + n_frames, 0]
    conf = out["yin"][4:4 + n_frames, 1]
    f0 = np.concatenate([f0, np.zeros(n_frames - len(f0))])
    conf = np.concatenate([conf, np.zeros(n_frames - len(conf))])
    voiced = (f0 > 0) & (conf >= 0.8)
    return np.where(voiced, f0, 0.0), voiced


def pitch_errors(ref, test):
    """GPE and VDE (%) of test's (f0, voiced) against ref's, over the
    frames test has; also the counts they come from."""
    (f_r, v_r), (f_t, v_t), ok = ref, test[:2], test[2]
    both = ok & v_r & v_t
    gross = np.abs(f_t[both] / f_r[both] - 1.0) > 0.2
    return gross.sum(), both.sum(), (v_r[ok] != v_t[ok]).sum(), ok.sum()


def opus_packet_sizes(path):
    """The sizes of the Opus packets in an Ogg Opus file, its two header
    packets (OpusHead, OpusTags) left out: each page's lacing values add up
    to its packets, a value below 255 ending one."""
    data, at, sizes, size = open(path, "rb").read(), 0, [], 0
    while at < len(data):
        if data[at:at + 4] != b"OggS":
            sys.exit("%s: no Ogg page at byte %d" % (path, at))
        lacing = data[at + 27:at + 27 + data[at + 26]]
        at += 27 + len(lacing) + sum(lacing)
        for n in lacing:
            size += n
            if n < 255:
                sizes.append(size)
                size = 0
    return sizes[2:]


def write_wav(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())


def mix(clean, noise, snr_db):
    """clean plus noise scaled to snr_db below the clean signal's power."""
    p_clean = float(np.mean(clean.astype(np.float64) ** 2)) + 1e-12
    p_noise = float(np.mean(noise.astype(np.float64) ** 2)) + 1e-12
    return clean + noise * math.sqrt(p_clean / p_noise / 10 ** (snr_db / 10.0))


DENOISE_SNRS = (0, 5, 10)         # held-out voices, dB
DENOISE_TRAIN_SNRS = (0, 5, 10, 15, 20)


def denoising(a, frae, out, tmp, models, refs, tests):
    """Step 7: a denoising codec against the plain one on noisy voices.
    Returns (markdown table, {label: {name: wav}} of the 5 dB voices)."""
    print("== 7. denoising: noisy voices in, clean speech as the target", flush=True)
    noise_wav = os.path.join(tmp, "pink.wav")  # -R: the same noise every run
    sh(["sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", noise_wav, "synth", "900",
        "pinknoise"])
    noise = read_wav(noise_wav)
    half = len(noise) // 2  # training mixes from the first half, tests the second
    rng = np.random.default_rng(17)
    dirs = {k: os.path.join(tmp, "denoise", k) for k in ("train", "test")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    for w in sorted(glob.glob(os.path.join(a.corpus, "wav", "train", "*.wav"))):
        x = read_wav(w)
        at = int(rng.integers(0, half - len(x)))
        noisy = os.path.join(tmp, "noisy.wav")
        write_wav(noisy, mix(x, noise[at:at + len(x)],
                             float(rng.choice(DENOISE_TRAIN_SNRS))))
        sh([frae, "features", noisy, "-o",
            os.path.join(dirs["train"], os.path.basename(w)[:-4] + ".npy")])
    # held-out: every test voice at each SNR, noise from the second half
    noisy_wavs = {}
    for snr in DENOISE_SNRS:
        for w in tests:
            name = os.path.basename(w)[:-4]
            x = read_wav(w)
            at = half + int(rng.integers(0, half - len(x)))
            p = os.path.join(out, "wav", "%s-noisy%d.wav" % (name, snr))
            write_wav(p, mix(x, noise[at:at + len(x)], snr))
            noisy_wavs[snr, name] = p
            if snr == 5:  # the validation pairs
                sh([frae, "features", p, "-o", os.path.join(dirs["test"], name + ".npy")])
    key, label, opts = MODELS[0]  # the GRU 1.6 kbit/s codec, its recipe
    model = os.path.join(out, "model-gru-1k6-denoise.safetensors")
    log = os.path.join(out, "train-gru-1k6-denoise.csv")
    if os.path.exists(log):
        os.remove(log)
    cmd = [frae, "train", dirs["train"], "--targets",
           os.path.join(a.corpus, "feats", "train"), "--audio-features",
           "--val-data", dirs["test"], "--val-targets", os.path.join(a.corpus, "feats", "test"),
           *opts, *RECIPE, "--epochs", str(a.epochs), "--save", model, "--log-csv", log]
    print("training %s, denoising (%d epochs)" % (label, a.epochs), flush=True)
    if subprocess.run(cmd).returncode != 0:
        sys.exit("training the denoising codec failed")
    full, narrow = np.arange(80), np.where(mel_upper_edges() <= 3800)[0]
    systems = {"noisy input, uncoded": None, label + " (trained on clean)": models[key]["path"],
               label + ", denoising (--targets)": model}
    res, page = {}, {}
    for snr in DENOISE_SNRS:
        for sys_label, path in systems.items():
            vals = {"full": [], "nb": []}
            for w in tests:
                name = os.path.basename(w)[:-4]
                src = noisy_wavs[snr, name]
                if path is None:
                    wav = src
                else:
                    fbs = os.path.join(tmp, "dn.fbs")
                    sh([frae, "encode", path, src, "-o", fbs])
                    wav = os.path.join(out, "wav", "%s-noisy%d-%s.wav" % (
                        name, snr, "denoise" if path == model else "plain"))
                    sh([frae, "decode", path, fbs, "-o", os.path.join(tmp, "dn.npy"),
                        "--wav", wav])
                if snr == 5:
                    page.setdefault("%s, 5 dB noise" % sys_label, {})[name] = wav
                got = features(frae, wav, os.path.join(tmp, "got.npy"))
                test = shift(len(refs[name]), got, best_lag(refs[name], got))
                ok = ~np.isnan(test).any(axis=1)
                for tag, bands in (("full", full), ("nb", narrow)):
                    vals[tag].append(metrics(refs[name][ok], test[ok], bands))
            res[snr, sys_label] = {t: (float(np.mean([v[0] for v in vals[t]])),
                                       float(np.mean([v[1] for v in vals[t]])))
                                   for t in vals}
    lines = ["| SNR | system (noisy voice in) | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz "
             "| MCD 0-8 kHz |", "| --- | --- | --- | --- | --- | --- |"]
    for snr in DENOISE_SNRS:
        for sys_label in systems:
            r = res[snr, sys_label]
            lines.append("| %d dB | %s | %.2f | %.2f | %.2f | %.2f |" % (
                snr, sys_label, r["nb"][0], r["nb"][1], r["full"][0], r["full"][1]))
    return "\n".join(lines), page


def spectrogram_strips(out, refs, panels, progress=None):
    """One picture per held-out utterance: the log-mel of the original and
    of a few systems' decoded audio, stacked (out/spec/<name>.png)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(os.path.join(out, "spec"), exist_ok=True)
    paths = {}
    for name, ref in refs.items():
        imgs = [(ref, "original")] + [(feats[name], label) for label, feats in panels]
        fig, ax = plt.subplots(1, len(imgs), figsize=(3.2 * len(imgs), 2.2), sharey=True)
        lim = (np.nanmin(ref), np.nanmax(ref))
        for k, (img, title) in enumerate(imgs):
            ax[k].imshow(img.T, origin="lower", aspect="auto", vmin=lim[0], vmax=lim[1])
            ax[k].set_title(title, fontsize=8)
            ax[k].tick_params(labelsize=6)
        ax[0].set_ylabel("mel band", fontsize=7)
        fig.tight_layout()
        paths[name] = os.path.join(out, "spec", name + ".png")
        fig.savefig(paths[name], dpi=80)
        plt.close(fig)
        if progress:
            progress.tick()
    return paths


def codec2_opus(tests, out, tmp, secs, progress=None):
    """Codec2 (700C, 1300, 1600, 3200) and Opus 6 kbit/s on the held-out
    voices: {label: {"kbps", "actual", "wavs"}}."""
    systems = {}
    for mode in ("700C", "1300", "1600", "3200"):
        wavs, c2_bytes = {}, 0
        for w in tests:
            name = os.path.basename(w)[:-4]
            raw8 = os.path.join(tmp, "in8.raw")
            sh(["sox", "-R", w, "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer",
                "-t", "raw", raw8])
            c2 = os.path.join(tmp, "x.c2")
            sh(["c2enc", mode, raw8, c2])
            c2_bytes += os.path.getsize(c2)
            sh(["c2dec", mode, c2, os.path.join(tmp, "out8.raw")])
            wav = os.path.join(out, "wav", "%s-codec2-%s.wav" % (name, mode))
            sh(["sox", "-R", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t",
                "raw", os.path.join(tmp, "out8.raw"), "-r", "16000", wav])
            wavs[name] = wav
            if progress:
                progress.tick()
        # placed at its bits; its files take more (a 7-byte header, and
        # 700C's 28 and 1300's 52 bits a frame padded to whole bytes)
        systems["Codec2 %s" % mode] = {"kbps": {"700C": 0.7, "1300": 1.3, "1600": 1.6, "3200": 3.2}[mode],
                                       "actual": c2_bytes * 8 / secs / 1000, "wavs": wavs}
    wavs, opus_bytes, ogg_bytes = {}, 0, 0
    for w in tests:
        name = os.path.basename(w)[:-4]
        ogg = os.path.join(tmp, "x.opus")
        sh(["opusenc", "--quiet", "--bitrate", "6", w, ogg])
        opus_bytes += sum(opus_packet_sizes(ogg))
        ogg_bytes += os.path.getsize(ogg)
        wav = os.path.join(out, "wav", "%s-opus.wav" % name)
        sh(["opusdec", "--quiet", "--rate", "16000", ogg, wav])
        wavs[name] = wav
        if progress:
            progress.tick()
    # placed at its packets' bytes: the Ogg file around them (headers, 512
    # bytes of tag padding, page headers) is a container, not the codec
    systems["Opus 6 kbit/s"] = {"kbps": opus_bytes * 8 / secs / 1000,
                                "actual": ogg_bytes * 8 / secs / 1000, "wavs": wavs}

    return systems


def measure(frae, systems, refs, out, tmp, progress=None):
    """Every system through its audio: the log-mel of its WAV against the
    original's, aligned, and the reference tracker's pitch.  Returns the
    rows, the two band sets and the originals' pitch tracks."""
    full = np.arange(80)
    # narrowband: bands wholly below 3.8 kHz, clear of the roll-off of an
    # 8 kHz-sampled codec's resampling filter
    narrow = np.where(mel_upper_edges() <= 3800)[0]
    ref_pitch = {name: pitch_track(os.path.join(out, "wav", name + "-original.wav"), len(r))
                 for name, r in refs.items()}
    rows = []
    for label, s in systems.items():
        r = {"label": label, "kbps": s["kbps"], "lags": [], "feats": {},
             "actual": s.get("actual", s["kbps"]), "vr": s.get("vr", False),
             "search": s.get("search", False), "dtx": s.get("dtx", False)}
        vals = {"full": [], "nb": []}
        quiet = []  # the frames the measures skip: decoded level - original's
        counts = np.zeros(4)
        for name, ref in refs.items():
            got = features(frae, s["wavs"][name], os.path.join(tmp, "got.npy"))
            lag = best_lag(ref, got)
            r["lags"].append(lag)
            test = shift(len(ref), got, lag)
            r["feats"][name] = test
            ok = ~np.isnan(test).any(axis=1)
            for tag, bands in (("full", full), ("nb", narrow)):
                vals[tag].append(metrics(ref[ok], test[ok], bands))
            skip = ok & ~speech_frames(ref)
            quiet.append(frame_level_db(test[skip]) - frame_level_db(ref[skip]))
            f0, v = pitch_track(s["wavs"][name], len(got))
            f0, v = shift(len(ref), f0, lag), shift(len(ref), v.astype(float), lag)
            okp = ~np.isnan(v)
            counts += pitch_errors(ref_pitch[name], (np.nan_to_num(f0), v == 1, okp))
            if progress:
                progress.tick()
        for tag in ("full", "nb"):
            r["lsd_" + tag] = float(np.mean([v[0] for v in vals[tag]]))
            r["mcd_" + tag] = float(np.mean([v[1] for v in vals[tag]]))
        r["quiet_db"] = float(np.mean(np.concatenate(quiet)))
        r["gpe"] = 100.0 * counts[0] / max(counts[1], 1)
        r["vde"] = 100.0 * counts[2] / max(counts[3], 1)
        rows.append(r)
    return rows, full, narrow, ref_pitch


class Progress:
    """One step's progress: how far, and how long is left at the pace so far
    (on a terminal one line redrawn; otherwise a line each tenth)."""

    def __init__(self, what, total):
        self.what, self.total, self.done = what, max(total, 1), 0
        self.t0 = time.time()
        self.tty = sys.stdout.isatty()
        self.shown = -1

    def tick(self, n=1):
        self.done += n
        el = time.time() - self.t0
        left = el / self.done * (self.total - self.done)
        line = "    %s: %d/%d, %.0f s so far, about %.0f s left" % (
            self.what, self.done, self.total, el, left)
        if self.tty:
            sys.stdout.write("\r" + line + ("\n" if self.done >= self.total else ""))
            sys.stdout.flush()
        elif self.done * 10 // self.total != self.shown or self.done >= self.total:
            self.shown = self.done * 10 // self.total
            print(line, flush=True)


# the quick job's codecs: the shipped models (models/, make models): (name,
# label); the full study's figures for the same models are the README's
SHIPPED = (("speech", "FRAE speech, 1.6 kbit/s (shipped)"),
           ("speech-vbr", "FRAE speech-vbr, variable rate (shipped)"),
           ("speech-3k2", "FRAE speech-3k2, 3.2 kbit/s (shipped)"),
           ("speech-3k2-vbr", "FRAE speech-3k2-vbr, variable rate (shipped)"))
# the fixed-rate ones' own rates (kbit/s)
SHIPPED_FIXED = {"speech": 1.6, "speech-3k2": 3.2}


def shipped_and_others(frae, a, tests, out, tmp, what):
    """The held-out clips tests through the shipped models (frae encode,
    frae decode --wav), then Codec2 and Opus on the same audio: (systems,
    refs, secs, model paths)."""
    env = dict(os.environ, FRAE_MODELS=a.models)
    models = {}
    for name, label in SHIPPED:
        path = os.path.join(a.models, name + ".safetensors")
        if not os.path.exists(path):
            sys.exit("%s is missing: 'make models' builds it" % path)
        models[name] = {"label": label, "path": path, "bytes": 0, "wavs": {}}
    refs, secs = {}, 0.0
    prog = Progress(what + ", shipped models", len(tests))
    for w in tests:
        name = os.path.basename(w)[:-4]
        npy = os.path.join(tmp, name + "-ref.npy")
        sh([frae, "features", w, "-o", npy])
        refs[name] = np.load(npy)
        secs += float(sh(["soxi", "-D", w]))
        shutil.copy(w, os.path.join(out, "wav", name + "-original.wav"))
        for key, m in models.items():
            fbs = os.path.join(tmp, "%s-%s.fbs" % (name, key))
            sh([frae, "encode", m["path"], w, "-o", fbs])
            m["bytes"] += os.path.getsize(fbs)
            wav = os.path.join(out, "wav", "%s-frae-%s.wav" % (name, key))
            sh([frae, "decode", fbs, "--wav", wav], env=env)
            m["wavs"][name] = wav
        prog.tick()
    systems = {}
    for key, m in models.items():
        kbps = m["bytes"] * 8 / secs / 1000
        vr = key not in SHIPPED_FIXED
        systems[m["label"]] = {"kbps": kbps if vr else SHIPPED_FIXED[key], "actual": kbps,
                               "wavs": m["wavs"], "vr": vr}
    systems.update(codec2_opus(tests, out, tmp, secs,
                               Progress(what + ", Codec2 and Opus", 5 * len(tests))))
    return systems, refs, secs, [m["path"] for m in models.values()]


def quick_table(rows):
    lines = ["| system | kbit/s | stream kbit/s | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz "
             "| MCD 0-8 kHz | GPE | VDE |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f%% | %.1f%% |" % (
            r["label"], "" if r["vr"] else "%.2f" % r["kbps"], r["actual"], r["lsd_nb"],
            r["mcd_nb"], r["lsd_full"], r["mcd_full"], r["gpe"], r["vde"]))
    return "\n".join(lines)


# the quick job's recorded human voices (issue 38): the held-out side of
# scripts/make-corpus.sh --human, 20 clips of each held-out speaker (the
# Dutch cast: nl-m, nl-v, nl-o; the 60 clips of
# docs/2026-12-02-human-speech.md), with the script's least training side
# (one clip a speaker, unused), in a folder of its own so that a full human
# corpus (CORPUS/human) is never made again by the quick job
HUMAN_QUICK = ["--per-speaker", "1", "--test-per-speaker", "20"]
# the shipped models' training (models/build.sh): the human corpus with
# these caps (its training side, the Czech cast, 150 clips a speaker) and
# the many-voices one with its own (and a quarter of it again under drawn
# recording conditions, scripts/augment-corpus.py) beside the synthetic
# voices, this many epochs
HUMAN_SHIPPED = ["--per-speaker", "150", "--test-per-speaker", "20"]
VOICES_SHIPPED = ["--per-speaker", "150", "--test-per-speaker", "12"]
SHIPPED_EPOCHS = 80
# ... and the 1.6 kbit/s codec's options over its recipe (models/build.sh's)
SHIPPED_SPEECH = ["--erasure", "0.1", "--level-loss", "0.1"]
HUMAN_TITLE = "held-out human voices (recorded, never heard in training)"
SYNTH_TITLE = "held-out synthetic voices (never heard in training)"


def quick(a):
    """The main job (./run.sh): the shipped codecs, Codec2 and Opus on the
    held-out voices, synthetic and recorded human ones, measured through
    audio; a table each, the WAVs, the pictures and the listening page.  No
    training."""
    frae, out = a.frae, a.out
    started = time.time()
    steps = 5

    def step(k, text):
        print("[%d/%d] %s (%.0f s in)" % (k, steps, text, time.time() - started), flush=True)
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)
    step(1, "the speech corpora: synthetic voices (espeak-ng, flite), about 30 s when new; "
         "the held-out human voices (Fish Fillets' Dutch dialogs), about 20 s when new")
    sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), a.corpus, frae])
    print("    " + open(os.path.join(a.corpus, ".complete")).read().strip(), flush=True)
    human_dir = os.path.join(a.corpus, "quick")
    sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--human"] + HUMAN_QUICK +
       [human_dir, frae])
    human_dir = os.path.join(human_dir, "human")
    print("    " + open(os.path.join(human_dir, ".complete")).read().strip(), flush=True)
    sets = [("synthetic", SYNTH_TITLE,
             sorted(glob.glob(os.path.join(a.corpus, "wav", "test", "*.wav")))),
            ("human", HUMAN_TITLE,
             sorted(glob.glob(os.path.join(human_dir, "wav", "test", "*.wav"))))]
    tests = sets[0][2]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import listening_page
    texts = listening_page.sentence_texts([os.path.basename(w)[:-4] for w in tests],
                                          a.corpus)

    tmp = tempfile.mkdtemp(prefix="frae-demo-")
    step(2, "coding the %d synthetic and %d human held-out clips with the shipped models "
         "(frae encode, frae decode --wav: the model found by the stream's hash), then "
         "Codec2 (700C, 1300, 1600, 3200) and Opus 6 kbit/s on the same audio"
         % (len(sets[0][2]), len(sets[1][2])))
    coded = {}
    for key, _, clips in sets:
        coded[key] = shipped_and_others(frae, a, clips, out, tmp, key)
    systems, refs, secs, paths = coded["synthetic"]

    if a.train:  # the shipped codec trained again: the same bytes
        epochs = a.epochs or SHIPPED_EPOCHS
        print("    --train: training the 1.6 kbit/s codec as 'make models' does (frae train "
              "--recipe speech --erasure 0.1 --level-loss 0.1, %d epochs on the synthetic, the "
              "human, the "
              "many-voices training voices and those under drawn conditions; the corpora "
              "made first (the voices' packages installed: WITH_VOICES=1 "
              "scripts/install-deps.sh, about 420 MB); about 40 minutes on two idle cores)"
              % epochs, flush=True)
        sh(["env", "WITH_VOICES=1", "sh", os.path.join(ROOT, "scripts", "install-deps.sh")])
        sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--human"] + HUMAN_SHIPPED +
           [a.corpus, frae])
        sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--voices"] +
           VOICES_SHIPPED + [a.corpus, frae])
        sh(["/usr/bin/python3", os.path.join(ROOT, "scripts", "augment-corpus.py"), a.corpus,
            frae])
        mine = os.path.join(out, "model-speech.safetensors")
        cmd = [frae, "train", os.path.join(a.corpus, "feats", "train"),
               os.path.join(a.corpus, "human", "feats", "train"),
               os.path.join(a.corpus, "voices", "feats", "train"),
               os.path.join(a.corpus, "voices-aug", "feats", "train"), "--audio-features",
               "--val-data", os.path.join(a.corpus, "feats", "test"), "--recipe", "speech",
               *SHIPPED_SPEECH, "--epochs", str(epochs), "--save", mine,
               "--log-csv", os.path.join(out, "train-speech.csv")]
        if subprocess.run(cmd).returncode != 0:
            sys.exit("training failed")
        sh([frae, "convert", mine, "-o", os.path.join(out, "model-speech-bf16.safetensors"),
            "--weights", "bf16"])
        same = open(os.path.join(out, "model-speech-bf16.safetensors"), "rb").read() == \
            open(paths[0], "rb").read()
        print("    the codec trained here (%s, bf16) %s" % (
            os.path.join(out, "model-speech-bf16.safetensors"),
            "is the shipped models/speech.safetensors, byte for byte" if same else
            "differs from the shipped one (another corpus or epochs?)"), flush=True)

    step(3, "every system through its decoded audio: log-mel distances and pitch")
    measured, tables = {}, []
    for key, title, clips in sets:
        s_sys, s_refs = coded[key][0], coded[key][1]
        measured[key] = measure(frae, s_sys, s_refs, out, tmp,
                                Progress(key + ", decoded WAVs", len(s_sys) * len(clips)))[0]
        tables.append((title, quick_table(measured[key])))
    rows = measured["synthetic"]
    rel = ", ".join(os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p
                    for p in paths)
    notes = ("%d synthetic held-out utterances (%.0f s, voices the models never heard) and "
             "%d recorded human clips (%.0f s; Fish Fillets' Dutch cast, nl-m, nl-v, nl-o, "
             "scripts/make-corpus.sh --human), every system measured on its decoded WAV: LSD "
             "and MCD of the log-mel over speech frames (dB, lower is better; 0-4 kHz is where "
             "narrowband Codec2 is compared), GPE and VDE the pitch and voicing errors against "
             "a reference tracker (aubio). kbit/s: a fixed-rate codec's own rate; stream "
             "kbit/s: what the files take, headers included. The shipped models: %s "
             "(models/README.md), trained on the synthetic training voices, the recorded "
             "human training speakers (Fish Fillets' Czech cast; "
             "docs/2026-12-02-human-speech.md) and the many voices' 44 training speaker sets, "
             "a quarter of them again under drawn recording conditions "
             "(docs/2026-12-04-voices.md). "
             "./run.sh --full trains and compares every model of the study." % (
                 len(sets[0][2]), secs, len(sets[1][2]), coded["human"][2], rel))
    report = ["# frae speech demo: the shipped codecs", ""]
    for title, md in tables:
        report += ["Through audio, %s:" % title, "", md, ""]
    report = "\n".join(report + [notes])
    print()
    print(report)
    print()
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report + "\n")

    step(4, "pictures: rate and quality, spectrograms")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.figure(figsize=(7.5, 4.8))
    for key, marks in (("synthetic", ("o", "s")), ("human", ("^", "D"))):
        for r in measured[key]:
            is_frae = r["label"].startswith("FRAE")
            at = r["actual"] if is_frae else r["kbps"]
            plt.plot(at, r["lsd_nb"], marks[0] if is_frae else marks[1],
                     color=("tab:blue" if is_frae else "tab:gray") if key == "synthetic"
                     else ("tab:orange" if is_frae else "tab:brown"), markersize=8)
            # the two shipped models land close: the variable-rate one's
            # label below its point
            plt.annotate(r["label"].replace(" (shipped)", ""), (at, r["lsd_nb"]),
                         textcoords="offset points", xytext=(6, -11 if r["vr"] else 4),
                         fontsize=7)
    plt.plot([], [], "o", color="tab:blue", label="FRAE, synthetic voices")
    plt.plot([], [], "s", color="tab:gray", label="Codec2, Opus, synthetic voices")
    plt.plot([], [], "^", color="tab:orange", label="FRAE, human voices")
    plt.plot([], [], "D", color="tab:brown", label="Codec2, Opus, human voices")
    plt.legend(fontsize=7, loc="upper right")
    plt.xlabel("kbit/s: FRAE's streams, every header byte counted; Codec2's bits, "
               "Opus's packets")
    plt.ylabel("LSD 0-4 kHz through audio (dB)")
    plt.title("rate and quality on the held-out voices (lower is better)")
    plt.grid(alpha=0.3)
    plt.xlim(0, max(r["actual"] if r["label"].startswith("FRAE") else r["kbps"]
                    for r in rows) * 1.3)
    plt.tight_layout()
    plt.savefig(os.path.join(out, "rate_quality.png"), dpi=110)
    plt.close("all")
    # the synthetic utterances' spectrograms (the human clips' would add
    # about 15 s here; their page rows have the players only)
    first = SHIPPED[0][1]
    by = {r["label"]: r for r in rows}
    specs = spectrogram_strips(out, {n: r[:, :80] for n, r in refs.items()}, [
        (first.replace(" (shipped)", ""), by[first]["feats"]),
        ("Codec2 1300", by["Codec2 1300"]["feats"]), ("Opus 6 kbit/s", by["Opus 6 kbit/s"]["feats"])],
        Progress("spectrogram pictures", len(refs)))

    step(5, "the listening page")
    page_systems = [("original", {n: os.path.join(out, "wav", n + "-original.wav")
                                  for key in coded for n in coded[key][1]})]
    # each sentence's row: the codecs people compare first, the rest behind
    # "more systems"
    order = [label for _, label in SHIPPED] + [
        "Codec2 1300", "Codec2 3200", "Opus 6 kbit/s"]
    order += [label for label in systems if label not in order]
    page_systems += [(label.replace(" (shipped)", ""),
                      dict(kv for key in coded for kv in coded[key][0][label]["wavs"].items()))
                     for label in order]
    utts = [(n, specs.get(n)) for key, _, _ in sets for n in sorted(coded[key][1])]
    listening_page.write_page(
        out, utts, page_systems,
        tables=[("Through audio, " + title, md) for title, md in tables],
        figures=[("rate and quality", os.path.join(out, "rate_quality.png"))],
        notes=[notes, "Spectrograms per synthetic sentence: the log-mel of the original, "
               "then of the decoded audio of FRAE speech 1.6 kbit/s, Codec2 1300 and Opus 6 kbit/s."],
        texts=texts, primary=7,
        intro="Each sentence as spoken (synthetic voices the codecs never heard in training, "
              "then recorded human voices, Fish Fillets' Dutch cast, also never heard), "
              "then through each codec: frae's three shipped speech codecs at 1.6 kbit/s "
              "fixed, about 1.6 kbit/s variable and 3.2 kbit/s, Codec2 and Opus.  The figures are below the "
              "sentences.",
        title="frae speech codecs: listen")
    msg = ""
    if listening_page.chromium() and not a.no_check:
        print("    checking it in headless Chromium (every player and picture loads; about "
              "20 s)", flush=True)
        problems, rep = listening_page.check(out)
        msg = (" (checked in headless Chromium: %d players and %d pictures load)"
               % (len(rep["audio"]), len(rep["images"])) if not problems
               else " (headless Chromium found problems: %s)" % "; ".join(problems[:3]))
    shutil.rmtree(tmp)
    print("wrote %s: the WAVs (wav/), report.md, rate_quality.png, spec/ and index.html%s; "
          "open %s in a browser to listen.  %.0f s in all." % (
              out, msg, os.path.join(out, "index.html"), time.time() - started))


def human_held_out(a, frae, out, tmp, models):
    """The full study's second table (issue 38): the models it trained (on
    the synthetic voices alone), Codec2 and Opus on the recorded human
    held-out voices, the quick job's 60 clips, through decoded audio.
    Returns (clips, seconds, the table)."""
    human_dir = os.path.join(a.corpus, "quick")
    sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--human"] + HUMAN_QUICK +
       [human_dir, frae])
    tests = sorted(glob.glob(os.path.join(human_dir, "human", "wav", "test", "*.wav")))
    refs, secs = {}, 0.0
    for m in models.values():
        m["hbytes"], m["hwavs"] = 0, {}
    prog = Progress("human held-out clips, the study's models", len(tests))
    for w in tests:
        name = os.path.basename(w)[:-4]
        npy = os.path.join(tmp, name + "-ref.npy")
        sh([frae, "features", w, "-o", npy])
        refs[name] = np.load(npy)
        secs += float(sh(["soxi", "-D", w]))
        shutil.copy(w, os.path.join(out, "wav", name + "-original.wav"))
        for key, m in models.items():
            fbs = os.path.join(tmp, "%s-%s.fbs" % (name, key))
            sh([frae, "encode", m["path"], w, "-o", fbs, *study_encode_options(m)])
            m["hbytes"] += os.path.getsize(fbs)
            wav = os.path.join(out, "wav", "%s-frae-%s.wav" % (name, key))
            sh([frae, "decode", m["path"], fbs, "--wav", wav])
            m["hwavs"][name] = wav
        prog.tick()
    systems = {}
    for key, m in models.items():
        kbps = m["hbytes"] * 8 / secs / 1000
        systems[m["label"]] = {"kbps": kbps if m["vr"] else m["kbps"], "actual": kbps,
                               "wavs": m["hwavs"], "vr": m["vr"]}
    systems.update(codec2_opus(tests, out, tmp, secs,
                               Progress("human held-out clips, Codec2 and Opus",
                                        5 * len(tests))))
    rows = measure(frae, systems, refs, out, tmp,
                   Progress("human held-out clips, decoded WAVs",
                            len(systems) * len(tests)))[0]
    return len(tests), secs, quick_table(rows)


def main():
    ap = argparse.ArgumentParser(
        description="The main job: the shipped codecs (default), or --full: the study.")
    ap.add_argument("--full", action="store_true",
                    help="the full study: train every model (about 20 minutes on 2 cores, "
                    "the human held-out clips included)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="--full: epochs per model (50); --train: the codec's (%d, as "
                    "make models)" % SHIPPED_EPOCHS)
    ap.add_argument("--train", action="store_true",
                    help="the main job also trains the 1.6 kbit/s codec (about 40 minutes "
                    "more on 2 idle cores) and compares it with the shipped one")
    ap.add_argument("--out", default=os.path.join(ROOT, "demo"))
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models"),
                    help="the shipped models' directory (the quick job)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the listening page's headless Chromium check")
    a = ap.parse_args()
    a.models = os.path.abspath(a.models)
    if not a.full:
        return quick(a)
    return full(a)


def full(a):
    """The full study (./run.sh --full)."""
    if a.epochs is None:
        a.epochs = 50
    frae, out = a.frae, a.out
    started = time.time()
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)

    print("== 1. corpus (espeak-ng, flite)", flush=True)
    sh(["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), a.corpus, frae])
    print(open(os.path.join(a.corpus, ".complete")).read().strip(), flush=True)

    models = {}
    for key, label, opts in MODELS:
        print("== 2. training %s (%d epochs)" % (label, a.epochs), flush=True)
        model = os.path.join(out, "model-%s.safetensors" % key)
        log = os.path.join(out, "train-%s.csv" % key)
        if os.path.exists(log):
            os.remove(log)
        cmd = [frae, "train", os.path.join(a.corpus, "feats", "train"), "--audio-features",
               "--val-data", os.path.join(a.corpus, "feats", "test"), *opts, *RECIPE,
               "--epochs", str(a.epochs), "--save", model, "--log-csv", log]
        if subprocess.run(cmd).returncode != 0:
            sys.exit("training failed")
        info = sh([frae, "info", model])
        line = [l for l in info.splitlines() if "bits/frame" in l][0]
        bits = float(line.split(",")[1].split()[0])
        # the deployment form: the same model with bf16 weights
        model16 = os.path.join(out, "model-%s-bf16.safetensors" % key)
        sh([frae, "convert", model, "-o", model16, "--weights", "bf16"])
        models[key] = {"label": label, "path": model, "bf16": model16, "log": log,
                       "bits": bits, "kbps": bits * 100 / 1000, "bytes": 0,
                       "vr": "--rate-lambda" in opts,
                       "split": re.search(r"\((envelope[^)]*)\)", line).group(1),
                       "wavs": {}, "feats": {}, "feats16": {}}
    for base, key, label, enc in SEARCHED:  # the same model: searched codes, DTX
        models[key] = dict(models[base], label=label, enc=enc, base=base,
                           split=models[base]["split"] +
                           (", encoder search" if "--search" in enc else "") +
                           (", DTX" if "--dtx" in enc else ""),
                           wavs={}, feats={}, feats16={})
    for old in glob.glob(os.path.join(out, "model-dense.*")) + \
            glob.glob(os.path.join(out, "model-gru.*")) + \
            glob.glob(os.path.join(out, "model-*bf16-bf16*")) + \
            [os.path.join(out, f) for f in ("train-dense.csv", "train-gru.csv",
                                             "model.safetensors", "train.csv")]:
        if os.path.exists(old):  # an older demo's models
            os.remove(old)

    print("== 3. coding the held-out voices (frae encode, decode --wav)", flush=True)
    tmp = tempfile.mkdtemp(prefix="frae-demo-")
    tests = sorted(glob.glob(os.path.join(a.corpus, "wav", "test", "*.wav")))
    refs, tracked, secs = {}, {}, 0.0
    for w in tests:
        name = os.path.basename(w)[:-4]
        npy = os.path.join(tmp, name + "-ref.npy")
        sh([frae, "features", "--pitch", w, "-o", npy])
        tracked[name] = np.load(npy)[:, 80:]   # frae's own f0 and voicing
        refs[name] = np.load(npy)[:, :80]
        secs += float(sh(["soxi", "-D", w]))
        shutil.copy(w, os.path.join(out, "wav", name + "-original.wav"))
        for key, m in models.items():
            fbs = os.path.join(tmp, "%s-%s.fbs" % (name, key))
            sh([frae, "encode", m["path"], w, "-o", fbs, *study_encode_options(m)])
            m["bytes"] += os.path.getsize(fbs)
            npy = os.path.join(tmp, "%s-%s.npy" % (name, key))
            wav = os.path.join(out, "wav", "%s-frae-%s.wav" % (name, key))
            sh([frae, "decode", m["path"], fbs, "-o", npy, "--wav", wav])
            m["wavs"][name] = wav
            m["feats"][name] = np.load(npy)[:, :80]
            fbs16 = os.path.join(tmp, "%s-%s-bf16.fbs" % (name, key))
            sh([frae, "encode", m["bf16"], w, "-o", fbs16, *study_encode_options(m)])
            npy16 = os.path.join(tmp, "%s-%s-bf16.npy" % (name, key))
            sh([frae, "decode", m["bf16"], fbs16, "-o", npy16])
            m["feats16"][name] = np.load(npy16)[:, :80]
    for old in glob.glob(os.path.join(out, "wav", "*-frae-dense.wav")) + \
            glob.glob(os.path.join(out, "wav", "*-frae-gru.wav")):
        os.remove(old)
    print("decoded WAVs (harmonic-plus-noise vocoder) in %s" % os.path.join(out, "wav"),
          flush=True)

    print("== 4. Codec2 and Opus on the same audio", flush=True)
    systems = {}
    for key, m in models.items():
        # what the streams take, every header byte counted; a variable-rate
        # model is placed at that rate, a fixed-rate one at its nominal
        m["actual_kbps"] = m["bytes"] * 8 / secs / 1000
        if m["vr"]:
            m["kbps"] = m["actual_kbps"]
        systems[m["label"]] = {"kbps": m["kbps"], "wavs": m["wavs"], "frae": key,
                               "actual": m["actual_kbps"], "vr": m["vr"],
                               "search": "--search" in m.get("enc", []),
                               "dtx": "--dtx" in m.get("enc", [])}
    systems.update(codec2_opus(tests, out, tmp, secs))

    print("== 5. every system through its audio: features and pitch", flush=True)
    rows, full, narrow, ref_pitch = measure(frae, systems, refs, out, tmp)
    by = {r["label"]: r for r in rows}
    # frae's tracker (what the codec sends) against the reference tracker,
    # on the originals
    counts = np.zeros(4)
    for name, (f0, v) in ref_pitch.items():
        t = tracked[name]
        counts += pitch_errors((f0, v), (t[:, 0], t[:, 1] == 1, np.ones(len(t), bool)))
    tracker = ("frae's YIN tracker on the originals, against the reference tracker: f0 off by "
               "more than 20%% in %.1f%% of the frames both call voiced, voicing differs in "
               "%.1f%% of the frames." % (100.0 * counts[0] / max(counts[1], 1),
                                          100.0 * counts[2] / max(counts[3], 1)))
    # frae's own decoded features, before the vocoder
    feat_rows = []
    for key, m in models.items():
        fr = {"label": m["label"]}
        for tag, bands in (("full", full), ("nb", narrow)):
            v = [metrics(refs[n], m["feats"][n], bands) for n in refs]
            v16 = [metrics(refs[n], m["feats16"][n], bands) for n in refs]
            fr["lsd_" + tag] = float(np.mean([x[0] for x in v]))
            fr["mcd_" + tag] = float(np.mean([x[1] for x in v]))
            fr["lsd16_" + tag] = float(np.mean([x[0] for x in v16]))
        feat_rows.append(fr)

    lines = ["| system | kbit/s | stream kbit/s | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz "
             "| MCD 0-8 kHz | GPE | VDE |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f%% | %.1f%% |" % (
            r["label"], r["kbps"], r["actual"], r["lsd_nb"], r["mcd_nb"], r["lsd_full"],
            r["mcd_full"], r["gpe"], r["vde"]))
    table = "\n".join(lines)
    flines = ["| FRAE decoded features (no vocoder) | LSD 0-4 kHz | MCD 0-4 kHz | LSD 0-8 kHz "
              "| MCD 0-8 kHz | LSD 0-8 kHz, bf16 weights |",
              "| --- | --- | --- | --- | --- | --- |"]
    for fr in feat_rows:
        flines.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            fr["label"], fr["lsd_nb"], fr["mcd_nb"], fr["lsd_full"], fr["mcd_full"],
            fr["lsd16_full"]))
    ftable = "\n".join(flines)

    def bar(name, ok, text):
        return "- %s %s: %s" % ("PASS" if ok else "FAIL", name, text)
    g16, g32 = by[models["gru-1k6"]["label"]], by[models["gru-3k2"]["label"]]
    c13, c32 = by["Codec2 1300"], by["Codec2 3200"]
    bars = [
        bar("1.6 kbit/s vs Codec2 1300 (0-4 kHz, through audio)",
            g16["lsd_nb"] < c13["lsd_nb"] and g16["mcd_nb"] < c13["mcd_nb"],
            "LSD %.2f vs %.2f dB, MCD %.2f vs %.2f dB" % (
                g16["lsd_nb"], c13["lsd_nb"], g16["mcd_nb"], c13["mcd_nb"])),
        bar("3.2 kbit/s vs Codec2 3200 (0-4 kHz, through audio)",
            g32["lsd_nb"] < c32["lsd_nb"] and g32["mcd_nb"] < c32["mcd_nb"],
            "LSD %.2f vs %.2f dB, MCD %.2f vs %.2f dB" % (
                g32["lsd_nb"], c32["lsd_nb"], g32["mcd_nb"], c32["mcd_nb"])),
        bar("pitch: GPE at most twice Codec2's",
            max(g16["gpe"], g32["gpe"]) <= 2 * min(c13["gpe"], c32["gpe"]) + 1e-9,
            "frae %.1f%% (1.6) and %.1f%% (3.2); Codec2 1300 %.1f%%, 3200 %.1f%%" % (
                g16["gpe"], g32["gpe"], c13["gpe"], c32["gpe"])),
    ]
    # issue 14: for each fair pairing (both with the network's codes, both
    # searched) the variable-rate system closest in distortion to the
    # fixed-rate 1.6 kbit/s one that is no worse (LSD and MCD, both bands,
    # within 0.05 dB), and the rate its streams take
    name14 = ("variable rate at the 1.6 kbit/s model's distortion: at most 1.2 kbit/s, "
              "headers included")
    for searched in (False, True):
        fixed = by[models["gru-1k6-search" if searched else "gru-1k6"]["label"]]
        vr_rows = sorted((r for r in rows if r["vr"] and r["search"] == searched),
                         key=lambda r: r["kbps"])
        level = [r for r in vr_rows
                 if all(r[k] <= fixed[k] + 0.05 for k in ("lsd_nb", "mcd_nb", "lsd_full",
                                                          "mcd_full"))]
        how = "both searched" if searched else "both with the network's codes"
        if level:
            v = level[0]
            bars.append(bar(name14 + " (%s)" % how, v["actual"] <= 1.2,
                            "%s takes %.3f kbit/s (the fixed-rate model's streams %.3f) at "
                            "LSD %.2f / MCD %.2f dB (0-4 kHz; fixed-rate: %.2f / %.2f)" % (
                                v["label"], v["actual"], fixed["actual"], v["lsd_nb"],
                                v["mcd_nb"], fixed["lsd_nb"], fixed["mcd_nb"])))
        else:
            bars.append(bar(name14 + " (%s)" % how, False,
                            "no variable-rate system is within 0.05 dB of %s's distortion "
                            "(%s)" % (fixed["label"], "; ".join(
                                "%s: %.3f kbit/s, LSD %.2f, MCD %.2f" % (
                                    r["label"], r["actual"], r["lsd_nb"], r["mcd_nb"])
                                for r in vr_rows))))
    c16 = by["Codec2 1600"]
    same = ("At the same rate, Codec2's 1600 mode (issue 13's bar names 1300, with 0.3 "
            "kbit/s less): FRAE GRU 1.6 kbit/s, whose streams take %.2f, against it LSD "
            "%.2f vs %.2f dB and MCD %.2f vs %.2f dB (0-4 kHz, through audio)."
            % (g16["actual"], g16["lsd_nb"], c16["lsd_nb"], g16["mcd_nb"], c16["mcd_nb"]))
    d32 = by[models["dense-3k2"]["label"]]
    gain = ("What the recurrent state buys, same bitrate, data and recipe: through audio, "
            "the GRU family's LSD (0-8 kHz) is %.2f dB lower than the dense family's "
            "(%.2f against %.2f) and its MCD %.2f dB lower (%.2f against %.2f)."
            % (d32["lsd_full"] - g32["lsd_full"], g32["lsd_full"], d32["lsd_full"],
               d32["mcd_full"] - g32["mcd_full"], g32["mcd_full"], d32["mcd_full"]))
    notes = ("%d held-out utterances (%.0f s, voices never seen in training); every system "
             "measured on its decoded WAV: log-mel distances over speech frames, delays "
             "aligned per utterance (%s). FRAE: %s; streams total %s bytes with headers. "
             "Pitch reference: aubio (yinfft f0, YIN confidence >= 0.8), not frae's tracker."
             % (len(tests), secs,
                "; ".join("%s lag %d..%d frames" % (r["label"], min(r["lags"]), max(r["lags"]))
                          for r in rows),
                "; ".join("%s: %s" % (m["label"], m["split"]) for m in models.values()),
                " / ".join("%d" % m["bytes"] for m in models.values())))
    rates = ("kbit/s: a fixed-rate codec's own rate (FRAE's and Codec2's bits, Opus's "
             "packets without the Ogg file around them); stream kbit/s: what the files "
             "take, every header byte counted (FRAE's .fbs, Codec2's .c2, Opus's Ogg).  "
             "The rate-quality figure places FRAE at its streams, the others at their "
             "own rate.")
    # what DTX does to the frames the measures skip (more than 50 dB below
    # the loudest): their decoded level against the original's
    vr12, vr12d = by[models["gru-vr12-%g" % VR12_LAMBDA]["label"]], \
        by[models["gru-vr12-dtx"]["label"]]
    dtx = ("DTX (frae encode --dtx: frames below -60 dB, after 4 such, sent as a flag, the "
           "decoder repeating its last frame): %s takes %.3f kbit/s against %.3f without, "
           "LSD / MCD (0-4 kHz) %.2f / %.2f against %.2f / %.2f. On the frames the measures "
           "skip, the decoded level is %+.1f dB from the original's (without DTX %+.1f dB)."
           % (vr12d["label"], vr12d["actual"], vr12["actual"], vr12d["lsd_nb"],
              vr12d["mcd_nb"], vr12["lsd_nb"], vr12["mcd_nb"], vr12d["quiet_db"],
              vr12["quiet_db"]))
    report = "\n".join(["# frae speech demo", "", "Through audio:", "", table, "", rates, "",
                        "FRAE before the vocoder (its decoded features):", "", ftable, "",
                        "Bars (issues 13 and 14):", *bars, "", dtx, "", same, "", gain, "",
                        tracker, "", notes])
    print()
    print(report)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report + "\n")

    print("== 5b. the recorded human held-out voices (Fish Fillets' Dutch cast, "
          "scripts/make-corpus.sh --human %s), the same models" % " ".join(HUMAN_QUICK),
          flush=True)
    n_human, human_secs, human_md = human_held_out(a, frae, out, tmp, models)
    human_note = ("Through audio, %s: %d recorded clips (%.0f s; nl-m, nl-v, nl-o). The "
                  "models above were trained on the synthetic voices alone (the shipped "
                  "ones, models/, hear the human training speakers too: ./run.sh)." % (
                      HUMAN_TITLE, n_human, human_secs))
    print()
    print(human_note)
    print()
    print(human_md)
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n" + human_note + "\n\n" + human_md + "\n")

    print("== 6. figures", flush=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.figure(figsize=(7, 4))
    for key, m in models.items():
        if m["vr"] or "enc" in m:  # lambda x rate in the loss; a model twice
            continue
        csv = np.genfromtxt(m["log"], delimiter=",", names=True)
        line, = plt.plot(csv["epoch"], csv["loss"], label="%s: training" % m["label"])
        plt.plot(csv["epoch"], csv["val_loss"], "--", color=line.get_color(),
                 label="%s: held-out voices" % m["label"])
    plt.xlabel("epoch")
    plt.ylabel("MSE (z-scored log-mel features)")
    plt.yscale("log")
    plt.title("frae: FRAE codec training")
    plt.grid(alpha=0.3)
    plt.legend(fontsize=7)
    plt.tight_layout()
    plt.savefig(os.path.join(out, "loss.png"), dpi=110)

    name = sorted(refs)[0]
    panels = [(refs[name], "original"),
              (by[g16["label"]]["feats"][name], "%s, through the vocoder" % g16["label"]),
              (by["Codec2 1300"]["feats"][name], "Codec2 1300")]
    fig, ax = plt.subplots(len(panels), 1, figsize=(9, 2.7 * len(panels)), sharex=True)
    lim = (np.nanmin(panels[0][0]), np.nanmax(panels[0][0]))
    for k, (img, title) in enumerate(panels):
        im = ax[k].imshow(img.T, origin="lower", aspect="auto", vmin=lim[0], vmax=lim[1])
        ax[k].set_title("%s: %s (log-mel of the decoded audio)" % (name, title)
                        if k else "%s: original" % name)
        ax[k].set_ylabel("mel band")
        fig.colorbar(im, ax=ax[k])
    ax[-1].set_xlabel("frame (10 ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spectrogram.png"), dpi=110)

    def plot_rate(r):
        """FRAE at what its streams take, every header byte counted; the
        others at their codec's own rate (Codec2's bits, Opus's packets):
        what a comparison must not flatter is frae"""
        return r["actual"] if r["label"].startswith("FRAE") else r["kbps"]

    plt.figure(figsize=(7.5, 4.8))
    vr = sorted((r for r in rows if r["vr"] and ", 12 codes" not in r["label"]
                 and not r["search"]), key=lambda r: r["actual"])
    if vr:
        plt.plot([r["actual"] for r in vr], [r["lsd_nb"] for r in vr], "-^",
                 color="tab:orange", markersize=8,
                 label="FRAE GRU, variable rate (learned prior, lambda %s)" % ", ".join(
                     "%g" % lam for lam in VR_LAMBDAS))
    for r in rows:
        if r in vr:
            continue
        at = plot_rate(r)
        is_frae = r["label"].startswith("FRAE")
        if r.get("dtx"):  # pauses sent as silence: a diamond each
            plt.plot(at, r["lsd_nb"], "D", color="tab:purple", markersize=7,
                     label="FRAE GRU, variable rate, 12 codes, DTX"
                     if not r["search"] else None)
            plt.annotate("DTX" + (", searched" if r["search"] else ""), (at, r["lsd_nb"]),
                         textcoords="offset points",
                         xytext=(-8, -14) if r["search"] else (2, 7), fontsize=8,
                         ha="right" if r["search"] else "left")
        elif r["search"]:  # the same models, searched codes: a star each
            plt.plot(at, r["lsd_nb"], "*", color="tab:green", markersize=10,
                     label="FRAE GRU, encoder search" if not r["vr"] else None)
            plt.annotate("searched", (at, r["lsd_nb"]), textcoords="offset points",
                         xytext=(6, -10), fontsize=8)
        elif r["vr"]:  # beside the fixed-rate 1.6 point: named in the legend
            plt.plot(at, r["lsd_nb"], "v", color="tab:red", markersize=8,
                     label="FRAE GRU, variable rate, 12 codes (lambda %g)" % VR12_LAMBDA)
            plt.annotate("12 codes", (at, r["lsd_nb"]), textcoords="offset points",
                         xytext=(-8, -3), fontsize=8, ha="right")
        else:
            plt.plot(at, r["lsd_nb"], "o" if is_frae else "s",
                     color="tab:blue" if is_frae else "tab:gray", markersize=8)
            plt.annotate(r["label"], (at, r["lsd_nb"]), textcoords="offset points",
                         xytext=(6, 4), fontsize=8)
    if vr:
        plt.legend(fontsize=8, loc="upper right")
    plt.xlabel("kbit/s: FRAE's streams, every header byte counted; Codec2's bits, "
               "Opus's packets")
    plt.ylabel("LSD 0-4 kHz through audio (dB)")
    plt.title("rate and quality on the held-out voices (lower is better)")
    plt.grid(alpha=0.3)
    plt.xlim(0, max(plot_rate(r) for r in rows) * 1.25)
    plt.tight_layout()
    plt.savefig(os.path.join(out, "rate_quality.png"), dpi=110)
    plt.close("all")

    dtable, dpage = denoising(a, frae, out, tmp, models, refs, tests)
    print()
    print("Denoising (issue 17), against the clean original, 1.6 kbit/s both:")
    print(dtable)
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\nDenoising: the held-out voices with pink noise (sox), coded at 1.6 "
                "kbit/s, measured against the clean original:\n\n" + dtable + "\n")

    print("== 8. the listening page", flush=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import listening_page
    specs = spectrogram_strips(out, refs, [
        (g16["label"], by[g16["label"]]["feats"]), ("Codec2 1300", by["Codec2 1300"]["feats"]),
        ("Opus 6 kbit/s", by["Opus 6 kbit/s"]["feats"])])
    page_systems = [("original", {n: os.path.join(out, "wav", n + "-original.wav")
                                  for n in refs})]
    # in each sentence's row: the main codecs first, the rest behind "more"
    main_labels = [models["gru-1k6"]["label"], models["gru-vr12-%g" % VR12_LAMBDA]["label"],
                   models["gru-3k2"]["label"], "Codec2 1300", "Codec2 3200", "Opus 6 kbit/s"]
    page_systems += [(label, systems[label]["wavs"]) for label in main_labels]
    page_systems += [(label, s["wavs"]) for label, s in systems.items()
                     if label not in main_labels]
    page_systems += sorted(dpage.items())
    listening_page.write_page(
        out, [(n, specs[n]) for n in sorted(refs)], page_systems,
        tables=[("Through audio (held-out voices)", table),
                ("FRAE before the vocoder", ftable),
                ("Denoising: noisy voices in, against the clean original", dtable)],
        figures=[("rate and quality", os.path.join(out, "rate_quality.png")),
                 ("spectrograms", os.path.join(out, "spectrogram.png")),
                 ("training", os.path.join(out, "loss.png"))],
        notes=[notes, "Spectrograms per utterance: the log-mel of the original, then of "
               "the decoded audio of FRAE GRU 1.6 kbit/s, Codec2 1300 and Opus 6 kbit/s."],
        texts=listening_page.sentence_texts(list(refs), a.corpus), primary=7,
        intro="Each held-out sentence (voices the codecs never heard), then through each "
              "system: the main FRAE codecs, Codec2 and Opus first, the rest of the study "
              "behind 'more systems'.  Tables and figures are below the sentences.",
        title="frae speech demo: listen")
    if listening_page.chromium():
        problems, rep = listening_page.check(out)
        print("%s: %d audio players and %d pictures in headless Chromium: %s; screenshot "
              "%s" % (os.path.join(out, "index.html"), len(rep["audio"]), len(rep["images"]),
                      "all load, each duration its file's" if not problems
                      else "PROBLEMS: " + "; ".join(problems[:5]),
                      os.path.join(out, "index.png")), flush=True)
    else:
        print("%s written (no chromium to check it in)" % os.path.join(out, "index.html"))
    shutil.rmtree(tmp)
    print("wrote %s, index.html, loss.png, spectrogram.png, rate_quality.png in %s (%.0f s)"
          % (os.path.join(out, "report.md"), out, time.time() - started))


if __name__ == "__main__":
    main()
