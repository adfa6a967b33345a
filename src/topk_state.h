/*-------------------------------------------------------------------------
 *
 * topk_state.h
 *	  The GpuTopK executor's state, shared by its files: topk_exec.c (the
 *	  node's callbacks, its runs, its parallel shared memory) and
 *	  topk_explain.c (EXPLAIN).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_STATE_H
#define TOPK_STATE_H

#include "nodes/execnodes.h"
#include "utils/tuplesort.h"

#include "colindex_select.h"
#include "scan_filter_program.h"
#include "scan_key_program.h"
#include "scan_driver.h"
#include "scan_vector_key.h"
#include "topk_scan.h"

/*
 * counts for EXPLAIN ANALYZE, summed over runs and processes
 * (scan_counters.h), after the heap scan's (scan_driver.h)
 */
typedef enum TopkCount
{
	TOPK_COUNT_ROWS_KEYED = SCAN_DRIVER_COUNTS,
	TOPK_COUNT_CANDIDATES,
	TOPK_COUNT_BOUND_REREADS,	/* a vector key's: reads of the blocks again */
	/* over a column index: IndexSelectStats's counts */
	TOPK_COUNT_INDEX_ROUNDS,
	TOPK_COUNT_INDEX_NO_ERRORS, /* scans whose summaries showed no key raises */
	TOPK_COUNT_INDEX_ENTRIES,
	TOPK_COUNT_INDEX_PAGES_SKIPPED,
	TOPK_COUNT_INDEX_FETCHED,
	TOPK_COUNT_INDEX_DEAD,
	TOPK_COUNT_INDEX_INVISIBLE,
	TOPK_COUNT_INDEX_FILTERED,
	TOPK_COUNTS
} TopkCount;

StaticAssertDecl(TOPK_COUNTS <= SCAN_COUNTERS_MAX, "too many counts for scan_counters.h");

/* where a block's qualifying rows start among the scan's ordinals */
typedef struct BlockStart
{
	BlockNumber block;
	uint64		first;
} BlockStart;

typedef struct TopkScanState
{
	CustomScanState css;
	ScanDriver	scan;			/* the table's scan, the counts, the parallel
								 * scan's shared memory */

	/* from the plan */
	KeyType		key_type;
	TopkKeySource key_source;
	AttrNumber	key_attno;		/* the key's column, or 0: key_program or key_expr */
	KeyProgram *key_program;	/* the key's expression compiled, or NULL */
	Oid			key_value_type; /* float4 or float8: a compiled key, whose
								 * value a candidate's key gives back */
	ExprState  *key_expr;
	VectorKey  *vector_key;		/* a pgvector distance keyed by its bounds, or NULL */
	bool		desc;
	bool		limit_with_ties;
	int			nsort;			/* the ORDER BY; its first item is the key */
	AttrNumber *sort_attnos;	/* in sort_desc */
	ExprState **sort_exprs;		/* for items that are not columns, or NULL */
	TupleDesc	sort_desc;		/* the table's columns, then those items */
	TupleTableSlot *sort_input; /* a row of sort_desc, or NULL: the table's */
	Oid		   *sort_ops;
	Oid		   *sort_collations;
	bool	   *sort_nulls_first;
	ExprState  *limit_count;
	ExprState  *limit_offset;
	Relation	index;			/* the column index read instead of the table, or NULL */
	IndexSharedBlocks *index_shared;	/* over it, a parallel scan's blocks, or NULL */
	FilterProgram *index_filter;	/* the WHERE clauses checked on its entries */
	double		candidates_per_row;

	/* per run */
	bool		done;			/* the sorted rows are ready */
	uint64		bound;			/* k + m, or PG_UINT64_MAX for no limit */
	TopkMode	mode;
	Tuplesortstate *sort;
	bool		sort_bounded;	/* the tuplesort keeps only the bound's rows */
	uint64		returned;		/* rows returned from it */
	TupleTableSlot *sorted_slot;
	BlockStart *blocks;
	uint64		nblocks;
	uint64		blocks_cap;
	/* a vector key's: the candidates' keys of their true values */
	uint64	   *true_keys;
	size_t		ntrue_keys;
	size_t		true_keys_room;

	/* for EXPLAIN ANALYZE: the last run's */
	TopkBackend backend;
	const char *algorithm;
	/* summed over runs (and TopkCount's in scan.counters) */
	IndexSelectStats index_stats;	/* the GPU's part: its counts are in counters */
	double		scan_ms;
	double		fetch_ms;
} TopkScanState;

SCAN_DRIVER_NODE_CHECK(TopkScanState);

/* topk_explain.c */
extern void topk_explain_scan(CustomScanState *node, List *ancestors,
							  struct ExplainState *es);

#endif							/* TOPK_STATE_H */
