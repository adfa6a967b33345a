/*
 * gpu_error.h
 *	  Turning a CUDA error into a GpuStatus, inside kernels/ only.
 */
#ifndef GPU_ERROR_H
#define GPU_ERROR_H

#include <cuda_runtime.h>

#include "gpu_api.h"

/* Classify err and remember "<action> failed: <CUDA's message>." */
extern GpuStatus gpu_fail(cudaError_t err, const char *action);

#define GPU_CHECK(call, action) \
	do { \
		cudaError_t err_ = (call); \
		if (err_ != cudaSuccess) \
			return gpu_fail(err_, (action)); \
	} while (0)

#endif							/* GPU_ERROR_H */
