/* A model's threads (pool.h), and the CPUs a process may use.
 *
 * One product is a job of n items.  The caller publishes it by bumping a
 * generation that shares one 64-bit word with the next unclaimed item, so
 * a worker claims an item with a compare-and-swap that fails if the job
 * it read is no longer the current one: a late worker can never take an
 * item of a newer job with an older job's function.  While the caller
 * writes a job's function, context and count, the word is closed (a
 * generation of its own, no item left), so a worker can never pair one
 * job's claim with another's fields.  The caller claims
 * items too, and when none are left it waits only for the items already
 * being computed.  Waits spin for a few microseconds (products come back
 * to back within a step) and then sleep on a condition variable.
 *
 * The governor: for each pooled product the caller knows how long its own
 * items took and so what the whole would have taken alone.  Where the
 * pool took longer (the workers were not scheduled, or one was preempted
 * inside an item), the next products run on the caller alone, for a span
 * that doubles while pooling keeps failing and shrinks once it pays.
 *
 * A job carries the caller's floating-point control word (on x86 the
 * MXCSR: frae's calls flush denormals, FTZ and DAZ), and a worker runs its
 * items under it: an item's bits must not depend on which thread took it. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frae.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif
#if defined(__SSE__)
#include <xmmintrin.h>
static unsigned fp_mode_get(void) { return _mm_getcsr(); }
static void fp_mode_set(unsigned mode) { _mm_setcsr(mode); }
#elif defined(__aarch64__) /* FPCR: its flush-to-zero bit (frae_internal.h) */
static unsigned fp_mode_get(void)
{
    unsigned long mode;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(mode));
    return (unsigned)mode;
}
static void fp_mode_set(unsigned mode)
{
    __asm__ __volatile__("msr fpcr, %0" : : "r"((unsigned long)mode));
}
#else
static unsigned fp_mode_get(void) { return 0; }
static void fp_mode_set(unsigned mode) { (void)mode; }
#endif

/* Spins before a wait sleeps: a pause is about 40 ns on current x86 (140
 * cycles on Skylake and later), so about 20-40 us. */
#define SPIN_PAUSES 1000

/* The governor's spans, in products run alone. */
#define ALONE_MIN 8
#define ALONE_MAX 4096
/* Pooled products judged together, unless one alone took more than twice
 * what the caller would have taken by itself. */
#define JUDGE_WINDOW 16

struct frae_pool {
    int threads;
    int workers_started;
    pthread_t *worker;
    pid_t owner; /* a forked child has no workers: it runs alone */

    /* generation << 32 | next item: the current job and its claims */
    _Atomic uint64_t job;
    _Atomic(frae_pool_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int items;
    _Atomic unsigned fp_mode; /* the caller's MXCSR for this job */
    _Atomic int done;         /* items of the current job finished */
    _Atomic int stop;
    _Atomic int sleepers; /* workers asleep on `wake` */
    _Atomic int caller_asleep;
    _Atomic long worker_items;
    pthread_mutex_t lock;
    pthread_cond_t wake, finished;

    /* the governor (the caller's alone) */
    int alone_left, alone_span;
    int judged;
    double judged_pooled, judged_alone;
    long parallel, alone;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t generation(uint64_t job) { return (uint32_t)(job >> 32); }

/* Claims an item of generation gen of n items: its index, or -1 when the
 * job is done or no longer current. */
static int claim(frae_pool *p, uint32_t gen, int n)
{
    uint64_t j = atomic_load(&p->job);
    for (;;) {
        if (generation(j) != gen || (uint32_t)j >= (uint32_t)n)
            return -1;
        if (atomic_compare_exchange_weak(&p->job, &j, j + 1))
            return (int)(uint32_t)j;
    }
}

static void finish_item(frae_pool *p, int n)
{
    if (atomic_fetch_add(&p->done, 1) + 1 == n &&
        atomic_load(&p->caller_asleep)) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->finished);
        pthread_mutex_unlock(&p->lock);
    }
}

static void *worker_main(void *arg)
{
    frae_pool *p = arg;
    uint32_t seen = generation(atomic_load(&p->job));
    for (;;) {
        uint32_t gen = generation(atomic_load(&p->job));
        for (int spin = 0; gen == seen && spin < SPIN_PAUSES; spin++) {
            cpu_relax();
            gen = generation(atomic_load(&p->job));
        }
        if (gen == seen) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while (!atomic_load(&p->stop) &&
                   generation(atomic_load(&p->job)) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
            if (atomic_load(&p->stop))
                return NULL;
            continue;
        }
        seen = gen;
        /* read before the claim that proves they are this job's */
        frae_pool_fn fn = atomic_load(&p->fn);
        void *ctx = atomic_load(&p->ctx);
        const int n = atomic_load(&p->items);
        const unsigned mode = atomic_load(&p->fp_mode);
        if (mode != fp_mode_get())
            fp_mode_set(mode); /* only a claimed item runs under it */
        for (int i; (i = claim(p, gen, n)) >= 0;) {
            fn(ctx, i);
            atomic_fetch_add_explicit(&p->worker_items, 1,
                                      memory_order_relaxed);
            finish_item(p, n);
        }
    }
}

frae_pool *frae_pool_create(int threads)
{
    if (threads <= 1)
        return NULL;
    frae_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->worker = calloc((size_t)threads - 1, sizeof *p->worker))) {
        free(p);
        return NULL;
    }
    p->threads = threads;
    p->owner = getpid();
    p->alone_span = ALONE_MIN;
    atomic_init(&p->job, 0);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->finished, NULL);
    for (int w = 0; w < threads - 1; w++) {
        if (pthread_create(&p->worker[w], NULL, worker_main, p))
            break;
        p->workers_started++;
    }
    if (p->workers_started == 0) {
        frae_pool_destroy(p);
        return NULL;
    }
    return p;
}

void frae_pool_destroy(frae_pool *p)
{
    if (!p)
        return;
    /* a forked child has no workers, and the lock may have been held by
     * one of them at the fork: it is left alone */
    if (p->owner == getpid()) {
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->stop, 1);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (int w = 0; w < p->workers_started; w++)
            pthread_join(p->worker[w], NULL);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->finished);
    }
    free(p->worker);
    free(p);
}

/* The governor's verdict on one pooled product: it took `pooled` seconds,
 * and the caller's own `mine` of n items took `busy`. */
static void judge(frae_pool *p, double pooled, double busy, int mine, int n)
{
    if (mine == 0)
        return; /* the workers took everything: it paid */
    const double alone = busy * n / mine;
    p->judged_pooled += pooled;
    p->judged_alone += alone;
    const int stalled = pooled > 2.0 * alone;
    if (!stalled && ++p->judged < JUDGE_WINDOW)
        return;
    const int paid = !stalled && p->judged_pooled < 0.95 * p->judged_alone;
    p->judged = 0;
    p->judged_pooled = p->judged_alone = 0.0;
    if (paid) {
        p->alone_span =
            p->alone_span / 2 > ALONE_MIN ? p->alone_span / 2 : ALONE_MIN;
    } else {
        p->alone_left = p->alone_span;
        p->alone_span =
            2 * p->alone_span < ALONE_MAX ? 2 * p->alone_span : ALONE_MAX;
    }
}

void frae_pool_run(frae_pool *p, int items, frae_pool_fn fn, void *ctx)
{
    if (items <= 0)
        return;
    if (!p || items == 1 || p->alone_left > 0 || p->owner != getpid()) {
        if (p && p->alone_left > 0) {
            p->alone_left--;
            p->alone++;
        }
        for (int i = 0; i < items; i++)
            fn(ctx, i);
        return;
    }
    p->parallel++;
    const double t0 = now_s();
    /* closed first: while the job's fields change, the job word names a
     * generation whose next item is past any count, so no claim succeeds
     * (a worker that read the last job's generation, or this one's fields
     * half written, claims nothing); then opened under a new generation */
    const uint32_t closed = generation(atomic_load(&p->job)) + 1;
    atomic_store(&p->job, (uint64_t)closed << 32 | 0xffffffffu);
    atomic_store(&p->fn, fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->items, items);
    atomic_store(&p->fp_mode, fp_mode_get());
    atomic_store(&p->done, 0);
    /* a new generation, next item 0: the job is published */
    const uint32_t gen = closed + 1;
    atomic_store(&p->job, (uint64_t)gen << 32);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    int mine = 0;
    for (int i; (i = claim(p, gen, items)) >= 0; mine++) {
        fn(ctx, i);
        finish_item(p, items);
    }
    const double t1 = now_s();
    for (int spin = 0; atomic_load(&p->done) < items && spin < SPIN_PAUSES;
         spin++)
        cpu_relax();
    if (atomic_load(&p->done) < items) {
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->caller_asleep, 1);
        while (atomic_load(&p->done) < items)
            pthread_cond_wait(&p->finished, &p->lock);
        atomic_store(&p->caller_asleep, 0);
        pthread_mutex_unlock(&p->lock);
    }
    judge(p, now_s() - t0, t1 - t0, mine, items);
}

frae_pool_counts frae_pool_counts_get(const frae_pool *p)
{
    frae_pool_counts c = {0, 0, 0};
    if (p) {
        c.parallel = p->parallel;
        c.alone = p->alone;
        c.worker_items = atomic_load(&((frae_pool *)p)->worker_items);
    }
    return c;
}

/* ---- the CPUs this process may use ------------------------------------- */

/* A cgroup's CPU quota in CPUs (rounded up), 0 for none: cgroup v2's
 * cpu.max ("max 100000" or "QUOTA PERIOD") of the process's own cgroup,
 * else v1's cpu.cfs_quota_us / cpu.cfs_period_us. */
static long read_longs(const char *path, long *a, long *b, int *is_max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char word[32];
    int got = 0;
    *is_max = 0;
    if (fscanf(f, "%31s", word) == 1) {
        if (word[0] == 'm') {
            *is_max = 1;
            got = 1;
        } else {
            *a = strtol(word, NULL, 10);
            got = 1;
        }
        if (b && fscanf(f, "%ld", b) == 1)
            got = 2;
    }
    fclose(f);
    return got;
}

/* Whether a /proc/self/cgroup controller list ("cpu,cpuacct") names cpu. */
static int names_cpu(const char *list, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && list[j] != ',')
            j++;
        if (j - i == 3 && !strncmp(list + i, "cpu", 3))
            return 1;
        i = j + 1;
    }
    return 0;
}

static long quota_cpus(long quota, long period)
{
    return quota > 0 && period > 0 ? (quota + period - 1) / period : 0;
}

static long cgroup_cpus(void)
{
    /* the process's own cgroups: v2's ("0::PATH") and v1's cpu one */
    char v2[400] = "", v1[400] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2 || strlen(c2 + 1) >= sizeof v2)
                continue;
            if (line[0] == '0' && c1 == line + 1 && c2 == c1 + 1)
                strcpy(v2, c2 + 1);
            else if (names_cpu(c1 + 1, (size_t)(c2 - c1 - 1)))
                strcpy(v1, c2 + 1);
        }
        fclose(f);
    }
    char path[512];
    long quota = 0, period = 0, cpus;
    int is_max = 0;
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max",
             strcmp(v2, "/") ? v2 : "");
    if (read_longs(path, &quota, &period, &is_max) == 2 && !is_max &&
        (cpus = quota_cpus(quota, period)))
        return cpus;
    const char *v1_dirs[2] = {"/sys/fs/cgroup/cpu",
                              "/sys/fs/cgroup/cpu,cpuacct"};
    for (int d = 0; d < 2; d++) {
        char qpath[512], ppath[512];
        snprintf(qpath, sizeof qpath, "%s%s/cpu.cfs_quota_us", v1_dirs[d],
                 strcmp(v1, "/") ? v1 : "");
        snprintf(ppath, sizeof ppath, "%s%s/cpu.cfs_period_us", v1_dirs[d],
                 strcmp(v1, "/") ? v1 : "");
        if (read_longs(qpath, &quota, NULL, &is_max) == 1 &&
            read_longs(ppath, &period, NULL, &is_max) == 1 &&
            (cpus = quota_cpus(quota, period)))
            return cpus;
    }
    return 0;
}

int frae_cpus_available(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = CPU_COUNT(&set);
    const long quota = cgroup_cpus();
    if (quota > 0 && quota < cpus)
        cpus = quota;
    return cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
}
