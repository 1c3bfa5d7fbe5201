/* frae_tanhf and frae_log1pf (src/base/portable_math.c): the bits of
 * glibc's x86-64 tanhf and log1pf on every machine.  One float in 997 over
 * all 2^32 bit patterns (NaNs and infinities among them) is hashed and the
 * hash held to the one x86-64 gives; on x86-64 with glibc each is also
 * compared with the C library's own, and elsewhere the C library's
 * distance from it is bounded (aarch64's glibc: 3 ulp for tanhf, 1 for
 * log1pf, from its fused multiply-adds). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/checksum.h"
#include "base/util.h"
#include "test_util.h"
#include "tests.h"

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* ulps between two finite floats of one sign, or 0 for two NaNs */
static long ulps(float a, float b)
{
    if (isnan(a) && isnan(b))
        return 0;
    if (isnan(a) || isnan(b) || (a < 0) != (b < 0))
        return 1L << 40;
    long d = (long)(bits(a) & 0x7fffffffu) - (long)(bits(b) & 0x7fffffffu);
    return d < 0 ? -d : d;
}

int test_portable_math(void)
{
    int failures = 0;
    uint64_t h[2] = {FRAE_FNV_INIT, FRAE_FNV_INIT};
    long libm_differ[2] = {0, 0}, libm_ulps[2] = {0, 0}, n = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 997, n++) {
        const uint32_t w = (uint32_t)u;
        float x;
        memcpy(&x, &w, sizeof x);
        const float mine[2] = {frae_tanhf(x), frae_log1pf(x)};
        const float libm[2] = {tanhf(x), log1pf(x)};
        for (int f = 0; f < 2; f++) {
            const uint32_t b = bits(mine[f]);
            h[f] = frae_fnv1a64((const unsigned char *)&b, sizeof b, h[f]);
            if (bits(libm[f]) != b) {
                libm_differ[f]++;
                long d = ulps(libm[f], mine[f]);
                libm_ulps[f] = d > libm_ulps[f] ? d : libm_ulps[f];
            }
        }
    }
    /* from x86-64 (glibc 2.36), where both equal the C library's */
    static const uint64_t want[2] = {0x96ade3c356d59556ull,
                                     0xc20f979e766a8bfbull};
    static const char *const name[2] = {"tanhf", "log1pf"};
    for (int f = 0; f < 2; f++) {
        CHECK(h[f] == want[f],
              "frae_%s over %ld floats hashes to %#llx, not %#llx", name[f], n,
              (unsigned long long)h[f], (unsigned long long)want[f]);
#if defined(__x86_64__) && defined(__GLIBC__)
        CHECK(libm_differ[f] == 0, "glibc's %s differs on %ld floats", name[f],
              libm_differ[f]);
#else
        CHECK(libm_ulps[f] <= (f == 0 ? 3 : 1),
              "the C library's %s is %ld ulp away", name[f], libm_ulps[f]);
#endif
        printf("    frae_%s: %ld floats, the C library's differs on %ld (at "
               "most %ld ulp)\n",
               name[f], n, libm_differ[f], libm_ulps[f]);
    }
    return failures;
}
