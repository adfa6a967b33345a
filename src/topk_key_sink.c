/*-------------------------------------------------------------------------
 *
 * topk_key_sink.c
 *	  The keys of one top-k, handed in batches to the CPU backend or to a
 *	  job of the GPU service.
 *
 * On the GPU, a full batch is posted to the job, which lets the scan fill
 * the job's other buffer while the service copies this one to the GPU and
 * filters it there: the scan and the copies and kernels overlap, and the
 * scan's cost per batch is an order and a latch.  Parallel workers take a
 * job each, like the leader.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "cpu_topk.h"
#include "topk_key_sink.h"

/* keys per batch: small enough to stay in cache on the CPU */
#define CPU_BATCH_KEYS 4096

static void
sink_out_of_memory(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("%s", detail)));
}

/* Runs on reset or deletion of the owning context; must not throw. */
static void
release_sink(void *arg)
{
	KeySink    *sink = (KeySink *) arg;

	if (sink->cpu)
		cpu_topk_destroy(sink->cpu);
	sink->cpu = NULL;
}

KeySink *
topk_key_sink_create(int key_width, uint64 k, TopkMode mode, GpuTopkAlgorithm algorithm,
					 bool gpu_allowed)
{
	KeySink    *sink = palloc0(sizeof(KeySink));
	ServiceJobSpec spec = {
		.kind = SERVICE_JOB_TOPK,
		.key_width = key_width,
		.k = k,
		.mode = mode,
		.algorithm = algorithm,
	};

	sink->key_width = key_width;
	sink->callback.func = release_sink;
	sink->callback.arg = sink;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &sink->callback);
	/* released with the context, errors included (service_client.h) */
	sink->job = gpu_allowed ? device_start_job(&spec, true) : NULL;
	if (sink->job != NULL)
	{
		sink->backend = BACKEND_GPU;
		sink->batch_cap = service_job_batch_rows(sink->job);
		sink->batch = service_job_buffer(sink->job);
		return sink;
	}
	sink->backend = BACKEND_CPU;
	sink->cpu = cpu_topk_create(key_width, k, mode);
	if (sink->cpu == NULL)
		sink_out_of_memory("The top-k state could not be allocated.");
	sink->batch_cap = CPU_BATCH_KEYS;
	sink->batch = palloc(key_width * sink->batch_cap);
	return sink;
}

/* Hand the batch to the backend and start a new one. */
void
topk_key_sink_flush(KeySink *sink)
{
	if (sink->backend == BACKEND_GPU)
		sink->batch = service_job_post(sink->job, &sink->nbatch);
	else if (sink->nbatch > 0)
	{
		if (!cpu_topk_push(sink->cpu, sink->batch, sink->nbatch))
			sink_out_of_memory("The top-k candidates did not fit in memory.");
		sink->nbatch = 0;
	}
}

bool
topk_key_sink_failed(KeySink *sink)
{
	return sink->backend == BACKEND_GPU && service_job_failed(sink->job);
}

void
topk_key_sink_result(KeySink *sink, TopkResult *result, ScanGpuStats *gpu, const char **algorithm)
{
	topk_key_sink_flush(sink);
	*algorithm = NULL;
	if (sink->backend == BACKEND_GPU)
	{
		service_job_topk_answer(sink->job, result);
		scan_gpu_stats_add_job(gpu, sink->job);
		*algorithm = scan_gpu_stats_plan_name(service_job_stats(sink->job)->plan);
		service_job_release(sink->job);
		return;
	}
	if (!cpu_topk_result(sink->cpu, result))
		sink_out_of_memory("The top-k answer did not fit in memory.");
}
