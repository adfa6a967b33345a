/*-------------------------------------------------------------------------
 *
 * colindex_am.c
 *	  The column index's access method: build, insert and VACUUM.
 *
 * The index is read only by GpuTopK (topk_index_select.c), never by an
 * index or bitmap scan: it has no amgettuple or amgetbitmap, so the
 * planner makes no index paths of it.  Its columns are plain columns of
 * the types colindex_type_supported() names; expressions and partial
 * indexes are refused, since GpuTopK needs an entry for every row version
 * with the columns' own values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/storage.h"
#include "catalog/index.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_dict.h"

PG_FUNCTION_INFO_V1(gputopk_index_handler);

typedef struct BuildState
{
	const ColIndexLayout *layout;
	PGAlignedBlock page;		/* the data page being filled */
	BlockNumber last_block;
	double		entries;
} BuildState;

Oid
colindex_am_oid(void)
{
	return get_index_am_oid(COLINDEX_AM_NAME, true);
}

/* The layout of the index's columns, from its tuple descriptor. */
static void
layout_of_index(Relation index, ColIndexLayout *layout)
{
	TupleDesc	desc = RelationGetDescr(index);
	Oid			types[INDEX_MAX_KEYS];

	for (int i = 0; i < desc->natts; i++)
		types[i] = TupleDescAttr(desc, i)->atttypid;
	colindex_compute_layout(layout, desc->natts, types);
}

/* The columns' layout; errors for what the index cannot hold. */
static void
check_definition(Relation index, IndexInfo *info, ColIndexLayout *layout)
{
	TupleDesc	desc = RelationGetDescr(index);

	if (info->ii_Predicate != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gputopk indexes cannot be partial"),
				 errdetail("GpuTopK needs an entry for every row of the table.")));
	for (int i = 0; i < info->ii_NumIndexAttrs; i++)
	{
		if (info->ii_IndexAttrNumbers[i] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gputopk indexes cannot have expressions"),
					 errhint("Index the columns the expression reads; GpuTopK computes it from them.")));
		if (!colindex_type_supported(TupleDescAttr(desc, i)->atttypid))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gputopk indexes cannot hold type %s",
							format_type_be(TupleDescAttr(desc, i)->atttypid))));
	}
	layout_of_index(index, layout);
}

/* Write the data page being built as a new block. */
static void
flush_build_page(Relation index, BuildState *state)
{
	Buffer		buf;
	GenericXLogState *xlog;

	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	UnlockRelationForExtension(index, ExclusiveLock);
	xlog = GenericXLogStart(index);
	memcpy(GenericXLogRegisterBuffer(xlog, buf, GENERIC_XLOG_FULL_IMAGE),
		   state->page.data, BLCKSZ);
	GenericXLogFinish(xlog);
	state->last_block = BufferGetBlockNumber(buf);
	UnlockReleaseBuffer(buf);
	colindex_init_data_page(state->page.data, state->layout);
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool alive, void *arg)
{
	BuildState *state = arg;
	Datum		stored[INDEX_MAX_KEYS];

	colindex_dict_encode_row(index, state->layout, values, isnull, stored);
	if (!colindex_page_add(state->layout, state->page.data, tid, stored, isnull))
	{
		flush_build_page(index, state);
		if (!colindex_page_add(state->layout, state->page.data, tid, stored, isnull))
			elog(ERROR, "could not add an entry to an empty page");
	}
	state->entries++;
}

/* The metapage, as block 0. */
static void
write_meta_page(Relation index, const ColIndexLayout *layout)
{
	Buffer		buf;
	GenericXLogState *xlog;

	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	UnlockRelationForExtension(index, ExclusiveLock);
	Assert(BufferGetBlockNumber(buf) == COLINDEX_METAPAGE_BLKNO);
	xlog = GenericXLogStart(index);
	colindex_init_meta_page(GenericXLogRegisterBuffer(xlog, buf, GENERIC_XLOG_FULL_IMAGE),
							layout);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

/* The block inserts try first, in the metapage. */
static void
set_insert_block(Relation index, BlockNumber insert_block)
{
	Buffer		buf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);
	GenericXLogState *xlog;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	xlog = GenericXLogStart(index);
	((ColIndexMeta *) PageGetContents(GenericXLogRegisterBuffer(xlog, buf, 0)))->insert_block =
		insert_block;
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

static IndexBuildResult *
colindex_build(Relation heap, Relation index, IndexInfo *info)
{
	BuildState *state = palloc0(sizeof(BuildState));
	ColIndexLayout *layout = palloc(sizeof(ColIndexLayout));
	IndexBuildResult *result = palloc(sizeof(IndexBuildResult));

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	check_definition(index, info, layout);
	colindex_changes_forget(index);
	state->layout = layout;
	state->last_block = InvalidBlockNumber;
	write_meta_page(index, layout);
	colindex_init_data_page(state->page.data, layout);
	result->heap_tuples = table_index_build_scan(heap, index, info, true, true,
												 build_callback, state, NULL);
	if (colindex_data_header(state->page.data)->nlive > 0)
		flush_build_page(index, state);
	set_insert_block(index, state->last_block);
	result->index_tuples = state->entries;
	return result;
}

/* The metapage of an unlogged table's index, in its init fork. */
static void
colindex_build_empty(Relation index)
{
	ColIndexLayout layout;
	PGAlignedBlock page;

	layout_of_index(index, &layout);
	colindex_init_meta_page(page.data, &layout);
	PageSetChecksumInplace(page.data, COLINDEX_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, COLINDEX_METAPAGE_BLKNO, page.data, true);
	log_newpage(&RelationGetSmgr(index)->smgr_rnode.node, INIT_FORKNUM,
				COLINDEX_METAPAGE_BLKNO, page.data, true);
	/* the write bypassed shared buffers: a checkpoint may not have seen it */
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}

static bool
colindex_aminsert(Relation index, Datum *values, bool *isnull, ItemPointer tid,
				  Relation heap, IndexUniqueCheck check_unique, bool unchanged,
				  IndexInfo *info)
{
	Datum		stored[INDEX_MAX_KEYS];

	colindex_dict_encode_row(index, colindex_layout(index), values, isnull, stored);
	colindex_insert(index, tid, stored, isnull);
	return false;
}

/*
 * Free the slots of the entries VACUUM's callback names.  A cleanup lock
 * waits out scans that hold a pin on the page between reading an entry's
 * TID and marking it dead, so a slot is not freed and taken again between
 * the two.
 */
static IndexBulkDeleteResult *
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

		vacuum_delay_point();
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
			GenericXLogFinish(xlog);
			colindex_changes_note(index, block);
		}
		else
			GenericXLogAbort(xlog);
		stats->tuples_removed += freed;
		if (colindex_data_header(BufferGetPage(buf))->nlive < layout->capacity)
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
			GenericXLogFinish(xlog);
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
	for (end = nblocks; end > dest + 1; end--)
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
		vacuum_delay_point();
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
		set_insert_block(index, InvalidBlockNumber);
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
static IndexBulkDeleteResult *
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

			vacuum_delay_point();
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

/* Never called: the index offers the planner no scans. */
static void
colindex_cost_estimate(PlannerInfo *root, IndexPath *path, double loop_count,
					   Cost *startup, Cost *total, Selectivity *selectivity,
					   double *correlation, double *pages)
{
	*startup = *total = disable_cost;
	*selectivity = 1.0;
	*correlation = 0.0;
	*pages = path->indexinfo->pages;
}

static bytea *
colindex_options(Datum reloptions, bool validate)
{
	if (validate && reloptions != (Datum) 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gputopk indexes take no storage parameters")));
	return NULL;
}

/* An operator class is valid when its type is one the index holds. */
static bool
colindex_validate(Oid opclass)
{
	HeapTuple	tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	bool		valid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator class %u", opclass);
	valid = colindex_type_supported(((Form_pg_opclass) GETSTRUCT(tuple))->opcintype);
	if (!valid)
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gputopk operator class \"%s\" is for a type the index cannot hold",
						NameStr(((Form_pg_opclass) GETSTRUCT(tuple))->opcname))));
	ReleaseSysCache(tuple);
	return valid;
}

static IndexScanDesc
colindex_begin_scan(Relation index, int nkeys, int norderbys)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("gputopk index \"%s\" cannot be scanned by itself",
					RelationGetRelationName(index)),
			 errdetail("Only the GpuTopK scan reads gputopk indexes.")));
	return NULL;				/* keep the compiler quiet */
}

Datum
gputopk_index_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = 0;
	am->amsupport = 0;
	am->amoptsprocnum = 0;
	am->amcanorder = false;
	am->amcanorderbyop = false;
	am->amcanbackward = false;
	am->amcanunique = false;
	am->amcanmulticol = true;
	am->amoptionalkey = true;
	am->amsearcharray = false;
	am->amsearchnulls = false;
	am->amstorage = false;
	am->amclusterable = false;
	am->ampredlocks = false;
	am->amcanparallel = false;
	am->amcaninclude = false;
	am->amusemaintenanceworkmem = false;
	am->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	am->amkeytype = InvalidOid;

	am->ambuild = colindex_build;
	am->ambuildempty = colindex_build_empty;
	am->aminsert = colindex_aminsert;
	am->ambulkdelete = colindex_bulk_delete;
	am->amvacuumcleanup = colindex_vacuum_cleanup;
	am->amcanreturn = NULL;
	am->amcostestimate = colindex_cost_estimate;
	am->amoptions = colindex_options;
	am->amproperty = NULL;
	am->ambuildphasename = NULL;
	am->amvalidate = colindex_validate;
	am->amadjustmembers = NULL;
	am->ambeginscan = colindex_begin_scan;
	am->amrescan = NULL;
	am->amgettuple = NULL;
	am->amgetbitmap = NULL;
	am->amendscan = NULL;
	am->ammarkpos = NULL;
	am->amrestrpos = NULL;
	am->amestimateparallelscan = NULL;
	am->aminitparallelscan = NULL;
	am->amparallelrescan = NULL;

	PG_RETURN_POINTER(am);
}
