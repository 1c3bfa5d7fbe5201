/* The codec's pitch (codec_internal.h): the closed-loop predictive
 * quantizer of log2 f0, and, with a prior, the contexts and adaptive
 * counts its voicing bit and steps are range-coded in. */
#include <math.h>

#include "codec/codec_internal.h"

/* ---- pitch ------------------------------------------------------------------
 * Closed-loop predictive quantizer of log2 f0 (frae_codec.h, "Pitch"): encoder
 * and decoder update the prediction with the same float additions and
 * clamps, no libm, so they never drift apart. */
/* both coders' steps (tools/fit_pitch_counts.py uses the same) */
static const float pitch_steps[8] = {-0.5f,  -0.17f, -0.06f, -0.015f,
                                     0.015f, 0.06f,  0.17f,  0.5f};

static float pitch_step(float pred, int i)
{
    float v = pred + pitch_steps[i];
    return v < PITCH_LO ? PITCH_LO : v > PITCH_HI ? PITCH_HI : v;
}

/* in: f0 (Hz), voicing; out: the decoded pair.  Returns the code. */
uint32_t frae_pitch_encode(float *pred, const float *in, float *out)
{
    const float f0 = in[0];
    if (!(in[1] >= 0.5f) || !(f0 > 0.0f) || !isfinite(f0)) {
        out[0] = out[1] = 0.0f;
        return 0;
    }
    const float target = log2f(f0);
    int best = 0;
    for (int i = 1; i < 8; i++)
        if (fabsf(pitch_step(*pred, i) - target) <
            fabsf(pitch_step(*pred, best) - target))
            best = i;
    *pred = pitch_step(*pred, best);
    out[0] = exp2f(*pred);
    out[1] = 1.0f;
    return 1u | (uint32_t)best << 1;
}

int frae_pitch_decode(float *pred, uint32_t code, float *out)
{
    if (!(code & 1u)) {
        if (code) /* step bits on an unvoiced frame: no encoder makes it */
            return -1;
        out[0] = out[1] = 0.0f;
        return 0;
    }
    *pred = pitch_step(*pred, (int)(code >> 1));
    out[0] = exp2f(*pred);
    out[1] = 1.0f;
    return 0;
}

/* ---- onsets, back-filled ------------------------------------------------------
 * At a voicing onset the predictor starts from the last voiced frame's
 * pitch, held through the unvoiced ones, and a step is half an octave at
 * most: a voice that starts far from there (after a pause, a hum the
 * tracker heard at 50 Hz before a word, another speaker) climbs to its
 * pitch over several frames, the first of them an octave or more off.  A
 * reader that holds those frames together (a file's, a packet's) sees
 * where the climb ends and gives its frames that pitch: the decoded
 * output alone changes, never the predictor, so the stream and both ends'
 * coding stay as they were.  Through speech-vbr on training speakers'
 * clips, LSD 0-4 kHz 5.653 -> 5.629 (a numpy model of the rule over
 * whole clips 5.626, within 40 ms packets 5.634; the
 * tracker's own pitch: 5.603; docs/2026-12-05-loud.md).  A climb is a run
 * of steps of exactly +-half an octave, one way, from an onset (the
 * decoded f0s' ratio within 1e-3 of sqrt 2: no other step comes near).
 * Its last half octave can leave it up to a third of an octave short of
 * the voice, or past it, so the climb takes in the steps that settle it:
 * up to two of 0.06 or 0.17 octave (ratio 2^0.05 to 1.3; the 0.015 steps
 * are the voice itself), the first either way (back: the half octave
 * overshot), the second the same way.  From the 50 Hz floor to a 360 Hz
 * voice the climb's frames get 348 Hz rather than 297.  Through speech-vbr
 * on training speakers' clips LSD 0-4 kHz 5.352 -> 5.332
 * (docs/2026-12-06-rates.md). */
#define HALF_OCTAVE 1.41421356f
#define SETTLING_STEPS 2
#define SETTLING_RATIO 1.03526f /* 2^0.05 */
#define SETTLING_MAX 1.3f       /* below a half octave */

static int frame_voiced(const float *f, int dim)
{
    return f[dim + 1] >= 0.5f && f[dim] > 0.0f;
}

void frae_pitch_backfill(float *frames, long n, int width, int dim,
                         int *voiced_before)
{
    for (long t = 0; t < n; t++) {
        const int voiced = frame_voiced(frames + t * width, dim);
        if (voiced && !*voiced_before) {
            long end = t;
            int dir = 0;
            for (; end + 1 < n; end++) {
                const float *a = frames + end * width, *b = a + width;
                if (!frame_voiced(b, dim))
                    break;
                const float ratio = b[dim] / a[dim];
                const int d = fabsf(ratio - HALF_OCTAVE) < 1e-3f          ? 1
                              : fabsf(ratio * HALF_OCTAVE - 1.0f) < 1e-3f ? -1
                                                                          : 0;
                if (!d || (dir && d != dir))
                    break;
                dir = d;
            }
            for (int k = 0, settle = 0;
                 dir && k < SETTLING_STEPS && end + 1 < n; k++, end++) {
                const float *a = frames + end * width, *b = a + width;
                if (!frame_voiced(b, dim))
                    break;
                const float up = b[dim] / a[dim], down = a[dim] / b[dim];
                const int d = up >= SETTLING_RATIO && up < SETTLING_MAX ? 1
                              : down >= SETTLING_RATIO && down < SETTLING_MAX
                                  ? -1
                                  : 0;
                if (!d || (settle && d != settle))
                    break;
                settle = d;
            }
            for (long i = t; i < end; i++)
                frames[i * width + dim] = frames[end * width + dim];
        }
        *voiced_before = voiced;
    }
}

/* ---- entropy-coded frames ------------------------------------------------------
 * A model with a prior codes each frame's L codes with the prior's
 * frequencies, computed from the state before the frame (the same floats
 * at both ends: frae_prior_freqs), then its pitch code with adaptive
 * counts: the voicing bit in the context of the last frame's voicing, a
 * voiced frame's step in the context of the last frame's step (or of an
 * onset): a glide repeats its step.  The ranged pitch coder
 * (cfg.pitch_ranged) also sees the step before that, and starts from
 * counts fitted on speech (pitch_counts.h) instead of even ones. */

/* The step's context: the last frame's step (-1 after an unvoiced frame)
 * and, for the ranged coder, the one before (pitch_counts.h's 9 x 9 rows) */
int frae_pitch_step_context(const struct frae_codec_state *s)
{
    return s->model->cfg.pitch_ranged
               ? (s->prev_step + 1) * 9 + s->prev_step2 + 1
               : s->prev_step + 1;
}

void frae_pitch_context_advance(struct frae_codec_state *s, int voiced,
                                int step)
{
    s->prev_voiced = voiced;
    s->prev_step2 = s->prev_step;
    s->prev_step = voiced ? step : -1;
}

/* values above how many of the edges */
static int env_bin(float v, const float *edges, int n)
{
    int bin = 0;
    for (int i = 0; i < n; i++)
        bin += v > edges[i];
    return bin;
}

/* The envelope coder's voicing context, from the frame just decoded (both
 * ends have it before the pitch: the envelope's codes come first) in the
 * model's feature units: the last voicing, then bins of the frame's level
 * (the mean of its D values), tilt (the mean of the lowest quarter minus
 * that of the top three eighths) and change of tilt since the last coded
 * frame (0 for a sequence's first), as tools/fit_pitch_counts.py fitted
 * them.  Voicing follows the envelope: a voiced frame is loud and slopes
 * down (docs/codec.md, "Entropy coding").  Plain float sums in one order at both
 * ends.  Called once per coded frame: it moves the tilt on. */
int frae_pitch_env_context(struct frae_codec_state *s)
{
    const frae_net *m = s->model;
    const int D = m->cfg.frame_dim;
    const int lo = D / 4 > 1 ? D / 4 : 1;
    const int hi = 5 * D / 8 < D - 1 ? 5 * D / 8 : D - 1;
    const float *y = frae_state_frame(&s->st, s->st.ring_pos - 1);
    float sum = 0.0f, sum_lo = 0.0f, sum_hi = 0.0f;
    for (int i = 0; i < D; i++) {
        const float v =
            m->cfg.normalize ? y[i] * m->norm_std[i] + m->norm_mean[i] : y[i];
        sum += v;
        if (i < lo)
            sum_lo += v;
        if (i >= hi)
            sum_hi += v;
    }
    const float tilt = sum_lo / (float)lo - sum_hi / (float)(D - hi);
    const float change = s->have_tilt ? tilt - s->prev_tilt : 0.0f;
    s->prev_tilt = tilt;
    s->have_tilt = 1;
    int ctx = s->prev_voiced;
    ctx = ctx * PITCH_ENV_BINS_LEVEL + env_bin(sum / (float)D,
                                               pitch_env_level_edges,
                                               PITCH_ENV_BINS_LEVEL - 1);
    ctx = ctx * PITCH_ENV_BINS_TILT +
          env_bin(tilt, pitch_env_tilt_edges, PITCH_ENV_BINS_TILT - 1);
    ctx =
        ctx * PITCH_ENV_BINS_CHANGE +
        env_bin(change, pitch_env_tilt_change_edges, PITCH_ENV_BINS_CHANGE - 1);
    return ctx;
}

/* the counts a coded frame's voicing bit is coded with */
uint32_t *frae_pitch_voicing_counts(struct frae_codec_state *s)
{
    if (s->model->cfg.pitch_ranged == FRAE_PITCH_CODER_ENVELOPE)
        return s->env_voicing_count[frae_pitch_env_context(s)];
    return s->voicing_count[s->prev_voiced];
}

/* frequencies of n adaptive counts */
static void count_freqs(const uint32_t *count, int n, uint32_t *freq)
{
    float p[8] = {0}; /* n <= 8; zeros past n keep gcc sure of it */
    for (int i = 0; i < n; i++)
        p[i] = (float)count[i];
    frae_quantize_pmf(p, n, freq);
}

/* a symbol seen: its count grows; all are halved past a limit, so the
 * model follows the speaker */
static void count_update(uint32_t *count, int n, int symbol)
{
    uint32_t total = 0;
    count[symbol] += PITCH_COUNT_STEP;
    for (int i = 0; i < n; i++)
        total += count[i];
    if (total > PITCH_COUNT_LIMIT)
        for (int i = 0; i < n; i++)
            count[i] = (count[i] + 1) / 2;
}

/* A symbol of n (at most 8) coded with adaptive counts, which it then
 * updates: the same steps at both ends */
void frae_count_encode(frae_range_enc *rc, uint32_t *count, int n, int symbol)
{
    uint32_t freq[8];
    count_freqs(count, n, freq);
    frae_range_encode_symbol(rc, freq, symbol);
    count_update(count, n, symbol);
}

int frae_count_decode(frae_range_dec *rc, uint32_t *count, int n)
{
    uint32_t freq[8];
    count_freqs(count, n, freq);
    const int symbol = frae_range_decode_symbol(rc, freq, n);
    count_update(count, n, symbol);
    return symbol;
}

int frae_code_symbol(const frae_config *c, float q)
{
    if (c->quantizer == FRAE_QUANT_BINARY)
        return q > 0.0f;
    return (int)lrintf((q + 1.0f) * 0.5f * (float)(c->quant_levels - 1));
}
