/* One-line errors (util.h).  Compiled into both libraries, libfrae and
 * libfrae-audio, each with its own hidden copy: neither depends on the
 * other for it. */
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

int frae_errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        /* one line, whatever a file's bytes quoted in it hold */
        for (char *p = err; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
    }
    return -1;
}
