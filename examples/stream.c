/* Streams frames from stdin to stdout through frae's codec API: each frame
 * (D little-endian float32 values; with a model that codes pitch, D + 2:
 * then f0 in Hz and voicing, as 'frae features --pitch' writes them) is
 * encoded to its code bytes, which are handed to a decoder, whose frame
 * (as wide) is written out.  Both states live in memory this program owns;
 * nothing is allocated per frame.
 *
 * usage: frae_stream MODEL < frames.f32 > decoded.f32
 * build: cc stream.c $(pkg-config --cflags --libs frae) -o frae_stream */
#include <stdio.h>
#include <stdlib.h>

#include <frae_codec.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL < frames.f32 > decoded.f32\n",
                argv[0]);
        return 2;
    }
    frae_config rt;
    frae_config_default(&rt);
    rt.training = 0; /* weights and one frame of scratch, nothing more */
    char err[256];
    frae_model *m = frae_load(argv[1], &rt, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", argv[0], err);
        return 2;
    }
    /* a frame in and out: D values, and f0 and voicing if the model codes
     * pitch (the encoder reads them, the decoder writes them) */
    const frae_config *cfg = frae_get_config(m);
    const int width = cfg->frame_dim + (cfg->pitch ? 2 : 0);
    /* the weights, read only: what the codec states share */
    const frae_net *net = frae_model_net(m);
    const size_t code_bytes = frae_code_bytes(net);
    /* caller-owned states: one allocation each, sized by the library */
    void *enc_mem = malloc(frae_encoder_size(net));
    void *dec_mem = malloc(frae_decoder_size(net));
    float *in = malloc(sizeof(float) * width);
    float *out = malloc(sizeof(float) * width);
    unsigned char *code = malloc(code_bytes);
    if (!enc_mem || !dec_mem || !in || !out || !code) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    frae_encoder *enc = frae_encoder_init(enc_mem, net);
    frae_decoder *dec = frae_decoder_init(dec_mem, net);
    long frames = 0;
    while (fread(in, sizeof(float), (size_t)width, stdin) == (size_t)width) {
        frae_encode_frame(enc, in, code, NULL);  /* code: what is sent */
        if (frae_decode_frame(dec, code, out)) { /* the far end */
            fprintf(stderr, "%s: bad code at frame %ld\n", argv[0], frames);
            return 1;
        }
        fwrite(out, sizeof(float), (size_t)width, stdout);
        frames++;
    }
    fprintf(stderr, "%ld frames, %zu code bytes (%g bits) per frame\n", frames,
            code_bytes, frae_bits_per_frame(m));
    free(enc_mem), free(dec_mem), free(in), free(out), free(code);
    frae_destroy(m);
    return 0;
}
