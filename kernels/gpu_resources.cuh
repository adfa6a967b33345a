/*
 * gpu_resources.cuh
 *	  What the engine's objects (GpuTopk, GpuGroupedTopk, GpuGroups,
 *	  GpuHeapReader) own on the device and how they make and free it:
 *	  device buffers that only grow, pairs of events that time work, and
 *	  the object itself.
 *
 * Objects are value-initialized when made (their plain members zeroed),
 * so that freeing works on a half-made one:
 * every free here accepts what was never made.  Callers free only what no
 * queued work uses any more (they wait for their streams first).
 */
#ifndef GPU_RESOURCES_CUH
#define GPU_RESOURCES_CUH

#include <new>

#include "gpu_error.h"

/* device memory that only grows, and is kept from run to run */
struct DevBuf
{
	void	   *ptr;
	size_t		bytes;
};

static inline void
devbuf_free(DevBuf *b)
{
	if (b->ptr)
		cudaFree(b->ptr);
	b->ptr = NULL;
	b->bytes = 0;
}

/*
 * At least bytes in b; when it must grow, slack bytes more.  The contents
 * are lost then: growing frees first, so that the old and the new buffer
 * never need room at once.
 */
static inline GpuStatus
devbuf_reserve(DevBuf *b, size_t bytes, size_t slack)
{
	void	   *ptr = NULL;

	if (bytes <= b->bytes)
		return GPU_OK;
	devbuf_free(b);
	GPU_CHECK(cudaMalloc(&ptr, bytes + slack), "Allocating device memory");
	b->ptr = ptr;
	b->bytes = bytes + slack;
	return GPU_OK;
}

/*
 * Two events recorded around work on a stream: its device time, and its
 * end for the host or another stream to wait for.
 */
struct Span
{
	cudaEvent_t begun;
	cudaEvent_t ended;
};

static inline GpuStatus
span_create(Span *s)
{
	GPU_CHECK(cudaEventCreate(&s->begun), "Creating an event");
	GPU_CHECK(cudaEventCreate(&s->ended), "Creating an event");
	return GPU_OK;
}

static inline void
span_destroy(Span *s)
{
	if (s->begun)
		cudaEventDestroy(s->begun);
	if (s->ended)
		cudaEventDestroy(s->ended);
	s->begun = NULL;
	s->ended = NULL;
}

/* The device time of a span whose end has been reached, added to *ms. */
static inline GpuStatus
span_add_ms(const Span *s, double *ms)
{
	float		elapsed = 0;

	GPU_CHECK(cudaEventElapsedTime(&elapsed, s->begun, s->ended), "Timing the device");
	*ms += elapsed;
	return GPU_OK;
}

static inline void
pinned_free(void *ptr)
{
	if (ptr)
		cudaFreeHost(ptr);
}

/* Queued work may still use what the object owns: wait for it first. */
static inline void
stream_drain(cudaStream_t stream)
{
	if (stream)
		cudaStreamSynchronize(stream);
}

static inline void
stream_destroy(cudaStream_t stream)
{
	if (stream)
		cudaStreamDestroy(stream);
}

/*
 * A new object: value-initialized, given its parameters and resources by
 * setup(t), and handed to destroy again if that fails (what is the action
 * that failing to allocate the object itself is reported as).  destroy
 * deletes it.
 */
template <typename T, typename Setup>
static GpuStatus
object_create(const char *what, Setup setup, void (*destroy)(T *), T **out)
{
	T		   *t = new(std::nothrow) T();
	GpuStatus	status;

	*out = NULL;
	if (t == NULL)
		return gpu_fail(cudaErrorMemoryAllocation, what);
	status = setup(t);
	if (status != GPU_OK)
	{
		destroy(t);
		return status;
	}
	*out = t;
	return GPU_OK;
}

#endif							/* GPU_RESOURCES_CUH */
