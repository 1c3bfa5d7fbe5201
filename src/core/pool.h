/* A model's threads (pool.c): a fixed set of workers, made once with the
 * model, that help its caller through a product's independent items.
 *
 * Why not OpenMP: a static schedule makes the caller wait for the share of
 * a thread the kernel has not scheduled, and libgomp's barriers spin; on a
 * machine kept busy by other work that made two threads many times slower
 * than one.  Here every item is claimed by whoever is free (the caller
 * too), waits spin only a few microseconds before they sleep, and a
 * governor runs the products alone while helping does not pay.  Items are
 * computed alone, so who computes which never changes a bit. */
#ifndef FRAE_POOL_H
#define FRAE_POOL_H

typedef struct frae_pool frae_pool;

/* item i of n items of one parallel product */
typedef void (*frae_pool_fn)(void *ctx, int item);

/* A pool of `threads` threads in all (the caller and threads - 1 workers);
 * NULL for threads <= 1 or when the workers cannot be started (the
 * products then run on the caller alone, with the same bits). */
frae_pool *frae_pool_create(int threads);
void frae_pool_destroy(frae_pool *p);

/* fn(ctx, i) for every i in 0..items-1, each exactly once, on the caller
 * and whichever workers are free; returns when all are done.  p NULL: the
 * caller alone.  No allocation.  One caller at a time per pool. */
void frae_pool_run(frae_pool *p, int items, frae_pool_fn fn, void *ctx);

/* Counters of the governor (tests, bench): products run by the pool, run
 * on the caller alone because helping did not pay, and items the workers
 * computed.  Zeros for NULL. */
typedef struct {
    long parallel, alone, worker_items;
} frae_pool_counts;
frae_pool_counts frae_pool_counts_get(const frae_pool *p);

#endif
