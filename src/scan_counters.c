/*-------------------------------------------------------------------------
 *
 * scan_counters.c
 *	  Counts for EXPLAIN ANALYZE that the processes of a parallel scan add
 *	  up, for the custom scans.
 *
 * The workers add to the shared counts, and the leader takes them with an
 * atomic exchange, leaving zero for a rescan's workers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"

#include "scan_counters.h"

void
scan_counters_init_shared(ScanCounters *counters, ScanSharedCounters *shared)
{
	pg_atomic_init_u32(&shared->processes, 0);
	pg_atomic_init_u32(&shared->gpu_processes, 0);
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
		pg_atomic_init_u64(&shared->counts[c], 0);
	for (int f = 0; f < SHARED_GPU_FIELDS; f++)
		pg_atomic_init_u64(&shared->gpu[f], 0);
	counters->shared = shared;
}

void
scan_counters_attach(ScanCounters *counters, ScanSharedCounters *shared)
{
	counters->shared = shared;
}

void
scan_counters_count_process(ScanCounters *counters, bool on_gpu)
{
	ScanSharedCounters *shared = counters->shared;

	if (shared)
		pg_atomic_fetch_add_u32(on_gpu ? &shared->gpu_processes : &shared->processes, 1);
	else if (on_gpu)
		counters->gpu_processes = 1;
	else
		counters->processes = 1;
}

static uint64
to_us(double ms)
{
	return (uint64) (ms * 1000.0 + 0.5);
}

void
scan_counters_publish(ScanCounters *counters)
{
	ScanSharedCounters *shared = counters->shared;
	ScanGpuStats *gpu = &counters->gpu;

	if (shared == NULL || !IsParallelWorker())
		return;
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
	{
		pg_atomic_fetch_add_u64(&shared->counts[c], counters->counts[c]);
		counters->counts[c] = 0;
	}
	pg_atomic_fetch_add_u64(&shared->gpu[SHARED_GPU_BYTES], gpu->bytes_shipped);
	pg_atomic_fetch_add_u64(&shared->gpu[SHARED_GPU_QUEUE_US], to_us(gpu->queue_ms));
	pg_atomic_fetch_add_u64(&shared->gpu[SHARED_GPU_WAIT_US], to_us(gpu->wait_ms));
	pg_atomic_fetch_add_u64(&shared->gpu[SHARED_GPU_COPY_US], to_us(gpu->copy_ms));
	pg_atomic_fetch_add_u64(&shared->gpu[SHARED_GPU_KERNEL_US], to_us(gpu->kernel_ms));
	pg_atomic_fetch_or_u64(&shared->gpu[SHARED_GPU_GPUS], gpu->gpus);
	memset(gpu, 0, sizeof(*gpu));
}

static double
take_ms(pg_atomic_uint64 *us)
{
	return pg_atomic_exchange_u64(us, 0) / 1000.0;
}

/* Summed over runs, but the processes are the most of any run. */
void
scan_counters_collect(ScanCounters *counters)
{
	ScanSharedCounters *shared = counters->shared;
	int			processes;

	if (shared == NULL || IsParallelWorker())
		return;
	processes = (int) pg_atomic_exchange_u32(&shared->processes, 0);
	counters->processes = Max(counters->processes, processes);
	processes = (int) pg_atomic_exchange_u32(&shared->gpu_processes, 0);
	counters->gpu_processes = Max(counters->gpu_processes, processes);
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
		counters->counts[c] += pg_atomic_exchange_u64(&shared->counts[c], 0);
	counters->gpu.bytes_shipped += pg_atomic_exchange_u64(&shared->gpu[SHARED_GPU_BYTES], 0);
	counters->gpu.queue_ms += take_ms(&shared->gpu[SHARED_GPU_QUEUE_US]);
	counters->gpu.wait_ms += take_ms(&shared->gpu[SHARED_GPU_WAIT_US]);
	counters->gpu.copy_ms += take_ms(&shared->gpu[SHARED_GPU_COPY_US]);
	counters->gpu.kernel_ms += take_ms(&shared->gpu[SHARED_GPU_KERNEL_US]);
	counters->gpu.gpus |= (uint32) pg_atomic_exchange_u64(&shared->gpu[SHARED_GPU_GPUS], 0);
}

void
scan_counters_detach(ScanCounters *counters)
{
	scan_counters_collect(counters);
	counters->shared = NULL;
}
