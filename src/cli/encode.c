/* frae encode: audio or frames to a .fbs stream, from files or a live
 * pipe. */
#define _DEFAULT_SOURCE /* madvise */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "codec_cli.h"

static void encode_help(void)
{
    cli_printf(
        "usage: frae encode [MODEL] IN -o OUT.fbs [--frame-rate R] [--isa I]\n"
        "                   [--no-resample] [--packet-frames N] [--search N]\n"
        "                   [--search-lambda X] [--dtx] [--dtx-level DB]\n"
        "                   [--packet-ms N] [--resync-ms M|off] "
        "[--resync-state]\n"
        "example: frae encode speech.wav -o speech.fbs\n"
        "\n"
        "MODEL: a checkpoint, or a shipped model's name ('frae models':\n"
        "speech, the 1.6 kbit/s codec, when MODEL is left out; speech-vbr,\n"
        "the variable-rate one; speech-3k2, the 3.2 kbit/s one).\n"
        "\n"
        "Compresses each sequence of IN ([T, D] or [N, T, D] .npy, or an\n"
        "audio file, whose features are computed as the model was\n"
        "trained; --no-resample refuses other rates) frame by\n"
        "frame into a .fbs bitstream: the model's quantized latent codes,\n"
        "L x bits per frame (docs/formats.md, 'The .fbs bitstream'); with a\n"
        "model that has a prior (train --prior, --rate-lambda), range-\n"
        "coded into packets of --packet-frames frames (100), a variable\n"
        "rate (stream version 4).  Reports the bitrate the file takes,\n"
        "headers included, in bits per frame and in kbit/s at\n"
        "--frame-rate frames per second (100), and the distortion of the\n"
        "decoded frames: MSE and SNR in dB.\n"
        "\n"
        "--search N (0: off; 2 by default for a speech codec, a model\n"
        "with pitch, but for a variable-rate one with look-ahead, else 0)\n"
        "searches each frame's codes by\n"
        "analysis by synthesis: starting from the network's, N passes\n"
        "each try every code moved by one level through the decoder and\n"
        "keep the move that lowers distortion + lambda x bits the most\n"
        "(lambda: the model's --rate-lambda, or --search-lambda X).  Same\n"
        "format, any decoder; better frames or fewer bits for up to N x L\n"
        "decoder runs a frame (--search 0 encodes about 3x faster; then\n"
        "decode(encode(x)) is predict(x) to the bit).  A model trained to\n"
        "keep the speech's power (--level-loss) weighs each frame's power\n"
        "too.  Off for a denoising model (it would steer toward the\n"
        "input).\n"
        "\n"
        "--packet-ms N (20, 40, 60, ...) writes real-time packets for a\n"
        "voice link (stream version 5): each a datagram's payload (a\n"
        "byte of index and flags, then the codes), decodable whatever\n"
        "was lost before it, and reports the rate as datagrams, every\n"
        "byte counted; --resync-ms M (200 fixed-rate, 1000 with a prior;\n"
        "off: only the first) sets the resynchronisation points a\n"
        "decoder recovers from a loss at; --resync-state (fixed-rate)\n"
        "starts the network afresh there too, so that the decode is\n"
        "exact again from the first one after a loss (for a model\n"
        "trained on crops that short).  frae encode MODEL - - reads\n"
        "a WAV or raw 16-bit PCM (the model's rate, mono) from stdin and\n"
        "writes each packet the moment it is made:\n"
        "  arecord -r 16000 -f S16_LE | frae encode M - - --packet-ms 40 |\n"
        "      frae decode M - - | aplay\n"
        "\n"
        "--dtx (a model with a prior and audio features) sends silence\n"
        "as silence: a frame is silent once it and the %d before it are\n"
        "all below --dtx-level dB (%g; 0 dB: a full-scale sine; giving\n"
        "it implies --dtx), and a silent frame codes a flag alone, the\n"
        "decoder repeating its last frame.  A pause then costs next to\n"
        "nothing (discontinuous transmission, as Opus's DTX).\n"
        "\n"
        "options:\n"
        "  -o, --output OUT.fbs the stream (- for stdout)\n"
        "  --isa I              auto, scalar, avx2, avx512 or neon (auto)\n"
        "  --no-resample        refuse audio at another sample rate\n",
        FRAE_DTX_HANGOVER, FRAE_DTX_LEVEL);
    codec_options_help(FRAE_CODEC_ENCODES);
    cli_printf("\n"
               "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
               "options, model or input.\n");
}

/* ---- a live input: samples from stdin, packets out as they are made -------- */

typedef struct {
    frae_stream_encoder *se;
    frae_dtx_gate *gate;
    FILE *out;
    const char *out_name;
    int failed;
} live_sink;

/* One frame coded (NULL: a held one), and what it completed written and
 * flushed: 0, or -1 if that failed. */
static int live_code(live_sink *l, const float *x, int silent)
{
    if (frae_stream_encode(l->se, x, silent, NULL)) {
        size_t n;
        const unsigned char *b = frae_stream_encoder_bytes(l->se, &n);
        if (fwrite(b, 1, n, l->out) != n || fflush(l->out))
            return l->failed = 1, -1;
    }
    return 0;
}

/* The feature stream's frames, each coded as soon as it sees all it will
 * (a look-ahead packet's frames at once); a packet written and flushed as
 * soon as it is complete. */
static int live_frames(void *ctx, const float *feats, long frames, int width)
{
    live_sink *l = ctx;
    for (long t = 0; t < frames; t++) {
        const float *x = feats + (size_t)t * width;
        const int silent = l->gate && frae_dtx_gate_silent(l->gate, x);
        if (live_code(l, x, silent))
            return -1;
        while (frae_stream_encoder_ready(l->se))
            if (live_code(l, NULL, 0))
                return -1;
    }
    return 0;
}

/* The stream's header, then samples as they come (10 ms a read at most)
 * into the feature stream, each packet written the moment it is
 * complete, then the stream's end: 0, or the exit code. */
static int live_pump(frae_pcm_in *pcm, frae_feature_stream *fs, live_sink *l)
{
    char err[512];
    size_t n;
    const unsigned char *head = frae_stream_encoder_bytes(l->se, &n);
    if (fwrite(head, 1, n, l->out) != n || fflush(l->out))
        return cli_fail(EXIT_FAILED, "%s: write failed", l->out_name);
    for (;;) {
        const float *mono;
        const long got = frae_pcm_in_read(pcm, &mono, err, sizeof err);
        if (got < 0)
            return cli_fail(EXIT_FAILED, "-: %s", err);
        if (!got)
            break;
        if (frae_feature_stream_push(fs, mono, got, err, sizeof err))
            return l->failed
                       ? cli_fail(EXIT_FAILED, "%s: write failed", l->out_name)
                       : cli_fail(EXIT_USAGE, "%s", err);
    }
    if (frae_feature_stream_end(fs, err, sizeof err))
        return l->failed
                   ? cli_fail(EXIT_FAILED, "%s: write failed", l->out_name)
                   : cli_fail(EXIT_USAGE, "%s", err);
    frae_stream_encoder_end(l->se);
    const unsigned char *tail = frae_stream_encoder_bytes(l->se, &n);
    return fwrite(tail, 1, n, l->out) != n
               ? cli_fail(EXIT_FAILED, "%s: write failed", l->out_name)
               : 0;
}

/* frae encode MODEL - with --packet-ms: audio from stdin as it comes, each
 * packet out (and flushed) the moment its last frame is coded. */
static int encode_live(codec_opts *o, frae_model *m,
                       const frae_stream_options *so)
{
    frae_features f;
    const int have = cli_model_features(o->io.model, &f);
    if (have <= 0)
        return have < 0 ? EXIT_USAGE
                        : cli_fail(EXIT_USAGE,
                                   "-: %s was trained on frames, not audio "
                                   "features: a live input is audio",
                                   o->io.model);
    f.pitch = frae_get_config(m)->pitch;
    char err[512];
    frae_pcm_in *pcm =
        frae_pcm_in_open(STDIN_FILENO, f.sample_rate, err, sizeof err);
    if (!pcm)
        return cli_fail(EXIT_USAGE, "-: %s", err);
    int rc = 0;
    frae_dtx_gate gate;
    if (o->cs.dtx &&
        frae_dtx_gate_init(&gate, &f, o->cs.dtx_level, err, sizeof err)) {
        frae_pcm_in_close(pcm);
        return cli_fail(EXIT_FAILED, "--dtx: %s", err);
    }
    live_sink l = {NULL, o->cs.dtx ? &gate : NULL, NULL, o->io.output, 0};
    frae_atomic_file af;
    af.f = NULL;
    frae_feature_stream *fs = NULL;
    l.se = frae_stream_encoder_create(frae_model_net(m), so, 1, 0, 1, err,
                                      sizeof err);
    if (!l.se) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.model, err);
        goto done;
    }
    fs = frae_feature_stream_create(&f, frae_pcm_in_rate(pcm),
                                    o->io.audio.resample, live_frames, &l, err,
                                    sizeof err);
    if (!fs) {
        rc = cli_fail(EXIT_USAGE, "%s", err);
        goto done;
    }
    if (frae_atomic_begin(&af, o->io.output, err, sizeof err)) {
        af.f = NULL;
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    l.out = af.f;
    if ((rc = live_pump(pcm, fs, &l)))
        goto done;
    rc = frae_atomic_commit(&af, err, sizeof err)
             ? cli_fail(EXIT_FAILED, "%s", err)
             : EXIT_OK;
    af.f = NULL;
    if (!rc) {
        frae_stream_counts sc;
        frae_stream_encoder_counts(l.se, &sc);
        cli_printf("-: %llu frames -> %s: %llu packets, %.3f kbit/s as "
                   "datagrams\n",
                   (unsigned long long)sc.frames, o->io.output,
                   (unsigned long long)sc.packets,
                   sc.frames ? 8.0 * (double)sc.datagram_bytes /
                                   (double)sc.frames * o->cs.frame_rate / 1000.0
                             : 0.0);
    }
done:
    if (af.f)
        frae_atomic_abort(&af);
    frae_pcm_in_close(pcm);
    frae_feature_stream_destroy(fs);
    frae_stream_encoder_destroy(l.se);
    return rc;
}

/* encode's report of real-time packets: what a datagram transport
 * carries (the header once, then the packets), and what the file adds
 * (each packet's length, CRC) */
static void report_datagrams(const codec_opts *o, const frae_stream *h,
                             const frae_stream_counts *c, long t,
                             size_t n_frames)
{
    const int ranged = frae_stream_ranged(h);
    const frae_stream_counts sc = *c;
    const double bits = 8.0 * (double)sc.datagram_bytes / (double)n_frames;
    const double ms = 1000.0 * h->packet_frames / o->cs.frame_rate;
    cli_printf(
        "%ld frames -> %s: %llu real-time packets of %g ms (%u "
        "frames), %s, a resynchronisation point every %u%s "
        "(%llu bytes in the file with each packet's length and "
        "CRC)\n",
        t, o->io.output, (unsigned long long)sc.packets, ms, h->packet_frames,
        ranged ? "entropy-coded" : "fixed-rate", h->resync_packets,
        h->flags & FRAE_STREAM_STATE_RESYNC ? ", the state afresh there" : "",
        (unsigned long long)sc.bytes);
    cli_printf("bitrate: %.2f bits/frame = %.3f kbit/s at %g frames/s as "
               "datagrams (%llu bytes: header %llu, packets %llu of which "
               "%.2f bytes a packet of framing); the packets alone %.3f "
               "kbit/s\n",
               bits, bits * o->cs.frame_rate / 1000.0, o->cs.frame_rate,
               (unsigned long long)sc.datagram_bytes,
               (unsigned long long)sc.header_bytes,
               (unsigned long long)(sc.datagram_bytes - sc.header_bytes),
               sc.packets ? (double)sc.packet_overhead / (double)sc.packets
                          : 0.0,
               8.0 * (double)(sc.datagram_bytes - sc.header_bytes) /
                   (double)n_frames * o->cs.frame_rate / 1000.0);
    if (o->cs.dtx)
        cli_printf("dtx: %llu of %zu frames silent (below %g dB)\n",
                   (unsigned long long)sc.silent_frames, n_frames,
                   o->cs.dtx_level);
}

/* What frae encode says once the stream is written: the packets and the
 * rate, every byte counted, the pitch kept and the distortion. */
static void encode_report(const codec_opts *o, frae_model *m,
                          frae_stream_encoder *se,
                          const frae_stream_options *so, const frae_npy *in,
                          const frae_encode_tally *e)
{
    const frae_stream *h = frae_stream_encoder_stream(se);
    const int ranged = frae_stream_ranged(h);
    const int D = frae_get_config(m)->frame_dim;
    const int pitch = frae_get_config(m)->pitch;
    const size_t n_frames = (size_t)in->n * in->t;
    const double sse = e->sse, energy = e->energy, f0_err = e->f0_err;
    const double voiced = (double)e->voiced, kept = (double)e->voicing_kept;
    frae_stream_counts sc;
    frae_stream_encoder_counts(se, &sc);
    double bpf = frae_bits_per_frame(m);
    double mse = sse / ((double)n_frames * D);
    if (so->datagrams) {
        report_datagrams(o, h, &sc, in->t, n_frames);
    } else if (ranged) {
        /* the bitrate the file takes, every header byte counted */
        const double bits = 8.0 * (double)sc.bytes / (double)n_frames;
        cli_printf("%ld sequence%s x %ld frames -> %s (%llu bytes: header "
                   "%llu, %llu packets of up to %u frames, %llu bytes of "
                   "their lengths and CRCs)\n",
                   in->n, in->n == 1 ? "" : "s", in->t, o->io.output,
                   (unsigned long long)sc.bytes,
                   (unsigned long long)sc.header_bytes,
                   (unsigned long long)sc.packets, h->packet_frames,
                   (unsigned long long)sc.packet_overhead);
        cli_printf(
            "bitrate: %.2f bits/frame on average (entropy-coded; at most "
            "%.0f fixed-rate) = %.3f kbit/s at %g frames/s\n",
            bits, bpf, bits * o->cs.frame_rate / 1000.0, o->cs.frame_rate);
        if (o->cs.dtx)
            cli_printf("dtx: %llu of %zu frames silent (below %g dB)\n",
                       (unsigned long long)sc.silent_frames, n_frames,
                       o->cs.dtx_level);
    } else {
        cli_printf("%ld sequence%s x %ld frames -> %s (%llu bytes, %d of them "
                   "header and CRC)\n",
                   in->n, in->n == 1 ? "" : "s", in->t, o->io.output,
                   (unsigned long long)sc.bytes, FRAE_STREAM_HEADER + 4);
    }
    char split[64] = "";
    if (pitch)
        snprintf(split, sizeof split, " + %d pitch", FRAE_PITCH_BITS);
    if (!ranged && !so->datagrams)
        cli_printf("bitrate: %.0f bits/frame (%d x %d bits%s) = %.3f kbit/s at "
                   "%g frames/s\n",
                   bpf, frae_get_config(m)->latent_dim,
                   frae_code_bits(frae_model_net(m)), split,
                   bpf * o->cs.frame_rate / 1000.0, o->cs.frame_rate);
    if (pitch)
        cli_printf("pitch: %.0f voiced frames, %.1f%% coded voiced, mean f0 "
                   "error %.2f%%\n",
                   voiced, voiced ? 100.0 * kept / voiced : 0.0,
                   voiced ? 100.0 * f0_err / voiced : 0.0);
    cli_printf("distortion: mse %.6g, snr %.2f dB\n", mse,
               sse > 0 ? 10.0 * log10(energy / sse) : INFINITY);
}

/* The frames a model can code: its width (features, with pitch f0 and
 * voicing), and no more sequences or frames than a stream counts.  0, or
 * the exit code with its line said. */
static int check_frames(const codec_opts *o, const frae_npy *in, int width,
                        int D, int pitch)
{
    if (in->d == width && in->n <= 0xffffffffL && in->t <= 0xffffffffL)
        return 0;
    return in->d != width
               ? cli_fail(EXIT_USAGE,
                          pitch ? "%s: frame dimension %ld; the model codes "
                                  "pitch and needs %d (%d features, f0, "
                                  "voicing: audio, or 'frae features "
                                  "--pitch')"
                                : "%s: frame dimension %ld does not match "
                                  "the model's %d",
                          o->io.input, in->d, width, D)
               : cli_fail(EXIT_USAGE,
                          "%s: %ld x %ld frames, more than a stream holds "
                          "(2^32 - 1 each)",
                          o->io.input, in->n, in->t);
}

/* frae encode's frames (a .npy, or audio's features), its output, and
 * its DTX gate, for libfrae's encode loop */
typedef struct {
    const frae_npy *in;
    FILE *out;
    frae_dtx_gate *gate;
    int read_errno;
} encode_io;

static int encode_read(void *ctx, long seq, long t, long n, float *dst)
{
    encode_io *e = ctx;
    if (!frae_npy_read(e->in, seq, t, n, dst))
        return 0;
    e->read_errno = errno;
    return -1;
}

static int encode_write(void *ctx, const unsigned char *bytes, size_t n)
{
    encode_io *e = ctx;
    return fwrite(bytes, 1, n, e->out) == n ? 0 : -1;
}

static int encode_silent(void *ctx, long seq, long t, const float *frame)
{
    encode_io *e = ctx;
    (void)seq;
    if (t == 0) /* each sequence's level from its start */
        frae_dtx_gate_reset(e->gate);
    return frae_dtx_gate_silent(e->gate, frame);
}

/* --dtx's gate on the model's features' level: 0, or the exit code */
static int dtx_gate_open(const codec_opts *o, frae_dtx_gate *gate)
{
    char err[512];
    frae_features feat;
    const int rc = audio_features(o->io.model, "--dtx",
                                  "its frames have no level to gate on", &feat);
    if (rc)
        return rc;
    if (frae_dtx_gate_init(gate, &feat, o->cs.dtx_level, err, sizeof err))
        return cli_fail(EXIT_FAILED, "--dtx: %s", err);
    return 0;
}

/* frae encode of frames (a .npy, or audio's features): the stream
 * written through libfrae's encode loop, then the report. */
static int encode_file(const codec_opts *o, frae_model *m, const frae_npy *in)
{
    const int D = frae_get_config(m)->frame_dim;
    const int pitch = frae_get_config(m)->pitch;
    const int width = D + 2 * pitch; /* values per frame in and out */
    int rc = check_frames(o, in, width, D, pitch);
    if (rc)
        return rc;
    char err[512];
    frae_stream_encoder *se = NULL;
    frae_stream_options so;
    encode_io eio = {in, NULL, NULL, 0};
    frae_dtx_gate gate;
    if ((rc = stream_options(o, m, in->n, &so)))
        goto done;
    if (o->cs.dtx && (rc = dtx_gate_open(o, &gate)))
        goto done;
    eio.gate = o->cs.dtx ? &gate : NULL;
    se = frae_stream_encoder_create(frae_model_net(m), &so, (uint32_t)in->n,
                                    (uint32_t)in->t, in->ndim == 2, err,
                                    sizeof err);
    if (!se) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.model, err);
        goto done;
    }
    frae_atomic_file af;
    if (frae_atomic_begin(&af, o->io.output, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    eio.out = af.f;
    /* frames read a chunk at a time, their bytes written as they come:
     * memory does not grow with the input */
    const frae_frames_io io = {encode_read, encode_write,
                               o->cs.dtx ? encode_silent : NULL, &eio};
    frae_encode_tally tally;
    const frae_encode_status st = frae_stream_encode_all(se, &io, &tally);
    if (st) {
        frae_atomic_abort(&af);
        rc =
            st == FRAE_ENCODE_NONFINITE
                ? cli_fail_nonfinite(o->io.model, tally.seq, tally.frame)
            : st == FRAE_ENCODE_READ
                ? cli_fail(EXIT_FAILED, "%s: cannot read its features back: %s",
                           o->io.input, strerror(eio.read_errno))
            : st == FRAE_ENCODE_WRITE
                ? cli_fail(EXIT_FAILED, "%s: write failed", o->io.output)
                : cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    if (frae_atomic_commit(&af, err, sizeof err)) {
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    encode_report(o, m, se, &so, in, &tally);
    rc = EXIT_OK;
done:
    frae_stream_encoder_destroy(se);
    return rc;
}

int cmd_encode(int argc, char **argv)
{
    cli_cmd = "frae encode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    frae_codec_settings_default(&o.cs);
    int rc = cli_parse(argc, argv, codec_list(), codec_opt, codec_pos,
                       encode_help, &o);
    if (rc || (rc = shift_positionals(&o, 0)))
        return rc;
    if (o.decoder_opt)
        return cli_fail(EXIT_USAGE, "%s is an option of 'frae decode'",
                        o.decoder_opt);
    if (!o.io.input || !o.io.output)
        return cli_fail(EXIT_USAGE, "needs [MODEL] IN (audio or .npy) and -o "
                                    "OUT.fbs (see 'frae encode --help')");
    if ((rc = default_encoder_model(&o)))
        return rc;
    if (!strcmp(o.io.input, "-") && o.cs.packet_ms) { /* a live input */
        frae_model *lm = load_inference(o.io.model, o.io.isa);
        if (!lm)
            return EXIT_USAGE;
        frae_stream_options lso;
        rc = stream_options(&o, lm, 1, &lso);
        if (!rc)
            rc = encode_live(&o, lm, &lso);
        frae_destroy(lm);
        return rc;
    }
    frae_npy in;
    o.io.with_pitch = 1;
    if ((rc = cli_open_frames(&o.io, &in)))
        return rc;
    frae_model *m = load_inference(o.io.model, o.io.isa);
    if (!m) {
        frae_npy_close(&in);
        return EXIT_USAGE;
    }
    rc = encode_file(&o, m, &in);
    frae_npy_close(&in);
    frae_destroy(m);
    return rc;
}
