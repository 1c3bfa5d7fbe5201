/* The GEMM driver shared by the SIMD kernels: blocks over K, columns and
 * rows, and calls the ISA's tile_dispatch.  Included by kernels_avx2.c and
 * kernels_avx512.c after they define MR, NV, VW, tile_mask_t,
 * tile_mask(tail) and tile_dispatch, and for the sparse one-row product
 * SP_NV, sparse_tile and SPARSE_CASES (a list of SPARSE_CASE(nv)).
 *
 * Panels of B outer, rows of A inner: a batch-1 matrix-vector product
 * streams B exactly once, and each output is one ordered FMA chain.
 * (In the weight-gradient shape A is read down columns lda apart and B by
 * rows ldb apart; with both 512 this kernel was measured at 108 GFLOP/s on
 * one core in isolation, the same as with padded strides, and copying B's
 * panel to contiguous memory gave nothing in training: no packing.) */

static void gemm_driver(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                        ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                        ptrdiff_t ldc, const float *bias, int init)
{
    for (int k0 = 0; k0 < K || k0 == 0; k0 += FRAE_GEMM_KC) {
        int kc = K - k0 < FRAE_GEMM_KC ? K - k0 : FRAE_GEMM_KC;
        int kinit = k0 == 0 ? init : GEMM_ACC;
        const float *ak = a + k0 * a_cs;
        const float *bk = b + k0 * ldb;
        for (int n0 = 0; n0 < N; n0 += NV * VW) {
            int nrem = N - n0 < NV * VW ? N - n0 : NV * VW;
            int nv = (nrem + VW - 1) / VW;
            tile_mask_t last = tile_mask(nrem - (nv - 1) * VW);
            for (int m0 = 0; m0 < M; m0 += MR) {
                int mr = M - m0 < MR ? M - m0 : MR;
                tile_dispatch(mr, nv, kc, ak + m0 * a_rs, a_rs, a_cs, bk + n0,
                              ldb, c + m0 * ldc + n0, ldc,
                              bias ? bias + n0 : bias, kinit, last);
            }
        }
        if (K == 0)
            break;
    }
}

/* The sparse one-row product (kernels.h): column blocks of up to SP_NV
 * vectors, each one register tile over the nonzero rows. */
#define SPARSE_CASE(NVV)                                                       \
    case NVV:                                                                  \
        sparse_tile(NVV, nnz, idx, val, b + n0, ldb, c + n0, bn, init, last);  \
        break;

static void sparse_driver(int N, int nnz, const int *idx, const float *val,
                          const float *b, ptrdiff_t ldb, float *c,
                          const float *bias, int init)
{
    for (int n0 = 0; n0 < N; n0 += SP_NV * VW) {
        int nrem = N - n0 < SP_NV * VW ? N - n0 : SP_NV * VW;
        int nv = (nrem + VW - 1) / VW;
        tile_mask_t last = tile_mask(nrem - (nv - 1) * VW);
        const float *bn = bias ? bias + n0 : bias;
        switch (nv) {
            SPARSE_CASES
        default: break;
        }
    }
}
