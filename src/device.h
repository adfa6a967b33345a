/*-------------------------------------------------------------------------
 *
 * device.h
 *	  Where top-k work runs, and GPU resources owned by memory contexts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef DEVICE_H
#define DEVICE_H

#include "portability/instr_time.h"

#include "gpu_api.h"

typedef enum TopkBackend
{
	BACKEND_CPU,
	BACKEND_GPU,
	BACKEND_NONE				/* the GPU is demanded but none is usable */
} TopkBackend;

/* The error when the GPU is demanded and none is usable (SET or first use). */
#define DEVICE_NO_GPU_MESSAGE "no GPU is usable for gputopk.device = gpu"
#define DEVICE_NO_GPU_HINT \
	"Set gputopk.device to \"auto\" to use the CPU backend when there is no GPU."

/*
 * Device memory, or a pinned host buffer from the backend's pool, released
 * when its owning memory context is reset or deleted (errors included) or
 * earlier by device_buffer_release.
 */
typedef struct DeviceBuffer
{
	void	   *ptr;			/* NULL once released */
	size_t		size;
	int			pool_slot;		/* pinned pool slot, or -1 for device memory */
	MemoryContextCallback callback;
} DeviceBuffer;

/* Probing the GPU; these never throw. */
extern bool device_gpu_usable(void);
extern int	device_gpu_ordinal(void);
extern const char *device_gpu_absent_reason(void);
extern TopkBackend device_selected_backend(void);

/* The backend for a piece of work; errors when the GPU is demanded and absent. */
extern TopkBackend device_choose_backend(void);

extern const char *device_backend_name(TopkBackend backend);
extern void device_check(GpuStatus status, const char *action);
extern void device_check_timed(GpuStatus status, instr_time start, double *wait_ms,
							   const char *action);
extern DeviceBuffer *device_alloc(MemoryContext owner, size_t size);
extern DeviceBuffer *device_pinned_acquire(MemoryContext owner, size_t size);
extern void device_buffer_release(DeviceBuffer *buf);

#endif							/* DEVICE_H */
