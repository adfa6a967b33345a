/*-------------------------------------------------------------------------
 *
 * colindex_query.h
 *	  A selection over a column index: what it is asked and what it counts,
 *	  as colindex_select.c runs it on the CPU (colindex_page_eval.c) or on
 *	  the GPU's copy of the index (colindex_gpu.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_QUERY_H
#define COLINDEX_QUERY_H

#include "port/atomics.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "keys.h"
#include "scan_filter_program.h"
#include "scan_key_program.h"
#include "scan_vector_key.h"

/*
 * In a parallel scan's shared memory: the index's blocks handed out to its
 * processes a chunk at a time (colindex_select.c).
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
	VectorKey  *vector_key;		/* or a bound on a pgvector distance, bound to its query */
	FilterProgram *filter;		/* WHERE clauses over indexed columns, or NULL */
	bool		exact;			/* any of the rows tied at the bound will do */
	bool		exact_if_no_errors; /* so too where the summaries show that no
									 * entry's key program raises an error */
	double		candidates_per_row; /* the planner's guess, at least 1 */
	IndexSharedBlocks *shared;	/* of a parallel scan, or NULL: every block */

	/*
	 * Where keys are bounds (a vector key): whether the rows kept so far
	 * hold the answer, every entry not yet fetched having a key below
	 * threshold; called with the row sink's argument after each round.
	 * NULL: they do once bound rows are kept.
	 */
	bool		(*answer_held) (void *arg, uint64 threshold);
} IndexSelectSpec;

/* counts for EXPLAIN ANALYZE */
typedef struct IndexSelectStats
{
	uint64		rounds;
	uint64		entries_scanned;
	uint64		pages_skipped;	/* data pages a round left unread: their summaries */
	uint64		fetched;		/* candidates whose rows were looked up */
	uint64		dead;			/* no version left that anyone can see */
	uint64		invisible;		/* none the snapshot sees */
	uint64		filtered;		/* the row failed the other WHERE clauses */
	bool		no_errors;		/* the summaries showed that no key raises */
	bool		on_gpu;			/* rounds ran on the GPU's copy of the index */
	uint64		pages_sent;		/* to bring that copy up to date */
	uint32		gpus;			/* the GPUs of that copy, a bit per CUDA ordinal */
	double		gpu_ms;			/* the GPU's selections */
	double		fetch_ms;		/* fetching the candidates' rows */
} IndexSelectStats;

#endif							/* COLINDEX_QUERY_H */
