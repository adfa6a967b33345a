/*-------------------------------------------------------------------------
 *
 * colindex_select.h
 *	  GpuTopK over a column index: the top rows found from the index's
 *	  entries, fetched from the table and rechecked, round by round.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_SELECT_H
#define COLINDEX_SELECT_H

#include "executor/tuptable.h"

#include "colindex_query.h"

/*
 * A candidate's row, visible to the snapshot, in a slot of the table, and
 * its key computed from its entry: the caller checks the whole WHERE clause
 * and, if it holds, keeps the row; returns whether it did.
 */
typedef bool (*IndexRowSink) (void *arg, TupleTableSlot *slot, uint64 key);

extern void colindex_select_shared_init(IndexSharedBlocks *shared);
extern void colindex_select_rows(const IndexSelectSpec *spec, uint64 bound,
								 IndexRowSink sink, void *arg, TupleTableSlot *slot,
								 IndexSelectStats *stats);

#endif							/* COLINDEX_SELECT_H */
