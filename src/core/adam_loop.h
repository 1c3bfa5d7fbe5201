/* The Adam update loop (optimizer.c), included by optimizer.c (the plain
 * reference) and kernels_avx2.c (the same loop compiled for AVX2).  Only
 * IEEE multiply, add, square root and divide, with FMA contraction off
 * (Makefile), so every build gives the same bits.  (An AVX-512 build of it
 * measured slower than AVX2 on Zen 4, whose 512-bit square root and divide
 * are slow: AVX-512 machines use the AVX2 one.) */
static inline void adam_loop(float *params, const float *grads, float *m,
                             float *v, size_t n, float alpha, float beta1,
                             float beta2, float eps)
{
    const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        m[i] = beta1 * m[i] + one_b1 * g;
        v[i] = beta2 * v[i] + one_b2 * (g * g);
        params[i] -= alpha * m[i] / (sqrtf(v[i]) + eps);
    }
}
