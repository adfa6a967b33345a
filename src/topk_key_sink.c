/*-------------------------------------------------------------------------
 *
 * topk_key_sink.c
 *	  The keys of one top-k, handed in batches to the CPU or the GPU backend.
 *
 * On the GPU, a full batch is handed over to the double buffer, which
 * queues its copy (gpu_topk_push) while the other buffer is filled.  So
 * the scan and the copies and kernels overlap, and the host's cost per
 * batch is one call.  Parallel workers always use the CPU backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "portability/instr_time.h"

#include "cpu_topk.h"
#include "topk_key_sink.h"

/* keys per batch: small enough to stay in cache on the CPU */
#define CPU_BATCH_KEYS 4096
/* large enough that launches and calls do not count on the GPU */
#define GPU_BATCH_KEYS ((size_t) 1 << 20)

static void
sink_out_of_memory(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("%s", detail)));
}

static GpuStatus
push_keys(void *gpu, const void *keys, size_t n)
{
	return gpu_topk_push((GpuTopk *) gpu, keys, n);
}

static GpuStatus
wait_for_keys(void *gpu)
{
	return gpu_topk_wait_input((GpuTopk *) gpu);
}

static const DoubleBufferConsumer gpu_topk_consumer = {
	.push = push_keys,
	.wait = wait_for_keys,
	.action = "copy keys to the GPU",
};

/* Runs on reset or deletion of the owning context; must not throw. */
static void
release_sink(void *arg)
{
	KeySink    *sink = (KeySink *) arg;

	if (sink->cpu)
		cpu_topk_destroy(sink->cpu);
	sink->cpu = NULL;
	/* waits for the queued work that may still read the pinned buffers */
	gpu_topk_destroy(sink->gpu);
	sink->gpu = NULL;
}

KeySink *
key_sink_create(int key_width, uint64 k, TopkMode mode, GpuTopkAlgorithm algorithm)
{
	KeySink    *sink = palloc0(sizeof(KeySink));

	sink->key_width = key_width;
	/* a CUDA context per parallel worker would cost more than it saves */
	sink->backend = IsParallelWorker() ? BACKEND_CPU : device_choose_backend();
	sink->callback.func = release_sink;
	sink->callback.arg = sink;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &sink->callback);
	if (sink->backend == BACKEND_CPU)
	{
		sink->cpu = cpu_topk_create(key_width, k, mode);
		if (sink->cpu == NULL)
			sink_out_of_memory("The top-k state could not be allocated.");
		sink->batch_cap = CPU_BATCH_KEYS;
		sink->batch = palloc(key_width * sink->batch_cap);
		return sink;
	}

	/*
	 * The double buffer's callbacks, registered after the sink's, run
	 * before it: each waits for the device before its buffer goes back.
	 */
	device_check(gpu_topk_create(key_width, k, mode, &sink->gpu),
				 "create a GPU top-k");
	gpu_topk_set_algorithm(sink->gpu, algorithm);
	scan_double_buffer_init(&sink->buffers, GPU_BATCH_KEYS, key_width, &gpu_topk_consumer,
							sink->gpu, &sink->gpu_stats);
	sink->batch_cap = sink->buffers.capacity;
	sink->batch = sink->buffers.current;
	return sink;
}

/* Hand the batch to the backend and start a new one. */
void
key_sink_flush(KeySink *sink)
{
	size_t		n = sink->nbatch;

	sink->nbatch = 0;
	if (n == 0)
		return;
	if (sink->backend == BACKEND_CPU)
	{
		if (!cpu_topk_push(sink->cpu, sink->batch, n))
			sink_out_of_memory("The top-k candidates did not fit in memory.");
		return;
	}
	scan_double_buffer_hand_over(&sink->buffers, n);
	sink->batch = sink->buffers.current;
}

/* The answer, in memory the sink owns. */
void
key_sink_result(KeySink *sink, TopkResult *result)
{
	instr_time	start;

	key_sink_flush(sink);
	if (sink->backend == BACKEND_CPU)
	{
		if (!cpu_topk_result(sink->cpu, result))
			sink_out_of_memory("The top-k answer did not fit in memory.");
		return;
	}
	INSTR_TIME_SET_CURRENT(start);
	device_check_timed(gpu_topk_result(sink->gpu, result), start, &sink->gpu_stats.wait_ms,
					   "select the top k on the GPU");
	gpu_topk_stream_times(sink->gpu, &sink->gpu_stats.copy_ms, &sink->gpu_stats.kernel_ms);
}

/* What the GPU ran last, for EXPLAIN; NULL on the CPU backend. */
const char *
key_sink_algorithm(KeySink *sink)
{
	GpuTopkPlan plan;

	if (sink->backend != BACKEND_GPU)
		return NULL;
	plan = gpu_topk_last_plan(sink->gpu);
	switch (plan.algorithm)
	{
		case GPU_TOPK_BITONIC:
			return "bitonic";
		case GPU_TOPK_RADIX:
			return "radix";
		case GPU_TOPK_AUTO:
			break;
	}
	return "none";
}
