/*-------------------------------------------------------------------------
 *
 * groups_state.h
 *	  The GpuTopKGroups executor's state, shared by its files:
 *	  groups_exec.c (the node's callbacks, its parallel shared memory and
 *	  the order of its work), groups_table.c (a set of groups: the hash
 *	  table, rows and records into it, the groups chosen) and
 *	  groups_explain.c (EXPLAIN).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_STATE_H
#define GROUPS_STATE_H

#include "lib/binaryheap.h"
#include "nodes/execnodes.h"

#include "agg_exchange.h"
#include "groups_aggs.h"
#include "scan_driver.h"
#include "scan_gpu_stats.h"

/* a group in the hash table: its grouping value's Datum and its number */
typedef struct GroupSlot
{
	uint64		group;
	uint32		number;
	char		status;			/* simplehash's */
} GroupSlot;

#define SH_PREFIX groups_table
#define SH_ELEMENT_TYPE GroupSlot
#define SH_KEY_TYPE uint64
#define SH_SCOPE extern
#define SH_DECLARE
#include "lib/simplehash.h"

/*
 * A group of a text or varchar grouping column (a deterministic collation,
 * whose equality is that of the bytes): its value, copied, and its number.
 */
typedef struct TextGroupSlot
{
	Datum		value;
	uint32		hash;
	uint32		number;
	char		status;			/* simplehash's */
} TextGroupSlot;

#define SH_PREFIX groups_text_table
#define SH_ELEMENT_TYPE TextGroupSlot
#define SH_KEY_TYPE Datum
#define SH_SCOPE extern
#define SH_DECLARE
#include "lib/simplehash.h"

/* a group of two grouping columns: their Datums (0 where NULL), which are NULL */
typedef struct PairKey
{
	uint64		a;
	uint64		b;
	uint32		nulls;			/* bit 0: the first is NULL; bit 1: the second */
} PairKey;

typedef struct PairGroupSlot
{
	PairKey		key;
	uint32		hash;
	uint32		number;
	char		status;			/* simplehash's */
} PairGroupSlot;

#define SH_PREFIX groups_pair_table
#define SH_ELEMENT_TYPE PairGroupSlot
#define SH_KEY_TYPE PairKey
#define SH_SCOPE extern
#define SH_DECLARE
#include "lib/simplehash.h"

/*
 * Ranked by a grouping column, with a bounded keep: the best keep distinct
 * groups the scan has made so far, by their keys (larger for better), the
 * worst on top of a heap.  A row strictly worse than the worst of keep such
 * groups cannot be in a group returned.  Until the set of groups is first
 * written out (a spill, or the partitioned form's records), a group is made
 * once, and the heap holds its key alone; from then on a group may be made
 * again, and the heap holds entries that say which group each is, also kept
 * in a hash table (numbered by their entries), so that it counts once.
 */
typedef struct BestGroup
{
	uint64		key;
	PairKey		group;
} BestGroup;

typedef struct BestGroups
{
	binaryheap *keys;			/* until written */
	binaryheap *entry_heap;		/* once written: indexes of entries */
	BestGroup  *entries;
	groups_pair_table_hash *members;
	bool		written;
	bool		full;			/* keep of them */
	uint64		worst;			/* then the worst one's key */
} BestGroups;

/* no group has this number */
#define NO_GROUP PG_UINT32_MAX

/*
 * what EXPLAIN ANALYZE counts, summed over a parallel scan's processes,
 * after the heap scan's (scan_driver.h)
 */
typedef enum GroupsCount
{
	GROUPS_COUNT_GROUPS = SCAN_DRIVER_COUNTS,		/* whole groups: the table's, or the partitions' */
	GROUPS_COUNT_RETURNED,
	GROUPS_COUNT_RECORDS,		/* a partitioned plan's, written by all processes */
	GROUPS_COUNT_BYTES,
	GROUPS_COUNTS
} GroupsCount;

/* a page's rows that pass, read before they go to their groups */
typedef struct PageRows
{
	Datum		groups[MaxHeapTuplesPerPage];
	bool		group_isnull[MaxHeapTuplesPerPage];
	Datum		seconds[MaxHeapTuplesPerPage];	/* the second grouping column's */
	bool		second_isnull[MaxHeapTuplesPerPage];
	uint32		hashes[MaxHeapTuplesPerPage];
	uint32		numbers[MaxHeapTuplesPerPage];
	Datum	  **values;			/* per aggregate, a value per row */
	bool	  **isnull;
} PageRows;

typedef struct GroupsScanState
{
	CustomScanState css;
	ScanDriver	scan;			/* the table's scan, the counts (GroupsCount's), the
								 * parallel scan's shared memory (its own part: the
								 * exchange) */

	/* as planned */
	AttrNumber	group_attno;
	AttrNumber	second_attno;	/* a second grouping column's, or 0 */
	int			ngroup_columns; /* 1 or 2 */
	bool		group_by_text;	/* the column is text or varchar, by reference */
	int			naggs;
	GroupAgg   *aggs;
	int			cell_bytes;		/* a group's cells, for every aggregate */
	const GroupAgg *rank;		/* the aggregate the groups are chosen by, or NULL: */
	int			rank_column;	/* the grouping column (0 or 1), */
	KeyType		rank_key_type;	/* of this key type */
	bool		desc;
	bool		nulls_first;
	int64		keep;
	BestGroups *best;			/* ranked by a grouping column, with a bounded
								 * keep, or NULL: rows are dropped by it */
	int			partitions;		/* of the partitioned form; 0 for one process */
	List	   *exprs;			/* the grouping columns, then the aggregates */
	bool		table_rows;		/* the rows form: returns the table's rows of
								 * the groups chosen (groups_row_chosen) */
	bool		gpu_planned;	/* the GPU form: the table's pages on the GPU, */
	Oid			index_oid;		/* or its column index's entries, or InvalidOid */
	double		expected_groups;	/* the planner's estimate */
	bool		spillable;		/* in one process, may the set go to files (every
								 * aggregate's cells combine) */
	int			spill_partitions;	/* once it did, its exchange's partitions */
	List	   *interpreted;	/* the WHERE clauses that did not compile */
	PageRows	rows;
	Size		hash_mem;

	/* the partitioned form: groups exchanged by partition (agg_exchange.h) */
	GroupExchangeHome exchange_home;	/* in shared memory, or this process's */
	GroupExchange *exchange;	/* this process's use of it */
	Size		record_bytes;	/* a group's record: its value, NULL flag, cells */
	char	   *record;

	/* a set of groups: the table's (or this process's share's), or a partition's */
	MemoryContext groups_cxt;
	groups_table_hash *table;	/* by the grouping value's Datum */
	groups_text_table_hash *text_table; /* or by its bytes */
	groups_pair_table_hash *pair_table; /* or by two columns' */
	MemoryContext page_cxt;		/* a page's detoasted text values */
	uint32		ngroups;
	uint32		capacity;		/* of the arrays below, in groups */
	Datum	   *values;			/* each group's grouping value */
	Datum	   *seconds;		/* and of two columns, its second's */
	uint8	   *nulls;			/* and which are NULL (PairKey's) */
	char	   *cells;			/* each group's cells */
	uint32		null_group;		/* the NULL group's number, or NO_GROUP */
	uint32	   *kept;			/* once chosen, the numbers of the groups returned */
	bool	   *chosen;			/* the rows form's: whether each group was */
	uint32		nkept;
	uint32		next;			/* the next of them to return */
	bool		exhausted;		/* no set of groups is left */

	/* for EXPLAIN ANALYZE, besides scan.counters */
	bool		ran_on_gpu;		/* the GPU form's job gave its answer */
	uint64		pages_unheld;	/* or, over this many pages, text groups it could not hold */
	ScanGpuStats gpu;
	/* the GPU form over a column index (groups_index.c) */
	bool		index_used;		/* its job started */
	uint64		index_declined; /* or not, for this many blocks not all-visible */
	uint64		index_pages_sent;	/* to bring the index's copy up to date */
	uint64		index_entries;	/* entries of vouched blocks, the last grouping's */
	uint64		index_pages_skipped;	/* by their summaries */
	uint64		blocks_vouched; /* left to the GPU by the visibility map */
	int			index_rounds;	/* groupings asked for */
	Size		memory_used;	/* the most a set of groups of this process took */
	double		scan_ms;
	double		choose_ms;
} GroupsScanState;

SCAN_DRIVER_NODE_CHECK(GroupsScanState);

/* groups_table.c: a set of groups, in groups_cxt */
extern void groups_begin(GroupsScanState *gs);
extern void groups_reset(GroupsScanState *gs);
extern void groups_best_begin(GroupsScanState *gs);
extern void groups_best_reset(GroupsScanState *gs);
extern void groups_add_page(GroupsScanState *gs);
extern void groups_merge_record(GroupsScanState *gs, const char *record);
extern void groups_merge_text_record(GroupsScanState *gs, Datum value, const char *record);
extern void groups_record_of(GroupsScanState *gs, uint32 n, char *record);
extern void groups_write_records(GroupsScanState *gs);
extern void groups_choose(GroupsScanState *gs);
extern TupleTableSlot *groups_next_tuple(GroupsScanState *gs);
extern bool groups_row_chosen(GroupsScanState *gs);

/* groups_explain.c */
extern void groups_explain_scan(CustomScanState *node, List *ancestors,
								struct ExplainState *es);

#endif							/* GROUPS_STATE_H */
