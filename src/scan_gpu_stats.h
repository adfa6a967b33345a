/*-------------------------------------------------------------------------
 *
 * scan_gpu_stats.h
 *	  What the GPU did for a scan: filled from the custom scans' GPU jobs
 *	  (topk's keys, agg's grouped rows), summed over the processes of a
 *	  parallel scan (scan_counters.h) and shown by EXPLAIN ANALYZE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_GPU_STATS_H
#define SCAN_GPU_STATS_H

#include "gpu_topk.h"

struct ExplainState;
struct ServiceJob;

typedef struct ScanGpuStats
{
	uint64		bytes_shipped;	/* handed to the GPU service */
	double		queue_ms;		/* jobs waiting for the service to take them */
	double		wait_ms;		/* the scan waiting for the GPU after that */
	double		copy_ms;		/* the GPU's copies to the device, timed on it */
	double		kernel_ms;		/* its kernels, timed on it */
	uint32		gpus;			/* the GPUs that served it, a bit per CUDA ordinal */
} ScanGpuStats;

/* A job's share, once its answer is back. */
extern void scan_gpu_stats_add_job(ScanGpuStats *sum, struct ServiceJob *job);

/*
 * EXPLAIN ANALYZE's lines for a scan that ran on the GPU: the GPUs that
 * served it and the bytes shipped, among the counts, and with timing on,
 * the GPU's times.
 */
extern void scan_gpu_stats_explain_shipped(const ScanGpuStats *stats,
										   struct ExplainState *es);
extern void scan_gpu_stats_explain_times(const ScanGpuStats *stats,
										 struct ExplainState *es);

/* EXPLAIN's "GPUs" line: the CUDA ordinals of a bit per GPU (none: no line). */
extern void scan_gpu_stats_explain_gpus(uint32 gpus, struct ExplainState *es);

/* The name of a GPU top-k's algorithm, for EXPLAIN. */
extern const char *scan_gpu_stats_plan_name(GpuTopkPlan plan);

#endif							/* SCAN_GPU_STATS_H */
