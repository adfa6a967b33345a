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
 * the clock sweep what to keep in shared_buffers; count_use raises it as
 * ReadBufferExtended would, under the buffer header's spinlock, so that a
 * page read often keeps its place as it would otherwise.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buf_internals.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "recent_buffers.h"


/* the relations whose buffers a backend remembers, the least recently read replaced */
#define REMEMBERED_RELATIONS 8

typedef struct RememberedRelation
{
	RelFileLocator node;			/* a new relfilenode starts afresh */
	Buffer	   *buffers;		/* by block; InvalidBuffer where not known */
	BlockNumber nblocks;		/* of buffers[] */
	uint64		last_read;
} RememberedRelation;

static RememberedRelation remembered[REMEMBERED_RELATIONS];
static RelFileLocator too_large;	/* the last relation found larger than shared_buffers */
static uint64 reads;

/* The relation's remembered buffers, with room for block; NULL if too large. */
static RememberedRelation *
remembered_relation(Relation rel, BlockNumber block)
{
	static RememberedRelation *last;
	RememberedRelation *found = NULL;
	BlockNumber nblocks = 0;

	if (last && block < last->nblocks && RelFileLocatorEquals(last->node, compat_rel_locator(rel)))
	{
		last->last_read = reads;
		return last;
	}
	if (RelFileLocatorEquals(too_large, compat_rel_locator(rel)))
		return NULL;
	for (int i = 0; i < REMEMBERED_RELATIONS && found == NULL; i++)
		if (remembered[i].buffers != NULL && RelFileLocatorEquals(remembered[i].node, compat_rel_locator(rel)))
			found = &remembered[i];
	/* its size: when first read, and when it has grown */
	if (found == NULL || block >= found->nblocks)
	{
		nblocks = Max(RelationGetNumberOfBlocks(rel), block + 1);
		if (nblocks > (BlockNumber) NBuffers)
		{
			too_large = compat_rel_locator(rel);
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
		found->node = compat_rel_locator(rel);
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
 * Raise the usage count of a shared buffer pinned by ReadRecentBuffer as
 * ReadBufferExtended's first pin of it raises it (PinBuffer): by one up to
 * the maximum, or, with a strategy, to one from zero.  A buffer the backend
 * had pinned already is counted again, which PinBuffer would not do; scans
 * seldom pin a buffer twice.
 */
static void
count_use(Buffer buffer, BufferAccessStrategy strategy)
{
	BufferDesc *desc = GetBufferDescriptor(buffer - 1);
	uint32		state = LockBufHdr(desc);
	uint32		usage = BUF_STATE_GET_USAGECOUNT(state);

	if (strategy == NULL ? usage < BM_MAX_USAGE_COUNT : usage == 0)
		state += BUF_USAGECOUNT_ONE;
	UnlockBufHdr(desc, state);
}

/*
 * Start bringing the header of the buffer that holds a block, and the start
 * of the page in it, into the CPU's cache, ahead of recent_buffers_read.
 * A block not remembered is looked up in the buffer mapping table
 * (PrefetchBuffer, which also asks the kernel to read a block that is in no
 * buffer), and the buffer found remembered for the read.  Returns that
 * page, or NULL where it is in no shared buffer or past the relation's end
 * as last known.  Only the read shows that the buffer still holds the
 * block: the caller may read the page only to decide what else of it to
 * prefetch.
 */
const char *
recent_buffers_prefetch(Relation rel, BlockNumber block)
{
	RememberedRelation *known = remembered_relation(rel, 0);
	Buffer		buf;

	if (known == NULL || block >= known->nblocks)
		return NULL;
	buf = known->buffers[block];
	if (!BufferIsValid(buf))
	{
		buf = PrefetchBuffer(rel, MAIN_FORKNUM, block).recent_buffer;
		known->buffers[block] = buf;
	}
	if (!BufferIsValid(buf) || BufferIsLocal(buf))
		return NULL;
#ifdef __GNUC__
	__builtin_prefetch(GetBufferDescriptor(buf - 1));
	__builtin_prefetch(BufferGetBlock(buf));
#endif
	return BufferGetBlock(buf);
}

/*
 * The relation's block, pinned, as ReadBufferExtended(rel, MAIN_FORKNUM,
 * block, RBM_NORMAL, strategy) returns it.
 */
Buffer
recent_buffers_read(Relation rel, BlockNumber block, BufferAccessStrategy strategy)
{
	RememberedRelation *known = remembered_relation(rel, block);
	Buffer		buf;

	if (known == NULL)
		return ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
	reads++;
	buf = known->buffers[block];
	if (BufferIsValid(buf) && ReadRecentBuffer(compat_rel_locator(rel), MAIN_FORKNUM, block, buf))
	{
		/* a temporary relation's local buffer has had its use counted */
		if (!BufferIsLocal(buf))
			count_use(buf, strategy);
		return buf;
	}
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
	known->buffers[block] = buf;
	return buf;
}
