/*-------------------------------------------------------------------------
 *
 * agg_spill.h
 *	  Rows of groups that did not fit in memory, partitioned by group into
 *	  temporary files, for a grouping to read back one partition at a time.
 *
 * A grouping whose states outgrow hash_mem keeps the groups it has and
 * writes the rows of every other group to a spill: one temporary file per
 * partition, the partition chosen by the high bits of a hash of the group
 * (rows of one group must give one hash).  Once the writing is done, the
 * partitions are read back one at a time; reading a partition may spill
 * again, to a spill of its own (the caller hashes each level differently).
 * Rows are records of any length whose contents are the caller's.  The
 * files are the backend's ordinary temporary files: closed and removed
 * when the spill is freed, at the end of the transaction or when the
 * process exits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_SPILL_H
#define AGG_SPILL_H

#include "storage/buffile.h"

/*
 * Spills at most this deep: each level divides a run's groups at least by
 * 4, so only groups whose states alone outgrow hash_mem go deeper, and
 * spilling them again would not help.
 */
#define GROUP_SPILL_MAX_DEPTH 8

typedef struct GroupSpill
{
	int			depth;			/* 1 for a spill of the first grouping */
	int			partitions;
	BufFile   **files;			/* by partition (NULL: no row yet) */
	MemoryContext cxt;			/* the spill's, for its files */
	uint64		rows_written;
	uint64		bytes_written;

	/* reading */
	int			partition;		/* the one being read, or -1 */
	char	   *chunk;			/* bytes read from its file */
	Size		chunk_capacity;
	Size		chunk_bytes;
	Size		chunk_next;		/* where the next row's length is */
} GroupSpill;

/* In the current memory context, with partitions for hash_mem bytes of buffers. */
extern GroupSpill *agg_spill_create(int depth, Size hash_mem);
extern void agg_spill_free(GroupSpill *spill);

/* Write a row of the group whose 32-bit hash is given. */
extern void agg_spill_put(GroupSpill *spill, uint32 hash, const void *row, Size size);

/* After the last put, the next partition that has rows to read; false when none is left. */
extern bool agg_spill_next_partition(GroupSpill *spill);

/*
 * The partition's next row and its size, or NULL at its end; valid until
 * the next call, and not aligned.
 */
extern const char *agg_spill_next_row(GroupSpill *spill, Size *size);

#endif							/* AGG_SPILL_H */
