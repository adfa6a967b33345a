/*-------------------------------------------------------------------------
 *
 * service_pool.c
 *	  A GPU's engine objects that its job threads reuse: idle top-k and
 *	  grouped top-k objects, warmed up at the start, the GPU's page cache,
 *	  and where its kernels read shared_buffers (service_pool.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>

#include "utils/memutils.h"

#include "gpu_api.h"
#include "service_pool.h"

/*
 * Engine objects made on the GPU, idle between jobs: as many of each kind
 * as jobs can run at once, so that a steady load makes none anew (making
 * one allocates its device memory).  They keep their memory; out of
 * memory, a new job's thread gives the idle ones up.
 */
typedef struct DevicePool
{
	pthread_mutex_t lock;
	GpuTopk   **topk;
	int			ntopk;
	GpuGroupedTopk **grouped;
	int			ngrouped;
	GpuPageCache *page_cache;	/* copies of heap pages, or NULL */
} DevicePool;

static DevicePool pool;

/*
 * Where the GPU's kernels read shared_buffers (pages jobs): set by the
 * thread registering shared_buffers before it sets buffers_mapped, read by
 * job threads after they see it set.
 */
static char *buffers_on_device;

void
service_pool_drain(void)
{
	pthread_mutex_lock(&pool.lock);
	while (pool.ntopk > 0)
		gpu_topk_destroy(pool.topk[--pool.ntopk]);
	while (pool.ngrouped > 0)
		gpu_grouped_destroy(pool.grouped[--pool.ngrouped]);
	pthread_mutex_unlock(&pool.lock);
}

/* The last of the n idle objects of one kind, taken, or NULL. */
static void *
pool_take(void **objects, int *n)
{
	void	   *object = NULL;

	pthread_mutex_lock(&pool.lock);
	if (*n > 0)
		object = objects[--*n];
	pthread_mutex_unlock(&pool.lock);
	return object;
}

GpuStatus
service_pool_take_topk(const ServiceJobSpec *spec, GpuTopk **out)
{
	GpuTopk    *t = pool_take((void **) pool.topk, &pool.ntopk);
	GpuStatus	status = t != NULL ? gpu_topk_reset(t, spec->key_width, spec->k, spec->mode) :
		gpu_topk_create(spec->key_width, spec->k, spec->mode, &t);

	if (status != GPU_OK)
	{
		gpu_topk_destroy(t);
		return status;
	}
	*out = t;
	gpu_topk_set_algorithm(t, spec->algorithm);
	return gpu_topk_set_stream_batch(t, service->buffer_bytes / spec->key_width);
}

size_t
service_pool_grouped_batch_rows(void)
{
	return service->buffer_bytes / (sizeof(GroupedKey) + sizeof(uint64));
}

GpuStatus
service_pool_take_grouped(uint64 k, GpuGroupedTopk **out)
{
	GpuGroupedTopk *g = pool_take((void **) pool.grouped, &pool.ngrouped);
	GpuStatus	status = g != NULL ? gpu_grouped_reset(g, k) :
		gpu_grouped_create(k, service_pool_grouped_batch_rows(), &g);

	if (status == GPU_OK)
		*out = g;
	else
		gpu_grouped_destroy(g);
	return status;
}

/* Destroying an object that is not reusable waits for its work. */
void
service_pool_put(GpuTopk *topk, GpuGroupedTopk *grouped, bool reusable)
{
	pthread_mutex_lock(&pool.lock);
	if (topk && reusable && pool.ntopk < service->nslots)
		pool.topk[pool.ntopk++] = topk;
	else if (topk)
		gpu_topk_destroy(topk);
	if (grouped && reusable && pool.ngrouped < service->nslots)
		pool.grouped[pool.ngrouped++] = grouped;
	else if (grouped)
		gpu_grouped_destroy(grouped);
	pthread_mutex_unlock(&pool.lock);
}

GpuPageCache *
service_pool_page_cache(void)
{
	return pool.page_cache;
}

void
service_pool_set_buffers(char *on_device)
{
	buffers_on_device = on_device;
}

char *
service_pool_buffers(void)
{
	return buffers_on_device;
}

/*
 * A top-k through a pooled object, as large as its first real one would
 * be: enough keys to fill its candidate set (k + 2^22 keys at the most for
 * the service's batches), so that its compactions' memory is allocated.
 */
static GpuStatus
warm_topk(GpuTopk *t, int key_width, TopkMode mode, const char *keys, size_t bytes)
{
	size_t		n = bytes / key_width;
	size_t		pushed = 0;
	TopkResult	result;

	GPU_TRY(gpu_topk_reset(t, key_width, 1024, mode));
	GPU_TRY(gpu_topk_set_stream_batch(t, service->buffer_bytes / key_width));
	for (; pushed < ((size_t) 5 << 20); pushed += n)
	{
		GPU_TRY(gpu_topk_push(t, keys, n));
		GPU_TRY(gpu_topk_wait_input(t));
	}
	return gpu_topk_result(t, &result);
}

/*
 * Warm up the GPU: a top-k object and a grouped top-k, each made and run
 * once, so that the first jobs after a start find them in the pool with
 * their device memory allocated.  One top-k object per process of a
 * parallel query held 3.6 GB of an H100 and did not make the first such
 * query after a start faster (bench/results/service_bench_h100_2026-11-23_
 * warm1.md, _warm17.md).  The keys come from the buffers of the GPU's
 * first slot: no job runs on it yet.
 */
static GpuStatus
warm_up_device(void)
{
	char	   *buffers = service_buffer(service_serving_device, 0);
	size_t		bytes = 2 * service->buffer_bytes;
	uint64	   *words = (uint64 *) buffers;
	size_t		nwords = bytes / sizeof(uint64);
	size_t		rows = service_pool_grouped_batch_rows();
	GpuTopk    *t = NULL;
	GpuGroupedTopk *g = NULL;
	const GroupedKey *group_keys;
	const uint64 *group_payloads;
	size_t		count;
	GpuStatus	status;

	for (size_t i = 0; i < nwords; i++)
		words[i] = (i + 1) * UINT64CONST(0x9e3779b97f4a7c15);
	GPU_TRY(gpu_topk_create(8, 1024, TOPK_EXACT, &t));
	status = warm_topk(t, 8, TOPK_WITH_TIES, buffers, bytes);
	if (status == GPU_OK)
		status = warm_topk(t, 4, TOPK_EXACT, buffers, bytes);
	service_pool_put(t, NULL, status == GPU_OK);
	GPU_TRY(status);
	GPU_TRY(gpu_grouped_create(4, rows, &g));
	status = gpu_grouped_push(g, (const GroupedKey *) buffers, words + 2 * rows, rows);
	if (status == GPU_OK)
		status = gpu_grouped_result(g, &group_keys, &group_payloads, &count);
	service_pool_put(NULL, g, status == GPU_OK);
	return status;
}

/* a page cache sized by the service is left out below this */
#define PAGE_CACHE_MIN_BYTES ((size_t) 64 * 1024 * 1024)

/*
 * The bytes of the GPU's page cache: those of
 * gputopk.gpu_page_cache_size, or for -1 half the device memory free at
 * the start beside gputopk.gpu_cache_size (column index copies); the other
 * half stays for jobs.  The cache may well be larger than shared_buffers:
 * a page it holds is not read again while its LSN stays the same, wherever
 * PostgreSQL keeps it meanwhile.
 */
static size_t
page_cache_bytes(void)
{
	size_t		free_bytes;
	size_t		total_bytes;
	size_t		index_bytes = (size_t) gputopk_gpu_cache_mb * 1024 * 1024;
	size_t		bytes;

	if (gputopk_gpu_page_cache_mb >= 0)
		return (size_t) gputopk_gpu_page_cache_mb * 1024 * 1024;
	if (gpu_device_memory(&free_bytes, &total_bytes) != GPU_OK || free_bytes <= index_bytes)
		return 0;
	bytes = (free_bytes - index_bytes) / 2;
	return bytes < PAGE_CACHE_MIN_BYTES ? 0 : bytes;
}

/*
 * The GPU's page cache; without device memory for it, the GPU reads every
 * page over the bus, and the server log says why.
 */
static void
create_page_cache(void)
{
	size_t		bytes = page_cache_bytes();
	int			ordinal = service->devices[service_serving_device].info.ordinal;

	if (bytes == 0)
		return;
	if (gpu_page_cache_create(bytes, BLCKSZ, &pool.page_cache) != GPU_OK)
	{
		ereport(LOG,
				(errmsg("gputopk GPU service has no page cache on GPU %d", ordinal),
				 errdetail("%s", gpu_last_error()),
				 errhint("Lower gputopk.gpu_page_cache_size.")));
		return;
	}
	pg_atomic_write_u64(&service->devices[service_serving_device].page_cache_bytes, bytes);
	ereport(LOG,
			(errmsg("gputopk GPU service keeps a page cache of %zu MB on GPU %d",
					bytes >> 20, ordinal)));
}

bool
service_pool_warm_up(void)
{
	pthread_mutex_init(&pool.lock, NULL);
	pool.topk = MemoryContextAllocZero(TopMemoryContext, sizeof(GpuTopk *) * service->nslots);
	pool.grouped = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(GpuGroupedTopk *) * service->nslots);
	if (warm_up_device() != GPU_OK)
		return false;
	create_page_cache();
	return true;
}
