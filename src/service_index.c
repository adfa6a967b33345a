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
 * Every GPU: an index that fits one GPU's gputopk.gpu_cache_size has a
 * whole copy on each GPU its jobs went to, each current as of its own
 * epoch; a job takes the copy on the GPU with the fewest running jobs
 * (making it there), so that concurrent queries spread over the GPUs.  An
 * index larger than that is partitioned over every GPU: its
 * block b (b >= 1; block 0 is the metapage) lies in part (b - 1) % n, at
 * local block (b - 1) / n + 1, so that each part looks to the kernels like
 * an index of its own and holds an n-th of its pages.  A round then
 * selects on every part at once (service_helpers.c) and merges the
 * candidates here: each part gives its best count keys (and their ties,
 * unless exact), so the best count of them all (and their ties) are among
 * those it gave.  Grouping needs a whole copy.
 *
 * The copies on a GPU stay within its gputopk.gpu_cache_size: making room
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
#include "service_helpers.h"
#include "service_shmem.h"
#include "service_index.h"


/* the most copies the service keeps */
#define MAX_COPIES 64

/* the blocks of a copy on one GPU */
typedef struct CopyPart
{
	int			device;			/* index into service->devices */
	GpuIndexPages *pages;		/* at their local block numbers */
	XLogRecPtr *lsns;			/* of each local block's page stored */
	uint32		nblocks;		/* local blocks reserved */
} CopyPart;

struct ResidentIndex
{
	RelFileLocator node;
	uint32		generation;
	int			refs;			/* jobs holding it; under cache_lock */
	uint64		last_used;		/* under cache_lock */
	bool		dropped;		/* freed when the last job lets go */
	uint64		epoch;			/* current as of; under cache_lock */
	pthread_rwlock_t lock;		/* the parts' pages */
	int			nparts;			/* 1: a whole copy */
	CopyPart	parts[SERVICE_MAX_DEVICES];
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ResidentIndex *copies[MAX_COPIES];
static uint64 clock_ticks;
static size_t device_bytes[SERVICE_MAX_DEVICES];	/* each GPU's copies' pages */

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

/* ------------------------------------------------------------ block numbers */

/* The part that holds a block, and its number there; false for none (the metapage). */
static bool
part_of(const ResidentIndex *r, uint32 block, int *part, uint32 *local)
{
	if (r->nparts == 1)
	{
		*part = 0;
		*local = block;
		return true;
	}
	if (block == 0)
		return false;
	*part = (block - 1) % r->nparts;
	*local = (block - 1) / r->nparts + 1;
	return true;
}

/* A part's local blocks below the index's nblocks (its local block 0 unused). */
static uint32
local_nblocks(const ResidentIndex *r, int part, uint32 nblocks)
{
	if (r->nparts == 1)
		return nblocks;
	if (nblocks <= 1 + (uint32) part)
		return 1;
	return (nblocks - 2 - part) / r->nparts + 2;
}

/* An entry's position in a part, as the index numbers it. */
static uint64
global_position(const ResidentIndex *r, int part, uint64 position, int slot_bits)
{
	uint64		local = position >> slot_bits;

	if (r->nparts == 1)
		return position;
	return (((local - 1) * r->nparts + part + 1) << slot_bits) |
		(position & ((UINT64CONST(1) << slot_bits) - 1));
}

/* ------------------------------------------------------------------ budget */

/* Each GPU's copies and their bytes, for gputopk_service; under cache_lock. */
static void
publish_usage(void)
{
	uint32		count[SERVICE_MAX_DEVICES] = {0};

	for (int i = 0; i < MAX_COPIES; i++)
		for (int p = 0; copies[i] != NULL && p < copies[i]->nparts; p++)
			count[copies[i]->parts[p].device]++;
	for (int d = 0; d < service->ndevices; d++)
	{
		pg_atomic_write_u32(&service->devices[d].index_copies, count[d]);
		pg_atomic_write_u64(&service->devices[d].index_bytes, device_bytes[d]);
	}
}

/* Free a copy no job holds; under cache_lock. */
static void
destroy_copy(ResidentIndex *r)
{
	for (int p = 0; p < r->nparts; p++)
	{
		CopyPart   *part = &r->parts[p];

		device_bytes[part->device] -= blocks_bytes(part->nblocks);
		if (part->pages != NULL &&
			gpu_set_device(service->devices[part->device].info.ordinal) == GPU_OK)
			gpu_index_pages_destroy(part->pages);
		free(part->lsns);
	}
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

static bool
has_part_on(const ResidentIndex *r, int device)
{
	for (int p = 0; p < r->nparts; p++)
		if (r->parts[p].device == device)
			return true;
	return false;
}

/*
 * Room for bytes more on a GPU, by dropping the copies there used longest
 * ago that no job holds (other than keep); under cache_lock.
 */
static bool
make_room(int device, size_t bytes, ResidentIndex *keep)
{
	while (device_bytes[device] + bytes > budget_bytes())
	{
		int			oldest = -1;

		for (int i = 0; i < MAX_COPIES; i++)
			if (copies[i] != NULL && copies[i] != keep && copies[i]->refs == 0 &&
				has_part_on(copies[i], device) &&
				(oldest < 0 || copies[i]->last_used < copies[oldest]->last_used))
				oldest = i;
		if (oldest < 0)
			return false;
		drop_copy(oldest);
	}
	return true;
}

static GpuStatus
no_room(char *message, uint32 nblocks, int gpus)
{
	snprintf(message, SERVICE_MESSAGE_BYTES,
			 "The index's %zu MB do not fit in gputopk.gpu_cache_size (%d MB) of %d GPU%s next to the indexes that queries are reading on the GPU.",
			 blocks_bytes(nblocks) >> 20, gputopk_gpu_cache_mb, gpus, gpus == 1 ? "" : "s");
	return GPU_OUT_OF_MEMORY;
}

/* Room for local blocks 0 to nblocks - 1 in a part of r, which the caller holds. */
static GpuStatus
reserve(ResidentIndex *r, CopyPart *part, uint32 nblocks, char *message)
{
	uint32		grown;
	XLogRecPtr *lsns;
	GpuStatus	status;

	if (nblocks <= part->nblocks)
		return GPU_OK;
	/* a quarter more than needed, so that inserts do not copy the pages each time */
	grown = Max(nblocks, part->nblocks + part->nblocks / 4);
	pthread_mutex_lock(&cache_lock);
	if (!make_room(part->device, blocks_bytes(grown - part->nblocks), r))
	{
		grown = nblocks;
		if (!make_room(part->device, blocks_bytes(grown - part->nblocks), r))
		{
			pthread_mutex_unlock(&cache_lock);
			return no_room(message, nblocks * r->nparts, r->nparts);
		}
	}
	device_bytes[part->device] += blocks_bytes(grown - part->nblocks);
	publish_usage();
	pthread_mutex_unlock(&cache_lock);

	/* dropping copies may have made another device current */
	status = gpu_set_device(service->devices[part->device].info.ordinal);
	if (status != GPU_OK)
		return status;
	lsns = realloc(part->lsns, sizeof(XLogRecPtr) * grown);
	status = lsns == NULL ? GPU_OUT_OF_MEMORY : gpu_index_pages_reserve(part->pages, grown);
	if (lsns != NULL)
	{
		part->lsns = lsns;
		memset(part->lsns + part->nblocks, 0, sizeof(XLogRecPtr) * (grown - part->nblocks));
	}
	pthread_mutex_lock(&cache_lock);
	if (status == GPU_OK)
		part->nblocks = grown;
	else
		device_bytes[part->device] -= blocks_bytes(grown - part->nblocks);
	publish_usage();
	pthread_mutex_unlock(&cache_lock);
	if (status != GPU_OK)
		strlcpy(message, lsns == NULL ? "Out of host memory." : gpu_last_error(),
				SERVICE_MESSAGE_BYTES);
	return status;
}

/* ------------------------------------------------------------------ copies */

/* A new, empty copy with a part on each of devices; under cache_lock. */
static GpuStatus
make_copy(const ServiceJobSpec *spec, const int *devices, int ndevices, ResidentIndex **out,
		  char *message)
{
	ResidentIndex *r = calloc(1, sizeof(ResidentIndex));
	GpuStatus	status = GPU_OK;

	if (r == NULL)
		return GPU_OUT_OF_MEMORY;
	r->node = spec->index_node;
	r->generation = spec->index_generation;
	pthread_rwlock_init(&r->lock, NULL);
	for (int p = 0; p < ndevices && status == GPU_OK; p++)
	{
		r->parts[p].device = devices[p];
		status = gpu_set_device(service->devices[devices[p]].info.ordinal);
		if (status == GPU_OK)
			status = gpu_index_pages_create(BLCKSZ, &r->parts[p].pages);
		if (status == GPU_OK)
			r->nparts++;
	}
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

static GpuStatus
all_held(char *message)
{
	strlcpy(message, "The GPU service holds as many index copies as it can, all in use.",
			SERVICE_MESSAGE_BYTES);
	return GPU_OUT_OF_MEMORY;
}

/*
 * The copy a job of an index that fits one GPU takes: the whole copy on
 * *device, else a new one there, else a whole copy on another GPU (the
 * one with the fewest running jobs); under cache_lock.
 */
static GpuStatus
whole_copy(const ServiceJobSpec *spec, int *device, ResidentIndex **out, char *message)
{
	ResidentIndex *elsewhere = NULL;
	int			entry;
	GpuStatus	status;

	for (int i = 0; i < MAX_COPIES; i++)
	{
		ResidentIndex *r = copies[i];

		if (r == NULL || !RelFileLocatorEquals(r->node, spec->index_node) ||
			r->nparts != 1)
			continue;
		if (r->parts[0].device == *device)
		{
			*out = r;
			return GPU_OK;
		}
		if (elsewhere == NULL ||
			pg_atomic_read_u32(&service->devices[r->parts[0].device].jobs_running) <
			pg_atomic_read_u32(&service->devices[elsewhere->parts[0].device].jobs_running))
			elsewhere = r;
	}
	if (make_room(*device, blocks_bytes(spec->index_blocks), NULL))
	{
		entry = free_entry();
		status = entry < 0 ? all_held(message) :
			make_copy(spec, device, 1, &copies[entry], message);
		if (status == GPU_OK)
		{
			*out = copies[entry];
			return GPU_OK;
		}
	}
	else
		status = no_room(message, spec->index_blocks, 1);
	if (elsewhere == NULL)
		return status;
	message[0] = '\0';
	*device = elsewhere->parts[0].device;
	*out = elsewhere;
	return GPU_OK;
}

/*
 * The copy of an index larger than one GPU's budget: partitioned over
 * every GPU, found or made; under cache_lock.
 */
static GpuStatus
partitioned_copy(const ServiceJobSpec *spec, int *device, ResidentIndex **out, char *message)
{
	int			every[SERVICE_MAX_DEVICES];
	int			n = service->ndevices;
	int			entry;
	GpuStatus	status;

	for (int d = 0; d < n; d++)
		every[d] = d;
	if (n < 2 || spec->kind != SERVICE_JOB_INDEX ||
		blocks_bytes(spec->index_blocks) > budget_bytes() * n)
		return no_room(message, spec->index_blocks, n);
	for (int i = 0; i < MAX_COPIES; i++)
		if (copies[i] != NULL && RelFileLocatorEquals(copies[i]->node, spec->index_node) &&
			copies[i]->nparts == n)
		{
			*out = copies[i];
			*device = copies[i]->parts[0].device;
			return GPU_OK;
		}
	for (int i = 0; i < MAX_COPIES; i++)
		if (copies[i] != NULL && RelFileLocatorEquals(copies[i]->node, spec->index_node) &&
			copies[i]->refs == 0)
			drop_copy(i);
	for (int d = 0; d < n; d++)
		if (!make_room(d, blocks_bytes(spec->index_blocks / n + 1), NULL))
			return no_room(message, spec->index_blocks, n);
	entry = free_entry();
	status = entry < 0 ? all_held(message) :
		make_copy(spec, every, n, &copies[entry], message);
	if (status == GPU_OK)
	{
		*out = copies[entry];
		*device = 0;
	}
	return status;
}

GpuStatus
service_index_acquire(const ServiceJobSpec *spec, int *device, ResidentIndex **out,
					  uint64 *epoch, char *message)
{
	ResidentIndex *r = NULL;
	GpuStatus	status;

	message[0] = '\0';
	pthread_mutex_lock(&cache_lock);
	/* copies of an older generation go */
	for (int i = 0; i < MAX_COPIES; i++)
		if (copies[i] != NULL && RelFileLocatorEquals(copies[i]->node, spec->index_node) &&
			copies[i]->generation != spec->index_generation)
			drop_copy(i);
	status = blocks_bytes(spec->index_blocks) <= budget_bytes() ?
		whole_copy(spec, device, &r, message) :
		partitioned_copy(spec, device, &r, message);
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
	for (int p = 0; p < r->nparts && status == GPU_OK; p++)
		status = reserve(r, &r->parts[p], local_nblocks(r, p, spec->index_blocks), message);
	pthread_rwlock_unlock(&r->lock);
	if (status != GPU_OK)
	{
		service_index_release(r);
		return status;
	}
	*out = r;
	return GPU_OK;
}

int
service_index_devices(const ResidentIndex *r, int *devices)
{
	for (int p = 0; p < r->nparts; p++)
		devices[p] = r->parts[p].device;
	return r->nparts;
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
 * Store a batch's pages that a part holds: those at least as new as the
 * part's (stored, a slot per page, gets their local blocks).
 */
static GpuStatus
store_part(ResidentIndex *r, int p, const char *buffer, const uint32 *blocks, uint64 npages,
		   uint32 *stored, char *message)
{
	CopyPart   *part = &r->parts[p];
	uint32		needed = 0;
	GpuStatus	status;

	for (uint64 i = 0; i < npages; i++)
	{
		int			holder;
		uint32		local;

		stored[i] = UINT32_MAX;
		if (part_of(r, blocks[i], &holder, &local) && holder == p)
		{
			stored[i] = local;
			needed = Max(needed, local + 1);
		}
	}
	if (needed == 0)
		return GPU_OK;
	status = reserve(r, part, needed, message);
	if (status != GPU_OK)
		return status;
	/* only pages at least as new as the copy's: jobs may send them in any order */
	for (uint64 i = 0; i < npages; i++)
	{
		XLogRecPtr	lsn = PageGetLSN((Page) (buffer + i * BLCKSZ));

		if (stored[i] == UINT32_MAX)
			continue;
		if (lsn >= part->lsns[stored[i]])
			part->lsns[stored[i]] = lsn;
		else
			stored[i] = UINT32_MAX;
	}
	status = gpu_set_device(service->devices[part->device].info.ordinal);
	if (status == GPU_OK)
		status = gpu_index_pages_store(part->pages, buffer, stored, npages);
	if (status != GPU_OK)
		strlcpy(message, gpu_last_error(), SERVICE_MESSAGE_BYTES);
	return status;
}

GpuStatus
service_index_store(ResidentIndex *r, const char *buffer, uint64 npages, char *message)
{
	const uint32 *blocks = (const uint32 *) (buffer +
											 SERVICE_INDEX_PAGES(service->buffer_bytes) * BLCKSZ);
	uint32	   *stored = malloc(sizeof(uint32) * Max(npages, 1));
	GpuStatus	status = GPU_OK;

	if (stored == NULL)
		return GPU_OUT_OF_MEMORY;
	pthread_rwlock_wrlock(&r->lock);
	for (int p = 0; p < r->nparts && status == GPU_OK; p++)
		status = store_part(r, p, buffer, blocks, npages, stored, message);
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

/* best first: the higher key, then the lower position */
static int
candidate_cmp(const void *a, const void *b)
{
	const TopkItem *x = a;
	const TopkItem *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->ref < y->ref ? -1 : x->ref > y->ref;
}

/* Room for n candidates in merged. */
static GpuStatus
merged_room(IndexCandidates *merged, size_t n)
{
	TopkItem   *items;

	if (n <= merged->capacity)
		return GPU_OK;
	n = Max(n, merged->capacity * 2);
	items = realloc(merged->items, n * sizeof(TopkItem));
	if (items == NULL)
		return GPU_OUT_OF_MEMORY;
	merged->items = items;
	merged->capacity = n;
	return GPU_OK;
}

/* One part's selection for a round: a piece run by a helper (service_helpers.c) */
typedef struct PartSelection
{
	ResidentIndex *r;
	int			part;
	const ServiceIndexRequest *request;
	const uint64 *set_values;
	const uint64 *tied;			/* the request's tied positions, as the index numbers them */
	uint64	   *local;			/* room for them, as the part numbers them */
	GpuTopk    *topk;			/* on the part's GPU */
	TopkResult	result;
	GpuIndexCounts counts;
	double		ms;
} PartSelection;

/* A part's candidates for the query, at their positions in the part (a ServicePiece). */
static GpuStatus
select_part(void *arg, char *message)
{
	PartSelection *sel = arg;
	ResidentIndex *r = sel->r;
	GpuIndexQuery q = sel->request->query;
	uint64		mask = (UINT64CONST(1) << q.slot_bits) - 1;
	size_t		nlocal = 0;

	/* the parts' choices of mode must agree: none is exact by its summaries alone */
	q.exact_if_no_errors = false;
	q.nblocks = local_nblocks(r, sel->part, sel->request->query.nblocks);
	for (uint64 i = 0; i < sel->request->ntied; i++)
	{
		int			holder;
		uint32		block;

		if (part_of(r, (uint32) (sel->tied[i] >> q.slot_bits), &holder, &block) &&
			holder == sel->part)
			sel->local[nlocal++] = ((uint64) block << q.slot_bits) | (sel->tied[i] & mask);
	}
	GPU_TRY(gpu_set_device(service->devices[r->parts[sel->part].device].info.ordinal));
	return gpu_index_select(r->parts[sel->part].pages, &q, sel->set_values,
							sel->request->nset_values, sel->local, nlocal, sel->topk,
							&sel->result, &sel->counts, &sel->ms);
}

/* A part's candidates at the end of merged (n of them), at their positions in the index. */
static GpuStatus
append_part(const PartSelection *sel, IndexCandidates *merged, size_t *n)
{
	int			slot_bits = sel->request->query.slot_bits;

	GPU_TRY(merged_room(merged, *n + sel->result.count));
	for (size_t i = 0; i < sel->result.count; i++)
	{
		merged->items[*n + i].key = sel->result.items[i].key;
		merged->items[*n + i].ref = global_position(sel->r, sel->part, sel->result.items[i].ref,
													slot_bits);
	}
	*n += sel->result.count;
	return GPU_OK;
}

/*
 * The best count of the parts' candidates (merged, n of them), and unless
 * exact every one tied with the last.
 */
static void
merge_candidates(const GpuIndexQuery *q, IndexCandidates *merged, size_t n, TopkResult *answer)
{
	size_t		count = Min(n, (size_t) q->count);

	qsort(merged->items, n, sizeof(TopkItem), candidate_cmp);
	if (!q->exact)
		while (count > 0 && count < n && merged->items[count].key == merged->items[count - 1].key)
			count++;
	answer->items = merged->items;
	answer->count = count;
}

/*
 * A partitioned copy's round: the parts selected at once, each on its GPU
 * (service_helpers.c), then their candidates merged here.  The time is
 * the longest part's.
 */
static GpuStatus
select_parts(ResidentIndex *r, const ServiceIndexRequest *request, GpuTopk *const *objects,
			 IndexCandidates *merged, TopkResult *answer, GpuIndexCounts *counts, double *ms,
			 char *message)
{
	PartSelection sels[SERVICE_MAX_DEVICES];
	void	   *args[SERVICE_MAX_DEVICES];
	uint64	   *local = malloc(sizeof(uint64) * Max(request->ntied, 1) * r->nparts);
	size_t		n = 0;
	GpuStatus	status;

	if (local == NULL)
		return GPU_OUT_OF_MEMORY;
	memset(sels, 0, sizeof(sels));
	for (int p = 0; p < r->nparts; p++)
	{
		sels[p].r = r;
		sels[p].part = p;
		sels[p].request = request;
		sels[p].set_values = (const uint64 *) (request + 1);
		sels[p].tied = sels[p].set_values + request->nset_values;
		sels[p].local = local + (Size) p * Max(request->ntied, 1);
		sels[p].topk = objects[p];
		args[p] = &sels[p];
	}
	status = service_helpers_run(select_part, args, r->nparts, message);
	for (int p = 0; p < r->nparts && status == GPU_OK; p++)
	{
		status = append_part(&sels[p], merged, &n);
		counts->scanned += sels[p].counts.scanned;
		counts->pages_skipped += sels[p].counts.pages_skipped;
		*ms = Max(*ms, sels[p].ms);
	}
	counts->exact = request->query.exact;
	if (status == GPU_OK)
		merge_candidates(&request->query, merged, n, answer);
	free(local);
	return status;
}

GpuStatus
service_index_select(ResidentIndex *r, const char *request_buffer, GpuTopk *const *objects,
					 IndexCandidates *merged, TopkResult *answer, GpuIndexCounts *counts,
					 double *ms, char *message)
{
	const ServiceIndexRequest *request = (const ServiceIndexRequest *) request_buffer;
	const uint64 *set_values = (const uint64 *) (request + 1);
	const uint64 *tied = set_values + request->nset_values;
	GpuStatus	status = GPU_OK;

	mark_current(r, request->epoch);
	memset(counts, 0, sizeof(*counts));
	*ms = 0;
	pthread_rwlock_rdlock(&r->lock);
	if (r->nparts == 1)
	{
		status = gpu_set_device(service->devices[r->parts[0].device].info.ordinal);
		if (status == GPU_OK)
			status = gpu_index_select(r->parts[0].pages, &request->query, set_values,
									  request->nset_values, tied, request->ntied, objects[0],
									  answer, counts, ms);
	}
	else
		status = select_parts(r, request, objects, merged, answer, counts, ms, message);
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
	GPU_TRY(gpu_set_device(service->devices[r->parts[0].device].info.ordinal));
	/* a request groups anew: the groups of one before it are dropped */
	gpu_groups_destroy(*groups);
	*groups = NULL;
	GPU_TRY(gpu_groups_create(&request->groups, request->expected_groups, groups));
	pthread_rwlock_rdlock(&r->lock);
	status = gpu_index_group(r->parts[0].pages, &request->query, set_values,
							 request->nset_values, set_values + request->nset_values,
							 request->heap_blocks, *groups, counts, passed, ms);
	pthread_rwlock_unlock(&r->lock);
	return status;
}
