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
 * All copies together stay within gputopk.gpu_cache_size: making room
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


/* the most copies the service keeps */
#define MAX_COPIES 64

struct ResidentIndex
{
	RelFileLocator node;
	uint32		generation;
	int			device;			/* index into service->devices */
	int			refs;			/* jobs holding it; under cache_lock */
	uint64		last_used;		/* under cache_lock */
	bool		dropped;		/* freed when the last job lets go */
	pthread_rwlock_t lock;		/* the fields below */
	GpuIndexPages *pages;
	XLogRecPtr *lsns;			/* of each block's page stored */
	uint32		nblocks;		/* blocks reserved */
	uint64		epoch;			/* current as of; under cache_lock */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ResidentIndex *copies[MAX_COPIES];
static uint64 clock_ticks;
static size_t cache_bytes;		/* device memory of every copy's pages */

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

/* Free a copy no job holds; under cache_lock. */
static void
destroy_copy(ResidentIndex *r)
{
	cache_bytes -= blocks_bytes(r->nblocks);
	if (r->pages != NULL && gpu_set_device(service->devices[r->device].info.ordinal) == GPU_OK)
		gpu_index_pages_destroy(r->pages);
	pthread_rwlock_destroy(&r->lock);
	free(r->lsns);
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
 * Room for bytes more in the budget, by dropping the copies used longest
 * ago that no job holds (other than keep); under cache_lock.
 */
static bool
make_room(size_t bytes, ResidentIndex *keep)
{
	while (cache_bytes + bytes > budget_bytes())
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
			 "The index's %zu MB do not fit in gputopk.gpu_cache_size (%d MB) next to the indexes that queries are reading on the GPU.",
			 blocks_bytes(nblocks) >> 20, gputopk_gpu_cache_mb);
	return GPU_OUT_OF_MEMORY;
}

/* Room for blocks 0 to nblocks - 1 in r, which the caller holds; the device is current. */
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
	cache_bytes += blocks_bytes(grown - r->nblocks);
	pthread_mutex_unlock(&cache_lock);

	/* dropping copies may have made another device current */
	status = gpu_set_device(service->devices[r->device].info.ordinal);
	if (status != GPU_OK)
		return status;
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
		cache_bytes -= blocks_bytes(grown - r->nblocks);
	pthread_mutex_unlock(&cache_lock);
	if (status != GPU_OK)
		strlcpy(message, lsns == NULL ? "Out of host memory." : gpu_last_error(),
				SERVICE_MESSAGE_BYTES);
	return status;
}

/* A new, empty copy on a device, which is current. */
static GpuStatus
make_copy(const ServiceJobSpec *spec, int device, ResidentIndex **out, char *message)
{
	ResidentIndex *r = calloc(1, sizeof(ResidentIndex));
	GpuStatus	status;

	if (r == NULL)
		return GPU_OUT_OF_MEMORY;
	r->node = spec->index_node;
	r->generation = spec->index_generation;
	r->device = device;
	pthread_rwlock_init(&r->lock, NULL);
	status = gpu_index_pages_create(BLCKSZ, &r->pages);
	if (status != GPU_OK)
	{
		strlcpy(message, gpu_last_error(), SERVICE_MESSAGE_BYTES);
		pthread_rwlock_destroy(&r->lock);
		free(r);
		return status;
	}
	*out = r;
	return GPU_OK;
}

GpuStatus
service_index_acquire(const ServiceJobSpec *spec, int *device, ResidentIndex **out,
					  uint64 *epoch, char *message)
{
	ResidentIndex *r = NULL;
	int			free_entry = -1;
	GpuStatus	status;

	if (blocks_bytes(spec->index_blocks) > budget_bytes())
		return no_room(message, spec->index_blocks);
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < MAX_COPIES; i++)
	{
		if (copies[i] == NULL)
		{
			if (free_entry < 0)
				free_entry = i;
			continue;
		}
		if (!RelFileLocatorEquals(copies[i]->node, spec->index_node))
			continue;
		if (copies[i]->generation == spec->index_generation)
			r = copies[i];
		else
		{
			drop_copy(i);
			if (free_entry < 0)
				free_entry = i;
		}
	}
	if (r == NULL && free_entry < 0)
	{
		/* every entry taken: the one used longest ago goes, if no job holds it */
		for (int i = 0; i < MAX_COPIES; i++)
			if (copies[i]->refs == 0 &&
				(free_entry < 0 || copies[i]->last_used < copies[free_entry]->last_used))
				free_entry = i;
		if (free_entry >= 0)
			drop_copy(free_entry);
	}
	if (r == NULL && free_entry < 0)
	{
		pthread_mutex_unlock(&cache_lock);
		strlcpy(message, "The GPU service holds as many index copies as it can, all in use.",
				SERVICE_MESSAGE_BYTES);
		return GPU_OUT_OF_MEMORY;
	}
	if (r == NULL)
	{
		status = gpu_set_device(service->devices[*device].info.ordinal);
		if (status == GPU_OK)
			status = make_copy(spec, *device, &r, message);
		if (status != GPU_OK)
		{
			pthread_mutex_unlock(&cache_lock);
			return status;
		}
		copies[free_entry] = r;
	}
	r->refs++;
	r->last_used = ++clock_ticks;
	*device = r->device;
	*epoch = r->epoch;
	pthread_mutex_unlock(&cache_lock);

	/* room for the index as it is now, before its pages come */
	pthread_rwlock_wrlock(&r->lock);
	status = gpu_set_device(service->devices[r->device].info.ordinal);
	if (status == GPU_OK)
		status = reserve(r, spec->index_blocks, message);
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
		destroy_copy(r);
	pthread_mutex_unlock(&cache_lock);
}

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
		needed = Max(needed, blocks[i] + 1);
	pthread_rwlock_wrlock(&r->lock);
	status = reserve(r, needed, message);
	if (status == GPU_OK)
	{
		/* only pages at least as new as the copy's: jobs may send them in any order */
		for (uint64 i = 0; i < npages; i++)
		{
			XLogRecPtr	lsn = PageGetLSN((Page) (buffer + i * BLCKSZ));

			stored[i] = lsn >= r->lsns[blocks[i]] ? blocks[i] : UINT32_MAX;
			if (stored[i] != UINT32_MAX)
				r->lsns[blocks[i]] = lsn;
		}
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

GpuStatus
service_index_select(ResidentIndex *r, const char *request_buffer, GpuTopk *t,
					 TopkResult *answer, GpuIndexCounts *counts, double *ms)
{
	const ServiceIndexRequest *request = (const ServiceIndexRequest *) request_buffer;
	const uint64 *set_values = (const uint64 *) (request + 1);
	GpuStatus	status;

	mark_current(r, request->epoch);
	pthread_rwlock_rdlock(&r->lock);
	status = gpu_index_select(r->pages, &request->query, set_values, request->nset_values,
							  set_values + request->nset_values, request->ntied, t,
							  answer, counts, ms);
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

	mark_current(r, request->epoch);
	/* a request groups anew: the groups of one before it are dropped */
	gpu_groups_destroy(*groups);
	*groups = NULL;
	GPU_TRY(gpu_groups_create(&request->groups, request->expected_groups, groups));
	pthread_rwlock_rdlock(&r->lock);
	status = gpu_index_group(r->pages, &request->query, set_values, request->nset_values,
							 set_values + request->nset_values, request->heap_blocks, *groups,
							 counts, passed, ms);
	pthread_rwlock_unlock(&r->lock);
	return status;
}
