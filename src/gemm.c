/* The packed-GEMM driver: products on panel-packed weights (FRAE_PANEL
 * columns a panel), split by panels across the scratch's threads, with the
 * one-row sparse route and the bf16 route.  The kernels it calls are in
 * kernels*.c; every output keeps its own ordered FMA chain, so the thread
 * count and the instruction set never change a bit. */
#include <string.h>

#include "frae_internal.h"

/* Panel p of frae_gemm_packed_b below. */
static void panel_b(const frae_model *m, const frae_scratch *sc, int p, int M,
                    int K, const float *a,
                    ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b, int rows,
                    int cols, int k0, int c0, int c1, float *c, ptrdiff_t ldc,
                    const float *bias, int init, int nnz)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    int lo = c0 > pc0 ? c0 : pc0, hi = c1 < pc0 + w ? c1 : pc0 + w;
    const float *panel = b + (size_t)pc0 * rows + (lo - pc0);
    const float *pbias = bias ? bias + (lo - c0) : NULL;
    if (nnz >= 0)
        m->gemv_sparse(hi - lo, nnz, sc->idx, sc->val, panel, w,
                       c + (lo - c0), pbias, init);
    else
        m->gemm(M, hi - lo, K, a, a_rs, a_cs, panel + (size_t)k0 * w, w,
                c + (lo - c0), ldc, pbias, init);
}

/* C[M][c0..c1) = init + A . B[k0..k0+K)[c0..c1), with B a packed rows x
 * cols matrix: one GEMM per panel the column range touches.  bias and c
 * are indexed from c0.  A single row with enough zeros (ReLU outputs and
 * their gradients) goes through the sparse kernel: it streams only the
 * rows of B that meet a nonzero. */
void frae_gemm_packed_b(const frae_model *m, const frae_scratch *sc, int M,
                        int K, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                        const float *b, int rows, int cols, int k0, int c0,
                        int c1, float *c, ptrdiff_t ldc, const float *bias,
                        int init)
{
    int nnz = -1;
    if (M == 1 && a_cs == 1) {
        nnz = m->compact(K, a, k0, sc->idx, sc->val);
        if (nnz > K - K / 8) /* too dense to pay for the indirection */
            nnz = -1;
    }
    const int p0 = c0 / FRAE_PANEL, p1 = (c1 + FRAE_PANEL - 1) / FRAE_PANEL;
    /* panels write disjoint columns and each output keeps its own FMA
     * chain: any thread count gives the same bits.  The OpenMP runtime is
     * entered only to thread: even a one-thread region costs a call, and
     * batch 1 makes dozens of these products per frame. */
    if (sc->threads > 1 && nnz < 0 &&
        (double)M * K * (c1 - c0) > FRAE_THREAD_MACS) {
#pragma omp parallel for schedule(static) num_threads(sc->threads)
        for (int p = p0; p < p1; p++)
            panel_b(m, sc, p, M, K, a, a_rs, a_cs, b, rows, cols, k0, c0, c1,
                    c, ldc, bias, init, nnz);
    } else {
        for (int p = p0; p < p1; p++)
            panel_b(m, sc, p, M, K, a, a_rs, a_cs, b, rows, cols, k0, c0, c1,
                    c, ldc, bias, init, nnz);
    }
}

/* Panel p of frae_gemm_packed_c below. */
static void panel_c(const frae_model *m, int p, int M, int K, const float *a,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    int rows, int cols, int r0, int init)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    m->gemm(M, w, K, a, 1, a_cs, b + pc0, ldb,
            c + (size_t)pc0 * rows + (size_t)r0 * w, w, NULL, init);
}

/* Rows r0..r0+M of a packed rows x cols matrix C = init + A^T . B, where A
 * is K x M (row stride a_cs) and B is K x cols (row stride ldb): the
 * weight-gradient shape. */
void frae_gemm_packed_c(const frae_model *m, const frae_scratch *sc, int M,
                        int K, const float *a, ptrdiff_t a_cs, const float *b,
                        ptrdiff_t ldb, float *c, int rows, int cols, int r0,
                        int init)
{
    const int np = (cols + FRAE_PANEL - 1) / FRAE_PANEL;
    if (sc->threads > 1 && (double)M * K * cols > FRAE_THREAD_MACS) {
#pragma omp parallel for schedule(static) num_threads(sc->threads)
        for (int p = 0; p < np; p++)
            panel_c(m, p, M, K, a, a_cs, b, ldb, c, rows, cols, r0, init);
    } else {
        for (int p = 0; p < np; p++)
            panel_c(m, p, M, K, a, a_cs, b, ldb, c, rows, cols, r0, init);
    }
}

/* Layer l's forward product on its bf16 weights (kernels.h), nb rows of A
 * (row stride a_rs) over kernel rows k0..k0+K, each output the chain the
 * f32 path computes: one row takes frae_gemm_packed_b's one-row route (the
 * zeros it skips and its density rule), two rows accumulating (the first
 * layers' pairs of fed-back frames) the two-row kernel, anything else the
 * dense kernel row by row, as the f32 GEMM does them. */
static void bf16_product(const frae_model *m, const frae_scratch *sc,
                         const frae_layer *ly, int nb, int K, const float *a,
                         ptrdiff_t a_rs, int k0, float *z, const float *bias,
                         int init)
{
    int nnz = K;
    if (nb == 1) {
        nnz = m->compact(K, a, k0, sc->idx, sc->val);
        if (nnz > K - K / 8) /* where the f32 path goes dense */
            nnz = K;
    }
    const int sparse = nnz < K;
    for (int pc0 = 0; pc0 < ly->out; pc0 += FRAE_PANEL_BF16) {
        int w = ly->out - pc0 < FRAE_PANEL_BF16 ? ly->out - pc0
                                                : FRAE_PANEL_BF16;
        int ldb = (w + 31) / 32 * 32;
        const uint16_t *panel = ly->wh + (size_t)pc0 * ly->in;
        const uint16_t *rows = panel + (size_t)k0 * ldb; /* dense forms */
        const float *bp = bias ? bias + pc0 : NULL;
        if (sparse)
            m->gemv_bf16(w, nnz, sc->idx, sc->val, panel, ldb, z + pc0,
                         bp, init);
        else if (nb == 2 && init == GEMM_ACC)
            m->gemv2_bf16(w, K, a, a + a_rs, rows, ldb, z + pc0,
                          z + ly->out + pc0);
        else
            for (int r = 0; r < nb; r++)
                m->gemv_bf16(w, K, NULL, a + r * a_rs, rows, ldb,
                             z + (size_t)r * ly->out + pc0, bp, init);
    }
}

/* Layer l's forward product for nb rows of A (row stride a_rs), over its
 * kernel rows k0..k0+K, into z (rows ly->out apart). */
void frae_layer_product(const frae_model *m, const frae_scratch *sc, int l,
                        int nb, int K, const float *a, ptrdiff_t a_rs, int k0,
                        float *z, const float *bias, int init)
{
    const frae_layer *ly = &m->layer[l];
    if (ly->wh)
        bf16_product(m, sc, ly, nb, K, a, a_rs, k0, z, bias, init);
    else
        frae_gemm_packed_b(m, sc, nb, K, a, a_rs, 1, m->params + ly->w_off,
                           ly->in, ly->out, k0, 0, ly->out, z, ly->out, bias,
                           init);
}

