/* Data-parallel training over MPI (built into frae-mpi only).
 *
 * The gradients' sum is an allreduce made of two standard collectives, so
 * that the order of the additions is frae's, not the MPI library's: an
 * all-to-all (v) hands rank j the j-th slice of every rank's buffer; rank j
 * adds those slices in rank order, rank 0's first (the library's
 * frae_sum_rank_order_*, so a run with N MPI ranks gives the bits of
 * --replicas N, libfrae's threads); an allgather (v)
 * then hands every rank every summed slice, in place.  Each rank sends
 * and receives 2 (N-1)/N of the buffer, what a ring allreduce moves.
 *
 * Every wait is bounded: the collectives are non-blocking and polled, and
 * a rank that waits longer than the timeout (a rank died, hung or was
 * stopped) says so in one line and aborts the job. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

typedef struct {
    float *recv;            /* every rank's copy of this rank's slice */
    size_t cap;             /* sums of up to cap floats */
    int *counts, *displs;   /* [N]: rank r's slice of the gradient */
    int *rcounts, *rdispls; /* [N]: where rank r's copy of ours lands */
    double *gather;         /* the doubles' sums: N x cap64 */
    size_t cap64;
    float **src32; /* [N]: each rank's slice, for the sum */
    double **src64;
} mpi_buffers;

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for req, at most d->timeout seconds: polls, and after the first
 * millisecond sleeps 50 us between polls so a waiting rank leaves its core
 * to the others.  A signal while waiting (mpirun sends SIGTERM to every
 * rank when one dies, and SIGKILL a second later) ends the wait after half
 * a second, so the reason is said before the kill. */
static void wait_bounded(cli_dist *d, MPI_Request *req, const char *what)
{
    const double t0 = seconds_now();
    double signal_seen = -1;
    for (;;) {
        int done = 0;
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        const double now = seconds_now(), waited = now - t0;
        if (signal_seen < 0 && d->signalled && *d->signalled)
            signal_seen = now;
        if (signal_seen >= 0 && now - signal_seen > 0.5) {
            fprintf(stderr,
                    "%s: stopped while waiting for the other ranks to sum "
                    "%s (a rank died, or the job was stopped); the last "
                    "checkpoint is kept\n",
                    cli_cmd, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, EXIT_FAILED);
        }
        if (waited > d->timeout) {
            fprintf(stderr,
                    "%s: no answer from the other ranks for %.0f s while "
                    "summing %s (a rank died, hung or was stopped); "
                    "stopping every rank (the last checkpoint is kept)\n",
                    cli_cmd, waited, what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, EXIT_FAILED);
        }
        if (waited > 1e-3) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

/* Rank r owns elements n r / N .. n (r + 1) / N of the gradient.  The
 * all-to-all sends each rank its slice of x, straight from x; this rank
 * adds the N copies of its own slice back into x, and the allgather
 * hands every rank the others' summed slices, into x in place: no copy of
 * the gradient is made. */
static int mpi_sum_f32(void *ctx, float *x, size_t n)
{
    cli_dist *d = ctx;
    mpi_buffers *b = d->mpi;
    if (n > b->cap)
        return -1;
    const int N = d->size;
    for (int r = 0; r < N; r++) {
        size_t lo = n * (size_t)r / (size_t)N;
        size_t hi = n * (size_t)(r + 1) / (size_t)N;
        b->counts[r] = (int)(hi - lo);
        b->displs[r] = (int)lo;
    }
    const int mine = b->counts[d->rank];
    for (int r = 0; r < N; r++) {
        b->rcounts[r] = mine;
        b->rdispls[r] = r * mine;
        b->src32[r] = b->recv + (size_t)r * mine;
    }
    MPI_Request req;
    MPI_Ialltoallv(x, b->counts, b->displs, MPI_FLOAT, b->recv, b->rcounts,
                   b->rdispls, MPI_FLOAT, MPI_COMM_WORLD, &req);
    wait_bounded(d, &req, "gradients");
    frae_sum_rank_order_f32((const float *const *)b->src32, N, 0, (size_t)mine,
                            x + b->displs[d->rank]);
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, b->counts, b->displs,
                    MPI_FLOAT, MPI_COMM_WORLD, &req);
    wait_bounded(d, &req, "gradients");
    return 0;
}

static int mpi_sum_f64(void *ctx, double *x, size_t n)
{
    cli_dist *d = ctx;
    mpi_buffers *b = d->mpi;
    if (n > b->cap64)
        return -1;
    MPI_Request req;
    MPI_Iallgather(x, (int)n, MPI_DOUBLE, b->gather, (int)n, MPI_DOUBLE,
                   MPI_COMM_WORLD, &req);
    wait_bounded(d, &req, "counts and flags");
    for (int r = 0; r < d->size; r++)
        b->src64[r] = b->gather + (size_t)r * n;
    frae_sum_rank_order_f64((const double *const *)b->src64, d->size, 0, n, x);
    return 0;
}

static int mpi_prepare(void *ctx, size_t n, size_t n64)
{
    cli_dist *d = ctx;
    mpi_buffers *b = d->mpi;
    const size_t s = (n + (size_t)d->size - 1) / (size_t)d->size;
    if (n64 > b->cap64) {
        double *g = realloc(b->gather, sizeof(double) * n64 * (size_t)d->size);
        if (!g)
            return -1;
        b->gather = g, b->cap64 = n64;
    }
    if (n <= b->cap)
        return 0;
    if (n > INT_MAX) /* MPI counts are ints */
        return -1;
    float *recv = realloc(b->recv, sizeof(float) * (s + 1) * (size_t)d->size);
    if (!recv)
        return -1;
    b->recv = recv;
    b->cap = n;
    return 0;
}

int cli_dist_mpi(cli_dist *d, size_t cap32, double timeout)
{
    memset(d, 0, sizeof *d);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    d->kind = "MPI ranks";
    d->timeout = timeout;
    mpi_buffers *b = calloc(1, sizeof *b);
    if (!b)
        return -1;
    b->cap64 = 64;
    b->gather = malloc(sizeof(double) * b->cap64 * (size_t)d->size);
    b->src32 = calloc((size_t)d->size, sizeof *b->src32);
    b->src64 = calloc((size_t)d->size, sizeof *b->src64);
    int *ints = calloc(4 * (size_t)d->size, sizeof *ints);
    b->counts = ints;
    b->displs = ints ? ints + d->size : NULL;
    b->rcounts = ints ? ints + 2 * d->size : NULL;
    b->rdispls = ints ? ints + 3 * d->size : NULL;
    d->mpi = b;
    d->transport = (frae_transport){
        d->rank, d->size, d->kind, mpi_sum_f32, mpi_sum_f64, mpi_prepare, d};
    if (!b->gather || !b->src32 || !b->src64 || !ints ||
        mpi_prepare(d, cap32, 0))
        return -1;
    return 0;
}

void cli_dist_mpi_free(cli_dist *d)
{
    mpi_buffers *b = d->mpi;
    if (!b)
        return;
    free(b->recv), free(b->gather);
    free(b->src32), free(b->src64), free(b->counts);
    free(b);
    d->mpi = NULL;
}
