/* libFuzzer target for audio: libsndfile reads the bytes from memory
 * (virtual I/O) and frae's loader streams them through mixing,
 * resampling, the NaN check and the features, as for a file. */
#include <stdint.h>
#include <stdlib.h>

#include "frae_audio.h"
#include "fuzz_common.h"

static int discard(void *ctx, const float *feats, long frames, int n_mels)
{
    long *seen = ctx;
    volatile float sum = 0;
    for (long i = 0; i < frames * n_mels; i++)
        sum += feats[i];
    *seen += frames;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    frae_features f;
    frae_features_default(&f);
    long seen = 0, frames = 0;
    char err[512] = "";
    /* odd sizes: resampling on (the header's rate is converted); even:
     * off, so other rates are refused */
    if (frae_audio_stream_memory(data, size, "fuzz.wav", &f, size & 1,
                                 discard, &seen, &frames, err, sizeof err))
        fuzz_check_error(err);
    else if (frames != seen)
        __builtin_trap();
    return 0;
}
