/*-------------------------------------------------------------------------
 *
 * service_pool.h
 *	  A GPU's engine objects that its job threads reuse (service_pool.c):
 *	  idle top-k and grouped top-k objects, warmed up at the start, the
 *	  GPU's page cache, and where its kernels read shared_buffers.
 *
 * The pool's functions are called from the job threads (but for
 * service_pool_warm_up): they take a pthread mutex, never PostgreSQL's
 * locks or memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_POOL_H
#define SERVICE_POOL_H

#include "gpu_grouped.h"
#include "gpu_heap.h"
#include "gpu_topk.h"
#include "service_shmem.h"

/*
 * The pool, with one top-k and one grouped top-k object warmed up, and the
 * page cache; false (gpu_last_error says why) if the GPU fails.  In the
 * main thread, before the job threads start.
 */
extern bool service_pool_warm_up(void);

/* A top-k object for a job of spec: a pooled one reset, or a new one. */
extern GpuStatus service_pool_take_topk(const ServiceJobSpec *spec, GpuTopk **out);

/* A grouped top-k object of k per group: a pooled one reset, or a new one. */
extern GpuStatus service_pool_take_grouped(uint64 k, GpuGroupedTopk **out);

/* rows a grouped batch carries: a GroupedKey and a payload word each */
extern size_t service_pool_grouped_batch_rows(void);

/* Objects (either may be NULL) back to the pool; destroyed when not reusable. */
extern void service_pool_put(GpuTopk *topk, GpuGroupedTopk *grouped, bool reusable);

/* Every idle object destroyed, to give its memory back. */
extern void service_pool_drain(void);

/* The GPU's page cache, or NULL. */
extern GpuPageCache *service_pool_page_cache(void);

/* Where the GPU's kernels read shared_buffers, once registered, or NULL. */
extern void service_pool_set_buffers(char *on_device);
extern char *service_pool_buffers(void);

#endif							/* SERVICE_POOL_H */
