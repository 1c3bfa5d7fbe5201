/* Seeded random numbers.  The state is the caller's: no globals. */
#include "base/util.h"

uint64_t frae_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float frae_rng_uniform(uint64_t *state)
{
    return (float)(frae_rng_next(state) >> 40) * (1.0f / 16777216.0f);
}
