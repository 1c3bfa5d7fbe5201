/* libFuzzer target for the .npz reader (libzip: the zip directory, zip64,
 * stored and deflated members, frae's size bounds) and the Keras import
 * behind it: each member's .npy header, the shapes that make a model, and
 * its values. */
#include <stdint.h>
#include <stdlib.h>

#include "core/frae_internal.h"
#include "fuzz_common.h"
#include "io/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    frae_npz_member mem[8];
    char err[512] = "";
    int n = frae_npz_read(buf, size, "fuzz.npz", mem, 8, err, sizeof err);
    if (n < 0)
        fuzz_check_error(err);
    else
        frae_npz_free(mem, n);
    frae_config hints;
    frae_config_default(&hints);
    hints.training = 0;
    err[0] = 0;
    frae_model *m =
        frae_import_buffer(buf, size, "fuzz.npz", &hints, err, sizeof err);
    if (!m)
        fuzz_check_error(err);
    frae_destroy(m);
    free(buf);
    return 0;
}
