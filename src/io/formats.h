/* File formats: NumPy .npy/.npz, safetensors, atomic writes.  Internal to
 * the library; the public calls built on them are in frae.h. */
#ifndef FRAE_FORMATS_H
#define FRAE_FORMATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/checksum.h"
#include "base/util.h" /* frae_errorf */
#include "frae.h"

/* Fuzzing builds (libFuzzer's convention) skip checksum and CRC
 * comparisons, so that mutations reach the parsers behind them. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define FRAE_FUZZING 1
#else
#define FRAE_FUZZING 0
#endif

/* ---- whole files -------------------------------------------------------- */
/* Opens a regular file for reading (O_CLOEXEC): -1 and one line in err for
 * anything else (a FIFO, a device, a directory), refused before it could
 * block, and for "-", which names standard input and is read only where
 * a command says so.  Returns the descriptor. */
int frae_open_regular(const char *path, char *err, size_t errlen);
/* Maps a regular file of at least min_size (and > 0) bytes read-only. */
int frae_map_file(const char *path, size_t min_size, void **map, size_t *size,
                  char *err, size_t errlen);

/* ---- atomic file replacement ------------------------------------------ */
/* A regular file (or a new one) is replaced atomically: a temporary file
 * beside it, renamed over it on commit.  Anything else is written in
 * place and never renamed over: "-" (standard output), a FIFO with a
 * reader (refused, not waited on, without one), a character device; a
 * symbolic link to a regular file replaces its target, and the link
 * stays. */
/* The descriptor an output path names, or -1: "-" and /dev/stdout name
 * standard output (1), /dev/stderr 2, /dev/fd/N and /proc/self/fd/N N. */
int frae_output_descriptor(const char *path);
typedef struct {
    FILE *f;      /* write here, then commit or abort */
    int in_place; /* not a temporary file: no rename, no undo */
    int seekable; /* f can seek (a file): out-of-order writes work */
    char path[4096];
    char tmp[4112];
} frae_atomic_file;
int frae_atomic_begin(frae_atomic_file *af, const char *path, char *err,
                      size_t errlen);
int frae_atomic_commit(frae_atomic_file *af, char *err, size_t errlen);
void frae_atomic_abort(frae_atomic_file *af);

/* ---- .npy ------------------------------------------------------------- */
typedef struct {
    int ndim;
    long dims[8];
    long n, t, d;              /* frames view: set when ndim is 2 ([T, D],
                                  n = 1) or 3 ([N, T, D]) */
    int itemsize;              /* 4 (float32) or 8 (float64) */
    const unsigned char *data; /* little-endian values, C order */
    void *map;                 /* set by frae_npy_open */
    size_t map_len;
    int from_fd; /* values not mapped but read from fd as
                                  needed (float32 from offset 0); closed
                                  by frae_npy_close */
    int fd;
} frae_npy;

/* Parses an in-memory .npy of any rank; name is used in error messages. */
int frae_npy_parse(const unsigned char *buf, size_t size, const char *name,
                   frae_npy *a, char *err, size_t errlen);
/* Checks a parsed array is frames: [T, D] or [N, T, D], not empty. */
int frae_npy_frames(const frae_npy *a, const char *name, char *err,
                    size_t errlen);
int frae_npy_open(const char *path, frae_npy *a, char *err, size_t errlen);
void frae_npy_close(frae_npy *a);
int frae_npy_check_finite(const frae_npy *a, const char *name, char *err,
                          size_t errlen);
/* The same over sequences s0..s1-1 only (0 <= s0 <= s1 <= a->n). */
int frae_npy_check_finite_seqs(const frae_npy *a, const char *name, long s0,
                               long s1, char *err, size_t errlen);
float frae_npy_value(const frae_npy *a, size_t index);
/* Frames t0..t0+nt-1 of sequence seq, as float32.  Returns 0, or -1 if
 * values read from a file descriptor could not be read. */
int frae_npy_read(const frae_npy *a, long seq, long t0, long nt, float *dst);
/* A .npy's frames as a training source (frae_train.h), named name (audio:
 * features made from audio); a's mapping or descriptor moves into it
 * (closed on failure too).  0 or a FRAE_RUN_* status. */
struct frae_source;
int frae_source_from_npy(frae_npy *a, const char *name, int audio,
                         struct frae_source *out, char *err, size_t errlen);
int frae_npy_write(const char *path, const float *data, int ndim,
                   const long *shape, char *err, size_t errlen);
/* Starts an atomic float32 .npy of the given shape: write the values to
 * af->f in C order, then frae_atomic_commit. */
int frae_npy_begin(frae_atomic_file *af, const char *path, int ndim,
                   const long *shape, char *err, size_t errlen);

/* Starts an atomic float32 .npy whose first dimension is not known yet:
 * write the values, then frae_npy_finish with the final shape. */
int frae_npy_begin_growing(frae_atomic_file *af, const char *path, int ndim,
                           char *err, size_t errlen);
int frae_npy_finish(frae_atomic_file *af, int ndim, const long *shape,
                    char *err, size_t errlen);

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
