/*
 * gpu_topk.h
 *	  The C interface of the GPU top-k backend.
 *
 * Same contract as the CPU backend (src/cpu_topk.h): keys in batches, each
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
 * The device's speeds, measured once per process on first use: the cost
 * model's parameters.
 */
typedef struct GpuTopkCalibration
{
	double		read_bytes_per_s;	/* streaming reads of device memory */
	double		copy_bytes_per_s;	/* host to device, page-locked */
	double		launch_s;		/* one kernel in a sequence */
	double		bitonic_s_per_key[9];	/* SortReducer per key, by log2 kp */
} GpuTopkCalibration;

extern GpuStatus gpu_topk_calibration(GpuTopkCalibration *cal);

/* The plan the cost model picks, and its predicted time in seconds. */
extern GpuStatus gpu_topk_choose(size_t n, uint64_t k, int key_width,
								 TopkMode mode, GpuTopkPlan *plan,
								 double *seconds);
extern GpuStatus gpu_topk_estimate(size_t n, uint64_t k, int key_width,
								   TopkMode mode, GpuTopkPlan plan,
								   double *seconds);

extern GpuStatus gpu_topk_create(int key_width, uint64_t k, TopkMode mode,
								 GpuTopk **out);
extern void gpu_topk_destroy(GpuTopk *t);

/*
 * Top-k of n keys in device memory (16-byte aligned), replacing anything
 * pushed before; plan may force an algorithm, and used (if not NULL) gets
 * the plan that ran.  Returns when the answer is on the device.
 */
extern GpuStatus gpu_topk_device(GpuTopk *t, const void *dev_keys, size_t n,
								 const GpuTopkPlan *plan, GpuTopkPlan *used);

/*
 * Add n keys from host memory.  Copies run asynchronously: the memory must
 * stay unchanged until gpu_topk_wait_input or gpu_topk_result returns.
 * After gpu_topk_result, the next push starts a new top-k (references from
 * 0 again) in the same object, reusing its memory.
 */
extern GpuStatus gpu_topk_push(GpuTopk *t, const void *host_keys, size_t n);
extern GpuStatus gpu_topk_wait_input(GpuTopk *t);

/* The answer, sorted, in host memory owned by t. */
extern GpuStatus gpu_topk_result(GpuTopk *t, TopkResult *result);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_TOPK_H */
