/* The C default model (tests/models_test.sh builds and runs this against
 * the build's libfrae.a): frae_load_shipped(NULL) without a file name, as
 * rnnoise_create(NULL) works without one; the same model as the file;
 * found again by its hash (frae_load_by_hash, frae_models_dir_find); a
 * codec state over it codes a frame; a name that is not shipped, a
 * hostile name and an empty search path fail in one line; every model
 * file walked (frae_models_each), a directory added to the search
 * (frae_models_add_dir) searched after the first.  Usage: default_model SHIPPED_FILE EMPTY_DIR */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frae_codec.h"

static int pass, fail;
static void check(int ok, const char *what)
{
    printf("    %s %s\n", ok ? "ok  " : "FAIL", what);
    ok ? pass++ : fail++;
}

/* frae_models_each's walk: files counted, the default's file used */
struct walk {
    const char *default_path;
    int files, default_used, stop;
};
static int count_model(const char *dir, const char *name, const char *path,
                       int used, void *ctx)
{
    struct walk *w = ctx;
    w->files++;
    if (!strcmp(path, w->default_path))
        w->default_used +=
            used && !strcmp(name, "speech") && !strncmp(path, dir, strlen(dir));
    return w->stop;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    char err[512], path[4096];
    frae_model *m =
        frae_load_shipped(NULL, NULL, path, sizeof path, err, sizeof err);
    check(m != NULL, m ? "frae_load_shipped(NULL): the default model" : err);
    if (!m) {
        printf("%d passed, %d failed\n", pass, fail + 1);
        return 1;
    }
    frae_model *f = frae_load(argv[1], NULL, err, sizeof err);
    check(f && frae_model_hash(frae_model_net(f)) ==
                   frae_model_hash(frae_model_net(m)),
          "it is the shipped file's model (same hash)");
    char dir[4096];
    check(frae_models_dir(0, dir, sizeof dir) == 0 && strstr(path, dir) == path,
          "found in the first models directory");
    frae_model *h = frae_load_by_hash(frae_model_hash(frae_model_net(m)), NULL,
                                      NULL, 0, err, sizeof err);
    check(h && frae_model_hash(frae_model_net(h)) ==
                   frae_model_hash(frae_model_net(m)),
          "frae_load_by_hash finds it again");
    frae_destroy(h);
    h = frae_load_by_hash(frae_model_hash(frae_model_net(m)) ^ 1, NULL, NULL, 0,
                          err, sizeof err);
    check(!h && strstr(err, "no installed model has hash") &&
              !strchr(err, '\n'),
          "an unknown hash: NULL and one line");
    frae_destroy(h);
    char found[8192];
    check(frae_models_dir_find(dir, frae_model_hash(frae_model_net(m)), found,
                               sizeof found) == 1 &&
              !strcmp(found, path),
          "frae_models_dir_find: its file in the first models directory");
    check(frae_models_dir_find(dir, frae_model_hash(frae_model_net(m)) ^ 1,
                               found, sizeof found) == 0 &&
              frae_models_dir_find(argv[2], frae_model_hash(frae_model_net(m)),
                                   found, sizeof found) == 0,
          "... 0 for an unknown hash, and in an empty directory");
    /* a codec state over it: encode and decode a frame, the decoder's
     * output the encoder's reconstruction */
    const frae_config *cfg = frae_get_config(m);
    const int width = cfg->frame_dim + (cfg->pitch ? 2 : 0);
    float in[128] = {0}, a[128], b[128];
    for (int i = 0; i < cfg->frame_dim; i++)
        in[i] = 0.5f + 0.01f * (float)i;
    if (cfg->pitch)
        in[cfg->frame_dim] = 120.0f, in[cfg->frame_dim + 1] = 1.0f;
    unsigned char code[64];
    frae_encoder *enc = frae_encoder_create(frae_model_net(m));
    frae_decoder *dec = frae_decoder_create(frae_model_net(m));
    int same = enc && dec && width <= 128 &&
               frae_code_bytes(frae_model_net(m)) <= sizeof code;
    for (int t = 0; same && t < 20; t++) {
        frae_encode_frame(enc, in, code, a);
        same = frae_decode_frame(dec, code, b) == 0 &&
               !memcmp(a, b, sizeof(float) * (size_t)width);
    }
    check(same, "a codec state over it: 20 frames decoded as encoded");
    check(frae_bits_per_frame(m) == 16.0, "16 bits a frame (1.6 kbit/s)");
    frae_encoder_destroy(enc), frae_decoder_destroy(dec);
    frae_model *v =
        frae_load_shipped("speech-vbr", NULL, NULL, 0, err, sizeof err);
    check(v && frae_get_config(v)->prior_hidden > 0,
          "frae_load_shipped(\"speech-vbr\"): the variable-rate one");
    frae_destroy(v);
    v = frae_load_shipped("no-such-model", NULL, NULL, 0, err, sizeof err);
    check(!v && strstr(err, "no shipped model 'no-such-model'"),
          "a name not shipped: NULL and one line");
    v = frae_load_shipped("../speech", NULL, NULL, 0, err, sizeof err);
    check(!v && strstr(err, "not a shipped model's name"),
          "a path as a name is refused");
    struct walk w = {path, 0, 0, 0};
    check(frae_models_each(count_model, &w) == w.files && w.files >= 2 &&
              w.default_used == 1,
          "frae_models_each: every file, the default's as used");
    struct walk stop = {path, 0, 0, 1};
    check(frae_models_each(count_model, &stop) == 1 && stop.files == 1,
          "... fn's nonzero stops the walk");
    char added[4096], last[4096];
    check(frae_models_add_dir(NULL) == -1 && frae_models_add_dir("") == -1,
          "frae_models_add_dir(NULL or \"\"): -1");
    int k = 0;
    check(frae_models_add_dir(argv[2]) == 0 &&
              frae_models_add_dir(argv[2]) == 0,
          "frae_models_add_dir(an empty directory): 0, twice");
    while (frae_models_dir(k, added, sizeof added) == 0)
        snprintf(last, sizeof last, "%s", added), k++;
    char real[4096];
    check(k >= 2 && realpath(argv[2], real) && !strcmp(last, real) &&
              frae_models_dir(0, added, sizeof added) == 0 &&
              !strcmp(added, dir),
          "... searched once, after the directory beside the program");
    struct walk again = {path, 0, 0, 0};
    check(frae_models_each(count_model, &again) == w.files,
          "... an empty one adds no model");
    setenv("FRAE_MODELS", argv[2], 1);
    v = frae_load_shipped(NULL, NULL, NULL, 0, err, sizeof err);
    check(!v && strstr(err, "no shipped model 'speech'"),
          "FRAE_MODELS at an empty directory: only it is searched");
    frae_destroy(f), frae_destroy(m);
    printf("%d passed, %d failed\n", pass, fail);
    return fail != 0;
}
