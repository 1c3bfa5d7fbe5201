/* frae: the command-line tool.  One file per group of commands. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void print_help(void)
{
    cli_printf(
        "frae %s: Feedback Recurrent AutoEncoders\n"
        "\n"
        "usage: frae <command> [options]\n"
        "\n"
        "commands:\n"
        "  train     train an FRAE on .npy data or the built-in data\n"
        "  predict   reconstruct sequences with a trained model\n"
        "  info      describe a checkpoint\n"
        "  import    make a checkpoint from PyTorch or Keras weights\n"
        "  convert   store a model's weights as bf16 (or f32) for inference\n"
        "  encode    compress frames into a .fbs bitstream\n"
        "  decode    rebuild frames (and audio) from a .fbs bitstream\n"
        "  features  log-mel features (and pitch) of an audio file\n"
        "  vocode    features with pitch back to audio (the vocoder)\n"
        "  models    the shipped models: rate, latency, training data\n"
        "  help      this help; 'frae help <command>' (or 'frae <command>\n"
        "            --help') for one command's options and an example\n"
        "\n"
        "Exit codes: 0 success; 1 a run failed (diverged, or a file could\n"
        "not be written); 2 bad usage or input (options, data files,\n"
        "checkpoints); 130 interrupted by Ctrl-C after saving.\n",
        FRAE_VERSION_STRING);
}

#ifndef FRAE_MPI
/* Under mpirun with more than one rank (Open MPI's, MPICH's or a PMI
 * launcher's variables), each copy of this build would train alone and
 * write the same checkpoint: data-parallel training is frae-mpi's. */
static int launched_by_mpirun(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "PMIX_SIZE"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            return 1;
    }
    return 0;
}

/* Runs frae-mpi from this command's directory with the same arguments. */
static int run_mpi_build(char **argv)
{
    char self[PATH_MAX], path[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(path, sizeof path, "%s/frae-mpi", self);
            execv(path, argv);
        }
    }
    return cli_fail(EXIT_USAGE,
                    "launched by mpirun, but this frae was built without MPI "
                    "and no frae-mpi is beside it: install Open MPI "
                    "(WITH_MPI=1 scripts/install-deps.sh) and run 'make mpi'");
}
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help();
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    static char help_arg[] = "--help";
    if (!strcmp(cmd, "help") && argc > 2) {
        /* frae help CMD: CMD's own --help */
        static const char *const cmds[] = {
            "train",  "predict", "info",     "import", "convert",
            "encode", "decode",  "features", "vocode", "models"};
        for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
            if (!strcmp(argv[2], cmds[i])) {
                cmd = cmds[i];
                argc = 3;
                argv[2] = help_arg;
                break;
            }
        if (strcmp(cmd, "help"))
            goto dispatch;
        return cli_fail(EXIT_USAGE,
                        "help: unknown command '%s' (see 'frae "
                        "help')",
                        argv[2]);
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        print_help();
        return EXIT_OK;
    }
dispatch:
    if (!strcmp(cmd, "--version")) {
        cli_printf("frae %s\n", FRAE_VERSION_STRING);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "train")) {
#ifndef FRAE_MPI
        if (launched_by_mpirun())
            return run_mpi_build(argv);
#endif
        return cmd_train(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "predict"))
        return cmd_predict(argc - 2, argv + 2);
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "import"))
        return cmd_import(argc - 2, argv + 2);
    if (!strcmp(cmd, "convert"))
        return cmd_convert(argc - 2, argv + 2);
    if (!strcmp(cmd, "encode"))
        return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(cmd, "decode"))
        return cmd_decode(argc - 2, argv + 2);
    if (!strcmp(cmd, "vocode"))
        return cmd_vocode(argc - 2, argv + 2);
    if (!strcmp(cmd, "models"))
        return cmd_models(argc - 2, argv + 2);
    if (!strcmp(cmd, "features"))
        return cmd_features(argc - 2, argv + 2);
    return cli_fail(EXIT_USAGE, "unknown command '%s' (see 'frae --help')",
                    cmd);
}
