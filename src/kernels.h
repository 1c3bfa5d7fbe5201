/* Dense kernels shared by forward, backward and the weight-gradient pass.
 *
 * One primitive: C[m][n] = init + sum_k A(m,k) * B[k][n], where every output
 * is one fused multiply-add chain over k in increasing order.  Vectorising
 * across n (broadcast A, load a row of B) keeps that order in every lane, so
 * the scalar reference and the SIMD kernels agree to the bit.  A is read
 * through two strides, so the same kernel serves A (a_rs = lda, a_cs = 1)
 * and A transposed (a_rs = 1, a_cs = lda). */
#ifndef FRAE_KERNELS_H
#define FRAE_KERNELS_H

#include <stddef.h>

enum { GEMM_ZERO = 0, GEMM_ACC = 1, GEMM_BIAS = 2 };

typedef void (*frae_gemm_fn)(int M, int N, int K, const float *a,
                             ptrdiff_t a_rs, ptrdiff_t a_cs, const float *b,
                             ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                             const float *bias, int init);

/* Plain reference: a triple loop with fmaf. */
void frae_gemm_scalar(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                      ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                      ptrdiff_t ldc, const float *bias, int init);
/* Built with target flags; only called after a runtime CPU check. */
void frae_gemm_avx2(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                    ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                    ptrdiff_t ldc, const float *bias, int init);
void frae_gemm_avx512(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                      ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                      ptrdiff_t ldc, const float *bias, int init);

/* One row times a matrix, over the nonzero entries of the row only:
 * c[n] = init + sum_j val[j] * B[idx[j]][n], j in increasing order (so idx
 * ascending keeps the dense chain's order).  For finite B, skipping
 * fma(0, w, acc) leaves acc unchanged, so this equals the dense GEMM as
 * long as no partial sum is -0 (it cannot start as one: frae keeps biases
 * +0, and a sum of nonzero terms that cancels exactly is +0); only an
 * underflow to -0 could tell them apart, by the sign of a zero.  At batch 1
 * the weights stream from L3 and ReLU zeroes half the inputs, so this
 * halves the bytes. */
typedef void (*frae_gemv_sparse_fn)(int N, int nnz, const int *idx,
                                    const float *val, const float *b,
                                    ptrdiff_t ldb, float *c,
                                    const float *bias, int init);
void frae_gemv_sparse_scalar(int N, int nnz, const int *idx, const float *val,
                             const float *b, ptrdiff_t ldb, float *c,
                             const float *bias, int init);
void frae_gemv_sparse_avx2(int N, int nnz, const int *idx, const float *val,
                           const float *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init);
void frae_gemv_sparse_avx512(int N, int nnz, const int *idx,
                             const float *val, const float *b, ptrdiff_t ldb,
                             float *c, const float *bias, int init);

/* Resolves FRAE_ISA_* (AUTO reads env FRAE_ISA, then the CPU) to a kernel.
 * Returns the ISA used, or -1 if the requested one is not supported here. */
int frae_select_gemm(int requested_isa, frae_gemm_fn *fn,
                     frae_gemv_sparse_fn *sparse, const char **name);

/* K-block: C is stored and reloaded between blocks, which keeps the order. */
#define FRAE_GEMM_KC 256

#endif
