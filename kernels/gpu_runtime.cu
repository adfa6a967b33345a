/*
 * gpu_runtime.cu
 *	  Devices, memory, streams and error reporting for gputopk's CUDA code.
 *
 * Thin wrappers over the CUDA runtime that classify every failure into a
 * GpuStatus and remember CUDA's message for it, per thread: in the GPU
 * service several threads run the engine at once, each reporting its own
 * failures.  The runtime is linked statically; the driver (libcuda.so.1)
 * is loaded by it on first use.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime.h>

#include "gpu_api.h"
#include "gpu_error.h"

/* the calling thread's last failure, as gpu_last_error returns it */
static thread_local char last_error[512];

GpuStatus
gpu_fail(cudaError_t err, const char *action)
{
	snprintf(last_error, sizeof(last_error), "%s failed: %s (%s).",
			 action, cudaGetErrorString(err), cudaGetErrorName(err));
	/* clear a non-sticky error so that later calls do not report it */
	(void) cudaGetLastError();

	switch (err)
	{
		case cudaErrorMemoryAllocation:
			return GPU_OUT_OF_MEMORY;
		case cudaErrorInsufficientDriver:
		case cudaErrorCallRequiresNewerDriver:
			return GPU_NO_DRIVER;
		case cudaErrorNoDevice:
		case cudaErrorInvalidDevice:
		case cudaErrorDevicesUnavailable:
			return GPU_NO_DEVICE;
		case cudaErrorNoKernelImageForDevice:
		case cudaErrorUnsupportedPtxVersion:
		case cudaErrorInvalidKernelImage:
			return GPU_UNSUPPORTED_DEVICE;
			/*
			 * Sticky errors: a kernel that faulted, a trap instruction
			 * among them (gpu_inject_device_fault: cudaErrorLaunchFailure,
			 * cudaErrorIllegalInstruction or cudaErrorAssert, by driver).
			 */
		case cudaErrorIllegalAddress:
		case cudaErrorLaunchFailure:
		case cudaErrorLaunchTimeout:
		case cudaErrorHardwareStackError:
		case cudaErrorIllegalInstruction:
		case cudaErrorMisalignedAddress:
		case cudaErrorInvalidAddressSpace:
		case cudaErrorInvalidPc:
		case cudaErrorAssert:
		case cudaErrorECCUncorrectable:
			return GPU_DEVICE_LOST;
		default:
			return GPU_FAILED;
	}
}

const char *
gpu_build_description(void)
{
	/* per thread: threads that ask at once must not write one buffer */
	static thread_local char desc[128];

	snprintf(desc, sizeof(desc), "CUDA %d.%d, kernels for sm_80 sm_90",
			 CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
	return desc;
}

/* The status of a CUDA call that is a whole entry point. */
static GpuStatus
checked(cudaError_t err, const char *action)
{
	return err == cudaSuccess ? GPU_OK : gpu_fail(err, action);
}

const char *
gpu_last_error(void)
{
	return last_error;
}

GpuStatus
gpu_device_count(int *count)
{
	*count = 0;

	/*
	 * Without a driver the runtime only says it is "insufficient"; load it
	 * ourselves first to tell a missing driver apart from an old one.
	 */
	if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == NULL)
	{
		snprintf(last_error, sizeof(last_error),
				 "The CUDA driver could not be loaded: %s.", dlerror());
		return GPU_NO_DRIVER;
	}
	GPU_CHECK(cudaGetDeviceCount(count), "Counting CUDA devices");
	return GPU_OK;
}

GpuStatus
gpu_device_info(int device, GpuDeviceInfo *info)
{
	cudaDeviceProp prop;

	GPU_CHECK(cudaGetDeviceProperties(&prop, device), "Reading device properties");
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->memory_bytes = prop.totalGlobalMem;
	info->multiprocessors = prop.multiProcessorCount;
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->l2_cache_bytes = prop.l2CacheSize;
	info->shared_memory_per_block = (int) prop.sharedMemPerBlockOptin;
	return GPU_OK;
}

__global__ static void
self_test_kernel(unsigned int *out, int n)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = 3u * (unsigned int) i + 1u;
}

GpuStatus
gpu_device_open(int device)
{
	const int	n = 4096;
	unsigned int *dev = NULL;
	unsigned int *host = NULL;
	GpuStatus	status = GPU_OK;
	cudaError_t err;

	GPU_CHECK(cudaSetDevice(device), "Selecting the CUDA device");
	GPU_CHECK(cudaFree(0), "Creating the CUDA context");

	/* run a kernel and copy its output back through pinned memory */
	if ((err = cudaMalloc(&dev, n * sizeof(*dev))) != cudaSuccess)
		return gpu_fail(err, "Allocating device memory for the self-test");
	if ((err = cudaMallocHost(&host, n * sizeof(*host))) != cudaSuccess)
		status = gpu_fail(err, "Allocating pinned memory for the self-test");
	else
	{
		self_test_kernel<<<(n + 255) / 256, 256>>>(dev, n);
		if ((err = cudaGetLastError()) != cudaSuccess)
			status = gpu_fail(err, "Launching the self-test kernel");
		else if ((err = cudaMemcpy(host, dev, n * sizeof(*host),
								   cudaMemcpyDeviceToHost)) != cudaSuccess)
			status = gpu_fail(err, "Running the self-test kernel");
		else
		{
			for (int i = 0; i < n; i++)
			{
				if (host[i] != 3u * (unsigned int) i + 1u)
				{
					snprintf(last_error, sizeof(last_error),
							 "The self-test kernel computed a wrong value at %d.", i);
					status = GPU_FAILED;
					break;
				}
			}
		}
		cudaFreeHost(host);
	}
	cudaFree(dev);
	return status;
}

GpuStatus
gpu_set_device(int device)
{
	return checked(cudaSetDevice(device), "Selecting the CUDA device");
}

GpuStatus
gpu_device_memory(size_t *free_bytes, size_t *total_bytes)
{
	return checked(cudaMemGetInfo(free_bytes, total_bytes),
				   "Reading the device's free memory");
}

GpuStatus
gpu_device_alloc(size_t size, void **ptr)
{
	return checked(cudaMalloc(ptr, size), "Allocating device memory");
}

GpuStatus
gpu_device_free(void *ptr)
{
	return checked(cudaFree(ptr), "Freeing device memory");
}

GpuStatus
gpu_host_alloc(size_t size, void **ptr)
{
	return checked(cudaHostAlloc(ptr, size, cudaHostAllocDefault),
				   "Allocating pinned host memory");
}

GpuStatus
gpu_host_free(void *ptr)
{
	return checked(cudaFreeHost(ptr), "Freeing pinned host memory");
}

/*
 * Portable: page-locked for every device's context, not only the current
 * one; mapped: kernels can read it.
 */
GpuStatus
gpu_host_register(void *ptr, size_t size)
{
	return checked(cudaHostRegister(ptr, size, cudaHostRegisterPortable | cudaHostRegisterMapped),
				   "Page-locking host memory");
}

GpuStatus
gpu_host_device_pointer(void *ptr, char **device_ptr)
{
	return checked(cudaHostGetDevicePointer((void **) device_ptr, ptr, 0),
				   "Mapping page-locked host memory for the device");
}

GpuStatus
gpu_host_unregister(void *ptr)
{
	return checked(cudaHostUnregister(ptr), "Unlocking page-locked host memory");
}

GpuStatus
gpu_copy_to_device(void *dst, const void *src, size_t size, GpuStream stream)
{
	return checked(cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, stream),
				   "Copying to the device");
}

GpuStatus
gpu_synchronize(void)
{
	return checked(cudaDeviceSynchronize(), "Waiting for the GPU");
}

__global__ static void
trap_kernel(void)
{
	asm volatile("trap;");
}

/*
 * The trap aborts the kernel and leaves the context unusable, as a real
 * device fault would; it runs on the legacy default stream, which the
 * engine's streams (non-blocking) do not wait for or hold up.
 */
GpuStatus
gpu_inject_device_fault(void)
{
	cudaError_t err;

	trap_kernel<<<1, 1>>>();
	if ((err = cudaGetLastError()) != cudaSuccess)
		return gpu_fail(err, "Launching the fault-injection kernel");
	if ((err = cudaStreamSynchronize(0)) != cudaSuccess)
		return gpu_fail(err, "Running the fault-injection kernel");
	snprintf(last_error, sizeof(last_error),
			 "The fault-injection kernel ran to its end without a fault.");
	return GPU_FAILED;
}
