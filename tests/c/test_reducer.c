/* The library's data-parallel hook (frae_set_reducer): replicas that each
 * train on a share of the batch, their sums added in rank order, against
 * one model on the whole batch. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/frae_internal.h"
#include "test_util.h"
#include "tests.h"

#define MAX_REPLICAS 3

/* Threads as replicas: a barrier, each replica's buffer, rank 0 adds them
 * in rank order into a shared result. */
typedef struct {
    pthread_barrier_t barrier;
    int n;
    float *f32[MAX_REPLICAS], *out32;
    double *f64[MAX_REPLICAS], out64[8];
} group;

typedef struct {
    group *g;
    int rank;
    int fail; /* this reducer refuses to sum */
    frae_model *m;
    const float *x;
    const int *valid;
    int rows, frames, rc;
} replica;

static int sum_f32(void *ctx, float *x, size_t n)
{
    replica *r = ctx;
    group *g = r->g;
    g->f32[r->rank] = x;
    pthread_barrier_wait(&g->barrier);
    if (r->rank == 0)
        for (size_t i = 0; i < n; i++) {
            float s = g->f32[0][i];
            for (int k = 1; k < g->n; k++)
                s += g->f32[k][i];
            g->out32[i] = s;
        }
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out32, sizeof(float) * n);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

static int sum_f64(void *ctx, double *x, size_t n)
{
    replica *r = ctx;
    group *g = r->g;
    if (r->fail)
        return -1;
    g->f64[r->rank] = x;
    pthread_barrier_wait(&g->barrier);
    if (r->rank == 0)
        for (size_t i = 0; i < n; i++) {
            double s = g->f64[0][i];
            for (int k = 1; k < g->n; k++)
                s += g->f64[k][i];
            g->out64[i] = s;
        }
    pthread_barrier_wait(&g->barrier);
    memcpy(x, g->out64, sizeof(double) * n);
    pthread_barrier_wait(&g->barrier);
    return 0;
}

static void *replica_train(void *arg)
{
    replica *r = arg;
    frae_reset(r->m);
    r->rc = frae_step(r->m,
                      &(frae_batch){.x = r->x,
                                    .valid = r->valid,
                                    .nseq = r->rows,
                                    .nframes = r->frames,
                                    .continued = 1,
                                    .kind = FRAE_STEP_TRAIN},
                      NULL);
    return NULL;
}

/* Trains n replicas on their rows (rows[k] of them from x's row first[k];
 * rows 0: one row of padding) for T frames. */
static void train_replicas(frae_model **m, int n, const float *x,
                           const int *valid, const int *first, const int *rows,
                           int T, int D, int *rc)
{
    group g;
    memset(&g, 0, sizeof g);
    g.n = n;
    g.out32 = malloc(sizeof(float) * frae_param_count(m[0]));
    pthread_barrier_init(&g.barrier, NULL, (unsigned)n);
    replica rep[MAX_REPLICAS];
    frae_reducer red[MAX_REPLICAS];
    float *pad = calloc((size_t)T * D, sizeof(float));
    static const int zero = 0;
    pthread_t th[MAX_REPLICAS];
    for (int k = 0; k < n; k++) {
        rep[k] = (replica){&g,
                           k,
                           0,
                           m[k],
                           rows[k] ? x + (size_t)first[k] * T * D : pad,
                           rows[k] ? valid + first[k] : &zero,
                           rows[k] ? rows[k] : 1,
                           T,
                           0};
        red[k] = (frae_reducer){sum_f32, sum_f64, &rep[k], k};
        frae_set_reducer(m[k], &red[k]);
        pthread_create(&th[k], NULL, replica_train, &rep[k]);
    }
    for (int k = 0; k < n; k++) {
        pthread_join(th[k], NULL);
        rc[k] = rep[k].rc;
        frae_set_reducer(m[k], NULL);
    }
    pthread_barrier_destroy(&g.barrier);
    free(g.out32);
    free(pad);
}

int test_reducer_replicas(void)
{
    int failures = 0;
    const int D = 5, T = 7, B = 4;
    const int valid[4] = {7, 3, 5, 6};
    for (int family = 0; family <= 1; family++) {
        frae_config c;
        const int enc[1] = {12}, dec[1] = {12};
        tiny_config(&c, D, 2, 1, enc, 3, 1, dec);
        c.family = family ? FRAE_FAMILY_GRU : FRAE_FAMILY_DENSE;
        c.feedback = FRAE_FEEDBACK_FULL;
        c.window = T; /* one window: one step */
        c.batch = B;
        frae_model *solo = create_or_die(&c);
        c.batch = 2;
        frae_model *m[MAX_REPLICAS];
        for (int k = 0; k < MAX_REPLICAS; k++)
            m[k] = create_or_die(&c);
        const size_t n = frae_param_count(solo);
        float *x = synth(B, T, D, 11);
        float *g_solo = malloc(4 * n), *g_k = malloc(4 * n);
        float *p_solo = malloc(4 * n), *p_k = malloc(4 * n),
              *p0 = malloc(4 * n);
        frae_get_params(m[0], p0);
        frae_reset(solo);
        frae_step(solo,
                  &(frae_batch){.x = x,
                                .valid = valid,
                                .nseq = B,
                                .nframes = T,
                                .continued = 1,
                                .kind = FRAE_STEP_TRAIN},
                  NULL);
        frae_get_grads(solo, g_solo);
        frae_get_params(solo, p_solo);

        /* two replicas of two rows, then three with the third idle */
        const int first[3] = {0, 2, 0}, rows2[3] = {2, 2, 0};
        for (int n_rep = 2; n_rep <= 3; n_rep++) {
            int rc[MAX_REPLICAS] = {0};
            for (int k = 0; k < n_rep; k++) { /* fresh Adam state too */
                frae_destroy(m[k]);
                m[k] = create_or_die(&c);
            }
            train_replicas(m, n_rep, x, valid, first, rows2, T, D, rc);
            for (int k = 0; k < n_rep; k++) {
                CHECK(rc[k] == 0, "replica %d failed", k);
                frae_get_grads(m[k], g_k);
                double d = max_rel_diff(g_k, g_solo, n);
                CHECK(d < 1e-5,
                      "family %d, %d replicas: replica %d's summed gradient "
                      "is %.2e from one model's",
                      family, n_rep, k, d);
                frae_get_params(m[k], p_k);
                if (k == 0)
                    memcpy(p_solo, p_k, 4 * n); /* replicas against 0 */
                int same = 1;
                for (size_t i = 0; i < n; i++)
                    same &= p_k[i] == p_solo[i];
                CHECK(same, "replica %d took another step than replica 0", k);
            }
        }
        /* a reducer that fails fails the call */
        {
            frae_set_params(m[0], p0);
            replica r = {NULL, 0, 1, m[0], x, valid, 2, T, 0};
            frae_reducer red = {sum_f32, sum_f64, &r, 0};
            frae_set_reducer(m[0], &red);
            frae_reset(m[0]);
            int rc = frae_step(m[0],
                               &(frae_batch){.x = x,
                                             .valid = valid,
                                             .nseq = 2,
                                             .nframes = T,
                                             .continued = 1,
                                             .kind = FRAE_STEP_TRAIN},
                               NULL);
            CHECK(rc == -1, "a failing reducer gave %d, not -1", rc);
            frae_set_reducer(m[0], NULL);
        }
        free(x), free(g_solo), free(g_k), free(p_solo), free(p_k), free(p0);
        frae_destroy(solo);
        for (int k = 0; k < MAX_REPLICAS; k++)
            frae_destroy(m[k]);
    }
    return failures;
}

/* Erasure training's lost packets: a replica of rank 0 draws those of a
 * model trained alone, another rank its own (replicas that shared them
 * would train every local row on the same losses). */
static int sum_nothing_f32(void *ctx, float *x, size_t n)
{
    (void)ctx, (void)x, (void)n;
    return 0;
}

static int sum_nothing_f64(void *ctx, double *x, size_t n)
{
    (void)ctx, (void)x, (void)n;
    return 0;
}

int test_erasure_replicas_draw_apart(void)
{
    int failures = 0;
    const int enc[1] = {6}, dec[1] = {6}, T = 30, nseq = 2;
    frae_config c;
    tiny_config(&c, 3, 2, 1, enc, 3, 1, dec);
    c.family = FRAE_FAMILY_GRU;
    c.batch = nseq;
    c.window = T;
    c.erasure = 0.5f;
    c.erasure_frames = 1;
    float *x = synth(nseq, T, c.frame_dim, 5);
    unsigned char lost[3][2 * 2 * 30];
    for (int k = 0; k < 3; k++) { /* alone, rank 0, rank 1 */
        frae_model *m = create_or_die(&c);
        frae_reducer red = {sum_nothing_f32, sum_nothing_f64, NULL, k - 1};
        if (k > 0)
            frae_set_reducer(m, &red);
        CHECK(frae_step(m,
                        &(frae_batch){.x = x,
                                      .nseq = nseq,
                                      .nframes = T,
                                      .kind = FRAE_STEP_GRADIENTS},
                        NULL) == 0,
              "step %d failed", k);
        memcpy(lost[k], m->tr.lost, sizeof lost[k]);
        frae_destroy(m);
    }
    int n_lost = 0;
    for (size_t i = 0; i < sizeof lost[0]; i++)
        n_lost += lost[0][i];
    CHECK(n_lost > 0, "nothing lost: the check would mean nothing");
    CHECK(!memcmp(lost[0], lost[1], sizeof lost[0]),
          "rank 0 lost other packets than a model alone");
    CHECK(memcmp(lost[0], lost[2], sizeof lost[0]),
          "rank 1 lost the same packets as rank 0");
    printf("    %d of %d received frames lost alone and on rank 0, "
           "others on rank 1\n",
           n_lost, nseq * T);
    free(x);
    return failures;
}
