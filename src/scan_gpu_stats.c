/*-------------------------------------------------------------------------
 *
 * scan_gpu_stats.c
 *	  What the GPU did for a scan, and EXPLAIN ANALYZE's lines for it.
 *
 * Both custom scans show the same lines, under the same names and units,
 * summed over the processes that used the GPU: "Bytes Shipped" with their
 * counts, and with timing on the GPU's own time in copies to the device
 * ("GPU Transfer Time") and in kernels ("GPU Kernel Time"), each summed
 * over batches and timed with CUDA events; the time jobs waited for the
 * GPU service to take them ("GPU Queue Wait"); and the time the scan then
 * waited for the GPU ("GPU Wait Time").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"

#include "scan_gpu_stats.h"
#include "service_client.h"

void
scan_gpu_stats_add_job(ScanGpuStats *sum, ServiceJob *job)
{
	const ServiceJobStats *stats = service_job_stats(job);

	sum->bytes_shipped += stats->bytes_posted;
	sum->queue_ms += stats->queue_ms;
	sum->wait_ms += stats->wait_ms;
	sum->copy_ms += stats->copy_ms;
	sum->kernel_ms += stats->kernel_ms;
	sum->gpus |= stats->gpus;
}

void
scan_gpu_stats_explain_gpus(uint32 gpus, ExplainState *es)
{
	StringInfoData list;

	if (gpus == 0)
		return;
	initStringInfo(&list);
	for (int ordinal = 0; ordinal < 32; ordinal++)
		if (gpus & (1u << ordinal))
			appendStringInfo(&list, "%s%d", list.len > 0 ? ", " : "", ordinal);
	ExplainPropertyText("GPUs", list.data, es);
}

void
scan_gpu_stats_explain_shipped(const ScanGpuStats *stats, ExplainState *es)
{
	scan_gpu_stats_explain_gpus(stats->gpus, es);
	ExplainPropertyUInteger("Bytes Shipped", NULL, stats->bytes_shipped, es);
}

void
scan_gpu_stats_explain_times(const ScanGpuStats *stats, ExplainState *es)
{
	ExplainPropertyFloat("GPU Transfer Time", "ms", stats->copy_ms, 3, es);
	ExplainPropertyFloat("GPU Kernel Time", "ms", stats->kernel_ms, 3, es);
	ExplainPropertyFloat("GPU Queue Wait", "ms", stats->queue_ms, 3, es);
	ExplainPropertyFloat("GPU Wait Time", "ms", stats->wait_ms, 3, es);
}

/* The name of a plan's algorithm, for EXPLAIN. */
const char *
scan_gpu_stats_plan_name(GpuTopkPlan plan)
{
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
