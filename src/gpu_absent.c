/*-------------------------------------------------------------------------
 *
 * gpu_absent.c
 *	  The GPU interface of a build made without the CUDA toolkit.
 *
 * Linked in place of kernels/ when nvcc was not found: no device exists, so
 * the GPU service (service_main.c) never gets past gpu_device_count and
 * everything runs on the CPU backend.  The other entry points that src/
 * calls, the top-k engine's and the grouped top-k's among them, are here so
 * that the same code links.
 *
 *-------------------------------------------------------------------------
 */
#include "gpu_api.h"
#include "gpu_grouped.h"
#include "gpu_groups.h"
#include "gpu_heap.h"
#include "gpu_index.h"
#include "gpu_topk.h"

const char *
gpu_build_description(void)
{
	return "CPU only, built without the CUDA toolkit";
}

const char *
gpu_last_error(void)
{
	return "This build of gputopk has no CUDA support.";
}

GpuStatus
gpu_device_count(int *count)
{
	*count = 0;
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_device_info(int device, GpuDeviceInfo *info)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_device_open(int device)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_set_device(int device)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_device_memory(size_t *free_bytes, size_t *total_bytes)
{
	*free_bytes = 0;
	*total_bytes = 0;
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_host_register(void *ptr, size_t size)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_host_device_pointer(void *ptr, char **device_ptr)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_host_unregister(void *ptr)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_inject_device_fault(void)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_topk_calibration(GpuTopkCalibration *cal)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_topk_create(int key_width, uint64_t k, TopkMode mode, GpuTopk **out)
{
	*out = NULL;
	return GPU_NOT_BUILT;
}

void
gpu_topk_destroy(GpuTopk *t)
{
}

GpuStatus
gpu_topk_reset(GpuTopk *t, int key_width, uint64_t k, TopkMode mode)
{
	return GPU_NOT_BUILT;
}

void
gpu_topk_set_algorithm(GpuTopk *t, GpuTopkAlgorithm algorithm)
{
}

GpuStatus
gpu_topk_set_stream_batch(GpuTopk *t, size_t keys)
{
	return GPU_NOT_BUILT;
}

GpuTopkPlan
gpu_topk_last_plan(const GpuTopk *t)
{
	GpuTopkPlan plan = {GPU_TOPK_AUTO, 0};

	return plan;
}

void
gpu_topk_stream_times(const GpuTopk *t, double *copy_ms, double *kernel_ms)
{
	*copy_ms = 0;
	*kernel_ms = 0;
}

GpuStatus
gpu_topk_push(GpuTopk *t, const void *host_keys, size_t n)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_topk_wait_input(GpuTopk *t)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_topk_result(GpuTopk *t, TopkResult *result)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_grouped_create(uint64_t k, size_t batch_cap, GpuGroupedTopk **out)
{
	*out = NULL;
	return GPU_NOT_BUILT;
}

void
gpu_grouped_destroy(GpuGroupedTopk *t)
{
}

GpuStatus
gpu_grouped_reset(GpuGroupedTopk *t, uint64_t k)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_grouped_push(GpuGroupedTopk *t, const GroupedKey *keys, const uint64_t *payloads,
				 size_t n)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_grouped_wait_input(GpuGroupedTopk *t)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_grouped_result(GpuGroupedTopk *t, const GroupedKey **keys, const uint64_t **payloads,
				   size_t *count)
{
	return GPU_NOT_BUILT;
}

void
gpu_grouped_times(const GpuGroupedTopk *t, double *copy_ms, double *kernel_ms)
{
	*copy_ms = 0;
	*kernel_ms = 0;
}

GpuStatus
gpu_index_pages_create(int page_size, GpuIndexPages **out)
{
	return GPU_NOT_BUILT;
}

void
gpu_index_pages_destroy(GpuIndexPages *p)
{
}

size_t
gpu_index_pages_bytes(const GpuIndexPages *p)
{
	return 0;
}

GpuStatus
gpu_index_pages_reserve(GpuIndexPages *p, uint32_t nblocks)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_index_pages_store(GpuIndexPages *p, const void *pages, const uint32_t *blocks, size_t n)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_index_select(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
				 size_t nset_values, const uint64_t *tied, size_t ntied, GpuTopk *t,
				 TopkResult *result, GpuIndexCounts *counts, double *kernel_ms)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_index_group(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
				size_t nset_values, const uint64_t *vouched, uint32_t heap_blocks, GpuGroups *g,
				GpuIndexCounts *counts, uint64_t *passed, double *kernel_ms)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_topk_push_device(GpuTopk *t, const void *dev_keys, const uint64_t *dev_refs, size_t n)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_heap_reader_create(GpuHeapReader **out)
{
	*out = NULL;
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_heap_set_query(GpuHeapReader *r, const GpuHeapQuery *query, const uint64_t *set_values,
				   size_t nset_values)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_heap_read(GpuHeapReader *r, GpuPageCache *cache, const char *buffers, GpuHeapPage *pages,
			  size_t n, GpuTopk *t, uint32_t *missed, size_t *nmissed, GpuHeapCounts *counts)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_heap_read_groups(GpuHeapReader *r, GpuPageCache *cache, const char *buffers,
					 GpuHeapPage *pages, size_t n, GpuGroups *groups, uint32_t *missed,
					 size_t *nmissed, GpuHeapCounts *counts)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_groups_create(const GpuGroupsSpec *spec, uint64_t expected, GpuGroups **out)
{
	*out = NULL;
	return GPU_NOT_BUILT;
}

void
gpu_groups_destroy(GpuGroups *g)
{
}

GpuStatus
gpu_groups_reserve(GpuGroups *g, uint64_t rows)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_groups_merge(GpuGroups *g, const char *records, size_t n)
{
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_groups_choose(GpuGroups *g, const char **records, size_t *count, uint64_t *groups,
				  double *kernel_ms)
{
	*records = NULL;
	*count = 0;
	return GPU_NOT_BUILT;
}

GpuStatus
gpu_page_cache_create(size_t bytes, int32_t page_size, GpuPageCache **out)
{
	*out = NULL;
	return GPU_NOT_BUILT;
}

void
gpu_page_cache_destroy(GpuPageCache *c)
{
}

void
gpu_page_cache_follow_wal(GpuPageCache *c, uint64_t from)
{
}

void
gpu_page_cache_wal_changes(GpuPageCache *c, const GpuWalChange *changes, size_t n, uint64_t upto)
{
}

uint64_t
gpu_page_cache_wal_upto(GpuPageCache *c)
{
	return 0;
}
