/*
 * bench/fault_isolation.cu: whether a sticky fault on one GPU leaves the
 * process's other GPUs usable, and whether the faulted GPU can be reset
 * and used again in the process (docs/gpu-service.md, "Faults and
 * restarts": why the GPU service runs a process per GPU).
 *
 * Host memory is registered (portable, mapped) in one of three ways: with
 * GPU 0 current, with GPU 1 current, or in a context of its own on GPU 0
 * (driver API).  Both GPUs then copy it and read it in a kernel; a kernel
 * traps on GPU 1; GPU 0 is used again, GPU 1 is reset (cudaDeviceReset),
 * and both are used again.  Each CUDA call's result is printed.
 *
 *   nvcc -O2 -arch=sm_90 -o fault_isolation bench/fault_isolation.cu -lcuda &&
 *   for way in 0 1 2; do ./fault_isolation $way; done
 *
 * On 2 H100s (CUDA 13.0, 2026-11-27), in every way: after the trap, GPU 0's
 * calls (from the same thread) failed with cudaErrorLaunchFailure too,
 * before and after GPU 1's reset, and GPU 1 answered
 * cudaErrorDevicesUnavailable after its reset.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW(call) \
	printf("  %-58s %s\n", #call, cudaGetErrorName(call))

static const size_t n = 1 << 20;
static unsigned *host;

__global__ static void
trap_kernel(void)
{
	asm volatile("trap;");
}

__global__ static void
read_kernel(const unsigned *p, size_t count, unsigned *sum)
{
	unsigned	s = 0;

	for (size_t i = threadIdx.x; i < count; i += blockDim.x)
		s += p[i];
	atomicAdd(sum, s);
}

/* Copy the registered memory to the GPU and read it in place there. */
static void
use(int device, const char *when)
{
	unsigned   *copy = NULL;
	unsigned   *sum = NULL;
	unsigned   *mapped = NULL;

	printf("[%s] GPU %d\n", when, device);
	SHOW(cudaSetDevice(device));
	SHOW(cudaMalloc(&copy, n * sizeof(unsigned)));
	SHOW(cudaMemcpy(copy, host, n * sizeof(unsigned), cudaMemcpyHostToDevice));
	SHOW(cudaHostGetDevicePointer((void **) &mapped, host, 0));
	SHOW(cudaMalloc(&sum, sizeof(unsigned)));
	read_kernel<<<1, 256>>>(mapped, n, sum);
	SHOW(cudaDeviceSynchronize());
	cudaFree(copy);
	cudaFree(sum);
}

int
main(int argc, char **argv)
{
	int			way = argc > 1 ? atoi(argv[1]) : 0;

	printf("=== host memory registered %s\n",
		   way == 0 ? "with GPU 0 current" : way == 1 ? "with GPU 1 current" :
		   "in a context of its own on GPU 0");
	host = (unsigned *) aligned_alloc(4096, n * sizeof(unsigned));
	memset(host, 1, n * sizeof(unsigned));
	for (int device = 0; device < 2; device++)
	{
		cudaSetDevice(device);
		cudaFree(0);
	}
	if (way < 2)
	{
		SHOW(cudaSetDevice(way));
		SHOW(cudaHostRegister(host, n * sizeof(unsigned),
							  cudaHostRegisterPortable | cudaHostRegisterMapped));
	}
	else
	{
		CUdevice	device;
		CUcontext	context;
		CUcontext	popped;

		cuInit(0);
		cuDeviceGet(&device, 0);
		printf("  cuCtxCreate: %d\n", (int) cuCtxCreate(&context, NULL, 0, device));
		printf("  cuMemHostRegister: %d\n",
			   (int) cuMemHostRegister(host, n * sizeof(unsigned),
									   CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
		cuCtxPopCurrent(&popped);
	}
	use(0, "before");
	use(1, "before");
	printf("a kernel traps on GPU 1\n");
	SHOW(cudaSetDevice(1));
	trap_kernel<<<1, 1>>>();
	SHOW(cudaDeviceSynchronize());
	use(0, "after the trap");
	printf("GPU 1 reset\n");
	SHOW(cudaSetDevice(1));
	SHOW(cudaDeviceReset());
	use(0, "after GPU 1's reset");
	use(1, "after its reset");
	return 0;
}
