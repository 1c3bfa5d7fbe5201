/* Small internal helpers shared by the library, the command line and the
 * tests: one-line errors, the seeded RNG, the config's names, synthetic
 * data.  Not part of the public API. */
#ifndef FRAE_UTIL_H
#define FRAE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "frae.h"

/* Formats one error line into err (if non-NULL): control characters quoted
 * from a file become '?'.  Returns -1. */
int frae_errorf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replaces control characters (a line break among them) with '?'. */
void frae_one_line(char *s);

/* portable_math.c: tanhf and log1pf as glibc computes them on x86-64, to
 * the bit on every machine (aarch64's glibc fuses their multiply-adds) */
float frae_tanhf(float x);
float frae_log1pf(float x);

/* rng.c: splitmix64, small and seedable; the state lives with its user. */
uint64_t frae_rng_next(uint64_t *state);
float frae_rng_uniform(uint64_t *state); /* [0, 1) with 24 bits */

/* names.c: the config's enums as the command line and checkpoints spell
 * them, indexed by the enum's value. */
extern const char *const frae_activation_names[2];
extern const char *const frae_feedback_names[2];
extern const char *const frae_family_names[2];
extern const char *const frae_weights_names[2];
extern const char *const frae_isa_names[5];
#define FRAE_NAME_COUNT(names) ((int)(sizeof(names) / sizeof *(names)))
/* The index of s in names[0..n), or -1. */
int frae_name_index(const char *const *names, int n, const char *s);
/* "none", "binary" or "uniform:N". */
void frae_quantizer_name(const frae_config *c, char *out, size_t cap);
/* The same back into c: 0, -1 for another name, -2 for N outside
 * 2..65536. */
int frae_quantizer_parse(const char *s, frae_config *c);
/* Hidden widths "512,256" (or "" or "none": no hidden layer) into n and
 * w[FRAE_MAX_HIDDEN]: 0, -1 if not positive integers separated by commas,
 * -2 if more than FRAE_MAX_HIDDEN. */
int frae_parse_widths(const char *s, int *n, int *w);
/* The same widths written back, "" for none. */
void frae_widths_name(const int *w, int n, char *out, size_t cap);

/* synth.c: deterministic synthetic data: nseq smooth sequences of nframes
 * frames of dimension dim (sums of slowly drifting sinusoids), as
 * [nseq][nframes][dim].  Same seed, same data. */
void frae_synth_sequences(float *dst, int nseq, int nframes, int dim,
                          uint64_t seed);

#endif
