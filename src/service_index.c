/*-------------------------------------------------------------------------
 *
 * service_index.c
 *	  The GPU service's copies of column indexes in device memory: found or
 *	  made for a job, brought up to date with the pages a job sends, and
 *	  read by its rounds' selections and its groupings.
 *
 * A copy belongs to an index's relfilenode and to the generation of its
 * entry in colindex_changes.c, and says as of which epoch of that entry it
 * is current; a copy of an older generation is dropped.  Pages are stored
 * only when they are at least as new as the copy's (their LSN: every
 * change of a page in a WAL-logged index moves it), so jobs may send the
 * same page in any order.  Selections and groupings share a copy (a read
 * lock), storing pages takes it alone (a write lock): a copy does not
 * change while a kernel reads it.
 *
 * Every GPU: each GPU's process keeps copies of its own, each current as
 * of its own epoch.  An index that fits one GPU's gputopk.gpu_cache_size
 * has a whole copy on each GPU its jobs went to (backends send a job to
 * the GPU with the fewest jobs, service_client.c).  One larger than that
 * is partitioned over the GPUs (service_protocol.h numbers the parts'
 * blocks), a part on each, and a job of a part reads and answers for that
 * part alone: its round's candidates, its best count keys (and their ties,
 * unless exact), are given at their positions in the index, and the
 * backend merges the parts' (colindex_gpu.c).  Grouping needs a whole copy.
 *
 * The copies on the GPU stay within gputopk.gpu_cache_size: making room
 * drops the copies used longest ago that no job holds.  A copy that cannot
 * have room fails its job's start or its batch with GPU_OUT_OF_MEMORY, and
 * the backend reads the index on the CPU.
 *
 * Called by the job threads: no elog, no palloc (see service_jobs.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>

#include "storage/bufpage.h"

#include "compat.h"
#include "service_shmem.h"
#include "service_index.h"


/* the most copies the GPU's process keeps */
#define MAX_COPIES 64

struct ResidentIndex
{
	RelFileLocator node;
	uint32		generation;
	int			nparts;			/* 1 for a whole copy, else the index's parts, */
	int			part;			/* and the one this copy holds */
	int			refs;			/* jobs holding it; under cache_lock */
	uint64		last_used;		/* under cache_lock */
	bool		dropped;		/* freed when the last job lets go */
	uint64		epoch;			/* current as of; under cache_lock */
	pthread_rwlock_t lock;		/* the pages */
	GpuIndexPages *pages;		/* at their local block numbers */
	XLogRecPtr *lsns;			/* of each local block's page stored */
	uint32		nblocks;		/* local blocks reserved */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ResidentIndex *copies[MAX_COPIES];
static uint64 clock_ticks;
static size_t copies_bytes;		/* the copies' pages */

static size_t
budget_bytes(void)
{
	return (size_t) gputopk_gpu_cache_mb * 1024 * 1024;
}

static size_t
blocks_bytes(uint32 nblocks)
{
	return (size_t) nblocks * BLCKSZ;
}

/* The copy's local block of an index block; false where another part holds it. */
static bool
local_block(const ResidentIndex *r, uint32 block, uint32 *local)
{
	if (!index_part_holds(block, r->part, r->nparts))
		return false;
	*local = index_part_block(block, r->nparts);
	return true;
}

/* ------------------------------------------------------------------ budget */

/* The GPU's copies and their bytes, for gputopk_service; under cache_lock. */
static void
publish_usage(void)
{
	uint32		count = 0;

	for (int i = 0; i < MAX_COPIES; i++)
		count += copies[i] != NULL;
	pg_atomic_write_u32(&service->devices[service_serving_device].index_copies, count);
	pg_atomic_write_u64(&service->devices[service_serving_device].index_bytes, copies_bytes);
}

/* Free a copy no job holds; under cache_lock. */
static void
destroy_copy(ResidentIndex *r)
{
	copies_bytes -= blocks_bytes(r->nblocks);
	if (r->pages != NULL)
		gpu_index_pages_destroy(r->pages);
	free(r->lsns);
	pthread_rwlock_destroy(&r->lock);
	free(r);
}

/* Drop a copy from the list: freed now, or by the last job that holds it. */
static void
drop_copy(int i)
{
	ResidentIndex *r = copies[i];

	copies[i] = NULL;
	r->dropped = true;
	if (r->refs == 0)
		destroy_copy(r);
}

/*
 * Room for bytes more, by dropping the copies used longest ago that no job
 * holds (other than keep); under cache_lock.
 */
static bool
make_room(size_t bytes, ResidentIndex *keep)
{
	while (copies_bytes + bytes > budget_bytes())
	{
		int			oldest = -1;

		for (int i = 0; i < MAX_COPIES; i++)
			if (copies[i] != NULL && copies[i] != keep && copies[i]->refs == 0 &&
				(oldest < 0 || copies[i]->last_used < copies[oldest]->last_used))
				oldest = i;
		if (oldest < 0)
			return false;
		drop_copy(oldest);
	}
	return true;
}

static GpuStatus
no_room(char *message, uint32 nblocks)
{
	snprintf(message, SERVICE_MESSAGE_BYTES,
			 "The index's %zu MB on GPU %d do not fit in gputopk.gpu_cache_size (%d MB) next to the indexes that queries are reading there.",
			 blocks_bytes(nblocks) >> 20, service->devices[service_serving_device].info.ordinal,
			 gputopk_gpu_cache_mb);
	return GPU_OUT_OF_MEMORY;
}

/* Room for local blocks 0 to nblocks - 1 in r, which the caller holds. */
static GpuStatus
reserve(ResidentIndex *r, uint32 nblocks, char *message)
{
	uint32		grown;
	XLogRecPtr *lsns;
	GpuStatus	status;

	if (nblocks <= r->nblocks)
		return GPU_OK;
	/* a quarter more than needed, so that inserts do not copy the pages each time */
	grown = Max(nblocks, r->nblocks + r->nblocks / 4);
	pthread_mutex_lock(&cache_lock);
	if (!make_room(blocks_bytes(grown - r->nblocks), r))
	{
		grown = nblocks;
		if (!make_room(blocks_bytes(grown - r->nblocks), r))
		{
			pthread_mutex_unlock(&cache_lock);
			return no_room(message, nblocks);
		}
	}
	copies_bytes += blocks_bytes(grown - r->nblocks);
	publish_usage();
	pthread_mutex_unlock(&cache_lock);

	lsns = realloc(r->lsns, sizeof(XLogRecPtr) * grown);
	status = lsns == NULL ? GPU_OUT_OF_MEMORY : gpu_index_pages_reserve(r->pages, grown);
	if (lsns != NULL)
	{
		r->lsns = lsns;
		memset(r->lsns + r->nblocks, 0, sizeof(XLogRecPtr) * (grown - r->nblocks));
	}
	pthread_mutex_lock(&cache_lock);
	if (status == GPU_OK)
		r->nblocks = grown;
	else
		copies_bytes -= blocks_bytes(grown - r->nblocks);
	publish_usage();
	pthread_mutex_unlock(&cache_lock);
	if (status != GPU_OK)
		strlcpy(message, lsns == NULL ? "Out of host memory." : gpu_last_error(),
				SERVICE_MESSAGE_BYTES);
	return status;
}

/* ------------------------------------------------------------------ copies */

/* A new, empty copy of the job's index or part; under cache_lock. */
static GpuStatus
make_copy(const ServiceJobSpec *spec, ResidentIndex **out, char *message)
{
	ResidentIndex *r = calloc(1, sizeof(ResidentIndex));
	GpuStatus	status;

	if (r == NULL)
		return GPU_OUT_OF_MEMORY;
	r->node = spec->index_node;
	r->generation = spec->index_generation;
	r->nparts = spec->index_parts;
	r->part = spec->index_part;
	pthread_rwlock_init(&r->lock, NULL);
	status = gpu_index_pages_create(BLCKSZ, &r->pages);
	if (status != GPU_OK)
	{
		strlcpy(message, gpu_last_error(), SERVICE_MESSAGE_BYTES);
		destroy_copy(r);
		return status;
	}
	*out = r;
	return GPU_OK;
}

/* An entry of the list for a new copy, one used longest ago dropped if need be; or -1. */
static int
free_entry(void)
{
	int			oldest = -1;

	for (int i = 0; i < MAX_COPIES; i++)
	{
		if (copies[i] == NULL)
			return i;
		if (copies[i]->refs == 0 &&
			(oldest < 0 || copies[i]->last_used < copies[oldest]->last_used))
			oldest = i;
	}
	if (oldest >= 0)
		drop_copy(oldest);
	return oldest;
}

/*
 * The copy a job takes: the one of its index and part, else a new one;
 * none where the index (or part) is larger than the budget, which may have
 * shrunk since a copy was made.  Under cache_lock.  Copies of the index of
 * an older generation, or partitioned otherwise, go (those of another
 * layout once no job holds them).
 */
static GpuStatus
find_copy(const ServiceJobSpec *spec, ResidentIndex **out, char *message)
{
	uint32		nblocks = index_part_nblocks(spec->index_blocks, spec->index_part,
											 spec->index_parts);
	int			entry;
	GpuStatus	status;

	if (blocks_bytes(nblocks) > budget_bytes())
	{
		/* a copy made under a larger budget goes once no job holds it */
		for (int i = 0; i < MAX_COPIES; i++)
			if (copies[i] != NULL && RelFileLocatorEquals(copies[i]->node, spec->index_node) &&
				copies[i]->refs == 0)
				drop_copy(i);
		return no_room(message, nblocks);
	}
	for (int i = 0; i < MAX_COPIES; i++)
	{
		ResidentIndex *r = copies[i];

		if (r == NULL || !RelFileLocatorEquals(r->node, spec->index_node))
			continue;
		if (r->generation != spec->index_generation)
			drop_copy(i);
		else if (r->nparts == spec->index_parts && r->part == spec->index_part)
		{
			*out = r;
			return GPU_OK;
		}
		else if (r->refs == 0)
			drop_copy(i);
	}
	if (!make_room(blocks_bytes(nblocks), NULL))
		return no_room(message, nblocks);
	entry = free_entry();
	if (entry < 0)
	{
		strlcpy(message, "The GPU holds as many index copies as it can, all in use.",
				SERVICE_MESSAGE_BYTES);
		return GPU_OUT_OF_MEMORY;
	}
	status = make_copy(spec, &copies[entry], message);
	if (status == GPU_OK)
		*out = copies[entry];
	return status;
}

GpuStatus
service_index_acquire(const ServiceJobSpec *spec, ResidentIndex **out, uint64 *epoch,
					  char *message)
{
	ResidentIndex *r = NULL;
	GpuStatus	status;

	message[0] = '\0';
	pthread_mutex_lock(&cache_lock);
	status = find_copy(spec, &r, message);
	if (status != GPU_OK)
	{
		publish_usage();
		pthread_mutex_unlock(&cache_lock);
		return status;
	}
	r->refs++;
	r->last_used = ++clock_ticks;
	*epoch = r->epoch;
	publish_usage();
	pthread_mutex_unlock(&cache_lock);

	/* room for the index as it is now, before its pages come */
	pthread_rwlock_wrlock(&r->lock);
	status = reserve(r, index_part_nblocks(spec->index_blocks, r->part, r->nparts), message);
	pthread_rwlock_unlock(&r->lock);
	if (status != GPU_OK)
	{
		service_index_release(r);
		return status;
	}
	*out = r;
	return GPU_OK;
}

void
service_index_release(ResidentIndex *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&cache_lock);
	if (--r->refs == 0 && r->dropped)
	{
		destroy_copy(r);
		publish_usage();
	}
	pthread_mutex_unlock(&cache_lock);
}

/* ------------------------------------------------------------------- pages */

/*
 * Store a batch's pages that the copy holds, those at least as new as its
 * own (jobs may send them in any order), at their local blocks.
 */
GpuStatus
service_index_store(ResidentIndex *r, const char *buffer, uint64 npages, char *message)
{
	const uint32 *blocks = (const uint32 *) (buffer +
											 SERVICE_INDEX_PAGES(service->buffer_bytes) * BLCKSZ);
	uint32	   *stored = malloc(sizeof(uint32) * Max(npages, 1));
	uint32		needed = 0;
	GpuStatus	status;

	if (stored == NULL)
		return GPU_OUT_OF_MEMORY;
	for (uint64 i = 0; i < npages; i++)
	{
		if (local_block(r, blocks[i], &stored[i]))
			needed = Max(needed, stored[i] + 1);
		else
			stored[i] = UINT32_MAX;
	}
	pthread_rwlock_wrlock(&r->lock);
	status = reserve(r, needed, message);
	for (uint64 i = 0; i < npages && status == GPU_OK; i++)
	{
		XLogRecPtr	lsn = PageGetLSN((Page) (buffer + i * BLCKSZ));

		if (stored[i] == UINT32_MAX)
			continue;
		if (lsn >= r->lsns[stored[i]])
			r->lsns[stored[i]] = lsn;
		else
			stored[i] = UINT32_MAX;
	}
	if (status == GPU_OK && needed > 0)
	{
		status = gpu_index_pages_store(r->pages, buffer, stored, npages);
		if (status != GPU_OK)
			strlcpy(message, gpu_last_error(), SERVICE_MESSAGE_BYTES);
	}
	pthread_rwlock_unlock(&r->lock);
	free(stored);
	return status;
}

/* Every page of the job is stored: the copy is current as of its epoch. */
static void
mark_current(ResidentIndex *r, uint64 epoch)
{
	pthread_mutex_lock(&cache_lock);
	r->epoch = Max(r->epoch, epoch);
	r->last_used = ++clock_ticks;
	pthread_mutex_unlock(&cache_lock);
}

/* -------------------------------------------------------------- selection */

/*
 * A part's round: the request's tied positions in the part, at their local
 * blocks, and the candidates given back at their positions in the index.
 * Each part chooses its mode alike: none is exact by its summaries alone.
 */
static GpuStatus
select_part(ResidentIndex *r, const ServiceIndexRequest *request, const uint64 *set_values,
			const uint64 *tied, GpuTopk *topk, TopkResult *answer, GpuIndexCounts *counts,
			double *ms)
{
	GpuIndexQuery q = request->query;
	uint64		mask = (UINT64CONST(1) << q.slot_bits) - 1;
	uint64	   *local = malloc(sizeof(uint64) * Max(request->ntied, 1));
	size_t		nlocal = 0;
	GpuStatus	status;

	if (local == NULL)
		return GPU_OUT_OF_MEMORY;
	q.exact_if_no_errors = false;
	q.nblocks = index_part_nblocks(request->query.nblocks, r->part, r->nparts);
	for (uint64 i = 0; i < request->ntied; i++)
	{
		uint32		block;

		if (local_block(r, (uint32) (tied[i] >> q.slot_bits), &block))
			local[nlocal++] = ((uint64) block << q.slot_bits) | (tied[i] & mask);
	}
	status = gpu_index_select(r->pages, &q, set_values, request->nset_values, local, nlocal,
							  topk, answer, counts, ms);
	for (size_t i = 0; status == GPU_OK && i < answer->count; i++)
		answer->items[i].ref = index_part_global_position(answer->items[i].ref, r->part,
														  r->nparts, q.slot_bits);
	free(local);
	return status;
}

GpuStatus
service_index_select(ResidentIndex *r, const char *request_buffer, GpuTopk *topk,
					 TopkResult *answer, GpuIndexCounts *counts, double *ms)
{
	const ServiceIndexRequest *request = (const ServiceIndexRequest *) request_buffer;
	const uint64 *set_values = (const uint64 *) (request + 1);
	const uint64 *tied = set_values + request->nset_values;
	GpuStatus	status;

	mark_current(r, request->epoch);
	memset(counts, 0, sizeof(*counts));
	*ms = 0;
	pthread_rwlock_rdlock(&r->lock);
	if (r->nparts == 1)
		status = gpu_index_select(r->pages, &request->query, set_values, request->nset_values,
								  tied, request->ntied, topk, answer, counts, ms);
	else
		status = select_part(r, request, set_values, tied, topk, answer, counts, ms);
	pthread_rwlock_unlock(&r->lock);
	return status;
}

GpuStatus
service_index_group(ResidentIndex *r, const char *request_buffer, GpuGroups **groups,
					GpuIndexCounts *counts, uint64 *passed, double *ms)
{
	const ServiceIndexGroupsRequest *request = (const ServiceIndexGroupsRequest *) request_buffer;
	const uint64 *set_values = (const uint64 *) (request + 1);
	GpuStatus	status;

	Assert(r->nparts == 1);
	mark_current(r, request->epoch);
	/* a request groups anew: the groups of one before it are dropped */
	gpu_groups_destroy(*groups);
	*groups = NULL;
	GPU_TRY(gpu_groups_create(&request->groups, request->expected_groups, groups));
	pthread_rwlock_rdlock(&r->lock);
	status = gpu_index_group(r->pages, &request->query, set_values,
							 request->nset_values, set_values + request->nset_values,
							 request->heap_blocks, *groups, counts, passed, ms);
	pthread_rwlock_unlock(&r->lock);
	return status;
}
