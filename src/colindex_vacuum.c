/*-------------------------------------------------------------------------
 *
 * colindex_vacuum.c
 *	  VACUUM of a column index: the entries of dead rows freed, and the data
 *	  pages compacted when enough of them can be emptied (a clustered
 *	  index's only where whole pages were emptied: see reusable()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/xact.h"
#include "catalog/storage.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_cluster.h"
#include "compat.h"


/*
 * Whether inserts may take the page's free slots.  In a clustered index
 * only an empty page's: an entry added to a page widens its summary, and
 * new entries come in no order, so that a few in each page would leave no
 * page to skip (3M rows, 10% more inserted, 10% updated, VACUUM, then 10%
 * more inserted: 207 pages skipped, where the built index had skipped
 * 14,444 of 14,778).  Its pages then hold fewer entries until REINDEX.
 */
static bool
reusable(Relation index, const ColIndexLayout *layout, Page page)
{
	int			nlive = colindex_data_header(page)->nlive;

	return colindex_cluster_enabled(index) ? nlive == 0 : nlive < layout->capacity;
}

/*
 * Free the slots of the entries VACUUM's callback names.  A cleanup lock
 * waits out scans that hold a pin on the page between reading an entry's
 * TID and marking it dead, so a slot is not freed and taken again between
 * the two.
 */
IndexBulkDeleteResult *
colindex_bulk_delete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
					 IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	const ColIndexLayout *layout = colindex_layout(index);
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL,
											 info->strategy);
		GenericXLogState *xlog;
		Page		page;
		int			high;
		int			freed = 0;

		compat_vacuum_delay_point();
		LockBufferForCleanup(buf);
		xlog = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(xlog, buf, 0);
		if (!colindex_is_data_page(page))
		{
			GenericXLogAbort(xlog);
			UnlockReleaseBuffer(buf);
			continue;
		}
		high = colindex_data_header(page)->high;
		for (int slot = 0; slot < high; slot++)
		{
			if (!colindex_slot_live(layout, page, slot))
				continue;
			if (callback(colindex_slot_tid(layout, page, slot), callback_state))
			{
				colindex_page_free_slot(layout, page, slot);
				freed++;
			}
			else
				stats->num_index_tuples++;
		}
		if (freed > 0)
		{
			colindex_page_summarize(layout, page);
			GenericXLogFinish(xlog);
			colindex_changes_note(index, block);
		}
		else
			GenericXLogAbort(xlog);
		stats->tuples_removed += freed;
		if (reusable(index, layout, BufferGetPage(buf)))
			RecordFreeIndexPage(index, block);
		UnlockReleaseBuffer(buf);
	}
	stats->num_pages = nblocks;
	return stats;
}

/* a compaction moves entries when it can empty at least 1/this of the data pages */
#define COMPACT_FRACTION 8

/* A data page in buf locked exclusively, or InvalidBuffer where the block is no data page. */
static Buffer
lock_data_page(Relation index, BlockNumber block, BufferAccessStrategy strategy)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL, strategy);

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (colindex_is_data_page(BufferGetPage(buf)))
		return buf;
	UnlockReleaseBuffer(buf);
	return InvalidBuffer;
}

/*
 * Move the entries of the page at block src into free slots of the pages
 * from *dest on, in one generic WAL record per pair of pages; *dest ends
 * at the first page that still has room.  Returns how many moved.
 */
static int
empty_page(Relation index, const ColIndexLayout *layout, BlockNumber src, BlockNumber *dest,
		   BufferAccessStrategy strategy)
{
	Buffer		srcbuf = InvalidBuffer;
	int			total = 0;

	for (; *dest < src; (*dest)++)
	{
		Buffer		destbuf = lock_data_page(index, *dest, strategy);
		GenericXLogState *xlog;
		Page		to;
		Page		from;
		int			moved = 0;

		if (!BufferIsValid(destbuf))
			continue;
		/* pages are locked in block order: the destination first */
		if (!BufferIsValid(srcbuf))
			srcbuf = lock_data_page(index, src, strategy);
		xlog = GenericXLogStart(index);
		to = GenericXLogRegisterBuffer(xlog, destbuf, 0);
		from = GenericXLogRegisterBuffer(xlog, srcbuf, 0);
		for (int slot = colindex_data_header(from)->high - 1; slot >= 0; slot--)
			if (colindex_slot_live(layout, from, slot))
			{
				if (!colindex_page_move(layout, to, from, slot))
					break;
				moved++;
			}
		if (moved > 0)
		{
			colindex_page_summarize(layout, from);
			GenericXLogFinish(xlog);
		}
		else
			GenericXLogAbort(xlog);
		total += moved;
		UnlockReleaseBuffer(destbuf);
		if (colindex_data_header(BufferGetPage(srcbuf))->nlive == 0)
			break;
		/* the source still has entries: the next destination is locked after it, so let go */
		UnlockReleaseBuffer(srcbuf);
		srcbuf = InvalidBuffer;
	}
	if (BufferIsValid(srcbuf))
		UnlockReleaseBuffer(srcbuf);
	return total;
}

/*
 * Compact the index: move the entries of its last data pages into free
 * slots of earlier ones, and give the empty pages at its end back to the
 * file system.  Only when no other backend has the index open (a
 * conditional exclusive lock, as VACUUM truncates a table): scans name
 * entries by their place while they run, and inserts choose pages.  The
 * GPU service's copy is then forgotten, and loaded again when next used.
 * entries: the live entries, data_pages: the pages but the metapage.  A
 * VACUUM that vacuums the table's indexes in parallel does not compact.
 */
static void
compact(Relation index, double entries, BlockNumber data_pages, BufferAccessStrategy strategy)
{
	const ColIndexLayout *layout = colindex_layout(index);
	BlockNumber nblocks;
	BlockNumber end;
	BlockNumber dest = COLINDEX_METAPAGE_BLKNO + 1;
	double		needed = ceil(entries / layout->capacity);
	int			moved = 0;

	/*
	 * Not in a parallel VACUUM's leader: the exclusive lock is WAL-logged for
	 * standbys under the transaction's id, which parallel mode cannot assign.
	 */
	if (data_pages - needed < Max(1.0, (double) data_pages / COMPACT_FRACTION) ||
		IsInParallelMode() || !ConditionalLockRelation(index, AccessExclusiveLock))
		return;
	nblocks = RelationGetNumberOfBlocks(index);
	/* a clustered index's entries stay where the build put them (reusable) */
	for (end = colindex_cluster_enabled(index) ? dest + 1 : nblocks; end > dest + 1; end--)
	{
		Buffer		buf = lock_data_page(index, end - 1, strategy);
		bool		empty;

		/* a dictionary page stays where it is, and so do the pages before it */
		if (!BufferIsValid(buf))
			break;
		empty = colindex_data_header(BufferGetPage(buf))->nlive == 0;
		UnlockReleaseBuffer(buf);
		if (!empty)
			moved += empty_page(index, layout, end - 1, &dest, strategy);
		compat_vacuum_delay_point();
		/* as VACUUM truncating a table: others waiting for the index come first */
		if (dest >= end - 1 || LockHasWaitersRelation(index, AccessExclusiveLock))
			break;
	}
	/* the empty data pages at the end */
	for (end = nblocks; end > COLINDEX_METAPAGE_BLKNO + 1; end--)
	{
		Buffer		buf = lock_data_page(index, end - 1, strategy);
		bool		empty = BufferIsValid(buf) &&
			colindex_data_header(BufferGetPage(buf))->nlive == 0;

		if (BufferIsValid(buf))
			UnlockReleaseBuffer(buf);
		if (!empty)
			break;
	}
	if (end < nblocks)
	{
		colindex_insert_set_block(index, InvalidBlockNumber);
		RelationTruncate(index, end);
	}
	/* the GPU's copy may hold the pages cut off */
	if (moved > 0 || end < nblocks)
		colindex_changes_forget(index);
	UnlockRelation(index, AccessExclusiveLock);
}

/*
 * After VACUUM: the entries left, the index compacted where that empties
 * enough pages, and the free space map brought up to date.
 */
IndexBulkDeleteResult *
colindex_vacuum_cleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	BlockNumber nblocks;

	if (info->analyze_only)
		return stats;
	nblocks = RelationGetNumberOfBlocks(index);
	/* without a bulk delete before, the entries are counted here */
	if (stats == NULL)
	{
		stats = palloc0(sizeof(IndexBulkDeleteResult));
		for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
		{
			Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL,
												 info->strategy);

			compat_vacuum_delay_point();
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			if (colindex_is_data_page(BufferGetPage(buf)))
				stats->num_index_tuples += colindex_data_header(BufferGetPage(buf))->nlive;
			UnlockReleaseBuffer(buf);
		}
	}
	/* every page but the metapage is taken for a data page: the few dictionary pages too */
	compact(index, stats->num_index_tuples, nblocks - (COLINDEX_METAPAGE_BLKNO + 1),
			info->strategy);
	stats->num_pages = RelationGetNumberOfBlocks(index);
	IndexFreeSpaceMapVacuum(index);
	return stats;
}
