/* libFuzzer target for safetensors: a checkpoint opened as 'frae info',
 * 'predict' and '--resume' open it (header, metadata, config, tensors
 * checked before the model is made, values), its audio features read as
 * the commands and Python read them, and the same bytes imported
 * as a PyTorch state_dict.  Fuzzing builds skip the checksum comparison
 * (FRAE_FUZZING), so mutations reach what lies behind it. */
#include <stdint.h>
#include <stdlib.h>

#include "core/frae_internal.h"
#include "frae_audio.h"
#include "fuzz_common.h"
#include "io/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    char err[512] = "";
    frae_checkpoint *ck =
        frae_checkpoint_parse(buf, size, "fuzz.safetensors", err, sizeof err);
    frae_features f;
    if (ck && frae_checkpoint_features(ck, &f, err, sizeof err) < 0) {
        fuzz_check_error(err);
        err[0] = 0;
    }
    frae_config c;
    if (!ck || frae_checkpoint_config(ck, &c, err, sizeof err)) {
        fuzz_check_error(err);
    } else {
        c.training = 1;
        c.batch = 2;
        c.window = 3;
        if (c.weights == FRAE_WEIGHTS_BF16)
            c.training = 0;
        frae_model *m = frae_create(&c, err, sizeof err);
        if (!m || frae_checkpoint_restore(ck, m, 1, err, sizeof err))
            fuzz_check_error(err);
        int32_t order[16];
        frae_checkpoint_i32(ck, "train.order", order, 16);
        frae_destroy(m);
    }
    frae_checkpoint_close(ck);

    frae_config hints;
    frae_config_default(&hints);
    hints.training = 0;
    err[0] = 0;
    frae_model *imported = frae_import_buffer(buf, size, "fuzz.safetensors",
                                              &hints, err, sizeof err);
    if (!imported)
        fuzz_check_error(err);
    frae_destroy(imported);
    free(buf);
    return 0;
}
