/* File helpers: read-only mapping, and crash-safe file replacement: write a temporary file in the target's
 * directory, fsync it, rename it over the target, fsync the directory.
 * A crash or kill at any point leaves either the old file or the new one,
 * never a torn mix. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats.h"

int frae_map_file(const char *path, size_t min_size, void **map, size_t *size,
                  char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        snprintf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if ((size_t)sb.st_size < min_size || sb.st_size == 0) {
        close(fd);
        snprintf(err, errlen, "%s: %s (%lld bytes)", path,
                 sb.st_size ? "too short" : "empty file",
                 (long long)sb.st_size);
        return -1;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    *map = p;
    *size = (size_t)sb.st_size;
    return 0;
}

int frae_atomic_begin(frae_atomic_file *af, const char *path, char *err,
                      size_t errlen)
{
    memset(af, 0, sizeof *af);
    if (strlen(path) + 16 > sizeof af->tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    size_t len = strlen(path);
    memcpy(af->path, path, len + 1);
    memcpy(af->tmp, path, len);
    memcpy(af->tmp + len, ".tmp.XXXXXX", 12);
    int fd = mkstemp(af->tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file: %s", path,
                 strerror(errno));
        return -1;
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void frae_atomic_abort(frae_atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    unlink(af->tmp);
    af->f = NULL;
}

int frae_atomic_commit(frae_atomic_file *af, char *err, size_t errlen)
{
    int bad = ferror(af->f) || fflush(af->f) || fsync(fileno(af->f));
    int saved = errno;
    if (fclose(af->f))
        bad = 1, saved = errno;
    af->f = NULL;
    if (bad) {
        unlink(af->tmp);
        snprintf(err, errlen, "%s: write failed: %s; the previous file is "
                              "untouched",
                 af->path, strerror(saved));
        return -1;
    }
    if (rename(af->tmp, af->path)) {
        saved = errno;
        unlink(af->tmp);
        snprintf(err, errlen, "%s: cannot replace: %s", af->path,
                 strerror(saved));
        return -1;
    }
    /* make the rename itself durable */
    char dir[sizeof af->path];
    snprintf(dir, sizeof dir, "%s", af->path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}
