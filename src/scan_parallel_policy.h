/*-------------------------------------------------------------------------
 *
 * scan_parallel_policy.h
 *	  How the planners of both custom scans (GpuTopK and GpuTopKAgg) size a
 *	  parallel scan: the workers it asks for, and each process's share of
 *	  the per-row work in its cost.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_PARALLEL_POLICY_H
#define SCAN_PARALLEL_POLICY_H

#include "nodes/pathnodes.h"

extern int	scan_parallel_workers(RelOptInfo *rel, BlockNumber pages);
extern double scan_parallel_divisor(int workers);

#endif							/* SCAN_PARALLEL_POLICY_H */
