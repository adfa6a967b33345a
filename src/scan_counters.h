/*-------------------------------------------------------------------------
 *
 * scan_counters.h
 *	  Counts for EXPLAIN ANALYZE that the processes of a parallel scan add
 *	  up, for the custom scans.
 *
 * Each process counts into its own ScanCounters, summed over its runs.  A
 * parallel scan keeps a ScanSharedCounters in its shared memory: every
 * process that scans the table counts itself there, each worker adds its
 * counts there when a run ends (and starts again from zero), and the
 * leader collects them once the workers are done, at shutdown or before a
 * rescan's workers start.  The leader's counts are then those of all
 * processes, summed over the runs, and its processes (and those of them
 * that used the GPU) the most of any run.  A scan numbers its counts
 * itself, up to SCAN_COUNTERS_MAX; what the GPU did (scan_gpu_stats.h) is
 * summed alongside.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_COUNTERS_H
#define SCAN_COUNTERS_H

#include "port/atomics.h"

#include "scan_gpu_stats.h"

#define SCAN_COUNTERS_MAX 24

/* ScanGpuStats's fields in shared memory: bytes, and times in microseconds */
typedef enum ScanSharedGpuField
{
	SHARED_GPU_BYTES,
	SHARED_GPU_QUEUE_US,
	SHARED_GPU_WAIT_US,
	SHARED_GPU_COPY_US,
	SHARED_GPU_KERNEL_US,
	SHARED_GPU_GPUS,			/* a bit per GPU used, ORed */
	SHARED_GPU_FIELDS
} ScanSharedGpuField;

/* in the parallel scan's shared memory */
typedef struct ScanSharedCounters
{
	pg_atomic_uint32 processes;
	pg_atomic_uint32 gpu_processes;
	pg_atomic_uint64 counts[SCAN_COUNTERS_MAX];
	pg_atomic_uint64 gpu[SHARED_GPU_FIELDS];
} ScanSharedCounters;

/* one process's */
typedef struct ScanCounters
{
	ScanSharedCounters *shared; /* of a parallel scan, or NULL */
	int			processes;		/* that scanned the table, the most of any run */
	int			gpu_processes;	/* of them, those that used the GPU */
	uint64		counts[SCAN_COUNTERS_MAX];
	ScanGpuStats gpu;
} ScanCounters;

/* The leader, in the shared memory it sets up; a worker, attaching to it. */
extern void scan_counters_init_shared(ScanCounters *counters, ScanSharedCounters *shared);
extern void scan_counters_attach(ScanCounters *counters, ScanSharedCounters *shared);

/*
 * This process scans the table (alone, without shared counters), or
 * (on_gpu) it hands its work to the GPU; each once per scan.
 */
extern void scan_counters_count_process(ScanCounters *counters, bool on_gpu);

/* At the end of a worker's run: its counts to the leader's (else nothing). */
extern void scan_counters_publish(ScanCounters *counters);

/* The leader, once the workers are done: their counts into its own. */
extern void scan_counters_collect(ScanCounters *counters);

/* The leader, before the shared memory goes: the last collection. */
extern void scan_counters_detach(ScanCounters *counters);

#endif							/* SCAN_COUNTERS_H */
