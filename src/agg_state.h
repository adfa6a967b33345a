/*-------------------------------------------------------------------------
 *
 * agg_state.h
 *	  The GpuTopKAgg executor's state, shared by its files: agg_exec.c (the
 *	  node's callbacks and the order of its runs), agg_groups.c (a run's
 *	  groups), agg_records.c (rows as records: the exchange and the spills)
 *	  and agg_explain.c (EXPLAIN); each declares its functions in a header
 *	  of its own.
 *
 * A run groups one set of rows into a hash table of groups and returns
 * them: the table's rows (or this process's share of them), a partitioned
 * plan's partition, or a spilled partition.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_STATE_H
#define AGG_STATE_H

#include "lib/stringinfo.h"
#include "nodes/execnodes.h"

#include "agg_functions.h"
#include "agg_exchange.h"
#include "agg_sink.h"
#include "agg_spill.h"
#include "agg_scan.h"
#include "device.h"
#include "keys.h"
#include "scan_driver.h"
#include "scan_gpu_stats.h"

struct ExplainState;

/* one aggregate of the node */
typedef struct AggSpec
{
	AttrNumber	value_attno;
	AttrNumber	result_attno;	/* the _by forms' result, or 0: the value */
	int32		k;
	bool		largest;
	KeyType		key_type;		/* the value's */
	bool		result_byval;
	int16		result_typlen;
	bool		state_text;		/* returned as its state's text (for Citus) */
	TopkAggState *model;		/* an empty state, copied for each group */
} AggSpec;

/* an aggregate's part of the table row being grouped */
typedef struct AggValue
{
	bool		present;		/* false: the value is NULL, which the aggregates skip */
	bool		result_isnull;
	uint64		key;			/* the value's */
	Datum		result;			/* the value itself but for the _by forms */
} AggValue;

typedef struct GroupEntry
{
	uint64		group;			/* the grouping column's Datum */
	char		status;			/* simplehash's */
	bool		has_floor;		/* the first aggregate's state is full: */
	uint64		floor;			/* keys below this cannot enter it (agg_trans_floor) */
	TopkAggState **states;		/* one per aggregate, NULL before its first value */
} GroupEntry;

/*
 * A 64-bit finalizer (MurmurHash3's): the Datums of integers are not
 * random.  Each spill level seeds it differently, so that the groups of
 * one partition spread over the next level's; the group table and the
 * exchange use level 0.
 */
static inline uint32
agg_hash_group(uint64 group, int level)
{
	group += (uint64) level * UINT64CONST(0x9e3779b97f4a7c15);
	group ^= group >> 33;
	group *= UINT64CONST(0xff51afd7ed558ccd);
	group ^= group >> 33;
	group *= UINT64CONST(0xc4ceb9fe1a85ec53);
	group ^= group >> 33;
	return (uint32) group;
}

/* a run's groups: agg_groups_hash, defined in agg_groups.c */
#define SH_PREFIX agg_groups
#define SH_ELEMENT_TYPE GroupEntry
#define SH_KEY_TYPE uint64
#define SH_SCOPE extern
#define SH_DECLARE
#include "lib/simplehash.h"

/*
 * counts for EXPLAIN ANALYZE, summed over runs and processes
 * (scan_counters.h), after the heap scan's (scan_driver.h)
 */
typedef enum SummedCount
{
	COUNT_PARTIAL_GROUPS = SCAN_DRIVER_COUNTS,		/* a parallel scan's, returned by all processes */
	COUNT_ROWS_EXCHANGED,		/* a partitioned plan's, written by all processes */
	COUNT_BYTES_EXCHANGED,
	COUNT_ROWS_SPILLED,
	COUNT_BYTES_SPILLED,
	COUNT_SPILL_BATCHES,		/* runs over spilled rows */
	COUNT_GPU_CANDIDATES,		/* rows the GPU returned */
	SUMMED_COUNTS
} SummedCount;

StaticAssertDecl(SUMMED_COUNTS <= SCAN_COUNTERS_MAX, "too many counts for scan_counters.h");

/* what the plan fixes */
typedef struct AggPlanned
{
	TopkAggMode mode;
	int			partitions;		/* of a partitioned plan */
	AttrNumber	group_attno;	/* 0: one group */
	int			naggs;
	AggSpec    *aggs;
	bool		results_byval;	/* every result by value: the GPU and spills need it */
	List	   *interpreted;	/* the WHERE clauses the reader's table_qual evaluates */
} AggPlanned;

/* the run being grouped or returned */
typedef struct AggRun
{
	bool		done;			/* the groups are ready */
	MemoryContext cxt;			/* the groups and their states */
	int			depth;			/* 0, or the depth of the spill the run reads */
	TopkBackend backend;		/* EXPLAIN shows the last run's */
	GroupSink **sinks;			/* rows on the GPU: one per aggregate */
	GroupSpill *spill;			/* once its groups outgrow hash_mem */
	agg_groups_hash *groups;
	GroupEntry *single;			/* the NULL group, or the only one */
	agg_groups_iterator iter;
	bool		single_returned;
} AggRun;

/* for EXPLAIN ANALYZE */
typedef struct AggStats
{
	bool		ran;			/* this process has run the node */
	/* of this process's last scan (count_process starts them), over its runs */
	uint64		ngroups;
	Size		memory_used;	/* the most of any run */
	bool		gpu_counted;	/* counted among the processes on the GPU */
	/* summed over all runs (the leader's: over all processes), as scan.counters */
	int			leader_partitions;	/* grouped by the leader */
	double		scan_ms;		/* reading the table (into the exchange) */
	double		group_ms;		/* grouping a partitioned plan's partitions */
	double		merge_ms;		/* the GPU's candidates into the states */
} AggStats;

typedef struct AggScanState
{
	CustomScanState css;
	ScanDriver	scan;			/* the table's scan, the counts (SummedCount's), the
								 * parallel scan's shared memory (its own part: a
								 * partitioned plan's exchange) */
	AggPlanned	planned;
	AggValue   *row;			/* the row being grouped, an entry per aggregate */
	StringInfoData record;		/* a row encoded for the exchange or a spill */
	StringInfoData spilled_record;	/* one read back from a spill, aligned */
	Size		hash_mem;		/* a run's groups' memory before it spills */
	Size		group_bytes;	/* a group's states: as planned, or as measured if less */

	/* a partitioned plan's, per scan */
	GroupExchangeHome exchange_home;	/* in shared memory, or this process's */
	GroupExchange *exchange;	/* this process's part */
	bool		exhausted;		/* no partition is left to claim, or the table is read */
	List	   *spills;			/* spilled rows to group, the deepest last */

	AggRun		run;
	AggStats	stats;
} AggScanState;

SCAN_DRIVER_NODE_CHECK(AggScanState);

#endif							/* AGG_STATE_H */
