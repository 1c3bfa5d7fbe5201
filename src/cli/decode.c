/* frae decode: a .fbs stream (a file, or real-time packets as they come)
 * back to frames and audio. */
#define _DEFAULT_SOURCE /* madvise */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "codec_cli.h"

static void decode_help(void)
{
    cli_printf(
        "usage: frae decode [MODEL] IN.fbs [-o OUT.npy] [--wav OUT.wav | "
        "OUT.wav]\n"
        "                   [--vocoder hnm|gl] [--gl-iters N] [--through] "
        "[--isa I]\n"
        "example: frae decode speech.fbs --wav speech-out.wav\n"
        "\n"
        "Rebuilds the frames of a .fbs bitstream with the model that made\n"
        "it (checked by its hash; with no MODEL, the shipped model whose\n"
        "hash the stream names, 'frae models') and writes them as float32 .npy "
        "(-o),\n"
        "shaped like the encoded input, or as audio (--wav), or both.  The "
        "decoder runs the same feedback loop\n"
        "as training: decode(encode(x)) equals 'frae predict' on x.\n"
        "With a model that codes pitch (train --pitch), each frame is D\n"
        "values, then f0 (Hz, 0 when unvoiced) and voicing (0 or 1); a\n"
        "voicing onset that climbs to its pitch half an octave a frame\n"
        "(the coder's largest step) gets the pitch it reaches, within a\n"
        "packet or 64 frames of a file (docs/codec.md, 'Pitch').\n"
        "Real-time packets (encode --packet-ms; IN may be -, stdin, and\n"
        "OUT.wav - stdout, the audio out as it is decoded) are decoded\n"
        "as they come: a lost, damaged (its CRC fails), late or\n"
        "duplicated packet is concealed or dropped, a damaged length is\n"
        "found again at the next packet, decoding goes on, and one line\n"
        "on stderr says what was concealed.\n"
        "\n"
        "options:\n"
        "  -o, --output OUT.npy the decoded frames\n"
        "  --wav OUT.wav        also turn log-mel frames back into audio\n"
        "                       (OUT-<n>.wav per sequence if several)\n"
        "  --isa I              auto, scalar, avx2, avx512 or neon (auto)\n");
    codec_options_help(FRAE_CODEC_DECODES);
    cli_printf("\n"
               "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
               "options, model or stream (truncated, corrupted, foreign, or\n"
               "made with another model).\n");
}

/* ---- one loop for every version: libfrae's reader -------------------------- */

/* The stream's bytes: a file of versions 2 to 4 mapped whole; version 5
 * (a file or "-") read as the reader asks, exactly that far. */
typedef struct {
    FILE *in; /* version 5 */
    const unsigned char *map;
    size_t size;
    unsigned char *buf;
    size_t cap, have;
    int end;
} stream_bytes;

/* Whether IN is a version-5 stream ("-" is taken as one: a live pipe). */
static int is_packets(const char *path)
{
    if (!strcmp(path, "-"))
        return 1;
    unsigned char head[7];
    int fd = frae_open_regular(path, NULL, 0); /* a FIFO never blocks here */
    if (fd < 0)
        return 0; /* the usual path says why */
    const int v5 = read(fd, head, 7) == 7 && !memcmp(head, "FRAEBS", 6) &&
                   head[6] == FRAE_STREAM_VERSION_PACKETS;
    close(fd);
    return v5;
}

static int bytes_open(stream_bytes *b, const char *path)
{
    char err[512];
    memset(b, 0, sizeof *b);
    if (!is_packets(path)) {
        void *map;
        if (frae_map_file(path, 1, &map, &b->size, err, sizeof err))
            return cli_fail(EXIT_USAGE, "%s", err);
        b->map = map, b->end = 1;
        return 0;
    }
    if (!strcmp(path, "-")) {
        b->in = stdin;
    } else {
        int fd = frae_open_regular(path, err, sizeof err);
        if (fd < 0 || !(b->in = fdopen(fd, "rb"))) {
            if (fd >= 0)
                close(fd);
            return cli_fail(EXIT_USAGE, "%s", err);
        }
    }
    b->cap = FRAE_STREAM_HEADER_V5_MAX + 1;
    if (!(b->buf = malloc(b->cap)))
        return cli_fail(EXIT_FAILED, "out of memory");
    return 0;
}

static void bytes_close(stream_bytes *b)
{
    if (b->map)
        munmap((void *)b->map, b->size);
    if (b->in && b->in != stdin)
        fclose(b->in);
    free(b->buf);
}

/* After the reader took used bytes and asked for need: 1 to call it
 * again, 0 at the end, -1 out of memory. */
static int bytes_next(stream_bytes *b, size_t used, long k, size_t need,
                      size_t window)
{
    if (b->map) { /* one call has them all */
        b->map += used, b->size -= used;
        return used || k;
    }
    if (used) {
        b->have -= used;
        memmove(b->buf, b->buf + used, b->have);
        return 1;
    }
    if (k)
        return 1;
    if (b->end)
        return 0;
    if (need <= b->have) /* asked for nothing: no more */
        return b->end = 1;
    if (need > b->cap) { /* the header read: the reader's window */
        unsigned char *grown = realloc(b->buf, window + 1);
        if (!grown)
            return -1;
        b->buf = grown, b->cap = window + 1;
    }
    const size_t got = fread(b->buf + b->have, 1, need - b->have, b->in);
    b->end = b->have + got < need;
    b->have += got;
    return 1;
}

/* The decode's outputs: the .npy (-o) and the WAV (--wav) of each
 * sequence, opened once the header is read. */
typedef struct {
    frae_atomic_file af;
    wav_out wav;
    frae_features feat;
    double loudest; /* --wav: the largest log-mel value audio has */
    int width, D;
    uint32_t seq; /* the WAV's sequence */
    int wav_open;
} decode_out;

static int outputs_open(codec_opts *o, const frae_config *c,
                        const frae_stream *s, decode_out *d)
{
    char err[512];
    int rc;
    const int pitch = (s->flags & FRAE_STREAM_PITCH) != 0;
    d->D = c->frame_dim, d->width = c->frame_dim + 2 * pitch;
    if (o->wav) {
        if ((rc = audio_features(o->io.model, "--wav",
                                 "its frames are not log-mel", &d->feat)))
            return rc;
        if (o->cs.vocoder == 1 && !pitch)
            return cli_fail(EXIT_USAGE,
                            "--vocoder hnm: %s carries no pitch (the model "
                            "codes the envelope alone); use --vocoder gl",
                            o->io.input);
        if ((rc = wav_out_init(&d->wav, &d->feat, o->wav, s->sequences > 1,
                               pitch && o->cs.vocoder != 2, o->cs.gl_iters,
                               o->cs.polish)))
            return rc;
        d->wav.live =
            s->version == FRAE_STREAM_VERSION_PACKETS &&
            (!strcmp(o->io.input, "-") || !cli_output_seekable(o->wav));
        d->loudest = frae_features_max(&d->feat);
        if ((rc = wav_out_begin(&d->wav, 0)))
            return rc;
        d->wav_open = 1;
    }
    if (!o->io.output)
        return 0;
    const int two_d = s->flags & 1 && s->sequences == 1;
    long shape[3] = {(long)s->sequences, (long)s->frames, d->width};
    if (two_d)
        shape[0] = s->frames, shape[1] = d->width;
    const int counted = s->version == FRAE_STREAM_VERSION_PACKETS &&
                        cli_output_seekable(o->io.output);
    if (!s->frames && !counted)
        return cli_fail(EXIT_USAGE,
                        "-o %s: a live stream's frames are counted only at "
                        "its end, and the .npy header that holds the count "
                        "comes first: give a file (or only --wav)",
                        o->io.output);
    /* a version-5 file's count is the frames that came (the end's loss
     * concealed at most FRAE_PACKET_TAIL_MAX); a pipe's, declared */
    if (counted
            ? frae_npy_begin_growing(&d->af, o->io.output, 2, err, sizeof err)
            : frae_npy_begin(&d->af, o->io.output, two_d ? 2 : 3, shape, err,
                             sizeof err)) {
        d->af.f = NULL;
        return cli_fail(EXIT_FAILED, "%s", err);
    }
    return 0;
}

/* A frame of sequence seq out: checked, into the .npy and the WAV. */
static int frame_out(codec_opts *o, decode_out *d, const float *y, uint32_t seq,
                     uint64_t t)
{
    int rc;
    const int bad = unheard_value(y, d->width, d->D, d->loudest);
    if (bad >= 0)
        return cli_fail(EXIT_USAGE,
                        !isfinite(y[bad])
                            ? "%s: sequence %u, frame %llu: %s decodes a "
                              "non-finite value (%g, column %d)"
                            : "%s: sequence %u, frame %llu: %s decodes a "
                              "log-mel value of %g (band %d), louder than any "
                              "audio: no WAV from it",
                        o->io.input, seq, (unsigned long long)t, o->io.model,
                        (double)y[bad], bad);
    if (d->af.f &&
        fwrite(y, sizeof(float), (size_t)d->width, d->af.f) != (size_t)d->width)
        return cli_fail(EXIT_FAILED, "%s: write failed", o->io.output);
    if (o->wav && seq != d->seq) { /* OUT-<n>.wav, one a sequence */
        if ((rc = wav_out_end(&d->wav)) || (rc = wav_out_begin(&d->wav, seq)))
            return rc;
        d->seq = seq;
    }
    return o->wav ? wav_out_frame(&d->wav, y) : 0;
}

/* The end: the WAV and the .npy committed, what came said. */
static int outputs_close(codec_opts *o, decode_out *d, const frae_stream *s,
                         uint64_t out)
{
    char err[512];
    int rc;
    if (o->wav && (rc = wav_out_end(&d->wav)))
        return rc;
    if (!d->af.f)
        return 0;
    if (!d->af.seekable && s->frames &&
        out != (uint64_t)s->frames * s->sequences)
        return cli_fail(EXIT_USAGE,
                        "%s: %llu of the %llu frames its header declares "
                        "came (-o %s, not a file, has the .npy header "
                        "that said %llu)",
                        o->io.input, (unsigned long long)out,
                        (unsigned long long)s->frames, o->io.output,
                        (unsigned long long)s->frames);
    long shape[2] = {(long)out, d->width};
    const int growing =
        s->version == FRAE_STREAM_VERSION_PACKETS && d->af.seekable;
    rc = growing ? frae_npy_finish(&d->af, 2, shape, err, sizeof err)
                 : frae_atomic_commit(&d->af, err, sizeof err);
    d->af.f = NULL;
    return rc ? cli_fail(EXIT_FAILED, "%s", err) : 0;
}

/* What came, on stdout; what was concealed, on stderr. */
static void decode_report(const codec_opts *o, const frae_stream_reader *r,
                          const frae_stream *s, uint64_t out)
{
    frae_packet_counts pc;
    frae_stream_reader_counts(r, &pc);
    const char *to = o->io.output ? o->io.output : o->wav;
    if (s->version != FRAE_STREAM_VERSION_PACKETS) {
        cli_printf("%s -> %s: %u sequence%s x %u frames\n", o->io.input, to,
                   s->sequences, s->sequences == 1 ? "" : "s", s->frames);
        return;
    }
    cli_printf("%s -> %s: %llu frames from %llu packets of %u frames\n",
               o->io.input, to, (unsigned long long)out,
               (unsigned long long)pc.packets, s->packet_frames);
    if (pc.concealed || pc.late || pc.damaged || pc.skipped_bytes)
        fprintf(
            stderr,
            "%s: concealed %llu of %llu frames: %llu packets lost (%llu of "
            "them damaged, %llu bytes of damaged framing), %llu late or "
            "duplicated%s\n",
            cli_cmd, (unsigned long long)pc.concealed, (unsigned long long)out,
            (unsigned long long)pc.lost, (unsigned long long)pc.damaged,
            (unsigned long long)pc.skipped_bytes, (unsigned long long)pc.late,
            s->flags & FRAE_STREAM_RANGED_PACKETS
                ? " (entropy-coded: after a loss, until the next "
                  "resynchronisation point)"
                : "");
}

/* frae decode: the stream's frames, as libfrae's reader gives them, out
 * as they come (the .npy, the WAV; a live WAV flushed each call). */
static int decode_stream(codec_opts *o)
{
    char err[512];
    stream_bytes b;
    int rc = bytes_open(&b, o->io.input);
    if (rc) {
        bytes_close(&b);
        return rc;
    }
    frae_model *m = load_inference(o->io.model, o->io.isa);
    frae_stream_reader *r =
        m ? frae_stream_reader_create(frae_model_net(m)) : NULL;
    decode_out d = {0};
    d.af.f = NULL;
    d.loudest = INFINITY;
    const frae_stream *s = NULL;
    uint64_t out = 0;
    if (!r) {
        rc = m ? cli_fail(EXIT_FAILED, "out of memory") : EXIT_USAGE;
        goto done;
    }
    frae_stream_reader_through(r, o->cs.through);
    for (int more = 1; more == 1;) {
        size_t used, need;
        const float *y;
        uint32_t seq;
        const long k =
            frae_stream_read(r, b.map ? b.map : b.buf, b.map ? b.size : b.have,
                             b.end, &used, &need, &y, &seq, err, sizeof err);
        if (k < 0) {
            rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
            goto done;
        }
        if (!s && (s = frae_stream_reader_stream(r))) {
            if (o->cs.through && s->version != FRAE_STREAM_VERSION_PACKETS) {
                rc = cli_fail(EXIT_USAGE, "--through: for real-time packets "
                                          "(encode --packet-ms)");
                goto done;
            }
            if ((rc = outputs_open(o, frae_get_config(m), s, &d)))
                goto done;
        }
        for (long f = 0; f < k; f++, out++)
            if ((rc = frame_out(o, &d, y + (size_t)f * d.width, seq,
                                s->version == FRAE_STREAM_VERSION_PACKETS
                                    ? out
                                    : out % s->frames)))
                goto done;
        if (k && d.af.f && !d.af.seekable)
            fflush(d.af.f);
        more = bytes_next(&b, used, k, need, frae_stream_reader_window(r));
        if (more < 0) {
            rc = cli_fail(EXIT_FAILED, "out of memory");
            goto done;
        }
    }
    if (!(rc = outputs_close(o, &d, s, out)))
        decode_report(o, r, s, out);
done:
    if (d.af.f)
        frae_atomic_abort(&d.af);
    wav_out_free(&d.wav);
    frae_stream_reader_destroy(r);
    frae_destroy(m);
    bytes_close(&b);
    return rc;
}

int cmd_decode(int argc, char **argv)
{
    cli_cmd = "frae decode";
    codec_opts o = {0};
    cli_io_default(&o.io);
    frae_codec_settings_default(&o.cs);
    int rc = cli_parse(argc, argv, codec_list(), codec_opt, codec_pos,
                       decode_help, &o);
    if (rc || (rc = shift_positionals(&o, 1)))
        return rc;
    if (o.encoder_opt)
        return cli_fail(EXIT_USAGE, "%s is an option of 'frae encode'",
                        o.encoder_opt);
    if (!o.io.input || (!o.io.output && !o.wav))
        return cli_fail(EXIT_USAGE, "needs [MODEL] IN.fbs and --wav OUT.wav "
                                    "or -o OUT.npy (see 'frae decode "
                                    "--help')");
    if ((rc = model_from_stream(&o)))
        return rc;
    if (o.wav && o.io.output && frae_output_descriptor(o.wav) >= 0 &&
        frae_output_descriptor(o.wav) == frae_output_descriptor(o.io.output))
        return cli_fail(EXIT_USAGE,
                        "-o %s and --wav %s: two outputs cannot "
                        "share one descriptor",
                        o.io.output, o.wav);
    return decode_stream(&o);
}
