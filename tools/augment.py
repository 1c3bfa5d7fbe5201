#!/usr/bin/python3
"""Recording conditions that real inputs bring (issue 48, item 2), applied
to a clean 16 kHz clip, deterministically (every random draw from a seed):

  level:DB        peak at DB dBFS (the issue's -40 to -3)
  rms:DB          active-speech RMS at DB dBFS after a soft limiter (tanh)
                  that keeps the peak below -1 dBFS: a loud, compressed take
  nb8k            an 8 kHz source: to 8 kHz and back to 16 kHz (nothing
                  above 4 kHz)
  tel             a telephone: band-passed 300-3400 Hz at 8 kHz, G.711
                  mu-law, back to 16 kHz
  noise:SNR[:C]   background noise at SNR dB over the active speech, C white,
                  pink (default) or brown: synthetic coloured noise, a
                  seeded Gaussian draw shaped in frequency (1/f or 1/f^2
                  power), so its level and spectrum are exact
  reverb:RT60     a room: the clip convolved with a synthetic impulse
                  response, a direct path then exponentially decaying
                  Gaussian noise of reverberation time RT60 s (60 dB decay),
                  from 2.5 ms on, direct-to-reverberant ratio 0 dB
  mic:TILT[:RES]  a microphone's colouring: a spectral tilt of TILT dB per
                  decade about 1 kHz, and a resonance of RES dB (default 0)
                  at 3 kHz (a peak about an octave wide), zero-phase
  dc:OFFSET       a DC offset of OFFSET (full scale 1)

Conditions chain left to right ("mic:-3:6,noise:20,level:-20"); the named
presets are the study's: clean, narrowband (tel), nb8k, noisy (noise:10),
quiet (level:-40), loud (rms:-12), radio (noise:10:white,ssb:50,rms:-16:
white noise on the air, the SSB channel 50 Hz off tune, and the receiver's
AGC and limiter), reverb (reverb:0.5), mic (mic:-3:6),
dc (dc:0.05).  Filtering is done on the whole clip's spectrum (numpy's FFT,
no scipy).  Active speech: the 20 ms frames within 30 dB of the clip's
loudest (the same frames for the SNR and the RMS level).

Usage: tools/augment.py IN.wav OUT.wav COND[,COND...] [--seed N]
       (16-bit WAV in and out; a sample beyond full scale is clipped and
       counted on stderr)"""
import sys
import wave

import numpy as np

RATE = 16000
PRESETS = {"clean": "", "narrowband": "tel", "nb8k": "nb8k", "noisy": "noise:10",
           "quiet": "level:-40", "loud": "rms:-12",
           "radio": "noise:10:white,ssb:50,rms:-16", "reverb": "reverb:0.5",
           "mic": "mic:-3:6", "dc": "dc:0.05"}


def read_wav(path):
    with wave.open(path) as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError("%s: not 16-bit mono" % path)
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
    return x, rate


def write_wav(path, x, rate=RATE):
    """Writes x (full scale 1) as 16-bit PCM; returns how many samples were
    clipped."""
    y = np.round(x * 32768.0)
    clipped = int(np.sum((y > 32767) | (y < -32768)))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(y, -32768, 32767).astype("<i2").tobytes())
    return clipped


def active(x, rate=RATE, floor_db=30.0):
    """Mask of the samples in active 20 ms frames (within floor_db of the
    loudest frame)."""
    hop = rate // 50
    n = max(1, len(x) // hop)
    e = np.array([np.mean(x[i * hop:(i + 1) * hop] ** 2) for i in range(n)]) + 1e-20
    on = e >= e.max() * 10 ** (-floor_db / 10)
    mask = np.repeat(on, hop)
    return np.concatenate([mask, np.full(len(x) - len(mask), on[-1])])[:len(x)]


def db(v):
    return 20 * np.log10(max(float(v), 1e-20))


def resample(x, src, dst):
    """Band-limited resampling by the whole signal's spectrum (exact for a
    rate ratio of 2: the bins above the lower Nyquist dropped or zero)."""
    n = len(x)
    m = int(round(n * dst / src))
    X = np.fft.rfft(x)
    Y = np.zeros(m // 2 + 1, complex)
    k = min(len(X), len(Y))
    Y[:k] = X[:k]
    if dst < src and m % 2 == 0:
        Y[-1] = Y[-1].real  # the new Nyquist bin of a real signal
    return np.fft.irfft(Y, m) * (m / n)


def shape(x, gain_of_f, rate=RATE):
    """x filtered by a zero-phase magnitude response gain_of_f(f in Hz)."""
    n = len(x)
    f = np.fft.rfftfreq(n, 1.0 / rate)
    return np.fft.irfft(np.fft.rfft(x) * gain_of_f(f), n)


def band(lo, hi, width=50.0):
    """A band-pass magnitude response: 1 inside [lo, hi], raised-cosine
    edges of width Hz outside, 0 beyond."""
    def g(f):
        out = np.ones_like(f)
        if lo > 0:
            t = np.clip((lo - f) / width, 0, 1)
            out *= np.where(f < lo - width, 0.0, 0.5 + 0.5 * np.cos(np.pi * t))
        t = np.clip((f - hi) / width, 0, 1)
        out *= np.where(f > hi + width, 0.0, 0.5 + 0.5 * np.cos(np.pi * t))
        return out
    return g


def shift(x, hz, rate):
    """x with every frequency component moved up by hz (down if negative),
    by its analytic signal; what would cross 0 Hz or Nyquist is dropped."""
    n = len(x)
    X = np.fft.fft(x)
    f = np.fft.fftfreq(n, 1.0 / rate)
    X[f < 0] = 0.0
    X[f > 0] *= 2.0
    k = int(round(hz * n / rate))  # whole bins: exact, and no leakage
    Y = np.roll(X, k)
    if k > 0:
        Y[:k] = 0.0
    elif k < 0:
        Y[k:] = 0.0
    Y[np.fft.fftfreq(n, 1.0 / rate) < 0] = 0.0
    return np.fft.ifft(Y).real


def mulaw(x, mu=255.0):
    """G.711-like mu-law: compressed, quantised to 8 bits, expanded."""
    y = np.sign(x) * np.log1p(mu * np.minimum(np.abs(x), 1.0)) / np.log1p(mu)
    y = np.round(y * 127.0) / 127.0
    return np.sign(y) * ((1 + mu) ** np.abs(y) - 1) / mu


def noise(n, colour, rng, rate=RATE):
    """Gaussian noise of power spectrum 1 (white), 1/f (pink) or 1/f^2
    (brown), above 20 Hz, unit variance."""
    w = rng.standard_normal(n)
    p = {"white": 0.0, "pink": 0.5, "brown": 1.0}[colour]
    if p:
        w = shape(w, lambda f: np.maximum(f, 20.0) ** -p, rate)
    return w / np.sqrt(np.mean(w ** 2))


def room(rt60, rng, rate=RATE):
    """A synthetic impulse response: 1 at t=0, then from 2.5 ms Gaussian
    noise decaying 60 dB in rt60 seconds, scaled to the direct path's energy
    (direct-to-reverberant ratio 0 dB)."""
    n = int(rate * rt60 * 1.2)
    t = np.arange(n) / rate
    tail = rng.standard_normal(n) * np.exp(-3 * np.log(10) * t / rt60)
    tail[:int(0.0025 * rate)] = 0.0
    tail /= np.sqrt(np.sum(tail ** 2))
    h = tail
    h[0] = 1.0
    return h


def mic_response(tilt, res):
    def g(f):
        lf = np.log10(np.maximum(f, 20.0) / 1000.0)
        peak = res * np.exp(-0.5 * (np.log2(np.maximum(f, 20.0) / 3000.0) / 0.5) ** 2)
        return 10 ** ((tilt * lf + peak) / 20)
    return g


def apply(x, cond, seed=0):
    """x (16 kHz, full scale 1) under the conditions cond (a preset or a
    comma-separated chain); the seed fixes every random draw."""
    chain = ",".join(PRESETS.get(c, c) for c in cond.split(","))
    rng = np.random.default_rng(seed)
    for c in [c for c in chain.split(",") if c]:
        k, *arg = c.split(":")
        if k == "level":
            x = x * 10 ** (float(arg[0]) / 20) / max(np.abs(x).max(), 1e-12)
        elif k == "rms":
            m = active(x)
            want, lim = 10 ** (float(arg[0]) / 20), 10 ** (-1 / 20)
            g = want / np.sqrt(np.mean(x[m] ** 2))
            for _ in range(20):  # the gain that lands the limited RMS on DB
                got = np.sqrt(np.mean((lim * np.tanh(g * x[m] / lim)) ** 2))
                g *= want / got
            x = lim * np.tanh(g * x / lim)
        elif k == "nb8k":
            x = resample(resample(x, RATE, 8000), 8000, RATE)
        elif k == "tel":
            y = shape(resample(x, RATE, 8000), band(300, 3400), 8000)
            x = resample(mulaw(y), 8000, RATE)
            x = shape(x, band(0, 3900, 50))  # mu-law's noise above the band
        elif k == "ssb":
            y = shape(resample(x, RATE, 8000), band(300, 2700), 8000)
            x = resample(shift(y, float(arg[0]), 8000), 8000, RATE)
        elif k == "noise":
            snr = float(arg[0])
            colour = arg[1] if len(arg) > 1 else "pink"
            m = active(x)
            ps = np.mean(x[m] ** 2)
            nz = noise(len(x), colour, rng)
            nz *= np.sqrt(ps / np.mean(nz[m] ** 2) * 10 ** (-snr / 10))
            x = x + nz
        elif k == "reverb":
            h = room(float(arg[0]), rng)
            n = len(x) + len(h) - 1
            nfft = 1 << (n - 1).bit_length()
            y = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(h, nfft), nfft)[:len(x)]
            x = y * np.abs(x).max() / max(np.abs(y).max(), 1e-12)  # the peak kept
        elif k == "mic":
            x = shape(x, mic_response(float(arg[0]), float(arg[1]) if len(arg) > 1 else 0.0))
        elif k == "dc":
            x = x + float(arg[0])
        else:
            raise ValueError("unknown condition '%s'" % c)
    return x


def main():
    import argparse
    ap = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1])
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("cond")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    try:
        x, rate = read_wav(a.inp)
        if rate != RATE:
            raise ValueError("%s: %d Hz, not %d" % (a.inp, rate, RATE))
        y = apply(x, a.cond, a.seed)
    except (ValueError, OSError, EOFError, wave.Error, IndexError) as e:
        sys.stderr.write("augment.py: %s\n" % e)
        return 2
    clipped = write_wav(a.out, y)
    if clipped:
        sys.stderr.write("augment.py: %d samples clipped\n" % clipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
