/* frae: Feedback Recurrent AutoEncoders in C.  This header is for whoever
 * makes, trains, runs and saves models: the config, the model and its
 * weights, the forward pass, training steps, replicas and checkpoints.
 * The codec (frame codec states, the .fbs bitstream, real-time packets,
 * the range coder, the shipped models) is frae_codec.h; training runs
 * (datasets, epochs, resume) frae_train.h; audio frae_audio.h.
 *
 * A frae_model holds one FRAE (see docs/model-and-training.md, "Model semantics") together with
 * everything it will ever need to run and train: its weights (a frae_net,
 * which the forward pass and any number of codec states share read only), a
 * trainer (gradients, Adam moments, the activations of one BPTT window for
 * a batch of B sequences), and B feedback buffers.  All of it is sized from
 * the frae_config and allocated in one block by frae_create; no other call
 * allocates.  frae_destroy frees it.  There is no global mutable state:
 * models are independent, and two models may be used from two threads at
 * once.
 *
 * Numerical contract: every dense output is the bias followed by one fused
 * multiply-add per input, in input order, except the first layers, whose
 * chains take the fed-back frames oldest first and then the head: [oldest
 * frame, ..., newest frame, x] (so the frames can be summed ahead).  A GRU
 * cell's two products (input and recurrent) are such chains each, the
 * encoder GRU's head being [x, h_dec]; the gates are then computed
 * element-wise as torch.nn.GRUCell does.  Every kernel (scalar, AVX2, AVX-512) follows that order, so results are
 * bit-identical on every code path.
 */
#ifndef FRAE_H
#define FRAE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported from libfrae.so (FRAE_API); the
 * library's other symbols are hidden. */
#if defined(__GNUC__)
#define FRAE_API __attribute__((visibility("default")))
#else
#define FRAE_API
#endif

#define FRAE_VERSION_STRING "0.8.0"
#define FRAE_MAX_HIDDEN 8 /* hidden layers per side */

typedef enum { FRAE_ACT_RELU = 0, FRAE_ACT_TANH = 1 } frae_activation;

/* The two model families (docs/model-and-training.md, "Model semantics"). */
typedef enum {
    /* dense layers, and the buffer of the K last decoded frames fed back
     * to both ends (the original Keras model) */
    FRAE_FAMILY_DENSE = 0,
    /* the paper's FRAE: the first hidden layer of each side is a GRU cell
     * (the equations of torch.nn.GRUCell), and the decoder GRU's state
     * h_dec(t-1) is fed back to the encoder beside x_t; the buffer of K
     * decoded frames can be fed back as well (K > 0) */
    FRAE_FAMILY_GRU = 1
} frae_family;

typedef enum {
    FRAE_QUANT_NONE = 0,   /* identity */
    FRAE_QUANT_BINARY = 1, /* sign, with sign(0) = +1: exactly 1 bit */
    FRAE_QUANT_UNIFORM = 2 /* quant_levels levels evenly spaced on [-1, 1] */
} frae_quantizer;

typedef enum {
    FRAE_FEEDBACK_DETACHED =
        0,                 /* buffer is a constant input (the Keras model) */
    FRAE_FEEDBACK_FULL = 1 /* BPTT also runs through the fed-back frames */
} frae_feedback;

/* Storage of the weight matrices (biases are always fp32). */
typedef enum {
    FRAE_WEIGHTS_F32 = 0,
    /* bfloat16, for inference: frae rounds every weight to bf16 (nearest
     * even, as PyTorch's .bfloat16()) when it is set or loaded, and keeps a
     * bf16 copy that batch-1 products stream at half the bytes.  All
     * arithmetic stays fp32, so the outputs are exactly those of an f32
     * model holding the rounded weights. */
    FRAE_WEIGHTS_BF16 = 1
} frae_weights;

typedef enum {
    FRAE_ISA_AUTO = 0, /* best the CPU supports (env FRAE_ISA overrides) */
    FRAE_ISA_SCALAR = 1,
    FRAE_ISA_AVX2 = 2,
    FRAE_ISA_AVX512 = 3,
    FRAE_ISA_NEON = 4 /* aarch64: always present there */
} frae_isa;

/* frae_config.pitch_ranged: how a model with a prior codes the pitch */
#define FRAE_PITCH_CODER_4BIT 0     /* "f0-voicing-4bit" */
#define FRAE_PITCH_CODER_RANGED 1   /* "f0-voicing-ranged" */
#define FRAE_PITCH_CODER_ENVELOPE 2 /* "f0-voicing-envelope" */

#define FRAE_MAX_LOOKAHEAD 8 /* cfg.lookahead's most frames */

typedef struct {
    /* model shape */
    frae_family family;              /* dense (default) or GRU */
    int frame_dim;                   /* D */
    int history;                     /* K >= 0 frames fed back; 0 = plain AE */
    int n_enc_hidden;                /* number of encoder hidden layers */
    int enc_hidden[FRAE_MAX_HIDDEN]; /* their widths, input side first;
                                         GRU family: [0] is the GRU's
                                         state size, the rest dense */
    int latent_dim;                  /* L */
    int n_dec_hidden;
    int dec_hidden[FRAE_MAX_HIDDEN];
    frae_activation activation; /* hidden layers; latent is always tanh */
    frae_quantizer quantizer;
    int quant_levels;     /* N for FRAE_QUANT_UNIFORM, >= 2 */
    uint64_t seed;        /* Glorot-uniform init and nothing else */
    frae_weights weights; /* f32 (default) or bf16 (inference
                                         only: training must be 0) */
    int normalize;        /* 0; 1: per-band normalization,
                                         part of the model: inputs are
                                         z-scored, (x - mean) / std, before
                                         the encoder, outputs scaled back,
                                         y * std + mean; the loss and the
                                         fed-back frames are in z-scored
                                         units.  mean 0, std 1 until
                                         frae_set_normalization */
    int pitch;            /* 0; 1: the codec's frames also
                                         carry f0 and voicing after the D
                                         values, coded by their own
                                         FRAE_PITCH_BITS quantizer (see
                                         "Streaming codec"); the network
                                         never sees them */
    int pitch_ranged;     /* FRAE_PITCH_CODER_*: 0 (4BIT);
                                         with pitch and a prior, 1
                                         (RANGED): the pitch coder made
                                         for range coding,
                                         "f0-voicing-ranged": the same
                                         pitch codes, each step in the
                                         context of the last two and
                                         counts starting from a table
                                         fitted on speech (docs/codec.md,
                                         "Entropy coding"); 2 (ENVELOPE):
                                         "f0-voicing-envelope", as 1 with
                                         the voicing bit also in the
                                         context of the decoded frame's
                                         level and tilt; 0: one step of
                                         context, even counts */
    int prior_hidden;     /* 0: fixed-rate codes; P > 0: a
                                         learned prior over the quantized
                                         latent (binary or uniform), a
                                         tanh layer of P units then the
                                         logits, conditioned on the
                                         decoder's state before frame t
                                         (docs/codec.md, "Variable rate");
                                         the codec then range-codes the
                                         codes with it (stream version 4) */
    int prior_ar;         /* 0; 1 (with a prior): within-frame
                                         autoregression, unit u's logits
                                         also see the frame's codes
                                         q_0..q_{u-1} through a linear layer
                                         "prior.2" ([L x S, L], entries
                                         (u, j >= u) held at zero), so the
                                         codec codes the units in order */

    /* run-time capacity */
    int batch;    /* B: most sequences per forward/train call */
    int window;   /* W: BPTT window in frames (activations kept for W frames) */
    int training; /* 0: inference only, no gradients or Adam state */
    int targets;  /* 0; 1: trains toward targets other than its inputs
                      (frae_batch.targets, a denoising or enhancing
                      autoencoder): training keeps a window of target
                      frames, and checkpoints record it ("frae.targets") */
    int chunk_rows; /* backward pass granularity, frames x sequences; 0 =
                       512.  Smaller keeps fewer gradients in memory, larger
                       makes bigger GEMMs.  Does not change the math. */

    /* training */
    frae_feedback feedback;
    float learning_rate; /* Adam, Keras defaults: 1e-3, 0.9, 0.999, 1e-7 */
    float beta1;
    float beta2;
    float epsilon;
    float clip_norm;   /* clip the gradient to this global L2 norm; 0 = off */
    float rate_lambda; /* with a prior: the loss is distortion + rate_lambda
                            x rate, the rate being -log2 p(q_t) summed over
                            the latent's units (bits per frame, mean over
                            the valid frames); 0 = distortion alone, and
                            the prior does not learn */
    float level_loss;  /* frames of log power (audio features): adds, per
                          training window and sequence, level_loss x n x
                          (ln sum P_out - ln sum P_in)^2 / frames, P a frame's
                          power sum_d exp(level_scale x value) (normalized
                          frames: after the normalization's inverse), the
                          sums over the n frames within 30 dB of the
                          window's loudest input: the decoded envelope keeps
                          the speech's power, which an estimate in the log
                          domain loses (docs/2026-12-04-loudness.md); 0 = off */
    float level_scale; /* the frames' log-power scale: 5 for frae's features
                          ((ln P + 5) / 5); 0 = 5 */
    /* learning-rate schedule, a function of the Adam step s = 1, 2, ...
     * alone (so a resume continues it exactly): linear warm-up from
     * lr / lr_warmup to lr over the first lr_warmup steps, then, if
     * lr_decay_steps > 0, a half cosine from lr down to lr * lr_floor over
     * the next lr_decay_steps steps, and lr * lr_floor after them.  All
     * three 0: a constant learning rate (frae_learning_rate_at). */
    int lr_warmup;
    int lr_decay_steps;
    float lr_floor; /* in [0, 1] */
    /* erasure training (GRU family, fixed rate): each sequence runs on
     * two tracks, as sent (nothing lost: the encoder is fed back a
     * loss-free decoder's output, as a real sender is) and as received:
     * its decoder takes the sent codes, but in each training window a
     * share `erasure` of the packets of erasure_frames frames (0: 4,
     * 40 ms) is lost on a two-state channel, in bursts of two packets on
     * average, and it runs a lost frame as a receiver conceals it
     * (frae_decoder_conceal: the last latent halved).  The loss is the
     * mean over both tracks, so the codec learns to conceal and to come
     * back to the sender's state; a step runs twice the rows (1.55 times
     * the instructions of one without it).  The pattern is a function of
     * the seed, the Adam step and the sequence alone.  0: off; validation
     * and inference never lose frames */
    float erasure; /* in [0, 0.5] */
    int erasure_frames;
    /* GRU family: the encoder also sees the next `lookahead` input frames
     * (0: none; the stream encoder then runs that many frames behind) */
    int lookahead;
    /* ... but none past the first frame of the next packet of
     * `lookahead_packet` frames (counted from the sequence's start): a
     * packet's frames are sent together, so its first frames see further
     * at no more delay than its last one's.  Each frame ahead then comes
     * with a flag: 1 if it is there, 0 (and zeros) past the packet's or
     * the sequence's end.  0: no such limit; else at least `lookahead` */
    int lookahead_packet;
    /* the squared error's weight on values [emphasis_from, emphasis_to)
     * of each frame, the others' being 1 (an audio model's mel bands: its
     * lowest, where STOI's bands are narrow, docs/2026-12-07-emphasis.md);
     * training's loss, its validation loss and the encoder's search all
     * weigh them so.  0: off, every value alike */
    float emphasis; /* in [0, 1000] */
    int emphasis_from, emphasis_to;

    frae_isa isa;
    int threads; /* threads for large matrix products (the model's own
                     workers, started once with it); 0 or 1 = one.  Results
                     are the same bits for any count.  A default that
                     respects the machine: frae_cpus_available(). */
} frae_config;

typedef struct frae_model frae_model;
/* A model's weights, read only (frae_model_net): its shape and every
 * parameter, and nothing else.  The codec's states and coders hold only
 * this, through a const pointer that reaches no writable memory, so any
 * number of them share one model's weights, in any threads, while the
 * model is not changed.  The model owns it: it lives and changes
 * (frae_set_params, frae_step, a restore) with the model. */
typedef struct frae_net frae_net;

typedef struct {
    double mse;       /* mean squared error over the valid values */
    double mae;       /* mean absolute error, reported as a metric */
    double sse, sae;  /* their sums, to combine calls exactly */
    long values;      /* valid values: frames x D */
    long frames;      /* valid frames */
    long steps;       /* Adam steps taken (one per window with valid frames) */
    double grad_norm; /* global L2 norm of the last step's gradient, before
                         clipping */
    double rate_bits; /* with a prior: -log2 p(q) summed over the valid
                         frames' latent codes (the bits an ideal entropy
                         coder spends on them) */
    double rate;      /* rate_bits / frames: bits per frame; 0 without a
                         prior */
    double level_sum; /* with level_loss: sum over windows and sequences of
                         n (ln sum P_out - ln sum P_in)^2 */
    double level;     /* level_sum / frames */
} frae_stats;

/* Fills cfg with the default model (docs/model-and-training.md): D=80, K=4, encoder 512,256,
 * L=16, decoder 256,512, relu, no quantizer, seed 1, batch 1, window 100,
 * training on, detached feedback, Keras Adam defaults. */
FRAE_API
void frae_config_default(frae_config *cfg);
/* The default recurrent model: as frae_config_default, with family GRU,
 * K = 0 (state feedback only), an encoder GRU of 240 units and a decoder
 * GRU of 240 units (613,536 parameters). */
FRAE_API
void frae_config_default_gru(frae_config *cfg);

/* Checks cfg; on error writes one line to err (if non-NULL) and returns -1. */
FRAE_API
int frae_config_check(const frae_config *cfg, char *err, size_t errlen);
/* The frames an encoder's look-ahead holds a packet back by: lookahead, or
 * 1 with lookahead_packet (a packet's frames wait for its last anyway,
 * and the last sees one frame ahead), for packets of a multiple of
 * lookahead_packet frames. */
FRAE_API
int frae_lookahead_delay(const frae_config *cfg);

/* Allocates and initialises a model.  Returns NULL and writes one line to
 * err on a bad config, a size that overflows, or too little memory. */
FRAE_API
frae_model *frae_create(const frae_config *cfg, char *err, size_t errlen);
FRAE_API
void frae_destroy(frae_model *m);

FRAE_API
const frae_config *frae_get_config(const frae_model *m);
/* The model's weights, to share read only (frae_net), and their config. */
FRAE_API
const frae_net *frae_model_net(const frae_model *m);
FRAE_API
const frae_config *frae_net_config(const frae_net *n);

/* Sizes. */
FRAE_API
size_t frae_param_count(const frae_model *m);
FRAE_API
size_t frae_param_count_for(const frae_config *cfg); /* 0 if cfg is invalid */
FRAE_API
double frae_bits_per_frame(const frae_model *m);
/* The per-band statistics of a model made with cfg.normalize (D values
 * each).  set returns -1, changing nothing, if the model does not
 * normalize, a value is not finite or above 3e38 in magnitude (what a
 * checkpoint reads back), or a std is not > 0. */
FRAE_API
int frae_set_normalization(frae_model *m, const float *mean, const float *std);
FRAE_API
int frae_get_normalization(const frae_model *m, float *mean, float *std);
/* Why set would refuse mean and std (D each): 0 if it would not; else -1
 * with the first band that does not pass, in one line in why. */
FRAE_API
int frae_norm_stats_why(const float *mean, const float *std, int D, char *why,
                        size_t cap);
/* Per-band statistics of frames, in one streaming pass: accumulate any
 * number of [n][D] blocks, then finish.  A band whose variance is zero
 * (or below 1e-12 of its mean square, rounding) gets std 1: it is only
 * centred. */
typedef struct {
    int dim;
    double count;
    double *sum, *sum_sq; /* caller-provided, D each, zeroed by begin */
} frae_band_stats;
FRAE_API
void frae_band_stats_begin(frae_band_stats *s, int dim, double *sum,
                           double *sum_sq);
FRAE_API
void frae_band_stats_add(frae_band_stats *s, const float *frames, long n,
                         long stride);
/* Returns -1 if no frame was added. */
FRAE_API
int frae_band_stats_finish(const frae_band_stats *s, float *mean,
                           float *std); /* 32*L for none; with
                                                    pitch, + FRAE_PITCH_BITS */
FRAE_API
size_t frae_bytes_allocated(const frae_model *m);
/* The bytes frae_create(cfg) would allocate, computed from the config
 * alone: 0 with *bytes set, or -1 (err says why) for a config that
 * frae_create would refuse, a model that cannot fit in this machine's
 * memory among them.  Nothing is allocated. */
FRAE_API
int frae_bytes_needed(const frae_config *cfg, size_t *bytes, char *err,
                      size_t errlen);
/* The learning rate of Adam step `step` (1 for the first) under cfg's
 * schedule (frae_config: lr_warmup, lr_decay_steps, lr_floor). */
FRAE_API
float frae_learning_rate_at(const frae_config *cfg, long step);
FRAE_API
const char *frae_isa_name(const frae_model *m);
/* The names the command line, Python and checkpoints give a config's
 * enums: `what` is "family", "activation", "feedback", "weights" or
 * "isa" (frae_isa, "auto" first).  The name of value (NULL if what or
 * value is not one), and the value name names (-1 if none). */
FRAE_API
const char *frae_enum_name(const char *what, int value);
FRAE_API
int frae_enum_value(const char *what, const char *name);
/* The CPUs this process may run on: its affinity mask (taskset), capped by
 * its cgroup's CPU quota (a container's --cpus), rounded up; 1..64.  The
 * default of frae_config.threads for frae train and Python. */
FRAE_API
int frae_cpus_available(void);

/* Parameters, as one flat float vector in Keras get_weights() order: for each
 * layer (encoder hidden..., latent, decoder hidden..., output) its kernel as
 * [in][out] row-major, then its bias [out].  The first encoder layer's input
 * is [x (D), newest frame (D), ..., oldest frame (D)]; the first decoder
 * layer's input is [latent (L), newest frame, ..., oldest frame].
 * A GRU layer of H units (GRU family) is a Keras GRU with reset_after=True:
 * kernel [in][3H], recurrent_kernel [H][3H], bias [2][3H] (input bias,
 * then recurrent bias), gates in Keras order z, r, h.  The encoder GRU's
 * input is [x (D), h_dec (H_dec), newest frame, ..., oldest frame].
 * A bf16 model rounds the kernels it is given (and returns them rounded).
 * Setting parameters in the middle of a stream is allowed: the frames
 * that follow use the new ones. */
FRAE_API
void frae_get_params(const frae_model *m, float *dst);
FRAE_API
void frae_set_params(frae_model *m, const float *src);
/* The tensors of that vector, in its order (the PyTorch state_dict's
 * too): how many, and tensor k's state_dict name, its shape as Keras
 * stores it (rows x cols, [in][out] for a kernel; cols 0 for a bias,
 * rows its length) and whether it is a GRU's (its 3H columns in Keras
 * order z, r, h; PyTorch's is r, z, n).  info returns -1 for k out of
 * range. */
typedef struct {
    char name[32];
    int rows, cols;
    int gru;
} frae_tensor_info;
FRAE_API
int frae_tensor_count(const frae_model *m);
FRAE_API
int frae_tensor_info_get(const frae_model *m, int k, frae_tensor_info *t);
/* Gradients of the last training step (frae_step), same layout.
 * Zero-filled for an inference-only model. */
FRAE_API
void frae_get_grads(const frae_model *m, float *dst);

/* Zeroes all B feedback buffers (start of new sequences). */
FRAE_API
void frae_reset(frae_model *m);

/* Runs nseq <= B sequences of nframes frames through the model, continuing
 * from the current buffers (call frae_reset first for new sequences).
 * x and y are [nseq][nframes][D]; y may not alias x. */
FRAE_API
int frae_forward(frae_model *m, const float *x, float *y, int nseq,
                 int nframes);

/* Inference over shared weights: a forward state is the buffers of up to
 * `rows` sequences streaming through a model's weights (const frae_net),
 * one block of fixed size: frae_forward_state_size (0 for rows < 1 or a
 * size that overflows), then _init into caller memory (64-byte aligned),
 * or _create / _destroy.  Nothing is allocated after that, and states
 * share only the weights, read only, so any number of them run in any
 * threads over one model (its products on the calling thread), while its
 * parameters do not change.  run is frae_forward on the state's buffers:
 * the same bits as the model's own; reset zeroes them (new sequences). */
typedef struct frae_forward_state frae_forward_state;
FRAE_API
size_t frae_forward_state_size(const frae_net *n, int rows);
FRAE_API
frae_forward_state *frae_forward_state_init(void *mem, const frae_net *n,
                                            int rows);
FRAE_API
frae_forward_state *frae_forward_state_create(const frae_net *n, int rows);
FRAE_API
void frae_forward_state_destroy(frae_forward_state *s);
FRAE_API
void frae_forward_state_reset(frae_forward_state *s);
FRAE_API
int frae_forward_run(frae_forward_state *s, const float *x, float *y, int nseq,
                     int nframes);

/* ---- Training steps -------------------------------------------------------
 * One call runs a batch: frae_step(model, &batch, &stats), the batch
 * saying what to run and how.  x (and targets) are [nseq][nframes][D],
 * nseq <= B.  The sequences are cut into windows of W frames from the
 * start of the call (the last one may be shorter); in each window the
 * model runs forward, then (FRAE_STEP_TRAIN) backward and one Adam step,
 * and the buffers carry over from one window to the next.  A caller
 * feeding W frames at a time therefore trains exactly as one call on the
 * whole sequences, and sequences of any length can arrive in pieces. */
typedef enum {
    FRAE_STEP_TRAIN = 0,     /* forward, backward, an Adam step per window */
    FRAE_STEP_GRADIENTS = 1, /* the gradients of one window (nframes <= W)
                                into the gradient buffer, no step: for
                                gradient checks (frae_get_grads) */
    FRAE_STEP_EVALUATE = 2   /* the loss alone, parameters and Adam state
                                untouched: validation; inference-only
                                models too */
} frae_step_kind;

typedef struct {
    const float *x; /* [nseq][nframes][D] */
    /* NULL: the loss compares y_t with x_t (an autoencoder).  Else the
     * target frames, like x, of a model made with cfg.targets (a denoising
     * or enhancing autoencoder): the loss compares y_t with target frame
     * t; feedback stays on the model's own decoded frames, the encoder
     * still sees x, and with normalization the targets are z-scored by
     * the model's statistics, like x */
    const float *targets;
    /* NULL: every frame is real.  Else valid[b] frames of sequence b are,
     * the rest padding, which runs through the model but has no loss and
     * no gradient.  The loss of a window is the mean over its valid
     * values; a window with none takes no step. */
    const int *valid;
    int nseq, nframes;
    /* 0: new sequences (the buffers are zeroed first); 1: they continue
     * the sequences of the previous call (nseq must stay the same until
     * buffers are reset) */
    int continued;
    frae_step_kind kind;
} frae_batch;

/* Runs the batch; writes the loss over its valid frames (and for
 * FRAE_STEP_TRAIN the steps taken and the last gradient's norm) to *stats
 * if non-NULL.  Returns 0, or -1 for sizes out of range, a training kind
 * on an inference-only model, targets for a model not made for them,
 * another nseq than the sequences being continued, or a failed reducer
 * sum. */
FRAE_API
int frae_step(frae_model *m, const frae_batch *batch, frae_stats *stats);

/* Data-parallel training (replicas of one model, each training on its
 * share of every batch, like MPI ranks).  With a reducer set, a training
 * call sums across the replicas, through the reducer, every window's count
 * of valid frames (so the loss is the mean over the whole global batch)
 * and its gradients (before clipping and the Adam step, which every
 * replica then takes alike).  Every replica must make the same calls with
 * the same nframes: a replica with no sequence in a batch passes one row of
 * padding (valid 0).  Each function sums n values elementwise across the
 * replicas in place and must leave every replica the same bits (frae's own
 * reducers add them in rank order, so any transport gives the same
 * result); it returns 0, or non-zero to fail the training call, which then
 * returns -1.  NULL (the default) trains alone.  The model keeps the
 * pointer: r must outlive its use. */
typedef struct frae_reducer {
    int (*sum_f32)(void *ctx, float *values, size_t n);
    int (*sum_f64)(void *ctx, double *values, size_t n);
    void *ctx;
    int rank; /* this replica's (0 for the first): erasure training draws
                 each replica's lost packets apart (0 draws those of a
                 model trained alone) */
} frae_reducer;
FRAE_API
void frae_set_reducer(frae_model *m, const frae_reducer *r);

/* Adam steps taken so far. */
FRAE_API
long frae_adam_step_count(const frae_model *m);

/* ---- Checkpoints --------------------------------------------------------
 * A checkpoint is a safetensors file: u64 header length, JSON header, raw
 * little-endian tensors.  Tensors are the PyTorch state_dict of
 * tools/frae_torch.py ("enc.0.weight" [out, in], "enc.0.bias", ...,
 * "latent.*", "dec.N.*", "out.*"), so they open in PyTorch and NumPy; with
 * the optimizer also "optimizer.m.<same>" and "optimizer.v.<same>".
 * __metadata__ holds the config ("frae.frame_dim", ...), the format name
 * and version, and "frae.checksum" (FNV-1a 64 of the header fields and the
 * tensor data: docs/formats.md, "Checkpoint format").  Writes are atomic: the old
 * file survives any failure or kill.
 *
 * A checkpoint also carries what its writer wants kept with the model:
 * string pairs (frae_meta, keys outside "frae.") and int32 arrays
 * (frae_i32_array), read back with frae_checkpoint_meta and
 * frae_checkpoint_i32.  The frae command keeps its training state there
 * ("train.*") and the audio features a model was trained on
 * ("features.*"); an application may keep its own the same way. */
typedef struct {
    const char *key; /* must not start with "frae." */
    const char *value;
} frae_meta;

typedef struct {
    const char *name; /* a tensor name no model tensor uses */
    const int32_t *data;
    long count;
} frae_i32_array;

/* Saves m (with_optimizer: the Adam moments and step too, when it trains)
 * with the caller's metadata and arrays (NULL, 0 for none). */
FRAE_API
int frae_save(const frae_model *m, const char *path, int with_optimizer,
              const frae_meta *meta, int n_meta, const frae_i32_array *extra,
              int n_extra, char *err, size_t errlen);

/* Opens and verifies a checkpoint (structure, format version, checksum);
 * NULL and one line in err if it is truncated, corrupted, of another
 * version or not a frae checkpoint. */
typedef struct frae_checkpoint frae_checkpoint;
FRAE_API
frae_checkpoint *frae_checkpoint_open(const char *path, char *err,
                                      size_t errlen);
/* The saved config (model shape and training settings). */
FRAE_API
int frae_checkpoint_config(const frae_checkpoint *ck, frae_config *cfg,
                           char *err, size_t errlen);
FRAE_API
const char *frae_checkpoint_meta(const frae_checkpoint *ck, const char *key);
/* Copies int32 array `name` into dst (if non-NULL, at most cap values);
 * returns its length, or -1 if absent or too long. */
FRAE_API
long frae_checkpoint_i32(const frae_checkpoint *ck, const char *name,
                         int32_t *dst, long cap);
FRAE_API
int frae_checkpoint_has_optimizer(const frae_checkpoint *ck);
/* Loads the parameters (and with with_optimizer, Adam state if saved) into
 * m, whose shape must match. */
FRAE_API
int frae_checkpoint_restore(const frae_checkpoint *ck, frae_model *m,
                            int with_optimizer, char *err, size_t errlen);
FRAE_API
void frae_checkpoint_close(frae_checkpoint *ck);

/* Opens, creates and restores in one call.  runtime (may be NULL) supplies
 * batch, window, training, isa and chunk_rows; the rest comes from the
 * file. */
FRAE_API
frae_model *frae_load(const char *path, const frae_config *runtime, char *err,
                      size_t errlen);

/* Writes the checkpoint at in_path with its weights stored as `weights`
 * (bf16: each rounded to nearest even, as PyTorch's .bfloat16()), for
 * inference: the config and every metadata entry outside "frae." and
 * "train." are kept, the optimizer and training state are not.  *moved
 * (may be NULL) counts the parameters rounding changed.  Returns 0; -1 if
 * the input is not a valid checkpoint; -2 if the output was not written
 * (any old file there is untouched).  One line in err on failure. */
FRAE_API
int frae_convert(const char *in_path, const char *out_path,
                 frae_weights weights, size_t *moved, char *err, size_t errlen);

/* Imports weights made elsewhere into a new model:
 *  - a PyTorch state_dict saved as safetensors (names and [out, in]
 *    layouts of tools/frae_torch.py; F32, F64, F16 or BF16);
 *  - a Keras .npz from np.savez(path, *model.get_weights()): kernel
 *    [in, out] then bias, layer by layer.
 * D, K, L and the widths are read from the shapes; hints (may be NULL)
 * gives the rest: activation, quantizer, seed, runtime fields, and the
 * latent width when K = 0 makes the shapes ambiguous. */
FRAE_API
frae_model *frae_import(const char *path, const frae_config *hints, char *err,
                        size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
