/* Minimal test harness: each test is a function returning the number of
 * failed checks; test_main.c runs them all and prints "N passed, N failed". */
#ifndef FRAE_TEST_UTIL_H
#define FRAE_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h" /* frae_synth_sequences */
#include "frae.h"
#include "frae_codec.h"

/* What a test returns when it would compare nothing on this machine. */
#define TEST_SKIPPED (-1)
#define SKIP_IF(cond, why)                                                     \
    do {                                                                       \
        if (cond) {                                                            \
            printf("    skipped: %s\n", why);                                  \
            return TEST_SKIPPED;                                               \
        }                                                                      \
    } while (0)

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            printf("    FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* Max |a - b| over n values, divided by max |b| (the reference). */
double max_rel_diff(const float *a, const float *b, size_t n);
double max_rel_diff_d(const float *a, const double *b, size_t n);

/* A small config, everything set (Keras Adam defaults, seed 3). */
void tiny_config(frae_config *c, int D, int K, int ne, const int *enc, int L,
                 int nd, const int *dec);
float *synth(int nseq, int nframes, int dim, uint64_t seed);
frae_model *create_or_die(const frae_config *c);

/* ISAs this CPU runs, scalar first (FRAE_TEST_ISAS=scalar pretends the
 * CPU has no SIMD: for checking that such tests skip). */
int available_isas(frae_isa *out);
/* A model of config c on ISA isa holding m's parameters (the same model,
 * other kernels: its outputs must be m's bit for bit). */
frae_model *model_on_isa(const frae_model *m, const frae_config *c,
                         frae_isa isa);

/* Layer shapes of cfg in parameter order; returns the number of layers. */
int layer_shapes(const frae_config *c, int *in, int *out);
/* Sets the params of m to its init plus a deterministic non-zero offset on
 * every value (biases included); writes them to params if non-NULL. */
void perturb_params(frae_model *m, float *params);

/* Fixtures committed under tests/fixtures: "FRAEFIX1", a u32 count, then
 * per tensor a u32 name length, the name, u32 ndim, u32 dims, float32 data
 * (little-endian; tools/export_fixtures.py writes them). */
#define MAX_TENSORS 256
typedef struct {
    char name[64];
    int ndim;
    uint32_t dims[4];
    size_t count;
    const float *data;
} fix_tensor;
typedef struct {
    unsigned char *buf;
    float *floats; /* tensor data copied out: the file's are unaligned */
    int n;
    fix_tensor t[MAX_TENSORS];
} fixtures;
/* 0, or -1 with a line printed; free fx->buf and fx->floats after. */
int fixtures_load(const char *path, fixtures *fx);
/* The tensor called name; a missing one is a line and exit(1). */
const fix_tensor *fixtures_get(const fixtures *fx, const char *name);
#endif
