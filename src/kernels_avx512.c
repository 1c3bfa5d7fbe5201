/* AVX-512 GEMM: register tiles of MR rows x NV vectors of 16 columns.
 * Compiled with -mavx512f; called only when the CPU has it. */
#include "kernels.h"

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
    case (MRV) * 8 + (NVV):                                                    \
        tile(MRV, NVV, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init, last);    \
        break;
#define TILE_ROW(MRV)                                                          \
    TILE_CASE(MRV, 1) TILE_CASE(MRV, 2) TILE_CASE(MRV, 3) TILE_CASE(MRV, 4)

static void tile_dispatch(int mr, int nv, int K, const float *a,
                          ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                          ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                          const float *bias, int init, __mmask16 last)
{
    switch (mr * 8 + nv) {
        TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6)
    default:
        break;
    }
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
            acc[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, (bias + v * VW)) : _mm512_loadu_ps((bias + v * VW));
        else
            acc[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, (c + v * VW)) : _mm512_loadu_ps((c + v * VW));
    }
    for (int j = 0; j < nnz; j++) {
        const float *bk = b + idx[j] * ldb;
        __m512 av = _mm512_set1_ps(val[j]);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[v] = _mm512_fmadd_ps(av, v == nv - 1 ? _mm512_maskz_loadu_ps(last, (bk + v * VW)) : _mm512_loadu_ps((bk + v * VW)), acc[v]);
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
#define SPARSE_CASES \
    SPARSE_CASE(1) \
    SPARSE_CASE(2) \
    SPARSE_CASE(3) \
    SPARSE_CASE(4)

#include "kernels_driver.h"

void frae_gemm_avx512(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                     ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                     ptrdiff_t ldc, const float *bias, int init)
{
    gemm_driver(M, N, K, a, a_rs, a_cs, b, ldb, c, ldc, bias, init);
}

void frae_gemv_sparse_avx512(int N, int nnz, const int *idx, const float *val,
                      const float *b, ptrdiff_t ldb, float *c, const float *bias,
                      int init)
{
    sparse_driver(N, nnz, idx, val, b, ldb, c, bias, init);
}
