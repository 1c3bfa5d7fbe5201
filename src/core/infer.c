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
    const int A = n->cfg.lookahead;
    for (long t = 0; t < nframes; t++) {
        const float *xt = x + t * D;
        ptrdiff_t xrs = rs;
        if (A > 0) /* the frames ahead, held at the sequence's last */
            frae_ahead_rows(n, st, x, rs, nseq, t, nframes, NULL);
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

/* The bytes of a state of rows sequences, p its stream state's plan; 0 if
 * that overflows. */
static size_t state_size(const frae_net *n, int rows, frae_state_plan *p)
{
    if (!n || rows < 1)
        return 0;
    const size_t st = frae_state_plan_make(&n->cfg, rows, 1, p);
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

size_t frae_forward_state_size(const frae_net *n, int rows)
{
    frae_state_plan p;
    return state_size(n, rows, &p);
}

/* The state in mem (size bytes, from p's plan). */
static frae_forward_state *state_carve(void *mem, const frae_net *n,
                                       size_t size, const frae_state_plan *p)
{
    memset(mem, 0, size);
    frae_forward_state *s = mem;
    s->net = n;
    char *base = (char *)mem + HEAD;
    frae_state_carve(p, &s->st, base);
    if (n->cfg.normalize)
        s->xnorm = (float *)(void *)(base + p->bytes);
    /* its products on the calling thread: the model's workers are the
     * model's, and the bits are the same for any count */
    frae_state_reset(n, &s->st);
    return s;
}

frae_forward_state *frae_forward_state_init(void *mem, const frae_net *n,
                                            int rows)
{
    frae_state_plan p;
    const size_t size = state_size(n, rows, &p);
    return mem && size ? state_carve(mem, n, size, &p) : NULL;
}

frae_forward_state *frae_forward_state_create(const frae_net *n, int rows)
{
    frae_state_plan p;
    const size_t size = state_size(n, rows, &p);
    void *mem = size ? aligned_alloc(64, size) : NULL;
    return mem ? state_carve(mem, n, size, &p) : NULL;
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
