/* Replicas as threads of one process (replicas.c): the transport a run
 * uses for frae_run_config.replicas.  Internal to the library. */
#ifndef FRAE_REPLICAS_H
#define FRAE_REPLICAS_H

#include "frae_train.h"

typedef struct frae_thread_group frae_thread_group;
typedef struct frae_thread_rank frae_thread_rank;

/* size threads that sum together (a barrier of size). */
frae_thread_group *frae_thread_group_new(int size);
void frae_thread_group_free(frae_thread_group *g);
/* Thread `rank`'s transport: its sums wait for the other threads'. */
frae_transport frae_thread_transport(frae_thread_group *g, int rank);

#endif
