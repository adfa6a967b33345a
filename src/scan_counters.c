/*-------------------------------------------------------------------------
 *
 * scan_counters.c
 *	  Counts for EXPLAIN ANALYZE that the processes of a parallel scan add
 *	  up, for both custom scans.
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
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
		pg_atomic_init_u64(&shared->counts[c], 0);
	counters->shared = shared;
}

void
scan_counters_attach(ScanCounters *counters, ScanSharedCounters *shared)
{
	counters->shared = shared;
}

void
scan_counters_count_process(ScanCounters *counters)
{
	if (counters->shared)
		pg_atomic_fetch_add_u32(&counters->shared->processes, 1);
	else
		counters->processes = 1;
}

void
scan_counters_publish(ScanCounters *counters)
{
	if (counters->shared == NULL || !IsParallelWorker())
		return;
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
	{
		pg_atomic_fetch_add_u64(&counters->shared->counts[c], counters->counts[c]);
		counters->counts[c] = 0;
	}
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
	for (int c = 0; c < SCAN_COUNTERS_MAX; c++)
		counters->counts[c] += pg_atomic_exchange_u64(&shared->counts[c], 0);
}

void
scan_counters_detach(ScanCounters *counters)
{
	scan_counters_collect(counters);
	counters->shared = NULL;
}
