/*-------------------------------------------------------------------------
 *
 * scan_gpu_stats.c
 *	  What the GPU did for a scan, and EXPLAIN ANALYZE's lines for it.
 *
 * Both custom scans show the same lines, under the same names and units:
 * "Bytes Shipped" with their counts, and with timing on the GPU's own time
 * in copies to the device ("GPU Transfer Time") and in kernels ("GPU
 * Kernel Time"), each summed over batches and timed with CUDA events, then
 * the time the host waited for the GPU ("GPU Wait Time").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"

#include "scan_gpu_stats.h"

void
scan_gpu_stats_add(ScanGpuStats *sum, const ScanGpuStats *stats)
{
	sum->bytes_shipped += stats->bytes_shipped;
	sum->wait_ms += stats->wait_ms;
	sum->copy_ms += stats->copy_ms;
	sum->kernel_ms += stats->kernel_ms;
}

void
scan_gpu_stats_explain_shipped(const ScanGpuStats *stats, ExplainState *es)
{
	ExplainPropertyUInteger("Bytes Shipped", NULL, stats->bytes_shipped, es);
}

void
scan_gpu_stats_explain_times(const ScanGpuStats *stats, ExplainState *es)
{
	ExplainPropertyFloat("GPU Transfer Time", "ms", stats->copy_ms, 3, es);
	ExplainPropertyFloat("GPU Kernel Time", "ms", stats->kernel_ms, 3, es);
	ExplainPropertyFloat("GPU Wait Time", "ms", stats->wait_ms, 3, es);
}
