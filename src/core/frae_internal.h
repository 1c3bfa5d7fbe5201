/* Internal layout of a frae_model.  Not part of the public API. */
#ifndef FRAE_INTERNAL_H
#define FRAE_INTERNAL_H

/* on x86, <xmmintrin.h> below brings <stdlib.h> (through mm_malloc.h), and
 * sources came to rely on it: included here for every target */
#include <stdlib.h>

#include "base/checksum.h"
#include "base/util.h"
#include "core/kernels.h"
#include "core/state.h"
#include "frae.h"
#include "frae_codec.h"

/* ACT_GRU: the layer is a GRU cell; its product is the input one (3H
 * gate pre-activations) and its activation the cell update (gru.c). */
enum {
    ACT_RELU = FRAE_ACT_RELU,
    ACT_TANH = FRAE_ACT_TANH,
    ACT_LINEAR = 2,
    ACT_GRU = 3
};

/* Weight matrices are stored panel-packed: the columns are cut into panels
 * of FRAE_PANEL (the last may be narrower), and each panel's rows x width
 * block is contiguous.  A matrix-vector product then streams memory in
 * order, which at batch 1 (weights far larger than L2) is what bounds the
 * speed.  Keras order [in][out] is only the exchange format. */
#define FRAE_PANEL 64

/* A GEMM is split across threads (by column panels) only above this many
 * multiply-adds: below it the fork and join cost more than they save. */
#define FRAE_THREAD_MACS 200000.0

/* First layers sum fed-back frames ahead (train.c) for streams of at most
 * this many sequences; larger batches reuse each weight read anyway. */
#define FRAE_PEND_MAX_ROWS 4

/* By default the backward pass walks the window in chunks of about this
 * many rows (frames x sequences), folding each chunk into the weight
 * gradients (frae_config.chunk_rows overrides it). */
#define FRAE_CHUNK_ROWS 512

static inline size_t packed_index(int rows, int cols, int r, int c)
{
    int pc0 = c - c % FRAE_PANEL;
    int w = cols - pc0 < FRAE_PANEL ? cols - pc0 : FRAE_PANEL;
    return (size_t)pc0 * rows + (size_t)r * w + (size_t)(c - pc0);
}

/* A weight matrix and its bias.  The model's layers are the first
 * n_layers (encoder hidden..., latent, decoder hidden..., output); a GRU
 * family model also holds each GRU's recurrent matrix, W_hh [H][3H] and
 * b_hh, after them (frae_net.rec).  Read only: the pointers are const, and
 * only the model that owns the memory writes it (frae_model.wbias, wt,
 * wh). */
typedef struct {
    int in, out;        /* the product's widths (3H for a GRU's matrices) */
    int units;          /* width of the activation the next layer reads: out,
                        or H for a GRU */
    int act;            /* ACT_* applied to the output */
    size_t w_off;       /* kernel in params/grads/adam_m/adam_v, packed
                        in x out (see FRAE_PANEL) */
    size_t b_off;       /* bias [out] */
    const float *bias;  /* the bias itself: params + b_off, or for bf16
                          models (which keep no f32 weights) their own */
    const float *wt;    /* kernel transposed, packed out x in, for input
                        gradients; NULL where none are needed (see
                        frae_needs_transposed) */
    const uint16_t *wh; /* bf16 weights (FRAE_WEIGHTS_BF16 only): panels
                           as above, rows padded to 32 columns and paired
                           (see frae_gemv_bf16 in kernels.h); batch 1 reads
                           these */
} frae_layer;

/* A normalization statistic a model may hold and a checkpoint keep:
 * finite, |v| <= FRAE_NORM_MAX, and a std > 0.  The one check of both
 * frae_set_normalization (every writer's way in) and the checkpoint's
 * reader, so what is saved reads back. */
#define FRAE_NORM_MAX 3e38
int frae_norm_stat_ok(double v, int is_std);

/* cfg.normalize: rows of x (x_rs apart) z-scored into dst [rows][D]; one
 * output frame scaled back. */
void frae_normalize_rows(const frae_net *m, const float *x, ptrdiff_t x_rs,
                         int rows, float *dst);
void frae_denormalize(const frae_net *m, const float *y, float *dst);

/* The weights (public: frae_net): the shape, the kernels chosen for
 * this CPU and every parameter, all read only.  The
 * forward pass and any number of codec states share one; nothing reached
 * from it is writable, so states in several threads cannot race on it. */
struct frae_net {
    frae_config cfg;
    frae_gemm_fn gemm;
    frae_gemv_sparse_fn gemv_sparse;
    frae_gemv_bf16_fn gemv_bf16;
    frae_gemv2_bf16_fn gemv2_bf16;
    frae_compact_fn compact;
    frae_adam_fn adam;
    frae_gru_forward_fn gru_forward;
    frae_gru_backward_fn gru_backward;
    const char *isa_name;

    int n_layers;
    int dec_first; /* index of the first decoder layer; 0 is the encoder's */
    int latent;    /* index of the latent layer */
    int gru;       /* GRU family: layers 0 and dec_first are GRU cells */
    int rec[2];    /* their recurrent matrices' indices (encoder, decoder) */
    int n_mats;    /* matrices: n_layers, + 2 for the GRU family, + 2 for
                      a prior, + 1 for its within-frame autoregression */
    int prior[3];  /* the prior's matrices (its tanh layer, its logits, the
                      autoregression q -> logits), -1 without them */
    frae_layer layer[FRAE_MAX_MATS];

    size_t n_params;
    /* NULL for bf16 models, whose weights live only in the layers' wh and
     * biases in their bias (use frae_weight_get) */
    const float *params;
    /* cfg.normalize: per-band mean and std [D] */
    const float *norm_mean, *norm_std;
};

/* What training adds to the weights: gradients, Adam's moments and step,
 * and the window of one batch (inputs, targets, gradients before
 * activation).  Only a model made with cfg.training has one (else all
 * NULL); a model's forward and the codec never read it. */
typedef struct {
    float *grads, *adam_m, *adam_v;
    long adam_step;
    /* per matrix, the gradient before activation: for the output layer
     * dL/dy of the whole window, [W][B][out]; for the others one backward
     * chunk, [chunk][B][out] */
    float *dz[FRAE_MAX_MATS];
    int chunk_frames; /* frames per backward chunk: about FRAE_CHUNK_ROWS
                         rows, so big batches keep few frames of gradients */
    float *xwin;      /* the current window's input, [W][B][D] */
    float *xla; /* cfg.lookahead: each frame's next A frames, [W][B][A*D] */
    /* cfg.targets: the window's targets [W][B][D], and one frame of
     * z-scored targets per sequence [B][D] (with normalize) */
    float *twin, *tnorm;
    /* cfg.level_loss: the window's input frames' log powers, [W][B]
     * (level.c computes each once a window) */
    double *level_lx;
    float *fb; /* full feedback: dL/d(buffer) of one frame, [B][K*D] */
    /* GRU family: dL/dh of one frame [B][H] per side, and the part carried
     * back to the frame before (recurrence, and with full feedback the
     * encoder's input h_dec) */
    float *dh_carry[2];
    /* prior: d(lambda x rate)/dq of the window's codes, [W][B][L] (the
     * straight-through slope), and with full feedback its gradient to the
     * contexts, [W][B][C] */
    float *rate_dq, *prior_dctx;
    /* erasure training (cfg.erasure > 0, train.c): its 2B rows are two
     * tracks (frae_train_rows), the window's lost frames [W][2B] (1: lost;
     * only the receiver's track, rows B..2B-1, loses any), each row's
     * channel state [2B] (1: in a burst), the latent each row's decoder
     * ran last [2B][L] (what a lost frame halves), and dL/d(that latent)
     * carried back to the frame before [2B][L] */
    unsigned char *lost, *lost_bad;
    float *last_q, *q_carry;
    /* data-parallel training: sums across replicas (NULL: alone) */
    const frae_reducer *reducer;
} frae_trainer;

/* A model: its weights (net, first, so that a frae_model * is also a
 * frae_net *), the writable views of them that only the model's own calls
 * use (init, set, load, the Adam step), the trainer, and the stream of its
 * batch.  One block from the config, allocated once. */
struct frae_model {
    frae_net net;
    int threads;            /* cfg.threads, resolved */
    struct frae_pool *pool; /* its threads - 1 workers (pool.h), NULL for 1:
                               the products of its own batch's stream; the
                               net's other users run on their caller */
    /* writable views of net's parameters, biases, transposed and bf16
     * kernels, and statistics (the same memory) */
    float *params;
    float *wbias[FRAE_MAX_MATS], *wt[FRAE_MAX_MATS];
    uint16_t *wh[FRAE_MAX_MATS];
    float *norm_mean, *norm_std;

    frae_trainer tr;

    /* the stream of the model's batch: B sequences, and a window of
     * activations when it trains */
    frae_state state;
    int *wvalid;  /* valid frames per sequence in the current call [B] */
    float *xnorm; /* cfg.normalize: one frame of z-scored input per
                        sequence [B][D] */

    void *block;
    size_t block_bytes;
};

/* Denormals in decaying activations and gradients can slow every FMA many
 * times over: frae's calls flush them (FTZ) and treat denormal inputs as
 * zero (DAZ), and restore the caller's MXCSR on the way out. */
#if defined(__SSE__)
#include <xmmintrin.h>
typedef unsigned int fp_env;
static inline fp_env fp_enter(void)
{
    fp_env saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return saved;
}
static inline void fp_leave(fp_env saved) { _mm_setcsr(saved); }
#elif defined(__aarch64__)
/* aarch64: FPCR.FZ (bit 24) flushes denormal inputs and results to zero,
 * as FTZ and DAZ together (tests/arch_fixtures_test.sh shows the bits
 * agree; docs/performance.md has the one corner where they may not) */
typedef unsigned long fp_env;
static inline fp_env fp_enter(void)
{
    unsigned long saved;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(saved));
    __asm__ __volatile__("msr fpcr, %0" : : "r"(saved | (1ul << 24)));
    return saved;
}
static inline void fp_leave(fp_env saved)
{
    __asm__ __volatile__("msr fpcr, %0" : : "r"(saved));
}
#else
typedef int fp_env;
static inline fp_env fp_enter(void) { return 0; }
static inline void fp_leave(fp_env saved) { (void)saved; }
#endif

/* gemm.c: the packed-GEMM driver.  C[M][c0..c1) = init + A . B[k0..k0+K)
 * [c0..c1), B a packed rows x cols matrix (bias and c indexed from c0). */
void frae_gemm_packed_b(const frae_net *m, const frae_scratch *sc, int M, int K,
                        const float *a, ptrdiff_t a_rs, ptrdiff_t a_cs,
                        const float *b, int rows, int cols, int k0, int c0,
                        int c1, float *c, ptrdiff_t ldc, const float *bias,
                        int init);
/* Rows r0..r0+M of a packed rows x cols C = init + A^T . B: A is K x M (row
 * stride a_cs), B is K x cols (row stride ldb): weight gradients. */
void frae_gemm_packed_c(const frae_net *m, const frae_scratch *sc, int M, int K,
                        const float *a, ptrdiff_t a_cs, const float *b,
                        ptrdiff_t ldb, float *c, int rows, int cols, int r0,
                        int init);
/* Layer l's forward product, nb rows of A (row stride a_rs) over kernel
 * rows k0..k0+K, into z (rows ly->out apart), on f32 or bf16 weights. */
void frae_layer_product(const frae_net *m, const frae_scratch *sc, int l,
                        int nb, int K, const float *a, ptrdiff_t a_rs, int k0,
                        float *z, const float *bias, int init);

/* The squared error's weight on value d of a frame (cfg.emphasis): 1 but
 * in the emphasised range.  Training, validation and the encoder's search
 * all weigh w diff^2 (gradient 2 w diff); w = 1 leaves the sums' bits as
 * they were without it. */
static inline float frae_value_weight(const frae_config *c, int d)
{
    return c->emphasis > 0.0f && d >= c->emphasis_from && d < c->emphasis_to
               ? c->emphasis
               : 1.0f;
}

/* forward.c: frame t (window position) of nb sequences, x at frame t of
 * sequence 0 with rows x_rs apart; the decoded frames land in the ring.
 * The halves, for the codec: encoding leaves the code in st->q, decoding
 * reads it; neither moves ring_pos. */
void frae_forward_frame(const frae_net *m, frae_state *st, long t,
                        const float *x, ptrdiff_t x_rs, int nb);
void frae_forward_encode(const frae_net *m, frae_state *st, long t,
                         const float *x);
void frae_forward_decode(const frae_net *m, frae_state *st, long t);
/* The floats of a frame's view ahead: cfg.lookahead frames of D, and
 * with cfg.lookahead_packet a flag for each (1: the frame is there; 0: it
 * is past the packet's or the sequence's end, and its D values are 0, so
 * the encoder knows what it does not see). */
static inline int frae_ahead_width(const frae_config *c)
{
    return c->lookahead * (c->frame_dim + (c->lookahead_packet > 0));
}
/* cfg.lookahead: frame k + 1 after the one the encoder runs next, for row
 * b, from a raw input frame (z-scored if the model normalizes), into the
 * state's own view ahead, which the encoder then reads; frame NULL (a
 * model with cfg.lookahead_packet): none there. */
void frae_ahead_put(const frae_net *m, frae_state *st, int b, int k,
                    const float *frame);
/* ... all of frame t's, for nseq sequences of nframes frames (rows rs
 * apart), each held at its last valid frame (valid[b], NULL: all) and at
 * cfg.lookahead_packet's edge. */
void frae_ahead_rows(const frae_net *m, frae_state *st, const float *x,
                     ptrdiff_t rs, int nseq, long t, long nframes,
                     const int *valid);
/* How many frames past frame t of its sequence its encoder sees before
 * they are held: cfg.lookahead, or fewer at a look-ahead packet's end. */
int frae_ahead_horizon(const frae_net *m, uint64_t t);
/* Training: the nt frames' (from w0) look-ahead rows into m->tr.xla as
 * [frame][row][A*D]: frame w0+t+1+k of sequence b (rows x_rs apart, valid
 * as frae_step's), erasure training's second track the same. */
void frae_lookahead_stage(frae_model *m, const float *x, ptrdiff_t x_rs,
                          int nseq, int nframes, const int *valid, int w0,
                          int nt, int tracks);
/* Erasure training's frame, over nb = 2S rows: rows 0..S-1 are the
 * sender's track (encoder and a decoder that loses nothing), rows S..2S-1
 * the receiver's: each decodes the code its sender's row made, or, where
 * lost[b], its last decoder latent (last_q [nb][L]) times
 * FRAE_CONCEAL_DECAY, as a receiver conceals a lost frame
 * (frae_decoder_conceal); last_q moves on. */
#define FRAE_CONCEAL_DECAY 0.5f
/* The rows a training model runs for cfg.batch sequences: erasure training
 * runs each sequence twice, as sent and as received. */
static inline int frae_train_rows(const frae_config *c)
{
    return c->training && c->erasure > 0.0f ? 2 * c->batch : c->batch;
}
/* erasure.c: the channel of one training window (tr.lost), and the
 * gradient through concealed frames into dq [nb][L] at frame t (the
 * frames after it done; tr.q_carry zeroed at the window's end) */
void frae_erasure_channel(frae_model *m, int nt, int nb);
/* level.c: ln of a frame's summed power, v z-scored as the model's frames
 * (cfg.normalize), k the features' log scale (cfg.level_scale, 5); *top
 * gets its largest term */
double frae_frame_log_power(const frae_net *n, const float *v, double k,
                            double *top);
/* level.c: the level term of one training window (cfg.level_loss): its
 * sum over the sequences, and its gradient added into dy (NULL: none) */
double frae_level_window(const frae_model *m, int nt, int nb, const int *valid,
                         int targets, float scale, float *dy);
void frae_erasure_backward(frae_model *m, float *dq, int t, int nb);
void frae_forward_frame_lossy(const frae_net *m, frae_state *st, long t,
                              const float *x, ptrdiff_t x_rs, int nb,
                              const unsigned char *lost, float *last_q);

/* infer.c: nframes frames of nseq sequences (at most st's rows, and the
 * sequences in flight since its reset) through n on stream st, continuing
 * from its buffers; x and y [nseq][nframes][D]; xnorm [nseq][D] of scratch
 * for cfg.normalize.  0, or -1 for sizes out of range. */
int frae_run_forward(const frae_net *n, frae_state *st, float *xnorm,
                     const float *x, float *y, int nseq, int nframes);

/* state.c: every pending sum of first layer `which` back to its bias */
void frae_state_fill_sums(const frae_net *m, frae_state *s, int which);

/* config.c */
/* Whether layer l keeps a transposed copy of its kernel: only training
 * reads one, and the first layer's only for full feedback. */
int frae_needs_transposed(const frae_config *c, int l);
/* Inputs and outputs of matrix l of a checked config: layers 0 ..
 * n_enc_hidden + n_dec_hidden + 1, then for the GRU family the encoder's
 * and the decoder's recurrent matrices; -1 if a width overflows an int. */
int frae_layer_shape(const frae_config *c, int l, int *in, int *out);
/* Matrices of a checked config: layers + 2 for the GRU family. */
int frae_mat_count(const frae_config *c);
/* frae_layer_shape, and also the activation (ACT_*) applied to the
 * product and the width of the activation the next layer reads (out, or H
 * for a GRU). */
int frae_layer_spec(const frae_config *c, int l, int *in, int *out, int *act,
                    int *units);

/* The model's tensors in exchange order (the PyTorch state_dict's, which
 * is also Keras get_weights()'s): per layer its weight and bias, and per
 * GRU weight_ih, weight_hh, bias_ih, bias_hh. */
typedef struct {
    int mat;       /* matrix index in frae_model.layer */
    int bias;      /* 1: the bias vector, 0: the weight matrix */
    int gru;       /* a GRU's: 3H gates (Keras orders them z, r, h) */
    char name[32]; /* "enc.0.weight", "dec.0.bias_hh", "out.bias" */
} frae_tensor_entry;
#define FRAE_MAX_TENSORS (2 * FRAE_MAX_MATS)
int frae_tensor_entries(const frae_config *c, frae_tensor_entry *e);
/* Column c, in Keras order, of a tensor `out` wide -> frae's column: the
 * same, except that a GRU's gates (gru: out = 3H) go from Keras's z, r, h
 * order to frae's (PyTorch's) r, z, n. */
static inline int frae_keras_col(int gru, int c, int out)
{
    if (!gru)
        return c;
    const int H = out / 3, g = c / H;
    return (g == 0 ? 1 : g == 1 ? 0 : 2) * H + c % H;
}
/* frae_checkpoint_open and frae_import over a buffer the caller keeps
 * alive (the fuzzers' entry points); name is used in messages. */
frae_checkpoint *frae_checkpoint_parse(const void *buf, size_t size,
                                       const char *name, char *err,
                                       size_t errlen);
frae_model *frae_import_buffer(const void *buf, size_t size, const char *name,
                               const frae_config *hints, char *err,
                               size_t errlen);
/* Weight (input i, output o) of layer l, whatever the storage; set rounds
 * to bf16 for bf16 models. */
float frae_weight_get(const frae_net *m, int l, int i, int o);
void frae_weight_set(frae_model *m, int l, int i, int o, float v);
/* acc + sum_{i<n} W_l[i][o] x[i], summed in order of i (the weights as
 * frae_weight_get reads them, without its per-weight index arithmetic). */
float frae_weight_column_dot(const frae_net *m, int l, int o, const float *x,
                             int n, float acc);

/* After the parameters change outside training (init, set, load):
 * zeroes the prior's autoregression where it would see a code not yet
 * coded, refreshes the transposed copies and rebuilds the sums ahead. */
void frae_weights_changed(frae_model *m);
/* The prior's autoregression (m->prior[2]): -1 and one line in err if an
 * entry that would see a code not yet coded is nonzero (a loaded file);
 * frae_prior_ar_mask zeroes those entries of w, an f32 array laid out as
 * the matrix is in params (its gradient). */
int frae_prior_ar_check(const frae_net *m, char *err, size_t errlen);
void frae_prior_ar_mask(const frae_net *m, float *w);
/* A param-shaped array in an exchange layout (see model.c); src NULL means
 * the parameters themselves. */
void frae_export_params(const frae_net *m, const float *src, float *dst,
                        int torch_layout);

/* optimizer.c */
void frae_adam_update(const frae_net *mod, float *params, const float *grads,
                      float *m, float *v, size_t n, long step, float lr,
                      float beta1, float beta2, float eps);
void frae_refresh_transposed(frae_model *m);

/* The model's GRU cell kernels (kernels.h) over nb rows, split by rows
 * across sc's threads (gemm.c). */
void frae_gru_rows_forward(const frae_net *m, const frae_scratch *sc, int nb,
                           int H, const float *gx, const float *gh,
                           const float *h_prev, float *gates, float *h);
void frae_gru_rows_backward(const frae_net *m, const frae_scratch *sc, int nb,
                            int H, const float *dh, const float *gates,
                            const float *h_prev, float *dgx, float *dgh,
                            float *dh_prev);
/* The GRU cell's exp and tanh (gru.c): a few ulp from libm's,
 * vectorisable. */
float frae_gru_exp(float x);
float frae_gru_tanh(float x);
/* In place over n values, the same bits as the calls one by one. */
void frae_gru_tanh_n(float *x, size_t n);
void frae_gru_sigmoid_n(float *x, size_t n); /* 1 / (1 + exp(-x)) */
void frae_gru_exp_n(float *x, size_t n);
/* The encoder's first kernel row for the look-ahead frames: its last
 * lookahead x D rows. */
static inline int frae_lookahead_row(const frae_net *m)
{
    return m->layer[0].in - frae_ahead_width(&m->cfg);
}

/* The kernel row where first layer `which` (0 encoder, 1 decoder) takes the
 * fed-back frames: after its head ([x], [x, h_dec] or [latent]). */
static inline int frae_buffer_row(const frae_net *m, int which)
{
    if (which)
        return m->cfg.latent_dim;
    return m->cfg.frame_dim + (m->gru ? m->cfg.dec_hidden[0] : 0);
}

/* The prior (cfg.prior_hidden > 0): its matrices come after the layers
 * and the GRUs' recurrent ones. */
static inline int frae_prior_mat(const frae_config *c, int which)
{
    return c->n_enc_hidden + c->n_dec_hidden + 2 +
           (c->family == FRAE_FAMILY_GRU ? 2 : 0) + which;
}
/* Its input width C: what the decoder holds before frame t, h_dec(t-1)
 * for the GRU family, the K fed-back frames (newest first) for the dense
 * one. */
static inline long frae_prior_context_width(const frae_config *c)
{
    return c->family == FRAE_FAMILY_GRU ? (long)c->dec_hidden[0]
                                        : (long)c->history * c->frame_dim;
}
/* Its matrices: 2, and 3 with the within-frame autoregression. */
static inline int frae_prior_mats(const frae_config *c)
{
    return c->prior_hidden > 0 ? 2 + (c->prior_ar != 0) : 0;
}
/* Logits per latent unit: 1 (a Bernoulli) for binary, N for uniform. */
static inline int frae_prior_symbols(const frae_config *c)
{
    return c->quantizer == FRAE_QUANT_UNIFORM ? c->quant_levels : 1;
}

/* prior.c */
/* The prior's input for frame t (window position) of nb sequences of
 * state st, before the frame runs: [nb][C] into dst. */
void frae_prior_context(const frae_net *m, const frae_state *st, long t, int nb,
                        float *dst);
/* Its two layers over `rows` rows of ctx: tanh layer into hid, logits into
 * logit. */
void frae_prior_forward(const frae_net *m, const frae_scratch *sc, int rows,
                        const float *ctx, float *hid, float *logit);
/* The within-frame autoregression (m->prior[2], none if -1): rows of the
 * frame's codes q [rows][L] added to their logits, A q + b; its gradients
 * from the logits' (the prior's second layer's dz), dq += A^T dlogit; and,
 * for the codec, logit column col's term from the codes before its unit,
 * b + sum_{j<u} A[col][j] q_j, summed in order of j. */
void frae_prior_ar_forward(const frae_net *m, const frae_scratch *sc, int rows,
                           const float *q, float *logit);
void frae_prior_ar_backward(frae_model *m, int rows, const float *q, float *dq);
float frae_prior_ar_term(const frae_net *m, const float *q, int col);
/* -log2 p(q) of one frame's L codes under its logits; with dlogit and dq
 * (non-NULL) also scale x their gradients (dq: the slope of -log2 p
 * between q's neighbouring levels, docs/codec.md, "Variable rate"). */
double frae_prior_bits(const frae_config *c, const float *logit, const float *q,
                       float *dlogit, float *dq, float scale);
/* Training: the prior's weight gradients from the dz of its matrices (the
 * logits' gradient filled, its tanh layer's computed here) over the
 * window's first `rows` rows; with full feedback also the contexts'
 * gradient, into m->prior_dctx. */
void frae_prior_backward(frae_model *m, int rows);
/* The codec: a frame's logits turned, in place, into what the frequencies
 * are made of (frae's own exp, no libm): binary sigmoid(l), uniform
 * exp(l - the unit's largest logit), over the whole frame in one loop;
 * frae_prior_unit_weights the same for one unit's logits (1 or N), the
 * same bits; then the integer frequencies of unit u's symbols from a
 * frame's weights: binary f(+1) = 1 + floor(p (2^15 - 2)),
 * f(-1) = 2^15 - f(+1); uniform frae_quantize_pmf of the N terms. */
void frae_prior_weights(const frae_config *c, float *logit);
void frae_prior_unit_weights(const frae_config *c, float *logit);
void frae_prior_freqs(const frae_config *c, const float *weights, int u,
                      uint32_t *freq);

/* layers.c */
void frae_activate(int act, float *z, size_t n);
void frae_activation_backward(int act, const float *a, float *dz, size_t n);
void frae_quantize(const frae_config *cfg, const float *a, float *q, size_t n);
void frae_bias_grad(const float *dz, int rows, int out, float *gb,
                    int accumulate);

/* codec.c, for packets.c: the pitch anchor of a resynchronisation point,
 * the predictor's log2 f0 sent absolutely on FRAE_PITCH_ANCHOR_BITS (the
 * encoder's quantized, and set so, at both ends) */
#define FRAE_PITCH_ANCHOR_BITS 7
uint32_t frae_encoder_pitch_anchor(frae_encoder *e);
void frae_decoder_pitch_anchor(frae_decoder *d, uint32_t code);

/* packets.c: a version-5 header at dst (at most
 * FRAE_STREAM_HEADER_V5_MAX bytes): its bytes */
size_t frae_packet_header_put(const frae_stream *s, unsigned char *dst);

/* The range coder's frequency rule (prior.c; the coder itself is
 * src/codec/entropy.h's): integer frequencies summing to
 * 2^FRAE_RANGE_TOTAL_BITS.
 * freq[n]: 1 + floor(p_i / sum p * (2^15 - n)) each (NaN, negative and
 * infinite p count as 0; all zero: uniform), the remainder to the most
 * probable symbol (the first on ties).  Returns -1 unless 1 <= n <= 2^14. */
int frae_quantize_pmf(const float *p, int n, uint32_t *freq);

#define FRAE_RANGE_TOTAL_BITS 15

#endif
