/*-------------------------------------------------------------------------
 *
 * agg_group_sink.c
 *	  The rows of one grouped top-k on the GPU, handed over in batches.
 *
 * Like topk_key_sink.c: a full batch is handed over to the double buffer,
 * which queues its copy (gpu_grouped_push) while the other buffer is
 * filled.  A buffer holds a batch's keys, then its payloads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"

#include "agg_group_sink.h"

/* rows per batch: large enough that launches and calls do not count */
#define GROUP_BATCH_ROWS ((size_t) 1 << 20)

static GpuStatus
push_rows(void *gpu, const void *buffer, size_t n)
{
	const GroupedKey *keys = (const GroupedKey *) buffer;

	return gpu_grouped_push((GpuGroupedTopk *) gpu, keys,
							(const uint64 *) (keys + GROUP_BATCH_ROWS), n);
}

static GpuStatus
wait_for_rows(void *gpu)
{
	return gpu_grouped_wait_input((GpuGroupedTopk *) gpu);
}

static const DoubleBufferConsumer gpu_grouped_consumer = {
	.push = push_rows,
	.wait = wait_for_rows,
	.action = "copy rows to the GPU",
};

/* Runs on reset or deletion of the owning context; must not throw. */
static void
release_sink(void *arg)
{
	GroupSink  *sink = (GroupSink *) arg;

	/* waits for the queued work that may still read the pinned buffers */
	gpu_grouped_destroy(sink->gpu);
	sink->gpu = NULL;
}

/* Point the batch at the double buffer's current buffer. */
static void
fill_current(GroupSink *sink)
{
	sink->keys = (GroupedKey *) sink->buffers.current;
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
	 * The double buffer's callbacks, registered after the sink's, run
	 * before it: each waits for the device before its buffer goes back.
	 */
	device_check(gpu_grouped_create(k, GROUP_BATCH_ROWS, &sink->gpu),
				 "create a GPU grouped top-k");
	scan_double_buffer_init(&sink->buffers, GROUP_BATCH_ROWS,
							sizeof(GroupedKey) + sizeof(uint64), &gpu_grouped_consumer,
							sink->gpu, &sink->gpu_stats);
	sink->batch_cap = sink->buffers.capacity;
	fill_current(sink);
	return sink;
}

/* Hand the batch to the GPU and start a new one. */
void
group_sink_flush(GroupSink *sink)
{
	size_t		n = sink->nbatch;

	sink->nbatch = 0;
	if (n == 0)
		return;
	scan_double_buffer_hand_over(&sink->buffers, n);
	fill_current(sink);
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
