/* Files as frae's command and Python read and write them, for any
 * program built on libfrae: frames in NumPy .npy files (read mapped or
 * from a pipe, written float32), outputs replaced atomically so that a
 * failed or interrupted write never leaves a half-written file where the
 * user's was, and inputs that are refused rather than waited on.  Every
 * call checks what it reads (sizes before anything is allocated) and
 * fails with one line in err. */
#ifndef FRAE_IO_H
#define FRAE_IO_H

#include <stddef.h>
#include <stdio.h>

#include "frae.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- whole files -------------------------------------------------------- */
/* Opens a regular file for reading (O_CLOEXEC): -1 and one line in err for
 * anything else (a FIFO, a device, a directory), refused before it could
 * block, and for "-", which names standard input and is read only where
 * a command says so.  Returns the descriptor. */
FRAE_API
int frae_open_regular(const char *path, char *err, size_t errlen);
/* Maps a regular file of at least min_size (and > 0) bytes read-only. */
FRAE_API
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
FRAE_API
int frae_output_descriptor(const char *path);
typedef struct {
    FILE *f;      /* write here, then commit or abort */
    int in_place; /* not a temporary file: no rename, no undo */
    int seekable; /* f can seek (a file): out-of-order writes work */
    char path[4096];
    char tmp[4112];
} frae_atomic_file;
FRAE_API
int frae_atomic_begin(frae_atomic_file *af, const char *path, char *err,
                      size_t errlen);
FRAE_API
int frae_atomic_commit(frae_atomic_file *af, char *err, size_t errlen);
FRAE_API
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

/* Checks a parsed array is frames: [T, D] or [N, T, D], not empty. */
FRAE_API
int frae_npy_frames(const frae_npy *a, const char *name, char *err,
                    size_t errlen);
FRAE_API
int frae_npy_open(const char *path, frae_npy *a, char *err, size_t errlen);
FRAE_API
void frae_npy_close(frae_npy *a);
FRAE_API
int frae_npy_check_finite(const frae_npy *a, const char *name, char *err,
                          size_t errlen);
/* Frames t0..t0+nt-1 of sequence seq, as float32.  Returns 0, or -1 if
 * values read from a file descriptor could not be read. */
FRAE_API
int frae_npy_read(const frae_npy *a, long seq, long t0, long nt, float *dst);
/* Starts an atomic float32 .npy of the given shape: write the values to
 * af->f in C order, then frae_atomic_commit. */
FRAE_API
int frae_npy_begin(frae_atomic_file *af, const char *path, int ndim,
                   const long *shape, char *err, size_t errlen);

/* Starts an atomic float32 .npy whose first dimension is not known yet:
 * write the values, then frae_npy_finish with the final shape. */
FRAE_API
int frae_npy_begin_growing(frae_atomic_file *af, const char *path, int ndim,
                           char *err, size_t errlen);
FRAE_API
int frae_npy_finish(frae_atomic_file *af, int ndim, const long *shape,
                    char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
