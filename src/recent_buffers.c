/*-------------------------------------------------------------------------
 *
 * recent_buffers.c
 *	  Reading a relation's pages through the shared buffers they were last
 *	  found in.
 *
 * The scans read every page of a table or a column index, and finding each
 * page's buffer in the buffer mapping table (a hash lookup under a
 * partition lock, its entry and the buffer's header seldom in the CPU's
 * cache) is much of their time per page: a fifth of a column index scan on
 * the CPU, and most of the time per page of a table read on the GPU.  This
 * backend remembers, for the relations it read last, the buffer each block
 * was found in, and pins that buffer with ReadRecentBuffer, which checks
 * that it still holds the block (else the block is read as usual).
 *
 * The memory is 4 bytes a block, for relations of at most shared_buffers'
 * size: a larger one cannot stay in shared_buffers, and is read as usual
 * (the last one found is remembered as such, so that its size is not
 * looked up again for every block).
 *
 * ReadRecentBuffer does not raise the buffer's usage count, which tells
 * the clock sweep what to keep in shared_buffers; so one read in
 * FULL_READ_EVERY still goes through ReadBufferExtended, and a page read
 * often keeps its place as it would otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "recent_buffers.h"

/* the relations whose buffers a backend remembers, the least recently read replaced */
#define REMEMBERED_RELATIONS 8

/* one read in this many looks the block up in the buffer mapping table */
#define FULL_READ_EVERY 8

typedef struct RememberedRelation
{
	RelFileNode node;			/* a new relfilenode starts afresh */
	Buffer	   *buffers;		/* by block; InvalidBuffer where not known */
	BlockNumber nblocks;		/* of buffers[] */
	uint64		last_read;
} RememberedRelation;

static RememberedRelation remembered[REMEMBERED_RELATIONS];
static RelFileNode too_large;	/* the last relation found larger than shared_buffers */
static uint64 reads;

/* The relation's remembered buffers, with room for block; NULL if too large. */
static RememberedRelation *
remembered_relation(Relation rel, BlockNumber block)
{
	static RememberedRelation *last;
	RememberedRelation *found = NULL;
	BlockNumber nblocks = 0;

	if (last && block < last->nblocks && RelFileNodeEquals(last->node, rel->rd_node))
	{
		last->last_read = reads;
		return last;
	}
	if (RelFileNodeEquals(too_large, rel->rd_node))
		return NULL;
	for (int i = 0; i < REMEMBERED_RELATIONS && found == NULL; i++)
		if (remembered[i].buffers != NULL && RelFileNodeEquals(remembered[i].node, rel->rd_node))
			found = &remembered[i];
	/* its size: when first read, and when it has grown */
	if (found == NULL || block >= found->nblocks)
	{
		nblocks = Max(RelationGetNumberOfBlocks(rel), block + 1);
		if (nblocks > (BlockNumber) NBuffers)
		{
			too_large = rel->rd_node;
			return NULL;
		}
	}
	if (found == NULL)
	{
		found = &remembered[0];
		for (int i = 1; i < REMEMBERED_RELATIONS; i++)
			if (remembered[i].last_read < found->last_read)
				found = &remembered[i];
		if (found->buffers)
			pfree(found->buffers);
		found->buffers = NULL;
		found->nblocks = 0;
		found->node = rel->rd_node;
	}
	if (block >= found->nblocks)
	{
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
 * The relation's block, pinned, as ReadBufferExtended(rel, MAIN_FORKNUM,
 * block, RBM_NORMAL, strategy) returns it.
 */
Buffer
recent_buffer_read(Relation rel, BlockNumber block, BufferAccessStrategy strategy)
{
	RememberedRelation *known = remembered_relation(rel, block);
	Buffer		buf;

	if (known == NULL)
		return ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
	if (++reads % FULL_READ_EVERY != 0 && BufferIsValid(known->buffers[block]) &&
		ReadRecentBuffer(rel->rd_node, MAIN_FORKNUM, block, known->buffers[block]))
		return known->buffers[block];
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
	known->buffers[block] = buf;
	return buf;
}
