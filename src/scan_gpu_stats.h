/*-------------------------------------------------------------------------
 *
 * scan_gpu_stats.h
 *	  What the GPU did for a scan: filled by both custom scans' sinks
 *	  (topk's keys, agg's grouped rows), shown by their EXPLAIN ANALYZE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_GPU_STATS_H
#define SCAN_GPU_STATS_H

struct ExplainState;

typedef struct ScanGpuStats
{
	uint64		bytes_shipped;	/* handed to the GPU */
	double		wait_ms;		/* the host waiting for the GPU */
	double		copy_ms;		/* the GPU's copies to the device, timed on it */
	double		kernel_ms;		/* its kernels, timed on it */
} ScanGpuStats;

extern void scan_gpu_stats_add(ScanGpuStats *sum, const ScanGpuStats *stats);

/*
 * EXPLAIN ANALYZE's lines for a scan that ran on the GPU: the bytes shipped,
 * among the counts, and with timing on, the GPU's times.
 */
extern void scan_gpu_stats_explain_shipped(const ScanGpuStats *stats,
										   struct ExplainState *es);
extern void scan_gpu_stats_explain_times(const ScanGpuStats *stats,
										 struct ExplainState *es);

#endif							/* SCAN_GPU_STATS_H */
