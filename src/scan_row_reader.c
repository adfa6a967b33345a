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
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class_d.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "gpu_heap.h"
#include "keys.h"
#include "recent_buffers.h"
#include "scan_row_reader.h"
#include "tuple_visibility.h"

StaticAssertDecl(offsetof(HeapTupleHeaderData, t_choice.t_heap.t_xmin) == TUPLE_XMIN_OFFSET &&
				 offsetof(HeapTupleHeaderData, t_choice.t_heap.t_xmax) == TUPLE_XMAX_OFFSET &&
				 offsetof(HeapTupleHeaderData, t_infomask) == TUPLE_INFOMASK_OFFSET,
				 "tuple_visibility.h's offsets are the heap tuple header's");
StaticAssertDecl(HEAP_MOVED == TUPLE_MOVED &&
				 HEAP_XMAX_KEYSHR_LOCK == TUPLE_XMAX_KEYSHR_LOCK &&
				 HEAP_XMAX_EXCL_LOCK == TUPLE_XMAX_EXCL_LOCK &&
				 HEAP_XMAX_LOCK_ONLY == TUPLE_XMAX_LOCK_ONLY &&
				 HEAP_XMIN_COMMITTED == TUPLE_XMIN_COMMITTED &&
				 HEAP_XMIN_INVALID == TUPLE_XMIN_INVALID &&
				 HEAP_XMAX_COMMITTED == TUPLE_XMAX_COMMITTED &&
				 HEAP_XMAX_INVALID == TUPLE_XMAX_INVALID &&
				 HEAP_XMAX_IS_MULTI == TUPLE_XMAX_IS_MULTI &&
				 HEAP_LOCK_MASK == TUPLE_LOCK_MASK &&
				 FirstNormalTransactionId == TUPLE_FIRST_NORMAL_XID,
				 "tuple_visibility.h's bits are the heap tuple header's");

/*
 * Whether a range table entry is a table the reader can read: a plain heap
 * table (its pages in the heap's format), read whole (no inheritance
 * children, no TABLESAMPLE).  For the planner.
 */
bool
scan_row_reader_can_read(RangeTblEntry *rte)
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

static int
xid_compare(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/*
 * What the scan's snapshot says of xids, for tuple_visibility (where it
 * is an MVCC snapshot, not a historic one): its bounds and its xids in
 * progress, top-level and subtransactions', sorted, in the current memory
 * context.
 */
static void
describe_snapshot(RowReader *reader)
{
	Snapshot	snapshot = reader->scan->rs_base.rs_snapshot;
	TupleSnapshot *s = &reader->snapshot_xids;
	uint32	   *xids;

	reader->header_rules = snapshot->snapshot_type == SNAPSHOT_MVCC;
	if (!reader->header_rules)
		return;
	s->xmin = snapshot->xmin;
	s->xmax = snapshot->xmax;
	s->no_own_xids = !TransactionIdIsValid(GetTopTransactionIdIfAny());
	s->complete = !snapshot->suboverflowed;
	s->ninprogress = snapshot->xcnt + (uint32) Max(snapshot->subxcnt, 0);
	xids = palloc(sizeof(uint32) * Max(s->ninprogress, 1));
	memcpy(xids, snapshot->xip, sizeof(uint32) * snapshot->xcnt);
	if (snapshot->subxcnt > 0)
		memcpy(xids + snapshot->xcnt, snapshot->subxip, sizeof(uint32) * snapshot->subxcnt);
	qsort(xids, s->ninprogress, sizeof(uint32), xid_compare);
	s->inprogress = xids;
}

/*
 * Start reading the table, in this process alone or in parallel.  The scan
 * is made in the query's memory, not in a run's that GpuTopKAgg may drop
 * and begin again while the scan goes on (agg_groups.c).
 */
void
scan_row_reader_begin(RowReader *reader, Snapshot snapshot)
{
	Relation	rel = reader->rel;
	MemoryContext old = MemoryContextSwitchTo(reader->econtext->ecxt_per_query_memory);

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
	describe_snapshot(reader);
	MemoryContextSwitchTo(old);
	reader->next_block = 0;
	reader->stream = NULL;
	reader->streamed = InvalidBuffer;
	reader->next_row = 0;
	reader->tuple.t_tableOid = RelationGetRelid(rel);
	reader->remember_blocks = false;
	reader->taken = NULL;
	reader->ntaken = reader->taken_cap = 0;
}

/*
 * From now on, keep a list of the blocks the scan takes (reader->taken, in
 * the query's memory until scan_row_reader_end), in the order taken.
 */
void
scan_row_reader_remember_blocks(RowReader *reader)
{
	reader->remember_blocks = true;
}

static void
remember_block(RowReader *reader, BlockNumber block)
{
	if (reader->ntaken == reader->taken_cap)
	{
		reader->taken_cap = Max(2 * reader->taken_cap, 1024);
		reader->taken = reader->taken == NULL ?
			MemoryContextAllocExtended(reader->econtext->ecxt_per_query_memory,
									   sizeof(BlockNumber) * reader->taken_cap, MCXT_ALLOC_HUGE) :
			repalloc_huge(reader->taken, sizeof(BlockNumber) * reader->taken_cap);
	}
	reader->taken[reader->ntaken++] = block;
}

void
scan_row_reader_end(RowReader *reader)
{
	if (BufferIsValid(reader->streamed))
		ReleaseBuffer(reader->streamed);
	if (reader->stream)
		compat_read_stream_end(reader->stream);
	ExecClearTuple(reader->table_slot);
	table_endscan(&reader->scan->rs_base);
	reader->scan = NULL;
	if (reader->taken)
		pfree(reader->taken);
	reader->taken = NULL;
	reader->ntaken = reader->taken_cap = 0;
}

/* The next block this process reads, or InvalidBlockNumber. */
BlockNumber
scan_row_reader_next_block(RowReader *reader)
{
	HeapScanDesc scan = reader->scan;
	BlockNumber block;

	if (reader->parallel)
		block = table_block_parallelscan_nextpage(scan->rs_base.rs_rd,
												  scan->rs_parallelworkerdata,
												  (ParallelBlockTableScanDesc) scan->rs_base.rs_parallel);
	else
		block = reader->next_block < scan->rs_nblocks ? reader->next_block++ : InvalidBlockNumber;
	if (reader->remember_blocks && block != InvalidBlockNumber)
		remember_block(reader, block);
	return block;
}

static BlockNumber
stream_next_block(ReadStream *stream, void *arg, void *per_buffer_data)
{
	return scan_row_reader_next_block((RowReader *) arg);
}

/*
 * The next block this process reads itself (scan_row_reader_read_page),
 * or InvalidBlockNumber.  Where the version has read streams (17) and the
 * table is larger than shared_buffers, so that a scan must read pages from
 * outside them, the blocks are read ahead, their I/O combined, as
 * PostgreSQL's own sequential scans read them: 1.35x on a table read from
 * the OS's page cache.  Pages in shared_buffers are faster through the
 * buffers they were last found in (recent_buffers.c) than through a stream,
 * which looks each up (about 1.2x on a prewarmed table): a table that fits
 * is read block by block.  A scan that leaves pages to the GPU names its
 * blocks with scan_row_reader_next_block instead: it reads only some.
 */
BlockNumber
scan_row_reader_next_read_block(RowReader *reader)
{
	HeapScanDesc scan = reader->scan;

	if (reader->stream == NULL && scan->rs_nblocks > (BlockNumber) NBuffers)
	{
		/* in the query's memory, not in a run's that GpuTopKAgg measures */
		MemoryContext old = MemoryContextSwitchTo(reader->econtext->ecxt_per_query_memory);

		reader->stream = compat_read_stream_begin(scan->rs_base.rs_rd, scan->rs_strategy,
												  stream_next_block, reader);
		MemoryContextSwitchTo(old);
	}
	if (reader->stream == NULL)
		return scan_row_reader_next_block(reader);
	Assert(!BufferIsValid(reader->streamed));
	reader->streamed = compat_read_stream_next(reader->stream);
	return BufferIsValid(reader->streamed) ? BufferGetBlockNumber(reader->streamed) :
		InvalidBlockNumber;
}

/*
 * Whether a page can be read without the snapshot, where it is: a scan
 * that need not record serializable conflicts (scan_row_reader_can_read_whole),
 * outside recovery, and a page that is all-visible, every tuple on it
 * visible to every snapshot.  While the page stays pinned its tuples stay
 * where they are (moving them, pruning, takes a cleanup lock, which the pin
 * excludes) and its normal line pointers stay normal (only pruning marks
 * one dead).  Writers may add tuples meanwhile: beyond the line pointers
 * counted now, or, where the page's free-line hint is set, in line
 * pointers unused now, which is why the normal ones are then listed.  So
 * a page that qualifies under the share lock can be read later, unlocked,
 * whatever writers do meanwhile: rows they update or delete stay visible
 * to the query's snapshot.
 */
static bool
readable_whole(Page page, Snapshot snapshot)
{
	return PageIsAllVisible(page) && !snapshot->takenDuringRecovery;
}

/*
 * The offsets of the tuples of the pinned, share-locked page visible to the
 * snapshot, into offsets (room for MaxHeapTuplesPerPage), and their count.
 * A page that is all_visible (readable_whole: every tuple on it visible to
 * every snapshot) needs no check per tuple; on another, each normal line pointer's tuple
 * is checked, and *checked counts them: by its header where that settles
 * it (tuple_visibility.h), else by the heap's own routine
 * (HeapTupleSatisfiesVisibility, which also sets hint bits).
 */
static int
visible_offsets(RowReader *reader, Buffer buffer, BlockNumber block, Page page,
				bool all_visible, OffsetNumber *offsets, int *checked)
{
	HeapScanDesc scan = reader->scan;
	Relation	rel = scan->rs_base.rs_rd;
	Snapshot	snapshot = scan->rs_base.rs_snapshot;
	OffsetNumber lines = PageGetMaxOffsetNumber(page);
	int			ntup = 0;

	*checked = 0;
	for (OffsetNumber off = FirstOffsetNumber; off <= lines; off++)
	{
		ItemId		item = PageGetItemId(page, off);
		HeapTupleData tuple;

		if (!ItemIdIsNormal(item))
			continue;
		if (!all_visible)
		{
			TupleVisibility settled = reader->header_rules ?
				tuple_visibility((const uint8 *) PageGetItem(page, item), &reader->snapshot_xids) :
				TUPLE_UNDECIDED;

			(*checked)++;
			if (settled == TUPLE_INVISIBLE)
				continue;
			if (settled == TUPLE_UNDECIDED)
			{
				tuple.t_tableOid = RelationGetRelid(rel);
				tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
				tuple.t_len = ItemIdGetLength(item);
				ItemPointerSet(&tuple.t_self, block, off);
				if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buffer))
					continue;
			}
		}
		offsets[ntup++] = off;
	}
	return ntup;
}

/*
 * The visible tuples of the pinned, share-locked page into the scan's
 * rs_vistuples; the lock is released.
 */
static void
collect_visible(RowReader *reader, Buffer buffer, BlockNumber block, Page page)
{
	HeapScanDesc scan = reader->scan;
	int			checked;

	scan->rs_ntuples = visible_offsets(reader, buffer, block, page,
									   readable_whole(page, scan->rs_base.rs_snapshot),
									   scan->rs_vistuples, &checked);
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	reader->page = page;
}

/* The reader at a new block, with no rows yet. */
static void
start_page(RowReader *reader, BlockNumber block)
{
	CHECK_FOR_INTERRUPTS();
	reader->next_row = 0;
	ItemPointerSetBlockNumber(&reader->tuple.t_self, block);
}

/* A block pinned (pruned first when that is worth it) and share-locked. */
static Buffer
pin_and_lock(RowReader *reader, BlockNumber block)
{
	HeapScanDesc scan = reader->scan;
	Relation	rel = scan->rs_base.rs_rd;
	Buffer		buffer = reader->streamed;

	/* the stream's block, or one read by its buffer last found */
	if (BufferIsValid(buffer) && BufferGetBlockNumber(buffer) == block)
		reader->streamed = InvalidBuffer;
	else
		buffer = recent_buffers_read(rel, block, scan->rs_strategy);
	heap_page_prune_opt(rel, buffer);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	compat_test_for_old_snapshot(scan->rs_base.rs_snapshot, rel, BufferGetPage(buffer));
	return buffer;
}

/* The scan's current page becomes buffer's (pinned), the last one's pin released. */
static void
set_current(RowReader *reader, Buffer buffer, BlockNumber block)
{
	HeapScanDesc scan = reader->scan;

	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = buffer;
	scan->rs_cblock = block;
}

/*
 * Read a block: the offsets of its tuples visible to the snapshot, found
 * under the page's share lock as the heap's own page-at-a-time code finds
 * them (pruning the page first when it is worth it).  Scans that must
 * record serializable conflicts go through that code itself
 * (compat_heap_scan_page).
 */
void
scan_row_reader_read_page(RowReader *reader, BlockNumber block)
{
	HeapScanDesc scan = reader->scan;
	Buffer		buffer;

	start_page(reader, block);
	if (CheckForSerializableConflictOutNeeded(scan->rs_base.rs_rd, scan->rs_base.rs_snapshot))
	{
		if (BufferIsValid(reader->streamed))
		{
			ReleaseBuffer(reader->streamed);
			reader->streamed = InvalidBuffer;
		}
		compat_heap_scan_page(scan, block);
		reader->page = BufferGetPage(scan->rs_cbuf);
		return;
	}
	buffer = pin_and_lock(reader, block);
	set_current(reader, buffer, block);
	collect_visible(reader, buffer, block, BufferGetPage(buffer));
}

bool
scan_row_reader_can_read_whole(RowReader *reader)
{
	HeapScanDesc scan = reader->scan;

	return !CheckForSerializableConflictOutNeeded(scan->rs_base.rs_rd,
												  scan->rs_base.rs_snapshot);
}

/*
 * Pin a block for another reader of its page (where
 * scan_row_reader_can_read_whole), found as scan_row_reader_read_page finds
 * it: whole gets the pin, for the caller to release, and the line pointers
 * to read, and the reader has no rows for it.  On an all-visible page those
 * are its normal line pointers; on another, the ones whose tuples are
 * visible to the snapshot, decided here under the page's share lock, or,
 * where the GPU decides (gpu_decides) and every change to the page is
 * WAL-logged (its LSN moves), its normal ones, the page marked decide
 * (kernels/gpu_heap.h).  The pin keeps them where they are: pruning
 * moves tuples only under a cleanup lock, which waits for every pin to go,
 * and a tuple visible to the snapshot stays so, and is not removed, while
 * the snapshot is held.
 */
void
scan_row_reader_pin(RowReader *reader, BlockNumber block, bool gpu_decides, WholePage *whole)
{
	Buffer		buffer;
	Page		page;

	start_page(reader, block);
	buffer = pin_and_lock(reader, block);
	page = BufferGetPage(buffer);
	whole->buffer = buffer;
	whole->lines = PageGetMaxOffsetNumber(page);
	/* read as a hint bit's WAL record may set it under a share lock */
	whole->lsn = RelationNeedsWAL(reader->rel) ? BufferGetLSNAtomic(buffer) :
		InvalidXLogRecPtr;
	whole->all_visible = readable_whole(page, reader->scan->rs_base.rs_snapshot);
	whole->decide = gpu_decides && !whole->all_visible && whole->lsn != InvalidXLogRecPtr;
	whole->checked = 0;
	whole->masked = (!whole->all_visible && !whole->decide) || PageHasFreeLinePointers(page);
	if (whole->masked)
	{
		OffsetNumber visible[MaxHeapTuplesPerPage];
		int			checked;
		int			n = visible_offsets(reader, buffer, block, page,
										whole->all_visible || whole->decide, visible, &checked);

		memset(whole->normal, 0, sizeof(whole->normal));
		for (int i = 0; i < n; i++)
			whole->normal[(visible[i] - 1) / 32] |= (uint32) 1 << ((visible[i] - 1) % 32);
		whole->checked = checked;
	}
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	reader->scan->rs_ntuples = 0;
}

/* The current row into table_slot, as the expression context's scan tuple. */
void
scan_row_reader_store(RowReader *reader)
{
	ExecStoreBufferHeapTuple(&reader->tuple, reader->table_slot, reader->scan->rs_cbuf);
	reader->econtext->ecxt_scantuple = reader->table_slot;
	ResetExprContext(reader->econtext);
}

/*
 * An expression's value on the current row (already in table_slot if quals
 * ran), computed in the row's memory: what it allocates (a detoasted
 * argument, a by-reference result) is freed with the next row.
 */
Datum
scan_row_reader_eval(RowReader *reader, ExprState *expr, bool *isnull)
{
	if (reader->table_qual == NULL)
		scan_row_reader_store(reader);
	return ExecEvalExprSwitchContext(expr, reader->econtext, isnull);
}

/*
 * Whether the tuple at (block, off) of the pinned buffer is visible to the
 * snapshot, decided by the heap's own routine under the page's share lock;
 * tuple points to it.  A line pointer that is not normal (pruned since: an
 * aborted insert) holds none.
 */
static bool
visible_at(Buffer buffer, BlockNumber block, OffsetNumber off, Snapshot snapshot,
		   HeapTuple tuple)
{
	Page		page;
	ItemId		line;
	bool		visible = false;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	line = PageGetItemId(page, off);
	if (off <= PageGetMaxOffsetNumber(page) && ItemIdIsNormal(line))
	{
		tuple->t_data = (HeapTupleHeader) PageGetItem(page, line);
		tuple->t_len = ItemIdGetLength(line);
		ItemPointerSet(&tuple->t_self, block, off);
		visible = HeapTupleSatisfiesVisibility(tuple, snapshot, buffer);
	}
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	return visible;
}

/*
 * The rows of a top-k answer whose visibility the GPU left to the CPU (refs
 * with GPU_HEAP_TID_UNDECIDED), decided (visible_at): those not visible to
 * the snapshot are taken out of the answer, the others keep their place
 * without the bit.  Returns how many were taken out; *checked gets how many
 * were decided.
 */
size_t
scan_row_reader_settle_tids(RowReader *reader, Snapshot snapshot, TopkResult *result,
							uint64 *checked)
{
	Relation	rel = reader->rel;
	HeapTupleData tuple;
	size_t		kept = 0;
	size_t		removed;

	*checked = 0;
	tuple.t_tableOid = RelationGetRelid(rel);
	for (size_t i = 0; i < result->count; i++)
	{
		TopkItem	item = result->items[i];
		BlockNumber block = (BlockNumber) (item.ref >> 16);
		OffsetNumber off = (OffsetNumber) (item.ref & ~(uint64) GPU_HEAP_TID_UNDECIDED & 0xFFFF);
		bool		visible = true;

		if (item.ref & GPU_HEAP_TID_UNDECIDED)
		{
			Buffer		buffer;

			CHECK_FOR_INTERRUPTS();
			(*checked)++;
			buffer = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, NULL);
			visible = visible_at(buffer, block, off, snapshot, &tuple);
			ReleaseBuffer(buffer);
			item.ref = (uint64) block << 16 | off;
		}
		if (visible)
			result->items[kept++] = item;
	}
	removed = result->count - kept;
	result->count = kept;
	return removed;
}

/*
 * The rows of a top-k answer whose refs are TIDs (block << 16 | offset),
 * which pages read on the GPU gave, each in reader->tuple and table_slot
 * while keep(arg) runs, in TID order.  The rows were visible to the
 * snapshot when the scan read their pages (all-visible, checked one by
 * one, settled on the GPU or by scan_row_reader_settle_tids), so they stay
 * visible, and where they are, while it is held; both are checked.
 */
void
scan_row_reader_fetch_tids(RowReader *reader, Snapshot snapshot, const TopkResult *result,
						   void (*keep) (void *arg), void *arg)
{
	Relation	rel = reader->rel;
	Buffer		buffer = InvalidBuffer;
	HeapTuple	tuple = &reader->tuple;
	size_t		count = result->count;
	uint64	   *tids = palloc_extended(sizeof(uint64) * Max(count, 1), MCXT_ALLOC_HUGE);

	for (size_t i = 0; i < count; i++)
		tids[i] = result->items[i].ref;
	qsort(tids, count, sizeof(uint64), key_compare_u64);
	tuple->t_tableOid = RelationGetRelid(rel);
	for (size_t i = 0; i < count; i++)
	{
		BlockNumber block = (BlockNumber) (tids[i] >> 16);
		OffsetNumber off = (OffsetNumber) (tids[i] & 0xFFFF);

		CHECK_FOR_INTERRUPTS();
		if (!BufferIsValid(buffer) || BufferGetBlockNumber(buffer) != block)
		{
			if (BufferIsValid(buffer))
				ReleaseBuffer(buffer);
			buffer = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, NULL);
		}
		if (!visible_at(buffer, block, off, snapshot, tuple))
			elog(ERROR, "gputopk: row (%u,%u) read on the GPU is no longer visible", block, off);
		ExecStoreBufferHeapTuple(tuple, reader->table_slot, buffer);
		keep(arg);
	}
	ExecClearTuple(reader->table_slot);
	if (BufferIsValid(buffer))
		ReleaseBuffer(buffer);
	pfree(tids);
}
