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

/* One thread per job slot of the GPU, started once it is ready. */
extern void service_jobs_start(void);

/*
 * Stop the threads: each finishes its engine call and then waits for the
 * process to end.  False if some did not stop within 10 s.
 */
extern bool service_jobs_stop(void);

/* Where a thread that used CUDA ends: it waits for the process to end. */
pg_noreturn extern void service_thread_park(void);

/*
 * Whether a thread met a fault that ends the process (a sticky CUDA error,
 * or an injected exit), and its message.
 */
extern bool service_jobs_fatal(char *message, size_t size);

#endif							/* SERVICE_JOBS_H */
