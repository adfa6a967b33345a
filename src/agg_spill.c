/*-------------------------------------------------------------------------
 *
 * agg_spill.c
 *	  Rows of groups that did not fit in memory, partitioned by group into
 *	  temporary files (see agg_spill.h).
 *
 * Each partition's file is a BufFile made at its first row, whose buffer
 * (BLCKSZ) is the spill's memory: as PostgreSQL's hash aggregation does,
 * the partitions are as many as a quarter of hash_mem holds buffers for,
 * at least 4 and at most 32.  A row is written as its length (uint32) and
 * its bytes.  A partition is read back in chunks from its start, and its
 * file closed (so removed) when the next one is claimed or the spill is
 * freed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "agg_spill.h"

#define SPILL_MIN_PARTITIONS 4
#define SPILL_MAX_PARTITIONS 32

/* bytes read from a file at a time (more for a longer row) */
#define CHUNK_BYTES 65536

GroupSpill *
agg_spill_create(int depth, Size hash_mem)
{
	GroupSpill *spill = palloc0(sizeof(GroupSpill));
	Size		buffers = hash_mem / 4 / BLCKSZ;

	spill->depth = depth;
	spill->partitions = (int) Max(SPILL_MIN_PARTITIONS, Min(buffers, SPILL_MAX_PARTITIONS));
	spill->files = palloc0(sizeof(BufFile *) * spill->partitions);
	spill->cxt = CurrentMemoryContext;
	spill->partition = -1;
	return spill;
}

void
agg_spill_put(GroupSpill *spill, uint32 hash, const void *row, Size size)
{
	/* the high bits: the caller's hash tables use the low ones */
	int			partition = (int) (((uint64) hash * (uint64) spill->partitions) >> 32);
	uint32		length = (uint32) size;

	Assert(spill->partition < 0 && size <= MaxAllocSize);
	if (spill->files[partition] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(spill->cxt);

		spill->files[partition] = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
	}
	BufFileWrite(spill->files[partition], &length, sizeof(length));
	BufFileWrite(spill->files[partition], unconstify(void *, row), size);
	spill->rows_written++;
	spill->bytes_written += sizeof(length) + size;
}

/* Close the file of the partition read last, which removes it. */
static void
close_read(GroupSpill *spill)
{
	if (spill->partition < 0 || spill->files[spill->partition] == NULL)
		return;
	BufFileClose(spill->files[spill->partition]);
	spill->files[spill->partition] = NULL;
}

bool
agg_spill_next_partition(GroupSpill *spill)
{
	close_read(spill);
	while (++spill->partition < spill->partitions)
	{
		BufFile    *file = spill->files[spill->partition];

		if (file == NULL)
			continue;
		if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not rewind a temporary file of gputopk: %m")));
		if (spill->chunk == NULL)
		{
			spill->chunk_capacity = CHUNK_BYTES;
			spill->chunk = MemoryContextAlloc(spill->cxt, spill->chunk_capacity);
		}
		spill->chunk_bytes = spill->chunk_next = 0;
		return true;
	}
	return false;
}

const char *
agg_spill_next_row(GroupSpill *spill, Size *size)
{
	for (;;)
	{
		Size		left = spill->chunk_bytes - spill->chunk_next;
		uint32		length = 0;
		size_t		bytes;

		if (left >= sizeof(length))
		{
			memcpy(&length, spill->chunk + spill->chunk_next, sizeof(length));
			if (left >= sizeof(length) + length)
			{
				const char *row = spill->chunk + spill->chunk_next + sizeof(length);

				spill->chunk_next += sizeof(length) + length;
				*size = length;
				return row;
			}
		}
		/* the rest of the chunk to its start, then more of the file after it */
		CHECK_FOR_INTERRUPTS();
		memmove(spill->chunk, spill->chunk + spill->chunk_next, left);
		spill->chunk_bytes = left;
		spill->chunk_next = 0;
		if (sizeof(length) + length > spill->chunk_capacity)
		{
			spill->chunk_capacity = Max(sizeof(length) + length, 2 * spill->chunk_capacity);
			spill->chunk = repalloc(spill->chunk, spill->chunk_capacity);
		}
		bytes = BufFileRead(spill->files[spill->partition], spill->chunk + left,
							spill->chunk_capacity - left);
		if (bytes == 0 && left == 0)
			return NULL;
		if (bytes == 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read a row from a temporary file of gputopk"),
					 errdetail("The file ends %zu bytes into a row.", left)));
		spill->chunk_bytes += bytes;
	}
}

/* Close every file left (removing it) and free the spill. */
void
agg_spill_free(GroupSpill *spill)
{
	for (int p = 0; p < spill->partitions; p++)
		if (spill->files[p])
			BufFileClose(spill->files[p]);
	pfree(spill->files);
	if (spill->chunk)
		pfree(spill->chunk);
	pfree(spill);
}
