/* libFuzzer target for the range decoder: any bytes decode, in bounded
 * time and never past the buffer, to symbols in range; and whatever
 * symbols come out, encoding them and decoding again gives them back.
 * The first byte picks the alphabet (2..65 symbols) and the shape of its
 * distribution; the rest is the stream. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "frae_codec.h"

enum { MAX_SYMBOLS = 4096 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const int n = 2 + (data[0] & 63);
    float p[66];
    for (int i = 0; i < n; i++) /* skewed by the top bits: peaked to flat */
        p[i] = (float)exp(-(double)((data[0] >> 6) + 1) * i * 0.7);
    uint32_t freq[66];
    if (frae_quantize_pmf(p, n, freq))
        __builtin_trap();
    /* a private copy sized exactly: ASan sees any read past the end */
    const size_t len = size - 1;
    unsigned char *buf = malloc(len ? len : 1);
    memcpy(buf, data + 1, len);
    static int sym[MAX_SYMBOLS], again[MAX_SYMBOLS];
    static unsigned char out[4 * MAX_SYMBOLS + 64];
    const int count = (int)(len * 8 < MAX_SYMBOLS ? len * 8 + 1 : MAX_SYMBOLS);
    frae_range_dec d;
    frae_range_dec_init(&d, buf, len);
    for (int t = 0; t < count; t++) {
        sym[t] = frae_range_decode_symbol(&d, freq, n);
        if (sym[t] < 0 || sym[t] >= n)
            __builtin_trap();
    }
    frae_range_enc e;
    frae_range_enc_init(&e, out, sizeof out);
    for (int t = 0; t < count; t++)
        frae_range_encode_symbol(&e, freq, sym[t]);
    size_t bytes = frae_range_enc_finish(&e);
    if (!bytes && count > 0 && e.overflow)
        __builtin_trap();
    frae_range_dec_init(&d, out, bytes);
    for (int t = 0; t < count; t++)
        again[t] = frae_range_decode_symbol(&d, freq, n);
    if (memcmp(sym, again, sizeof(int) * (size_t)count) ||
        frae_range_dec_status(&d))
        __builtin_trap();
    free(buf);
    return 0;
}
