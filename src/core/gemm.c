/* The packed-GEMM driver: products on panel-packed weights (FRAE_PANEL
 * columns a panel), split by panels across the scratch's threads, with the
 * one-row sparse route and the bf16 route.  The kernels it calls are in
 * kernels*.c; every output keeps its own ordered FMA chain, so the thread
 * count and the instruction set never change a bit. */
#include <string.h>

#include "core/frae_internal.h"
#include "core/pool.h"

/* Panel p of frae_gemm_packed_b below. */
static void panel_b(const frae_net *m, const frae_scratch *sc, int p, int M,
                    int K, const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                    const float *b, int rows, int cols, int k0, int c0, int c1,
                    float *c, ptrdiff_t ldc, const float *bias, int init,
                    int nnz)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    int lo = c0 > pc0 ? c0 : pc0, hi = c1 < pc0 + w ? c1 : pc0 + w;
    const float *panel = b + (size_t)pc0 * rows + (lo - pc0);
    const float *pbias = bias ? bias + (lo - c0) : NULL;
    if (nnz >= 0)
        m->gemv_sparse(hi - lo, nnz, sc->idx, sc->val, panel, w, c + (lo - c0),
                       pbias, init);
    else
        m->gemm(M, hi - lo, K, a, a_rs, a_cs, panel + (size_t)k0 * w, w,
                c + (lo - c0), ldc, pbias, init);
}

/* Where part i of n items cut into `parts` near-equal parts starts. */
static inline int part_start(int n, int i, int parts)
{
    return (int)((long)n * i / parts);
}

/* Whether T threads should split a product's M rows rather than its
 * panels p0..p1 (columns c0..c1): when the panels share out unevenly (one
 * panel, or a narrow last one) and every thread still gets a few rows.
 * Compares the widest thread's work under the static schedule of each. */
static int rows_split_pays(int M, int T, int p0, int p1, int c0, int c1)
{
    if (M < 4 * T)
        return 0;
    const int np = p1 - p0, per = (np + T - 1) / T;
    int widest = 0;
    for (int i = 0; i < T; i++) {
        int lo = (p0 + i * per) * FRAE_PANEL, hi = lo + per * FRAE_PANEL;
        lo = lo > c0 ? lo : c0;
        hi = hi < c1 ? hi : c1;
        if (hi - lo > widest)
            widest = hi - lo;
    }
    const long by_panels = (long)M * widest;
    const long by_rows = (long)((M + T - 1) / T) * (c1 - c0);
    return by_rows * 10 < by_panels * 9; /* panels read less of B */
}

/* One pooled product (pool.h): frae_gemm_packed_b's or _c's arguments,
 * and how its items cut it (by rows, or one panel an item). */
typedef struct {
    const frae_net *m;
    const frae_scratch *sc;
    int M, K;
    const float *a;
    ptrdiff_t a_rs, a_cs;
    const float *b;
    ptrdiff_t ldb;
    int rows, cols, k0, c0, c1, r0;
    float *c;
    ptrdiff_t ldc;
    const float *bias;
    int init, p0, p1;
    int parts; /* > 0: items are parts of the rows; 0: panels */
} product_job;

static void product_b_item(void *arg, int i)
{
    const product_job *j = arg;
    if (j->parts) {
        int r0 = part_start(j->M, i, j->parts);
        int r1 = part_start(j->M, i + 1, j->parts);
        for (int p = j->p0; p < j->p1; p++)
            panel_b(j->m, j->sc, p, r1 - r0, j->K, j->a + r0 * j->a_rs, j->a_rs,
                    j->a_cs, j->b, j->rows, j->cols, j->k0, j->c0, j->c1,
                    j->c + r0 * j->ldc, j->ldc, j->bias, j->init, -1);
    } else {
        panel_b(j->m, j->sc, j->p0 + i, j->M, j->K, j->a, j->a_rs, j->a_cs,
                j->b, j->rows, j->cols, j->k0, j->c0, j->c1, j->c, j->ldc,
                j->bias, j->init, -1);
    }
}

/* Parts a rows split cuts M rows into for T threads: more than T, so that
 * a thread the kernel deschedules holds back little, and at least 4 rows
 * each, so the kernels keep their row blocks. */
static int row_parts(int M, int T)
{
    int parts = M / 4;
    return parts > 4 * T ? 4 * T : parts < T ? T : parts;
}

/* C[M][c0..c1) = init + A . B[k0..k0+K)[c0..c1), with B a packed rows x
 * cols matrix: one GEMM per panel the column range touches.  bias and c
 * are indexed from c0.  A single row with enough zeros (ReLU outputs and
 * their gradients) goes through the sparse kernel: it streams only the
 * rows of B that meet a nonzero. */
void frae_gemm_packed_b(const frae_net *m, const frae_scratch *sc, int M, int K,
                        const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
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
     * chain: any split gives the same bits.  The pool is entered only to
     * thread: batch 1 makes dozens of small products per frame. */
    const int T = sc->threads;
    if (T > 1 && sc->pool && nnz < 0 &&
        (double)M * K * (c1 - c0) > FRAE_THREAD_MACS) {
        product_job j = {m,  sc, M,  K, a, a_rs, a_cs, b,    0,  rows, cols,
                         k0, c0, c1, 0, c, ldc,  bias, init, p0, p1,   0};
        if (rows_split_pays(M, T, p0, p1, c0, c1))
            j.parts = row_parts(M, T);
        frae_pool_run(sc->pool, j.parts ? j.parts : p1 - p0, product_b_item,
                      &j);
    } else {
        for (int p = p0; p < p1; p++)
            panel_b(m, sc, p, M, K, a, a_rs, a_cs, b, rows, cols, k0, c0, c1, c,
                    ldc, bias, init, nnz);
    }
}

/* Panel p of frae_gemm_packed_c below. */
static void panel_c(const frae_net *m, int p, int M, int K, const float *a,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    int rows, int cols, int r0, int init)
{
    int pc0 = p * FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    m->gemm(M, w, K, a, 1, a_cs, b + pc0, ldb,
            c + (size_t)pc0 * rows + (size_t)r0 * w, w, NULL, init);
}

static void product_c_item(void *arg, int i)
{
    const product_job *j = arg;
    if (j->parts) { /* rows of C are columns of A */
        int i0 = part_start(j->M, i, j->parts);
        int i1 = part_start(j->M, i + 1, j->parts);
        for (int p = 0; p < j->p1; p++)
            panel_c(j->m, p, i1 - i0, j->K, j->a + i0, j->a_cs, j->b, j->ldb,
                    j->c, j->rows, j->cols, j->r0 + i0, j->init);
    } else {
        panel_c(j->m, i, j->M, j->K, j->a, j->a_cs, j->b, j->ldb, j->c, j->rows,
                j->cols, j->r0, j->init);
    }
}

/* Rows r0..r0+M of a packed rows x cols matrix C = init + A^T . B, where A
 * is K x M (row stride a_cs) and B is K x cols (row stride ldb): the
 * weight-gradient shape. */
void frae_gemm_packed_c(const frae_net *m, const frae_scratch *sc, int M, int K,
                        const float *a, ptrdiff_t a_cs, const float *b,
                        ptrdiff_t ldb, float *c, int rows, int cols, int r0,
                        int init)
{
    const int np = (cols + FRAE_PANEL - 1) / FRAE_PANEL, T = sc->threads;
    if (T > 1 && sc->pool && (double)M * K * cols > FRAE_THREAD_MACS) {
        product_job j = {m, sc, M, K,  a, 0, a_cs, b,    ldb, rows, cols,
                         0, 0,  0, r0, c, 0, NULL, init, 0,   np,   0};
        if (rows_split_pays(M, T, 0, np, 0, cols))
            j.parts = row_parts(M, T);
        frae_pool_run(sc->pool, j.parts ? j.parts : np, product_c_item, &j);
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
static void bf16_product(const frae_net *m, const frae_scratch *sc,
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
        int w =
            ly->out - pc0 < FRAE_PANEL_BF16 ? ly->out - pc0 : FRAE_PANEL_BF16;
        int ldb = (w + 31) / 32 * 32;
        const uint16_t *panel = ly->wh + (size_t)pc0 * ly->in;
        const uint16_t *rows = panel + (size_t)k0 * ldb; /* dense forms */
        const float *bp = bias ? bias + pc0 : NULL;
        if (sparse)
            m->gemv_bf16(w, nnz, sc->idx, sc->val, panel, ldb, z + pc0, bp,
                         init);
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
void frae_layer_product(const frae_net *m, const frae_scratch *sc, int l,
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

/* The GRU cell's element-wise parts for nb rows, split by rows across the
 * scratch's threads when there are enough of them to pay for the fork:
 * every unit is computed alone, so any split gives the same bits. */
#define GRU_ROWS_PER_THREAD 4
static int gru_row_blocks(const frae_scratch *sc, int nb)
{
    int blocks = nb / GRU_ROWS_PER_THREAD;
    return blocks < sc->threads ? (blocks > 1 ? blocks : 1) : sc->threads;
}

typedef struct {
    const frae_net *m;
    int nb, nblk, H;
    const float *gx, *gh, *h_prev, *dh, *gates_in;
    float *gates, *h, *dgx, *dgh, *dh_prev;
} gru_job;

static void gru_forward_item(void *arg, int i)
{
    const gru_job *j = arg;
    const int H = j->H;
    int b0 = part_start(j->nb, i, j->nblk),
        b1 = part_start(j->nb, i + 1, j->nblk);
    j->m->gru_forward(b1 - b0, H, j->gx + (size_t)b0 * 3 * H,
                      j->gh + (size_t)b0 * 3 * H, j->h_prev + (size_t)b0 * H,
                      j->gates + (size_t)b0 * 4 * H, j->h + (size_t)b0 * H);
}

static void gru_backward_item(void *arg, int i)
{
    const gru_job *j = arg;
    const int H = j->H;
    int b0 = part_start(j->nb, i, j->nblk),
        b1 = part_start(j->nb, i + 1, j->nblk);
    j->m->gru_backward(
        b1 - b0, H, j->dh + (size_t)b0 * H, j->gates_in + (size_t)b0 * 4 * H,
        j->h_prev + (size_t)b0 * H, j->dgx + (size_t)b0 * 3 * H,
        j->dgh + (size_t)b0 * 3 * H, j->dh_prev + (size_t)b0 * H);
}

void frae_gru_rows_forward(const frae_net *m, const frae_scratch *sc, int nb,
                           int H, const float *gx, const float *gh,
                           const float *h_prev, float *gates, float *h)
{
    const int nblk = gru_row_blocks(sc, nb);
    if (nblk == 1 || !sc->pool) {
        m->gru_forward(nb, H, gx, gh, h_prev, gates, h);
        return;
    }
    gru_job j = {m,    nb,   nblk,  H, gx,   gh,   h_prev,
                 NULL, NULL, gates, h, NULL, NULL, NULL};
    frae_pool_run(sc->pool, nblk, gru_forward_item, &j);
}

void frae_gru_rows_backward(const frae_net *m, const frae_scratch *sc, int nb,
                            int H, const float *dh, const float *gates,
                            const float *h_prev, float *dgx, float *dgh,
                            float *dh_prev)
{
    const int nblk = gru_row_blocks(sc, nb);
    if (nblk == 1 || !sc->pool) {
        m->gru_backward(nb, H, dh, gates, h_prev, dgx, dgh, dh_prev);
        return;
    }
    gru_job j = {m,  nb,    nblk, H,    NULL, NULL, h_prev,
                 dh, gates, NULL, NULL, dgx,  dgh,  dh_prev};
    frae_pool_run(sc->pool, nblk, gru_backward_item, &j);
}
