/*
 * bench/register_bench.cu: how fast a shared memory region like PostgreSQL's
 * shared_buffers (MAP_SHARED | MAP_ANONYMOUS, pages not touched yet) can be
 * registered with CUDA, and how long another thread's copies wait meanwhile
 * (src/service_buffers.c; docs/gpu-service.md).
 *
 * For each way, a fresh region of GB gigabytes: its pages populated first or
 * not (madvise MADV_POPULATE_WRITE in 16 threads), then registered in one
 * cudaHostRegister call or in chunks with a 0.1 ms pause between them.  A
 * second thread copies 1 MB from pinned memory to the GPU in a loop all the
 * while; the longest copy is what a job of the GPU service would wait.
 *
 *   nvcc -O2 -arch=sm_90 -o register_bench bench/register_bench.cu && ./register_bench [GB]
 * (bench/start_bench builds and runs it.)
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define CHECK(call) \
	do { \
		cudaError_t err_ = (call); \
		if (err_ != cudaSuccess) \
		{ \
			fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_)); \
			exit(1); \
		} \
	} while (0)

static double
now_ms()
{
	timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* the copying thread and what it saw */
static std::atomic<bool> stop_copies;
static std::atomic<long> copies;
static double longest_copy_ms;

static void *
copy_loop(void *)
{
	void	   *device;
	void	   *host;
	cudaStream_t stream;

	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&device, 1 << 20));
	CHECK(cudaMallocHost(&host, 1 << 20));
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	while (!stop_copies.load())
	{
		double		began = now_ms();

		CHECK(cudaMemcpyAsync(device, host, 1 << 20, cudaMemcpyHostToDevice, stream));
		CHECK(cudaStreamSynchronize(stream));
		if (copies.load() > 0 && now_ms() - began > longest_copy_ms)
			longest_copy_ms = now_ms() - began;
		copies++;
	}
	return NULL;
}

struct Range
{
	char	   *start;
	size_t		bytes;
};

static void *
populate_range(void *arg)
{
	Range	   *r = (Range *) arg;

	if (madvise(r->start, r->bytes, MADV_POPULATE_WRITE) != 0)
		perror("madvise(MADV_POPULATE_WRITE)");
	return NULL;
}

static void
populate(char *start, size_t bytes, int nthreads)
{
	pthread_t	threads[64];
	Range		ranges[64];
	size_t		share = ((bytes / nthreads) + 4095) & ~(size_t) 4095;

	for (int i = 0; i < nthreads; i++)
	{
		size_t		offset = i * share < bytes ? i * share : bytes;

		ranges[i].start = start + offset;
		ranges[i].bytes = bytes - offset < share ? bytes - offset : share;
		pthread_create(&threads[i], NULL, populate_range, &ranges[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
}

int
main(int argc, char **argv)
{
	size_t		gb = argc > 1 ? strtoul(argv[1], NULL, 10) : 40;
	size_t		bytes = gb << 30;
	struct
	{
		const char *name;
		bool		populated;
		size_t		chunk;
	}			ways[] = {
		{"one call", false, 0},
		{"64 MB chunks", false, 64UL << 20},
		{"populated, one call", true, 0},
		{"populated, 1 GB chunks", true, 1UL << 30},
		{"populated, 64 MB chunks", true, 64UL << 20},
	};

	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(0));
	printf("| way (%zu GB, not touched before) | populate ms | register ms | 1 MB copies meanwhile | longest copy ms |\n", gb);
	printf("| --- | --- | --- | --- | --- |\n");
	for (const auto &way : ways)
	{
		char	   *region = (char *) mmap(NULL, bytes, PROT_READ | PROT_WRITE,
										   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		size_t		chunk = way.chunk ? way.chunk : bytes;
		pthread_t	copier;
		double		began;
		double		populated;
		double		registered;

		if (region == MAP_FAILED)
		{
			perror("mmap");
			return 1;
		}
		stop_copies = false;
		copies = 0;
		longest_copy_ms = 0;
		pthread_create(&copier, NULL, copy_loop, NULL);
		while (copies.load() == 0)
			usleep(1000);
		began = now_ms();
		if (way.populated)
			populate(region, bytes, 16);
		populated = now_ms();
		for (size_t offset = 0; offset < bytes; offset += chunk)
		{
			void	   *on_device;

			CHECK(cudaHostRegister(region + offset, chunk, cudaHostRegisterPortable | cudaHostRegisterMapped));
			CHECK(cudaHostGetDevicePointer(&on_device, region + offset, 0));
			if (on_device != region + offset)
				printf("(a chunk's device address differs from its host address)\n");
			if (way.chunk)
				usleep(100);
		}
		registered = now_ms();
		stop_copies = true;
		pthread_join(copier, NULL);
		printf("| %s | %.0f | %.0f | %ld | %.1f |\n", way.name, populated - began,
			   registered - populated, copies.load(), longest_copy_ms);
		fflush(stdout);
		for (size_t offset = 0; offset < bytes; offset += chunk)
			CHECK(cudaHostUnregister(region + offset));
		munmap(region, bytes);
	}
	return 0;
}
