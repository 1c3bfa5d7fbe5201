/* One-line errors (util.h).  Compiled into both libraries, libfrae and
 * libfrae-audio, each with its own hidden copy: neither depends on the
 * other for it. */
#include <stdarg.h>
#include <stdio.h>

#include "base/util.h"

void frae_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

int frae_errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        frae_one_line(err); /* whatever a file's bytes quoted in it hold */
    }
    return -1;
}
