/*-------------------------------------------------------------------------
 *
 * agg_exchange.h
 *	  Rows of a parallel grouping, partitioned by group through shared
 *	  temporary files, so that each group ends up in one process.
 *
 * Every process of a parallel scan writes the rows it reads, each to the
 * file of its group's partition; once all of them are done writing (a
 * barrier), the processes claim partitions one at a time and read each
 * claimed partition's rows from every writer's file.  A process that joins
 * after the writing is over only reads.  Rows are fixed-size records whose
 * contents are the caller's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_EXCHANGE_H
#define AGG_EXCHANGE_H

#include "port/atomics.h"
#include "scan_driver.h"
#include "storage/barrier.h"
#include "storage/buffile.h"
#include "storage/dsm.h"
#include "storage/sharedfileset.h"

/* in the parallel scan's shared memory */
typedef struct GroupExchangeShared
{
	SharedFileSet fileset;
	Barrier		barrier;		/* phase 0: writing */
	pg_atomic_uint32 next_partition;	/* the next one to claim */
	int			participants;	/* the leader (0) and the workers planned */
	int			partitions;
} GroupExchangeShared;

/*
 * Where a scan's exchange lives: in its parallel scan's shared memory
 * (the scan's own part of it, scan_driver.h), or, outside parallel mode,
 * in this process alone, made when first joined.
 */
typedef struct GroupExchangeHome
{
	GroupExchangeShared *shared;	/* in the parallel scan's memory, or NULL */
	GroupExchangeShared *local; /* in this process alone, or NULL */
} GroupExchangeHome;

/* one process's use of the exchange */
typedef struct GroupExchange
{
	GroupExchangeShared *shared;
	Size		row_size;
	int			participant;	/* this process's number */
	bool		attached;		/* to the barrier */
	bool		writing;		/* this process writes rows */
	BufFile   **files;			/* being written, by partition (NULL: none yet) */
	uint64		rows_written;
	uint64		bytes_written;

	/* the partition being read */
	int			partition;
	int			writer;			/* whose file is open */
	BufFile    *file;
	char	   *chunk;			/* rows read from it */
	size_t		chunk_rows;
	size_t		chunk_next;
} GroupExchange;

/*
 * Partitions at most: a writer holds a file of each open, with a buffer of
 * BLCKSZ (2 MB for 256), within max_files_per_process's default of 1000.
 */
#define GROUP_EXCHANGE_MAX_PARTITIONS 256

extern void agg_exchange_init(GroupExchangeShared *shared, dsm_segment *seg,
							  int participants, int partitions);
extern void agg_exchange_reinit(GroupExchangeShared *shared);
extern void agg_exchange_attach(GroupExchangeShared *shared);

extern GroupExchange *agg_exchange_begin(GroupExchangeShared *shared, Size row_size);
extern void agg_exchange_end(GroupExchange *exchange);

/* This process out of the exchange, if in it: *exchange ended, and NULL. */
extern void agg_exchange_leave(GroupExchange **exchange);

/*
 * This process's use of the home's exchange, made in this process alone
 * with partitions where the home has none yet.
 */
extern GroupExchange *agg_exchange_join(GroupExchangeHome *home, int partitions,
										Size row_size);

/* A rescan outside parallel mode: the exchange of this process alone starts over. */
extern void agg_exchange_restart_local(GroupExchangeHome *home);

/*
 * A scan's shared memory event (a ScanSharedCallback's) for the exchange
 * of partitions at own: placed there; before a rescan's workers start,
 * *exchange (this process's use) left and the exchange started over;
 * attached; or, for the leader before the memory goes, *exchange left.
 */
extern void agg_exchange_share(GroupExchangeHome *home, GroupExchange **exchange,
							   ScanSharedEvent event, void *own, ParallelContext *pcxt,
							   int partitions);

/*
 * Write a row of the group whose 32-bit hash is given (rows of one group
 * must give one hash); only while exchange->writing.
 */
static inline int
agg_exchange_partition_of(const GroupExchange *exchange, uint32 hash)
{
	/* the high bits: the caller's hash tables use the low ones */
	return (int) (((uint64) hash * (uint64) exchange->shared->partitions) >> 32);
}
extern void agg_exchange_put(GroupExchange *exchange, uint32 hash, const void *row);

/* After the last put: wait until every writer is done. */
extern void agg_exchange_finish_writing(GroupExchange *exchange);

/*
 * Claim a partition to read; false when none is left, or with unless_others
 * when another process is still claiming (it will claim the rest).
 */
extern bool agg_exchange_next_partition(GroupExchange *exchange, bool unless_others);

/* The claimed partition's next row, or NULL at its end. */
extern const void *agg_exchange_next_row(GroupExchange *exchange);

/* Read the claimed partition again from its first row. */
extern void agg_exchange_rewind(GroupExchange *exchange);

#endif							/* AGG_EXCHANGE_H */
