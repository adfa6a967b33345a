/*
 * bench_lib.cu
 *	  Helpers for bench/gpu_bench.py, linked with the engine into
 *	  bench/libgputopk_bench.so: key encoding on the device, CUB's radix
 *	  sort of (key, position) pairs as the sort-everything baseline, and the
 *	  engine's runs timed from C, as the extension calls it.
 */
#include <chrono>
#include <vector>
#include <algorithm>

#include <cub/device/device_radix_sort.cuh>

#include "gpu_error.h"
#include "gpu_topk.h"
#include "keys.h"

template <typename V, typename K>
__global__ void
encode(const V *values, K *keys, size_t n)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		if (sizeof(K) == 4)
			keys[i] = (K) key_from_float4((float) values[i], true);
		else
			keys[i] = (K) key_from_int64((int64_t) values[i], true);
	}
}

/* DESC keys of float4 values */
extern "C" GpuStatus
bench_encode_float4(const float *values, uint32_t *keys, size_t n)
{
	encode<float, uint32_t><<<4096, 256>>>(values, keys, n);
	GPU_CHECK(cudaDeviceSynchronize(), "Encoding float4 keys");
	return GPU_OK;
}

/* DESC keys of int8 values */
extern "C" GpuStatus
bench_encode_int8(const int64_t *values, uint64_t *keys, size_t n)
{
	encode<int64_t, uint64_t><<<4096, 256>>>(values, keys, n);
	GPU_CHECK(cudaDeviceSynchronize(), "Encoding int8 keys");
	return GPU_OK;
}

__global__ void
positions(uint32_t *pos, size_t n)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		pos[i] = (uint32_t) i;
}

/*
 * Median seconds of reps calls of run (after one to warm up), by the host
 * clock around each; run returns when its work on the device is done.
 */
template <typename F>
static GpuStatus
median_seconds(int reps, F run, double *median_s)
{
	std::vector<double> times;

	for (int r = 0; r <= reps; r++)
	{
		auto		start = std::chrono::steady_clock::now();
		GpuStatus	status = run();

		if (status != GPU_OK)
			return status;
		if (r > 0)
			times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
	}
	std::sort(times.begin(), times.end());
	*median_s = times[times.size() / 2];
	return GPU_OK;
}

template <typename K>
static GpuStatus
cub_sort(const K *keys, size_t n, int reps, double *median_s)
{
	K		   *keys_out = NULL;
	uint32_t   *pos_in = NULL;
	uint32_t   *pos_out = NULL;
	void	   *temp = NULL;
	size_t		temp_bytes = 0;
	GpuStatus	status = GPU_OK;
	cudaError_t err;

	cub::DeviceRadixSort::SortPairsDescending(NULL, temp_bytes, keys, keys_out, pos_in, pos_out, n);
	if ((err = cudaMalloc(&keys_out, n * sizeof(K))) != cudaSuccess ||
		(err = cudaMalloc(&pos_in, n * sizeof(uint32_t))) != cudaSuccess ||
		(err = cudaMalloc(&pos_out, n * sizeof(uint32_t))) != cudaSuccess ||
		(err = cudaMalloc(&temp, temp_bytes)) != cudaSuccess)
		status = gpu_fail(err, "Allocating memory for CUB's sort");
	if (status == GPU_OK)
		status = median_seconds(reps, [&] {
			positions<<<4096, 256>>>(pos_in, n);
			cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, keys, keys_out,
													  pos_in, pos_out, n);
			GPU_CHECK(cudaDeviceSynchronize(), "Running CUB's sort");
			return GPU_OK;
		}, median_s);
	cudaFree(keys_out);
	cudaFree(pos_in);
	cudaFree(pos_out);
	cudaFree(temp);
	return status;
}

/* median seconds of reps sorts of n keys with their positions, descending */
extern "C" GpuStatus
bench_cub_sort(const void *keys, size_t n, int key_width, int reps, double *median_s)
{
	if (key_width == 4)
		return cub_sort<uint32_t>((const uint32_t *) keys, n, reps, median_s);
	return cub_sort<uint64_t>((const uint64_t *) keys, n, reps, median_s);
}

/* median seconds of reps top-k runs of a plan over n keys in device memory */
extern "C" GpuStatus
bench_time_topk(GpuTopk *t, const void *keys, size_t n, const GpuTopkPlan *plan,
				int reps, double *median_s)
{
	return median_seconds(reps, [&] {
		return gpu_topk_device(t, keys, n, plan, NULL);
	}, median_s);
}
