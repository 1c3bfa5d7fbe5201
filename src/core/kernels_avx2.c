/* AVX2+FMA GEMM: register tiles of MR rows x NV vectors of 8 columns, 16
 * ymm registers in all.  Compiled with -mavx2 -mfma; called only when the
 * CPU has both. */
#include "core/kernels.h"

#include <immintrin.h>

#define MR 4
#define NV 3
#define VW 8

static const int mask_table[2 * VW] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                       0,  0,  0,  0,  0,  0,  0,  0};

static inline __attribute__((always_inline)) void
tile(const int mr, const int nv, int K, const float *a, ptrdiff_t a_rs,
     ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
     const float *bias, int init, __m256i last)
{
    const __m256i full = _mm256_set1_epi32(-1);
    __m256 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            __m256i mk = v == nv - 1 ? last : full;
            if (init == GEMM_ZERO)
                acc[r][v] = _mm256_setzero_ps();
            else if (init == GEMM_BIAS)
                acc[r][v] = _mm256_maskload_ps(bias + v * VW, mk);
            else
                acc[r][v] = _mm256_maskload_ps(c + r * ldc + v * VW, mk);
        }
    }
    for (int k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        __m256 bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            bv[v] = v == nv - 1 ? _mm256_maskload_ps(bk + v * VW, last)
                                : _mm256_loadu_ps(bk + v * VW);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            __m256 av = _mm256_broadcast_ss(ak + r * a_rs);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            if (v == nv - 1)
                _mm256_maskstore_ps(c + r * ldc + v * VW, last, acc[r][v]);
            else
                _mm256_storeu_ps(c + r * ldc + v * VW, acc[r][v]);
        }
    }
}

#define TILE_CASE(MRV, NVV)                                                    \
    case (MRV)*8 + (NVV):                                                      \
        tile(MRV, NVV, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init, last);    \
        break;
#define TILE_ROW(MRV) TILE_CASE(MRV, 1) TILE_CASE(MRV, 2) TILE_CASE(MRV, 3)

static void tile_dispatch(int mr, int nv, int K, const float *a, ptrdiff_t a_rs,
                          ptrdiff_t a_cs, const float *b, ptrdiff_t ldb,
                          float *c, ptrdiff_t ldc, const float *bias, int init,
                          __m256i last)
{
    /* the cases are macros, which clang-format cannot lay out */
    /* clang-format off */
    switch (mr * 8 + nv) {
        TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4)
    default:
        break;
    }
    /* clang-format on */
}

typedef __m256i tile_mask_t;
static inline tile_mask_t tile_mask(int tail)
{
    return _mm256_loadu_si256((const __m256i *)(mask_table + VW - tail));
}

/* Sparse row times matrix (see kernels.h): up to SP_NV vectors of columns
 * at a time, accumulators in registers, rows of B picked by idx. */
#define SP_NV 8
static inline __attribute__((always_inline)) void
sparse_tile(const int nv, int nnz, const int *idx, const float *val,
            const float *b, ptrdiff_t ldb, float *c, const float *bias,
            int init, tile_mask_t last)
{
    __m256 acc[SP_NV];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
        if (init == GEMM_ZERO)
            acc[v] = _mm256_setzero_ps();
        else if (init == GEMM_BIAS)
            acc[v] = v == nv - 1 ? _mm256_maskload_ps((bias + v * VW), last)
                                 : _mm256_loadu_ps((bias + v * VW));
        else
            acc[v] = v == nv - 1 ? _mm256_maskload_ps((c + v * VW), last)
                                 : _mm256_loadu_ps((c + v * VW));
    }
    for (int j = 0; j < nnz; j++) {
        const float *bk = b + idx[j] * ldb;
        __m256 av = _mm256_set1_ps(val[j]);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[v] = _mm256_fmadd_ps(
                av,
                v == nv - 1 ? _mm256_maskload_ps((bk + v * VW), last)
                            : _mm256_loadu_ps((bk + v * VW)),
                acc[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
        if (v == nv - 1)
            _mm256_maskstore_ps(c + v * VW, last, acc[v]);
        else
            _mm256_storeu_ps(c + v * VW, acc[v]);
    }
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
    SPARSE_CASE(8)

#include "core/kernels_driver.h"

void frae_gemm_avx2(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    ptrdiff_t ldc, const float *bias, int init)
{
    gemm_driver(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init);
}

void frae_gemv_sparse_avx2(int N, int nnz, const int *idx, const float *val,
                           const float *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init)
{
    sparse_driver(N, nnz, idx, val, b, ldb, c, bias, init);
}

/* Widens 16 paired bf16 words (kernels.h): their low halves (a shift)
 * and high halves (a mask) as floats.  The empty asm keeps one load
 * feeding both instead of two folded loads. */
static inline __attribute__((always_inline)) void
widen_bf16(const uint16_t *words, __m256 *lo, __m256 *hi)
{
    __m256i w = _mm256_loadu_si256((const __m256i *)words);
    __asm__("" : "+x"(w));
    *lo = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *hi = _mm256_castsi256_ps(
        _mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u)));
}

/* bf16 one-row product (kernels.h): 64 columns (two pair groups) at a
 * time, eight accumulators of 8 columns.  A group is two 32-byte loads:
 * words 0..7 widen to columns 0..7 (shift) and 16..23 (mask), words 8..15
 * to columns 8..15 and 24..31. */
static inline __attribute__((always_inline)) void
bf16_tile(const int ng, const int dense, int nnz, const int *idx,
          const float *val, const uint16_t *b, ptrdiff_t ldb, float *c,
          const float *bias, int init, int ncols)
{
    __m256 acc[8];
    __m256i mk[8];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 8
    for (int v = 0; v < 4 * ng; v++) {
        mk[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(ncols - v * VW), lane);
        if (init == GEMM_ZERO)
            acc[v] = _mm256_setzero_ps();
        else if (init == GEMM_BIAS)
            acc[v] = _mm256_maskload_ps(bias + v * VW, mk[v]);
        else
            acc[v] = _mm256_maskload_ps(c + v * VW, mk[v]);
    }
    for (int j = 0; j < nnz; j++) {
        const uint16_t *row = b + (dense ? j : idx[j]) * ldb;
        __m256 av = _mm256_set1_ps(val[j]);
#pragma GCC unroll 2
        for (int g = 0; g < ng; g++) {
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256 lo, hi;
                widen_bf16(row + 32 * g + 16 * h, &lo, &hi);
                acc[4 * g + h] = _mm256_fmadd_ps(av, lo, acc[4 * g + h]);
                acc[4 * g + 2 + h] =
                    _mm256_fmadd_ps(av, hi, acc[4 * g + 2 + h]);
            }
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < 4 * ng; v++)
        _mm256_maskstore_ps(c + v * VW, mk[v], acc[v]);
}

void frae_gemv_bf16_avx2(int N, int nnz, const int *idx, const float *val,
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
 * group) at a time, eight accumulators. */
void frae_gemv2_bf16_avx2(int N, int K, const float *a0, const float *a1,
                          const uint16_t *b, ptrdiff_t ldb, float *c0,
                          float *c1)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int n0 = 0; n0 < N; n0 += 32) {
        __m256 acc0[4], acc1[4];
        __m256i mk[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            mk[v] =
                _mm256_cmpgt_epi32(_mm256_set1_epi32(N - n0 - v * VW), lane);
            acc0[v] = _mm256_maskload_ps(c0 + n0 + v * VW, mk[v]);
            acc1[v] = _mm256_maskload_ps(c1 + n0 + v * VW, mk[v]);
        }
        for (int k = 0; k < K; k++) {
            const uint16_t *row = b + k * ldb + n0;
            __m256 x0 = _mm256_set1_ps(a0[k]), x1 = _mm256_set1_ps(a1[k]);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256 lo, hi;
                widen_bf16(row + 16 * h, &lo, &hi);
                acc0[h] = _mm256_fmadd_ps(x0, lo, acc0[h]);
                acc0[2 + h] = _mm256_fmadd_ps(x0, hi, acc0[2 + h]);
                acc1[h] = _mm256_fmadd_ps(x1, lo, acc1[h]);
                acc1[2 + h] = _mm256_fmadd_ps(x1, hi, acc1[2 + h]);
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            _mm256_maskstore_ps(c0 + n0 + v * VW, mk[v], acc0[v]);
            _mm256_maskstore_ps(c1 + n0 + v * VW, mk[v], acc1[v]);
        }
    }
}

#include <math.h>

#include "core/adam_loop.h"

void frae_adam_avx2(float *params, const float *grads, float *m, float *v,
                    size_t n, float alpha, float beta1, float beta2, float eps)
{
    adam_loop(params, grads, m, v, n, alpha, beta1, beta2, eps);
}
