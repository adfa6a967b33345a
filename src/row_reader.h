/*-------------------------------------------------------------------------
 *
 * row_reader.h
 *	  Reading a heap table's rows page by page under the query's snapshot,
 *	  with the WHERE clause applied: the scan loop of the custom scans.
 *
 * A reader goes through the table's blocks in one process or, given a
 * parallel block scan in shared memory, through this process's share.
 * Each block's visible tuples come from the heap's own page-at-a-time
 * code; a row that passes the filter program and the interpreted quals is
 * left in reader->tuple, on the page, for heap_getattr.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ROW_READER_H
#define ROW_READER_H

#include "access/heapam.h"
#include "access/relscan.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"

#include "filter_program.h"

typedef struct RowReader
{
	/* set up by the caller before row_reader_begin */
	Relation	rel;
	ExprContext *econtext;
	FilterProgram *filter;		/* the compiled WHERE clauses, or NULL */
	ExprState  *table_qual;		/* the others, over table_slot, or NULL */
	TupleTableSlot *table_slot; /* the table's rows, for table_qual and expressions */
	ParallelTableScanDesc parallel; /* a parallel scan to take part in, or NULL */

	/* the scan */
	HeapScanDesc scan;
	BlockNumber next_block;		/* of a scan in one process */
	HeapTupleData tuple;		/* the current row, on the scan's page */
	int			next_row;		/* among the page's visible rows */
} RowReader;

extern void row_reader_begin(RowReader *reader, Snapshot snapshot);
extern void row_reader_end(RowReader *reader);
extern BlockNumber row_reader_next_block(RowReader *reader);
extern void row_reader_read_page(RowReader *reader, BlockNumber block);
extern bool row_reader_next_row(RowReader *reader);
extern Datum row_reader_eval(RowReader *reader, ExprState *expr, bool *isnull);
extern void row_reader_store(RowReader *reader);

#endif							/* ROW_READER_H */
