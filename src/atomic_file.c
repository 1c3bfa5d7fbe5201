/* File helpers: read-only mapping, and crash-safe file replacement: write a temporary file in the target's
 * directory, fsync it, rename it over the target, fsync the directory.
 * A crash or kill at any point leaves either the old file or the new one,
 * never a torn mix. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
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
        frae_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        frae_errorf(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    if ((size_t)sb.st_size < min_size || sb.st_size == 0) {
        close(fd);
        frae_errorf(err, errlen, "%s: %s (%lld bytes)", path,
                 sb.st_size ? "too short" : "empty file",
                 (long long)sb.st_size);
        return -1;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        frae_errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    *map = p;
    *size = (size_t)sb.st_size;
    return 0;
}

/* Temporary files are named "<target>.tmp-<pid>-<n>", so that one left by
 * a killed writer can be recognised as stale (its process is gone) and
 * removed by the next save of the same target. */
static void remove_stale_temps(const char *path)
{
    char dir[4096], base[4096];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    const char *d = dirname(dir), *b = basename(base);
    size_t blen = strlen(b);
    DIR *dh = opendir(d);
    if (!dh)
        return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        const char *n = e->d_name;
        if (strncmp(n, b, blen) || strncmp(n + blen, ".tmp-", 5))
            continue;
        char *end;
        errno = 0;
        long pid = strtol(n + blen + 5, &end, 10);
        if (errno || pid <= 0 || *end != '-' || pid > INT_MAX)
            continue;
        strtol(end + 1, &end, 10);
        if (*end || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* not ours, or its writer may still be running */
        char victim[8192];
        snprintf(victim, sizeof victim, "%s/%s", d, n);
        unlink(victim);
    }
    closedir(dh);
}

int frae_atomic_begin(frae_atomic_file *af, const char *path, char *err,
                      size_t errlen)
{
    memset(af, 0, sizeof *af);
    size_t len = strlen(path);
    if (len + 32 > sizeof af->tmp) {
        frae_errorf(err, errlen, "%s: path too long", path);
        return -1;
    }
    memcpy(af->path, path, len + 1);
    remove_stale_temps(path);
    /* 0666 through the umask, as open() would make the file; a file being
     * replaced keeps its own permissions */
    struct stat old;
    int keep_mode = !stat(path, &old) && S_ISREG(old.st_mode);
    int fd = -1;
    for (unsigned n = 0; fd < 0 && n < 1000; n++) {
        snprintf(af->tmp, sizeof af->tmp, "%s.tmp-%ld-%u", path,
                 (long)getpid(), n);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        frae_errorf(err, errlen, "%s: cannot create a temporary file: %s", path,
                 strerror(errno));
        return -1;
    }
    if (keep_mode)
        fchmod(fd, old.st_mode & 07777);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        frae_errorf(err, errlen, "%s: %s", path, strerror(errno));
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
        frae_errorf(err, errlen, "%s: write failed: %s; the previous file is "
                              "untouched",
                 af->path, strerror(saved));
        return -1;
    }
    if (rename(af->tmp, af->path)) {
        saved = errno;
        unlink(af->tmp);
        frae_errorf(err, errlen, "%s: cannot replace: %s", af->path,
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
