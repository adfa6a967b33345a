/*-------------------------------------------------------------------------
 *
 * agg_sink.h
 *	  The rows of one grouped top-k, handed in batches to a job of the GPU
 *	  service.
 *
 * A caller adds one row at a time (its group's word, its key, a payload
 * word) and asks for the answer once: for every group its k best rows and
 * those tied with the k-th (gpu_grouped.h).  Rows are written straight
 * into the job's staging buffers in shared memory, one filled while the
 * GPU copies the other (service_client.h).  The job goes with the memory
 * context that was current at agg_sink_create, errors included.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_SINK_H
#define AGG_SINK_H

#include "device.h"
#include "gpu_grouped.h"
#include "scan_gpu_stats.h"

typedef struct GroupSink
{
	GroupedKey *keys;			/* the batch being filled */
	uint64	   *payloads;		/* in the same buffer, after the keys */
	size_t		nbatch;
	size_t		batch_cap;
	ServiceJob *job;
} GroupSink;

/*
 * A sink on a new GPU job, or NULL when the GPU is not at hand or every job
 * slot is taken (device_start_job without waiting for a slot).
 */
extern GroupSink *agg_sink_create(uint64 k);
extern void agg_sink_flush(GroupSink *sink);

/*
 * Whether the GPU failed the sink's job (under auto: service_client.h): the
 * rows handed to it are lost, and its answer is empty.
 */
extern bool agg_sink_failed(GroupSink *sink);

/*
 * The candidates, grouped, in the current memory context; what the job
 * did is added to *gpu, and the job is released.
 */
extern void agg_sink_result(GroupSink *sink, GroupedKey **keys, uint64 **payloads,
							size_t *count, ScanGpuStats *gpu);

/* Give the job back unfinished. */
extern void agg_sink_release(GroupSink *sink);

static inline void
agg_sink_add(GroupSink *sink, uint64 group, uint64 key, uint64 payload)
{
	sink->keys[sink->nbatch].group = group;
	sink->keys[sink->nbatch].key = key;
	sink->payloads[sink->nbatch] = payload;
	if (++sink->nbatch == sink->batch_cap)
		agg_sink_flush(sink);
}

#endif							/* AGG_SINK_H */
