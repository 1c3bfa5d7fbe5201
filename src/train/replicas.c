/* Replicas as threads of one process: a transport (frae_train.h) whose
 * ranks are the threads of one training run, and the rank-order sums every
 * transport uses.
 *
 * Every sum adds the replicas' values in rank order, rank 0's first, one
 * element at a time ((v0 + v1) + v2 ...), and leaves the result on every
 * replica.  Floating-point addition is not associative, so fixing the order
 * is what makes a run the same bits every time, and the same bits whether
 * the replicas are threads (here) or MPI ranks (the frae command's
 * src/cli/dist_mpi.c moves the same values with MPI and adds them the same
 * way).
 *
 * Threads: each replica publishes its buffer; after a barrier replica r
 * adds up its slice of the elements (so the work is split N ways) into a
 * shared result, and after a second barrier every replica copies the
 * result out.  A third barrier keeps the result from being overwritten by
 * the next sum before everyone has read it.  Buffers are sized once
 * (prepare): a sum allocates nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "train/replicas.h"

struct frae_thread_group {
    int size;
    pthread_barrier_t barrier;
    float **f32; /* [size]: each replica's buffer of the current sum */
    double **f64;
    float *out32;  /* the result, cap32 values */
    double *out64; /* cap64 values */
    size_t cap32, cap64;
    frae_thread_rank *ranks; /* [size]: each replica's transport context */
};

struct frae_thread_rank {
    frae_thread_group *g;
    int rank;
};

void frae_sum_rank_order_f32(const float *const *src, int n_src, size_t lo,
                             size_t hi, float *dst)
{
    for (size_t i = lo; i < hi; i++) {
        float s = src[0][i];
        for (int r = 1; r < n_src; r++)
            s += src[r][i];
        dst[i] = s;
    }
}

void frae_sum_rank_order_f64(const double *const *src, int n_src, size_t lo,
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
    frae_thread_rank *me = ctx;
    frae_thread_group *g = me->g;
    if (n > g->cap32)
        return -1; /* every replica sees the same n: all fail alike */
    g->f32[me->rank] = x;
    pthread_barrier_wait(&g->barrier);
    size_t lo = n * (size_t)me->rank / (size_t)g->size;
    size_t hi = n * (size_t)(me->rank + 1) / (size_t)g->size;
    frae_sum_rank_order_f32((const float *const *)g->f32, g->size, lo, hi,
                            g->out32);
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out32, sizeof(float) * n);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

static int threads_sum_f64(void *ctx, double *x, size_t n)
{
    frae_thread_rank *me = ctx;
    frae_thread_group *g = me->g;
    if (n > g->cap64)
        return -1;
    g->f64[me->rank] = x;
    pthread_barrier_wait(&g->barrier);
    if (me->rank == 0)
        frae_sum_rank_order_f64((const double *const *)g->f64, g->size, 0, n,
                                g->out64);
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out64, sizeof(double) * n);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

/* Every replica calls it with the same sizes: rank 0 grows the shared
 * results between two barriers. */
static int threads_prepare(void *ctx, size_t n32, size_t n64)
{
    frae_thread_rank *me = ctx;
    frae_thread_group *g = me->g;
    pthread_barrier_wait(&g->barrier);
    if (me->rank == 0 && n32 > g->cap32) {
        float *p = realloc(g->out32, sizeof(float) * n32);
        if (p)
            g->out32 = p, g->cap32 = n32;
    }
    if (me->rank == 0 && n64 > g->cap64) {
        double *p = realloc(g->out64, sizeof(double) * n64);
        if (p)
            g->out64 = p, g->cap64 = n64;
    }
    pthread_barrier_wait(&g->barrier);
    return n32 > g->cap32 || n64 > g->cap64 ? -1 : 0;
}

frae_thread_group *frae_thread_group_new(int size)
{
    frae_thread_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->size = size;
    g->cap64 = 64; /* the figures of a batch, agreements */
    g->f32 = calloc((size_t)size, sizeof *g->f32);
    g->f64 = calloc((size_t)size, sizeof *g->f64);
    g->ranks = calloc((size_t)size, sizeof *g->ranks);
    g->out32 = malloc(sizeof(float));
    g->out64 = malloc(sizeof(double) * g->cap64);
    if (!g->f32 || !g->f64 || !g->ranks || !g->out32 || !g->out64 ||
        pthread_barrier_init(&g->barrier, NULL, (unsigned)size)) {
        free(g->f32), free(g->f64), free(g->ranks);
        free(g->out32), free(g->out64);
        free(g);
        return NULL;
    }
    for (int r = 0; r < size; r++)
        g->ranks[r] = (frae_thread_rank){g, r};
    return g;
}

void frae_thread_group_free(frae_thread_group *g)
{
    if (!g)
        return;
    pthread_barrier_destroy(&g->barrier);
    free(g->f32), free(g->f64), free(g->ranks);
    free(g->out32), free(g->out64);
    free(g);
}

frae_transport frae_thread_transport(frae_thread_group *g, int rank)
{
    return (frae_transport){rank,
                            g->size,
                            "replicas",
                            threads_sum_f32,
                            threads_sum_f64,
                            threads_prepare,
                            &g->ranks[rank]};
}
