/* File formats: every .npy error path, bad checkpoints, a mutation fuzz of
 * the safetensors reader, and saves killed mid-write. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/formats.h"
#include "test_util.h"
#include "tests.h"

static char tmpdir[] = "/tmp/frae-test-XXXXXX";

static void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) {
    }
}

/* Paths inside one temporary directory, made on first use. */
static const char *tmp_path(const char *name)
{
    static int made;
    if (!made) {
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmpdir);
        made = 1;
    }
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* Writes a .npy with the given header dict and raw payload. */
static void write_npy(const char *path, const char *dict, const void *data,
                      size_t bytes, int major)
{
    FILE *f = fopen(path, "wb");
    size_t hlen = strlen(dict);
    size_t pre = major == 1 ? 10 : 12;
    size_t pad = 64 - (pre + hlen + 1) % 64;
    fwrite("\x93NUMPY", 1, 6, f);
    fputc(major, f);
    fputc(0, f);
    size_t total = hlen + pad + 1;
    fputc((int)(total & 0xff), f);
    fputc((int)(total >> 8 & 0xff), f);
    if (major != 1)
        fputc(0, f), fputc(0, f);
    fputs(dict, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    if (bytes)
        fwrite(data, 1, bytes, f);
    fclose(f);
}

/* Opens path as frames; returns the error text ("" on success). */
static const char *npy_error(const char *path)
{
    static char err[512];
    frae_npy a;
    err[0] = 0;
    if (!frae_npy_open(path, &a, err, sizeof err)) {
        if (!frae_npy_frames(&a, path, err, sizeof err))
            frae_npy_check_finite(&a, path, err, sizeof err);
        frae_npy_close(&a);
    }
    return err;
}

int test_npy_reader(void)
{
    int failures = 0;
    float f32[2 * 3 * 4];
    double f64[3 * 4];
    for (int i = 0; i < 24; i++)
        f32[i] = (float)i * 0.5f;
    for (int i = 0; i < 12; i++)
        f64[i] = i * 0.25;
    write_npy(tmp_path("ok3.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }",
              f32, sizeof f32, 1);
    write_npy(tmp_path("ok2.npy"),
              "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
              f64, sizeof f64, 2);
    frae_npy a;
    char err[512];
    CHECK(!frae_npy_open(tmp_path("ok3.npy"), &a, err, sizeof err) &&
              a.n == 2 && a.t == 3 && a.d == 4,
          "ok3: %s", err);
    float row[8];
    frae_npy_read(&a, 1, 1, 2, row);
    CHECK(row[0] == f32[16] && row[7] == f32[23], "ok3 read wrong values");
    frae_npy_close(&a);
    CHECK(!frae_npy_open(tmp_path("ok2.npy"), &a, err, sizeof err) &&
              a.n == 1 && a.t == 3 && a.itemsize == 8,
          "ok2: %s", err);
    frae_npy_read(&a, 0, 2, 1, row);
    CHECK(row[3] == (float)f64[11], "float64 conversion wrong");
    frae_npy_close(&a);

    f32[1 * 12 + 2 * 4 + 3] = 0.0f / 0.0f; /* NaN at [1, 2, 3] */
    write_npy(tmp_path("nan.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }",
              f32, sizeof f32, 1);
    f64[5] = 1.0 / 0.0; /* Inf at [1, 1] */
    write_npy(tmp_path("inf.npy"),
              "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
              f64, sizeof f64, 1);
    write_npy(tmp_path("fortran.npy"),
              "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", f32,
              48, 1);
    write_npy(tmp_path("bigend.npy"),
              "{'descr': '>f4', 'fortran_order': False, 'shape': (3, 4), }",
              f32, 48, 1);
    write_npy(tmp_path("int.npy"),
              "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }",
              f32, 48, 1);
    write_npy(tmp_path("trunc.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (30, 4), }",
              f32, 48, 1);
    write_npy(tmp_path("empty.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }",
              NULL, 0, 1);
    write_npy(tmp_path("rank1.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (12,), }", f32,
              48, 1);
    write_npy(tmp_path("version.npy"),
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
              f32, 48, 7);
    FILE *f = fopen(tmp_path("magic.npy"), "wb");
    fputs("PK\3\4 this is a zip, not an npy file", f);
    fclose(f);
    f = fopen(tmp_path("zero.npy"), "wb");
    fclose(f);

    static const struct {
        const char *file, *want;
    } bad[] = {
        {"nan.npy", "NaN at [1, 2, 3]"},
        {"inf.npy", "Inf at [1, 1]"},
        {"fortran.npy", "Fortran-order"},
        {"bigend.npy", "big-endian"},
        {"int.npy", "unsupported dtype '<i4'"},
        {"trunc.npy", "truncated"},
        {"empty.npy", "empty array"},
        {"rank1.npy", "expected [T, D] or [N, T, D]"},
        {"version.npy", "unsupported .npy version 7"},
        {"magic.npy", "bad magic"},
        {"zero.npy", "empty file"},
        {"missing.npy", "cannot open"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *e = npy_error(tmp_path(bad[i].file));
        CHECK(strstr(e, bad[i].want) && strstr(e, bad[i].file) &&
                  !strchr(e, '\n'),
              "%s: wanted '%s' naming the file, got '%s'", bad[i].file,
              bad[i].want, e);
        printf("    %-12s -> %s\n", bad[i].file,
               strrchr(e, '/') ? strrchr(e, '/') + 1 : e);
    }
    /* round trip through the writer */
    long shape[3] = {2, 3, 4};
    for (int i = 0; i < 24; i++)
        f32[i] = (float)i;
    CHECK(!frae_npy_write(tmp_path("w.npy"), f32, 3, shape, err, sizeof err),
          "write: %s", err);
    CHECK(!frae_npy_open(tmp_path("w.npy"), &a, err, sizeof err) &&
              ((uintptr_t)a.data & 63) == 0,
          "written file does not reopen aligned: %s", err);
    frae_npy_read(&a, 1, 2, 1, row);
    CHECK(row[3] == 23.0f, "round trip wrong");
    frae_npy_close(&a);
    return failures;
}

static uint64_t rnd64(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

static frae_model *small_model(void)
{
    const int enc[1] = {6}, dec[1] = {7};
    frae_config c;
    tiny_config(&c, 4, 2, 1, enc, 3, 1, dec);
    return create_or_die(&c);
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static unsigned char *slurp(const char *p, long *n)
{
    *n = file_size(p);
    if (*n <= 0) {
        printf("    cannot read %s\n", p);
        exit(1);
    }
    unsigned char *b = malloc((size_t)*n);
    FILE *f = fopen(p, "rb");
    if (fread(b, 1, (size_t)*n, f) != (size_t)*n)
        *n = -1;
    fclose(f);
    return b;
}

static void spit(const char *p, const unsigned char *b, long n)
{
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
}

static const char *ckpt_error(const char *path)
{
    static char err[512];
    err[0] = 0;
    frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
    frae_config c;
    if (ck && frae_checkpoint_config(ck, &c, err, sizeof err) == 0)
        err[0] = 0;
    frae_checkpoint_close(ck);
    return err;
}

/* The level term's and the emphasis's settings (frae.h) go to the
 * checkpoint and back; a model without them records none. */
int test_level_loss_checkpoint(void)
{
    int failures = 0;
    char err[512];
    const int enc[1] = {6}, dec[1] = {7};
    frae_config c;
    tiny_config(&c, 4, 2, 1, enc, 3, 1, dec);
    c.level_loss = 0.25f, c.level_scale = 3.0f;
    c.emphasis = 2.5f, c.emphasis_from = 1, c.emphasis_to = 3;
    frae_model *m = create_or_die(&c);
    char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("level.safetensors"));
    CHECK(!frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    frae_model *back = frae_load(path, NULL, err, sizeof err);
    CHECK(back && frae_get_config(back)->level_loss == 0.25f &&
              frae_get_config(back)->level_scale == 3.0f,
          "the level term's settings back: %s", back ? "other values" : err);
    CHECK(back && frae_get_config(back)->emphasis == 2.5f &&
              frae_get_config(back)->emphasis_from == 1 &&
              frae_get_config(back)->emphasis_to == 3,
          "the emphasis back: %s", back ? "other values" : err);
    frae_destroy(back), frae_destroy(m);
    m = small_model();
    CHECK(!frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    back = frae_load(path, NULL, err, sizeof err);
    CHECK(back && frae_get_config(back)->level_loss == 0.0f &&
              frae_get_config(back)->emphasis == 0.0f,
          "no level term or emphasis: none back (%s)", back ? "some" : err);
    frae_destroy(back), frae_destroy(m);
    return failures;
}

int test_bad_checkpoints(void)
{
    int failures = 0;
    char err[512];
    frae_model *m = small_model();
    char good[256];
    snprintf(good, sizeof good, "%s", tmp_path("good.safetensors"));
    CHECK(!frae_save(m, good, 1, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    CHECK(!*ckpt_error(good), "a good checkpoint fails: %s", ckpt_error(good));
    long n;
    unsigned char *b = slurp(good, &n);

    spit(tmp_path("trunc.safetensors"), b, n - 10);
    spit(tmp_path("trunc_header.safetensors"), b, 20);
    unsigned char *c = malloc((size_t)n);
    memcpy(c, b, (size_t)n);
    c[n - 5] ^= 0x40; /* one bit in the last tensor */
    spit(tmp_path("flip.safetensors"), c, n);
    memcpy(c, b, (size_t)n);
    c[8] = '['; /* the header's opening brace: breaks the JSON */
    spit(tmp_path("json.safetensors"), c, n);
    spit(tmp_path("garbage.safetensors"),
         (const unsigned char *)"\xff\xff\xff\xff\xff\xff\xff\x7f garbage", 17);
    /* foreign: valid safetensors, no frae metadata */
    float w[4] = {1, 2, 3, 4};
    st_out_tensor t = {"weight", ST_F32, 2, {2, 2}, w};
    const char *k1[] = {"format"}, *v1[] = {"pt"};
    frae_st_write(tmp_path("foreign.safetensors"), &t, 1, k1, v1, 1, err,
                  sizeof err);
    /* a newer format version, with a valid checksum */
    const char *k2[] = {"frae.format", "frae.format_version"},
               *v2[] = {"frae-model", "3"};
    frae_st_write(tmp_path("v3.safetensors"), &t, 1, k2, v2, 2, err,
                  sizeof err);
    static const struct {
        const char *file, *want;
    } bad[] = {
        {"trunc.safetensors", "truncated"},
        {"trunc_header.safetensors", "truncated"},
        {"flip.safetensors", "corrupted"},
        {"json.safetensors", "bad safetensors header"},
        {"garbage.safetensors", "not a safetensors file"},
        {"foreign.safetensors", "not a frae checkpoint"},
        {"v3.safetensors", "format version 3"},
        {"nothere.safetensors", "cannot open"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *e = ckpt_error(tmp_path(bad[i].file));
        CHECK(strstr(e, bad[i].want) && strstr(e, bad[i].file) &&
                  !strchr(e, '\n'),
              "%s: wanted '%s', got '%s'", bad[i].file, bad[i].want, e);
        printf("    %-24s -> %s\n", bad[i].file,
               strrchr(e, '/') ? strrchr(e, '/') + 1 : e);
    }
    /* a checkpoint of another architecture does not restore into this one */
    const int enc2[1] = {9}, dec2[1] = {7};
    frae_config c2;
    tiny_config(&c2, 4, 2, 1, enc2, 3, 1, dec2);
    frae_model *other = create_or_die(&c2);
    frae_checkpoint *ck = frae_checkpoint_open(good, err, sizeof err);
    CHECK(ck && frae_checkpoint_restore(ck, other, 1, err, sizeof err) == -1 &&
              strstr(err, "should be"),
          "restoring into another shape: '%s'", err);
    frae_checkpoint_close(ck);
    frae_destroy(other);

    /* mutation fuzz: random byte changes in the header never crash, and
     * a mutant that still opens (whitespace, say) is the same model */
    uint64_t s = 99;
    long hlen = 8 + (long)(b[0] | b[1] << 8);
    int parsed = 0, opened = 0;
    const size_t np = frae_param_count(m);
    float *want = malloc(sizeof(float) * np), *got = malloc(sizeof(float) * np);
    frae_get_params(m, want);
    char mutant[256];
    snprintf(mutant, sizeof mutant, "%s", tmp_path("mutant.safetensors"));
    for (int i = 0; i < 3000; i++) {
        memcpy(c, b, (size_t)n);
        int flips = 1 + (int)(rnd64(&s) % 4);
        for (int k = 0; k < flips; k++)
            c[rnd64(&s) % (uint64_t)hlen] = (unsigned char)rnd64(&s);
        frae_safetensors st;
        if (frae_st_parse(c, (size_t)n, "fuzz", &st, err, sizeof err))
            continue;
        parsed++;
        frae_st_close(&st);
        spit(mutant, c, n);
        frae_config rt = *frae_get_config(m);
        frae_model *back = frae_load(mutant, &rt, err, sizeof err);
        if (!back)
            continue;
        opened++;
        frae_get_params(back, got);
        CHECK(!memcmp(want, got, sizeof(float) * np) &&
                  !memcmp(frae_get_config(back), frae_get_config(m),
                          sizeof(frae_config)),
              "mutation %d opened as a different model", i);
        frae_destroy(back);
    }
    free(want), free(got);
    printf("    3000 header mutations: %d still parse, %d open (whitespace) "
           "and are the same model, none crash\n",
           parsed, opened);
    free(b), free(c);
    frae_destroy(m);
    return failures;
}

#include <dirent.h>

/* Whether dir holds a file whose name starts with prefix. */
static int tmp_exists(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            found = 1;
    if (d)
        closedir(d);
    return found;
}

/* Kill a process while it saves, over and over: the previous checkpoint
 * always opens and verifies. */
int test_atomic_save_under_kill(void)
{
    int failures = 0;
    char err[512];
    char path[256];
    snprintf(path, sizeof path, "%s", tmp_path("killed.safetensors"));
    frae_config c;
    frae_config_default(&c); /* 7 MB with the optimizer: slow enough */
    frae_model *m = create_or_die(&c);
    CHECK(!frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    int killed_mid = 0;
    for (int round = 0; round < 12; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err);
        }
        /* wait for the child to be inside a write (its temp file exists),
         * then kill it a little later: early, midway or at the end */
        for (int w = 0;
             w < 2000 && !tmp_exists(tmpdir, "killed.safetensors.tmp-"); w++) {
            struct timespec ms = {0, 1000000L};
            nanosleep(&ms, NULL);
        }
        struct timespec ts = {0, (long)(round % 4) * 700000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        frae_checkpoint *ck = frae_checkpoint_open(path, err, sizeof err);
        CHECK(ck != NULL, "after a kill in round %d: %s", round, err);
        frae_checkpoint_close(ck);
        /* a leftover temp file means the kill landed inside a write; the
         * next save removes it, since its writer is gone */
        if (tmp_exists(tmpdir, "killed.safetensors.tmp-"))
            killed_mid++;
        CHECK(!frae_save(m, path, 1, NULL, 0, NULL, 0, err, sizeof err), "%s",
              err);
        CHECK(!tmp_exists(tmpdir, "killed.safetensors.tmp-"),
              "round %d: the next save left the killed writer's temporary",
              round);
    }
    printf("    12 kills, %d inside a write: the checkpoint verified every "
           "time, and the next save removed every orphan\n",
           killed_mid);
    CHECK(killed_mid > 0, "no kill landed inside a write: test proved nothing");

    /* a live writer's temporary is not touched */
    char live[300];
    snprintf(live, sizeof live, "%s.tmp-%ld-7", path, (long)getpid());
    FILE *lf = fopen(live, "w");
    if (lf)
        fclose(lf);
    CHECK(!frae_save(m, path, 0, NULL, 0, NULL, 0, err, sizeof err), "%s", err);
    CHECK(access(live, F_OK) == 0, "a save removed a live writer's temporary");
    unlink(live);

    /* new files: 0666 through the umask, as open() makes them; a replaced
     * file keeps its permissions */
    mode_t old_mask = umask(022);
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s", tmp_path("mode.safetensors"));
    struct stat sb;
    CHECK(!frae_save(m, fresh, 0, NULL, 0, NULL, 0, err, sizeof err) &&
              !stat(fresh, &sb) && (sb.st_mode & 0777) == 0644,
          "a new checkpoint is mode %o under umask 022, not 644",
          (unsigned)(sb.st_mode & 0777));
    chmod(fresh, 0600);
    CHECK(!frae_save(m, fresh, 0, NULL, 0, NULL, 0, err, sizeof err) &&
              !stat(fresh, &sb) && (sb.st_mode & 0777) == 0600,
          "a replaced file lost its mode 600 (now %o)",
          (unsigned)(sb.st_mode & 0777));
    umask(old_mask);
    frae_destroy(m);
    return failures;
}
