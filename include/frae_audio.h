/* frae_audio: the speech front end of frae, a library of its own
 * (libfrae-audio, pkg-config frae-audio), so that embedding the codec
 * (libfrae) pulls in neither libsndfile nor FFTW nor libsamplerate.
 *
 * Audio files in any format libsndfile reads, mixed to mono and resampled
 * (libsamplerate), log-mel features (FFTW) and their inversion (mel
 * pseudo-inverse, then Griffin-Lim).  Nothing here runs a model: the
 * features are frames for any frae model of D = n_mels (a checkpoint's
 * metadata says which a model was trained on).  No global state
 * but FFTW's planner, which is not thread-safe: a mutex guards it, taken
 * only while a frae_mel is made or destroyed. */
#ifndef FRAE_AUDIO_H
#define FRAE_AUDIO_H

#include <stddef.h>

#include "frae.h" /* FRAE_API */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Speech: audio files and log-mel features ------------------------------
 * feature[t][b] = (ln(max(mel_b, floor)) + offset) / scale, where mel_b is
 * the power spectrum of samples [t*hop, t*hop + win) (periodic Hann,
 * zero-padded to n_fft) through triangular HTK-mel filters (peak 1) from
 * fmin to fmax.  n samples give 1 + (n - win) / hop frames. */
typedef struct {
    int sample_rate;            /* 16000 */
    int n_mels;                 /* 80 */
    int hop;                    /* 160: 10 ms */
    int win;                    /* 400: 25 ms */
    int n_fft;                  /* 512 */
    float fmin, fmax;           /* 0, 8000 Hz */
    float floor, offset, scale; /* 1e-7, 5, 5 */
    int pitch;                  /* 0; 1: each frame also carries f0 (Hz, 0 when
                        unvoiced) and voicing (0 or 1) after its n_mels
                        values: n_mels + 2 per frame (frae_f0_frame);
                        FRAE_PITCH_YIN, FRAE_PITCH_YIN_HP: the same, by
                        fewer of the tracker's steps */
} frae_features;
/* frae_features.pitch, the tracker with fewer of its steps: what the
 * corpus scripts' rules (held notes, voiced share, a clip's median f0)
 * were set on when the shipped models' corpus was made, so that they
 * choose the same clips.  FRAE_PITCH_YIN: YIN's reading alone;
 * FRAE_PITCH_YIN_HP: and the second reading high-passed
 * (frae_f0_frame_dehum), f0 not refined.  1 is every step. */
#define FRAE_PITCH_YIN 2
#define FRAE_PITCH_YIN_HP 3
/* frae_features.pitch by the name of the tracker's last step, as 'frae
 * features --f0' and Python's features(f0=) take it: "yin", "yin-hp" or
 * "refined" (1, every step); -1 for any other name or NULL. */
FRAE_API
int frae_features_pitch_steps(const char *name);

/* Values per frame: n_mels, plus 2 with pitch. */
#define FRAE_FEATURE_WIDTH(f) ((f)->n_mels + 2 * ((f)->pitch != 0))

FRAE_API
void frae_features_default(frae_features *f);
FRAE_API
int frae_features_check(const frae_features *f, char *err, size_t errlen);
/* The features a model was trained on, from its checkpoint's features.*
 * metadata ('frae train' with audio writes them; frae.pitch sets pitch):
 * 1 and *f filled, 0 if it has none (trained on frames), -1 and one line
 * in err if they are incomplete or invalid (*f untouched). */
FRAE_API
int frae_checkpoint_features(const frae_checkpoint *ck, frae_features *f,
                             char *err, size_t errlen);
/* The same metadata written for frae_save: FRAE_FEATURES_META pairs into
 * meta, their values into vals; returns FRAE_FEATURES_META.  (pitch goes
 * in the model's own config, frae.pitch.) */
#define FRAE_FEATURES_META 10
FRAE_API
int frae_features_meta(const frae_features *f, char (*vals)[64],
                       frae_meta *meta);
FRAE_API
double frae_mel_center_hz(const frae_features *f, int band);

typedef struct frae_mel frae_mel; /* FFT plans and filters, made once */
FRAE_API
frae_mel *frae_mel_create(const frae_features *f, char *err, size_t errlen);
FRAE_API
void frae_mel_destroy(frae_mel *m);
FRAE_API
long frae_mel_frames(const frae_mel *m, long n_samples);
/* feats: frae_mel_frames(n) x n_mels.  Samples must lie within
 * +-FRAE_AUDIO_MAX_SAMPLE (the files frae reads are checked). */
FRAE_API
void frae_mel_compute(frae_mel *m, const float *samples, long n, float *feats);

/* The loudest audio frae takes: samples within +-2^16, twice a 16-bit
 * integer's scale (files written at that scale as float exist) and 96 dB
 * above full scale (+-1, where integer formats map).  A file beyond it is
 * refused: past about 1e36 the float FFT overflows, and well before that
 * the vocoder's and Griffin-Lim's float sums would. */
#define FRAE_AUDIO_MAX_SAMPLE 65536.0
/* The largest feature value such audio can give, any band: by Parseval a
 * band's mel power is at most n_fft x sum(window^2) x FRAE_AUDIO_MAX_
 * SAMPLE^2 (7.69 at the defaults: e^33.4).  Features above it come from
 * no audio; the vocoders clamp there, and frae vocode refuses them.  (No
 * lower bound is needed: a value below the floor's is silence.) */
FRAE_API
double frae_features_max(const frae_features *f);

/* Back to audio: mel pseudo-inverse, then iters rounds of Griffin-Lim
 * from a seeded phase, in blocks (frae_gl, below: the same samples).
 * samples needs (frames - 1) * hop + win values; returns that count, or
 * -1. */
FRAE_API
long frae_mel_invert(frae_mel *m, const float *feats, long frames, int iters,
                     float *samples);

/* ---- Griffin-Lim, streamed -------------------------------------------------
 * The inversion above a frame at a time, in memory of fixed size (about
 * 1 MB at the defaults) whatever the signal's length.  Frames are
 * inverted in blocks of FRAE_GL_BLOCK: each block runs its iters rounds on
 * its frames and the FRAE_GL_LOOKAHEAD frames after them, with the frames
 * before it (those whose windows reach into it) held at their final
 * phases; then its frames are final, and the look-ahead frames start the
 * next block from the phases they reached.  What the signal gets is the
 * overlap-add of every frame at its final phase, so a block's edge leaves
 * no seam; a signal of at most FRAE_GL_BLOCK + FRAE_GL_LOOKAHEAD - 1
 * frames is one block, the whole-signal Griffin-Lim to the bit.  Latency:
 * a block and its look-ahead (2.88 s at the defaults).  No allocation per
 * frame; a NaN feature counts as the floor, one above frae_features_max
 * as that. */
#define FRAE_GL_BLOCK 256
#define FRAE_GL_LOOKAHEAD 32
typedef struct frae_gl frae_gl;
FRAE_API
frae_gl *frae_gl_create(const frae_features *f, int iters, char *err,
                        size_t errlen);
FRAE_API
void frae_gl_destroy(frae_gl *g);
/* Forgets the signal: the next frame starts a new one. */
FRAE_API
void frae_gl_reset(frae_gl *g);
/* The most samples one call below writes. */
FRAE_API
long frae_gl_max_samples(const frae_gl *g);
/* Takes one frame of n_mels features; writes the samples that became
 * final into out (0, or a block's hops) and returns their count. */
FRAE_API
long frae_gl_frame(frae_gl *g, const float *feats, float *out);
/* Ends the signal: writes the rest ((frames - 1) * hop + win samples in
 * all, over every call), returns its count, and resets. */
FRAE_API
long frae_gl_flush(frae_gl *g, float *out);

/* ---- Pitch: f0 and voicing of a frame (YIN) -------------------------------
 * de Cheveigne and Kawahara's YIN (JASA 2002): the cumulative-mean-
 * normalised difference function over an integration window of the longest
 * period, its first dip below 0.15 (else its minimum), parabolic
 * interpolation; then a voiced frame's f0 is moved within +-60 cents to
 * where its harmonics up to 3.5 kHz are strongest (the period of the upper
 * harmonics too, which a listener hears).  A frame is voiced when that dip
 * is below 0.25 and its mean square above -60 dBFS.  f0 is searched from
 * FRAE_F0_MIN_HZ to FRAE_F0_MAX_HZ.  Frame t analyses frae_f0_span samples
 * centred at t*hop + win/2, where feature frame t is centred.  Mains hum
 * and rumble under a voice are a steady period that YIN reads at its
 * floor, or they hide the voice's, so the features' tracker
 * (frae_f0_frame_dehum) reads a frame again, high-passed at 80 Hz
 * (frae_f0_filter), where the whole band reads under 80 Hz or unvoiced.
 * The state is of fixed size (caller-owned, as rnnoise's): the filter's
 * memory and a frame's scratch, the refinement's spectrum among it; a
 * frame allocates nothing and never yields NaN (non-finite samples count
 * as silence). */
#define FRAE_F0_MIN_HZ 50.0
#define FRAE_F0_MAX_HZ 600.0
typedef struct frae_f0 frae_f0;
FRAE_API
int frae_f0_span(const frae_features *f);
FRAE_API
size_t frae_f0_size(const frae_features *f);
/* A speech codec's latency in samples of f's rate: sample n of the decoded
 * audio is out once the input reaches sample n + this.  A frame is coded
 * once the input reaches its centre + half the f0 span (or of the mel
 * window, if longer), lookahead frames later for an encoder that sees the
 * frames after it (frae_config.lookahead), and the vocoder's output ends a
 * hop behind the frame's centre, and the polish (FRAE_POLISH_ROUNDS > 0,
 * decode's default) FRAE_POLISH_DELAY after that.  Real-time packets add
 * their own length.  At the defaults: 840 samples (52.5 ms; 30 ms with
 * --polish 0), + 160 a frame of look-ahead. */
FRAE_API
long frae_speech_latency(const frae_features *f, int lookahead);
/* NULL if f is not a valid feature config. */
FRAE_API
frae_f0 *frae_f0_init(void *mem, const frae_features *f);
/* The tracker's input: the next n samples of the signal, high-passed into
 * out (which may be in); the filter's memory runs on from call to call
 * and starts silent at frae_f0_init. */
FRAE_API
void frae_f0_filter(frae_f0 *p, const float *in, float *out, long n);
/* span: frae_f0_span(f) samples.  *f0: Hz, 0 when unvoiced; *voiced: 0 or 1. */
FRAE_API
void frae_f0_frame(frae_f0 *p, const float *span, float *f0, float *voiced);
/* As frae_f0_frame, where highpassed is the same span through
 * frae_f0_filter (what frae's features do): a frame read voiced under 80 Hz
 * takes the high-passed reading; one read unvoiced takes it where it is
 * voiced at 80 Hz or more; one read voiced at 80 Hz or more keeps its
 * reading. */
FRAE_API
void frae_f0_frame_dehum(frae_f0 *p, const float *span, const float *highpassed,
                         float *f0, float *voiced);

/* ---- Vocoder: harmonic plus noise, frame by frame ---------------------------
 * Turns frames of features with pitch (n_mels log-mel values, f0 in Hz,
 * voicing) back into audio, one hop of samples per frame:
 *  - voiced frames: harmonics at k*f0, each with the amplitude that gives
 *    the frame's mel energies back through the analysis (the Hann window's
 *    response at k*f0 through each mel filter), a continuous phase (each
 *    harmonic k*Phi + a fixed dispersion), f0 and amplitudes interpolated
 *    sample by sample between frame centres;
 *  - noise: what the harmonics leave of each band's energy (all of it when
 *    unvoiced), as Gaussian noise shaped in the frequency domain, overlap-
 *    added with a sine window of two hops.
 * Call t writes samples [t*hop + win/2 - hop, t*hop + win/2): up to the
 * centre of frame t, so the vocoder adds no delay of its own beyond one
 * hop of interpolation; the first win/2 - hop samples of the signal are
 * silence and not written.  frae_vocoder_flush writes the hop after the
 * last frame's centre (a fade to silence).  The state is one block of fixed
 * size (caller-owned memory, as rnnoise's), seeded: the same frames give
 * the same samples.  No allocation per frame; garbage in (NaN, huge
 * values, f0 out of range) gives bounded, finite samples.  Needs a
 * power-of-two FFT size and hop <= win/2. */
typedef struct frae_vocoder frae_vocoder;
FRAE_API
size_t frae_vocoder_size(const frae_features *f);
FRAE_API
frae_vocoder *frae_vocoder_init(void *mem, const frae_features *f,
                                uint64_t seed, char *err, size_t errlen);
FRAE_API
void frae_vocoder_reset(frae_vocoder *v);
/* frame: n_mels features, f0 (Hz), voicing (voiced if >= 0.5); out: hop
 * samples. */
FRAE_API
void frae_vocoder_frame(frae_vocoder *v, const float *frame, float *out);
FRAE_API
void frae_vocoder_flush(frae_vocoder *v, float *out);

/* ---- features back to audio, as they come (src/audio/audio_out.c) -------
 * One sequence's frames turned into its samples on the features' timeline,
 * as 'frae decode --wav', 'frae vocode' and Python's vocode and
 * Codec.decode give them: frames with pitch (n_mels values, f0, voicing)
 * through the vocoder (vocoder 1, seeded 1), or their n_mels values
 * through Griffin-Lim (vocoder 0, gl_iters iterations; < 0: 32).  begin's
 * silence to frame 0's centre, a hop a frame (Griffin-Lim: what its blocks
 * give), end's flush and silence to the last window's end:
 * frae_audio_out_samples in all.  Each call writes into out (room for
 * frae_audio_out_max samples) and returns how many; begin starts a
 * sequence afresh.  Nothing is allocated after create.
 * polish > 0 (the vocoder only): that many rounds of making each frame's
 * audio analyse back to its mel powers (the vocoder's noise, with random
 * phases, scatters about them), frame by frame, once the vocoder has
 * given the frame's whole window: the samples come FRAE_POLISH_DELAY(f)
 * samples later (win/2 and the hops until the vocoder's output reaches
 * the window's end: 22.5 ms at the defaults), the same in all. */
#define FRAE_POLISH_DELAY(f)                                                   \
    ((long)(f)->win / 2 +                                                      \
     ((long)((f)->win - (f)->win / 2 + (f)->hop - 1) / (f)->hop - 1) *         \
         (f)->hop)
/* frae decode's, frae vocode's and Python's rounds unless told (the codec
 * table's polish row): docs/2026-12-06-polish.md has what they buy */
#define FRAE_POLISH_ROUNDS 2
typedef struct frae_audio_out frae_audio_out;
FRAE_API
frae_audio_out *frae_audio_out_create(const frae_features *f, int vocoder,
                                      int gl_iters, int polish, char *err,
                                      size_t errlen);
FRAE_API
void frae_audio_out_destroy(frae_audio_out *o);
FRAE_API
long frae_audio_out_max(const frae_audio_out *o);
/* The samples `frames` frames make: (frames - 1) * hop + win. */
FRAE_API
long frae_audio_out_samples(const frae_features *f, long frames);
FRAE_API
long frae_audio_out_begin(frae_audio_out *o, float *out);
FRAE_API
long frae_audio_out_frame(frae_audio_out *o, const float *frame, float *out);
FRAE_API
long frae_audio_out_end(frae_audio_out *o, float *out);

/* Audio is read in blocks, whatever its length: the calls below hold a
 * few blocks of samples and one window, not the file.  Every sample is
 * checked: NaN or infinite samples (float WAV) are refused, with their
 * position. */

/* Receives features as they are computed: frames x n_mels floats, in
 * order.  Returns 0, or non-zero to stop (the call then fails). */
typedef int (*frae_feature_sink)(void *ctx, const float *feats, long frames,
                                 int n_mels);

/* The features of an audio file (any libsndfile format: WAV, FLAC, ...),
 * mixed to mono and resampled to f->sample_rate (if resample; else a file
 * at another rate is an error), handed to sink in order; *frames (may be
 * NULL) is their count.  A file shorter than one frame or silent (peak
 * below -80 dBFS) is an error found at the end, after the sink has seen
 * its frames: a sink that writes somewhere should discard them then. */
FRAE_API
int frae_audio_stream_features(const char *path, const frae_features *f,
                               int resample, frae_feature_sink sink, void *ctx,
                               long *frames, char *err, size_t errlen);
/* The same, into one malloc'ed array of frames x n_mels (caller frees). */
FRAE_API
int frae_audio_features(const char *path, const frae_features *f, int resample,
                        float **feats, long *frames, char *err, size_t errlen);
/* Every sample, mixed to mono, at rate Hz (resampled if resample is set,
 * else a file at another rate is an error), in one malloc'ed array. */
FRAE_API
int frae_audio_read(const char *path, int rate, int resample, float **samples,
                    long *n, char *err, size_t errlen);
/* 16-bit PCM WAV that keeps its level: samples past 0.85 of full scale
 * bend softly toward 0.99 (a soft clip, slope 1 at the knee), and only a
 * peak past 2 (+6 dBFS) scales the whole file down to it first; written
 * atomically: a failure leaves the old file.  Refuses non-finite
 * samples. */
FRAE_API
int frae_audio_write_wav(const char *path, const float *samples, long n,
                         int rate, char *err, size_t errlen);
/* The same WAV written as its samples come, in memory of fixed size: the
 * samples wait, as float32, in an unlinked temporary file (TMPDIR, else
 * /tmp; 4 bytes a sample) until close knows the peak and writes the file.
 * open starts the output (so a path that cannot be written fails first);
 * write takes samples in order; close writes and commits it; abort (or a
 * failed close) leaves the old file.  Each returns 0, or -1 with one line
 * in err; write refuses a non-finite sample and a file past WAV's 4 GB.
 * close and abort free w. */
typedef struct frae_wav_writer frae_wav_writer;
FRAE_API
frae_wav_writer *frae_wav_open(const char *path, int rate, char *err,
                               size_t errlen);
/* A live writer (decoding a live stream): the header first with the
 * length unknown (0xffffffff, as for a pipe; a file gets its sizes at
 * close), then every write's samples at once, soft-clipped the same
 * way but not scaled (a peak to come cannot be waited for) and flushed. */
FRAE_API
frae_wav_writer *frae_wav_open_live(const char *path, int rate, char *err,
                                    size_t errlen);
FRAE_API
int frae_wav_write(frae_wav_writer *w, const float *samples, long n, char *err,
                   size_t errlen);
/* Samples written so far. */
FRAE_API
long frae_wav_samples(const frae_wav_writer *w);
FRAE_API
int frae_wav_close(frae_wav_writer *w, char *err, size_t errlen);
FRAE_API
void frae_wav_abort(frae_wav_writer *w);

/* Live PCM in: a WAV, or raw 16-bit little-endian mono PCM at raw_rate,
 * on descriptor fd (a pipe from arecord, a socket), read as it comes.
 * open reads the head (a WAV's header up to its data chunk, whose size is
 * not believed: a live writer does not know it; of raw PCM, 4 bytes);
 * each read takes at most 10 ms of samples, so nothing waits on a read
 * for more than a frame, and gives them mono (the channels averaged) in
 * the reader's memory: how many, 0 at the end, or -1 and one line in err.
 * 16-bit PCM or 32-bit float WAVs, 1 to 16 channels, 1 to 384 kHz.  fd is
 * the caller's to close. */
typedef struct frae_pcm_in frae_pcm_in;
FRAE_API
frae_pcm_in *frae_pcm_in_open(int fd, int raw_rate, char *err, size_t errlen);
FRAE_API
int frae_pcm_in_rate(const frae_pcm_in *p);
FRAE_API
long frae_pcm_in_read(frae_pcm_in *p, const float **mono, char *err,
                      size_t errlen);
FRAE_API
void frae_pcm_in_close(frae_pcm_in *p);

/* Features of samples pushed as they come (a live input: a microphone, a
 * pipe): mono samples at input_rate (resampled to f's rate unless
 * resample is 0, then refused), each push's complete frames handed to the
 * sink before it returns, the features of a file alike; end takes the
 * last frames the input makes.  Samples must be finite and within
 * +-FRAE_AUDIO_MAX_SAMPLE.  No allocation after create. */
typedef struct frae_feature_stream frae_feature_stream;
FRAE_API
frae_feature_stream *frae_feature_stream_create(const frae_features *f,
                                                int input_rate, int resample,
                                                frae_feature_sink sink,
                                                void *ctx, char *err,
                                                size_t errlen);
FRAE_API
int frae_feature_stream_push(frae_feature_stream *s, const float *samples,
                             long n, char *err, size_t errlen);
FRAE_API
int frae_feature_stream_end(frae_feature_stream *s, char *err, size_t errlen);
/* Frames made so far. */
FRAE_API
long frae_feature_stream_frames(const frae_feature_stream *s);
FRAE_API
void frae_feature_stream_destroy(frae_feature_stream *s);

/* The DTX gate: which frames of log-mel features (frae_features f) are
 * silence, for a codec that sends silence as a flag
 * (frae_stream_options.dtx).  A frame is silent once it and the
 * FRAE_DTX_HANGOVER frames before it are below level_db, 0 dB being a
 * full-scale 1 kHz sine's frames through f (FRAE_DTX_LEVEL: about where
 * frae's pitch tracker stops calling frames voiced).  init computes that
 * reference (an FFT plan: a few milliseconds) and returns 0, or -1 and one
 * line in err for a level outside -200..0 or bad features; reset starts a
 * new sequence; silent takes the frames in order (n_mels values each, the
 * pitch after them ignored). */
#define FRAE_DTX_HANGOVER 4
#define FRAE_DTX_LEVEL -60.0
typedef struct {
    frae_features features;
    double gate_db; /* the level below which a frame is quiet */
    int quiet_run;  /* quiet frames in a row, the last one too */
} frae_dtx_gate;
FRAE_API
int frae_dtx_gate_init(frae_dtx_gate *g, const frae_features *f,
                       double level_db, char *err, size_t errlen);
FRAE_API
void frae_dtx_gate_reset(frae_dtx_gate *g);
FRAE_API
int frae_dtx_gate_silent(frae_dtx_gate *g, const float *frame);

/* frae_audio_stream_features over audio already in memory (libsndfile's
 * virtual I/O): the same checks and the same features as a file; name is
 * used in messages. */
FRAE_API
int frae_audio_stream_memory(const void *buf, size_t size, const char *name,
                             const frae_features *f, int resample,
                             frae_feature_sink sink, void *ctx, long *frames,
                             char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
