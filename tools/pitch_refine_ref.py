#!/usr/bin/python3
"""The numpy reference of the pitch tracker's last step, frae_f0_refine
(src/audio/pitch.c): a voiced frame's f0 moved within +-60 cents, in
5-cent steps, to where the mean |X|^(1/2) of its harmonics up to 3.5 kHz
in the span's Hann-windowed spectrum is largest.  The
spectrum is zero-padded to the smallest power of two that holds the span
and has bins of 4 Hz or finer (4096 points at 16 kHz), read between bins by
linear interpolation.  Candidates outside 50-600 Hz are not read; the first
of equal scores wins; where the chosen harmonics above the first do not
stand above the valleys halfway below them (a pure tone), the f0 stays as
it came.  Everything here is float64; frae's is float32 where
the spectrum is, so a near-tie may fall the other way (the margin says how
near).

Usage: tools/pitch_refine_ref.py --write tests/fixtures/pitch_refine.bin
writes the fixture tests/c/test_audio.c checks frae_f0_refine against:
spans of synthetic voices (harmonics under a formant envelope, with
vibrato, noise, f0 at the search's ends, pure tones) and YIN-like readings of them
off by up to 50 cents, each with the reference's answer, its margin over
the runner-up (relative) and the voice's true f0 at the span's centre."""
import argparse
import struct

import numpy as np

F0_MIN_HZ, F0_MAX_HZ = 50.0, 600.0
HI_HZ, BIN_HZ = 3500.0, 4.0
RATIOS = [2.0 ** (c / 1200) for c in range(-60, 61, 5)]  # pitch.c's literals


def n_fft_of(span_len, rate):
    n = 2
    while n < span_len or rate / n > BIN_HZ:
        n *= 2
    return n


def refine(span, f0, rate=16000, n_fft=None, valleys=True):
    """(refined f0, margin): margin is the smaller of (best - runner-up) /
    best of the candidates' scores and |upper - valleys| / upper (its
    harmonics above the first against the valleys below them), inf
    when there is nothing to compare.  n_fft: another FFT size; valleys
    False: no valley test (tools/pitch_path_study.py's model, which had
    neither)."""
    f0 = float(f0)
    if not (F0_MIN_HZ <= f0 <= F0_MAX_HZ):
        return f0, np.inf
    x = np.where(np.isfinite(span), span, 0.0).astype(np.float64)
    n = n_fft or n_fft_of(len(x), rate)
    root_mag = np.abs(np.fft.rfft(x * np.hanning(len(x)), n)) ** 0.5
    hi = min(HI_HZ, 0.45 * rate)

    def harmonic_mean(hz, first, shift):  # pitch.c's: shift 0 the harmonics, 0.5 the valleys
        k = np.arange(first, int(hi / hz) + 1)
        return np.interp((k - shift) * hz * n / rate, np.arange(len(root_mag)), root_mag).mean() if len(k) else -1.0

    scores = [(harmonic_mean(f0 * r, 1, 0.0), f0 * r) for r in RATIOS if F0_MIN_HZ <= f0 * r <= F0_MAX_HZ]
    if not scores:
        return f0, np.inf
    best = max(range(len(scores)), key=lambda i: (scores[i][0], -i))
    top, hz = scores[best]
    rest = [s for i, (s, _) in enumerate(scores) if i != best]
    margin = (top - max(rest)) / top if rest and top > 0 else np.inf
    upper, valley = harmonic_mean(hz, 2, 0.0), harmonic_mean(hz, 2, 0.5)
    margin = min(margin, abs(upper - valley) / upper if upper > 0 else np.inf)
    return (hz if upper > valley or not valleys else f0), margin


def voice(rate, n, f0_at, rng, formants, noise_db=None):
    """n samples of harmonics of f0_at(t) (Hz) under formants [(Hz, bw)],
    random phases, and white noise noise_db below it (None: none)."""
    t = np.arange(n) / rate
    phase = 2 * np.pi * np.cumsum(f0_at(t)) / rate
    x = np.zeros(n)
    top = int(0.45 * rate / f0_at(t).min())
    for k in range(1, top + 1):
        hz = k * f0_at(t)
        gain = sum(1 / (1 + ((hz - fc) / bw) ** 2) for fc, bw in formants) / k ** 0.5
        x += np.where(hz < 0.45 * rate, gain, 0) * np.sin(k * phase + rng.uniform(0, 2 * np.pi))
    x *= 0.3 / np.sqrt(np.mean(x ** 2))
    if noise_db is not None:
        x += rng.normal(0, 0.3 * 10 ** (-noise_db / 20), n)
    return x


def cases(rate=16000, span=640):
    """(span float32, f0 read, true f0) of the fixture's voices."""
    rng = np.random.default_rng(20261208)
    out = []
    formant_sets = [[(700, 130), (1200, 150), (2600, 250)], [(300, 60), (2300, 200), (3000, 300)],
                    [(500, 90), (900, 120), (2400, 200)]]
    truths = np.exp(np.linspace(np.log(55), np.log(590), 24))
    for i, f0 in enumerate(truths):
        for kind in ("steady", "vibrato", "noisy"):
            offset = rng.uniform(-50, 50)
            depth = 0.03 if kind == "vibrato" else 0.0
            f0_at = lambda t, f0=f0, depth=depth: f0 * (1 + depth * np.sin(2 * np.pi * 6 * (t - span / 2 / rate)))
            x = voice(rate, span, f0_at, rng, formant_sets[i % 3], 10.0 if kind == "noisy" else None)
            read = min(max(f0 * 2 ** (offset / 1200), F0_MIN_HZ), F0_MAX_HZ)  # YIN's clamp
            out.append((x.astype(np.float32), np.float32(read), f0))
    # at the search's ends, and readings that are not voiced or not f0s
    x = voice(rate, span, lambda t: np.full_like(t, 52.0), rng, formant_sets[0])
    out.append((x.astype(np.float32), np.float32(51.0), 52.0))
    x = voice(rate, span, lambda t: np.full_like(t, 598.0), rng, formant_sets[1])
    out.append((x.astype(np.float32), np.float32(599.0), 598.0))
    out.append((x.astype(np.float32), np.float32(0.0), 0.0))
    for hz in (52.0, 110.0, 230.0):  # pure tones: no harmonics above the first
        tone = 0.5 * np.sin(2 * np.pi * hz * np.arange(span) / rate + rng.uniform(0, 2 * np.pi))
        out.append((tone.astype(np.float32), np.float32(hz * 1.004), hz * 1.004))
    out.append((np.zeros(span, np.float32), np.float32(150.0), 0.0))
    y = x.astype(np.float32).copy()
    y[100] = np.nan
    y[300] = np.inf
    out.append((y, np.float32(598.0), 598.0))
    return out


def write_fixture(path):
    rows = cases()
    spans = np.stack([r[0] for r in rows])
    f0_in = np.array([r[1] for r in rows], np.float32)
    got = [refine(r[0], r[1]) for r in rows]
    tensors = {"spans": spans, "f0_in": f0_in,
               "f0_out": np.array([g[0] for g in got], np.float32),
               "margin": np.array([min(g[1], 1e30) for g in got], np.float32),
               "truth": np.array([r[2] for r in rows], np.float32)}
    with open(path, "wb") as f:  # FRAEFIX1, as tools/export_fixtures.py writes
        f.write(b"FRAEFIX1" + struct.pack("<I", len(tensors)))
        for name, t in tensors.items():
            f.write(struct.pack("<I", len(name)) + name.encode())
            f.write(struct.pack("<I", t.ndim) + struct.pack("<%dI" % t.ndim, *t.shape))
            f.write(np.ascontiguousarray(t, "<f4").tobytes())
    err = [abs(1200 * np.log2(g[0] / r[2])) for g, r in zip(got, rows) if r[2] > 0 and r[1] > 0]
    print("%s: %d spans; refined f0 off the truth by %.1f cents at most, %.1f on average; "
          "smallest margin %.2g" % (path, len(rows), max(err), np.mean(err), min(g[1] for g in got)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1])
    ap.add_argument("--write", required=True, metavar="PATH")
    write_fixture(ap.parse_args().write)
