/* File formats: NumPy .npy/.npz, safetensors, atomic writes.  Internal to
 * the library; the public calls built on them are in frae.h, and the
 * files frae's command and Python read and write are frae_io.h's. */
#ifndef FRAE_FORMATS_H
#define FRAE_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/checksum.h"
#include "base/util.h" /* frae_errorf */
#include "frae.h"
#include "frae_io.h"

/* Fuzzing builds (libFuzzer's convention) skip checksum and CRC
 * comparisons, so that mutations reach the parsers behind them. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define FRAE_FUZZING 1
#else
#define FRAE_FUZZING 0
#endif

/* ---- .npy ------------------------------------------------------------- */
/* Parses an in-memory .npy of any rank; name is used in error messages. */
int frae_npy_parse(const unsigned char *buf, size_t size, const char *name,
                   frae_npy *a, char *err, size_t errlen);
/* The same over sequences s0..s1-1 only (0 <= s0 <= s1 <= a->n). */
int frae_npy_check_finite_seqs(const frae_npy *a, const char *name, long s0,
                               long s1, char *err, size_t errlen);
float frae_npy_value(const frae_npy *a, size_t index);
int frae_npy_write(const char *path, const float *data, int ndim,
                   const long *shape, char *err, size_t errlen);
/* ---- .npz (np.savez, np.savez_compressed: a zip of .npy members) ------ */
typedef struct {
    char name[256];
    unsigned char *data; /* malloc'ed: frae_npz_free */
    size_t size;
} frae_npz_member;
/* Members of all sizes together: at most this many bytes, inflated. */
#define FRAE_NPZ_MAX_BYTES ((size_t)1 << 31)
/* Reads (inflating) the members of an in-memory zip, at most cap of them;
 * returns their count, or -1 with one line in err (nothing to free). */
int frae_npz_read(const unsigned char *buf, size_t size, const char *path,
                  frae_npz_member *out, int cap, char *err, size_t errlen);
void frae_npz_free(frae_npz_member *m, int n);

/* ---- safetensors ------------------------------------------------------ */
enum { ST_F32 = 0, ST_F64, ST_F16, ST_BF16, ST_I32, ST_I64, ST_NTYPES };
#define ST_MAX_DIMS 8

typedef struct {
    char name[256];
    int dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t begin, end; /* byte offsets in the data section */
} st_tensor;

typedef struct {
    char key[256];
    char *value;
} st_meta;

typedef struct {
    void *map;
    size_t map_len;
    const unsigned char *data; /* data section */
    size_t data_len;
    st_tensor *tensors;
    int n_tensors;
    st_meta *meta;
    int n_meta;
} frae_safetensors;

/* Maps and validates a file: header JSON, dtypes, shapes, offsets inside
 * the file and tiling the data section exactly. */
int frae_st_open(const char *path, frae_safetensors *st, char *err,
                 size_t errlen);
/* Same, over a buffer the caller keeps alive (for fuzzing and tests). */
int frae_st_parse(const unsigned char *buf, size_t size, const char *name,
                  frae_safetensors *st, char *err, size_t errlen);
void frae_st_close(frae_safetensors *st);
const st_tensor *frae_st_find(const frae_safetensors *st, const char *name);
const char *frae_st_meta(const frae_safetensors *st, const char *key);
/* Element i of a float tensor (F32, F64, F16, BF16) as float. */
float frae_st_float(const frae_safetensors *st, const st_tensor *t, size_t i);

typedef struct {
    const char *name;
    int dtype; /* ST_F32 or ST_I32 */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;
} st_out_tensor;

/* Writes tensors and string metadata atomically; adds under
 * "frae.checksum" the checksum of the header fields and the data
 * (frae_st_checksum with the header). */
#define FRAE_ST_CHECKSUM_KEY "frae.checksum"
int frae_st_write(const char *path, const st_out_tensor *t, int nt,
                  const char *const *meta_keys, const char *const *meta_vals,
                  int nmeta, char *err, size_t errlen);

/* FNV-1a 64 of the data section, preceded (with_header) by the parsed
 * header: every tensor's name, dtype, shape and offsets and every metadata
 * pair but the checksum, in file order. */
uint64_t frae_st_checksum(const frae_safetensors *st, int with_header);

#endif
