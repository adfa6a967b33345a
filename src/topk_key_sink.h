/*-------------------------------------------------------------------------
 *
 * topk_key_sink.h
 *	  The keys of one top-k, handed in batches to the CPU backend or to a
 *	  job of the GPU service.
 *
 * A caller adds one key per row (see keys.h), in row order, and asks for
 * the answer once: the k largest keys with their ordinals.  The backend is
 * the one gputopk.device chooses: on the GPU, batches are written straight
 * into the job's staging buffers in shared memory, one filled while the
 * GPU copies the other (service_client.h).  Everything is freed with the
 * memory context that was current at topk_key_sink_create, errors included.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_KEY_SINK_H
#define TOPK_KEY_SINK_H

#include "device.h"
#include "gpu_topk.h"
#include "scan_gpu_stats.h"
#include "topk.h"

typedef struct KeySink
{
	int			key_width;		/* 4 or 8 */
	TopkBackend backend;		/* BACKEND_CPU or BACKEND_GPU */
	void	   *batch;			/* the batch being filled */
	size_t		nbatch;
	size_t		batch_cap;

	/* private to topk_key_sink.c */
	struct CpuTopk *cpu;
	ServiceJob *job;
	MemoryContextCallback callback;
} KeySink;

/* gpu_allowed: false keeps the keys on the CPU backend whatever gputopk.device says */
extern KeySink *topk_key_sink_create(int key_width, uint64 k, TopkMode mode,
									 GpuTopkAlgorithm algorithm, bool gpu_allowed);
extern void topk_key_sink_flush(KeySink *sink);

/*
 * Whether the GPU failed the sink's job (under auto: service_client.h): the
 * keys handed to it are lost, and its answer is empty.
 */
extern bool topk_key_sink_failed(KeySink *sink);

/*
 * The answer, in the current memory context; on the GPU, what the job did
 * is added to *gpu and the algorithm it ran last is set (NULL on the CPU).
 */
extern void topk_key_sink_result(KeySink *sink, TopkResult *result, ScanGpuStats *gpu,
								 const char **algorithm);

static inline void
topk_key_sink_add(KeySink *sink, uint64 key)
{
	if (sink->key_width == 4)
		((uint32 *) sink->batch)[sink->nbatch] = (uint32) key;
	else
		((uint64 *) sink->batch)[sink->nbatch] = key;
	if (++sink->nbatch == sink->batch_cap)
		topk_key_sink_flush(sink);
}

#endif							/* TOPK_KEY_SINK_H */
