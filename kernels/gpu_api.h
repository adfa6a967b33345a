/*-------------------------------------------------------------------------
 *
 * gpu_api.h
 *	  The C interface of gputopk's CUDA code.
 *
 * Everything under kernels/ is CUDA C++ that includes no PostgreSQL header
 * and never throws: each entry point returns a GpuStatus and keeps CUDA's
 * own message for the last failure (gpu_last_error).  Only the GPU service
 * calls them (src/service_*.c); it hands failures to the backends, where
 * src/service_client.c turns them into ereports.  A build without nvcc
 * links src/gpu_absent.c in place of the CUDA objects; it answers
 * GPU_NOT_BUILT to everything.
 *
 * Entry points may be called from several threads at once, each thread
 * with its own current device and its own last error; an engine object
 * (gpu_topk.h, gpu_grouped.h) is used by one thread at a time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPU_API_H
#define GPU_API_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef enum GpuStatus
{
	GPU_OK = 0,
	GPU_NOT_BUILT,				/* this build of gputopk has no CUDA code */
	GPU_NO_DRIVER,				/* the CUDA driver is missing or too old */
	GPU_NO_DEVICE,				/* the driver sees no device */
	GPU_UNSUPPORTED_DEVICE,		/* none of our kernel images runs on it */
	GPU_OUT_OF_MEMORY,			/* device or pinned host memory exhausted */
	GPU_DEVICE_LOST,			/* a sticky error: the context is unusable */
	GPU_FAILED					/* any other CUDA error */
} GpuStatus;

/* A CUDA stream; the same type as cudaStream_t, without CUDA's headers. */
typedef struct CUstream_st *GpuStream;

typedef struct GpuDeviceInfo
{
	char		name[256];
	size_t		memory_bytes;
	int			multiprocessors;
	int			cc_major;		/* compute capability */
	int			cc_minor;
	int			l2_cache_bytes;
	int			shared_memory_per_block;	/* opt-in maximum */
} GpuDeviceInfo;

/* Return a failed call's GpuStatus from the calling function (which returns one). */
#define GPU_TRY(call) \
	do { \
		GpuStatus status_ = (call); \
		if (status_ != GPU_OK) \
			return status_; \
	} while (0)

/* Lowest compute capability our kernel images run on (sm_80 SASS). */
#define GPU_MIN_CC_MAJOR 8

/* Devices the engine serves: ordinals 0 to GPU_MAX_DEVICES - 1. */
#define GPU_MAX_DEVICES 16

/* What this build carries: CUDA runtime version and kernel targets. */
extern const char *gpu_build_description(void);

/* CUDA's message for the calling thread's last failure, as one sentence. */
extern const char *gpu_last_error(void);

extern GpuStatus gpu_device_count(int *count);
extern GpuStatus gpu_device_info(int device, GpuDeviceInfo *info);

/*
 * Make the device current, create its context and run a small self-test
 * kernel, so that a device our kernels cannot run on is refused here.
 */
extern GpuStatus gpu_device_open(int device);

/* Make the device current for the calling thread (cudaSetDevice). */
extern GpuStatus gpu_set_device(int device);

/* Free and total memory of the current device, in bytes. */
extern GpuStatus gpu_device_memory(size_t *free_bytes, size_t *total_bytes);

extern GpuStatus gpu_device_alloc(size_t size, void **ptr);
extern GpuStatus gpu_device_free(void *ptr);
extern GpuStatus gpu_host_alloc(size_t size, void **ptr);
extern GpuStatus gpu_host_free(void *ptr);

/*
 * Page-lock size bytes of existing host memory at ptr (shared memory, say)
 * for every device, so that copies from it run at full speed and kernels
 * can read it in place; unregister with the same ptr before the memory
 * goes away.
 */
extern GpuStatus gpu_host_register(void *ptr, size_t size);
extern GpuStatus gpu_host_unregister(void *ptr);

/* Where kernels on the current device read registered host memory at ptr. */
extern GpuStatus gpu_host_device_pointer(void *ptr, char **device_ptr);

extern GpuStatus gpu_copy_to_device(void *dst, const void *src, size_t size,
									GpuStream stream);
/* Waits for all work on the current device, uninterruptibly. */
extern GpuStatus gpu_synchronize(void);

/*
 * For fault-injection tests only: run a kernel that executes a trap
 * instruction on the current device and wait for it.  Returns
 * GPU_DEVICE_LOST: the device's context stays unusable in this process
 * (GPU_FAILED should the kernel, against expectation, run to its end).
 */
extern GpuStatus gpu_inject_device_fault(void);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_API_H */
