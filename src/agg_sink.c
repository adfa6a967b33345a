/*-------------------------------------------------------------------------
 *
 * agg_sink.c
 *	  The rows of one grouped top-k, handed in batches to a job of the GPU
 *	  service.
 *
 * Like topk_key_sink.c: a full batch is posted to the job, and the other
 * buffer is filled while the service copies this one to the GPU.  A buffer
 * holds a batch's keys, then its payloads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "agg_sink.h"

/* Point the batch at a buffer of the job. */
static void
fill(GroupSink *sink, char *buffer)
{
	sink->keys = (GroupedKey *) buffer;
	sink->payloads = service_job_payloads(sink->job, buffer);
}

GroupSink *
agg_sink_create(uint64 k)
{
	ServiceJobSpec spec = {.kind = SERVICE_JOB_GROUPED,.k = k};
	ServiceJob *job = device_start_job(&spec, false);
	GroupSink  *sink;

	if (job == NULL)
		return NULL;
	sink = palloc0(sizeof(GroupSink));
	sink->job = job;
	sink->batch_cap = service_job_batch_rows(job);
	fill(sink, service_job_buffer(job));
	return sink;
}

/* Hand the batch to the GPU and start a new one. */
void
agg_sink_flush(GroupSink *sink)
{
	fill(sink, service_job_post(sink->job, &sink->nbatch));
}

bool
agg_sink_failed(GroupSink *sink)
{
	return service_job_failed(sink->job);
}

void
agg_sink_result(GroupSink *sink, GroupedKey **keys, uint64 **payloads, size_t *count,
				ScanGpuStats *gpu)
{
	agg_sink_flush(sink);
	service_job_grouped_answer(sink->job, keys, payloads, count);
	scan_gpu_stats_add_job(gpu, sink->job);
	service_job_release(sink->job);
}

void
agg_sink_release(GroupSink *sink)
{
	service_job_release(sink->job);
}
