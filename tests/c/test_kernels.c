/* Every optimised kernel against the plain scalar reference, and whole
 * training runs across instruction sets: equal to the bit. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"
#include "core/kernels.h"
#include "test_util.h"
#include "tests.h"

static float rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

int test_kernels_match_scalar(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    SKIP_IF(nisa < 2, "no SIMD instruction set on this CPU to compare");
    const int Ms[] = {1, 2, 5, 6, 7, 13, 32},
              Ns[] = {1, 3, 8, 16, 17, 33, 64, 65, 80, 130};
    const int Ks[] = {0, 1, 7, 80, 257, 600};
    uint64_t s = 42;
    long compared = 0;
    for (int ii = 1; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        frae_gemm_fn fn = kern.gemm;
        const char *name = kern.name;
        for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
            for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
                for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
                    for (int trans = 0; trans < 2; trans++)
                        for (int init = 0; init < 3; init++) {
                            int M = Ms[a], N = Ns[b], K = Ks[k];
                            int lda = (trans ? M : K) + 3, ldb = N + 5,
                                ldc = N + 2;
                            size_t na = (size_t)lda * (trans ? K : M) + 1;
                            float *A = malloc(sizeof(float) * na);
                            float *B =
                                malloc(sizeof(float) * ((size_t)ldb * K + 1));
                            float *bias = malloc(sizeof(float) * N);
                            float *C0 = malloc(sizeof(float) * (size_t)ldc * M);
                            float *C1 = malloc(sizeof(float) * (size_t)ldc * M);
                            for (size_t i = 0; i < na; i++)
                                A[i] = rnd(&s);
                            for (size_t i = 0; i < (size_t)ldb * K + 1; i++)
                                B[i] = rnd(&s);
                            for (int i = 0; i < N; i++)
                                bias[i] = rnd(&s);
                            for (size_t i = 0; i < (size_t)ldc * M; i++)
                                C0[i] = C1[i] = rnd(&s);
                            ptrdiff_t rs = trans ? 1 : lda,
                                      cs = trans ? lda : 1;
                            frae_gemm_scalar(M, N, K, A, rs, cs, B, ldb, C0,
                                             ldc, bias, init);
                            fn(M, N, K, A, rs, cs, B, ldb, C1, ldc, bias, init);
                            /* also checks the padding between rows is
                             * untouched, i.e. masked stores */
                            CHECK(!memcmp(C0, C1, sizeof(float) * ldc * M),
                                  "%s M=%d N=%d K=%d trans=%d init=%d differs",
                                  name, M, N, K, trans, init);
                            compared++;
                            free(A), free(B), free(bias), free(C0), free(C1);
                        }
    }
    printf("    %ld GEMM shapes compared on %d optimised ISA(s)\n", compared,
           nisa - 1);
    return failures;
}

int test_isas_train_identically(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    SKIP_IF(nisa < 2, "no SIMD instruction set on this CPU to compare");
    const int enc[2] = {40, 17}, dec[2] = {19, 33};
    float *ref = NULL, *p = NULL;
    for (int mode = 0; mode < 4; mode++)
        for (int ii = 0; ii < nisa; ii++) {
            const int full = mode & 1, gru = mode >> 1;
            frae_config c;
            tiny_config(&c, 6, 3, 2, enc, 5, 2, dec);
            c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
            c.batch = 3;
            c.window = 7;
            c.chunk_rows = 6; /* chunks of 2 frames */
            c.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
            c.isa = isas[ii];
            frae_model *m = create_or_die(&c);
            size_t n = frae_param_count(m);
            float *x = synth(3, 17, 6, 8);
            for (int step = 0; step < 4; step++)
                frae_step(m,
                          &(frae_batch){.x = x,
                                        .nseq = 3,
                                        .nframes = 17,
                                        .kind = FRAE_STEP_TRAIN},
                          NULL);
            if (ii == 0) {
                free(ref);
                ref = malloc(sizeof(float) * n);
                frae_get_params(m, ref);
            } else {
                p = realloc(p, sizeof(float) * n);
                frae_get_params(m, p);
                CHECK(!memcmp(p, ref, sizeof(float) * n),
                      "%s training differs from scalar (feedback %d, gru %d)",
                      frae_isa_name(m), full, gru);
            }
            free(x);
            frae_destroy(m);
        }
    printf("    12 windows of training identical on %d ISA(s), dense and "
           "GRU\n",
           nisa);
    free(ref), free(p);
    return failures;
}

/* The sparse one-row kernel, on every ISA, against the dense scalar GEMM:
 * equal to the bit for finite values (zeros skipped, order kept). */
int test_sparse_kernel_matches_dense(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    uint64_t s = 7;
    const int Ks[] = {1, 9, 80, 257, 512}, Ns[] = {1, 5, 16, 33, 64};
    const int density_pct[] = {0, 10, 50, 90, 100};
    long compared = 0;
    for (int ii = 0; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        frae_gemv_sparse_fn sparse = kern.sparse;
        const char *name = kern.name;
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t di = 0; di < 5; di++)
                    for (int init = 0; init < 3; init++) {
                        int K = Ks[ki], N = Ns[ni], ldb = N + 3;
                        float *a = malloc(sizeof(float) * K);
                        float *b = malloc(sizeof(float) * (size_t)K * ldb);
                        float *bias = malloc(sizeof(float) * N);
                        float *c0 = malloc(sizeof(float) * (N + 1));
                        float *c1 = malloc(sizeof(float) * (N + 1));
                        int *idx = malloc(sizeof(int) * K);
                        float *val = malloc(sizeof(float) * K);
                        int nnz = 0;
                        for (int k = 0; k < K; k++) {
                            int keep = (int)((rnd(&s) + 1.0f) * 50.0f) <
                                       density_pct[di];
                            a[k] = keep ? rnd(&s) : 0.0f;
                            if (a[k] != 0.0f) {
                                idx[nnz] = k;
                                val[nnz++] = a[k];
                            }
                        }
                        for (size_t i = 0; i < (size_t)K * ldb; i++)
                            b[i] = rnd(&s);
                        for (int i = 0; i < N; i++)
                            bias[i] = rnd(&s);
                        for (int i = 0; i <= N; i++)
                            c0[i] = c1[i] = rnd(&s);
                        frae_gemm_scalar(1, N, K, a, K, 1, b, ldb, c0, N, bias,
                                         init);
                        sparse(N, nnz, idx, val, b, ldb, c1, bias, init);
                        CHECK(!memcmp(c0, c1, sizeof(float) * (N + 1)),
                              "%s sparse K=%d N=%d density %d%% init %d "
                              "differs from dense",
                              name, K, N, density_pct[di], init);
                        compared++;
                        free(a), free(b), free(bias), free(c0), free(c1);
                        free(idx), free(val);
                    }
    }
    printf("    %ld sparse shapes equal the dense reference on %d ISA(s)\n",
           compared, nisa);
    return failures;
}

/* The bf16 one-row kernel, on every ISA (scalar included), against the
 * dense scalar f32 GEMM on the widened weights: equal to the bit, with the
 * masked tails leaving the rest of c alone. */
int test_bf16_kernel_matches_f32(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    uint64_t s = 11;
    const int Ks[] = {0, 1, 9, 80, 257},
              Ns[] = {1, 5, 16, 17, 31, 32, 33, 48, 63, 64, 65, 80, 130};
    const int density_pct[] = {10, 50, 100};
    long compared = 0;
    for (int ii = 0; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        frae_gemv_bf16_fn bf16 = kern.bf16;
        const char *name = kern.name;
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t di = 0; di < 3; di++)
                    for (int init = 0; init < 3; init++) {
                        int K = Ks[ki], N = Ns[ni];
                        int ldh = (N + 31) / 32 * 32 + 32 * (N & 1);
                        float *a = malloc(sizeof(float) * (K + 1));
                        float *b = malloc(sizeof(float) * ((size_t)K * N + 1));
                        uint16_t *h = calloc((size_t)K * ldh + 1, 2);
                        float *bias = malloc(sizeof(float) * N);
                        float *c0 = malloc(sizeof(float) * (N + 3));
                        float *c1 = malloc(sizeof(float) * (N + 3));
                        float *cs = malloc(sizeof(float) * (N + 3));
                        int *idx = malloc(sizeof(int) * (K + 1));
                        float *val = malloc(sizeof(float) * (K + 1));
                        int nnz = 0;
                        for (int k = 0; k < K; k++) {
                            int keep = (int)((rnd(&s) + 1.0f) * 50.0f) <
                                       density_pct[di];
                            a[k] = keep ? rnd(&s) : 0.0f;
                            if (a[k] != 0.0f) {
                                idx[nnz] = k;
                                val[nnz++] = a[k];
                            }
                            for (int n = 0; n < N; n++) {
                                uint16_t w = frae_f32_to_bf16(rnd(&s));
                                b[(size_t)k * N + n] = frae_bf16_to_f32(w);
                                h[(size_t)k * ldh + frae_bf16_pos(n)] = w;
                            }
                            /* padding columns hold junk: must not leak */
                            for (int n = N; n < (N + 31) / 32 * 32; n++)
                                h[(size_t)k * ldh + frae_bf16_pos(n)] = 0x7fc0;
                        }
                        for (int i = 0; i < N; i++)
                            bias[i] = rnd(&s);
                        for (int i = 0; i < N + 3; i++)
                            c0[i] = c1[i] = cs[i] = rnd(&s);
                        frae_gemm_scalar(1, N, K, a, K, 1, b, N, c0, N, bias,
                                         init);
                        bf16(N, nnz, idx, val, h, ldh, c1, bias, init);
                        CHECK(!memcmp(c0, c1, sizeof(float) * (N + 3)),
                              "%s bf16 K=%d N=%d density %d%% init %d "
                              "differs from f32",
                              name, K, N, density_pct[di], init);
                        compared++;
                        if (nnz == K) { /* all nonzero: the dense form */
                            memcpy(c1, cs, sizeof(float) * (N + 3));
                            bf16(N, K, NULL, a, h, ldh, c1, bias, init);
                            CHECK(!memcmp(c0, c1, sizeof(float) * (N + 3)),
                                  "%s bf16 dense K=%d N=%d init %d differs",
                                  name, K, N, init);
                            compared++;
                        }
                        free(a), free(b), free(h), free(bias), free(c0);
                        free(c1), free(cs), free(idx), free(val);
                    }
    }
    /* the two-row form against the f32 GEMM of two rows */
    for (int ii = 0; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++) {
                int K = Ks[ki], N = Ns[ni], ldh = (N + 31) / 32 * 32;
                float *a = malloc(sizeof(float) * (2 * K + 1));
                float *b = malloc(sizeof(float) * ((size_t)K * N + 1));
                uint16_t *h = calloc((size_t)K * ldh + 1, 2);
                float *c0 = malloc(sizeof(float) * (2 * N + 3));
                float *c1 = malloc(sizeof(float) * (2 * N + 3));
                for (int k = 0; k < 2 * K; k++)
                    a[k] = k % 5 == 2 ? 0.0f : rnd(&s);
                for (int k = 0; k < K; k++)
                    for (int n = 0; n < N; n++) {
                        uint16_t w = frae_f32_to_bf16(rnd(&s));
                        b[(size_t)k * N + n] = frae_bf16_to_f32(w);
                        h[(size_t)k * ldh + frae_bf16_pos(n)] = w;
                    }
                for (int i = 0; i < 2 * N + 3; i++)
                    c0[i] = c1[i] = rnd(&s);
                frae_gemm_scalar(2, N, K, a, K, 1, b, N, c0, N, NULL, GEMM_ACC);
                kern.bf16_pair(N, K, a, a + K, h, ldh, c1, c1 + N);
                CHECK(!memcmp(c0, c1, sizeof(float) * (2 * N + 3)),
                      "%s bf16 pair K=%d N=%d differs from f32", kern.name, K,
                      N);
                compared++;
                free(a), free(b), free(h), free(c0), free(c1);
            }
    }
    /* rounding: nearest, ties to even, as torch's .bfloat16() */
    const struct {
        uint32_t in;
        uint16_t out;
    } r[] = {
        {0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82},
        {0x3f808001u, 0x3f81}, {0xbf80ffffu, 0xbf81}, {0x7f7fffffu, 0x7f80},
        {0x80000000u, 0x8000}, {0x00008000u, 0x0000}, {0x7f800001u, 0x7fc0}};
    for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
        float f;
        memcpy(&f, &r[i].in, 4);
        CHECK(frae_f32_to_bf16(f) == r[i].out,
              "bf16 rounding of 0x%08x: 0x%04x, want 0x%04x", (unsigned)r[i].in,
              frae_f32_to_bf16(f), r[i].out);
    }
    printf("    %ld bf16 shapes equal the f32 reference on %d ISA(s)\n",
           compared, nisa);
    return failures;
}

/* The nonzero scan on every ISA against the scalar one: same entries,
 * in order, and the count (zeros, -0, NaN and every tail length). */
int test_compact_matches_scalar(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    SKIP_IF(nisa < 2, "no SIMD instruction set on this CPU to compare");
    uint64_t s = 5;
    long compared = 0;
    for (int ii = 0; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        for (int K = 0; K <= 70; K++)
            for (int pct = 0; pct <= 100; pct += 25) {
                float a[80];
                int i0[80 + FRAE_COMPACT_SLACK], i1[80 + FRAE_COMPACT_SLACK];
                float v0[80 + FRAE_COMPACT_SLACK], v1[80 + FRAE_COMPACT_SLACK];
                for (int k = 0; k < 80; k++) {
                    float r = rnd(&s);
                    a[k] = (r + 1.0f) * 50.0f < (float)pct ? rnd(&s) : 0.0f;
                    if (k % 17 == 3)
                        a[k] = -0.0f;
                    if (k % 29 == 5)
                        a[k] = NAN;
                }
                int n0 = frae_compact_scalar(K, a, 7, i0, v0);
                int n1 = kern.compact(K, a, 7, i1, v1);
                CHECK(n0 == n1 && !memcmp(i0, i1, sizeof(int) * n0) &&
                          !memcmp(v0, v1, sizeof(float) * n0),
                      "%s compact K=%d density %d%%: differs from scalar",
                      kern.name, K, pct);
                compared++;
            }
    }
    printf("    %ld scans equal the scalar one on %d ISA(s)\n", compared, nisa);
    return failures;
}

/* Adam's loop on every ISA against the scalar one, to the bit (odd
 * lengths for the vector tails, tiny and huge gradients). */
int test_adam_matches_scalar(void)
{
    int failures = 0;
    frae_isa isas[3];
    int nisa = available_isas(isas);
    SKIP_IF(nisa < 2, "no SIMD instruction set on this CPU to compare");
    uint64_t s = 9;
    const size_t n = 1037;
    float *p0 = malloc(sizeof(float) * n * 8), *g = p0 + n, *m0 = p0 + 2 * n,
          *v0 = p0 + 3 * n, *p1 = p0 + 4 * n, *m1 = p0 + 5 * n,
          *v1 = p0 + 6 * n;
    for (int ii = 0; ii < nisa; ii++) {
        frae_kernels kern;
        frae_select_kernels(isas[ii], &kern);
        for (size_t i = 0; i < n; i++) {
            p0[i] = p1[i] = rnd(&s);
            g[i] = rnd(&s) * (i % 7 == 0 ? 1e-20f : i % 11 == 0 ? 1e6f : 1.0f);
            m0[i] = m1[i] = 0.1f * rnd(&s);
            v0[i] = v1[i] = fabsf(rnd(&s)) * 0.01f;
        }
        for (int step = 0; step < 3; step++) {
            frae_adam_scalar(p0, g, m0, v0, n - (size_t)step, 1e-3f, 0.9f,
                             0.999f, 1e-7f);
            kern.adam(p1, g, m1, v1, n - (size_t)step, 1e-3f, 0.9f, 0.999f,
                      1e-7f);
        }
        CHECK(!memcmp(p0, p1, sizeof(float) * n) &&
                  !memcmp(m0, m1, sizeof(float) * n) &&
                  !memcmp(v0, v1, sizeof(float) * n),
              "%s Adam differs from the scalar loop", kern.name);
    }
    free(p0);
    printf("    Adam identical on %d ISA(s)\n", nisa);
    return failures;
}

/* Threads split GEMMs by column panels or by rows, and the GRU cell by
 * rows: 1, 2 and 3 threads train to the same bits (shapes big enough to
 * cross the threading thresholds; the 40 output columns are one panel, so
 * its products take the row split). */
int test_threads_train_identically(void)
{
    int failures = 0;
    const int enc[2] = {256, 96}, dec[2] = {96, 256};
    float *ref = NULL, *p = NULL, *no_erasure = NULL;
    for (int mode = 0; mode < 5; mode++) /* 4: GRU, full, erasure training */
        for (int threads = 1; threads <= 3; threads++) {
            const int full = mode & 1 || mode == 4, gru = mode >= 2;
            frae_config c;
            tiny_config(&c, 40, 3, 2, enc, 8, 2, dec);
            c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
            c.batch = 16;
            c.window = 12;
            c.threads = threads;
            c.feedback = full ? FRAE_FEEDBACK_FULL : FRAE_FEEDBACK_DETACHED;
            c.erasure = mode == 4 ? 0.2f : 0.0f;
            c.erasure_frames = 3;
            frae_model *m = create_or_die(&c);
            size_t n = frae_param_count(m);
            float *x = synth(16, 30, 40, 8);
            for (int step = 0; step < 3; step++)
                frae_step(m,
                          &(frae_batch){.x = x,
                                        .nseq = 16,
                                        .nframes = 30,
                                        .kind = FRAE_STEP_TRAIN},
                          NULL);
            if (threads == 1) {
                if (mode == 4) /* mode 3 without erasure, kept */
                    no_erasure = ref, ref = NULL;
                free(ref);
                ref = malloc(sizeof(float) * n);
                frae_get_params(m, ref);
                if (mode == 4)
                    CHECK(memcmp(ref, no_erasure, sizeof(float) * n),
                          "erasure training changed nothing");
            } else {
                p = realloc(p, sizeof(float) * n);
                frae_get_params(m, p);
                CHECK(!memcmp(p, ref, sizeof(float) * n),
                      "%d threads train differently (feedback %d, gru %d)",
                      threads, full, gru);
            }
            free(x);
            frae_destroy(m);
        }
    printf("    1, 2 and 3 threads: identical parameters after training, "
           "dense and GRU, and GRU with erasure training\n");
    free(ref), free(p), free(no_erasure);
    return failures;
}

/* The GRU cell's exp and tanh (gru.c) against double-precision libm over
 * the float range (every 9973rd bit pattern): within 2e-7 relative, and
 * the saturated ends exact. */
int test_gru_math_accuracy(void)
{
    int failures = 0;
    double worst_exp = 0, worst_tanh = 0;
    for (uint64_t b = 0; b <= 0xffffffffu; b += 9973) {
        uint32_t u = (uint32_t)b;
        float x;
        memcpy(&x, &u, sizeof x);
        if (!isfinite(x))
            continue;
        if (x > -87.0f && x < 88.0f) {
            double r = exp((double)x);
            worst_exp = fmax(worst_exp, fabs(frae_gru_exp(x) - r) / r);
        }
        double r = tanh((double)x), t = frae_gru_tanh(x);
        worst_tanh = fmax(worst_tanh, r != 0 ? fabs(t - r) / fabs(r) : fabs(t));
    }
    CHECK(worst_exp <= 2e-7, "frae_gru_exp: max rel error %.3g", worst_exp);
    CHECK(worst_tanh <= 2e-7, "frae_gru_tanh: max rel error %.3g", worst_tanh);
    CHECK(frae_gru_tanh(20.0f) == 1.0f && frae_gru_tanh(-20.0f) == -1.0f &&
              frae_gru_tanh(0.0f) == 0.0f,
          "frae_gru_tanh does not saturate to +-1 or keep 0");
    CHECK(frae_gru_exp(-1000.0f) >= 0.0f && isfinite(frae_gru_exp(1000.0f)),
          "frae_gru_exp is not clamped");
    printf("    exp max rel error %.2e, tanh %.2e (vs double libm)\n",
           worst_exp, worst_tanh);
    return failures;
}
