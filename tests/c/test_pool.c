/* The model's threads (src/core/pool.c): every item of every product exactly
 * once whoever claims it, the same bits while the governor switches
 * between pooled and alone under a competitor, a forked child that runs
 * alone, and the default thread count of a process limited to one CPU. */
#define _GNU_SOURCE /* sched_setaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/pool.h"
#include "test_util.h"
#include "tests.h"

enum { MAX_ITEMS = 64 };

typedef struct {
    int hits[MAX_ITEMS];
    int spin[MAX_ITEMS]; /* uneven work, so claims interleave */
} items_job;

static void count_item(void *arg, int i)
{
    items_job *j = arg;
    volatile double sink = 0;
    for (int k = 0; k < j->spin[i]; k++)
        sink += k;
    (void)sink;
    j->hits[i]++; /* item i is one thread's alone */
}

#if defined(__SSE__)
#include <xmmintrin.h>
/* Item i multiplies a denormal by one: zero under DAZ, itself otherwise;
 * it records that and whether a worker took it. */
typedef struct {
    pthread_t caller;
    float out[MAX_ITEMS];
    int on_worker[MAX_ITEMS];
} fp_job;

static void fp_item(void *arg, int i)
{
    fp_job *j = arg;
    volatile float tiny = 1e-39f, one = 1.0f;
    volatile double sink = 0;
    for (int k = 0; k < 20000; k++) /* long enough for a worker to help */
        sink += k;
    (void)sink;
    j->out[i] = tiny * one;
    j->on_worker[i] = !pthread_equal(pthread_self(), j->caller);
}

/* The caller's floating-point mode holds on every item, whoever takes it:
 * frae flushes denormals (FTZ, DAZ) for its calls, and a worker that kept
 * its own mode gave other bits for the items it took (seen as 3 threads
 * training differently, now and then, on a loaded machine). */
int test_pool_items_in_callers_fp_mode(void)
{
    int failures = 0;
    frae_pool *p = frae_pool_create(3);
    CHECK(p != NULL, "cannot start a pool of 3");
    const unsigned saved = _mm_getcsr();
    long on_workers[2] = {0, 0}, wrong[2] = {0, 0};
    for (int round = 0; round < 400 && p; round++) {
        const int daz = round % 2; /* alternate, so a stale mode shows */
        _mm_setcsr(daz ? saved | 0x8040u : saved & ~0x8040u);
        fp_job j;
        memset(&j, 0, sizeof j);
        j.caller = pthread_self();
        frae_pool_run(p, 16, fp_item, &j);
        _mm_setcsr(saved);
        for (int i = 0; i < 16; i++) {
            on_workers[daz] += j.on_worker[i];
            if ((j.out[i] == 0.0f) != daz)
                wrong[daz]++;
        }
    }
    CHECK(wrong[0] == 0 && wrong[1] == 0,
          "items ran outside the caller's mode: %ld with denormals kept, "
          "%ld with them flushed",
          wrong[0], wrong[1]);
    printf("    the caller's FTZ/DAZ on every item: %ld and %ld items on "
           "the workers (kept, flushed)\n",
           on_workers[0], on_workers[1]);
    frae_pool_destroy(p);
    return failures;
}
#else
int test_pool_items_in_callers_fp_mode(void) { return 0; }
#endif

int test_pool_items_once(void)
{
    int failures = 0;
    frae_pool *p = frae_pool_create(3);
    CHECK(p != NULL, "cannot start a pool of 3");
    uint64_t rng = 12345;
    items_job j;
    int jobs_bad = 0;
    for (int job = 0; job < 3000 && p; job++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        const int n = 1 + (int)((rng >> 33) % MAX_ITEMS);
        memset(&j, 0, sizeof j);
        for (int i = 0; i < n; i++)
            j.spin[i] = (int)((rng >> (i % 20)) % 2000);
        frae_pool_run(p, n, count_item, &j);
        for (int i = 0; i < MAX_ITEMS; i++)
            if (j.hits[i] != (i < n))
                jobs_bad++;
    }
    CHECK(jobs_bad == 0, "%d items run other than once", jobs_bad);
    const frae_pool_counts c = frae_pool_counts_get(p);
    printf("    3,000 products of 1..64 items, each item once: %ld pooled, "
           "%ld alone, %ld items on the workers\n",
           c.parallel, c.alone, c.worker_items);
    frae_pool_destroy(p);
    /* NULL pool: the caller alone */
    memset(&j, 0, sizeof j);
    frae_pool_run(NULL, 5, count_item, &j);
    CHECK(j.hits[0] == 1 && j.hits[4] == 1 && j.hits[5] == 0,
          "the caller alone skips or repeats items");
    return failures;
}

static atomic_int competitor_stop;
static void *compete(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&competitor_stop))
        x++;
    return NULL;
}

static float *train_params(int threads, int gru, size_t *n)
{
    const int enc[2] = {256, 96}, dec[2] = {96, 256};
    frae_config c;
    tiny_config(&c, 40, 3, 2, enc, 8, 2, dec);
    c.family = gru ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
    c.batch = 16;
    c.window = 12;
    c.threads = threads;
    frae_model *m = create_or_die(&c);
    *n = frae_param_count(m);
    float *x = synth(16, 30, 40, 8);
    for (int step = 0; step < 4; step++)
        frae_step(
            m,
            &(frae_batch){
                .x = x, .nseq = 16, .nframes = 30, .kind = FRAE_STEP_TRAIN},
            NULL);
    float *p = malloc(sizeof(float) * *n);
    frae_get_params(m, p);
    free(x);
    frae_destroy(m);
    return p;
}

/* Two threads beside a CPU-bound competitor on every core: the governor
 * moves products between the pool and the caller alone as it goes, and
 * the weights are one thread's to the bit. */
int test_pool_under_load_same_bits(void)
{
    int failures = 0;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    enum { MAX_COMPETITORS = 8 };
    pthread_t comp[MAX_COMPETITORS];
    int started = 0;
    for (int gru = 0; gru <= 1; gru++) {
        size_t n1, n2;
        float *one = train_params(1, gru, &n1);
        atomic_store(&competitor_stop, 0);
        for (started = 0; started < cores && started < MAX_COMPETITORS;
             started++)
            if (pthread_create(&comp[started], NULL, compete, NULL))
                break;
        float *two = train_params(2, gru, &n2);
        float *three = train_params(3, gru, &n2);
        atomic_store(&competitor_stop, 1);
        for (int i = 0; i < started; i++)
            pthread_join(comp[i], NULL);
        CHECK(n1 == n2 && !memcmp(one, two, sizeof(float) * n1),
              "2 threads under load train differently (gru %d)", gru);
        CHECK(!memcmp(one, three, sizeof(float) * n1),
              "3 threads under load train differently (gru %d)", gru);
        free(one), free(two), free(three);
    }
    printf("    2 and 3 threads beside %d competitor%s: one thread's "
           "weights, dense and GRU\n",
           started, started == 1 ? "" : "s");
    return failures;
}

/* A forked child has none of its parent's workers: its products run on
 * the caller, and it neither hangs nor differs. */
int test_pool_after_fork(void)
{
    int failures = 0;
    frae_pool *p = frae_pool_create(2);
    CHECK(p != NULL, "cannot start a pool of 2");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        items_job j;
        memset(&j, 0, sizeof j);
        for (int i = 0; i < 8; i++)
            j.spin[i] = 1000;
        frae_pool_run(p, 8, count_item, &j);
        int ok = 1;
        for (int i = 0; i < 8; i++)
            ok &= j.hits[i] == 1;
        frae_pool_destroy(p); /* without its parent's workers or lock */
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "a forked child's product failed (status %d)", status);
    frae_pool_destroy(p);
    return failures;
}

/* The default thread count: the CPUs the process may run on.  A child
 * pinned to one CPU (as taskset -c 0 does) gets 1. */
int test_cpus_available(void)
{
    int failures = 0;
    const int all = frae_cpus_available();
    CHECK(all >= 1 && all <= 64, "frae_cpus_available() = %d", all);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        if (sched_getaffinity(0, sizeof one, &one) != 0)
            _exit(3);
        int first = -1;
        for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
            if (CPU_ISSET(c, &one))
                first = c;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            _exit(3);
        _exit(frae_cpus_available() == 1 ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "pinned to one CPU, frae_cpus_available() is not 1 (status %d)",
          status);
    /* a cgroup (v1) quota of one CPU, where this process may make one */
    char dir[64];
    snprintf(dir, sizeof dir, "/sys/fs/cgroup/cpu/frae-test-%d", (int)getpid());
    int quota_checked = 0;
    if (mkdir(dir, 0755) == 0) {
        fflush(stdout);
        pid_t q = fork();
        if (q == 0) {
            char path[128];
            snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
            FILE *f = fopen(path, "w");
            int ok = f && fprintf(f, "%d\n", 100000) > 0;
            ok &= f && fclose(f) == 0;
            snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
            f = fopen(path, "w");
            ok &= f && fprintf(f, "%d\n", 100000) > 0;
            ok &= f && fclose(f) == 0;
            snprintf(path, sizeof path, "%s/tasks", dir);
            f = fopen(path, "w");
            ok &= f && fprintf(f, "%d\n", (int)getpid()) > 0;
            ok &= f && fclose(f) == 0;
            _exit(!ok ? 3 : frae_cpus_available() == 1 ? 0 : 1);
        }
        status = -1;
        if (q > 0 && waitpid(q, &status, 0) == q && WIFEXITED(status) &&
            WEXITSTATUS(status) != 3) {
            quota_checked = 1;
            CHECK(WEXITSTATUS(status) == 0,
                  "under a cgroup quota of one CPU, frae_cpus_available() "
                  "is not 1");
        }
        rmdir(dir);
    }
    printf("    %d CPU%s here; pinned to one, 1%s\n", all, all == 1 ? "" : "s",
           quota_checked ? "; under a cgroup quota of one CPU, 1" : "");
    return failures;
}
