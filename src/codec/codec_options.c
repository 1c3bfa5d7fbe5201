/* Codec options by name (frae_codec.h, "codec options by name"): one table
 * of what a user may ask of the codec's two ends, which the frae command's
 * encode and decode parse and print --help from, and Python's keywords
 * come from; and the stream options they ask of a model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "core/frae_internal.h"

enum {
    ROW_FRAME_RATE,
    ROW_PACKET_FRAMES,
    ROW_SEARCH,
    ROW_SEARCH_LAMBDA,
    ROW_DTX,
    ROW_DTX_LEVEL,
    ROW_PACKET_MS,
    ROW_RESYNC_MS,
    ROW_RESYNC_STATE,
    ROW_THROUGH,
    ROW_VOCODER,
    ROW_GL_ITERS,
    ROW_POLISH,
    ROWS
};

#define ENC FRAE_CODEC_ENCODES
#define DEC FRAE_CODEC_DECODES
static const frae_codec_option rows[ROWS] = {
    [ROW_FRAME_RATE] = {"frame-rate", "R", ENC,
                        "frames per second, for the kbit/s", "100"},
    [ROW_PACKET_FRAMES] = {"packet-frames", "N", ENC,
                           "with a prior: frames per packet", "100"},
    [ROW_SEARCH] = {"search", "N", ENC,
                    "passes of the encoder's search (0: off)",
                    "2 with pitch and no look-ahead, else 0"},
    [ROW_SEARCH_LAMBDA] = {"search-lambda", "X", ENC,
                           "the search's weight on bits",
                           "the model's --rate-lambda"},
    [ROW_DTX] = {"dtx", NULL, ENC, "silent frames sent as silence", NULL},
    [ROW_DTX_LEVEL] = {"dtx-level", "DB", ENC, "what is silent (implies --dtx)",
                       "-60"},
    [ROW_PACKET_MS] = {"packet-ms", "N", ENC,
                       "real-time packets of N ms (stream version 5)", NULL},
    [ROW_RESYNC_MS] = {"resync-ms", "M|off", ENC,
                       "resynchronisation points every M ms",
                       "200 fixed-rate, 1000 with a prior"},
    [ROW_RESYNC_STATE] = {"resync-state", NULL, ENC,
                          "... that start the network afresh too", NULL},
    [ROW_THROUGH] = {"through", NULL, DEC,
                     "decode through bit errors (real-time packets)", NULL},
    [ROW_VOCODER] = {"vocoder", "V", DEC,
                     "hnm (harmonic plus noise) or gl (Griffin-Lim)",
                     "hnm with pitch, else gl"},
    [ROW_GL_ITERS] = {"gl-iters", "N", DEC, "Griffin-Lim iterations", "32"},
    [ROW_POLISH] = {"polish", "N", DEC,
                    "rounds of making the vocoder's audio analyse back to "
                    "the frames (0: off, 22.5 ms less delay)",
                    "2"},
};

void frae_codec_settings_default(frae_codec_settings *s)
{
    memset(s, 0, sizeof *s);
    s->frame_rate = 100;
    s->search = -1; /* FRAE_SEARCH_AUTO */
    s->search_lambda = -1;
    s->dtx_level = -60.0; /* FRAE_DTX_LEVEL: test codec_options_table */
    s->gl_iters = 32;
    s->polish = 2; /* FRAE_POLISH_ROUNDS: test codec_options_table */
}

int frae_codec_option_count(void) { return ROWS; }

const frae_codec_option *frae_codec_option_at(int index)
{
    return index >= 0 && index < ROWS ? &rows[index] : NULL;
}

int frae_codec_option_find(const char *name)
{
    if (!name)
        return -1;
    if (!strncmp(name, "--", 2))
        name += 2;
    for (int r = 0; r < ROWS; r++) {
        const char *a = rows[r].name, *b = name;
        while (*a && (*a == *b || (*a == '-' && *b == '_')))
            a++, b++;
        if (!*a && !*b)
            return r;
    }
    return -1;
}

static int set_int(const char *name, const char *v, long lo, long hi, int *out,
                   char *err, size_t errlen)
{
    char *end;
    errno = 0;
    const long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno == ERANGE || x < lo || x > hi)
        return frae_errorf(err, errlen,
                           "%s expects an integer in %ld..%ld, got '%s'", name,
                           lo, hi, v ? v : "");
    *out = (int)x;
    return 0;
}

static int set_real(const char *name, const char *v, double lo, double hi,
                    double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    const double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || errno == ERANGE || !isfinite(x) || x < lo ||
        x > hi)
        return frae_errorf(err, errlen,
                           "%s expects a number in [%g, %g], got '%s'", name,
                           lo, hi, v ? v : "");
    *out = x;
    return 0;
}

static int set_row(frae_codec_settings *s, int row, const char *name,
                   const char *v, char *err, size_t errlen)
{
    switch (row) {
    case ROW_FRAME_RATE:
        return set_real(name, v, 1e-3, 1e9, &s->frame_rate, err, errlen);
    case ROW_PACKET_FRAMES:
        return set_int(name, v, 1, FRAE_PACKET_MAX_FRAMES, &s->packet_frames,
                       err, errlen);
    case ROW_SEARCH: return set_int(name, v, 0, 16, &s->search, err, errlen);
    case ROW_SEARCH_LAMBDA:
        return set_real(name, v, 0, 1e6, &s->search_lambda, err, errlen);
    case ROW_DTX: return s->dtx = 1, 0;
    case ROW_DTX_LEVEL:
        return s->dtx = 1,
               set_real(name, v, -200, 0, &s->dtx_level, err, errlen);
    case ROW_PACKET_MS:
        return set_int(name, v, 1, 10000, &s->packet_ms, err, errlen);
    case ROW_RESYNC_MS:
        if (v && !strcmp(v, "off"))
            return s->resync_ms = -1, 0;
        return set_int(name, v, 1, 1000000, &s->resync_ms, err, errlen);
    case ROW_RESYNC_STATE: return s->resync_state = 1, 0;
    case ROW_THROUGH: return s->through = 1, 0;
    case ROW_VOCODER: {
        static const char *const names[] = {"auto", "hnm", "gl"};
        for (int i = 0; i < 3; i++)
            if (v && !strcmp(v, names[i]))
                return s->vocoder = i, 0;
        return frae_errorf(err, errlen,
                           "%s got '%s'; expected one of: auto, hnm, gl", name,
                           v ? v : "");
    }
    case ROW_GL_ITERS:
        return set_int(name, v, 0, 10000, &s->gl_iters, err, errlen);
    default: /* ROW_POLISH */
        return set_int(name, v, 0, 100, &s->polish, err, errlen);
    }
}

int frae_codec_option_set(frae_codec_settings *s, const char *name,
                          const char *value, char *err, size_t errlen)
{
    const int row = frae_codec_option_find(name);
    if (row < 0)
        return frae_errorf(err, errlen, "unknown codec option '%s'",
                           name ? name : "");
    if (set_row(s, row, name, rows[row].metavar ? value : NULL, err, errlen))
        return -1;
    s->given |= 1u << row;
    return 0;
}

size_t frae_codec_option_help(const frae_codec_option *o, char *out, size_t cap)
{
    /* "  --name METAVAR" to column 23, then the text (and the default in
     * parentheses) wrapped at 72 columns, as the command's other lines */
    char head[64], text[256];
    snprintf(head, sizeof head, "--%s%s%s", o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "");
    snprintf(text, sizeof text, "%s%s%s%s", o->help, o->deflt ? " (" : "",
             o->deflt ? o->deflt : "", o->deflt ? ")" : "");
    size_t n = 0;
    int col = snprintf(out, cap, "  %-20s ", head);
    n += (size_t)col;
    for (const char *w = text; *w;) {
        const size_t len = strcspn(w, " ");
        if (col > 23 && col + 1 + (int)len > 72) {
            n += (size_t)snprintf(n < cap ? out + n : NULL,
                                  n < cap ? cap - n : 0, "\n%23s", "");
            col = 23;
        } else if (col > 23) {
            n += (size_t)snprintf(n < cap ? out + n : NULL,
                                  n < cap ? cap - n : 0, " ");
            col++;
        }
        n += (size_t)snprintf(n < cap ? out + n : NULL, n < cap ? cap - n : 0,
                              "%.*s", (int)len, w);
        col += (int)len;
        w += len;
        while (*w == ' ')
            w++;
    }
    n +=
        (size_t)snprintf(n < cap ? out + n : NULL, n < cap ? cap - n : 0, "\n");
    return n;
}

/* Real-time packets: packet-ms of frames each (a whole number of them at
 * frame-rate), a resynchronisation point every resync-ms. */
static int packet_options(const frae_codec_settings *s, long sequences,
                          frae_stream_options *so, char *err, size_t errlen)
{
    const double frames_per_packet = s->packet_ms * s->frame_rate / 1000.0;
    const int P = (int)lrint(frames_per_packet);
    if (s->packet_frames)
        return frae_errorf(err, errlen,
                           "--packet-ms and --packet-frames: give one");
    if (!s->packet_ms)
        return frae_errorf(err, errlen,
                           "%s needs --packet-ms (real-time packets)",
                           s->resync_ms ? "--resync-ms" : "--resync-state");
    if (P < 1 || fabs(frames_per_packet - P) > 1e-9 ||
        P > FRAE_PACKET_MAX_FRAMES)
        return frae_errorf(err, errlen,
                           "--packet-ms %d: not a whole number of %g ms "
                           "frames (1 to %d of them)",
                           s->packet_ms, 1000.0 / s->frame_rate,
                           FRAE_PACKET_MAX_FRAMES);
    if (sequences != 1)
        return frae_errorf(err, errlen,
                           "--packet-ms: the input holds %ld sequences; "
                           "real-time packets carry one",
                           sequences);
    so->datagrams = 1;
    so->packet_frames = P;
    so->resync_state = s->resync_state;
    if (s->resync_ms < 0)
        so->resync_packets = -1;
    else if (s->resync_ms)
        so->resync_packets =
            (int)((s->resync_ms * s->frame_rate / 1000.0 + P - 1) / P);
    return 0;
}

int frae_codec_stream_options(const frae_codec_settings *s, const frae_net *m,
                              long sequences, frae_stream_options *so,
                              char *err, size_t errlen)
{
    frae_stream_options_default(so);
    so->packet_frames = s->packet_frames;
    /* by default a speech codec (a model that codes pitch) searches its
     * codes (docs/codec.md, "Encoder search": 0.2 dB of LSD on unheard
     * voices for about 3x the encoder's time); other models keep
     * decode(encode(x)) == predict(x), and a denoiser's search would steer
     * toward its noisy input.  A variable-rate look-ahead encoder's codes
     * are made for the frames ahead too, which a search frame by frame
     * undoes (more error and more bits); a fixed-rate one's search still
     * takes 5% off the error (docs/2026-12-05-loud.md, "Look-ahead in the
     * encoder" and "A search that judges the next frame too") */
    so->search = s->search >= 0 ? s->search
                 : m->cfg.pitch && m->cfg.quantizer != FRAE_QUANT_NONE &&
                         !m->cfg.targets &&
                         !(m->cfg.lookahead && m->cfg.prior_hidden > 0)
                     ? FRAE_SEARCH_PASSES
                     : 0;
    so->search_lambda = (float)s->search_lambda;
    so->dtx = s->dtx;
    if ((s->packet_ms || s->resync_ms || s->resync_state) &&
        packet_options(s, sequences, so, err, errlen))
        return -1;
    const char *why = frae_stream_options_check(m, so);
    if (why)
        return frae_errorf(err, errlen, "%s: %s",
                           s->dtx             ? "--dtx"
                           : s->resync_state  ? "--resync-state"
                           : s->packet_ms     ? "--packet-ms"
                           : s->packet_frames ? "--packet-frames"
                                              : "--search",
                           why);
    return 0;
}
