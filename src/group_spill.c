/*-------------------------------------------------------------------------
 *
 * group_spill.c
 *	  Rows of groups that did not fit in memory, partitioned by group into
 *	  temporary files (see group_spill.h).
 *
 * Each partition's file is a BufFile made at its first row, whose buffer
 * (BLCKSZ) is the spill's memory: as PostgreSQL's hash aggregation does,
 * the partitions are as many as a quarter of hash_mem holds buffers for,
 * at least 4 and at most 32.  A partition is read back from its start and
 * closed (so removed) when the next one is claimed or the spill is freed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "group_spill.h"

#define SPILL_MIN_PARTITIONS 4
#define SPILL_MAX_PARTITIONS 32

/* bytes read from a file at a time */
#define CHUNK_BYTES 65536

GroupSpill *
group_spill_create(int depth, Size row_size, Size hash_mem)
{
	GroupSpill *spill = palloc0(sizeof(GroupSpill));
	Size		buffers = hash_mem / 4 / BLCKSZ;

	Assert(row_size > 0 && row_size <= CHUNK_BYTES);
	spill->cxt = CurrentMemoryContext;
	spill->depth = depth;
	spill->row_size = row_size;
	spill->partitions = (int) Max(SPILL_MIN_PARTITIONS, Min(buffers, SPILL_MAX_PARTITIONS));
	spill->files = palloc0(sizeof(BufFile *) * spill->partitions);
	spill->partition = -1;
	return spill;
}

void
group_spill_put(GroupSpill *spill, uint32 hash, const void *row)
{
	/* the high bits: the caller's hash tables use the low ones */
	int			partition = (int) (((uint64) hash * (uint64) spill->partitions) >> 32);

	Assert(spill->partition < 0);
	if (spill->files[partition] == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(spill->cxt);

		spill->files[partition] = BufFileCreateTemp(false);
		MemoryContextSwitchTo(old);
	}
	BufFileWrite(spill->files[partition], unconstify(void *, row), spill->row_size);
	spill->rows_written++;
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
group_spill_next_partition(GroupSpill *spill)
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
			spill->chunk = MemoryContextAlloc(spill->cxt, CHUNK_BYTES);
		spill->chunk_rows = spill->chunk_next = 0;
		return true;
	}
	return false;
}

const void *
group_spill_next_row(GroupSpill *spill)
{
	Assert(spill->partition >= 0 && spill->partition < spill->partitions);
	if (spill->chunk_next == spill->chunk_rows)
	{
		Size		capacity = CHUNK_BYTES / spill->row_size * spill->row_size;
		size_t		bytes;

		CHECK_FOR_INTERRUPTS();
		bytes = BufFileRead(spill->files[spill->partition], spill->chunk, capacity);
		if (bytes % spill->row_size != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read a whole row from a temporary file of gputopk"),
					 errdetail("Read %zu bytes, not a multiple of %zu.", bytes, spill->row_size)));
		if (bytes == 0)
			return NULL;
		spill->chunk_rows = bytes / spill->row_size;
		spill->chunk_next = 0;
	}
	return spill->chunk + spill->row_size * spill->chunk_next++;
}

/* Close every file left (removing it) and free the spill. */
void
group_spill_free(GroupSpill *spill)
{
	for (int p = 0; p < spill->partitions; p++)
		if (spill->files[p])
			BufFileClose(spill->files[p]);
	pfree(spill->files);
	if (spill->chunk)
		pfree(spill->chunk);
	pfree(spill);
}
