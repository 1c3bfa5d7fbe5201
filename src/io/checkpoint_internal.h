/* Shared by checkpoint.c and import.c: saving a model under a given
 * config, and reading tensors of a checkpoint into a model or an array. */
#ifndef FRAE_IO_CHECKPOINT_INTERNAL_H
#define FRAE_IO_CHECKPOINT_INTERNAL_H

#include "core/frae_internal.h"
#include "io/formats.h"

/* An open checkpoint (frae.h): its safetensors and the path it came from. */
struct frae_checkpoint {
    frae_safetensors st;
    char path[1024];
};

/* Saves m; c gives the settings recorded in the metadata (m's own, or the
 * saved ones of a model converted at a smaller run-time size). */
int frae_checkpoint_save_as(const frae_model *m, const frae_config *c,
                            const char *path, int with_optimizer,
                            const frae_meta *meta, int n_meta,
                            const frae_i32_array *extra, int n_extra, char *err,
                            size_t errlen);
/* Reads tensors "<prefix><tensor>" into a packed param array (dst), or
 * into the model's weights (dst NULL). */
int frae_checkpoint_read_params(const frae_safetensors *st, frae_model *m,
                                const char *prefix, float *dst,
                                const char *path, char *err, size_t errlen);

#endif
