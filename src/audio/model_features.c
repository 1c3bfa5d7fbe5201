/* The audio features a model was trained on, as its checkpoint's
 * features.* metadata (frae_audio.h): the one writer and the one reader
 * of them, for the CLI and Python alike, so that both take or refuse the
 * same files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "frae_audio.h"
#include "io/formats.h" /* frae_errorf */

/* frae_features' fields in order, from sample_rate to scale */
static const char *const keys[FRAE_FEATURES_META] = {
    "features.sample_rate", "features.n_mels", "features.hop",
    "features.win",         "features.n_fft",  "features.fmin",
    "features.fmax",        "features.floor",  "features.offset",
    "features.scale"};

int frae_features_meta(const frae_features *f, char (*vals)[64],
                       frae_meta *meta)
{
    const double v[] = {f->sample_rate, f->n_mels, f->hop,  f->win,
                        f->n_fft,       f->fmin,   f->fmax, f->floor,
                        f->offset,      f->scale};
    for (int i = 0; i < FRAE_FEATURES_META; i++) {
        snprintf(vals[i], 64, "%.9g", v[i]);
        meta[i] = (frae_meta){keys[i], vals[i]};
    }
    return FRAE_FEATURES_META;
}

int frae_checkpoint_features(const frae_checkpoint *ck, frae_features *f,
                             char *err, size_t errlen)
{
    double v[FRAE_FEATURES_META];
    int present = 0, bad = -1;
    for (int i = 0; i < FRAE_FEATURES_META; i++) {
        const char *s = frae_checkpoint_meta(ck, keys[i]);
        char *end;
        if (!s)
            continue;
        present++;
        v[i] = strtod(s, &end);
        /* the first five are integers of at most a million or so */
        if (bad < 0 && (!*s || *end || !isfinite(v[i]) ||
                        (i < 5 && (v[i] != floor(v[i]) || fabs(v[i]) > 1e7))))
            bad = i;
    }
    if (present == 0)
        return 0;
    if (present < FRAE_FEATURES_META)
        return frae_errorf(err, errlen,
                           "bad audio feature metadata ('features.*' "
                           "incomplete)");
    if (bad >= 0)
        return frae_errorf(err, errlen,
                           "bad audio feature metadata ('%s' invalid)",
                           keys[bad]);
    frae_features g = {(int)v[0],
                       (int)v[1],
                       (int)v[2],
                       (int)v[3],
                       (int)v[4],
                       (float)v[5],
                       (float)v[6],
                       (float)v[7],
                       (float)v[8],
                       (float)v[9],
                       0};
    g.pitch = frae_checkpoint_meta(ck, "frae.pitch") != NULL;
    char why[384];
    if (frae_features_check(&g, why, sizeof why))
        return frae_errorf(err, errlen, "bad audio feature metadata: %s", why);
    *f = g;
    return 1;
}
