/*-------------------------------------------------------------------------
 *
 * scan_row_reader.h
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
#ifndef SCAN_ROW_READER_H
#define SCAN_ROW_READER_H

#include "access/heapam.h"
#include "access/relscan.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"

#include "compat.h"
#include "scan_filter_program.h"
#include "topk.h"
#include "tuple_visibility.h"

typedef struct RowReader
{
	/* set up by the caller before scan_row_reader_begin */
	Relation	rel;
	ExprContext *econtext;
	FilterProgram *filter;		/* the compiled WHERE clauses, or NULL */
	ExprState  *table_qual;		/* the others, over table_slot, or NULL */
	TupleTableSlot *table_slot; /* the table's rows, for table_qual and expressions */
	ParallelTableScanDesc parallel; /* a parallel scan to take part in, or NULL */

	/* the scan */
	HeapScanDesc scan;
	BlockNumber next_block;		/* of a scan in one process */
	ReadStream *stream;			/* its blocks read ahead (17 and later), or NULL */
	Buffer		streamed;		/* the stream's last block, pinned, not yet read */
	HeapTupleData tuple;		/* the current row, on the scan's page */
	/* the scan's snapshot for tuple headers, where header_rules */
	bool		header_rules;
	TupleSnapshot snapshot_xids;
	/* the page being read: its visible rows are scan->rs_vistuples */
	Page		page;
	int			next_row;

	/*
	 * Every block the scan has taken, where scan_row_reader_remember_blocks
	 * asked for them: a GPU job that fails leaves the blocks it had to be
	 * read again on the CPU.
	 */
	bool		remember_blocks;
	BlockNumber *taken;
	size_t		ntaken;
	size_t		taken_cap;
} RowReader;

extern bool scan_row_reader_can_read(RangeTblEntry *rte);
extern void scan_row_reader_begin(RowReader *reader, Snapshot snapshot);
extern void scan_row_reader_end(RowReader *reader);
extern BlockNumber scan_row_reader_next_block(RowReader *reader);
extern void scan_row_reader_remember_blocks(RowReader *reader);
extern BlockNumber scan_row_reader_next_read_block(RowReader *reader);
extern void scan_row_reader_read_page(RowReader *reader, BlockNumber block);
extern bool scan_row_reader_can_read_whole(RowReader *reader);
/* a page left whole to another reader, pinned, and its line pointers to read */
typedef struct WholePage
{
	Buffer		buffer;
	OffsetNumber lines;			/* line pointers 1 to lines, */
	bool		masked;			/* if set, only those listed here */
	uint32		normal[(MaxHeapTuplesPerPage + 31) / 32];	/* bit i - 1: line pointer i */
	XLogRecPtr	lsn;			/* its LSN where every change to it is WAL-logged, else 0 */
	bool		all_visible;	/* by the page's flag: its normal ones are listed */
	bool		decide;			/* else, where the GPU decides: the normal ones */
	int			checked;		/* else the tuples whose visibility was decided here */
} WholePage;

extern void scan_row_reader_pin(RowReader *reader, BlockNumber block, bool gpu_decides,
								WholePage *whole);
extern Datum scan_row_reader_eval(RowReader *reader, ExprState *expr, bool *isnull);
extern void scan_row_reader_store(RowReader *reader);
extern size_t scan_row_reader_settle_tids(RowReader *reader, Snapshot snapshot,
										  TopkResult *result, uint64 *checked);
extern void scan_row_reader_fetch_tids(RowReader *reader, Snapshot snapshot,
									   const TopkResult *result, void (*keep) (void *arg),
									   void *arg);

/*
 * The page's next visible row that passes the quals, in reader->tuple (and
 * in table_slot when there are interpreted quals); false at the end of the
 * page.
 */
static inline bool
scan_row_reader_next_row(RowReader *reader)
{
	while (reader->next_row < reader->scan->rs_ntuples)
	{
		OffsetNumber off = reader->scan->rs_vistuples[reader->next_row++];
		ItemId		item = PageGetItemId(reader->page, off);

		reader->tuple.t_data = (HeapTupleHeader) PageGetItem(reader->page, item);
		reader->tuple.t_len = ItemIdGetLength(item);
		ItemPointerSetOffsetNumber(&reader->tuple.t_self, off);
		if (reader->filter &&
			!scan_filter_program_passes(reader->filter, &reader->tuple, RelationGetDescr(reader->rel)))
			continue;
		if (reader->table_qual == NULL)
			return true;
		scan_row_reader_store(reader);
		if (ExecQual(reader->table_qual, reader->econtext))
			return true;
	}
	return false;
}

/*
 * A column of the current row, as heap_getattr gives it, with the common
 * case inlined: the scan loops call this for every row.
 */
static pg_attribute_always_inline Datum
scan_row_reader_column(RowReader *reader, AttrNumber attno, TupleDesc desc, bool *isnull)
{
	HeapTuple	tuple = &reader->tuple;

	if (likely(attno <= HeapTupleHeaderGetNatts(tuple->t_data)))
		return fastgetattr(tuple, attno, desc, isnull);
	return heap_getattr(tuple, attno, desc, isnull);
}

#endif							/* SCAN_ROW_READER_H */
