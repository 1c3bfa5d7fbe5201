/* Shared inside libfrae-audio: the analysis the vocoder inverts. */
#ifndef FRAE_AUDIO_INTERNAL_H
#define FRAE_AUDIO_INTERNAL_H

#include "frae_audio.h"

/* Weight of FFT bin `bin` in mel filter `band` (triangular, HTK mel, peak
 * 1): the one definition the features and the vocoder use. */
double frae_mel_weight(const frae_features *f, int band, int bin);

#endif
