/* Shared inside libfrae-audio: the analysis the vocoder inverts. */
#ifndef FRAE_AUDIO_INTERNAL_H
#define FRAE_AUDIO_INTERNAL_H

#include "frae_audio.h"

/* Weight of FFT bin `bin` in mel filter `band` (triangular, HTK mel, peak
 * 1): the one definition the features and the vocoder use. */
double frae_mel_weight(const frae_features *f, int band, int bin);

/* In-place radix-2 complex FFT of re, im (n a power of two; inverse:
 * conjugate twiddles, no 1/n): frae's own, so that the vocoder's and the
 * polish's samples are the same bits on every machine (FFTW's codelets
 * differ by CPU).  twiddle: n/2 (cos, sin) pairs, frae_fft_twiddles's. */
void frae_fft_twiddles(int n, float *twiddle);
void frae_fft(float *re, float *im, int n, const float *twiddle, int inverse);
/* The same for n real samples, by one complex FFT of n/2 points: x's
 * spectrum X[0..n/2] into re, im (n/2 + 1 each), and back (re, im
 * overwritten; x scaled by n).  twiddle_half: frae_fft_twiddles(n/2). */
void frae_fft_real(const float *x, float *re, float *im, int n,
                   const float *twiddle_half, const float *twiddle);
void frae_fft_real_inverse(float *re, float *im, float *x, int n,
                           const float *twiddle_half, const float *twiddle);

/* The pitch tracker's last step (pitch.c): f0 (Hz, a voiced reading of the
 * span) moved within +-60 cents, in 5-cent steps, to where the mean
 * |X|^(1/2) of its harmonics up to 3.5 kHz in the span's Hann-windowed
 * spectrum is largest, unless its harmonics above the first do not stand
 * above the valleys below them; anything else back as it came.  Exposed
 * for its test against tools/pitch_refine_ref.py. */
float frae_f0_refine(frae_f0 *p, const float *span, float f0);

/* ---- Polish (polish.c) ------------------------------------------------------
 * The vocoder's samples made to analyse back to the frames' mel powers:
 * rounds of projection over each frame's window and the two before it. */
typedef struct frae_polish frae_polish;
frae_polish *frae_polish_create(const frae_features *f, int rounds, char *err,
                                size_t errlen);
void frae_polish_destroy(frae_polish *p);
void frae_polish_reset(frae_polish *p);
/* The most samples one call below gives. */
long frae_polish_max(const frae_polish *p);
/* Takes n samples of the vocoder's, then (frame not NULL) the next frame
 * (n_mels features, f0, voicing); writes the samples that became final
 * into out and returns their count.  last: the signal ends with these
 * samples. */
long frae_polish_push(frae_polish *p, const float *samples, long n,
                      const float *feats, int last, float *out);

#endif
