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
#include <stdint.h>

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
/* aarch64 (kernels_neon.c): the same chains, four lanes a vector */
void frae_gemm_neon(int M, int N, int K, const float *a, ptrdiff_t a_rs,
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
                                    ptrdiff_t ldb, float *c, const float *bias,
                                    int init);
void frae_gemv_sparse_scalar(int N, int nnz, const int *idx, const float *val,
                             const float *b, ptrdiff_t ldb, float *c,
                             const float *bias, int init);
void frae_gemv_sparse_avx2(int N, int nnz, const int *idx, const float *val,
                           const float *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init);
void frae_gemv_sparse_avx512(int N, int nnz, const int *idx, const float *val,
                             const float *b, ptrdiff_t ldb, float *c,
                             const float *bias, int init);
void frae_gemv_sparse_neon(int N, int nnz, const int *idx, const float *val,
                           const float *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init);

/* The same one-row product with bfloat16 weights, for inference models
 * whose weights are bf16 (frae_config.weights): B is a panel of rows x ldb
 * bf16 values, ldb a multiple of 32, and N <= ldb.  Each row keeps its
 * columns in groups of 32 stored in pairs: 32-bit word i of a group holds
 * column i in its low half and column 16 + i in its high half, so one
 * shift and one mask turn a 64-byte load into columns 0..15 and 16..31 as
 * floats, with no shuffle.  idx NULL means the rows 0..nnz-1 in order (a
 * dense row, val = a).  bf16 -> fp32 is exact, so each output is the
 * same FMA chain as frae_gemv_sparse on the widened weights, to the bit. */
typedef void (*frae_gemv_bf16_fn)(int N, int nnz, const int *idx,
                                  const float *val, const uint16_t *b,
                                  ptrdiff_t ldb, float *c, const float *bias,
                                  int init);
void frae_gemv_bf16_scalar(int N, int nnz, const int *idx, const float *val,
                           const uint16_t *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init);
void frae_gemv_bf16_avx2(int N, int nnz, const int *idx, const float *val,
                         const uint16_t *b, ptrdiff_t ldb, float *c,
                         const float *bias, int init);
void frae_gemv_bf16_avx512(int N, int nnz, const int *idx, const float *val,
                           const uint16_t *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init);
void frae_gemv_bf16_neon(int N, int nnz, const int *idx, const float *val,
                         const uint16_t *b, ptrdiff_t ldb, float *c,
                         const float *bias, int init);

/* The nonzero entries of a[0..K): writes val[j] = a[k] and idx[j] = k0 + k
 * for them in increasing k and returns their count.  May write up to 16
 * entries past the count: idx and val need K + 16 slots.  This is the scan
 * behind every sparse one-row product, so it has SIMD versions too. */
typedef int (*frae_compact_fn)(int K, const float *a, int k0, int *idx,
                               float *val);
int frae_compact_scalar(int K, const float *a, int k0, int *idx, float *val);
int frae_compact_avx512(int K, const float *a, int k0, int *idx, float *val);
int frae_compact_neon(int K, const float *a, int k0, int *idx, float *val);
#define FRAE_COMPACT_SLACK 16

/* Two dense rows at once, accumulating: c0 += a0 . B, c1 += a1 . B over
 * rows 0..K-1 of the bf16 panel B (same layout), each output its own
 * chain, as the f32 GEMM computes two rows.  Every weight is loaded and
 * widened once for two FMAs: this serves the first layers' pairs of
 * fed-back frames. */
typedef void (*frae_gemv2_bf16_fn)(int N, int K, const float *a0,
                                   const float *a1, const uint16_t *b,
                                   ptrdiff_t ldb, float *c0, float *c1);
void frae_gemv2_bf16_scalar(int N, int K, const float *a0, const float *a1,
                            const uint16_t *b, ptrdiff_t ldb, float *c0,
                            float *c1);
void frae_gemv2_bf16_avx2(int N, int K, const float *a0, const float *a1,
                          const uint16_t *b, ptrdiff_t ldb, float *c0,
                          float *c1);
void frae_gemv2_bf16_avx512(int N, int K, const float *a0, const float *a1,
                            const uint16_t *b, ptrdiff_t ldb, float *c0,
                            float *c1);
void frae_gemv2_bf16_neon(int N, int K, const float *a0, const float *a1,
                          const uint16_t *b, ptrdiff_t ldb, float *c0,
                          float *c1);

/* Adam's update (optimizer.c) with the step size already folded in; the
 * same loop in every build, so the same bits. */
typedef void (*frae_adam_fn)(float *params, const float *grads, float *m,
                             float *v, size_t n, float alpha, float beta1,
                             float beta2, float eps);
void frae_adam_scalar(float *params, const float *grads, float *m, float *v,
                      size_t n, float alpha, float beta1, float beta2,
                      float eps);
void frae_adam_avx2(float *params, const float *grads, float *m, float *v,
                    size_t n, float alpha, float beta1, float beta2, float eps);
void frae_adam_neon(float *params, const float *grads, float *m, float *v,
                    size_t n, float alpha, float beta1, float beta2, float eps);

/* Columns per panel of a bf16 kernel (wider than FRAE_PANEL: the AVX-512
 * kernel keeps eight accumulators, 128 columns, in flight). */
#define FRAE_PANEL_BF16 128

/* Where column col of a bf16 row lives (the pairing above). */
static inline size_t frae_bf16_pos(int col)
{
    return (size_t)((col & ~31) + 2 * (col & 15) + ((col >> 4) & 1));
}
static inline float frae_bf16_to_f32(uint16_t h)
{
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)h << 16};
    return v.f;
}
/* Round to nearest even, as PyTorch's float -> bfloat16; NaN stays NaN. */
static inline uint16_t frae_f32_to_bf16(float f)
{
    union {
        float f;
        uint32_t u;
    } v = {f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(v.u >> 16 | 0x40u);
    return (uint16_t)((v.u + 0x7fffu + (v.u >> 16 & 1u)) >> 16);
}

/* gru.c: the GRU cell's element-wise update for nb rows of H units from
 * the two products gx = b_ih + W_ih in and gh = b_hh + W_hh h_prev
 * ([nb][3H], gates r, z, n): writes h [nb][H] and keeps r, z, n and gh_n
 * in gates [nb][4H] for the backward pass.  Its backward: dh [nb][H] is
 * dL/dh; writes dgx, dgh [nb][3H] (dL/d of the two products) and dh_prev
 * = dh * z (the direct path; the caller adds dgh . W_hh).  One source
 * built per ISA: the same bits from each. */
typedef void (*frae_gru_forward_fn)(int nb, int H, const float *gx,
                                    const float *gh, const float *h_prev,
                                    float *gates, float *h);
typedef void (*frae_gru_backward_fn)(int nb, int H, const float *dh,
                                     const float *gates, const float *h_prev,
                                     float *dgx, float *dgh, float *dh_prev);
#define FRAE_GRU_DECLARE(isa)                                                  \
    void frae_gru_forward_##isa(int nb, int H, const float *gx,                \
                                const float *gh, const float *h_prev,          \
                                float *gates, float *h);                       \
    void frae_gru_backward_##isa(int nb, int H, const float *dh,               \
                                 const float *gates, const float *h_prev,      \
                                 float *dgx, float *dgh, float *dh_prev);
FRAE_GRU_DECLARE(scalar)
FRAE_GRU_DECLARE(avx2)
FRAE_GRU_DECLARE(avx512)
FRAE_GRU_DECLARE(neon)

/* Resolves FRAE_ISA_* (AUTO reads env FRAE_ISA, then the CPU) to a kernel.
 * Returns the ISA used, or -1 if the requested one is not supported here. */
typedef struct {
    frae_gemm_fn gemm;
    frae_gemv_sparse_fn sparse;
    frae_gemv_bf16_fn bf16;
    frae_gemv2_bf16_fn bf16_pair;
    frae_compact_fn compact;
    frae_adam_fn adam;
    frae_gru_forward_fn gru_forward;
    frae_gru_backward_fn gru_backward;
    const char *name;
} frae_kernels;
int frae_select_kernels(int requested_isa, frae_kernels *k);

/* K-block: C is stored and reloaded between blocks, which keeps the order. */
#define FRAE_GEMM_KC 256

#endif
