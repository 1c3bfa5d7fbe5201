#!/usr/bin/python3
"""A listener's measure (issue 48, item 6): STOI (Taal, Hendriks, Heusdens
and Jensen, "An algorithm for intelligibility prediction of time-frequency
weighted noisy speech", IEEE TASLP 19(7), 2011) and ESTOI (Jensen and
Taal, "An algorithm for predicting the intelligibility of speech masked by
modulated noise maskers", IEEE/ACM TASLP 24(11), 2016), in numpy, as the
papers define them:

  - both signals resampled to 10 kHz (by their spectra: the bins above 5 kHz
    dropped);
  - 256-sample frames (25.6 ms), half overlapped, Hann window; the frames
    more than 40 dB below the clean signal's loudest dropped from both
    signals (the papers' silent-frame removal), which are then overlap-added
    again;
  - a 512-point DFT of each frame; 15 one-third-octave bands, the lowest
    centred at 150 Hz (the highest at 3.8 kHz), each band's envelope the
    root of its bins' power;
  - segments of N = 30 frames (384 ms), one starting at every frame;
  - STOI: in each segment and band, the processed envelope scaled to the
    clean one's energy and clipped at the clean one's times (1 + 10^(15/20))
    (a signal-to-distortion floor of -15 dB), then the correlation
    coefficient of the two envelopes over the 30 frames; the mean over
    bands and segments.  1 for identical signals;
  - ESTOI: each segment's 15 x 30 envelope matrix of either signal with
    each band's mean removed and its norm scaled to 1, then each frame's
    vector across the bands likewise; the mean over the frames of the two
    signals' inner products, then over the segments.  1 for identical
    signals.

Neither is in Debian 12 as a package (pystoi is a PyPI one), so this is
checked by its properties (tests/intelligibility_test.py): identical
signals score exactly 1, scores fall as noise rises, a global gain changes
nothing, misaligned signals score lower.  A clip with fewer than 30 frames
of speech left has no score (nan).

Usage: tools/intelligibility.py CLEAN.wav PROCESSED.wav   (prints STOI and
ESTOI; both 16-bit WAV at the same rate)"""
import sys
import wave

import numpy as np

FS = 10000
FRAME = 256
HOP = FRAME // 2
NFFT = 512
BANDS = 15
MIN_FREQ = 150.0
N = 30
BETA = -15.0
DYN_RANGE = 40.0
WINDOW = np.hanning(FRAME + 2)[1:-1]


def resample(x, rate):
    """x at rate Hz to FS by the spectrum (rfft, bins above FS/2 dropped or
    zeros added)."""
    if rate == FS:
        return np.asarray(x, dtype=np.float64)
    n = len(x)
    m = int(round(n * FS / rate))
    X = np.fft.rfft(np.asarray(x, dtype=np.float64))
    Y = np.zeros(m // 2 + 1, complex)
    k = min(len(X), len(Y))
    Y[:k] = X[:k]
    if m % 2 == 0 and m < n:
        Y[-1] = Y[-1].real
    return np.fft.irfft(Y, m) * (m / n)


def third_octaves():
    """[BANDS, NFFT/2 + 1] 0/1 matrix: each band's DFT bins, the band edges
    at the bins nearest 150 * 2^((2k -+ 1)/6) Hz."""
    f = np.linspace(0, FS, NFFT + 1)[:NFFT // 2 + 1]
    k = np.arange(BANDS)
    lo = MIN_FREQ * 2.0 ** ((2 * k - 1) / 6)
    hi = MIN_FREQ * 2.0 ** ((2 * k + 1) / 6)
    obm = np.zeros((BANDS, len(f)))
    for i in range(BANDS):
        a = int(np.argmin((f - lo[i]) ** 2))
        b = int(np.argmin((f - hi[i]) ** 2))
        obm[i, a:b] = 1.0
    return obm


OBM = third_octaves()


def frames(x):
    starts = range(0, len(x) - FRAME, HOP)
    return np.array([WINDOW * x[i:i + FRAME] for i in starts]).reshape(-1, FRAME)


def overlap_add(fr):
    out = np.zeros((len(fr) - 1) * HOP + FRAME) if len(fr) else np.zeros(0)
    for i, f in enumerate(fr):
        out[i * HOP:i * HOP + FRAME] += f
    return out


def remove_silence(x, y):
    """Both signals without the frames 40 dB below the clean one's loudest."""
    fx, fy = frames(x), frames(y)
    if len(fx) == 0:
        return x[:0], y[:0]
    e = 20 * np.log10(np.linalg.norm(fx, axis=1) + 1e-20)
    keep = e > e.max() - DYN_RANGE
    return overlap_add(fx[keep]), overlap_add(fy[keep])


def envelopes(x):
    """[BANDS, frames]: one-third-octave band amplitudes of each frame."""
    spec = np.abs(np.fft.rfft(frames(x), NFFT, axis=1)) ** 2
    return np.sqrt(OBM @ spec.T)


def _unit(a, axis):
    a = a - a.mean(axis=axis, keepdims=True)
    n = np.linalg.norm(a, axis=axis, keepdims=True)
    return np.where(n > 0, a / np.where(n > 0, n, 1.0), 0.0)


def _segments(clean, processed, rate):
    """Both signals' envelope segments, [segments, BANDS, N] each; None
    when under N frames of speech remain."""
    n = min(len(clean), len(processed))
    x = resample(np.asarray(clean[:n], float), rate)
    y = resample(np.asarray(processed[:n], float), rate)
    x, y = remove_silence(x, y)
    X, Y = envelopes(x), envelopes(y)
    if X.shape[1] < N:
        return None
    segs = X.shape[1] - N + 1
    return (np.stack([X[:, m:m + N] for m in range(segs)]),
            np.stack([Y[:, m:m + N] for m in range(segs)]))


def _stoi_terms(xs, ys):
    """[segments, BANDS]: STOI's correlation of each segment and band."""
    nx = np.linalg.norm(xs, axis=2, keepdims=True)
    ny = np.linalg.norm(ys, axis=2, keepdims=True)
    yn = ys * np.where(ny > 0, nx / np.where(ny > 0, ny, 1.0), 0.0)
    yp = np.minimum(yn, xs * (1 + 10 ** (-BETA / 20)))
    return np.sum(_unit(xs, 2) * _unit(yp, 2), axis=2)


def scores(clean, processed, rate):
    """(STOI, ESTOI) of processed against clean (same rate, trimmed to the
    shorter); (nan, nan) when under N frames of speech remain."""
    segments = _segments(clean, processed, rate)
    if segments is None:
        return float("nan"), float("nan")
    xs, ys = segments
    stoi = float(np.mean(_stoi_terms(xs, ys)))
    # ESTOI: bands then frames normalised
    xe = _unit(_unit(xs, 2), 1)
    ye = _unit(_unit(ys, 2), 1)
    estoi = float(np.mean(np.sum(xe * ye, axis=1)))
    return stoi, estoi


def band_scores(clean, processed, rate):
    """STOI band by band, [BANDS] (each band's correlations' mean over the
    segments; their mean is STOI); None when under N frames of speech
    remain."""
    segments = _segments(clean, processed, rate)
    return None if segments is None else np.mean(_stoi_terms(*segments), axis=0)


def read_wav(path):
    with wave.open(path) as w:
        if w.getsampwidth() != 2:
            raise ValueError("%s: not 16-bit" % path)
        ch, rate = w.getnchannels(), w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
    return x.reshape(-1, ch).mean(axis=1), rate


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__.split("Usage: ")[1])
        return 2
    try:
        x, rx = read_wav(sys.argv[1])
        y, ry = read_wav(sys.argv[2])
    except (OSError, EOFError, ValueError, wave.Error) as e:
        sys.stderr.write("intelligibility.py: %s\n" % e)
        return 2
    if rx != ry:
        sys.stderr.write("intelligibility.py: %d Hz against %d Hz\n" % (rx, ry))
        return 2
    s, e = scores(x, y, rx)
    print("STOI %.4f ESTOI %.4f" % (s, e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
