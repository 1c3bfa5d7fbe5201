/* OpenBLAS sgemm throughput on this machine: the "machine's limit" the
 * benchmark compares frae's GFLOP/s with.  Usage: sgemm_peak THREADS.
 * Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (bench/run.py
 * does), or OpenBLAS may pick older kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

void openblas_set_num_threads(int);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    const int n = 2048;
    openblas_set_num_threads(threads);
    float *a = malloc(sizeof(float) * n * n),
          *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    for (long i = 0; i < (long)n * n; i++)
        a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f, c[i] = 0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n,
                b, n, 0.0f, c, n); /* warm-up */
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a,
                    n, b, n, 0.0f, c, n);
        double g = 2.0 * n * n * n / (now() - t0) / 1e9;
        best = g > best ? g : best;
    }
    printf("system=openblas threads=%d sgemm_gflops=%.1f\n", threads, best);
    free(a), free(b), free(c);
    return 0;
}
