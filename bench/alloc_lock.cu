/*
 * bench/alloc_lock.cu: how many small selection-like jobs a second the
 * threads of one process run on one GPU and on two, with each job's device
 * memory taken from the pool and given back (cudaMallocAsync and
 * cudaFreeAsync, 8 of each, as a column index selection did) or kept by
 * the thread from job to job (kernels/gpu_index.cuh, scratch_part).
 *
 * A job: a query copied to the device, a kernel, its count copied back and
 * waited for, 4 kernels and a one-thread kernel, a copy back and a wait, 4
 * kernels, a copy back and a wait, on the thread's default stream; with
 * grid 1 (one block of 256 threads, the host's calls dominate) and grid
 * 1056 (8 blocks per multiprocessor, the GPU dominates).  Each number is
 * the jobs done in 1.5 s.  With arguments DEVICES THREADS KEPT GRID, one
 * such run of 3 s (two processes side by side, each with
 * CUDA_VISIBLE_DEVICES set, show what a process per GPU would get).
 *
 *   nvcc -O2 -std=c++17 -arch=sm_90 -o alloc_lock bench/alloc_lock.cu && ./alloc_lock
 *
 * On 2 H200s (CUDA 13.0, 2026-11-27, 0f82d1e), grid 1: with the memory
 * taken and given back, 9,400-13,100 jobs a second on one GPU from 2 to 32
 * threads, and no more on two GPUs in one process (9,000-13,200 from 4
 * threads), but 9,600 and 10,300 in two processes side by side; with it
 * kept, 39,300 on one GPU and 72,900 on two at 16 threads.  So
 * cudaMallocAsync and cudaFreeAsync hold a lock of the process.  With grid
 * 1056 the GPU bounds both: 950-1,130 jobs a second a GPU.
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

static __global__ void
small_kernel(unsigned long long *count, const int *query, int n)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		atomicAdd(count, (unsigned long long) query[0] + i);
}

static __global__ void
one_thread(unsigned int *out, const unsigned long long *count)
{
	*out = (unsigned int) *count;
}

static std::atomic<bool> stop;

/* Jobs on device until stop, their memory kept or not; how many into *done. */
static void
worker(int device, bool kept, int grid, long *done)
{
	cudaStream_t s = cudaStreamPerThread;
	int			query = 7;
	unsigned long long count;
	unsigned int out;
	void	   *own[8];
	long		n = 0;

	cudaSetDevice(device);
	for (int i = 0; i < 8; i++)
		cudaMalloc(&own[i], 1 << 20);
	while (!stop.load(std::memory_order_relaxed))
	{
		void	   *p[8];

		for (int i = 0; i < 8; i++)
			if (kept)
				p[i] = own[i];
			else
				cudaMallocAsync(&p[i], 4096 + i * 1024, s);
		cudaMemcpyAsync(p[0], &query, sizeof(query), cudaMemcpyHostToDevice, s);
		cudaMemsetAsync(p[1], 0, sizeof(count), s);
		small_kernel<<<grid, 256, 0, s>>>((unsigned long long *) p[1], (int *) p[0], grid * 256);
		cudaMemcpyAsync(&count, p[1], sizeof(count), cudaMemcpyDeviceToHost, s);
		cudaStreamSynchronize(s);
		for (int k = 0; k < 4; k++)
			small_kernel<<<grid, 256, 0, s>>>((unsigned long long *) p[1], (int *) p[0], grid * 256);
		one_thread<<<1, 1, 0, s>>>((unsigned int *) p[2], (unsigned long long *) p[1]);
		cudaMemcpyAsync(&out, p[2], sizeof(out), cudaMemcpyDeviceToHost, s);
		cudaStreamSynchronize(s);
		for (int k = 0; k < 4; k++)
			small_kernel<<<grid, 256, 0, s>>>((unsigned long long *) p[1], (int *) p[0], grid * 256);
		cudaMemcpyAsync(&count, p[1], sizeof(count), cudaMemcpyDeviceToHost, s);
		cudaStreamSynchronize(s);
		if (!kept)
		{
			for (int i = 0; i < 8; i++)
				cudaFreeAsync(p[i], s);
			cudaStreamSynchronize(s);
		}
		n++;
	}
	*done = n;
}

/* Jobs a second of threads over devices GPUs for ms milliseconds. */
static double
run(int devices, int threads, bool kept, int grid, int ms)
{
	std::vector<std::thread> running;
	std::vector<long> done(threads);
	long		sum = 0;

	stop = false;
	for (int t = 0; t < threads; t++)
		running.emplace_back(worker, t % devices, kept, grid, &done[t]);
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	stop = true;
	for (auto &t : running)
		t.join();
	for (long d : done)
		sum += d;
	return sum * 1000.0 / ms;
}

int
main(int argc, char **argv)
{
	int			ndevices;

	cudaGetDeviceCount(&ndevices);
	if (argc == 5)
	{
		printf("devices %s threads %s kept %s grid %s: %.0f jobs/s\n", argv[1], argv[2], argv[3],
			   argv[4], run(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]) != 0, atoi(argv[4]), 3000));
		return 0;
	}
	for (int grid : {1, 132 * 8})
		for (bool kept : {false, true})
			for (int devices = 1; devices <= (ndevices > 1 ? 2 : 1); devices++)
				for (int threads : {1, 2, 4, 8, 16, 32})
					printf("grid %4d %-11s GPUs %d threads %2d: %8.0f jobs/s\n", grid,
						   kept ? "kept" : "mallocAsync", devices, threads,
						   run(devices, threads, kept, grid, 1500));
	return 0;
}
