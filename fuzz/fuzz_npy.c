/* libFuzzer target for the .npy reader: the header parser, the frame
 * view, the finiteness check and every value read back. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "io/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy sized exactly: ASan sees any read past the end */
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    frae_npy a;
    char err[512] = "";
    if (frae_npy_parse(buf, size, "fuzz.npy", &a, err, sizeof err) ||
        frae_npy_frames(&a, "fuzz.npy", err, sizeof err) ||
        frae_npy_check_finite(&a, "fuzz.npy", err, sizeof err)) {
        fuzz_check_error(err);
    } else {
        float frame[64];
        for (long s = 0; s < a.n && s < 16; s++)
            for (long t = 0; t < a.t && t < 16; t++)
                if (a.d <= 64)
                    frae_npy_read(&a, s, t, 1, frame);
    }
    free(buf);
    return 0;
}
