/* frae models: the shipped models frae finds. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli/codec_cli.h"

/* ---- frae models: what is installed ---------------------------------------
 * Each models directory in search order, each checkpoint in it: its name,
 * rate, latency and hash from the file, and what it was trained on from
 * the directory's MANIFEST (tab-separated: file, bytes, sha256, rate,
 * training data; '#' lines are comments). */
static void models_help(void)
{
    cli_printf("usage: frae models\n"
               "example: frae models\n"
               "\n"
               "Lists the shipped models frae finds, in the order it looks:\n"
               "$FRAE_MODELS (colon-separated directories; alone when set),\n"
               "else PREFIX/share/frae/models beside the program and the\n"
               "library ('make install' puts them there) and the source\n"
               "tree's models/ (for build/frae).  For each: its name (what\n"
               "'frae encode NAME IN -o OUT.fbs' takes), its rate, its\n"
               "latency, its hash (what a stream names: 'frae decode IN.fbs\n"
               "--wav OUT.wav' with no MODEL finds the model by it) and the\n"
               "data it was trained on.  'frae encode IN -o OUT.fbs' with no\n"
               "MODEL uses '%s'.\n"
               "\n"
               "Exit codes: 0 done (also when none is found), 2 bad "
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
    char dir[PATH_MAX];
    int listed = 0;
    for (int i = 0; frae_models_dir(i, dir, sizeof dir) == 0; i++) {
        char names[64][FRAE_MODEL_NAME_MAX];
        const int n = frae_models_dir_list(dir, names, 64);
        if (n)
            cli_printf("%s:\n", dir);
        for (int j = 0; j < n; j++) {
            char path[2 * PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[j]) >=
                sizeof path)
                continue;
            frae_model *m = load_inference(path, FRAE_ISA_AUTO);
            if (!m)
                continue; /* load_inference said why */
            const frae_config *c = frae_get_config(m);
            char rate[256] = "", data[1024] = "";
            manifest_entry(dir, names[j], rate, sizeof rate, data, sizeof data);
            names[j][strlen(names[j]) - 12] = 0;
            const double bits = frae_bits_per_frame(m);
            /* MANIFEST's rate says "variable, about ...": said once here */
            const char *vr = strncmp(rate, "variable, ", 10) ? rate : rate + 10;
            if (c->prior_hidden > 0)
                cli_printf("  %-12s variable rate%s%s: %d codes of %d bit%s "
                           "range-coded under a learned prior%s\n",
                           names[j], vr[0] ? ", " : "", vr, c->latent_dim,
                           frae_code_bits(frae_model_net(m)),
                           frae_code_bits(frae_model_net(m)) == 1 ? "" : "s",
                           c->pitch ? ", pitch" : "");
            else
                cli_printf("  %-12s %.2f kbit/s fixed: %g bits a frame "
                           "(%d codes of %d bit%s%s)\n",
                           names[j], bits * 100 / 1000, bits, c->latent_dim,
                           frae_code_bits(frae_model_net(m)),
                           frae_code_bits(frae_model_net(m)) == 1 ? "" : "s",
                           c->pitch ? " + 4 pitch bits" : "");
            cli_printf("               latency 30 ms (10 ms frames; the f0 "
                       "window's 20 ms ahead, the vocoder's 10)%s\n",
                       c->prior_hidden > 0 ? " + the packet (--packet-ms)"
                                           : "");
            cli_printf("               hash %016llx, %s weights%s\n",
                       (unsigned long long)frae_model_hash(frae_model_net(m)),
                       c->weights == FRAE_WEIGHTS_BF16 ? "bf16" : "f32",
                       !strcmp(names[j], FRAE_DEFAULT_MODEL)
                           ? "; the default for 'frae encode IN -o OUT'"
                           : "");
            cli_printf("               trained on: %s\n",
                       data[0] ? data : "(not in the directory's MANIFEST)");
            frae_destroy(m);
            listed++;
        }
    }
    if (!listed)
        cli_printf("no shipped models found (FRAE_MODELS, "
                   "PREFIX/share/frae/models, or the source tree's models/: "
                   "'make models' builds them)\n");
    return EXIT_OK;
}
