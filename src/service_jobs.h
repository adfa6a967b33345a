/*-------------------------------------------------------------------------
 *
 * service_jobs.h
 *	  A GPU's job threads (service_jobs.c), as its process's main thread
 *	  (service_unit.c) drives them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_JOBS_H
#define SERVICE_JOBS_H

#include "compat.h"

/*
 * The GPU's pool of engine objects, with one of each kind warmed up, and
 * its page cache; false (gpu_last_error says why) if the GPU fails.
 * Before the threads start.
 */
extern bool service_jobs_warm_up(void);

/* One thread per job slot of the GPU, started once it is ready. */
extern void service_jobs_start(void);

/*
 * Stop the threads: each finishes its engine call and then waits for the
 * process to end.  False if some did not stop within 10 s.
 */
extern bool service_jobs_stop(void);

/* Where the GPU's kernels read shared_buffers, once registered. */
extern void service_jobs_set_buffers(char *on_device);

/* Where a thread that used CUDA ends: it waits for the process to end. */
pg_noreturn extern void service_thread_park(void);

/*
 * Whether a thread met a fault that ends the process (a sticky CUDA error,
 * or an injected exit), and its message.
 */
extern bool service_jobs_fatal(char *message, size_t size);

#endif							/* SERVICE_JOBS_H */
