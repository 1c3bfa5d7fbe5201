/* AVX-512 GEMM: register tiles of MR rows x NV vectors of 16 columns.
 * Compiled with -mavx512f; called only when the CPU has it. */
#include "core/kernels.h"

#include <immintrin.h>

#define MR 6
#define NV 4
#define VW 16

static inline __attribute__((always_inline)) void
tile(const int mr, const int nv, int K, const float *a, ptrdiff_t a_rs,
     ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
     const float *bias, int init, __mmask16 last)
{
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            __mmask16 mk = v == nv - 1 ? last : (__mmask16)0xffff;
            if (init == GEMM_ZERO)
                acc[r][v] = _mm512_setzero_ps();
            else if (init == GEMM_BIAS)
                acc[r][v] = _mm512_maskz_loadu_ps(mk, bias + v * VW);
            else
                acc[r][v] = _mm512_maskz_loadu_ps(mk, c + r * ldc + v * VW);
        }
    }
    for (int k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        __m512 bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            bv[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, bk + v * VW)
                                : _mm512_loadu_ps(bk + v * VW);
        const float *ak = a + k * a_cs;
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            __m512 av = _mm512_set1_ps(ak[r * a_rs]);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            if (v == nv - 1)
                _mm512_mask_storeu_ps(c + r * ldc + v * VW, last, acc[r][v]);
            else
                _mm512_storeu_ps(c + r * ldc + v * VW, acc[r][v]);
        }
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
                          __mmask16 last)
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

typedef __mmask16 tile_mask_t;
static inline tile_mask_t tile_mask(int tail)
{
    return (__mmask16)((1u << tail) - 1u);
}

/* Sparse row times matrix (see kernels.h): up to SP_NV vectors of columns
 * at a time, accumulators in registers, rows of B picked by idx. */
#define SP_NV 4
static inline __attribute__((always_inline)) void
sparse_tile(const int nv, int nnz, const int *idx, const float *val,
            const float *b, ptrdiff_t ldb, float *c, const float *bias,
            int init, tile_mask_t last)
{
    __m512 acc[SP_NV];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
        if (init == GEMM_ZERO)
            acc[v] = _mm512_setzero_ps();
        else if (init == GEMM_BIAS)
            acc[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, (bias + v * VW))
                                 : _mm512_loadu_ps((bias + v * VW));
        else
            acc[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, (c + v * VW))
                                 : _mm512_loadu_ps((c + v * VW));
    }
    for (int j = 0; j < nnz; j++) {
        const float *bk = b + idx[j] * ldb;
        __m512 av = _mm512_set1_ps(val[j]);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[v] = _mm512_fmadd_ps(
                av,
                v == nv - 1 ? _mm512_maskz_loadu_ps(last, (bk + v * VW))
                            : _mm512_loadu_ps((bk + v * VW)),
                acc[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) {
        if (v == nv - 1)
            _mm512_mask_storeu_ps(c + v * VW, last, acc[v]);
        else
            _mm512_storeu_ps(c + v * VW, acc[v]);
    }
}

/* the tile widths instantiated for the shared sparse driver */
#define SPARSE_CASES                                                           \
    SPARSE_CASE(1)                                                             \
    SPARSE_CASE(2)                                                             \
    SPARSE_CASE(3)                                                             \
    SPARSE_CASE(4)

#include "core/kernels_driver.h"

void frae_gemm_avx512(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                      ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                      ptrdiff_t ldc, const float *bias, int init)
{
    gemm_driver(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init);
}

void frae_gemv_sparse_avx512(int N, int nnz, const int *idx, const float *val,
                             const float *b, ptrdiff_t ldb, float *c,
                             const float *bias, int init)
{
    sparse_driver(N, nnz, idx, val, b, ldb, c, bias, init);
}

/* Widens 32 paired bf16 columns (kernels.h) to floats: columns 0..15 from
 * the low halves (a shift), 16..31 from the high halves (a mask).  The
 * empty asm keeps one load feeding both: without it the compiler folds the
 * load into the shift and the mask, loading twice. */
static inline __attribute__((always_inline)) void
widen_bf16(const uint16_t *group, __m512 *lo, __m512 *hi)
{
    __m512i w = _mm512_loadu_si512((const void *)group);
    __asm__("" : "+v"(w));
    *lo = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *hi = _mm512_castsi512_ps(
        _mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
}

/* The lanes of a 16-column vector that hold one of `left` columns. */
static inline __mmask16 cols_mask(int left)
{
    return left >= VW ? (__mmask16)0xffff
                      : (__mmask16)((1u << (left > 0 ? left : 0)) - 1u);
}

/* bf16 one-row product (kernels.h): up to 128 columns (four pair groups)
 * at a time, up to eight accumulators, so that the FMA latency never
 * binds; a group is one 64-byte load, widened by a
 * shift (low halves: columns 0..15) and a mask (high halves: 16..31). */
static inline __attribute__((always_inline)) void
bf16_tile(const int ng, const int dense, int nnz, const int *idx,
          const float *val, const uint16_t *b, ptrdiff_t ldb, float *c,
          const float *bias, int init, int ncols)
{
    __m512 acc[8];
    __mmask16 mk[8];
#pragma GCC unroll 8
    for (int v = 0; v < 2 * ng; v++) {
        mk[v] = cols_mask(ncols - v * VW);
        if (init == GEMM_ZERO)
            acc[v] = _mm512_setzero_ps();
        else if (init == GEMM_BIAS)
            acc[v] = _mm512_maskz_loadu_ps(mk[v], bias + v * VW);
        else
            acc[v] = _mm512_maskz_loadu_ps(mk[v], c + v * VW);
    }
    for (int j = 0; j < nnz; j++) {
        const uint16_t *row = b + (dense ? j : idx[j]) * ldb;
        __m512 av = _mm512_set1_ps(val[j]);
#pragma GCC unroll 4
        for (int g = 0; g < ng; g++) {
            __m512 lo, hi;
            widen_bf16(row + 32 * g, &lo, &hi);
            acc[2 * g] = _mm512_fmadd_ps(av, lo, acc[2 * g]);
            acc[2 * g + 1] = _mm512_fmadd_ps(av, hi, acc[2 * g + 1]);
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < 2 * ng; v++)
        _mm512_mask_storeu_ps(c + v * VW, mk[v], acc[v]);
}

#define BF16_CASE(NG)                                                          \
    case NG:                                                                   \
        if (idx)                                                               \
            bf16_tile(NG, 0, nnz, idx, val, b + n0, ldb, c + n0, bn, init,     \
                      ncols);                                                  \
        else                                                                   \
            bf16_tile(NG, 1, nnz, idx, val, b + n0, ldb, c + n0, bn, init,     \
                      ncols);                                                  \
        break;

void frae_gemv_bf16_avx512(int N, int nnz, const int *idx, const float *val,
                           const uint16_t *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init)
{
    for (int n0 = 0; n0 < N; n0 += 128) {
        int ncols = N - n0 < 128 ? N - n0 : 128;
        const float *bn = bias ? bias + n0 : bias;
        switch ((ncols + 31) / 32) {
            BF16_CASE(1)
            BF16_CASE(2)
            BF16_CASE(3)
            BF16_CASE(4)
        default: break;
        }
    }
}

/* Two dense rows (kernels.h, frae_gemv2_bf16): up to 64 columns, eight
 * accumulators; each weight vector is widened once for both rows. */
static inline __attribute__((always_inline)) void
bf16_pair_tile(const int ng, int K, const float *a0, const float *a1,
               const uint16_t *b, ptrdiff_t ldb, float *c0, float *c1,
               int ncols)
{
    __m512 acc0[4], acc1[4];
    __mmask16 mk[4];
#pragma GCC unroll 4
    for (int v = 0; v < 2 * ng; v++) {
        mk[v] = cols_mask(ncols - v * VW);
        acc0[v] = _mm512_maskz_loadu_ps(mk[v], c0 + v * VW);
        acc1[v] = _mm512_maskz_loadu_ps(mk[v], c1 + v * VW);
    }
    for (int k = 0; k < K; k++) {
        const uint16_t *row = b + k * ldb;
        __m512 x0 = _mm512_set1_ps(a0[k]), x1 = _mm512_set1_ps(a1[k]);
#pragma GCC unroll 2
        for (int g = 0; g < ng; g++) {
            __m512 lo, hi;
            widen_bf16(row + 32 * g, &lo, &hi);
            acc0[2 * g] = _mm512_fmadd_ps(x0, lo, acc0[2 * g]);
            acc0[2 * g + 1] = _mm512_fmadd_ps(x0, hi, acc0[2 * g + 1]);
            acc1[2 * g] = _mm512_fmadd_ps(x1, lo, acc1[2 * g]);
            acc1[2 * g + 1] = _mm512_fmadd_ps(x1, hi, acc1[2 * g + 1]);
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < 2 * ng; v++) {
        _mm512_mask_storeu_ps(c0 + v * VW, mk[v], acc0[v]);
        _mm512_mask_storeu_ps(c1 + v * VW, mk[v], acc1[v]);
    }
}

void frae_gemv2_bf16_avx512(int N, int K, const float *a0, const float *a1,
                            const uint16_t *b, ptrdiff_t ldb, float *c0,
                            float *c1)
{
    for (int n0 = 0; n0 < N; n0 += 64) {
        int ncols = N - n0 < 64 ? N - n0 : 64;
        if (ncols > 32)
            bf16_pair_tile(2, K, a0, a1, b + n0, ldb, c0 + n0, c1 + n0, ncols);
        else
            bf16_pair_tile(1, K, a0, a1, b + n0, ldb, c0 + n0, c1 + n0, ncols);
    }
}

/* The nonzero scan (kernels.h), 16 values at a time: compress into a
 * register and store whole vectors (a compress straight to memory is slow
 * on some cores), which is why callers leave 16 slots of slack. */
int frae_compact_avx512(int K, const float *a, int k0, int *idx, float *val)
{
    int nnz = 0, k = 0;
    __m512i ks = _mm512_add_epi32(_mm512_set1_epi32(k0),
                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8,
                                                    9, 10, 11, 12, 13, 14, 15));
    const __m512i step = _mm512_set1_epi32(16);
    for (; k < K; k += 16) {
        __mmask16 in =
            K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(in, a + k);
        __mmask16 nz =
            _mm512_mask_cmp_ps_mask(in, v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        _mm512_storeu_ps(val + nnz, _mm512_maskz_compress_ps(nz, v));
        _mm512_storeu_si512((void *)(idx + nnz),
                            _mm512_maskz_compress_epi32(nz, ks));
        nnz += __builtin_popcount(nz);
        ks = _mm512_add_epi32(ks, step);
    }
    return nnz;
}
