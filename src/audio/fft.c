/* frae's own radix-2 FFT (audio_internal.h): plain float arithmetic in a
 * fixed order, so that what the vocoder and the polish make is the same
 * bits on every machine and instruction set, where FFTW's codelets are
 * chosen by CPU and round differently. */
#include <math.h>

#include "audio/audio_internal.h"

#define PI 3.14159265358979323846

void frae_fft_twiddles(int n, float *twiddle)
{
    for (int k = 0; k < n / 2; k++) {
        twiddle[2 * k] = (float)cos(2 * PI * k / n);
        twiddle[2 * k + 1] = (float)sin(2 * PI * k / n);
    }
}

void frae_fft(float *re, float *im, int n, const float *twiddle, int inverse)
{
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            float t = re[i];
            re[i] = re[j], re[j] = t;
            t = im[i];
            im[i] = im[j], im[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        const int step = n / len;
        for (int i = 0; i < n; i += len)
            for (int k = 0; k < len / 2; k++) {
                float c = twiddle[2 * k * step];
                float s = twiddle[2 * k * step + 1];
                if (!inverse)
                    s = -s;
                int a = i + k, b = a + len / 2;
                float tr = re[b] * c - im[b] * s, ti = re[b] * s + im[b] * c;
                re[b] = re[a] - tr, im[b] = im[a] - ti;
                re[a] += tr, im[a] += ti;
            }
    }
}

/* The spectrum X[0..n/2] of n real samples x, by one complex FFT of n/2
 * points: z[m] = x[2m] + i x[2m+1], Z its FFT, then X[k] = E[k] + W^k O[k]
 * with E[k] = (Z[k] + conj Z[n/2-k]) / 2, O[k] = (Z[k] - conj Z[n/2-k]) /
 * 2i and W = e^(-2 pi i / n).  re, im: n/2 + 1 values. */
void frae_fft_real(const float *x, float *re, float *im, int n,
                   const float *twiddle_half, const float *twiddle)
{
    const int m = n / 2;
    for (int j = 0; j < m; j++)
        re[j] = x[2 * j], im[j] = x[2 * j + 1];
    frae_fft(re, im, m, twiddle_half, 0);
    re[m] = re[0], im[m] = im[0];
    for (int k = 0; k <= m / 2; k++) {
        const int j = m - k;
        const float er = 0.5f * (re[k] + re[j]), ei = 0.5f * (im[k] - im[j]);
        const float odr = 0.5f * (im[k] + im[j]), odi = 0.5f * (re[j] - re[k]);
        const float c = twiddle[2 * k], s = twiddle[2 * k + 1];
        /* W^k O[k], W^k = c - i s; at n/2 - k, E and O conjugated and
         * W^(n/2-k) = -conj W^k */
        const float wr = odr * c + odi * s, wi = odi * c - odr * s;
        re[k] = er + wr, im[k] = ei + wi;
        re[j] = er - wr, im[j] = wi - ei;
    }
}

/* n real samples, scaled by n (as the complex inverse without 1/n), from
 * the spectrum X[0..n/2] in re, im (both overwritten): Z[k] = A + i W^-k D
 * with A = X[k] + conj X[n/2-k], D = X[k] - conj X[n/2-k], its inverse FFT
 * of n/2 points, x[2m] its real parts, x[2m+1] its imaginary ones. */
void frae_fft_real_inverse(float *re, float *im, float *x, int n,
                           const float *twiddle_half, const float *twiddle)
{
    const int m = n / 2;
    for (int k = 0; k <= m / 2; k++) {
        const int j = m - k;
        const float sr = re[k] + re[j], si = im[k] - im[j];
        const float dr = re[k] - re[j], di = im[k] + im[j];
        const float c = twiddle[2 * k], s = twiddle[2 * k + 1];
        /* t = W^-k D; Z[k] = A + i t; at n/2 - k, A and t conjugated */
        const float tr = dr * c - di * s, ti = dr * s + di * c;
        re[k] = sr - ti, im[k] = si + tr;
        re[j] = sr + ti, im[j] = tr - si;
    }
    frae_fft(re, im, m, twiddle_half, 1);
    for (int j = 0; j < m; j++)
        x[2 * j] = re[j], x[2 * j + 1] = im[j];
}
