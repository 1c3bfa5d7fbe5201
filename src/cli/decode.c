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
        "values, then f0 (Hz, 0 when unvoiced) and voicing (0 or 1).\n"
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
        "  --isa I              auto, scalar, avx2 or avx512 (auto)\n");
    codec_options_help(FRAE_CODEC_DECODES);
    cli_printf("\n"
               "Exit codes: 0 done, 1 the output could not be written, 2 bad\n"
               "options, model or stream (truncated, corrupted, foreign, or\n"
               "made with another model).\n");
}

/* ---- version 5: real-time packets, read as they come ------------------------ */

/* A version-5 stream's header, read a byte at a time until it parses:
 * its size, 0 if the input ends first, -1 (err) if it is malformed. */
static long read_v5_header(FILE *in, frae_stream *s, char *err, size_t errlen)
{
    unsigned char head[FRAE_STREAM_HEADER_V5_MAX];
    size_t have = 0;
    long hb = 0;
    while (have < sizeof head) {
        int c = fgetc(in);
        if (c == EOF)
            break;
        head[have++] = (unsigned char)c;
        if ((hb = frae_packet_header_parse(head, have, s, err, errlen)))
            break;
    }
    return hb;
}

/* decode_packets' outputs opened: the WAV (--wav) through the vocoder, and
 * the .npy (-o), its shape known or counted as frames come. */
static int packets_outputs(codec_opts *o, const frae_config *c,
                           const frae_stream *s, int width, wav_out *wav,
                           frae_features *feat, double *loudest,
                           frae_atomic_file *af)
{
    char err[512];
    int rc = 0;
    if (o->wav) {
        const int features = cli_model_features(o->io.model, feat);
        if (features <= 0) {
            rc = features < 0 ? EXIT_USAGE
                              : cli_fail(EXIT_USAGE,
                                         "--wav: %s was not trained on audio "
                                         "features, so its frames are not "
                                         "log-mel",
                                         o->io.model);
            return rc;
        }
        const int live =
            !strcmp(o->io.input, "-") || !cli_output_seekable(o->wav);
        if ((rc = wav_out_init(wav, feat, o->wav, 0,
                               c->pitch && o->cs.vocoder != 2, o->cs.gl_iters)))
            return rc;
        wav->live = live;
        *loudest = frae_features_max(feat);
        if ((rc = wav_out_begin(wav, 0)))
            return rc;
    }
    if (o->io.output) {
        /* frames known: the .npy's shape is; a live stream's is counted */
        long shape[2] = {(long)s->frames, width};
        if (!s->frames && !cli_output_seekable(o->io.output)) {
            rc = cli_fail(EXIT_USAGE,
                          "-o %s: a live stream's frames are counted only at "
                          "its end, and the .npy header that holds the count "
                          "comes first: give a file (or only --wav)",
                          o->io.output);
            return rc;
        }
        /* a file's count is the frames that came (the end's loss
         * concealed at most FRAE_PACKET_TAIL_MAX); a pipe's, declared */
        if (s->frames && !cli_output_seekable(o->io.output)
                ? frae_npy_begin(af, o->io.output, 2, shape, err, sizeof err)
                : frae_npy_begin_growing(af, o->io.output, 2, err,
                                         sizeof err)) {
            af->f = NULL;
            rc = cli_fail(EXIT_FAILED, "%s", err);
            return rc;
        }
    }
    return rc;
}

/* frae decode of a version-5 stream (a file or "-"): packets decoded as
 * they are read, lost and damaged ones concealed, frames out as they are
 * made (the .npy, the WAV), each packet's audio flushed. */
static int decode_packets(codec_opts *o, FILE *in)
{
    char err[512];
    frae_stream s;
    const long hb = read_v5_header(in, &s, err, sizeof err);
    if (hb <= 0)
        return cli_fail(EXIT_USAGE, "%s: %s", o->io.input,
                        hb < 0 ? err
                               : "truncated: shorter than a version-5 "
                                 "header");
    frae_model *m = load_inference(o->io.model, o->io.isa);
    if (!m)
        return EXIT_USAGE;
    frae_packet_decoder *pd =
        frae_packet_decoder_create(frae_model_net(m), &s, err, sizeof err);
    const frae_config *c = frae_get_config(m);
    const int D = c->frame_dim, width = D + 2 * c->pitch;
    const long P = (long)s.packet_frames, cap = FRAE_PACKET_DECODE_MAX(P);
    const size_t window = pd ? frae_packet_window(pd) : 0;
    float *frames = malloc(sizeof(float) * (size_t)cap * width);
    unsigned char *buf = malloc(window + 1);
    frae_atomic_file af;
    af.f = NULL;
    wav_out wav = {0};
    frae_features feat;
    double loudest = INFINITY;
    int rc = 0;
    if (!pd) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
        goto done;
    }
    if (!frames || !buf) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    frae_packet_decoder_through(pd, o->cs.through);
    if ((rc = packets_outputs(o, c, &s, width, &wav, &feat, &loudest, &af)))
        goto done;
    uint64_t out = 0;
    size_t have = 0;
    for (int end = 0;;) {
        /* the library finds and decodes the packets; this reads exactly
         * the bytes it asks for (a pipe gives what the encoder flushed) */
        size_t used, need;
        const long k =
            frae_packet_read(pd, buf, have, end, &used, &need, frames, cap);
        if (used) {
            have -= used;
            memmove(buf, buf + used, have);
        } else if (!k && end) {
            break;
        } else if (!k && need <= have) { /* asked for nothing: no more */
            end = 1;
        } else if (!k) {
            const size_t got = fread(buf + have, 1, need - have, in);
            end = have + got < need;
            have += got;
        }
        for (long f = 0; f < k; f++) {
            float *y = frames + (size_t)f * width;
            const int bad = unheard_value(y, width, D, loudest);
            if (bad >= 0) {
                rc = cli_fail(
                    EXIT_USAGE, "%s: frame %llu: %s decodes %s (%g, column %d)",
                    o->io.input, (unsigned long long)(out + f), o->io.model,
                    isfinite(y[bad]) ? "a log-mel value louder than "
                                       "any audio"
                                     : "a non-finite value",
                    (double)y[bad], bad);
                goto done;
            }
            if (af.f && fwrite(y, sizeof(float), (size_t)width, af.f) !=
                            (size_t)width) {
                rc = cli_fail(EXIT_FAILED, "%s: write failed", o->io.output);
                goto done;
            }
            if (o->wav && (rc = wav_out_frame(&wav, y)))
                goto done;
        }
        out += (uint64_t)k;
        if (k && af.f && !af.seekable)
            fflush(af.f);
    }
    if (s.frames && !out) {
        rc = cli_fail(EXIT_USAGE,
                      "%s: truncated: the header declares %llu frames and "
                      "no packet follows",
                      o->io.input, (unsigned long long)s.frames);
        goto done;
    }
    if (o->wav && (rc = wav_out_end(&wav)))
        goto done;
    if (af.f && !af.seekable && s.frames && out != s.frames) {
        rc = cli_fail(EXIT_USAGE,
                      "%s: %llu of the %llu frames its header declares "
                      "came (-o %s, not a file, has the .npy header "
                      "that said %llu)",
                      o->io.input, (unsigned long long)out,
                      (unsigned long long)s.frames, o->io.output,
                      (unsigned long long)s.frames);
        goto done;
    }
    if (af.f) {
        long shape[2] = {(long)out, width};
        rc = (af.seekable ? frae_npy_finish(&af, 2, shape, err, sizeof err)
                          : frae_atomic_commit(&af, err, sizeof err))
                 ? cli_fail(EXIT_FAILED, "%s", err)
                 : EXIT_OK;
        af.f = NULL;
        if (rc)
            goto done;
    }
    frae_packet_counts pc;
    frae_packet_decoder_counts(pd, &pc);
    cli_printf("%s -> %s: %llu frames from %llu packets of %ld frames\n",
               o->io.input, o->io.output ? o->io.output : o->wav,
               (unsigned long long)out, (unsigned long long)pc.packets, P);
    if (pc.concealed || pc.late || pc.damaged || pc.skipped_bytes)
        fprintf(
            stderr,
            "%s: concealed %llu of %llu frames: %llu packets lost (%llu of "
            "them damaged, %llu bytes of damaged framing), %llu late or "
            "duplicated%s\n",
            cli_cmd, (unsigned long long)pc.concealed, (unsigned long long)out,
            (unsigned long long)pc.lost, (unsigned long long)pc.damaged,
            (unsigned long long)pc.skipped_bytes, (unsigned long long)pc.late,
            s.flags & FRAE_STREAM_RANGED_PACKETS
                ? " (entropy-coded: after a loss, until the next "
                  "resynchronisation point)"
                : "");
    rc = EXIT_OK;
done:
    if (af.f)
        frae_atomic_abort(&af);
    wav_out_free(&wav);
    free(frames), free(buf);
    frae_packet_decoder_destroy(pd);
    frae_destroy(m);
    return rc;
}

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

/* frae decode of a stream file of versions 1 to 4, mapped: frame by frame
 * into the outputs. */
static int decode_file(codec_opts *o)
{
    char err[512];
    int rc;
    void *map;
    size_t size;
    if (frae_map_file(o->io.input, 1, &map, &size, err, sizeof err))
        return cli_fail(EXIT_USAGE, "%s", err);
    frae_model *m = load_inference(o->io.model, o->io.isa);
    if (!m) {
        munmap(map, size);
        return EXIT_USAGE;
    }
    float *y = NULL;
    frae_atomic_file af;
    af.f = NULL;
    wav_out wav = {0};
    frae_features feat;
    frae_stream_decoder *sd = frae_stream_decoder_create(frae_model_net(m), map,
                                                         size, err, sizeof err);
    if (!sd) {
        rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
        goto done;
    }
    const frae_stream s = *frae_stream_decoder_stream(sd);
    const int pitch = (s.flags & FRAE_STREAM_PITCH) != 0;
    /* the model's D: check_model matched a stream that states one, and
     * version 4 leaves it to the model */
    const int D = frae_get_config(m)->frame_dim, width = D + 2 * pitch;
    double loudest = INFINITY; /* --wav: the largest log-mel value audio has */
    if (o->wav) {
        const int have = cli_model_features(o->io.model, &feat);
        if (have <= 0) {
            rc = have < 0 ? EXIT_USAGE
                          : cli_fail(EXIT_USAGE,
                                     "--wav: %s was not trained on audio "
                                     "features, so its frames are not log-mel",
                                     o->io.model);
            goto done;
        }
        if (o->cs.vocoder == 1 && !pitch) {
            rc = cli_fail(EXIT_USAGE,
                          "--vocoder hnm: %s carries no pitch (the model "
                          "codes the envelope alone); use --vocoder gl",
                          o->io.input);
            goto done;
        }
        if ((rc = wav_out_init(&wav, &feat, o->wav, s.sequences > 1,
                               pitch && o->cs.vocoder != 2, o->cs.gl_iters)))
            goto done;
        loudest = frae_features_max(&feat);
    }
    long shape[3] = {(long)s.sequences, (long)s.frames, width};
    int two_d = s.flags & 1 && s.sequences == 1;
    if (two_d)
        shape[0] = s.frames, shape[1] = width;
    y = malloc(sizeof(float) * (D + 2));
    if (!y) {
        rc = cli_fail(EXIT_FAILED, "out of memory");
        goto done;
    }
    /* frame by frame, straight into the output files: memory is the
     * model's and the vocoder's, whatever the stream's length (--wav
     * alone: no .npy) */
    if (o->io.output && frae_npy_begin(&af, o->io.output, two_d ? 2 : 3, shape,
                                       err, sizeof err)) {
        af.f = NULL;
        rc = cli_fail(EXIT_FAILED, "%s", err);
        goto done;
    }
    for (uint32_t q = 0; q < s.sequences; q++) {
        if (o->wav && (rc = wav_out_begin(&wav, q)))
            goto done;
        for (uint32_t t = 0; t < s.frames; t++) {
            if (frae_stream_decode(sd, y, NULL, NULL, err, sizeof err) < 0) {
                rc = cli_fail(EXIT_USAGE, "%s: %s", o->io.input, err);
                goto done;
            }
            const int bad = unheard_value(y, width, D, loudest);
            if (bad >= 0) {
                rc = cli_fail(EXIT_USAGE,
                              !isfinite(y[bad])
                                  ? "%s: sequence %u, frame %u: %s decodes "
                                    "a non-finite value (%g, column %d)"
                                  : "%s: sequence %u, frame %u: %s decodes "
                                    "a log-mel value of %g (band %d), louder "
                                    "than any audio: no WAV from it",
                              o->io.input, q, t, o->io.model, (double)y[bad],
                              bad);
                goto done;
            }
            if (af.f)
                fwrite(y, sizeof(float), (size_t)width, af.f);
            if (o->wav && (rc = wav_out_frame(&wav, y)))
                goto done;
        }
        if (o->wav && (rc = wav_out_end(&wav)))
            goto done;
    }
    rc = af.f && frae_atomic_commit(&af, err, sizeof err)
             ? cli_fail(EXIT_FAILED, "%s", err)
             : EXIT_OK;
    af.f = NULL;
    if (!rc)
        cli_printf("%s -> %s: %u sequence%s x %u frames\n", o->io.input,
                   o->io.output ? o->io.output : o->wav, s.sequences,
                   s.sequences == 1 ? "" : "s", s.frames);
done:
    if (af.f)
        frae_atomic_abort(&af);
    wav_out_free(&wav);
    free(y);
    frae_stream_decoder_destroy(sd);
    frae_destroy(m);
    munmap(map, size);
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
    char err[512];
    if (is_packets(o.io.input)) {
        if (!strcmp(o.io.input, "-"))
            return decode_packets(&o, stdin);
        int fd = frae_open_regular(o.io.input, err, sizeof err);
        FILE *in = fd >= 0 ? fdopen(fd, "rb") : NULL;
        if (!in) {
            if (fd >= 0)
                close(fd);
            return cli_fail(EXIT_USAGE, "%s", err);
        }
        rc = decode_packets(&o, in);
        fclose(in);
        return rc;
    }
    if (o.cs.through)
        return cli_fail(EXIT_USAGE, "--through: for real-time packets "
                                    "(encode --packet-ms)");
    return decode_file(&o);
}
