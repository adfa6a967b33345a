/*-------------------------------------------------------------------------
 *
 * scan_parallel_policy.c
 *	  How the planners of both custom scans size a parallel scan.
 *
 * Both scans read a table several times faster than a sequential scan,
 * and their time falls with every process that reads; so they ask for more
 * workers than PostgreSQL's heuristic gives its own scans, and cost each
 * process's share as PostgreSQL does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"

#include "scan_parallel_policy.h"
#include "settings.h"

/* parallel workers: one per this many times min_parallel_table_scan_size */
#define SCAN_WORKER_SHARE 4

/*
 * The workers a partial path over rel asks for, when it reads pages (the
 * table's, or those of a column index of it): a worker per
 * SCAN_WORKER_SHARE times min_parallel_table_scan_size of pages (32 MB by
 * default: about 10 ms of reading), where PostgreSQL's heuristic
 * (compute_parallel_worker) grows by powers of three.  The cap is
 * gputopk.max_parallel_workers, by default max_parallel_workers_per_gather:
 * the per-query limit PostgreSQL's own plans keep to, so that one top-k
 * query leaves the rest of the pool to others unless an administrator
 * raises it.  The table's parallel_workers setting decides where it is
 * set, and max_parallel_workers_per_gather = 0 keeps every scan in one
 * process, as for PostgreSQL's own scans.
 */
int
scan_parallel_workers(RelOptInfo *rel, BlockNumber pages)
{
	int			cap = gputopk_max_parallel_workers >= 0 ?
		gputopk_max_parallel_workers : max_parallel_workers_per_gather;
	double		share;

	if (max_parallel_workers_per_gather == 0)
		return 0;
	if (rel->rel_parallel_workers != -1)
		return Min(rel->rel_parallel_workers, cap);
	if (pages < (BlockNumber) min_parallel_table_scan_size)
		return 0;
	share = Max((double) SCAN_WORKER_SHARE * min_parallel_table_scan_size, 1.0);
	return (int) Min(cap, Max(1.0, pages / share));
}

/*
 * The share of the work of one process when workers and, if it takes part,
 * the leader scan in parallel (as PostgreSQL's own cost model assumes).
 */
double
scan_parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0.0)
		divisor += 1.0 - 0.3 * workers;
	return divisor;
}
