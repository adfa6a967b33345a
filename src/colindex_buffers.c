/*-------------------------------------------------------------------------
 *
 * colindex_buffers.c
 *	  Reading a column index's pages through the shared buffers they were
 *	  last found in.
 *
 * A scan over the index on the CPU reads every page, and finding each
 * page's buffer in the buffer mapping table (a hash lookup under a
 * partition lock, its entry and the buffer's header seldom in the CPU's
 * cache) took a fifth of a scan's time.  This backend remembers, for the
 * indexes it read last, the buffer each block was found in, and pins that
 * buffer with ReadRecentBuffer, which checks that it still holds the block
 * (else the block is read as usual).  The memory is 4 bytes a block.
 *
 * ReadRecentBuffer does not raise the buffer's usage count, which tells
 * the clock sweep what to keep in shared_buffers; so one read in
 * FULL_READ_EVERY still goes through ReadBufferExtended, and a page an
 * index scan reads often keeps its place as it would otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/rel.h"

#include "colindex_buffers.h"

/* the indexes whose buffers a backend remembers, the least recently read replaced */
#define REMEMBERED_INDEXES 8

/* one read in this many looks the block up in the buffer mapping table */
#define FULL_READ_EVERY 8

typedef struct RememberedIndex
{
	RelFileNode node;			/* a new relfilenode starts afresh */
	Buffer	   *buffers;		/* by block; InvalidBuffer where not known */
	BlockNumber nblocks;		/* of buffers[] */
	uint64		last_read;
} RememberedIndex;

static RememberedIndex remembered[REMEMBERED_INDEXES];
static uint64 reads;

/* The index's remembered buffers, with room for block. */
static RememberedIndex *
remembered_index(Relation index, BlockNumber block)
{
	static RememberedIndex *last;
	RememberedIndex *found = NULL;

	if (last && block < last->nblocks && RelFileNodeEquals(last->node, index->rd_node))
	{
		last->last_read = reads;
		return last;
	}
	for (int i = 0; i < REMEMBERED_INDEXES && found == NULL; i++)
		if (remembered[i].buffers != NULL && RelFileNodeEquals(remembered[i].node, index->rd_node))
			found = &remembered[i];
	if (found == NULL)
	{
		found = &remembered[0];
		for (int i = 1; i < REMEMBERED_INDEXES; i++)
			if (remembered[i].last_read < found->last_read)
				found = &remembered[i];
		if (found->buffers)
			pfree(found->buffers);
		found->buffers = NULL;
		found->nblocks = 0;
		found->node = index->rd_node;
	}
	if (block >= found->nblocks)
	{
		BlockNumber nblocks = Max(RelationGetNumberOfBlocks(index), block + 1);

		found->buffers = found->buffers == NULL ?
			MemoryContextAllocZero(TopMemoryContext, sizeof(Buffer) * nblocks) :
			repalloc(found->buffers, sizeof(Buffer) * nblocks);
		MemSet(found->buffers + found->nblocks, 0,
			   sizeof(Buffer) * (nblocks - found->nblocks));
		found->nblocks = nblocks;
	}
	found->last_read = reads;
	last = found;
	return found;
}

/*
 * The index's block, pinned, as ReadBufferExtended(index, MAIN_FORKNUM,
 * block, RBM_NORMAL, strategy) returns it.
 */
Buffer
colindex_read_buffer(Relation index, BlockNumber block, BufferAccessStrategy strategy)
{
	RememberedIndex *index_buffers = remembered_index(index, block);
	Buffer		recent = index_buffers->buffers[block];
	Buffer		buf;

	if (++reads % FULL_READ_EVERY != 0 && BufferIsValid(recent) &&
		ReadRecentBuffer(index->rd_node, MAIN_FORKNUM, block, recent))
		return recent;
	buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
	index_buffers->buffers[block] = buf;
	return buf;
}
