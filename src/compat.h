/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  What differs between the PostgreSQL versions gputopk builds against,
 *	  15 to 18, in one place: the rest of src/ is written for the newest
 *	  API, and this header gives it on the older versions.
 *
 * PostgreSQL 16 renamed RelFileNode to RelFileLocator (its fields too), and
 * gave adjust_appendrel_attrs_multilevel the rels instead of their relids.
 * PostgreSQL 17 removed old_snapshot_threshold (snapshots no longer get too
 * old), PGPROC's pgprocno, and heapgetpage, whose work on a page the scan
 * has pinned is heap_prepare_pagescan's; it added read streams.  PostgreSQL 18 moved ExplainState
 * and the EXPLAIN property functions into headers of their own, made the
 * postmaster's list of background workers doubly linked, marks functions
 * that do not return with pg_noreturn, before the declaration, gave
 * vacuum_delay_point an argument and get_ordering_op_properties a
 * CompareType for the strategy number, and puts a grouping query's
 * RTE_GROUP into EXPLAIN's range table (rtable_size leaves it out).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COMPAT_H
#define COMPAT_H

#include "access/heapam.h"
#include "access/stratnum.h"
#include "commands/vacuum.h"
#include "commands/explain.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#if PG_VERSION_NUM >= 160000
#include "storage/relfilelocator.h"
#else
#include "storage/relfilenode.h"
#endif
#if PG_VERSION_NUM >= 170000
#include "storage/read_stream.h"
#endif
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

#if PG_VERSION_NUM < 170000
typedef struct ReadStream ReadStream;
#endif

#if PG_VERSION_NUM < 160000
typedef RelFileNode RelFileLocator;
#define RelFileLocatorEquals(a, b) RelFileNodeEquals(a, b)
#endif

/* the file of a relation, and the parts of it */
#if PG_VERSION_NUM >= 160000
#define compat_rel_locator(rel) ((rel)->rd_locator)
#define compat_locator_spc(locator) ((locator).spcOid)
#define compat_locator_db(locator) ((locator).dbOid)
#define compat_locator_rel(locator) ((locator).relNumber)
#else
#define compat_rel_locator(rel) ((rel)->rd_node)
#define compat_locator_spc(locator) ((locator).spcNode)
#define compat_locator_db(locator) ((locator).dbNode)
#define compat_locator_rel(locator) ((locator).relNode)
#endif

/* the relation an smgr record makes or truncates (catalog/storage_xlog.h) */
#if PG_VERSION_NUM >= 160000
#define compat_smgr_create_locator(xlrec) ((xlrec)->rlocator)
#define compat_smgr_truncate_locator(xlrec) ((xlrec)->rlocator)
#else
#define compat_smgr_create_locator(xlrec) ((xlrec)->rnode)
#define compat_smgr_truncate_locator(xlrec) ((xlrec)->rnode)
#endif

/* an expression over a partition's parent, in the partition's columns */
#if PG_VERSION_NUM >= 160000
#define compat_adjust_to_child(root, node, rel) \
	adjust_appendrel_attrs_multilevel(root, node, rel, (rel)->top_parent)
#else
#define compat_adjust_to_child(root, node, rel) \
	adjust_appendrel_attrs_multilevel(root, node, (rel)->relids, (rel)->top_parent_relids)
#endif

/*
 * The postmaster's background workers (postmaster/bgworker_internals.h):
 * compat_bgworker_foreach(iter) { RegisteredBgWorker *rw =
 * compat_bgworker_of(iter); ... }
 */
#if PG_VERSION_NUM >= 180000
#define compat_bgworker_iter dlist_iter
#define compat_bgworker_foreach(iter) dlist_foreach(iter, &BackgroundWorkerList)
#define compat_bgworker_of(iter) dlist_container(RegisteredBgWorker, rw_lnode, (iter).cur)
#else
#define compat_bgworker_iter slist_iter
#define compat_bgworker_foreach(iter) slist_foreach(iter, &BackgroundWorkerList)
#define compat_bgworker_of(iter) slist_container(RegisteredBgWorker, rw_lnode, (iter).cur)
#endif

/* a process's number, for GetPGProcByNumber */
#if PG_VERSION_NUM >= 170000
#define compat_proc_number(proc) GetNumberFromPGProc(proc)
#else
#define compat_proc_number(proc) ((proc)->pgprocno)
#endif

/*
 * Whether a snapshot can get too old (old_snapshot_threshold), and the
 * check of a page that a scan under it reads.
 */
#if PG_VERSION_NUM >= 170000
#define compat_snapshots_get_too_old() false
#define compat_test_for_old_snapshot(snapshot, relation, page) ((void) 0)
#else
#define compat_snapshots_get_too_old() (old_snapshot_threshold >= 0)
#define compat_test_for_old_snapshot(snapshot, relation, page) \
	TestForOldSnapshot(snapshot, relation, page)
#endif

/* whether EXPLAIN qualifies column names with their table, as PostgreSQL's nodes do */
#if PG_VERSION_NUM >= 180000
#define compat_explain_prefix(es) ((es)->verbose || (es)->rtable_size > 1)
#else
#define compat_explain_prefix(es) ((es)->verbose || list_length((es)->rtable) > 1)
#endif

/* a column's offset in a tuple without NULLs, where fixed-width columns come before it, or -1 */
#if PG_VERSION_NUM >= 180000
#define compat_attcacheoff(desc, i) (TupleDescCompactAttr((desc), (i))->attcacheoff)
#else
#define compat_attcacheoff(desc, i) (TupleDescAttr((desc), (i))->attcacheoff)
#endif

/* VACUUM's pause, where vacuum_cost_delay asks for one */
#if PG_VERSION_NUM >= 180000
#define compat_vacuum_delay_point() vacuum_delay_point(false)
#else
#define compat_vacuum_delay_point() vacuum_delay_point()
#endif

/* Whether an ordering operator sorts descending (a btree ">"). */
static inline bool
compat_ordering_op_descending(Oid opno)
{
	Oid			opfamily;
	Oid			opcintype;
#if PG_VERSION_NUM >= 180000
	CompareType cmptype;

	get_ordering_op_properties(opno, &opfamily, &opcintype, &cmptype);
	return cmptype == COMPARE_GT;
#else
	int16		strategy;

	get_ordering_op_properties(opno, &opfamily, &opcintype, &strategy);
	return strategy == BTGreaterStrategyNumber;
#endif
}

/*
 * A stream of a relation's blocks, as next_block names them (InvalidBlockNumber
 * ends it), read ahead with I/O combined (PostgreSQL 17's read streams);
 * NULL before 17, where the caller reads each block itself.
 */
typedef BlockNumber (*CompatNextBlock) (ReadStream *stream, void *arg, void *per_buffer_data);

static inline ReadStream *
compat_read_stream_begin(Relation rel, BufferAccessStrategy strategy,
						 CompatNextBlock next_block, void *arg)
{
#if PG_VERSION_NUM >= 170000
	return read_stream_begin_relation(READ_STREAM_SEQUENTIAL, strategy, rel, MAIN_FORKNUM,
									  next_block, arg, 0);
#else
	return NULL;
#endif
}

/* The stream's next block, pinned, or InvalidBuffer at its end. */
static inline Buffer
compat_read_stream_next(ReadStream *stream)
{
#if PG_VERSION_NUM >= 170000
	return read_stream_next_buffer(stream, NULL);
#else
	return InvalidBuffer;
#endif
}

/* The stream ended, the blocks it read ahead unpinned. */
static inline void
compat_read_stream_end(ReadStream *stream)
{
#if PG_VERSION_NUM >= 170000
	read_stream_end(stream);
#endif
}

/*
 * The scan's current page becomes block, read and its visible tuples found
 * by the heap's own page-at-a-time code (which records serializable
 * conflicts), as a sequential scan does; the last page's pin is released.
 */
static inline void
compat_heap_scan_page(HeapScanDesc scan, BlockNumber block)
{
#if PG_VERSION_NUM >= 170000
	Buffer		buffer = ReadBufferExtended(scan->rs_base.rs_rd, MAIN_FORKNUM, block,
											RBM_NORMAL, scan->rs_strategy);

	if (BufferIsValid(scan->rs_cbuf))
		ReleaseBuffer(scan->rs_cbuf);
	scan->rs_cbuf = buffer;
	scan->rs_cblock = block;
	heap_prepare_pagescan(&scan->rs_base);
#else
	heapgetpage(&scan->rs_base, block);
#endif
}

#endif							/* COMPAT_H */
