/* Entropy coding: a range coder in integer arithmetic and the one rule
 * that turns probabilities into its integer frequencies (frae_codec.h, "Entropy
 * coding").
 *
 * The coder is the carry-propagating range coder of Schindler / Subbotin
 * as LZMA uses it: a 32-bit range, a 64-bit low whose carry ripples into
 * the bytes already cut (held back as one cached byte and a count of 0xFF
 * bytes), renormalised a byte at a time while the range is below 2^24.
 * Totals are powers of two (FRAE_RANGE_TOTAL_BITS), so a symbol costs one
 * shift, two multiplications and no division when encoding, one division
 * when decoding.  Everything is integer: the same frequencies give the same
 * bytes on every machine. */
#include <math.h>
#include <string.h>

#include "codec/entropy.h"
#include "core/frae_internal.h"

#define TOP (1u << 24)

/* ---- encoder --------------------------------------------------------------------- */

void frae_range_enc_init(frae_range_enc *e, unsigned char *buf, size_t cap)
{
    memset(e, 0, sizeof *e);
    e->buf = buf;
    e->cap = cap;
    e->range = 0xFFFFFFFFu;
    e->cache_size = 1;
}

static void put_byte(frae_range_enc *e, unsigned v)
{
    if (e->pos < e->cap)
        e->buf[e->pos] = (unsigned char)v;
    else
        e->overflow = 1;
    e->pos++;
}

/* Moves the top byte of low out, through the cache, carrying into it. */
static void shift_low(frae_range_enc *e)
{
    if ((uint32_t)e->low < 0xFF000000u || (e->low >> 32) != 0) {
        const unsigned carry = (unsigned)(e->low >> 32);
        unsigned byte = e->cache;
        do {
            if (!e->first_out) /* the first cached byte is always 0 */
                e->first_out = 1;
            else
                put_byte(e, (byte + carry) & 0xFF);
            byte = 0xFF;
        } while (--e->cache_size);
        e->cache = (unsigned)(e->low >> 24) & 0xFF;
    }
    e->cache_size++;
    e->low = (e->low & 0x00FFFFFFu) << 8;
}

void frae_range_encode(frae_range_enc *e, uint32_t cum, uint32_t freq)
{
    e->range >>= FRAE_RANGE_TOTAL_BITS;
    e->low += (uint64_t)cum * e->range;
    e->range *= freq;
    while (e->range < TOP) {
        e->range <<= 8;
        shift_low(e);
    }
}

size_t frae_range_enc_finish(frae_range_enc *e)
{
    /* any value in [low, low + range) decodes the same: take the one with
     * the most zero bytes at its end, which the trimming below drops (the
     * decoder reads zeros there), so a flush costs a byte or two, not 4 */
    for (int bits = 32; bits > 0; bits -= 8) {
        const uint64_t mask = ((uint64_t)1 << bits) - 1;
        const uint64_t v = (e->low + mask) & ~mask;
        if (v < e->low + e->range) {
            e->low = v;
            break;
        }
    }
    for (int i = 0; i < 5; i++)
        shift_low(e);
    /* trailing zero bytes carry nothing the decoder needs: it reads zeros
     * past the end */
    while (e->pos > 0 && e->pos <= e->cap && e->buf[e->pos - 1] == 0)
        e->pos--;
    return e->overflow ? 0 : e->pos;
}

/* ---- decoder ----------------------------------------------------------------------- */

static unsigned next_byte(frae_range_dec *d)
{
    /* past the end: zeros, as the encoder's trimmed tail was */
    return d->pos < d->size ? d->buf[d->pos++] : (d->pos++, 0u);
}

void frae_range_dec_init(frae_range_dec *d, const unsigned char *buf,
                         size_t size)
{
    memset(d, 0, sizeof *d);
    d->buf = buf;
    d->size = size;
    d->range = 0xFFFFFFFFu;
    for (int i = 0; i < 4; i++)
        d->code = d->code << 8 | next_byte(d);
}

uint32_t frae_range_decode_target(frae_range_dec *d)
{
    d->range >>= FRAE_RANGE_TOTAL_BITS;
    uint32_t v = d->code / d->range;
    const uint32_t total = 1u << FRAE_RANGE_TOTAL_BITS;
    if (v >= total) { /* only a corrupt stream gets here */
        d->corrupt = 1;
        v = total - 1;
    }
    return v;
}

void frae_range_decode_update(frae_range_dec *d, uint32_t cum, uint32_t freq)
{
    uint32_t sub = cum * d->range;
    /* a corrupt stream may ask for more than code holds: clamp, flag */
    if (sub > d->code) {
        d->corrupt = 1;
        sub = d->code;
    }
    d->code -= sub;
    d->range *= freq;
    while (d->range < TOP) {
        d->code = d->code << 8 | next_byte(d);
        d->range <<= 8;
    }
}

int frae_range_decode_symbol(frae_range_dec *d, const uint32_t *freq, int n)
{
    const uint32_t target = frae_range_decode_target(d);
    uint32_t cum = 0;
    int s = 0;
    while (s < n - 1 && cum + freq[s] <= target)
        cum += freq[s++];
    frae_range_decode_update(d, cum, freq[s]);
    return s;
}

void frae_range_encode_symbol(frae_range_enc *e, const uint32_t *freq,
                              int symbol)
{
    uint32_t cum = 0;
    for (int i = 0; i < symbol; i++)
        cum += freq[i];
    frae_range_encode(e, cum, freq[symbol]);
}

int frae_range_dec_status(const frae_range_dec *d)
{
    return d->corrupt ? -1 : 0;
}
