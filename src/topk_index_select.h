/*-------------------------------------------------------------------------
 *
 * topk_index_select.h
 *	  GpuTopK over a column index: the top rows found from the index's
 *	  entries, fetched from the table and rechecked, round by round.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_INDEX_SELECT_H
#define TOPK_INDEX_SELECT_H

#include "executor/tuptable.h"
#include "port/atomics.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "keys.h"
#include "scan_filter_program.h"
#include "topk_key_program.h"

/*
 * In a parallel scan's shared memory: the index's blocks handed out to its
 * processes a chunk at a time (topk_index_select.c).
 */
typedef struct IndexSharedBlocks
{
	pg_atomic_uint32 next_chunk;
} IndexSharedBlocks;

typedef struct IndexSelectSpec
{
	Relation	index;
	Relation	heap;
	Snapshot	snapshot;
	KeyType		key_type;
	bool		desc;
	bool		nulls_first;
	AttrNumber	key_attno;		/* the key's column, or 0: key_program */
	KeyProgram *key_program;
	FilterProgram *filter;		/* WHERE clauses over indexed columns, or NULL */
	bool		exact;			/* any of the rows tied at the bound will do */
	double		candidates_per_row; /* the planner's guess, at least 1 */
	IndexSharedBlocks *shared;	/* of a parallel scan, or NULL: every block */
} IndexSelectSpec;

/* counts for EXPLAIN ANALYZE */
typedef struct IndexSelectStats
{
	uint64		rounds;
	uint64		entries_scanned;
	uint64		fetched;		/* candidates whose rows were looked up */
	uint64		dead;			/* no version left that anyone can see */
	uint64		invisible;		/* none the snapshot sees */
	uint64		filtered;		/* the row failed the other WHERE clauses */
	bool		on_gpu;			/* rounds ran on the GPU's copy of the index */
	uint64		pages_sent;		/* to bring that copy up to date */
	double		gpu_ms;			/* the GPU's selections */
} IndexSelectStats;

/*
 * A candidate's row, visible to the snapshot, in a slot of the table: the
 * caller checks the whole WHERE clause and, if it holds, keeps the row;
 * returns whether it did.
 */
typedef bool (*IndexRowSink) (void *arg, TupleTableSlot *slot);

extern void index_shared_blocks_init(IndexSharedBlocks *shared);
extern void index_select_rows(const IndexSelectSpec *spec, uint64 bound,
							  IndexRowSink sink, void *arg, TupleTableSlot *slot,
							  IndexSelectStats *stats);

#endif							/* TOPK_INDEX_SELECT_H */
