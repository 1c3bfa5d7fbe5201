/* NEON kernels for aarch64: the GEMM in register tiles of MR rows x NV
 * vectors of 4 columns (24 of the 32 vector registers accumulate), the
 * sparse and bf16 one-row products, the two-row bf16 product, the nonzero
 * scan and Adam.  NEON is part of the aarch64 baseline, so this file needs
 * no target flag and the table always offers it there (kernels.c).
 *
 * Each output is the chain the scalar reference computes: vfmaq_f32 is
 * one fused multiply-add per lane, as fmaf and the x86 kernels'
 * _mm*_fmadd_ps, over k in increasing order; nothing else touches the
 * accumulators.  (The Makefile's -ffp-contract=off matters most here:
 * GCC on aarch64 would otherwise fuse a separate multiply and add into
 * fmadd wherever it saw one, in this file and every other.)
 *
 * NEON has no masked loads: a tile's last vector of `tail` < 4 columns is
 * loaded and stored lane by lane, its other lanes zero and never stored. */
#include "core/kernels.h"

#include <arm_neon.h>

#define MR 6
#define NV 4
#define VW 4

static inline __attribute__((always_inline)) float32x4_t
load_cols(const float *p, int n)
{
    if (n >= VW)
        return vld1q_f32(p);
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vld1q_lane_f32(p, v, 0);
    if (n > 1)
        v = vld1q_lane_f32(p + 1, v, 1);
    if (n > 2)
        v = vld1q_lane_f32(p + 2, v, 2);
    return v;
}

static inline __attribute__((always_inline)) void
store_cols(float *p, float32x4_t v, int n)
{
    if (n >= VW) {
        vst1q_f32(p, v);
        return;
    }
    vst1q_lane_f32(p, v, 0);
    if (n > 1)
        vst1q_lane_f32(p + 1, v, 1);
    if (n > 2)
        vst1q_lane_f32(p + 2, v, 2);
}

static inline __attribute__((always_inline)) void
tile(const int mr, const int nv, int K, const float *a, ptrdiff_t a_rs,
     ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
     const float *bias, int init, int last)
{
    float32x4_t acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            int n = v == nv - 1 ? last : VW;
            if (init == GEMM_ZERO)
                acc[r][v] = vdupq_n_f32(0.0f);
            else if (init == GEMM_BIAS)
                acc[r][v] = load_cols(bias + v * VW, n);
            else
                acc[r][v] = load_cols(c + r * ldc + v * VW, n);
        }
    }
    for (int k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        float32x4_t bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            bv[v] = load_cols(bk + v * VW, v == nv - 1 ? last : VW);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            float32x4_t av = vld1q_dup_f32(ak + r * a_rs);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = vfmaq_f32(acc[r][v], av, bv[v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            store_cols(c + r * ldc + v * VW, acc[r][v],
                       v == nv - 1 ? last : VW);
    }
}

#define TILE_CASE(MRV, NVV)                                                    \
    case (MRV)*8 + (NVV):                                                      \
        tile(MRV, NVV, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init, last);    \
        break;
#define TILE_ROW(MRV)                                                          \
    TILE_CASE(MRV, 1) TILE_CASE(MRV, 2) TILE_CASE(MRV, 3) TILE_CASE(MRV, 4)

static void tile_dispatch(int mr, int nv, int K, const float *a, ptrdiff_t a_rs,
                          ptrdiff_t a_cs, const float *b, ptrdiff_t ldb,
                          float *c, ptrdiff_t ldc, const float *bias, int init,
                          int last)
{
    /* the cases are macros, which clang-format cannot lay out */
    /* clang-format off */
    switch (mr * 8 + nv) {
        TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6)
    default:
        break;
    }
    /* clang-format on */
}

/* the last vector's width in columns, 1..4 */
typedef int tile_mask_t;
static inline tile_mask_t tile_mask(int tail) { return tail; }

/* Sparse row times matrix (see kernels.h): up to SP_NV vectors of columns
 * at a time, accumulators in registers, rows of B picked by idx. */
#define SP_NV 16
static inline __attribute__((always_inline)) void
sparse_tile(const int nv, int nnz, const int *idx, const float *val,
            const float *b, ptrdiff_t ldb, float *c, const float *bias,
            int init, tile_mask_t last)
{
    float32x4_t acc[SP_NV];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
        int n = v == nv - 1 ? last : VW;
        if (init == GEMM_ZERO)
            acc[v] = vdupq_n_f32(0.0f);
        else if (init == GEMM_BIAS)
            acc[v] = load_cols(bias + v * VW, n);
        else
            acc[v] = load_cols(c + v * VW, n);
    }
    for (int j = 0; j < nnz; j++) {
        const float *bk = b + idx[j] * ldb;
        float32x4_t av = vdupq_n_f32(val[j]);
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++)
            acc[v] = vfmaq_f32(acc[v], av,
                               load_cols(bk + v * VW, v == nv - 1 ? last : VW));
    }
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++)
        store_cols(c + v * VW, acc[v], v == nv - 1 ? last : VW);
}

/* the tile widths instantiated for the shared sparse driver */
#define SPARSE_CASES                                                           \
    SPARSE_CASE(1)                                                             \
    SPARSE_CASE(2)                                                             \
    SPARSE_CASE(3)                                                             \
    SPARSE_CASE(4)                                                             \
    SPARSE_CASE(5)                                                             \
    SPARSE_CASE(6)                                                             \
    SPARSE_CASE(7)                                                             \
    SPARSE_CASE(8)                                                             \
    SPARSE_CASE(9)                                                             \
    SPARSE_CASE(10)                                                            \
    SPARSE_CASE(11)                                                            \
    SPARSE_CASE(12)                                                            \
    SPARSE_CASE(13)                                                            \
    SPARSE_CASE(14)                                                            \
    SPARSE_CASE(15)                                                            \
    SPARSE_CASE(16)

#include "core/kernels_driver.h"

void frae_gemm_neon(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    ptrdiff_t ldc, const float *bias, int init)
{
    gemm_driver(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init);
}

void frae_gemv_sparse_neon(int N, int nnz, const int *idx, const float *val,
                           const float *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init)
{
    sparse_driver(N, nnz, idx, val, b, ldb, c, bias, init);
}

/* Widens 4 paired bf16 words (kernels.h): word i of a group holds column
 * i in its low half and column 16 + i in its high half, so a shift gives
 * four columns and a mask the four 16 columns on, both exact. */
static inline __attribute__((always_inline)) void
widen_bf16(const uint16_t *words, float32x4_t *lo, float32x4_t *hi)
{
    uint32x4_t w = vld1q_u32((const uint32_t *)(const void *)words);
    *lo = vreinterpretq_f32_u32(vshlq_n_u32(w, 16));
    *hi = vreinterpretq_f32_u32(vandq_u32(w, vdupq_n_u32(0xffff0000u)));
}

/* c[0..ncols) of a tile of up to 64 columns, through a buffer: the
 * accumulators are whole vectors, c and the bias only ncols long. */
static inline __attribute__((always_inline)) void
load_row(float *buf, const float *src, int ncols, int init)
{
    for (int i = 0; i < 64; i++)
        buf[i] = init != GEMM_ZERO && i < ncols ? src[i] : 0.0f;
}

/* bf16 one-row product (kernels.h): 64 columns (two pair groups) at a
 * time, sixteen accumulators of 4 columns.  Word q of a group's sixteen
 * (4 a load) widens to columns 4q.. (shift) and 16 + 4q.. (mask). */
static inline __attribute__((always_inline)) void
bf16_tile(const int ng, const int dense, int nnz, const int *idx,
          const float *val, const uint16_t *b, ptrdiff_t ldb, float *c,
          const float *bias, int init, int ncols)
{
    float buf[64];
    float32x4_t acc[16];
    load_row(buf, init == GEMM_BIAS ? bias : c, ncols, init);
#pragma GCC unroll 16
    for (int v = 0; v < 8 * ng; v++)
        acc[v] = vld1q_f32(buf + v * VW);
    for (int j = 0; j < nnz; j++) {
        const uint16_t *row = b + (dense ? j : idx[j]) * ldb;
        float32x4_t av = vdupq_n_f32(val[j]);
#pragma GCC unroll 2
        for (int g = 0; g < ng; g++) {
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                float32x4_t lo, hi;
                widen_bf16(row + 32 * g + 8 * q, &lo, &hi);
                acc[8 * g + q] = vfmaq_f32(acc[8 * g + q], av, lo);
                acc[8 * g + 4 + q] = vfmaq_f32(acc[8 * g + 4 + q], av, hi);
            }
        }
    }
#pragma GCC unroll 16
    for (int v = 0; v < 8 * ng; v++)
        vst1q_f32(buf + v * VW, acc[v]);
    for (int i = 0; i < ncols; i++)
        c[i] = buf[i];
}

void frae_gemv_bf16_neon(int N, int nnz, const int *idx, const float *val,
                         const uint16_t *b, ptrdiff_t ldb, float *c,
                         const float *bias, int init)
{
    for (int n0 = 0; n0 < N; n0 += 64) {
        int ncols = N - n0 < 64 ? N - n0 : 64;
        const float *bn = bias ? bias + n0 : bias;
        if (!idx && ncols > 32)
            bf16_tile(2, 1, nnz, idx, val, b + n0, ldb, c + n0, bn, init,
                      ncols);
        else if (!idx)
            bf16_tile(1, 1, nnz, idx, val, b + n0, ldb, c + n0, bn, init,
                      ncols);
        else if (ncols > 32)
            bf16_tile(2, 0, nnz, idx, val, b + n0, ldb, c + n0, bn, init,
                      ncols);
        else
            bf16_tile(1, 0, nnz, idx, val, b + n0, ldb, c + n0, bn, init,
                      ncols);
    }
}

/* Two dense rows (kernels.h, frae_gemv2_bf16): 32 columns (one pair
 * group) at a time, eight accumulators a row; each weight vector is
 * widened once for both rows. */
void frae_gemv2_bf16_neon(int N, int K, const float *a0, const float *a1,
                          const uint16_t *b, ptrdiff_t ldb, float *c0,
                          float *c1)
{
    for (int n0 = 0; n0 < N; n0 += 32) {
        const int ncols = N - n0 < 32 ? N - n0 : 32;
        float buf0[64], buf1[64];
        float32x4_t acc0[8], acc1[8];
        load_row(buf0, c0 + n0, ncols, GEMM_ACC);
        load_row(buf1, c1 + n0, ncols, GEMM_ACC);
#pragma GCC unroll 8
        for (int v = 0; v < 8; v++) {
            acc0[v] = vld1q_f32(buf0 + v * VW);
            acc1[v] = vld1q_f32(buf1 + v * VW);
        }
        for (int k = 0; k < K; k++) {
            const uint16_t *row = b + k * ldb + n0;
            float32x4_t x0 = vdupq_n_f32(a0[k]), x1 = vdupq_n_f32(a1[k]);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                float32x4_t lo, hi;
                widen_bf16(row + 8 * q, &lo, &hi);
                acc0[q] = vfmaq_f32(acc0[q], x0, lo);
                acc0[4 + q] = vfmaq_f32(acc0[4 + q], x0, hi);
                acc1[q] = vfmaq_f32(acc1[q], x1, lo);
                acc1[4 + q] = vfmaq_f32(acc1[4 + q], x1, hi);
            }
        }
#pragma GCC unroll 8
        for (int v = 0; v < 8; v++) {
            vst1q_f32(buf0 + v * VW, acc0[v]);
            vst1q_f32(buf1 + v * VW, acc1[v]);
        }
        for (int i = 0; i < ncols; i++) {
            c0[n0 + i] = buf0[i];
            c1[n0 + i] = buf1[i];
        }
    }
}

/* The nonzero scan (kernels.h), 4 values at a time: the nonzero lanes'
 * 4-bit mask picks a byte shuffle that packs them to the front (the
 * compress AVX-512 has in one instruction); a NaN counts as nonzero, as
 * in the scalar scan's !=. */
static const uint8_t compress_table[16][16] = {
#define L(i) 4 * (i), 4 * (i) + 1, 4 * (i) + 2, 4 * (i) + 3
    {0},
    {L(0)},
    {L(1)},
    {L(0), L(1)},
    {L(2)},
    {L(0), L(2)},
    {L(1), L(2)},
    {L(0), L(1), L(2)},
    {L(3)},
    {L(0), L(3)},
    {L(1), L(3)},
    {L(0), L(1), L(3)},
    {L(2), L(3)},
    {L(0), L(2), L(3)},
    {L(1), L(2), L(3)},
    {L(0), L(1), L(2), L(3)},
#undef L
};

int frae_compact_neon(int K, const float *a, int k0, int *idx, float *val)
{
    int nnz = 0, k = 0;
    static const int32_t lane[4] = {0, 1, 2, 3};
    static const uint32_t bit[4] = {1, 2, 4, 8};
    int32x4_t ks = vaddq_s32(vdupq_n_s32(k0), vld1q_s32(lane));
    const uint32x4_t bits = vld1q_u32(bit);
    for (; k + 4 <= K; k += 4) {
        float32x4_t v = vld1q_f32(a + k);
        uint32x4_t nz = vmvnq_u32(vceqq_f32(v, vdupq_n_f32(0.0f)));
        unsigned m = vaddvq_u32(vandq_u32(nz, bits));
        uint8x16_t sh = vld1q_u8(compress_table[m]);
        vst1q_f32(val + nnz, vreinterpretq_f32_u8(
                                 vqtbl1q_u8(vreinterpretq_u8_f32(v), sh)));
        vst1q_s32(idx + nnz, vreinterpretq_s32_u8(
                                 vqtbl1q_u8(vreinterpretq_u8_s32(ks), sh)));
        nnz += __builtin_popcount(m);
        ks = vaddq_s32(ks, vdupq_n_s32(4));
    }
    for (; k < K; k++) { /* the scalar scan's tail */
        idx[nnz] = k0 + k;
        val[nnz] = a[k];
        nnz += a[k] != 0.0f;
    }
    return nnz;
}

#include <math.h>

#include "core/adam_loop.h"

/* Adam: the loop of optimizer.c, which GCC vectorises four lanes wide
 * (IEEE multiply, add, square root and divide: the same bits) */
void frae_adam_neon(float *params, const float *grads, float *m, float *v,
                    size_t n, float alpha, float beta1, float beta2, float eps)
{
    adam_loop(params, grads, m, v, n, alpha, beta1, beta2, eps);
}
