/* frae models: the shipped models frae finds. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "codec_cli.h"

/* ---- frae models: what is installed ---------------------------------------
 * Each models directory in search order, each checkpoint in it: its name,
 * rate, latency and hash from the file, and what it was trained on from
 * the directory's MANIFEST (tab-separated: file, bytes, sha256, rate,
 * training data; '#' lines are comments). */
static void models_help(void)
{
    cli_printf(
        "usage: frae models\n"
        "example: frae models\n"
        "\n"
        "Lists the shipped models frae finds, in the order it looks\n"
        "(the order frae.models() in Python returns them):\n"
        "$FRAE_MODELS (colon-separated directories; alone when set),\n"
        "else the user's ($XDG_DATA_HOME/frae/models or\n"
        "~/.local/share/frae/models), PREFIX/share/frae/models beside\n"
        "the library and the program ('make install' puts them there;\n"
        "the source tree's models/ for build/frae), the Python\n"
        "package's frae/models ('pip install .'), and this build's\n"
        "PREFIX/share/frae/models.  Every checkpoint of each directory,\n"
        "in name order; a name an earlier directory has already is\n"
        "marked not used.  For each: its name (what\n"
        "'frae encode NAME IN -o OUT.fbs' takes), its rate, its\n"
        "latency, its hash (what a stream names: 'frae decode IN.fbs\n"
        "--wav OUT.wav' with no MODEL finds the model by it) and the\n"
        "data it was trained on.  'frae encode IN -o OUT.fbs' with no\n"
        "MODEL uses '%s'.\n"
        "\n"
        "Exit codes: 0 done (also when none is found), 1 out of "
        "memory, 2 bad "
        "options.\n",
        FRAE_DEFAULT_MODEL);
}

/* the MANIFEST line of file in dir: its rate and data fields */
static int manifest_entry(const char *dir, const char *file, char *rate,
                          size_t rn, char *data, size_t dn)
{
    char path[2 * PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/MANIFEST", dir) >= sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[2048];
    int found = -1, cut = 0; /* cut: inside a line too long to read */
    while (found && fgets(line, sizeof line, f)) {
        const int whole = strchr(line, '\n') != NULL;
        const int skip = cut || line[0] == '#' || !whole;
        cut = !whole;
        if (skip)
            continue; /* a comment, or (any part of) a line too long */
        line[strcspn(line, "\r\n")] = 0;
        char *field[5];
        int n = 0;
        for (char *p = line; n < 5; n++) {
            field[n] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                n++;
                break;
            }
            *tab = 0;
            p = tab + 1;
        }
        if (n == 5 && !strcmp(field[0], file)) {
            snprintf(rate, rn, "%s", field[3]);
            snprintf(data, dn, "%s", field[4]);
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* frae_models_each's walk, printed: a directory's name before its first
 * file, then each file's lines */
struct listing {
    char dir[PATH_MAX]; /* the directory last printed */
    int listed;
};

static int list_one(const char *dir, const char *name, const char *path,
                    int used, void *ctx)
{
    struct listing *l = ctx;
    if (strcmp(l->dir, dir)) {
        snprintf(l->dir, sizeof l->dir, "%s", dir);
        cli_printf("%s:\n", dir);
    }
    l->listed++;
    if (!used) {
        cli_printf("  %-14s not used: %s\n", name,
                   access(path, R_OK) ? "the file cannot be read"
                                      : "an earlier directory has this name");
        return 0;
    }
    frae_model *m = load_inference(path, FRAE_ISA_AUTO);
    if (!m) { /* load_inference said why on stderr */
        cli_printf("  %-14s does not load (stderr says why)\n", name);
        return 0;
    }
    const frae_config *c = frae_get_config(m);
    char rate[256] = "", data[2048] = "";
    manifest_entry(dir, path + strlen(dir) + 1, rate, sizeof rate, data,
                   sizeof data);
    const double bits = frae_bits_per_frame(m);
    /* MANIFEST's rate says "variable, about ...": said once here */
    const char *vr = strncmp(rate, "variable, ", 10) ? rate : rate + 10;
    const int code_bits = frae_code_bits(frae_model_net(m));
    if (c->prior_hidden > 0)
        cli_printf("  %-14s variable rate%s%s: %d codes of %d bit%s "
                   "range-coded under a learned prior%s\n",
                   name, vr[0] ? ", " : "", vr, c->latent_dim, code_bits,
                   code_bits == 1 ? "" : "s", c->pitch ? ", pitch" : "");
    else
        cli_printf("  %-14s %.2f kbit/s fixed: %g bits a frame "
                   "(%d codes of %d bit%s%s)\n",
                   name, bits * 100 / 1000, bits, c->latent_dim, code_bits,
                   code_bits == 1 ? "" : "s",
                   c->pitch ? " + 4 pitch bits" : "");
    frae_features f; /* the model's own, else the defaults it would take */
    frae_features_default(&f);
    if (cli_model_features(path, &f) >= 0) {
        const int delay = frae_lookahead_delay(c);
        const double ms = 1000.0 / f.sample_rate, hop = f.hop * ms,
                     total = frae_speech_latency(&f, delay) * ms,
                     polish = FRAE_POLISH_DELAY(&f) * ms;
        cli_printf("                 latency %g ms (%g ms frames; the f0 "
                   "window's %g ms ahead, ",
                   total, hop, total - hop * (1 + delay) - polish);
        if (delay > 0)
            cli_printf("the encoder's look-ahead %g, ", hop * delay);
        cli_printf("the vocoder's %g, its polish %g)%s\n", hop, polish,
                   c->prior_hidden > 0 ? " + the packet (--packet-ms)" : "");
    } else { /* cli_model_features said why on stderr */
        cli_printf("                 latency unknown: its audio feature "
                   "metadata is bad (stderr says why)\n");
    }
    cli_printf("                 hash %016llx, %s weights%s\n",
               (unsigned long long)frae_model_hash(frae_model_net(m)),
               c->weights == FRAE_WEIGHTS_BF16 ? "bf16" : "f32",
               !strcmp(name, FRAE_DEFAULT_MODEL)
                   ? "; the default for 'frae encode IN -o OUT'"
                   : "");
    cli_printf("                 trained on: %s\n",
               data[0] ? data : "(not in the directory's MANIFEST)");
    frae_destroy(m);
    return 0;
}

int cmd_models(int argc, char **argv)
{
    cli_cmd = "frae models";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            models_help();
            return EXIT_OK;
        }
        return cli_fail(EXIT_USAGE,
                        "unexpected argument '%s' (see 'frae "
                        "models --help')",
                        argv[i]);
    }
    struct listing l = {{0}, 0};
    if (frae_models_each(list_one, &l) < 0)
        return cli_fail(EXIT_FAILED, "out of memory listing the models");
    if (!l.listed)
        cli_printf("no shipped models found (FRAE_MODELS, "
                   "~/.local/share/frae/models, PREFIX/share/frae/models, or "
                   "the source tree's models/: 'make models' builds them)\n");
    return EXIT_OK;
}
