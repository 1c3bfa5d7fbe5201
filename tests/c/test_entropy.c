/* The range coder and its frequency rule: round trips over many alphabets
 * and distributions at the ideal code length, the frequency rule's
 * guarantees, and garbage into the decoder. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec_internal.h"
#include "test_util.h"
#include "tests.h"

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static double unit(uint64_t *s) { return (double)next(s) / 2147483648.0; }

/* A symbol drawn from freq (of 2^15). */
static int draw(const uint32_t *freq, int n, uint64_t *s)
{
    uint32_t r = (uint32_t)(next(s) & 0x7fff), cum = 0;
    for (int i = 0; i < n; i++) {
        cum += freq[i];
        if (r < cum)
            return i;
    }
    return n - 1;
}

int test_pmf_quantizer(void)
{
    int failures = 0;
    const uint32_t T = 1u << FRAE_RANGE_TOTAL_BITS;
    float p[300];
    uint32_t f[300], g[300];
    uint64_t s = 9;
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)(next(&s) % 299);
        for (int i = 0; i < n; i++) /* skewed, with zeros and junk */
            p[i] = trial % 7 == 0 ? 0.0f
                   : i % 11 == 3  ? (trial % 2 ? NAN : -1.0f)
                                  : (float)pow(unit(&s), 4.0);
        CHECK(!frae_quantize_pmf(p, n, f), "n %d refused", n);
        uint64_t sum = 0;
        int zero = 0;
        for (int i = 0; i < n; i++)
            sum += f[i], zero += f[i] == 0;
        CHECK(sum == T && zero == 0, "n %d: sum %llu, %d zero frequencies", n,
              (unsigned long long)sum, zero);
        frae_quantize_pmf(p, n, g);
        CHECK(!memcmp(f, g, sizeof(uint32_t) * (size_t)n), "not deterministic");
    }
    for (int i = 0; i < 4; i++)
        p[i] = 0.0f;
    frae_quantize_pmf(p, 4, f);
    CHECK(f[0] == T / 4 && f[1] == T / 4 && f[3] == T / 4,
          "all zero: not uniform");
    CHECK(frae_quantize_pmf(p, 0, f) == -1 &&
              frae_quantize_pmf(p, 1 << 15, f) == -1,
          "bad alphabet sizes accepted");
    return failures;
}

int test_range_coder(void)
{
    int failures = 0;
    const int N = 20000;
    int *sym = malloc(sizeof(int) * N), *back = malloc(sizeof(int) * N);
    unsigned char *buf = malloc(4 * (size_t)N + 64);
    float p[256];
    uint32_t f[256];
    uint64_t s = 17;
    double worst_excess = 0;
    const int sizes[] = {2, 3, 4, 16, 255, 2, 4};
    for (int k = 0; k < 7; k++) {
        const int n = sizes[k];
        /* k < 5: random skewed distributions; 5: one symbol at 2^15 - 1
         * (long zero runs); 6: a Laplace-like one */
        for (int i = 0; i < n; i++)
            p[i] = k == 5   ? (i == 0 ? 1.0f : 0.0f)
                   : k == 6 ? (float)exp(-fabs(i - 1.5) * 1.7)
                            : (float)pow(unit(&s), 3.0);
        frae_quantize_pmf(p, n, f);
        double ideal = 0;
        for (int t = 0; t < N; t++) {
            sym[t] = draw(f, n, &s);
            ideal += -log2(f[sym[t]] / 32768.0);
        }
        frae_range_enc e;
        frae_range_enc_init(&e, buf, 4 * (size_t)N + 64);
        for (int t = 0; t < N; t++)
            frae_range_encode_symbol(&e, f, sym[t]);
        size_t bytes = frae_range_enc_finish(&e);
        frae_range_dec d;
        frae_range_dec_init(&d, buf, bytes);
        for (int t = 0; t < N; t++)
            back[t] = frae_range_decode_symbol(&d, f, n);
        CHECK(!memcmp(sym, back, sizeof(int) * N) && !frae_range_dec_status(&d),
              "alphabet %d: symbols differ after a round trip", n);
        double excess = bytes * 8.0 - ideal;
        worst_excess = fmax(worst_excess, excess);
        /* within 40 bits of the ideal code length, whatever the count */
        CHECK(excess < 40,
              "alphabet %d: %zu bytes, %.1f bits over the ideal "
              "%.1f",
              n, bytes, excess, ideal);
    }
    printf("    7 alphabets x %d symbols: round trips exact, at most %.1f bits "
           "over the ideal code length\n",
           N, worst_excess);
    /* nothing coded: no bytes; a buffer too small: 0, never past it */
    frae_range_enc e;
    frae_range_enc_init(&e, buf, 16);
    CHECK(frae_range_enc_finish(&e) == 0, "an empty stream has bytes");
    frae_range_enc_init(&e, buf, 3);
    buf[3] = 0xA5;
    for (int t = 0; t < 100; t++)
        frae_range_encode_symbol(&e, f, t % 4);
    CHECK(frae_range_enc_finish(&e) == 0 && buf[3] == 0xA5,
          "an overflowing buffer was not reported, or written past");
    free(sym), free(back), free(buf);
    return failures;
}

int test_range_decoder_garbage(void)
{
    int failures = 0;
    uint64_t s = 23;
    float p[5] = {0.6f, 0.2f, 0.1f, 0.07f, 0.03f};
    uint32_t f[5];
    frae_quantize_pmf(p, 5, f);
    int bad = 0, flagged = 0;
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = (size_t)(next(&s) % 64);
        unsigned char *buf = malloc(n ? n : 1); /* exact: ASan sees overreads */
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)next(&s);
        frae_range_dec d;
        frae_range_dec_init(&d, buf, n);
        for (int t = 0; t < 500; t++) {
            int v = frae_range_decode_symbol(&d, f, 5);
            bad += v < 0 || v >= 5;
        }
        flagged += frae_range_dec_status(&d) != 0;
        free(buf);
    }
    CHECK(bad == 0, "%d symbols out of range from garbage", bad);
    printf("    2000 random streams x 500 symbols: all in range, %d flagged "
           "corrupt\n",
           flagged);
    return failures;
}
