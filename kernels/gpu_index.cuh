/*
 * gpu_index.cuh
 *	  A column index's pages in device memory as kernels read them: the
 *	  pages object, an entry's columns, a page's bound from its summary,
 *	  and scratch memory from the device's pool (gpu_index.cu's selections,
 *	  gpu_index_groups.cu's grouping).
 */
#ifndef GPU_INDEX_CUH
#define GPU_INDEX_CUH

#include "gpu_error.h"
#include "gpu_index.h"
#include "gpu_program.cuh"
#include "page_bounds.h"

struct GpuIndexPages
{
	int			page_size;
	char	   *pages;			/* blocks 0 to nblocks - 1 */
	uint32_t	nblocks;
	char	   *staging;		/* a batch of pages on its way */
	size_t		staging_pages;
	uint32_t   *blocks;			/* their blocks */
	/* entries_kernel's thread blocks the device runs at once, by key width 4 and 8 */
	int			resident_grid[2];
};

static __device__ __forceinline__ bool
bit_set(const char *page, int offset, int slot)
{
	return (((const uint8_t *) page)[offset + (slot >> 3)] >> (slot & 7)) & 1;
}

/* an entry's columns on a data page, for program_row_key */
struct IndexEntry
{
	const char *page;
	int			slot;

	__device__ const void *value(const GpuColumn &c, bool *isnull) const
	{
		*isnull = bit_set(page, c.null_offset, slot);
		return page + c.value_offset + (size_t) slot * c.width;
	}
};

/*
 * Whether some entry of a page with this summary may pass the program's
 * filter, and the largest key such an entry can have (page_bounds.h), as
 * colindex_page_eval_skips reads a page on the CPU.
 */
static __device__ bool
program_page_bound(const GpuRowProgram *p, const char *summary, uint64_t *bound)
{
	ValueRange	regs[GPU_PROGRAM_MAX_REGISTERS];
	uint8_t		truths[GPU_PROGRAM_MAX_STEPS];
	KeyRange	stack[GPU_PROGRAM_MAX_KEY_STEPS];
	uint64_t	null_key = key_null((KeyType) p->key_type, p->nulls_first);
	ValueRange	range;
	int			top = 0;

	if (p->nsteps > 0)
	{
		for (int r = 0; r < p->nregisters; r++)
		{
			regs[r].lo = regs[r].hi = p->registers[r].value;
			regs[r].may_null = p->registers[r].isnull;
			regs[r].may_value = !p->registers[r].isnull;
		}
		for (int i = 0; i < p->nloads; i++)
		{
			range = page_summary_range(summary, p->loads[i].column.column);
			regs[p->loads[i].reg] = p->loads[i].to_float8 ? range_to_float8(range) : range;
		}
		if (!filter_range_may_pass(p->steps, p->nsteps, regs, p->sets, truths))
			return false;
	}
	/* a vector column's summary holds no values */
	if (p->key_is_vector)
	{
		*bound = UINT64_MAX;
		return true;
	}
	if (!p->key_is_program)
	{
		range = page_summary_range(summary, p->key_column.column);
		*bound = key_column_bound((KeyType) p->key_type, &range, p->desc, null_key);
		return true;
	}
	for (int i = 0; i < p->nkey_steps; i++)
	{
		const GpuKeyStep *ks = &p->key_steps[i];

		if (!key_step_is_column(&ks->step))
		{
			if (!key_range_apply(&ks->step, stack, &top))
			{
				*bound = KEY_PROGRAM_ERROR_KEY;
				return true;
			}
			continue;
		}
		range = page_summary_range(summary, ks->column.column);
		stack[top++] = key_range_of_column(&ks->step, &range);
	}
	*bound = key_range_bound(&stack[0], p->desc, null_key);
	return true;
}

/*
 * The thread blocks of a kernel of threads threads each that the current
 * device runs at once: more would leave a last, partial wave running on a
 * mostly idle device.
 */
template <typename Kernel>
static GpuStatus
resident_grid(Kernel kernel, int threads, int *grid)
{
	int			device;
	int			multiprocessors;
	int			per_multiprocessor = 0;

	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
			  "Finding the device's multiprocessors");
	GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel,
															threads, 0),
			  "Finding a kernel's resident thread blocks");
	*grid = multiprocessors * std::max(per_multiprocessor, 1);
	return GPU_OK;
}

/*
 * Scratch memory of a selection or a grouping.  The keys and their
 * ordinals, as large as the index, are one allocation from the device's
 * pool (scratch_alloc), freed when the Scratch goes out of scope; the other
 * parts, small, are the job thread's own on each GPU and kept from one
 * selection to the next (scratch_part).  cudaMallocAsync and cudaFreeAsync
 * take a lock of the process: 16 threads doing a small job with 8 of each
 * ran 11,100 jobs a second on one H200 and 9,900 on two, against 39,300
 * and 72,900 with their memory kept (bench/alloc_lock.cu, 2026-11-27).
 */
struct Scratch
{
	void	   *keys;
	uint32_t   *ordinals;		/* in the keys' allocation, after them */
	GpuIndexQuery *query;
	uint64_t   *values;			/* the sets' values, then the tied positions
								 * (a grouping: the vouched blocks) */
	unsigned long long *counts; /* the kernel's, then the data pages */
	TopkItem   *items;
	uint64_t   *bounds;			/* each block's */
	uint32_t   *blocks;			/* each block's number */
	uint64_t   *sorted_bounds;	/* the two sorted by bound, highest first */
	uint32_t   *sorted_blocks;
	uint8_t    *passes;
	void	   *sort_temp;
	uint32_t   *reaching;		/* pages_reaching_kernel's answer */

	~Scratch()
	{
		if (keys)
			cudaFreeAsync(keys, cudaStreamPerThread);
		cudaStreamSynchronize(cudaStreamPerThread);
	}
};

/*
 * Scratch memory from the device's pool.  Each job thread's stream reuses
 * only the memory it freed itself (gpu_index_pages_create), so the pool
 * keeps every thread's largest selection: out of memory, the pool first
 * gives back what no stream uses, and the allocation is tried once more.
 */
template <typename T>
static GpuStatus
scratch_alloc(T **ptr, size_t bytes)
{
	size_t		size = bytes > 0 ? bytes : 16;
	cudaMemPool_t pool;
	int			device;
	cudaError_t err = cudaMallocAsync((void **) ptr, size, cudaStreamPerThread);

	if (err == cudaErrorMemoryAllocation)
	{
		(void) cudaGetLastError();
		GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
		GPU_CHECK(cudaDeviceGetMemPool(&pool, device), "Finding the memory pool");
		GPU_CHECK(cudaMemPoolTrimTo(pool, 0), "Trimming the memory pool");
		err = cudaMallocAsync((void **) ptr, size, cudaStreamPerThread);
	}
	GPU_CHECK(err, "Allocating device memory for a selection");
	return GPU_OK;
}

/* The parts of a Scratch that a job thread keeps on each GPU */
enum ScratchPart
{
	PART_QUERY,
	PART_VALUES,
	PART_COUNTS,
	PART_ITEMS,
	PART_BOUNDS,
	PART_BLOCKS,
	PART_SORTED_BOUNDS,
	PART_SORTED_BLOCKS,
	PART_PASSES,
	PART_SORT_TEMP,
	PART_REACHING,
	SCRATCH_PARTS
};

struct KeptScratch
{
	void	   *ptr[SCRATCH_PARTS];
	size_t		bytes[SCRATCH_PARTS];
};

/* this thread's parts on each GPU; only its stream uses them, in order */
static thread_local KeptScratch kept_scratch[GPU_MAX_DEVICES];

/*
 * A part of at least bytes, the thread's on the current GPU: the one it
 * kept, or, where that is smaller, a larger one in its place.
 */
template <typename T>
static GpuStatus
scratch_part(ScratchPart part, T **ptr, size_t bytes)
{
	int			device;
	KeptScratch *kept;

	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	if (device >= GPU_MAX_DEVICES)
		return gpu_fail(cudaErrorInvalidDevice, "Keeping scratch memory");
	kept = &kept_scratch[device];
	if (kept->ptr[part] == NULL || kept->bytes[part] < bytes)
	{
		/* grown by a quarter, so that slowly growing parts are seldom replaced */
		size_t		size = std::max<size_t>(bytes + bytes / 4, 64);

		if (kept->ptr[part] != NULL)
			cudaFreeAsync(kept->ptr[part], cudaStreamPerThread);
		kept->ptr[part] = NULL;
		kept->bytes[part] = 0;
		GPU_TRY(scratch_alloc(&kept->ptr[part], size));
		kept->bytes[part] = size;
	}
	*ptr = (T *) kept->ptr[part];
	return GPU_OK;
}

#endif							/* GPU_INDEX_CUH */
