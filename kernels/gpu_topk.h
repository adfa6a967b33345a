/*
 * gpu_topk.h
 *	  The C interface of the GPU top-k backend.
 *
 * Same contract as the CPU backend (kernels/cpu_topk.h): keys in batches, each
 * given the next row ordinal as its reference, and the k largest back in
 * descending order.  Keys come from host memory (streamed: page-locked
 * buffers give full speed) or are already in device memory.  Like the rest
 * of kernels/, no PostgreSQL headers and GpuStatus results.
 */
#ifndef GPU_TOPK_H
#define GPU_TOPK_H

#include "gpu_api.h"
#include "topk.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct GpuTopk GpuTopk;

typedef enum GpuTopkAlgorithm
{
	GPU_TOPK_AUTO,				/* chosen by the cost model */
	GPU_TOPK_BITONIC,			/* TOPK_EXACT answers up to k = 256; ties are
								 * then collected by a second pass */
	GPU_TOPK_RADIX				/* any k */
} GpuTopkAlgorithm;

/*
 * How a top-k over device-resident keys runs: the algorithm, and whether
 * delegates (the maxima of subranges of 2^log_subrange keys) filter the
 * input first (log_subrange > 0).
 */
typedef struct GpuTopkPlan
{
	GpuTopkAlgorithm algorithm;
	int			log_subrange;
} GpuTopkPlan;

/*
 * The cost model: the time of each algorithm is linear in the work it does
 * (SIGMOD'18 section 7: bytes over bandwidth, per step), with coefficients
 * fitted by least squares to runs timed on each device on its first use in
 * a process (devices below GPU_MAX_DEVICES; threads that need it meanwhile
 * wait).  For n keys and a top k, in seconds:
 *	 radix		a + b n + e k (the input read twice; the answer)
 *	 bitonic	a + b n, one line per log2 of k (shared-memory steps per key)
 *	 delegates	a + b n + c m + d g + e p (radix behind delegates: the pass
 *				over n keys, the top-k of m delegates, g keys read from the
 *				subranges of Dr. Top-k's size they select, and the top-k of
 *				the p of those that pass, about k * -ln(1 - k/m) / (k/m) on
 *				data in no adversarial order)
 * For delegates only a and e are fitted: b and d are the bytes of a key
 * over the bandwidth measured for the delegate pass, and c is radix's b.
 * Bitonic behind delegates shares the delegates' line.
 *
 * Below a millisecond the lines miss by up to a third: there the time is
 * kernel launches and latency, not work.  So each plan's line is also
 * timed at a grid of n and k (gpu_topk_correction_log_n x
 * gpu_topk_correction_log_k) and multiplied by the ratio measured / line
 * there, interpolated in log n and log k and held constant beyond the grid.
 * [w] is 0 for 4-byte and 1 for 8-byte keys.
 */
#define GPU_TOPK_CORRECTION_N 4
#define GPU_TOPK_CORRECTION_K 6

typedef enum GpuTopkFamily
{
	GPU_TOPK_FAMILY_RADIX,
	GPU_TOPK_FAMILY_RADIX_DELEGATES,
	GPU_TOPK_FAMILY_BITONIC,
	GPU_TOPK_FAMILY_BITONIC_DELEGATES,
	GPU_TOPK_FAMILIES
} GpuTopkFamily;

typedef struct GpuTopkCalibration
{
	double		read_bytes_per_s;	/* the delegate pass */
	double		copy_bytes_per_s;	/* host to device, page-locked */
	double		launch_s;		/* one kernel in a sequence */
	double		radix[2][5];	/* a, b, c, d, e (c, d unused) */
	double		delegates[2][5];
	double		bitonic[2][9][2];	/* by log2 k: a, b */
	/* measured / line; 0 where the plan does not run (see plan_applies) */
	double		correction[2][GPU_TOPK_FAMILIES][GPU_TOPK_CORRECTION_N][GPU_TOPK_CORRECTION_K];
} GpuTopkCalibration;

/*
 * The current device's parameters, measured now if they are not yet.  The
 * measurement takes the device for a while and is skewed by other work on
 * it: a process that runs top-ks in several threads (the GPU service) asks
 * for each device's calibration before it takes work.  gpu_topk_choose,
 * gpu_topk_estimate and selections with GPU_TOPK_AUTO use the current
 * device's too.
 */
extern GpuStatus gpu_topk_calibration(GpuTopkCalibration *cal);

/* The plan the cost model picks, and its predicted time in seconds. */
extern GpuStatus gpu_topk_choose(size_t n, uint64_t k, int key_width,
								 TopkMode mode, GpuTopkPlan *plan,
								 double *seconds);
extern GpuStatus gpu_topk_estimate(size_t n, uint64_t k, int key_width,
								   TopkMode mode, GpuTopkPlan plan,
								   double *seconds);

/*
 * An object belongs to the device current when it is created (its streams
 * and memory are there): use it with that device current, from one thread
 * at a time.
 */
extern GpuStatus gpu_topk_create(int key_width, uint64_t k, TopkMode mode,
								 GpuTopk **out);
/* NULL is fine; waits for queued work. */
extern void gpu_topk_destroy(GpuTopk *t);

/*
 * A new top-k in t, as gpu_topk_create would make it (automatic algorithm,
 * default stream batch, no answer), keeping t's device memory (for a pool
 * of objects).  Waits for queued work first: a streamed run in progress is
 * abandoned, and the caller's buffers are free when it returns.
 */
extern GpuStatus gpu_topk_reset(GpuTopk *t, int key_width, uint64_t k,
								TopkMode mode);

/*
 * Top-k of n keys in device memory (16-byte aligned), replacing anything
 * pushed before; plan may force an algorithm, and used (if not NULL) gets
 * the plan that ran.  Returns when the answer is on the device.
 */
extern GpuStatus gpu_topk_device(GpuTopk *t, const void *dev_keys, size_t n,
								 const GpuTopkPlan *plan, GpuTopkPlan *used);

/*
 * The algorithm of the selections a streamed run makes (GPU_TOPK_AUTO, the
 * default: the cost model's).  Bitonic falls back to radix above its k.
 */
extern void gpu_topk_set_algorithm(GpuTopk *t, GpuTopkAlgorithm algorithm);

/*
 * Keys per batch of the streamed runs that follow (1 to 2^28; 2^23 until
 * set), between runs only: pushes of more keys are split into batches.  It
 * sizes a run's device memory, 3 batches plus a candidate set of
 * 2 x (k + max(4 batches, 2^22 keys)) keys with their 8-byte references,
 * and a quarter more: for 8-byte keys and a small k, about 1.5 GiB at the
 * default and 190 MiB at 2^20.  Memory only grows, until the object is
 * destroyed.
 */
extern GpuStatus gpu_topk_set_stream_batch(GpuTopk *t, size_t keys);

/* The plan of the last selection; GPU_TOPK_AUTO before any. */
extern GpuTopkPlan gpu_topk_last_plan(const GpuTopk *t);

/*
 * The device time of the last streamed run, in ms, once its result is
 * back: its copies to the device and its kernels, each summed over batches.
 */
extern void gpu_topk_stream_times(const GpuTopk *t, double *copy_ms, double *kernel_ms);

/*
 * Add n keys from host memory.  Copies run asynchronously: the memory must
 * stay unchanged until gpu_topk_wait_input or gpu_topk_result returns.
 * After gpu_topk_result, the next push starts a new top-k (references from
 * 0 again) in the same object, reusing its memory.
 */
extern GpuStatus gpu_topk_push(GpuTopk *t, const void *host_keys, size_t n);
extern GpuStatus gpu_topk_wait_input(GpuTopk *t);

/*
 * Add n keys already in device memory, each with its own reference, to a
 * streamed run (which need not have host batches).  Returns once they have
 * been read: the caller may then reuse that memory.
 */
extern GpuStatus gpu_topk_push_device(GpuTopk *t, const void *dev_keys,
									  const uint64_t *dev_refs, size_t n);

/* The answer, sorted, in host memory owned by t. */
extern GpuStatus gpu_topk_result(GpuTopk *t, TopkResult *result);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_TOPK_H */
