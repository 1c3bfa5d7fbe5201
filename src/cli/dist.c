/* Data-parallel training: the replicas' sums.
 *
 * Every sum adds the replicas' values in rank order, rank 0's first, one
 * element at a time ((v0 + v1) + v2 ...), and leaves the result on every
 * replica.  Floating-point addition is not associative, so fixing the order
 * is what makes a run the same bits every time, and the same bits whether
 * the replicas are threads of one process (--replicas, here) or MPI ranks
 * (dist_mpi.c, which moves the same values with MPI and adds them the same
 * way).
 *
 * Threads: each replica publishes its buffer; after a barrier replica r
 * adds up its slice of the elements (so the work is split N ways) into a
 * shared result, and after a second barrier every replica copies the
 * result out.  A third barrier keeps the result from being overwritten by
 * the next sum before everyone has read it.  Buffers are sized once, from
 * the model: a sum allocates nothing. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

struct cli_thread_group {
    int size;
    pthread_barrier_t barrier;
    float **f32;     /* [size]: each replica's buffer of the current sum */
    double **f64;
    float *out32;    /* the result, cap32 values */
    double *out64;   /* cap64 values */
    size_t cap32, cap64;
};

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void slice(size_t n, int size, int rank, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)rank / (size_t)size;
    *hi = n * (size_t)(rank + 1) / (size_t)size;
}

/* The one order of every sum: dst[i] = ((src[0][i] + src[1][i]) + ...)
 * for i in lo..hi-1. */
void cli_rank_order_f32(const float *const *src, int n_src, size_t lo,
                        size_t hi, float *dst)
{
    for (size_t i = lo; i < hi; i++) {
        float s = src[0][i];
        for (int r = 1; r < n_src; r++)
            s += src[r][i];
        dst[i] = s;
    }
}

void cli_rank_order_f64(const double *const *src, int n_src, size_t lo,
                        size_t hi, double *dst)
{
    for (size_t i = lo; i < hi; i++) {
        double s = src[0][i];
        for (int r = 1; r < n_src; r++)
            s += src[r][i];
        dst[i] = s;
    }
}

static int threads_sum_f32(void *ctx, float *x, size_t n)
{
    cli_dist *d = ctx;
    cli_thread_group *g = d->group;
    if (n > g->cap32)
        return -1; /* every replica sees the same n: all fail alike */
    const double t0 = seconds_now();
    g->f32[d->rank] = x;
    pthread_barrier_wait(&g->barrier);
    size_t lo, hi;
    slice(n, g->size, d->rank, &lo, &hi);
    cli_rank_order_f32((const float *const *)g->f32, g->size, lo, hi,
                       g->out32);
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out32, sizeof(float) * n);
    pthread_barrier_wait(&g->barrier);
    d->reduced_bytes += sizeof(float) * n;
    d->reduce_seconds += seconds_now() - t0;
    d->reduce_calls++;
    return 0;
}

static int threads_sum_f64(void *ctx, double *x, size_t n)
{
    cli_dist *d = ctx;
    cli_thread_group *g = d->group;
    if (n > g->cap64)
        return -1;
    g->f64[d->rank] = x;
    pthread_barrier_wait(&g->barrier);
    if (d->rank == 0)
        cli_rank_order_f64((const double *const *)g->f64, g->size, 0, n,
                           g->out64);
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out64, sizeof(double) * n);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

cli_thread_group *cli_thread_group_new(int size, size_t cap32, size_t cap64)
{
    cli_thread_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->size = size;
    g->cap32 = cap32;
    g->cap64 = cap64;
    g->f32 = calloc((size_t)size, sizeof *g->f32);
    g->f64 = calloc((size_t)size, sizeof *g->f64);
    g->out32 = malloc(sizeof(float) * (cap32 ? cap32 : 1));
    g->out64 = malloc(sizeof(double) * (cap64 ? cap64 : 1));
    if (!g->f32 || !g->f64 || !g->out32 || !g->out64 ||
        pthread_barrier_init(&g->barrier, NULL, (unsigned)size)) {
        free(g->f32), free(g->f64), free(g->out32), free(g->out64);
        free(g);
        return NULL;
    }
    return g;
}

void cli_thread_group_free(cli_thread_group *g)
{
    if (!g)
        return;
    pthread_barrier_destroy(&g->barrier);
    free(g->f32), free(g->f64), free(g->out32), free(g->out64);
    free(g);
}

/* Every replica calls it with the same sizes: rank 0 grows the shared
 * results between two barriers. */
static int threads_prepare(cli_dist *d, size_t n32, size_t n64)
{
    cli_thread_group *g = d->group;
    pthread_barrier_wait(&g->barrier);
    if (d->rank == 0 && n32 > g->cap32) {
        float *p = realloc(g->out32, sizeof(float) * n32);
        if (p)
            g->out32 = p, g->cap32 = n32;
    }
    if (d->rank == 0 && n64 > g->cap64) {
        double *p = realloc(g->out64, sizeof(double) * n64);
        if (p)
            g->out64 = p, g->cap64 = n64;
    }
    pthread_barrier_wait(&g->barrier);
    return n32 > g->cap32 || n64 > g->cap64 ? -1 : 0;
}

static int solo_prepare(cli_dist *d, size_t n32, size_t n64)
{
    (void)d, (void)n32, (void)n64;
    return 0;
}

void cli_dist_solo(cli_dist *d)
{
    memset(d, 0, sizeof *d);
    d->size = 1;
    d->prepare = solo_prepare;
    cli_fault_setup(d);
}

void cli_dist_threads(cli_dist *d, cli_thread_group *g, int rank)
{
    memset(d, 0, sizeof *d);
    d->rank = rank;
    d->size = g->size;
    d->group = g;
    d->kind = "replicas";
    d->reducer = (frae_reducer){threads_sum_f32, threads_sum_f64, d};
    d->prepare = threads_prepare;
    cli_fault_setup(d);
}

void cli_fault_setup(cli_dist *d)
{
    const char *f = getenv("FRAE_FAULT");
    char kind[8];
    int rank;
    long at;
    d->fault_kind[0] = 0;
    if (f && sscanf(f, "%7[a-z]@%d:%ld", kind, &rank, &at) == 3) {
        memcpy(d->fault_kind, kind, sizeof kind);
        d->fault_rank = rank;
        d->fault_at = at;
    }
}

int cli_fault(cli_dist *d, const char *kind)
{
    if (!d->fault_kind[0] || d->rank != d->fault_rank ||
        strcmp(d->fault_kind, kind))
        return 0;
    return ++d->fault_reads == d->fault_at;
}

void cli_fault_point(cli_dist *d)
{
    if (!d->fault_kind[0] || d->rank != d->fault_rank ||
        ++d->fault_batches != d->fault_at)
        return;
    if (!strcmp(d->fault_kind, "exit"))
        _exit(3); /* a rank that dies without a word */
    if (!strcmp(d->fault_kind, "kill"))
        raise(SIGKILL);
    if (!strcmp(d->fault_kind, "hang"))
        for (;;)
            pause();
}

int cli_dist_sum(cli_dist *d, double *x, size_t n)
{
    if (d->size == 1)
        return 0;
    return d->reducer.sum_f64(d->reducer.ctx, x, n);
}

int cli_dist_any(cli_dist *d, int flag)
{
    double v = flag ? 1.0 : 0.0;
    if (cli_dist_sum(d, &v, 1))
        return -1;
    return v > 0.0;
}

int cli_dist_slice(const cli_dist *d, long n, long *lo)
{
    long a = n * d->rank / d->size, b = n * (d->rank + 1) / d->size;
    *lo = a;
    return (int)(b - a);
}
