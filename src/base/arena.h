/* Sizing an arena: a running offset that every piece advances by a
 * multiple of 64 bytes, with overflow noted rather than wrapped.  The
 * model's arena (model.c) and the stream state (state.c) are laid out
 * with it. */
#ifndef FRAE_ARENA_H
#define FRAE_ARENA_H

#include <stddef.h>

#define FRAE_ARENA_ALIGN 64

typedef struct {
    size_t bytes; /* the running size */
    int overflow;
} frae_arena;

/* a x b x c, or 0 with overflow noted */
static inline size_t frae_arena_mul3(frae_arena *p, size_t a, size_t b,
                                     size_t c)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r)) {
        p->overflow = 1;
        return 0;
    }
    return r;
}

/* Reserves n 4-byte values (floats or ints), 64-byte aligned; returns
 * their offset in bytes. */
static inline size_t frae_arena_reserve(frae_arena *p, size_t n)
{
    size_t off = p->bytes, sz;
    if (__builtin_mul_overflow(n, (size_t)4, &sz) ||
        __builtin_add_overflow(sz, (size_t)FRAE_ARENA_ALIGN - 1, &sz) ||
        __builtin_add_overflow(off, sz & ~(size_t)(FRAE_ARENA_ALIGN - 1),
                               &p->bytes))
        p->overflow = 1;
    return off;
}

#endif
