/*
 * gpu_topk_plan.cu
 *	  The GPU top-k engine's plans on the current device: the cost model
 *	  (gpu_topk_cost.cu) with the device's calibration, for estimates, the
 *	  best plan, and selections from device memory whose plan is left to it.
 *
 * These are the C entry points that need the current device's model: its
 * first use measures it (gpu_topk_calibrate.cu).  A plan chosen or forced
 * here runs through gpu_topk.cu; streamed runs choose their compactions'
 * plans themselves (gpu_topk_stream.cu).
 */
#include <stdint.h>

#include "gpu_topk_internal.cuh"

extern "C" GpuStatus
gpu_topk_device(GpuTopk *t, const void *dev_keys, size_t n, const GpuTopkPlan *plan,
				GpuTopkPlan *used)
{
	GpuTopkPlan p;
	const GpuTopkCalibration *cal;

	if (n >= UINT32_MAX || ((uintptr_t) dev_keys & 15) != 0 || t->streaming)
		return gpu_fail(cudaErrorInvalidValue,
						"Selecting from device memory (at most 2^32 - 2 keys, 16-byte aligned, not while streaming)");
	if (plan && plan->algorithm != GPU_TOPK_AUTO)
		p = *plan;
	else
	{
		GPU_TRY(current_calibration(&cal));
		p = best_plan(cal, n, t->k, t->key_width, t->mode, true, NULL);
	}
	return run_device_plan(t, dev_keys, n, p, used);
}

extern "C" GpuStatus
gpu_topk_estimate(size_t n, uint64_t k, int key_width, TopkMode mode,
				  GpuTopkPlan plan, double *seconds)
{
	const GpuTopkCalibration *cal;

	GPU_TRY(current_calibration(&cal));
	plan.algorithm = valid_algorithm(plan.algorithm, k);
	*seconds = plan_cost(cal, n, k, key_width, mode, plan);
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_choose(size_t n, uint64_t k, int key_width, TopkMode mode,
				GpuTopkPlan *plan, double *seconds)
{
	const GpuTopkCalibration *cal;

	GPU_TRY(current_calibration(&cal));
	*plan = best_plan(cal, n, k, key_width, mode, true, seconds);
	return GPU_OK;
}
