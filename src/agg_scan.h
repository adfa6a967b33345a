/*-------------------------------------------------------------------------
 *
 * agg_scan.h
 *	  The GpuTopKAgg custom scan: what the planner (agg_path.c) hands
 *	  the executor (agg_exec.c).
 *
 * The plan's custom_private is a list of TopkAggField entries in order,
 * then the WHERE clause's expressions.  Its custom_scan_tlist is the
 * grouping column (when there is one) and then the aggregates, in the
 * order of the per-aggregate lists.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_SCAN_H
#define AGG_SCAN_H

typedef enum TopkAggField
{
	AGG_FIELD_RELID,			/* IntList of one: the table's range table index
								 * as planned (the WHERE clause's Vars') */
	AGG_FIELD_MODE,				/* IntList of one: a TopkAggMode */
	AGG_FIELD_PARTITIONS,		/* IntList of one: a partitioned plan's partitions */
	AGG_FIELD_GROUP_ATTNO,		/* IntList of one: the grouping column, or 0 */
	AGG_FIELD_GROUP_BYTES,		/* IntList of one: a group's states' bytes as
								 * estimated (each grown to its rows or k) */
	AGG_FIELD_VALUE_ATTNOS,		/* IntList: each aggregate's value column */
	AGG_FIELD_RESULT_ATTNOS,	/* IntList: its result column (_by forms), or 0 */
	AGG_FIELD_KS,				/* IntList: its k */
	AGG_FIELD_LARGEST,			/* IntList: gpu_topk* (1) or gpu_bottomk* (0) */
	AGG_FIELD_COLLATIONS,		/* OidList: its input collation */
	AGG_FIELD_STATE_TEXT,		/* IntList: 1 where it returns its state as
								 * text, for Citus (worker_partial_agg) */
	AGG_FIELDS
} TopkAggField;

/* how the node's processes share the work */
typedef enum TopkAggMode
{
	AGG_MODE_WHOLE,				/* one process, the groups' answers out */
	AGG_MODE_PARTIAL,			/* a parallel scan's share, states out serialized */
	AGG_MODE_PARTITIONED		/* parallel, rows exchanged by group, answers out */
} TopkAggMode;

#define TOPK_AGG_SCAN_NAME "GpuTopKAgg"

/*
 * A row as a partitioned plan's processes exchange it or a spill writes
 * it, packed: the group, whether it is NULL, then per aggregate its key,
 * its result, whether it has a value and whether the result is NULL
 * (agg_exec.c; a spill's row then carries the results passed by
 * reference).
 */
#define TOPK_AGG_RECORD_AGG_OFFSET (sizeof(uint64) + 1)
#define TOPK_AGG_RECORD_AGG_BYTES (2 * sizeof(uint64) + 2)
#define TOPK_AGG_RECORD_BYTES(naggs) \
	(TOPK_AGG_RECORD_AGG_OFFSET + TOPK_AGG_RECORD_AGG_BYTES * (naggs))

#endif							/* AGG_SCAN_H */
