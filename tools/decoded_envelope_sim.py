#!/usr/bin/python3
"""Questions about a codec's decoded envelope, on training speakers'
clips, each clip encoded by a shipped model (the network's codes, --search
0), its frames decoded (frae decode -o), changed in numpy, vocoded (frae
vocode) and measured as tools/human_study.py measures a codec (LSD / MCD
0-4 kHz against the original's log-mel, aligned; STOI):

--what postfilter: a decoder-side filter across bands, each band taken
  toward the mean of the 5 around it (the ends repeated) by a strength s,
  x + s (mean - x), negative s sharpening; "kept power": each frame then
  shifted to its power before the filter.  Also on the input's own
  features (frae features --pitch), which have no codec's ripple.
--what bands: where the LSD goes by band, against Opus 6 kbit/s (as
  tools/demo.py runs it) and the vocoder alone on the input's features:
  the RMS of the log-mel difference in dB over speech frames, by group
  of bands and by the input frame's voicing.
--what comb: whether the decoded f0 would tell the decoder the voiced
  envelope's fine structure at 130-700 Hz (each band less the mean of the
  5 around it), where the harmonics are resolved: the comb a flat
  harmonic series at the decoded f0 makes through the analysis (a Hann
  window of 400 samples, 512-point FFT, the 80 mel filters), and how
  much of the decoded fine structure's error it explains.
--what frames: where the listener's measure (STOI) goes: the decoded
  envelope in some frames and the input's in the others (the input's
  pitch throughout), by the input frame's level against the clip's
  loudest and by its voicing.
--what stoi-bands: where STOI goes by third-octave band (each band's
  correlations' mean over the segments; STOI is their mean): frae decode
  --wav (the decoder's own polish), Opus 6 kbit/s, the vocoder alone on the
  input's features polished and not (frae vocode --polish 0), the coded
  envelope with the original pitch and the original envelope with the
  coded pitch (tools/human_study.py's mixtures).

Usage: tools/decoded_envelope_sim.py --what postfilter|bands|comb|frames|stoi-bands [--every N]
  [--model PATH] [--frae build/frae] [--corpus data/corpus] [--jobs 2]
Clips: the many-voices corpus's training clips, narrowband and wideband
sources apart, every Nth (training speakers only)."""
import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402
import human_study  # noqa: E402  (the listener's alignment, the mixtures)
import intelligibility  # noqa: E402

NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]


def band_mean(x, width=5):
    """Each band's mean over the width bands around it, the ends repeated."""
    half = width // 2
    pad = np.pad(x, ((0, 0), (half, half)), mode="edge")
    return np.mean([pad[:, j:j + x.shape[1]] for j in range(width)], axis=0)


def postfilter(x, s, kept_power):
    y = x + s * (band_mean(x) - x)
    if kept_power:  # ln of each frame's mel power, before and after
        before = np.log(np.exp(x * demo.FEAT_SCALE).sum(axis=1))
        after = np.log(np.exp(y * demo.FEAT_SCALE).sum(axis=1))
        y = y + ((before - after) / demo.FEAT_SCALE)[:, None]
    return y


def vocoded(frae, ref, clean, rate, feats, work):
    """feats [T, 82] vocoded: LSD, MCD 0-4 kHz and STOI against the input."""
    npy, wav = os.path.join(work, "v.npy"), os.path.join(work, "v.wav")
    np.save(npy, feats.astype(np.float32))
    demo.sh([frae, "vocode", npy, "-o", wav])
    got = demo.features(frae, wav, os.path.join(work, "got.npy"))
    test = demo.shift(len(ref), got, demo.best_lag(ref, got))
    ok = ~np.isnan(test).any(axis=1)
    lsd, mcd = demo.metrics(ref[ok], test[ok], NARROW)
    y, _ = intelligibility.read_wav(wav)
    return lsd, mcd, intelligibility.scores(clean, y, rate)[0]


def rows_postfilter(dec, inp):
    rows = {}
    for s in (0.0, -0.15, 0.15, 0.3):
        for kept in (False, True):
            if s == 0 and kept:
                continue
            name = "decoded, %g%s" % (s, ", kept power" if kept else "")
            x = dec.copy()
            x[:, :80] = postfilter(dec[:, :80], s, kept)
            rows[name] = (x, 0.0)
    for s in (0.0, 0.15, 0.3):
        x = inp.copy()
        x[:, :80] = postfilter(inp[:, :80], s, False)
        rows["the input's features, %g" % s] = (x, 0.0)
    return rows


def rows_frames(dec, inp):
    level = demo.frame_level_db(inp[:, :80])
    voiced = inp[:, 81] >= 0.5
    loud = level >= level.max() - 15
    rows = {}
    for name, sel in (("all frames decoded", np.ones(len(inp), bool)),
                      ("within 15 dB of the loudest decoded", loud),
                      ("15 dB or more down decoded", ~loud),
                      ("voiced decoded", voiced), ("unvoiced decoded", ~voiced),
                      ("none decoded (the vocoder alone)", np.zeros(len(inp), bool))):
        x = inp.copy()
        x[sel, :80] = dec[sel, :80]
        rows[name] = (x, sel.mean())
    return rows


BAND_GROUPS = ((0, 130), (130, 700), (700, 2000), (2000, 3800))
COMB_BANDS = np.where((demo.mel_upper_edges() > 130) & (demo.mel_upper_edges() <= 700))[0]


def mel_filters(rate=16000, n_fft=512, n_mels=80):
    """Triangular mel filters [n_mels, n_fft / 2 + 1] on frae's mel points."""
    mel = lambda hz: 2595.0 * np.log10(1.0 + hz / 700.0)
    hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    pts = hz(np.linspace(mel(0), mel(rate / 2), n_mels + 2))
    f = np.arange(n_fft // 2 + 1) * rate / n_fft
    lo, mid, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
    return np.clip(np.minimum((f - lo) / (mid - lo), (hi - f) / (hi - mid)), 0, None)


class Comb:
    """ln mel power of a flat harmonic series at f0 (to 4 kHz) through a
    Hann window of win samples and an n_fft-point FFT."""
    def __init__(self, rate=16000, n_fft=512, win=400):
        self.rate, self.n_fft = rate, n_fft
        self.filters = mel_filters(rate, n_fft)
        w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win) / win)
        self.grid = np.linspace(0, 6, 601)
        phase = np.exp(-2j * np.pi * np.outer(self.grid, np.arange(win)) / n_fft)
        self.lobe = np.abs(phase @ w) ** 2

    def __call__(self, f0):
        spec = np.zeros(self.n_fft // 2 + 1)
        for k in range(1, int(4000 / f0) + 1):
            pos = k * f0 * self.n_fft / self.rate
            b = np.arange(max(0, int(pos) - 5), min(len(spec), int(pos) + 7))
            spec[b] += np.interp(np.abs(b - pos), self.grid, self.lobe)
        p = self.filters @ spec
        return np.log(p + 1e-3 * p.max())


def comb_parts(dec, inp, comb):
    """The voiced speech frames' fine structure at 130-700 Hz (ln power):
    the input's, the decoded one's and the decoded f0's comb's."""
    v = (inp[:, 81] >= 0.5) & (dec[:, 81] >= 0.5) & demo.speech_frames(inp[:, :80])
    if not v.any():
        return None
    fine = lambda x: (x - band_mean(x))[:, COMB_BANDS]
    t = np.stack([comb(f) for f in dec[v, 80]])
    return (fine(inp[v, :80] * demo.FEAT_SCALE), fine(dec[v, :80] * demo.FEAT_SCALE),
            fine(t))


def by_source(a, **kw):
    """For the narrowband then the wideband sources' training clips: their
    label ("narrowband sources (N)") and one_clip's result for each (None
    dropped), a.jobs clips at a time."""
    for band, name in (("nb", "narrowband"), ("wb", "wideband")):
        clips = demo.voices_training_clips(a.corpus, a.every, band)
        if not clips:
            sys.exit("no training clips in %s" % a.corpus)
        with ThreadPoolExecutor(a.jobs) as pool:
            res = [r for r in pool.map(lambda kc: one_clip(a, *kc, **kw), enumerate(clips))
                   if r is not None]
        yield "%s sources (%d)" % (name, len(clips)), res
        sys.stdout.flush()


def comb_table(a):
    comb = Comb()
    corr = lambda x, y: (x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum())
    print("| training clips (%s), voiced frames, 130-700 Hz | frames | fine structure RMS, "
          "input / decoded / error (ln power) | correlation with the decoded f0's comb, "
          "input / decoded | the error's energy the comb explains |" % os.path.basename(a.model))
    print("| --- | --- | --- | --- | --- |")
    for label, parts in by_source(a, comb=comb):
        fx, fd, ft = (np.concatenate([p[i] for p in parts]) for i in range(3))
        err = fx - fd
        beta = (err * ft).sum(axis=0) / (ft * ft).sum(axis=0)  # per band
        explained = 1 - ((err - beta * ft) ** 2).mean() / (err ** 2).mean()
        print("| %s | %d | %.3f / %.3f / %.3f | %.3f / %.3f | %.1f%% |"
              % (label, len(fx), fx.std(), fd.std(), err.std(), corr(fx, ft), corr(fd, ft),
                 100 * explained))


def band_errors(a, wav, ref, inp, dec_wav, work):
    """{(system, voicing, group): (sum of squares, count)} of one clip."""
    edges = demo.mel_upper_edges()
    opus = os.path.join(work, "x.opus")
    demo.sh(["opusenc", "--quiet", "--bitrate", "6", wav, opus])
    demo.sh(["opusdec", "--quiet", "--rate", "16000", opus, os.path.join(work, "o.wav")])
    demo.sh([a.frae, "vocode", os.path.join(work, "o.npy"), "-o", os.path.join(work, "v.wav")])
    keep = demo.speech_frames(ref)
    voiced = np.zeros(len(ref), bool)
    voiced[:min(len(ref), len(inp))] = inp[:len(ref), 81] >= 0.5
    out = {}
    for system, wav in (("frae", dec_wav), ("Opus 6k", os.path.join(work, "o.wav")),
                        ("vocoder alone", os.path.join(work, "v.wav"))):
        got = demo.features(a.frae, wav, os.path.join(work, "got.npy"))
        test = demo.shift(len(ref), got, demo.best_lag(ref, got))
        ok = keep & ~np.isnan(test).any(axis=1)
        diff = demo.DB * demo.FEAT_SCALE * (test - ref)
        for v_name, v_sel in (("voiced", voiced), ("unvoiced", ~voiced)):
            for lo, hi in BAND_GROUPS:
                bands = np.where((edges > lo) & (edges <= hi))[0]
                d = diff[ok & v_sel][:, bands]
                out[(system, v_name, (lo, hi))] = ((d ** 2).sum(), d.size)
    return out


STOI_SYSTEMS = ("frae", "Opus 6k", "vocoder alone", "vocoder alone, not polished",
                "coded envelope, original pitch", "original envelope, coded pitch")


def stoi_bands(a, wav, ref, clean, inp, dec, fbs, work):
    """{system: STOI of each third-octave band} of one clip (STOI_SYSTEMS;
    None where a system has too little speech to score)."""
    wavs = {s: os.path.join(work, "%d.wav" % i) for i, s in enumerate(STOI_SYSTEMS)}
    demo.sh([a.frae, "decode", a.model, fbs, "--wav", wavs["frae"]])
    opus = os.path.join(work, "x.opus")
    demo.sh(["opusenc", "--quiet", "--bitrate", "6", wav, opus])
    demo.sh(["opusdec", "--quiet", "--rate", "16000", opus, wavs["Opus 6k"]])
    inp_npy = os.path.join(work, "o.npy")
    demo.sh([a.frae, "vocode", inp_npy, "-o", wavs["vocoder alone"]])
    demo.sh([a.frae, "vocode", inp_npy, "-o", wavs["vocoder alone, not polished"],
             "--polish", "0"])
    for system, feats in human_study.mixtures(dec, inp):
        npy = os.path.join(work, "mix.npy")
        np.save(npy, feats.astype(np.float32))
        demo.sh([a.frae, "vocode", npy, "-o", wavs[system]])
    out = {}
    for system, path in wavs.items():
        got = demo.features(a.frae, path, os.path.join(work, "got.npy"))
        z = human_study.aligned(clean, path, demo.best_lag(ref, got))
        out[system] = intelligibility.band_scores(clean, z, 16000)
    return out


def one_clip(a, k, wav, comb=None):
    work = tempfile.mkdtemp(prefix="clip-%d-" % k, dir=a.work)
    ref = demo.features(a.frae, wav, os.path.join(work, "ref.npy"))
    clean, rate = intelligibility.read_wav(wav)
    fbs = os.path.join(work, "s.fbs")
    demo.sh([a.frae, "encode", a.model, wav, "-o", fbs, "--search", "0"])
    demo.sh([a.frae, "decode", a.model, fbs, "-o", os.path.join(work, "d.npy")])
    demo.sh([a.frae, "features", "--pitch", wav, "-o", os.path.join(work, "o.npy")])
    dec, inp = np.load(os.path.join(work, "d.npy")), np.load(os.path.join(work, "o.npy"))
    if a.what == "comb":
        n = min(len(dec), len(inp))
        return comb_parts(dec[:n], inp[:n], comb)
    if a.what == "stoi-bands":
        return stoi_bands(a, wav, ref, clean, inp, dec, fbs, work)
    if a.what == "bands":
        dec_wav = os.path.join(work, "d.wav")
        demo.sh([a.frae, "decode", a.model, fbs, "--wav", dec_wav])
        return band_errors(a, wav, ref, inp, dec_wav, work)
    n = min(len(dec), len(inp))
    rows = (rows_postfilter if a.what == "postfilter" else rows_frames)(dec[:n], inp[:n])
    return {name: vocoded(a.frae, ref, clean, rate, x, work) + (share,)
            for name, (x, share) in rows.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--what", choices=("postfilter", "bands", "comb", "frames", "stoi-bands"),
                    required=True)
    demo.training_clip_args(ap, every=30)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    a.work = a.work or tempfile.mkdtemp(prefix="decoded-envelope-")
    os.makedirs(a.work, exist_ok=True)
    if a.what == "bands":
        return bands_table(a)
    if a.what == "comb":
        return comb_table(a)
    if a.what == "stoi-bands":
        return stoi_bands_table(a)
    print("| %s, training clips | %s | LSD 0-4 kHz | MCD 0-4 kHz | STOI |"
          % (os.path.basename(a.model), "postfilter" if a.what == "postfilter"
             else "envelope (share of frames)"))
    print("| --- | --- | --- | --- | --- |")
    for label, res in by_source(a):
        for name in res[0]:
            lsd, mcd, stoi, share = np.nanmean([r[name] for r in res], axis=0)
            print("| %s | %s%s | %.3f | %.3f | %.4f |"
                  % (label, name, " (%.2f)" % share if a.what == "frames" else "", lsd, mcd,
                     stoi))


def bands_table(a):
    groups = ["%d-%d Hz" % g for g in BAND_GROUPS]
    print("| training clips (%s) | frames | %s |" % (os.path.basename(a.model),
                                                  " | ".join(groups)))
    print("| --- | --- |%s" % (" --- |" * len(groups)))
    for label, res in by_source(a):
        for v_name in ("voiced", "unvoiced"):
            for system in ("frae", "Opus 6k", "vocoder alone"):
                cells = []
                for g in BAND_GROUPS:
                    ss = sum(r[(system, v_name, g)][0] for r in res)
                    n = sum(r[(system, v_name, g)][1] for r in res)
                    cells.append("%.2f" % np.sqrt(ss / max(n, 1)))
                print("| %s, %s | %s | %s |" % (label, system, v_name, " | ".join(cells)))


def stoi_bands_table(a):
    centres = intelligibility.MIN_FREQ * 2.0 ** (np.arange(intelligibility.BANDS) / 3)
    print("| training clips (%s) | STOI | %s |" % (os.path.basename(a.model), " | ".join(
        "%.0f Hz" % c for c in centres)))
    print("| --- | --- |%s" % (" --- |" * len(centres)))
    for label, res in by_source(a):
        got = [r for r in res if all(r[s] is not None for s in STOI_SYSTEMS)]  # all score
        name = label if len(got) == len(res) else "%s, %d scored" % (label, len(got))
        mean = {}
        for system in STOI_SYSTEMS:
            mean[system] = np.mean([r[system] for r in got], axis=0)
            print("| %s, %s | %.4f | %s |" % (name, system, mean[system].mean(),
                                              " | ".join("%.3f" % v for v in mean[system])))
        d = mean["frae"] - mean["Opus 6k"]
        print("| %s, frae less Opus 6k | %+.4f | %s |"
              % (label, d.mean(), " | ".join("%+.3f" % v for v in d)))


if __name__ == "__main__":
    main()
