/* tanhf and log1pf with the same bits on every machine.
 *
 * glibc's tanhf (with its expm1f) and log1pf are the old fdlibm float
 * routines (sysdeps/ieee754/flt-32).  glibc compiles them with GCC's
 * default -ffp-contract=fast: on x86-64, whose baseline has no FMA, every
 * multiply and add rounds on its own; on aarch64 GCC fuses them into
 * fmadd, and about 1 input in 30,000 comes out 1 or 2 ulp away (measured
 * over 4.3M floats spread over all 2^32: tanhf 158 differ, by up to 3 ulp,
 * log1pf 118 by 1 ulp, besides the sign of its NaNs;
 * docs/performance.md).  frae's results must not depend on the machine,
 * so these are the same fdlibm routines compiled here with contraction off
 * (and the one NaN they make, x86's default NaN, written out: aarch64's
 * has the other sign)
 * (the Makefile): the bits of glibc on x86-64, which
 * tests/c/test_portable_math.c checks against the C library on every
 * float where that library is x86-64's, on any machine.  The other libm
 * functions frae uses (expf, logf, exp2f, log2f, sinf, cosf, exp, log,
 * pow, sin, cos: glibc's newer code) gave the same bits on both.
 *
 * From fdlibm: Copyright (C) 1993 by Sun Microsystems, Inc.  All rights
 * reserved.  Developed at SunPro, a Sun Microsystems, Inc. business.
 * Permission to use, copy, modify, and distribute this software is freely
 * granted, provided that this notice is preserved.  (Float versions by
 * Ian Lance Taylor, Cygnus Support.) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/util.h"

static inline int32_t word(float x)
{
    int32_t w;
    memcpy(&w, &x, sizeof w);
    return w;
}
static inline float from_word(int32_t w)
{
    float x;
    memcpy(&x, &w, sizeof x);
    return x;
}

/* y times 2^k by its exponent field, as fdlibm's SET_FLOAT_WORD (in
 * unsigned arithmetic: k may be negative) */
static inline float times_2k(float y, int32_t k)
{
    uint32_t w;
    memcpy(&w, &y, sizeof w);
    w += (uint32_t)k << 23;
    memcpy(&y, &w, sizeof y);
    return y;
}

static float expm1f_(float x)
{
    static const float one = 1.0f, huge = 1.0e30f, tiny = 1.0e-30f,
                       o_threshold = 8.8721679688e+01f,
                       ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f,
                       invln2 = 1.4426950216e+00f, Q1 = -3.3333335072e-02f,
                       Q2 = 1.5873016091e-03f, Q3 = -7.9365076090e-05f,
                       Q4 = 4.0082177293e-06f, Q5 = -2.0109921195e-07f;
    float y, hi, lo, c = 0.0f, t, e, hxs, hfx, r1;
    int32_t k;
    uint32_t hx = (uint32_t)word(x);
    const uint32_t xsb = hx & 0x80000000u;
    hx &= 0x7fffffffu;
    if (hx >= 0x4195b844u) { /* |x| >= 27 ln2 */
        if (hx >= 0x42b17218u) {
            if (hx > 0x7f800000u)
                return x + x;
            if (hx == 0x7f800000u)
                return xsb == 0 ? x : -1.0f;
            if (x > o_threshold)
                return huge * huge;
        }
        if (xsb != 0)
            return tiny - one;
    }
    if (hx > 0x3eb17218u) { /* |x| > 0.5 ln2 */
        if (hx < 0x3F851592u) {
            if (xsb == 0) {
                hi = x - ln2_hi;
                lo = ln2_lo;
                k = 1;
            } else {
                hi = x + ln2_hi;
                lo = -ln2_lo;
                k = -1;
            }
        } else {
            k = (int32_t)(invln2 * x + (xsb == 0 ? 0.5f : -0.5f));
            t = (float)k;
            hi = x - t * ln2_hi;
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) { /* |x| < 2^-25 */
        t = huge + x;
        return x - (t - (huge + x));
    } else {
        k = 0;
    }
    hfx = 0.5f * x;
    hxs = x * hfx;
    r1 = one + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
    t = 3.0f - r1 * hfx;
    e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0)
        return x - (x * e - hxs);
    e = (x * (e - c) - c);
    e -= hxs;
    if (k == -1)
        return 0.5f * (x - e) - 0.5f;
    if (k == 1) {
        if (x < -0.25f)
            return -2.0f * (e - (x + 0.5f));
        return one + 2.0f * (x - e);
    }
    if (k <= -2 || k > 56) {
        y = one - (e - x);
        return times_2k(y, k) - one;
    }
    if (k < 23) {
        t = from_word(0x3f800000 - (0x1000000 >> k)); /* 1 - 2^-k */
        y = t - (e - x);
    } else {
        t = from_word((0x7f - k) << 23); /* 2^-k */
        y = x - (e + t);
        y += one;
    }
    return times_2k(y, k);
}

float frae_tanhf(float x)
{
    static const float one = 1.0f, two = 2.0f, tiny = 1.0e-30f;
    float t, z;
    const int32_t jx = word(x), ix = jx & 0x7fffffff;
    if (ix >= 0x7f800000) /* inf or NaN */
        return jx >= 0 ? one / x + one : one / x - one;
    if (ix < 0x41b00000) { /* |x| < 22 */
        if (ix == 0)
            return x;
        if (ix < 0x24000000) /* |x| < 2^-55 */
            return x * (one + x);
        if (ix >= 0x3f800000) { /* |x| >= 1 */
            t = expm1f_(two * fabsf(x));
            z = one - two / (t + two);
        } else {
            t = expm1f_(-two * fabsf(x));
            z = -t / (t + two);
        }
    } else {
        z = one - tiny;
    }
    return jx >= 0 ? z : -z;
}

float frae_log1pf(float x)
{
    static const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f,
                       two25 = 3.355443200e+07f, Lp1 = 6.6666668653e-01f,
                       Lp2 = 4.0000000596e-01f, Lp3 = 2.8571429849e-01f,
                       Lp4 = 2.2222198546e-01f, Lp5 = 1.8183572590e-01f,
                       Lp6 = 1.5313838422e-01f, Lp7 = 1.4798198640e-01f;
    static volatile float zero = 0.0f; /* -1/0 and 0/0 at run time */
    float hfsq, f = 0.0f, c = 0.0f, s, z, R, u;
    int32_t k = 1, hu = 0;
    const int32_t hx = word(x), ax = hx & 0x7fffffff;
    if (hx < 0x3ed413d7) {      /* x < 0.41422 */
        if (ax >= 0x3f800000) { /* x <= -1 */
            if (x == -1.0f)
                return -two25 / zero;
            /* (x-x)/(x-x) on x86: a NaN x quieted, else its default NaN */
            return x != x ? x + x : from_word((int32_t)0xffc00000u);
        }
        if (ax < 0x31000000) { /* |x| < 2^-29 */
            if (ax < 0x24800000)
                return x;
            return x - x * x * 0.5f;
        }
        if (hx > 0 || hx <= (int32_t)0xbe95f61fu) { /* -0.2929 < x < 0.41422 */
            k = 0;
            f = x;
            hu = 1;
        }
    } else if (hx >= 0x7f800000) {
        return x + x;
    }
    if (k != 0) {
        if (hx < 0x5a000000) {
            u = 1.0f + x;
            hu = word(u);
            k = (hu >> 23) - 127;
            c = k > 0 ? 1.0f - (u - x) : x - (u - 1.0f);
            c /= u;
        } else {
            u = x;
            hu = word(u);
            k = (hu >> 23) - 127;
            c = 0;
        }
        hu &= 0x007fffff;
        if (hu < 0x3504f7) {
            u = from_word(hu | 0x3f800000);
        } else {
            k += 1;
            u = from_word(hu | 0x3f000000);
            hu = (0x00800000 - hu) >> 2;
        }
        f = u - 1.0f;
    }
    hfsq = 0.5f * f * f;
    if (hu == 0) { /* |f| < 2^-20 */
        if (f == 0.0f) {
            if (k == 0)
                return 0.0f;
            c += (float)k * ln2_lo;
            return (float)k * ln2_hi + c;
        }
        R = hfsq * (1.0f - 0.66666666666666666f * f);
        if (k == 0)
            return f - R;
        return (float)k * ln2_hi - ((R - ((float)k * ln2_lo + c)) - f);
    }
    s = f / (2.0f + f);
    z = s * s;
    R = z *
        (Lp1 +
         z * (Lp2 + z * (Lp3 + z * (Lp4 + z * (Lp5 + z * (Lp6 + z * Lp7))))));
    if (k == 0)
        return f - (hfsq - s * (hfsq + R));
    return (float)k * ln2_hi -
           ((hfsq - (s * (hfsq + R) + ((float)k * ln2_lo + c))) - f);
}
