/* The DTX gate (frae_audio.h): which frames of log-mel features are
 * silence, for a codec that sends silence as a flag (frae.h,
 * frae_stream_options.dtx).  A level gate with a hangover: a frame is
 * silent once it and the FRAE_DTX_HANGOVER frames before it are below
 * the level, so a word's tail is still coded and the frame the decoder
 * repeats is a quiet one.  0 dB is a full-scale 1 kHz sine's frames
 * through the same features. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf */

/* A frame's level in dB: its mel power summed (the features are
 * log-power, scaled: scale x value - offset is the natural log of it). */
static double frame_level_db(const frae_features *f, const float *x)
{
    double power = 0.0;
    for (int b = 0; b < f->n_mels; b++)
        power += exp((double)x[b] * f->scale - f->offset);
    return 10.0 * log10(power > 1e-30 ? power : 1e-30);
}

/* The level of a full-scale 1 kHz sine's middle frame through f: the
 * gate's 0 dB.  NAN if the features cannot be made. */
static double full_scale_db(const frae_features *f)
{
    char err[256];
    frae_mel *mel = frae_mel_create(f, err, sizeof err);
    const long n = f->win + 8L * f->hop;
    float *samples = malloc(sizeof(float) * (size_t)n);
    const long frames = mel ? frae_mel_frames(mel, n) : 0;
    float *feats = malloc(sizeof(float) * (size_t)(frames > 0 ? frames : 1) *
                          (size_t)f->n_mels);
    double db = NAN;
    if (mel && samples && feats && frames > 0) {
        const double step = 6.283185307179586 * 1000.0 / f->sample_rate;
        for (long i = 0; i < n; i++)
            samples[i] = (float)sin(step * (double)i);
        frae_mel_compute(mel, samples, n, feats);
        db = frame_level_db(f, feats + (size_t)(frames / 2) * f->n_mels);
    }
    free(samples), free(feats);
    frae_mel_destroy(mel);
    return db;
}

int frae_dtx_gate_init(frae_dtx_gate *g, const frae_features *f,
                       double level_db, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    if (!(level_db <= 0) || level_db < -200)
        return frae_errorf(err, errlen,
                           "DTX level %g dB: give -200 to 0 (0 dB: a "
                           "full-scale sine)",
                           level_db);
    if (frae_features_check(f, err, errlen))
        return -1;
    const double full = full_scale_db(f);
    if (!isfinite(full))
        return frae_errorf(err, errlen,
                           "cannot compute the features' full-scale level");
    g->features = *f;
    g->gate_db = full + level_db;
    return 0;
}

void frae_dtx_gate_reset(frae_dtx_gate *g) { g->quiet_run = 0; }

int frae_dtx_gate_silent(frae_dtx_gate *g, const float *frame)
{
    const int quiet = frame_level_db(&g->features, frame) < g->gate_db;
    g->quiet_run = quiet ? g->quiet_run + 1 : 0;
    return g->quiet_run > FRAE_DTX_HANGOVER;
}
