/*
 * gpu_grouped.h
 *	  The C interface of the GPU's grouped top-k, for GROUP BY queries.
 *
 * Rows come in batches from host memory, each with its group (a 64-bit
 * word: equal words form a group), its key (larger is better) and a payload
 * word that comes back with it.  The answer holds, for every group, its k
 * best rows and every further row tied with the k-th of them.  Like the
 * rest of kernels/, no PostgreSQL headers and GpuStatus results.
 */
#ifndef GPU_GROUPED_H
#define GPU_GROUPED_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_api.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * A row of a grouped top-k: its group (any 64-bit word; rows with equal
 * words form a group) and its key (larger is better).
 */
typedef struct GroupedKey
{
	uint64_t	group;
	uint64_t	key;
} GroupedKey;

typedef struct GpuGroupedTopk GpuGroupedTopk;

/*
 * k >= 1; batch_cap: the most rows one push may carry.  Like a GpuTopk,
 * the object belongs to the device current when it is created.
 */
extern GpuStatus gpu_grouped_create(uint64_t k, size_t batch_cap, GpuGroupedTopk **out);

/* NULL is fine; waits for queued work. */
extern void gpu_grouped_destroy(GpuGroupedTopk *t);

/*
 * A new grouped top-k of k >= 1 in t, as gpu_grouped_create(k, its batch
 * capacity) would make it, keeping t's memory (for a pool of objects).
 * Waits for queued work first: a run in progress is abandoned, and the
 * caller's buffers are free when it returns.
 */
extern GpuStatus gpu_grouped_reset(GpuGroupedTopk *t, uint64_t k);

/*
 * Add n <= batch_cap rows from host memory: keys[i] with payloads[i] (a
 * word returned with the row).  Asynchronous, like gpu_topk_push: both
 * arrays must stay unchanged until gpu_grouped_wait_input or
 * gpu_grouped_result returns.
 */
extern GpuStatus gpu_grouped_push(GpuGroupedTopk *t, const GroupedKey *keys,
								  const uint64_t *payloads, size_t n);
extern GpuStatus gpu_grouped_wait_input(GpuGroupedTopk *t);

/*
 * The candidates of all rows pushed since create (or the last result): for
 * every group, its k best rows plus every further row whose key equals the
 * k-th best key of that group (rows of one group adjacent, best first;
 * groups in any order).  In host memory owned by t, valid until t is used
 * again or destroyed.  After this, the next push starts a new run reusing
 * memory.
 */
extern GpuStatus gpu_grouped_result(GpuGroupedTopk *t, const GroupedKey **keys,
									const uint64_t **payloads, size_t *count);

/*
 * Device time of the last run once its result is back, in ms: copies to the
 * device, and kernels (sorts and compactions), each summed.
 */
extern void gpu_grouped_times(const GpuGroupedTopk *t, double *copy_ms, double *kernel_ms);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_GROUPED_H */
