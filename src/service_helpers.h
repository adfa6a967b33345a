/*-------------------------------------------------------------------------
 *
 * service_helpers.h
 *	  Threads of the GPU service that run pieces of one job at once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_HELPERS_H
#define SERVICE_HELPERS_H

#include "gpu_api.h"

/*
 * A piece of a job, run on some thread of the service: on failure it may
 * leave a message (room for SERVICE_MESSAGE_BYTES), else gpu_last_error's
 * is kept.
 */
typedef GpuStatus (*ServicePiece) (void *arg, char *message);

/* Start n helpers (before the service is ready); how many started. */
extern int	service_helpers_start(int n);

/*
 * Run piece(args[i]) for each of the n (at most SERVICE_MAX_DEVICES) at
 * once, the first on this thread; returns the first failure, its message
 * in message (room for SERVICE_MESSAGE_BYTES).
 */
extern GpuStatus service_helpers_run(ServicePiece piece, void **args, int n, char *message);

#endif							/* SERVICE_HELPERS_H */
