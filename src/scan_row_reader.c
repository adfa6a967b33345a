/*-------------------------------------------------------------------------
 *
 * scan_row_reader.c
 *	  Reading a heap table's rows page by page under the query's snapshot,
 *	  with the WHERE clause applied.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class_d.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/rel.h"

#include "scan_row_reader.h"

/*
 * Whether a range table entry is a table the reader can read: a plain heap
 * table (its pages in the heap's format), read whole (no inheritance
 * children, no TABLESAMPLE).  For the planner.
 */
bool
row_reader_can_read(RangeTblEntry *rte)
{
	Relation	rel;
	bool		heap;

	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION || rte->inh ||
		rte->tablesample != NULL)
		return false;
	rel = table_open(rte->relid, NoLock);
	heap = rel->rd_rel->relam == HEAP_TABLE_AM_OID;
	table_close(rel, NoLock);
	return heap;
}

/* Start reading the table, in this process alone or in parallel. */
void
row_reader_begin(RowReader *reader, Snapshot snapshot)
{
	Relation	rel = reader->rel;

	if (reader->parallel)
	{
		reader->scan = (HeapScanDesc) table_beginscan_parallel(rel, reader->parallel);
		table_block_parallelscan_startblock_init(rel, reader->scan->rs_parallelworkerdata,
												 (ParallelBlockTableScanDesc) reader->parallel);
	}
	else
		reader->scan = (HeapScanDesc) table_beginscan_strat(rel, snapshot, 0, NULL, true, false);
	if (!(reader->scan->rs_base.rs_flags & SO_ALLOW_PAGEMODE))
		elog(ERROR, "gputopk: the scan's snapshot is not an MVCC snapshot");
	reader->next_block = 0;
	reader->next_row = 0;
	reader->tuple.t_tableOid = RelationGetRelid(rel);
}

void
row_reader_end(RowReader *reader)
{
	ExecClearTuple(reader->table_slot);
	table_endscan(&reader->scan->rs_base);
	reader->scan = NULL;
}

/* The next block this process reads, or InvalidBlockNumber. */
BlockNumber
row_reader_next_block(RowReader *reader)
{
	HeapScanDesc scan = reader->scan;

	if (reader->parallel)
		return table_block_parallelscan_nextpage(scan->rs_base.rs_rd,
												 scan->rs_parallelworkerdata,
												 (ParallelBlockTableScanDesc) scan->rs_base.rs_parallel);
	return reader->next_block < scan->rs_nblocks ? reader->next_block++ : InvalidBlockNumber;
}

/*
 * Read a block: the offsets of its tuples visible to the snapshot, found
 * under the page's share lock as the heap's own page-at-a-time code finds
 * them (pruning the page first when it is worth it).  A page that is
 * all-visible (every tuple on it visible to every snapshot) needs no check
 * per tuple.  Scans that must record serializable conflicts go through
 * that code itself (heapgetpage).
 */
void
row_reader_read_page(RowReader *reader, BlockNumber block)
{
	HeapScanDesc scan = reader->scan;
	Relation	rel = scan->rs_base.rs_rd;
	Snapshot	snapshot = scan->rs_base.rs_snapshot;
	Buffer		buffer;
	Page		page;
	OffsetNumber lines;
	bool		all_visible;
	int			ntup = 0;

	CHECK_FOR_INTERRUPTS();
	reader->next_row = 0;
	ItemPointerSetBlockNumber(&reader->tuple.t_self, block);
	if (CheckForSerializableConflictOutNeeded(rel, snapshot))
	{
		heapgetpage(&scan->rs_base, block);
		reader->page = BufferGetPage(scan->rs_cbuf);
		return;
	}
	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = InvalidBuffer;
	buffer = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, scan->rs_strategy);
	scan->rs_cbuf = buffer;
	scan->rs_cblock = block;
	heap_page_prune_opt(rel, buffer);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	TestForOldSnapshot(snapshot, rel, page);
	all_visible = PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
	lines = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= lines; off++)
	{
		ItemId		item = PageGetItemId(page, off);
		HeapTupleData tuple;

		if (!ItemIdIsNormal(item))
			continue;
		if (!all_visible)
		{
			tuple.t_tableOid = RelationGetRelid(rel);
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tuple.t_len = ItemIdGetLength(item);
			ItemPointerSet(&tuple.t_self, block, off);
			if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buffer))
				continue;
		}
		scan->rs_vistuples[ntup++] = off;
	}
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	scan->rs_ntuples = ntup;
	reader->page = page;
}

/* The current row into table_slot, as the expression context's scan tuple. */
void
row_reader_store(RowReader *reader)
{
	ExecStoreBufferHeapTuple(&reader->tuple, reader->table_slot, reader->scan->rs_cbuf);
	reader->econtext->ecxt_scantuple = reader->table_slot;
	ResetExprContext(reader->econtext);
}

/* An expression's value on the current row (already in table_slot if quals ran). */
Datum
row_reader_eval(RowReader *reader, ExprState *expr, bool *isnull)
{
	if (reader->table_qual == NULL)
		row_reader_store(reader);
	return ExecEvalExpr(expr, reader->econtext, isnull);
}
