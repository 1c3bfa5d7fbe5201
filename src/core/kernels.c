/* Scalar reference kernel and runtime ISA dispatch. */
#include "core/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "frae.h"

void frae_gemm_scalar(int M, int N, int K, const float *a, ptrdiff_t a_rs,
                      ptrdiff_t a_cs, const float *b, ptrdiff_t ldb, float *c,
                      ptrdiff_t ldc, const float *bias, int init)
{
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            float acc = init == GEMM_ZERO   ? 0.0f
                        : init == GEMM_BIAS ? bias[n]
                                            : c[m * ldc + n];
            for (int k = 0; k < K; k++)
                acc = fmaf(a[m * a_rs + k * a_cs], b[k * ldb + n], acc);
            c[m * ldc + n] = acc;
        }
    }
}

void frae_gemv_sparse_scalar(int N, int nnz, const int *idx, const float *val,
                             const float *b, ptrdiff_t ldb, float *c,
                             const float *bias, int init)
{
    for (int n = 0; n < N; n++) {
        float acc = init == GEMM_ZERO   ? 0.0f
                    : init == GEMM_BIAS ? bias[n]
                                        : c[n];
        for (int j = 0; j < nnz; j++)
            acc = fmaf(val[j], b[idx[j] * ldb + n], acc);
        c[n] = acc;
    }
}

void frae_gemv_bf16_scalar(int N, int nnz, const int *idx, const float *val,
                           const uint16_t *b, ptrdiff_t ldb, float *c,
                           const float *bias, int init)
{
    for (int n = 0; n < N; n++) {
        float acc = init == GEMM_ZERO   ? 0.0f
                    : init == GEMM_BIAS ? bias[n]
                                        : c[n];
        for (int j = 0; j < nnz; j++)
            acc = fmaf(val[j],
                       frae_bf16_to_f32(
                           b[(idx ? idx[j] : j) * ldb + frae_bf16_pos(n)]),
                       acc);
        c[n] = acc;
    }
}

void frae_gemv2_bf16_scalar(int N, int K, const float *a0, const float *a1,
                            const uint16_t *b, ptrdiff_t ldb, float *c0,
                            float *c1)
{
    for (int n = 0; n < N; n++) {
        float acc0 = c0[n], acc1 = c1[n];
        for (int k = 0; k < K; k++) {
            float w = frae_bf16_to_f32(b[k * ldb + frae_bf16_pos(n)]);
            acc0 = fmaf(a0[k], w, acc0);
            acc1 = fmaf(a1[k], w, acc1);
        }
        c0[n] = acc0;
        c1[n] = acc1;
    }
}

int frae_compact_scalar(int K, const float *a, int k0, int *idx, float *val)
{
    int nnz = 0;
    for (int k = 0; k < K; k++) { /* branch-free: ReLU zeros look random */
        idx[nnz] = k0 + k;
        val[nnz] = a[k];
        nnz += a[k] != 0.0f;
    }
    return nnz;
}

/* The kernels each target has: AVX2 and AVX-512 on x86 (built with their
 * own target flags, so the CPU is asked), NEON on aarch64 (its baseline,
 * always there). */
#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86_KERNELS 1
#endif
#if defined(__aarch64__)
#define HAVE_NEON_KERNELS 1
#endif

static int cpu_has(int isa)
{
#if defined(HAVE_NEON_KERNELS)
    if (isa == FRAE_ISA_NEON)
        return 1;
#endif
#if defined(HAVE_X86_KERNELS)
    __builtin_cpu_init();
    if (isa == FRAE_ISA_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == FRAE_ISA_AVX512) /* it uses the AVX2 Adam too */
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return isa == FRAE_ISA_SCALAR;
}

int frae_select_kernels(int requested, frae_kernels *k)
{
    int isa = requested;
    if (isa == FRAE_ISA_AUTO) {
        /* getenv only reads; it is the one process-wide input we honour. */
        /* getenv only reads; it is the one process-wide input we honour */
        int forced =
            frae_name_index(frae_isa_names, FRAE_NAME_COUNT(frae_isa_names),
                            getenv("FRAE_ISA"));
        if (forced > FRAE_ISA_AUTO)
            isa = forced;
        else if (cpu_has(FRAE_ISA_NEON))
            isa = FRAE_ISA_NEON;
        else if (cpu_has(FRAE_ISA_AVX512))
            isa = FRAE_ISA_AVX512;
        else if (cpu_has(FRAE_ISA_AVX2))
            isa = FRAE_ISA_AVX2;
        else
            isa = FRAE_ISA_SCALAR;
    }
    if (!cpu_has(isa))
        return -1;
    switch (isa) {
#if defined(HAVE_NEON_KERNELS)
    case FRAE_ISA_NEON:
        *k = (frae_kernels){
            frae_gemm_neon,        frae_gemv_sparse_neon,  frae_gemv_bf16_neon,
            frae_gemv2_bf16_neon,  frae_compact_neon,      frae_adam_neon,
            frae_gru_forward_neon, frae_gru_backward_neon, "neon"};
        break;
#endif
#if defined(HAVE_X86_KERNELS)
    case FRAE_ISA_AVX512:
        *k = (frae_kernels){frae_gemm_avx512,
                            frae_gemv_sparse_avx512,
                            frae_gemv_bf16_avx512,
                            frae_gemv2_bf16_avx512,
                            frae_compact_avx512,
                            frae_adam_avx2,
                            frae_gru_forward_avx512,
                            frae_gru_backward_avx512,
                            "avx512"};
        break;
    case FRAE_ISA_AVX2: /* no compress instruction: the scalar scan */
        *k = (frae_kernels){
            frae_gemm_avx2,        frae_gemv_sparse_avx2,  frae_gemv_bf16_avx2,
            frae_gemv2_bf16_avx2,  frae_compact_scalar,    frae_adam_avx2,
            frae_gru_forward_avx2, frae_gru_backward_avx2, "avx2"};
        break;
#endif
    default:
        *k = (frae_kernels){frae_gemm_scalar,
                            frae_gemv_sparse_scalar,
                            frae_gemv_bf16_scalar,
                            frae_gemv2_bf16_scalar,
                            frae_compact_scalar,
                            frae_adam_scalar,
                            frae_gru_forward_scalar,
                            frae_gru_backward_scalar,
                            "scalar"};
        break;
    }
    return isa;
}
