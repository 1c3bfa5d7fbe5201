/* File helpers: read-only mapping, and crash-safe file replacement: write a temporary file in the target's
 * directory, fsync it, rename it over the target, fsync the directory.
 * A crash or kill at any point leaves either the old file or the new one,
 * never a torn mix. */
/* realpath */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/formats.h"

int frae_open_regular(const char *path, char *err, size_t errlen)
{
    if (!strcmp(path, "-")) {
        frae_errorf(err, errlen,
                    "-: standard input is not read here; give "
                    "a file");
        return -1;
    }
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
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
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

int frae_map_file(const char *path, size_t min_size, void **map, size_t *size,
                  char *err, size_t errlen)
{
    int fd = frae_open_regular(path, err, errlen);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb)) {
        close(fd);
        frae_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
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

/* The descriptor an output path names, or -1: "-" and /dev/stdout are
 * standard output, /dev/fd/N and /proc/self/fd/N descriptor N.  Such an
 * output is written through a copy of the descriptor, so that what the
 * shell opened (a pipe, a file appended to) is kept as it is. */
int frae_output_descriptor(const char *path)
{
    static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/"};
    if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
        return STDOUT_FILENO;
    if (!strcmp(path, "/dev/stderr"))
        return STDERR_FILENO;
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(prefixes[i]);
        if (!strncmp(path, prefixes[i], n) && path[n] &&
            strspn(path + n, "0123456789") == strlen(path + n) &&
            strlen(path + n) < 8)
            return atoi(path + n);
    }
    return -1;
}

/* An output that is not a regular file, written where it is: standard
 * output, a FIFO that a process reads, a character device. */
static int begin_in_place(frae_atomic_file *af, const char *path,
                          const struct stat *sb, char *err, size_t errlen)
{
    int fd;
    if (frae_output_descriptor(path) >= 0) {
        fd = dup(frae_output_descriptor(path));
    } else if (S_ISFIFO(sb->st_mode) || S_ISCHR(sb->st_mode)) {
        /* O_NONBLOCK: a FIFO nobody reads is refused (ENXIO), not waited
         * on */
        fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENXIO) {
            frae_errorf(err, errlen, "%s: a FIFO that no process reads", path);
            return -1;
        }
        int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
        if (fl >= 0)
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    } else {
        frae_errorf(err, errlen, "%s: %s", path,
                    S_ISDIR(sb->st_mode) ? "is a directory"
                                         : "not a file frae can write");
        return -1;
    }
    if (fd < 0 || !(af->f = fdopen(fd, "wb"))) {
        if (fd >= 0)
            close(fd);
        frae_errorf(err, errlen, "%s: cannot open for writing: %s", path,
                    strerror(errno));
        return -1;
    }
    af->in_place = 1;
    af->seekable = lseek(fd, 0, SEEK_CUR) >= 0;
    return 0;
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
    struct stat old, link;
    const int exists = !stat(path, &old);
    if (frae_output_descriptor(path) >= 0 || (exists && !S_ISREG(old.st_mode)))
        return begin_in_place(af, path, &old, err, errlen);
    if (exists && !lstat(path, &link) && S_ISLNK(link.st_mode)) {
        /* replace the link's target, so that the link stays */
        char target[PATH_MAX];
        if (!realpath(path, target) || strlen(target) + 32 > sizeof af->tmp) {
            frae_errorf(err, errlen, "%s: cannot resolve the link", path);
            return -1;
        }
        path = memcpy(af->path, target, strlen(target) + 1);
    }
    remove_stale_temps(path);
    /* 0666 through the umask, as open() would make the file; a file being
     * replaced keeps its own permissions */
    int fd = -1;
    for (unsigned n = 0; fd < 0 && n < 1000; n++) {
        snprintf(af->tmp, sizeof af->tmp, "%s.tmp-%ld-%u", path, (long)getpid(),
                 n);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        frae_errorf(err, errlen, "%s: cannot create a temporary file: %s", path,
                    strerror(errno));
        return -1;
    }
    if (exists)
        fchmod(fd, old.st_mode & 07777);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        frae_errorf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    af->seekable = 1;
    return 0;
}

void frae_atomic_abort(frae_atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    if (!af->in_place)
        unlink(af->tmp);
    af->f = NULL;
}

int frae_atomic_commit(frae_atomic_file *af, char *err, size_t errlen)
{
    int bad = ferror(af->f) || fflush(af->f) ||
              (!af->in_place && fsync(fileno(af->f)));
    int saved = errno;
    if (fclose(af->f))
        bad = 1, saved = errno;
    af->f = NULL;
    if (bad) {
        if (!af->in_place)
            unlink(af->tmp);
        frae_errorf(err, errlen, "%s: write failed: %s%s", af->path,
                    strerror(saved),
                    af->in_place ? "" : "; the previous file is untouched");
        return -1;
    }
    if (af->in_place)
        return 0;
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
