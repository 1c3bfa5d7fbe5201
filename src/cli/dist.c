/* Data-parallel training in the frae command: what is left of it outside
 * the library.  The replicas, their rank-order sums and the run's
 * agreements are libfrae's (src/train/run.c, src/train/replicas.c); frae-mpi plugs
 * MPI in as the run's transport (dist_mpi.c).  Here: a rank alone, the
 * command's own agreement before a run starts, and the faults the tests
 * inject (FRAE_FAULT). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_dist_solo(cli_dist *d)
{
    memset(d, 0, sizeof *d);
    d->size = 1;
}

int cli_dist_sum(cli_dist *d, double *x, size_t n)
{
    if (d->size == 1)
        return 0;
    return d->transport.sum_f64(d->transport.ctx, x, n);
}

void cli_fault_setup(cli_fault *f)
{
    const char *v = getenv("FRAE_FAULT");
    char kind[8];
    int rank;
    long at;
    memset(f, 0, sizeof *f);
    if (v && sscanf(v, "%7[a-z]@%d:%ld", kind, &rank, &at) == 3) {
        memcpy(f->kind, kind, sizeof kind);
        f->rank = rank;
        f->at = at;
    }
}

void cli_fault_fire(const cli_fault *f)
{
    if (!strcmp(f->kind, "exit"))
        _exit(3); /* a rank that dies without a word */
    if (!strcmp(f->kind, "kill"))
        raise(SIGKILL);
    if (!strcmp(f->kind, "hang"))
        for (;;)
            pause();
}
