#!/usr/bin/python3
"""How the vocoder's polish was chosen (src/audio/polish.c;
docs/2026-12-06-polish.md, docs/2026-12-07-polish-down.md): the same rounds in numpy on
the vocoder's audio of a codec's decoded features, over the whole signal
or streamed (blocks of frames, frames ahead, the first half hop eased in
or not), measured as tools/human_study.py measures a codec (LSD / MCD 0-4
kHz against the original's features, aligned by the features' lag; STOI;
aubio's GPE and VDE of the audio against the original's)
under the codec's own analysis and two others whose frames are not the
polish's: the signals moved by half a hop, and a 640-sample window in a
1024-point FFT.  The last row is frae decode --polish 2 itself (the row
before it its rule: voiced frames only turned down under 1 kHz, three
bands at a time, targets 0.4 / 3 of the way to each neighbour and raised
0.25 dB; the one before that the twenty-fourth session's, their level kept
over 20 frames).

Usage: tools/polish_sim.py [--every N] [--model M] [--frae build/frae]
  [--corpus data/corpus] [--work DIR]
Clips: the many-voices corpus's training clips, both bands, every Nth
(training speakers only: the choice is made there, the study confirms it
on the held-out ones)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402
import human_study  # noqa: E402  (the listener's measure, aligned as the study does)

HOP, WIN, NFFT, MELS = 160, 400, 512, 80
WINDOW = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WIN) / WIN)
NARROW = np.where(demo.mel_upper_edges() <= 3800)[0]
ANALYSES = [("codec's frames", [], 0), ("half a hop later", [], 80),
            ("640 / 1024", ["--win", "640", "--fft", "1024"], 0)]
# (label, block frames (0: the whole signal), frames ahead, rounds, eased,
# the power given back, what a voiced frame's bins below how many Hz get:
# None (polished as the rest), ("held", Hz): a gain of 1, ("down", Hz):
# no gain over 1, ("down3", Hz): no gain over 1, from each band's power
# ratio with its two neighbours'; and, optionally, each neighbour's share
# of a frame's target log powers, and the frames over which their level is
# kept (none: raised 0.25 dB))
VARIANTS = [("vocoder alone", 0, 0, 0, True, True, None)] + [
    ("whole signal, %d rounds" % k, 0, 0, k, True, False, None) for k in (1, 2, 4)] + [
    ("frame by frame, %d round%s" % (k, "s" if k > 1 else ""), 1, 0, k, True, True, None)
    for k in (1, 2, 3)] + [
    ("frame by frame, 2 rounds, not eased", 1, 0, 2, False, True, None),
    ("frame by frame, 2 rounds, power not given back", 1, 0, 2, True, False, None),
    ("frame by frame, 1 frame ahead, 2 rounds", 1, 1, 2, True, True, None),
    ("blocks of 4 frames, 2 rounds", 4, 0, 2, True, True, None)] + [
    ("frame by frame, 2 rounds, voiced frames %s under %d Hz"
     % ("held" if how == "held" else "only turned down", hz), 1, 0, 2, True, True, (how, hz))
    for how in ("held", "down") for hz in (500, 1000, 2000)] + [
    ("frame by frame, 2 rounds, voiced frames only turned down", 1, 0, 2, True, True,
     ("down", 8001))] + [
    ("frame by frame, 2 rounds, voiced frames only turned down under 1000 Hz, targets %.3g of "
     "the way to each neighbour" % share, 1, 0, 2, True, True, ("down", 1000), share)
    for share in (0.1, 0.4 / 3, 0.2)] + [
    ("frame by frame, 2 rounds, voiced frames only turned down under 1000 Hz, three bands at "
     "a time", 1, 0, 2, True, True, ("down3", 1000)),
    ("frame by frame, 2 rounds, voiced frames only turned down under 1000 Hz, three bands at "
     "a time, targets 0.133 of the way to each neighbour, their level kept over 20 frames", 1,
     0, 2, True, True, ("down3", 1000), 0.4 / 3, 20),
    ("frame by frame, 2 rounds, voiced frames only turned down under 1000 Hz, three bands at "
     "a time, targets 0.133 of the way to each neighbour, raised 0.25 dB (frae's rule)", 1, 0,
     2, True, True, ("down3", 1000), 0.4 / 3)]
FREQS = np.arange(NFFT // 2 + 1) * 16000.0 / NFFT


def filters():
    mel = lambda hz: 2595.0 * np.log10(1.0 + hz / 700.0)
    hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    pts = hz(mel(0.0) + (mel(8000.0) - mel(0.0)) * np.arange(MELS + 2) / (MELS + 1))
    f = np.arange(NFFT // 2 + 1) * 16000.0 / NFFT
    w = np.zeros((MELS, len(f)))
    for b in range(MELS):
        lo, c, hi = pts[b], pts[b + 1], pts[b + 2]
        w[b] = np.maximum(0, np.minimum((f - lo) / (c - lo), (hi - f) / (hi - c)))
    return w


W = filters()


def stft(y, frames):
    return np.fft.rfft(np.stack([y[t * HOP:t * HOP + WIN] * WINDOW for t in range(frames)]),
                       NFFT, axis=1)


def rounds_over(z, target, f0, f1, fixed, eased, power, voiced_low=None):
    """One round over frames f0..f1-1 of z: their bins scaled to the target
    mel powers, overlap-added back from sample `fixed` on (least squares,
    pulled to the samples as they were by 0.1), the frames not final given
    back the power their targets ask for (within 6 dB), the first half hop
    eased."""
    s0, s1 = f0 * HOP, (f1 - 1) * HOP + WIN
    seg = z[s0:s1]
    X = stft(seg, f1 - f0)
    bands = (np.abs(X) ** 2) @ W.T
    ratio = target[f0:f1] / np.maximum(bands, 1e-30)
    sums = W.sum(0)
    g2 = np.where(sums > 0, (ratio @ W) / np.maximum(sums, 1e-30), 1.0)
    if voiced_low is not None:  # ([frames, bins] True where it applies, how)
        where, how = voiced_low
        low = g2
        if how == "down3":  # each band with its neighbours
            three = lambda v: v + np.pad(v[:, 1:], ((0, 0), (0, 1))) + np.pad(v[:, :-1],
                                                                               ((0, 0), (1, 0)))
            wide = three(target[f0:f1]) / np.maximum(three(bands), 1e-30)
            low = np.where(sums > 0, (wide @ W) / np.maximum(sums, 1e-30), 1.0)
        g2 = np.where(where[f0:f1], 1.0 if how == "held" else np.minimum(low, 1.0), g2)
    fr = np.fft.irfft(X * np.sqrt(np.minimum(g2, 1e4)), NFFT, axis=1)[:, :WIN] * WINDOW
    acc, wsum = np.zeros(s1 - s0), np.zeros(s1 - s0)
    for t in range(f1 - f0):
        acc[t * HOP:t * HOP + WIN] += fr[t]
        wsum[t * HOP:t * HOP + WIN] += WINDOW ** 2
    new = ((acc + 0.1 * seg) / (wsum + 0.1))[fixed - s0:]
    if power:
        t0 = fixed // HOP
        got = ((np.abs(stft(new, f1 - t0)) ** 2) @ W.T).sum()
        new = new * np.sqrt(np.clip(target[t0:f1].sum() / max(got, 1e-30), 0.25, 4.0))
    if eased and fixed > 0:
        ease = HOP // 2
        up = 0.5 - 0.5 * np.cos(np.pi * (np.arange(ease) + 0.5) / ease)
        new[:ease] = z[fixed:fixed + ease] + up * (new[:ease] - z[fixed:fixed + ease])
    z[fixed:s1] = new


def towards_neighbours(target, share, level_frames=None):
    """Each frame's log powers taken `share` of the way to each neighbour's
    (its own at the ends) and raised 0.25 dB, as src/audio/polish.c's
    targets (what smoothing speech's logs costs in power, a constant); or,
    with level_frames, their power kept at the features' by the ratio of
    two exponential averages over level_frames frames (the twenty-fourth
    session's rule)."""
    lp = np.log(np.maximum(target, 1e-30))
    before = np.concatenate([lp[:1], lp[:-1]])
    after = np.concatenate([lp[1:], lp[-1:]])
    new = np.exp(lp + share * (before - lp) + share * (after - lp))
    if not level_frames:
        return new * 10 ** 0.025
    features, targets = np.exp(lp).sum(1), new.sum(1)
    kept, made = 0.0, 0.0
    for t in range(len(new)):
        kept += (features[t] - kept) / level_frames
        made += (targets[t] - made) / level_frames
        new[t] *= kept / made
    return new


def polish(y, target, voiced, block, ahead, k, eased, power, low, share=0.0, level_frames=None):
    z = y.copy()
    if share:
        target = towards_neighbours(target, share, level_frames)
    voiced_low = (voiced[:, None] & (FREQS[None, :] < low[1]), low[0]) if low else None
    frames = min(len(target), 1 + (len(z) - WIN) // HOP)
    if block == 0:
        for _ in range(k):
            rounds_over(z, target, 0, frames, 0, False, False)
        return z
    for b0 in range(0, frames, block):
        for _ in range(k):
            rounds_over(z, target, max(0, b0 - 2), min(frames, b0 + block + ahead), b0 * HOP,
                        eased, power, voiced_low)
    return z


def measure(a, x, z, work, ref_pitch):
    row = []
    for _, opts, moved in ANALYSES:
        demo.FEATURE_OPTS = opts
        ref_wav, wav = os.path.join(work, "x.wav"), os.path.join(work, "z.wav")
        demo.write_wav(ref_wav, x[moved:])
        demo.write_wav(wav, z[moved:])
        ref = demo.features(a.frae, ref_wav, os.path.join(work, "x.npy"))
        got = demo.features(a.frae, wav, os.path.join(work, "z.npy"))
        lag = demo.best_lag(ref, got)
        test = demo.shift(len(ref), got, lag)
        ok = ~np.isnan(test).any(axis=1)
        row += list(demo.metrics(ref[ok], test[ok], NARROW))
        if not opts and not moved:
            lag0 = lag
    demo.FEATURE_OPTS = []
    wav = os.path.join(work, "z.wav")
    demo.write_wav(wav, z)
    row.append(human_study.listener(x, wav, lag0)[0])
    # the pitch in the audio, as the study reads it: aubio's track of it
    # against the original's (gross errors, voicing errors and their counts)
    ref = demo.features(a.frae, os.path.join(work, "x0.wav"), os.path.join(work, "x0.npy"))
    got = demo.features(a.frae, wav, os.path.join(work, "z.npy"))
    lag = demo.best_lag(ref, got)
    f0, v = demo.pitch_track(wav, len(got))
    f0, v = demo.shift(len(ref), f0, lag), demo.shift(len(ref), v.astype(float), lag)
    row += list(demo.pitch_errors(ref_pitch, (np.nan_to_num(f0), v == 1, ~np.isnan(v))))
    return row


def main():
    ap = argparse.ArgumentParser()
    demo.training_clip_args(ap, every=40)
    a = ap.parse_args()
    clips, work = demo.training_clips_and_work(a, "polish-sim-")
    rows = {v[0]: [] for v in VARIANTS}
    rows["frae decode --polish 2"] = []
    for wav in clips:
        x = demo.read_wav(wav).astype(float)
        demo.write_wav(os.path.join(work, "x0.wav"), x)
        n = len(demo.features(a.frae, wav, os.path.join(work, "x0.npy")))
        ref_pitch = demo.pitch_track(wav, n)
        fbs, npy, voc = (os.path.join(work, n) for n in ("c.fbs", "d.npy", "v.wav"))
        demo.sh([a.frae, "encode", a.model, wav, "-o", fbs])
        demo.sh([a.frae, "decode", a.model, fbs, "-o", npy, "--wav", voc, "--polish", "0"])
        y = demo.read_wav(voc).astype(float)
        dec = np.load(npy)
        target = np.exp(dec[:, :MELS] * demo.FEAT_SCALE - 5.0)
        voiced = dec[:, MELS + 1] >= 0.5
        for label, *how in VARIANTS:
            rows[label].append(measure(a, x, polish(y, target, voiced, *how), work, ref_pitch))
        demo.sh([a.frae, "decode", a.model, fbs, "--wav", voc, "--polish", "2"])
        rows["frae decode --polish 2"].append(measure(a, x, demo.read_wav(voc).astype(float),
                                                      work, ref_pitch))
    print("%d training clips (every %d), %s's decoded features; LSD / MCD 0-4 kHz under each "
          "analysis, then STOI\n" % (len(clips), a.every, os.path.basename(a.model)))
    print("| polish | " + " | ".join(n for n, _, _ in ANALYSES) + " | STOI | GPE | VDE |")
    print("| --- |" + " --- |" * (len(ANALYSES) + 3))
    for label, r in rows.items():
        r = np.array(r, float)
        m = np.nanmean(r[:, :2 * len(ANALYSES) + 1], axis=0)
        gross, both, verr, frames = r[:, 2 * len(ANALYSES) + 1:].sum(axis=0)
        cells = ["%.2f / %.2f" % (m[2 * i], m[2 * i + 1]) for i in range(len(ANALYSES))]
        print("| %s | %s | %.3f | %.1f%% | %.1f%% |" % (label, " | ".join(cells), m[-1],
                                                       100 * gross / both, 100 * verr / frames))


if __name__ == "__main__":
    main()
