/* Built-in synthetic data: smooth, deterministic, multi-dimensional.
 * Each dimension of each sequence is a sum of three sinusoids whose
 * frequency, phase and amplitude are drawn from the seed, with a slow
 * envelope, so frames are strongly correlated in time (what an FRAE's
 * feedback exploits) and across neighbouring dimensions. */
#include <math.h>

#include "core/frae_internal.h"

void frae_synth_sequences(float *dst, int nseq, int nframes, int dim,
                          uint64_t seed)
{
    const double two_pi = 6.283185307179586;
    uint64_t rng = seed ^ 0x5eedf00dull;
    for (int s = 0; s < nseq; s++) {
        /* per-sequence "speaker": a shared set of modes, shaped per dim */
        double freq[3], phase[3], amp[3], tilt = frae_rng_uniform(&rng);
        for (int k = 0; k < 3; k++) {
            freq[k] = 0.005 + 0.06 * frae_rng_uniform(&rng);
            phase[k] = two_pi * frae_rng_uniform(&rng);
            amp[k] = 0.2 + 0.3 * frae_rng_uniform(&rng);
        }
        for (int t = 0; t < nframes; t++) {
            double env = 0.6 + 0.4 * sin(two_pi * 0.004 * t + phase[0]);
            for (int d = 0; d < dim; d++) {
                double u = (double)d / (dim > 1 ? dim - 1 : 1), v = 0.0;
                for (int k = 0; k < 3; k++)
                    v += amp[k] * sin(two_pi * freq[k] * t + phase[k] +
                                      (k + 1) * 3.0 * u);
                v = env * v + 0.3 * (tilt - 0.5) * (1.0 - 2.0 * u);
                dst[((size_t)s * nframes + t) * dim + d] = (float)v;
            }
        }
    }
}
