/*-------------------------------------------------------------------------
 *
 * group_sink.c
 *	  The rows of one grouped top-k on the GPU, handed over in batches.
 *
 * Like key_sink.c: a full batch is queued for copying (gpu_grouped_push)
 * and the other pinned buffer is filled meanwhile; before a buffer is
 * queued again, the copy of the previous one is waited for.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"

#include "group_sink.h"

/* rows per batch: large enough that launches and calls do not count */
#define GROUP_BATCH_ROWS ((size_t) 1 << 20)

#define BATCH_BYTES (GROUP_BATCH_ROWS * (sizeof(GroupedKey) + sizeof(uint64)))

/* Runs on reset or deletion of the owning context; must not throw. */
static void
release_sink(void *arg)
{
	GroupSink  *sink = (GroupSink *) arg;

	/* waits for the queued work that may still read the pinned buffers */
	gpu_grouped_destroy(sink->gpu);
	sink->gpu = NULL;
}

/* Point the batch at pinned buffer i. */
static void
fill_buffer(GroupSink *sink, int i)
{
	sink->filling = i;
	sink->keys = (GroupedKey *) sink->pinned[i]->ptr;
	sink->payloads = (uint64 *) (sink->keys + GROUP_BATCH_ROWS);
}

GroupSink *
group_sink_create(uint64 k)
{
	GroupSink  *sink = palloc0(sizeof(GroupSink));

	sink->callback.func = release_sink;
	sink->callback.arg = sink;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &sink->callback);

	/*
	 * The pinned buffers' callbacks, registered after the sink's, run
	 * before it: each waits for the device before its buffer goes back.
	 */
	device_check(gpu_grouped_create(k, GROUP_BATCH_ROWS, &sink->gpu),
				 "create a GPU grouped top-k");
	sink->batch_cap = GROUP_BATCH_ROWS;
	for (int i = 0; i < 2; i++)
		sink->pinned[i] = device_pinned_acquire(CurrentMemoryContext, BATCH_BYTES);
	fill_buffer(sink, 0);
	return sink;
}

/* Hand the batch to the GPU and start a new one. */
void
group_sink_flush(GroupSink *sink)
{
	size_t		n = sink->nbatch;
	instr_time	start;

	sink->nbatch = 0;
	if (n == 0)
		return;
	/* the other buffer is about to be filled: its copy must be over */
	INSTR_TIME_SET_CURRENT(start);
	if (sink->copying)
		device_check_timed(gpu_grouped_wait_input(sink->gpu), start,
						   &sink->gpu_stats.wait_ms, "copy rows to the GPU");
	device_check(gpu_grouped_push(sink->gpu, sink->keys, sink->payloads, n),
				 "copy rows to the GPU");
	sink->gpu_stats.bytes_shipped += n * (sizeof(GroupedKey) + sizeof(uint64));
	sink->copying = true;
	fill_buffer(sink, 1 - sink->filling);
}

/* The candidates, grouped, in memory the sink owns. */
void
group_sink_result(GroupSink *sink, const GroupedKey **keys, const uint64 **payloads,
				  size_t *count)
{
	instr_time	start;

	group_sink_flush(sink);
	INSTR_TIME_SET_CURRENT(start);
	device_check_timed(gpu_grouped_result(sink->gpu, keys, payloads, count), start,
					   &sink->gpu_stats.wait_ms, "select the top k of each group on the GPU");
	gpu_grouped_times(sink->gpu, &sink->gpu_stats.copy_ms, &sink->gpu_stats.kernel_ms);
}
