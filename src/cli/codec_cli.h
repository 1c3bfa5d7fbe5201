/* What the codec commands share (codec.c): their options, the model
 * argument (a file, a shipped model's name, or none), features streamed
 * out as audio (wav_out), frames read from a .npy a chunk at a time, and
 * the stream options an encode asks for.  encode.c, decode.c, vocode.c
 * and models.c are the commands. */
#ifndef FRAE_CLI_CODEC_CLI_H
#define FRAE_CLI_CODEC_CLI_H

#include "cli.h"

typedef struct {
    cli_io io; /* first: the shared handlers take a codec_opts as cli_io */
    const char *wav;
    frae_codec_settings cs;  /* the codec's options, by libfrae's table */
    const char *encoder_opt; /* the last encoder-only option given */
    const char *decoder_opt; /* ... decoder-only */
} codec_opts;

/* ---- frames of features to audio, as they come ------------------------------
 * One WAV per sequence (OUT-<n>.wav when there are several), each frame
 * vocoded as it arrives and its samples handed to the WAV writer: memory
 * is the vocoder's state (or Griffin-Lim's block) and a frame's samples,
 * whatever the length.  The harmonic-plus-noise vocoder for frames with
 * pitch, else Griffin-Lim; either gives (frames - 1) * hop + win samples
 * on the features' timeline. */
typedef struct {
    const frae_features *f;
    const char *wav;
    int several; /* sequences: OUT-<n>.wav */
    int hnm, gl_iters;
    int live;           /* samples out as they come (frae_wav_open_live) */
    frae_audio_out *ao; /* libfrae-audio's: frames to samples */
    float *samples;     /* one call's (frae_audio_out_max) */
    frae_wav_writer *w; /* the sequence's, while open */
    char path[4096];
} wav_out;

/* frames of a .npy read a chunk at a time */
#define READ_CHUNK 512 /* frames */
typedef struct {
    const frae_npy *a;
    size_t dropped; /* bytes of the mapping dropped so far */
} npy_reader;

/* the codec commands' options: their own (io, features), then libfrae's
 * codec table's */
const cli_opt *codec_list(void);

int codec_opt(void *ctx, const char *name, const char *v);
int codec_pos(void *ctx, const char *arg);
int shift_positionals(codec_opts *o, int decode);
int default_encoder_model(codec_opts *o);
/* The audio features model was trained on, for option opt, which needs
 * them: 0, or the exit code with one line ("--wav: M was not trained on
 * audio features, so " lack). */
int audio_features(const char *model, const char *opt, const char *lack,
                   frae_features *f);
int model_from_stream(codec_opts *o);
frae_model *load_inference(const char *path, frae_isa isa);
void wav_out_free(wav_out *o);
int wav_out_init(wav_out *o, const frae_features *f, const char *wav,
                 int several, int hnm, int gl_iters, int polish);
int wav_out_begin(wav_out *o, long s);
int wav_out_frame(wav_out *o, const float *frame);
int wav_out_end(wav_out *o);
int unheard_value(const float *frame, int n, int n_mels, double max);
int stream_options(const codec_opts *o, const frae_model *m, long sequences,
                   frae_stream_options *so);
void codec_options_help(int sides);
void npy_reader_read(npy_reader *r, long s, long t0, long nt, float *dst);

#endif
