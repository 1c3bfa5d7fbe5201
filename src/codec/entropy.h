/* The range coder (entropy.c) and its frequency rule: the codec's
 * building block for entropy-coded frames, inside the library (the
 * public face codes whole streams: frae_codec.h). */
#ifndef FRAE_CODEC_ENTROPY_H
#define FRAE_CODEC_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/frae_internal.h" /* the frequency rule: prior.c */

typedef struct frae_range_enc frae_range_enc;
typedef struct frae_range_dec frae_range_dec;

/* A range coder in integer arithmetic (src/codec/entropy.c): symbols are coded
 * with integer frequencies that sum to 2^FRAE_RANGE_TOTAL_BITS, none zero,
 * made from probabilities by frae_quantize_pmf (core/frae_internal.h: the
 * prior's), one deterministic rule, so
 * an encoder and a decoder that compute the same probabilities (frae's
 * kernels give the same bits on every ISA and thread count) code the same
 * bytes.  The states live in the caller's memory and never allocate; the
 * encoder writes into a caller's buffer, the decoder reads a buffer and
 * never past its end (it reads zeros there, as the encoder trimmed them),
 * and on a corrupt stream still returns symbols in range, in bounded time,
 * and flags it (frae_range_dec_status). */
struct frae_range_enc {
    unsigned char *buf;
    size_t cap, pos;
    uint64_t low;
    uint32_t range;
    unsigned cache;
    uint64_t cache_size;
    int first_out, overflow;
};
void frae_range_enc_init(frae_range_enc *e, unsigned char *buf, size_t cap);
/* The symbol with cumulative frequency cum and frequency freq (of 2^15). */
void frae_range_encode(frae_range_enc *e, uint32_t cum, uint32_t freq);
void frae_range_encode_symbol(frae_range_enc *e, const uint32_t *freq,
                              int symbol);
/* Flushes; returns the bytes written, or 0 if buf was too small. */
size_t frae_range_enc_finish(frae_range_enc *e);

struct frae_range_dec {
    const unsigned char *buf;
    size_t size, pos;
    uint32_t code, range;
    int corrupt;
};
void frae_range_dec_init(frae_range_dec *d, const unsigned char *buf,
                         size_t size);
/* A symbol in two steps (target, then the symbol's cum and freq) or one. */
uint32_t frae_range_decode_target(frae_range_dec *d);
void frae_range_decode_update(frae_range_dec *d, uint32_t cum, uint32_t freq);
int frae_range_decode_symbol(frae_range_dec *d, const uint32_t *freq, int n);
/* 0, or -1 if the bytes could not have come from an encoder. */
int frae_range_dec_status(const frae_range_dec *d);

#endif
