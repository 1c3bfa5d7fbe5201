/* Shared by the libFuzzer targets: every refusal must come with one line
 * saying what was wrong; a refusal without one is a bug like a crash. */
#ifndef FRAE_FUZZ_COMMON_H
#define FRAE_FUZZ_COMMON_H
#include <string.h>

static inline void fuzz_check_error(const char *err)
{
    if (!err[0] || strchr(err, '\n'))
        __builtin_trap();
}
#endif
