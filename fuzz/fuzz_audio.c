/* libFuzzer target for audio: libsndfile reads the bytes from memory
 * (virtual I/O) and frae's loader streams them through mixing,
 * resampling, the NaN check and the features, as for a file; in half the
 * inputs (bit 1 of the size) with pitch, through the f0 tracker too, whose
 * f0 must come out 0 or in 50..600 Hz, never NaN. */
#include <stdint.h>
#include <stdlib.h>

#include "frae_audio.h"
#include "fuzz_common.h"

static int discard(void *ctx, const float *feats, long frames, int width)
{
    long *seen = ctx;
    volatile float sum = 0;
    for (long i = 0; i < frames * width; i++)
        sum += feats[i];
    if (width == 82) /* 80 mels, f0, voicing */
        for (long t = 0; t < frames; t++) {
            float f0 = feats[t * width + 80], v = feats[t * width + 81];
            if (!(v == 0.0f || v == 1.0f) ||
                !(f0 == 0.0f || (f0 >= 50.0f && f0 <= 600.0f)))
                __builtin_trap();
        }
    *seen += frames;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frae_features f;
    frae_features_default(&f);
    f.pitch = size >> 1 & 1;
    long seen = 0, frames = 0;
    char err[512] = "";
    /* odd sizes: resampling on (the header's rate is converted); even:
     * off, so other rates are refused */
    if (frae_audio_stream_memory(data, size, "fuzz.wav", &f, size & 1, discard,
                                 &seen, &frames, err, sizeof err))
        fuzz_check_error(err);
    else if (frames != seen)
        __builtin_trap();
    return 0;
}
