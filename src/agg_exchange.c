/*-------------------------------------------------------------------------
 *
 * agg_exchange.c
 *	  Rows of a parallel grouping, partitioned by group through shared
 *	  temporary files (see agg_exchange.h).
 *
 * The files live in a SharedFileSet in the parallel scan's shared memory:
 * writer w's rows of partition p go to the file "gputopk.w.p", created at
 * its first row.  A claimed partition's files are read writer by writer, and
 * deleted once the partition is done (agg_exchange_rewind reads them
 * again before that); whatever is left goes with the set when the last
 * process detaches from the shared memory (workers attach too, so that no
 * file is made after the set is gone).  The barrier lets a process start
 * reading only when every process that was writing has closed its files;
 * processes join it as they start, so a worker that never starts is never
 * waited for.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>

#include "access/parallel.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"

#include "agg_exchange.h"

/* bytes read from a file at a time */
#define CHUNK_BYTES 65536

/* Writer w's file of partition p. */
static void
file_name(char *name, int writer, int partition)
{
	snprintf(name, MAXPGPATH, "gputopk.%d.%d", writer, partition);
}

/* Runs when the memory of an exchange without shared memory goes; must not throw. */
static void
delete_local_files(void *arg)
{
	SharedFileSetDeleteAll((SharedFileSet *) arg);
}

/*
 * In the leader, in the parallel scan's shared memory seg; or, for a scan
 * in one process, with seg NULL in memory of the current context, whose
 * end deletes the files.
 */
void
agg_exchange_init(GroupExchangeShared *shared, dsm_segment *seg, int participants,
				  int partitions)
{
	Assert(partitions >= 1 && partitions <= GROUP_EXCHANGE_MAX_PARTITIONS);
	SharedFileSetInit(&shared->fileset, seg);
	if (seg == NULL)
	{
		MemoryContextCallback *callback = palloc(sizeof(MemoryContextCallback));

		callback->func = delete_local_files;
		callback->arg = &shared->fileset;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, callback);
	}
	BarrierInit(&shared->barrier, 0);
	pg_atomic_init_u32(&shared->next_partition, 0);
	shared->participants = participants;
	shared->partitions = partitions;
}

/* In the leader, before a rescan's workers start: the last run's files go. */
void
agg_exchange_reinit(GroupExchangeShared *shared)
{
	SharedFileSetDeleteAll(&shared->fileset);
	BarrierInit(&shared->barrier, 0);
	pg_atomic_write_u32(&shared->next_partition, 0);
}

/*
 * In a worker: share the file set, so that it outlives this process's use.
 * The custom scan's worker callback is not given the segment; a parallel
 * worker's main argument is its handle.
 */
void
agg_exchange_attach(GroupExchangeShared *shared)
{
	dsm_segment *seg;

	Assert(IsParallelWorker());
	seg = dsm_find_mapping(DatumGetUInt32(MyBgworkerEntry->bgw_main_arg));
	if (seg == NULL)
		elog(ERROR, "gputopk: parallel worker's shared memory not found");
	SharedFileSetAttach(&shared->fileset, seg);
}

/* Join the exchange: this process writes its rows if the writing is not over. */
GroupExchange *
agg_exchange_begin(GroupExchangeShared *shared, Size row_size)
{
	GroupExchange *exchange = palloc0(sizeof(GroupExchange));

	Assert(row_size > 0 && row_size <= CHUNK_BYTES);
	exchange->shared = shared;
	exchange->row_size = row_size;
	exchange->participant = IsParallelWorker() ? ParallelWorkerNumber + 1 : 0;
	Assert(exchange->participant < shared->participants);
	exchange->writing = BarrierAttach(&shared->barrier) == 0;
	exchange->attached = true;
	exchange->files = palloc0(sizeof(BufFile *) * shared->partitions);
	exchange->partition = -1;
	exchange->chunk = palloc(CHUNK_BYTES);
	return exchange;
}

void
agg_exchange_put(GroupExchange *exchange, uint32 hash, const void *row)
{
	int			partition = agg_exchange_partition_of(exchange, hash);
	BufFile    *file = exchange->files[partition];

	Assert(exchange->writing);
	if (file == NULL)
	{
		char		name[MAXPGPATH];

		file_name(name, exchange->participant, partition);
		file = exchange->files[partition] =
			BufFileCreateFileSet(&exchange->shared->fileset.fs, name);
	}
	BufFileWrite(file, unconstify(void *, row), exchange->row_size);
	exchange->rows_written++;
}

static void
close_written(GroupExchange *exchange)
{
	for (int p = 0; p < exchange->shared->partitions; p++)
		if (exchange->files[p])
		{
			exchange->bytes_written += BufFileSize(exchange->files[p]);
			BufFileClose(exchange->files[p]);
			exchange->files[p] = NULL;
		}
}

void
agg_exchange_finish_writing(GroupExchange *exchange)
{
	if (!exchange->writing)
		return;
	close_written(exchange);
	exchange->writing = false;
	BarrierArriveAndWait(&exchange->shared->barrier, PG_WAIT_EXTENSION);
}

/* Close the partition's open file, if any. */
static void
close_read(GroupExchange *exchange)
{
	if (exchange->file == NULL)
		return;
	BufFileClose(exchange->file);
	exchange->file = NULL;
}

/* Close and delete the claimed partition's files: it is done. */
static void
drop_read(GroupExchange *exchange)
{
	char		name[MAXPGPATH];

	close_read(exchange);
	if (exchange->partition < 0)
		return;
	for (int writer = 0; writer < exchange->shared->participants; writer++)
	{
		file_name(name, writer, exchange->partition);
		BufFileDeleteFileSet(&exchange->shared->fileset.fs, name, true);
	}
}

void
agg_exchange_rewind(GroupExchange *exchange)
{
	Assert(exchange->partition >= 0);
	close_read(exchange);
	exchange->writer = -1;
	exchange->chunk_rows = exchange->chunk_next = 0;
}

bool
agg_exchange_next_partition(GroupExchange *exchange, bool unless_others)
{
	uint32		partition;

	Assert(!exchange->writing);
	drop_read(exchange);
	/* a process attached claims partitions until none is left */
	if (unless_others && exchange->attached &&
		BarrierParticipants(&exchange->shared->barrier) > 1)
		partition = (uint32) exchange->shared->partitions;
	else
		partition = pg_atomic_fetch_add_u32(&exchange->shared->next_partition, 1);
	if (partition >= (uint32) exchange->shared->partitions)
	{
		exchange->partition = -1;
		if (exchange->attached)
			BarrierDetach(&exchange->shared->barrier);
		exchange->attached = false;
		return false;
	}
	exchange->partition = (int) partition;
	exchange->writer = -1;
	exchange->chunk_rows = exchange->chunk_next = 0;
	return true;
}

/* Read the next chunk of the partition's rows; false at its end. */
static bool
read_chunk(GroupExchange *exchange)
{
	Size		capacity = CHUNK_BYTES / exchange->row_size * exchange->row_size;

	for (;;)
	{
		size_t		bytes;

		CHECK_FOR_INTERRUPTS();
		if (exchange->file)
		{
			bytes = BufFileRead(exchange->file, exchange->chunk, capacity);
			if (bytes % exchange->row_size != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not read a whole row from a temporary file of gputopk"),
						 errdetail("Read %zu bytes, not a multiple of %zu.",
								   bytes, exchange->row_size)));
			if (bytes > 0)
			{
				exchange->chunk_rows = bytes / exchange->row_size;
				exchange->chunk_next = 0;
				return true;
			}
			close_read(exchange);
		}
		if (exchange->writer + 1 >= exchange->shared->participants)
			return false;
		exchange->writer++;
		{
			char		name[MAXPGPATH];

			file_name(name, exchange->writer, exchange->partition);
			exchange->file = BufFileOpenFileSet(&exchange->shared->fileset.fs, name,
												O_RDONLY, true);
		}
	}
}

const void *
agg_exchange_next_row(GroupExchange *exchange)
{
	Assert(exchange->partition >= 0);
	if (exchange->chunk_next == exchange->chunk_rows && !read_chunk(exchange))
		return NULL;
	return exchange->chunk + exchange->row_size * exchange->chunk_next++;
}

/* Leave the exchange early or at the end: files open are closed, the barrier left. */
GroupExchange *
agg_exchange_join(GroupExchangeHome *home, int partitions, Size row_size)
{
	if (home->shared == NULL && home->local == NULL)
	{
		home->local = palloc0(sizeof(GroupExchangeShared));
		agg_exchange_init(home->local, NULL, 1, partitions);
	}
	return agg_exchange_begin(home->shared ? home->shared : home->local, row_size);
}

void
agg_exchange_restart_local(GroupExchangeHome *home)
{
	if (home->local)
		agg_exchange_reinit(home->local);
}

void
agg_exchange_share(GroupExchangeHome *home, GroupExchange **exchange, ScanSharedEvent event,
				   void *own, ParallelContext *pcxt, int partitions)
{
	switch (event)
	{
		case SCAN_SHARED_INITIALIZE:
			/* without a segment (none could be made, so no workers) it stays local */
			if (pcxt->seg != NULL)
			{
				agg_exchange_init(own, pcxt->seg, pcxt->nworkers + 1, partitions);
				home->shared = own;
			}
			break;
		case SCAN_SHARED_REINITIALIZE:

			/*
			 * The rescan reaches the scan only at its next ExecProcNode,
			 * after this: a leader still in the last run's exchange (its
			 * reader stopped early) leaves it before the barrier starts over.
			 */
			agg_exchange_leave(exchange);
			if (home->shared)
				agg_exchange_reinit(home->shared);
			break;
		case SCAN_SHARED_ATTACH:
			/* the leader's segment made, the exchange is in it */
			home->shared = own;
			agg_exchange_attach(home->shared);
			break;
		case SCAN_SHARED_DETACH:
			if (home->shared == NULL)
				break;
			agg_exchange_leave(exchange);
			home->shared = NULL;
			break;
	}
}

void
agg_exchange_leave(GroupExchange **exchange)
{
	agg_exchange_end(*exchange);
	*exchange = NULL;
}

void
agg_exchange_end(GroupExchange *exchange)
{
	if (exchange == NULL)
		return;
	close_written(exchange);
	drop_read(exchange);
	if (exchange->attached)
		BarrierDetach(&exchange->shared->barrier);
	exchange->attached = false;
	pfree(exchange->files);
	pfree(exchange->chunk);
	pfree(exchange);
}
