/*-------------------------------------------------------------------------
 *
 * service_wal.c
 *	  A GPU's process follows the WAL for its page cache: each record's
 *	  changes to blocks of the relations the cache holds are noted there,
 *	  so that a copy can stand for a page no scan has pinned, all-visible
 *	  or not, while no record has changed its block.
 *
 * The process reads the WAL as it is flushed (read_local_xlog_page_no_wait)
 * from the insert position at its start, in its main thread, each time it
 * wakes: every 100 ms, or when a job thread waits for a position (which it
 * first flushes).  For each record it notes the start of the record on the
 * blocks of the main fork it names, and on every block of a relation that
 * an smgr record creates or truncates; a database or tablespace record, or
 * a read that fails (a segment already removed), makes it start again from
 * the insert position, so that no copy read before is vouched for.
 *
 * Why a copy is then the page as a query's snapshot must see it
 * (kernels/gpu_heap.cu, wal_vouches).  Each scan that may send pages
 * unpinned reads the WAL's insert position W once, after its snapshot and
 * before it locks any page (GpuHeapQuery.wal_lsn).  A copy is vouched for
 * at a later scan's W' when the copy was filled, or found current by its
 * page LSN, by a scan of position W, no record that changed the block has
 * been seen to start at or after W, and every record starting before W'
 * has been seen:
 *
 * - Every change to a tuple or line pointer of a WAL-logged heap page is
 *   made under the page's exclusive lock, and its record (which names the
 *   block) is inserted before the lock is released.  The scan of W read
 *   the page's LSN under its share lock after reading W, so a change it
 *   did not see was inserted after W: its record starts at or after W.
 * - A change by a transaction the later snapshot sees committed has its
 *   record before that transaction's commit record, which is before the
 *   snapshot and so before W'; once records before W' are seen, it is
 *   known.  A change the snapshot does not see committed (in progress,
 *   or a later writer) only touches tuples whose new state that snapshot
 *   does not see; pruning and freezing change no tuple's visibility.
 * - Hint bits change without WAL: a copy lacking them leaves tuples
 *   undecided (kernels/tuple_visibility.h), and a copy that left tuples
 *   undecided is not vouched for.  The copy's line pointers are those the
 *   filling scan counted under its lock (a copy filled while a writer added
 *   a tuple may hold part of it beyond them, and that writer's record
 *   starts after W).
 * - A relation that the cache keeps no slot for has its records skipped:
 *   its entry notes from where records were seen (RelationSlots.known_from).
 *
 * Unlogged and temporary relations, catalogs and scans in recovery never
 * send pages unpinned (scan_page_sink.c); a standby does not follow.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/rmgr.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "catalog/storage_xlog.h"
#include "common/relpath.h"
#include "miscadmin.h"

#include "compat.h"
#include "service_pool.h"
#include "service_shmem.h"
#include "service_wal.h"


/* changes passed to the cache at once */
#define CHANGES_BATCH 1024

/* the most WAL read at one wake-up, before the process looks at its other duties */
#define WAL_PER_WAKE (64 * 1024 * 1024)

/*
 * How long a job thread waits for the WAL to be followed up to its scan's
 * position; and how far behind the reading may be for it to wait at all
 * (further, its scan pins the pages as it would without the WAL).
 */
#define AWAIT_US 20000
#define AWAIT_STEP_US 50
#define AWAIT_BEHIND_MAX (16 * 1024 * 1024)

static XLogReaderState *reader;
static ReadLocalXLogPageNoWaitPrivate reader_end;
static XLogRecPtr next_record;	/* where the next record to read starts */

static GpuWalChange changes[CHANGES_BATCH];
static int	nchanges;

/* the furthest position a job thread waits for, set from any thread */
static pg_atomic_uint64 wanted;

/* A position the next record may start at, as the WAL's insert position says it. */
static XLogRecPtr
as_record_start(XLogRecPtr end)
{
	if (end % XLOG_BLCKSZ == 0)
		end += XLogSegmentOffset(end, wal_segment_size) == 0 ?
			SizeOfXLogLongPHD : SizeOfXLogShortPHD;
	return end;
}

static void
set_followed(bool followed)
{
	pg_atomic_write_u32(&service->devices[service_serving_device].wal_followed, followed);
}

/* Follow from the insert position on: nothing read before is vouched for. */
static void
start_following(GpuPageCache *cache)
{
	if (reader == NULL)
	{
		reader = XLogReaderAllocate(wal_segment_size, NULL,
									XL_ROUTINE(.page_read = read_local_xlog_page_no_wait,
											   .segment_open = wal_segment_open,
											   .segment_close = wal_segment_close),
									&reader_end);
		if (reader == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	next_record = GetXLogInsertRecPtr();
	nchanges = 0;
	gpu_page_cache_follow_wal(cache, next_record);
	set_followed(true);
}

static void
stop_following(GpuPageCache *cache)
{
	if (reader != NULL)
		XLogReaderFree(reader);
	reader = NULL;
	gpu_page_cache_follow_wal(cache, 0);
	set_followed(false);
}

/* The changes noted, every record before upto seen. */
static void
pass_changes(GpuPageCache *cache, XLogRecPtr upto)
{
	gpu_page_cache_wal_changes(cache, changes, nchanges, as_record_start(upto));
	nchanges = 0;
}

/* A change by the record that starts at lsn; those noted before passed on when full. */
static void
note_change(GpuPageCache *cache, RelFileLocator locator, BlockNumber block, XLogRecPtr lsn)
{
	GpuWalChange *change;

	if (nchanges == CHANGES_BATCH)
		pass_changes(cache, lsn);
	change = &changes[nchanges++];
	change->relation[0] = compat_locator_spc(locator);
	change->relation[1] = compat_locator_db(locator);
	change->relation[2] = compat_locator_rel(locator);
	change->block = block;
	change->lsn = lsn;
}

/*
 * The record just read: its blocks of main forks noted; a relation made
 * or truncated noted whole.  False where it changes what the cache cannot
 * follow by relation (a database or a tablespace).
 */
static bool
note_record(GpuPageCache *cache, XLogReaderState *record)
{
	RmgrId		rmid = XLogRecGetRmid(record);
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	XLogRecPtr	lsn = record->ReadRecPtr;

	if (rmid == RM_DBASE_ID || rmid == RM_TBLSPC_ID)
		return false;
	if (rmid == RM_SMGR_ID && info == XLOG_SMGR_CREATE)
		note_change(cache, compat_smgr_create_locator((xl_smgr_create *) XLogRecGetData(record)),
					GPU_WAL_WHOLE_RELATION, lsn);
	else if (rmid == RM_SMGR_ID && info == XLOG_SMGR_TRUNCATE)
		note_change(cache,
					compat_smgr_truncate_locator((xl_smgr_truncate *) XLogRecGetData(record)),
					GPU_WAL_WHOLE_RELATION, lsn);
	for (int id = 0; id <= XLogRecMaxBlockId(record); id++)
	{
		RelFileLocator locator;
		ForkNumber	fork;
		BlockNumber block;

		if (XLogRecGetBlockTagExtended(record, id, &locator, &fork, &block, NULL) &&
			fork == MAIN_FORKNUM)
			note_change(cache, locator, block, lsn);
	}
	return true;
}

/* Read the WAL flushed since the last time, up to WAL_PER_WAKE; whether some is left. */
static bool
read_records(GpuPageCache *cache)
{
	XLogRecPtr	began = next_record;

	XLogBeginRead(reader, next_record);
	for (;;)
	{
		char	   *errormsg = NULL;

		reader_end.end_of_wal = false;
		if (XLogReadRecord(reader, &errormsg) == NULL)
		{
			if (!reader_end.end_of_wal)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("could not read the WAL at %X/%X", LSN_FORMAT_ARGS(next_record)),
						 errdetail_internal("%s", errormsg ? errormsg : "no reason given")));
			pass_changes(cache, next_record);
			return false;
		}
		if (!note_record(cache, reader))
		{
			/* a database's or tablespace's files changed: start again past it */
			next_record = as_record_start(reader->EndRecPtr);
			gpu_page_cache_follow_wal(cache, next_record);
			nchanges = 0;
			return true;
		}
		next_record = reader->EndRecPtr;
		if (next_record - began >= WAL_PER_WAKE)
		{
			pass_changes(cache, next_record);
			return true;
		}
	}
}

long
service_wal_follow(void)
{
	GpuPageCache *cache = service_pool_page_cache();
	MemoryContext context = CurrentMemoryContext;
	XLogRecPtr	want;
	bool		more = false;

	if (cache == NULL)
		return -1;
	if (RecoveryInProgress())
	{
		if (reader != NULL)
			stop_following(cache);
		return -1;
	}
	PG_TRY();
	{
		if (reader == NULL)
			start_following(cache);
		/* a job thread waits for records not yet flushed */
		want = pg_atomic_read_u64(&wanted);
		if (want > GetFlushRecPtr(NULL))
			XLogFlush(want);
		more = read_records(cache);
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		ereport(LOG,
				(errmsg("gputopk GPU service follows the WAL again from its insert position"),
				 errdetail("Reading the WAL at %X/%X failed: %s",
						   LSN_FORMAT_ARGS(next_record), error->message)));
		FreeErrorData(error);
		stop_following(cache);
	}
	PG_END_TRY();
	return more ? 0 : SERVICE_WAL_FOLLOW_MS;
}

void
service_wal_init(void)
{
	pg_atomic_init_u64(&wanted, 0);
}

void
service_wal_await(XLogRecPtr lsn)
{
	GpuPageCache *cache = service_pool_page_cache();
	uint64		seen = pg_atomic_read_u64(&wanted);
	uint64		upto = cache ? gpu_page_cache_wal_upto(cache) : 0;

	if (upto == 0 || upto >= lsn)
		return;
	while (seen < lsn && !pg_atomic_compare_exchange_u64(&wanted, &seen, lsn))
		;
	service_wake_device(service_serving_device);
	if (lsn - upto > AWAIT_BEHIND_MAX)
		return;
	for (int waited = 0; waited < AWAIT_US; waited += AWAIT_STEP_US)
	{
		pg_usleep(AWAIT_STEP_US);
		upto = gpu_page_cache_wal_upto(cache);
		if (upto == 0 || upto >= lsn)
			return;
	}
}
