/* Inference over shared weights: frames through a const frae_net on a
 * stream state (state.h) that its caller owns.  frae_forward runs it on the
 * model's own batch stream; a frae_forward_state is one such stream of its
 * own, one block, so any number of them share one model's weights. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/frae_internal.h"

int frae_run_forward(const frae_net *n, frae_state *st, float *xnorm,
                     const float *x, float *y, int nseq, int nframes)
{
    if (nseq < 1 || nseq > st->rows || nframes < 1)
        return -1;
    if (st->ring_rows == 0)   /* the buffers belong to the sequences in */
        st->ring_rows = nseq; /* flight since the last reset */
    if (st->ring_rows != nseq)
        return -1;
    const int D = n->cfg.frame_dim;
    const ptrdiff_t rs = (ptrdiff_t)nframes * D;
    for (long t = 0; t < nframes; t++) {
        const float *xt = x + t * D;
        ptrdiff_t xrs = rs;
        if (n->cfg.normalize) { /* z-scored into xnorm, rows D apart */
            frae_normalize_rows(n, xt, rs, nseq, xnorm);
            xt = xnorm;
            xrs = D;
        }
        frae_forward_frame(n, st, t, xt, xrs, nseq);
        const float *yt = frae_state_frame(st, st->ring_pos + t);
        for (int b = 0; b < nseq; b++) {
            if (n->cfg.normalize)
                frae_denormalize(n, yt + (size_t)b * D, y + b * rs + t * D);
            else
                memcpy(y + b * rs + t * D, yt + (size_t)b * D,
                       sizeof(float) * D);
        }
    }
    /* the ring moves on past the frames just run */
    st->ring_pos = (int)((st->ring_pos + nframes) % st->ring_cap);
    return 0;
}

struct frae_forward_state {
    const frae_net *net;
    frae_state st; /* rows sequences, one frame of activations */
    float *xnorm;  /* cfg.normalize: one frame of z-scored rows [rows][D] */
};

/* The head, then the stream state, then xnorm, each 64-byte aligned. */
#define HEAD ((sizeof(struct frae_forward_state) + 63) & ~(size_t)63)

static size_t state_bytes(const frae_net *n, int rows)
{
    return frae_state_layout(&n->cfg, rows, 1, NULL, NULL);
}

size_t frae_forward_state_size(const frae_net *n, int rows)
{
    if (!n || rows < 1)
        return 0;
    const size_t st = state_bytes(n, rows);
    size_t norm = 0, bytes;
    if (st == SIZE_MAX ||
        (n->cfg.normalize &&
         __builtin_mul_overflow(sizeof(float) * (size_t)rows,
                                (size_t)n->cfg.frame_dim, &norm)) ||
        __builtin_add_overflow(HEAD + st, norm, &bytes) ||
        __builtin_add_overflow(bytes, (size_t)63, &bytes))
        return 0;
    return bytes & ~(size_t)63; /* a multiple of 64, as aligned_alloc wants */
}

frae_forward_state *frae_forward_state_init(void *mem, const frae_net *n,
                                            int rows)
{
    const size_t size = frae_forward_state_size(n, rows);
    if (!mem || !size)
        return NULL;
    memset(mem, 0, size);
    frae_forward_state *s = mem;
    s->net = n;
    char *base = (char *)mem + HEAD;
    const size_t st = frae_state_layout(&n->cfg, rows, 1, &s->st, base);
    if (n->cfg.normalize)
        s->xnorm = (float *)(void *)(base + st);
    /* its products on the calling thread: the model's workers are the
     * model's, and the bits are the same for any count */
    frae_state_reset(n, &s->st);
    return s;
}

frae_forward_state *frae_forward_state_create(const frae_net *n, int rows)
{
    const size_t size = frae_forward_state_size(n, rows);
    void *mem = size ? aligned_alloc(64, size) : NULL;
    frae_forward_state *s = mem ? frae_forward_state_init(mem, n, rows) : NULL;
    if (!s)
        free(mem);
    return s;
}

void frae_forward_state_destroy(frae_forward_state *s) { free(s); }

void frae_forward_state_reset(frae_forward_state *s)
{
    frae_state_reset(s->net, &s->st);
}

int frae_forward_run(frae_forward_state *s, const float *x, float *y, int nseq,
                     int nframes)
{
    fp_env env = fp_enter();
    int rc = frae_run_forward(s->net, &s->st, s->xnorm, x, y, nseq, nframes);
    fp_leave(env);
    return rc;
}
