/*-------------------------------------------------------------------------
 *
 * agg_group_sink.h
 *	  The rows of one grouped top-k on the GPU, handed over in batches.
 *
 * A caller adds one row at a time (its group's word, its key, a payload
 * word) and asks for the answer once: for every group its k best rows and
 * those tied with the k-th (gpu_grouped.h).  Batches go through a double
 * buffer (scan_double_buffer.h), one filled while the other is copied.
 * Everything is freed with the memory context that was current at
 * group_sink_create, errors included.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_GROUP_SINK_H
#define AGG_GROUP_SINK_H

#include "device.h"
#include "gpu_grouped.h"
#include "scan_double_buffer.h"
#include "scan_gpu_stats.h"

typedef struct GroupSink
{
	GroupedKey *keys;			/* the batch being filled: buffers.current */
	uint64	   *payloads;		/* in the same buffer, after the keys */
	size_t		nbatch;
	size_t		batch_cap;
	ScanGpuStats gpu_stats;		/* complete after group_sink_result */

	/* private to agg_group_sink.c */
	GpuGroupedTopk *gpu;
	ScanDoubleBuffer buffers;
	MemoryContextCallback callback;
} GroupSink;

extern GroupSink *group_sink_create(uint64 k);
extern void group_sink_flush(GroupSink *sink);
extern void group_sink_result(GroupSink *sink, const GroupedKey **keys,
							  const uint64 **payloads, size_t *count);

static inline void
group_sink_add(GroupSink *sink, uint64 group, uint64 key, uint64 payload)
{
	sink->keys[sink->nbatch].group = group;
	sink->keys[sink->nbatch].key = key;
	sink->payloads[sink->nbatch] = payload;
	if (++sink->nbatch == sink->batch_cap)
		group_sink_flush(sink);
}

#endif							/* AGG_GROUP_SINK_H */
