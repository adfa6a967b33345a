/*
 * gpu_index.cu
 *	  A column index's pages in device memory, and a round's candidates
 *	  selected from them (see gpu_index.h).
 *
 * The pages lie at their block numbers in one device array.  Storing
 * copies a batch of pages to the device in one transfer and scatters them
 * to their blocks.  A selection runs entries_kernel, one thread block per
 * data page at a time: each thread takes a slot, and the entries that pass
 * are compacted by a block-wide scan and one atomic add per block into an
 * array of keys and one of ordinals ((block - 1) * capacity + slot).  The
 * engine's device-resident top-k picks the best of the keys; a last kernel
 * turns the winners' ordinals into positions.
 *
 * Work runs on the calling thread's per-thread stream, scratch memory is
 * taken from the device's stream-ordered pool (kept between selections),
 * and several threads may select from one object at once; storing must
 * not overlap a selection (the caller's lock).
 */
#include <chrono>

#include <cub/cub.cuh>

#include "gpu_error.h"
#include "gpu_index.h"
#include "gpu_program.cuh"

#define ENTRY_THREADS 256
#define SCATTER_THREADS 256

struct GpuIndexPages
{
	int			page_size;
	char	   *pages;			/* blocks 0 to nblocks - 1 */
	uint32_t	nblocks;
	char	   *staging;		/* a batch of pages on its way */
	size_t		staging_pages;
	uint32_t   *blocks;			/* their blocks */
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

/* Whether a key is one the round may still select (see GpuIndexQuery). */
static __device__ __forceinline__ bool
key_left(const GpuIndexQuery *q, uint64_t key, uint64_t position, const uint64_t *tied,
		 size_t ntied)
{
	size_t		lo = 0;
	size_t		hi = ntied;

	if (!q->have_threshold || key < q->threshold)
		return true;
	if (key != q->threshold || !q->exact)
		return false;
	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (tied[mid] < position)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == ntied || tied[lo] != position;
}

/*
 * The entries of every data page that pass and are left, compacted into
 * keys and ordinals; counts[0] gets their number, counts[1] the entries
 * read.
 */
template <typename K>
__global__ void
__launch_bounds__(ENTRY_THREADS)
entries_kernel(const char *pages, const GpuIndexQuery *q, const uint64_t *tied, size_t ntied,
			   K *keys, uint32_t *ordinals, unsigned long long *counts)
{
	typedef cub::BlockScan<uint32_t, ENTRY_THREADS> Scan;
	__shared__ typename Scan::TempStorage scan;
	__shared__ uint32_t base;
	ProgramState state;
	unsigned long long scanned = 0;

	state.init(&q->program);
	for (uint32_t block = blockIdx.x + 1; block < q->nblocks; block += gridDim.x)
	{
		const char *page = pages + (size_t) block * q->page_size;
		int			high;

		if (*(const uint16_t *) (page + q->kind_offset) != q->data_kind)
			continue;
		high = *(const uint16_t *) (page + q->high_offset);
		for (int first = 0; first < high; first += ENTRY_THREADS)
		{
			int			slot = first + threadIdx.x;
			uint64_t	key = 0;
			uint32_t	pass = 0;
			uint32_t	offset;
			uint32_t	total;

			if (slot < high && bit_set(page, q->live_offset, slot) &&
				!(q->skip_killed && bit_set(page, q->killed_offset, slot)))
			{
				scanned++;
				pass = program_row_key(&q->program, IndexEntry{page, slot}, &state, &key) &&
					key_left(q, key, ((uint64_t) block << q->slot_bits) | (uint64_t) slot,
							 tied, ntied);
			}
			Scan(scan).ExclusiveSum(pass, offset, total);
			if (threadIdx.x == 0 && total > 0)
				base = (uint32_t) atomicAdd(&counts[0], (unsigned long long) total);
			__syncthreads();
			if (pass)
			{
				keys[base + offset] = (K) key;
				ordinals[base + offset] = (block - 1) * (uint32_t) q->capacity + (uint32_t) slot;
			}
			__syncthreads();
		}
	}
	if (scanned > 0)
		atomicAdd(&counts[1], scanned);
}

/* Each answer item's ref, an index into ordinals, turned into the entry's position. */
__global__ void
positions_kernel(TopkItem *items, size_t n, const uint32_t *ordinals, int capacity, int slot_bits)
{
	size_t		i = (size_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
	{
		uint32_t	ordinal = ordinals[items[i].ref];

		items[i].ref = ((uint64_t) (ordinal / capacity + 1) << slot_bits) | (ordinal % capacity);
	}
}

/* Pages from the staging area to their blocks, a thread block per page. */
__global__ void
scatter_kernel(char *pages, const char *staging, const uint32_t *blocks, size_t n, int page_size)
{
	const uint4 *from = (const uint4 *) (staging + (size_t) blockIdx.x * page_size);
	uint4	   *to;

	if (blocks[blockIdx.x] == UINT32_MAX)
		return;
	to = (uint4 *) (pages + (size_t) blocks[blockIdx.x] * page_size);
	for (int i = threadIdx.x; i < page_size / (int) sizeof(uint4); i += blockDim.x)
		to[i] = from[i];
}

extern "C" GpuStatus
gpu_index_pages_create(int page_size, GpuIndexPages **out)
{
	GpuIndexPages *p = (GpuIndexPages *) calloc(1, sizeof(GpuIndexPages));
	cudaMemPool_t pool;
	uint64_t	keep = UINT64_MAX;
	int			device;

	if (p == NULL)
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating host memory");
	p->page_size = page_size;
	/* the selections' scratch memory stays in the pool between them */
	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetDefaultMemPool(&pool, device), "Finding the memory pool");
	GPU_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
			  "Configuring the memory pool");
	*out = p;
	return GPU_OK;
}

extern "C" void
gpu_index_pages_destroy(GpuIndexPages *p)
{
	if (p == NULL)
		return;
	cudaStreamSynchronize(cudaStreamPerThread);
	cudaFree(p->pages);
	cudaFree(p->staging);
	cudaFree(p->blocks);
	free(p);
}

extern "C" size_t
gpu_index_pages_bytes(const GpuIndexPages *p)
{
	return (size_t) p->nblocks * p->page_size;
}

extern "C" GpuStatus
gpu_index_pages_reserve(GpuIndexPages *p, uint32_t nblocks)
{
	char	   *pages = NULL;
	size_t		bytes = (size_t) nblocks * p->page_size;
	size_t		old_bytes = gpu_index_pages_bytes(p);

	if (nblocks <= p->nblocks)
		return GPU_OK;
	GPU_CHECK(cudaMalloc(&pages, bytes), "Allocating device memory for an index");
	if (p->pages != NULL &&
		cudaMemcpyAsync(pages, p->pages, old_bytes, cudaMemcpyDeviceToDevice,
						cudaStreamPerThread) != cudaSuccess)
	{
		cudaFree(pages);
		return gpu_fail(cudaGetLastError(), "Copying an index's pages");
	}
	GPU_CHECK(cudaMemsetAsync(pages + old_bytes, 0, bytes - old_bytes, cudaStreamPerThread),
			  "Clearing an index's new pages");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Copying an index's pages");
	cudaFree(p->pages);
	p->pages = pages;
	p->nblocks = nblocks;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_index_pages_store(GpuIndexPages *p, const void *pages, const uint32_t *blocks, size_t n)
{
	if (n == 0)
		return GPU_OK;
	if (n > p->staging_pages)
	{
		cudaFree(p->staging);
		cudaFree(p->blocks);
		p->staging = NULL;
		p->blocks = NULL;
		p->staging_pages = 0;
		GPU_CHECK(cudaMalloc(&p->staging, n * p->page_size), "Allocating device memory");
		GPU_CHECK(cudaMalloc(&p->blocks, n * sizeof(uint32_t)), "Allocating device memory");
		p->staging_pages = n;
	}
	GPU_CHECK(cudaMemcpyAsync(p->staging, pages, n * p->page_size, cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying index pages to the device");
	GPU_CHECK(cudaMemcpyAsync(p->blocks, blocks, n * sizeof(uint32_t), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying index pages to the device");
	scatter_kernel<<<n, SCATTER_THREADS, 0, cudaStreamPerThread>>>(p->pages, p->staging,
																	p->blocks, n, p->page_size);
	GPU_CHECK(cudaGetLastError(), "Launching the page store");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Storing index pages");
	return GPU_OK;
}

/* scratch memory of a selection, from the device's pool */
struct Scratch
{
	void	   *keys;
	uint32_t   *ordinals;
	GpuIndexQuery *query;
	uint64_t   *values;			/* the sets' values, then the tied positions */
	unsigned long long *counts;
	TopkItem   *items;

	~Scratch()
	{
		void	   *all[] = {keys, ordinals, query, values, counts, items};

		for (void *ptr : all)
			if (ptr)
				cudaFreeAsync(ptr, cudaStreamPerThread);
		cudaStreamSynchronize(cudaStreamPerThread);
	}
};

template <typename T>
static GpuStatus
scratch_alloc(T **ptr, size_t bytes)
{
	GPU_CHECK(cudaMallocAsync((void **) ptr, bytes > 0 ? bytes : 16, cudaStreamPerThread),
			  "Allocating device memory for a selection");
	return GPU_OK;
}

static GpuStatus
select_entries(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
			   size_t nset_values, const uint64_t *tied, size_t ntied, int key_width,
			   Scratch *s, unsigned long long counts[2])
{
	GpuIndexQuery q = *query;
	size_t		slots;
	int			grid;
	int			multiprocessors;
	int			device;

	q.nblocks = q.nblocks < p->nblocks ? q.nblocks : p->nblocks;
	slots = q.nblocks > 1 ? (size_t) (q.nblocks - 1) * q.capacity : 0;
	GPU_TRY(scratch_alloc(&s->keys, slots * key_width));
	GPU_TRY(scratch_alloc(&s->ordinals, slots * sizeof(uint32_t)));
	GPU_TRY(scratch_alloc(&s->query, sizeof(GpuIndexQuery)));
	GPU_TRY(scratch_alloc(&s->values, (nset_values + ntied) * sizeof(uint64_t)));
	GPU_TRY(scratch_alloc(&s->counts, 2 * sizeof(unsigned long long)));
	program_place_sets(&q.program, s->values);
	GPU_CHECK(cudaMemcpyAsync(s->query, &q, sizeof(q), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying a selection's query");
	if (nset_values > 0)
		GPU_CHECK(cudaMemcpyAsync(s->values, set_values, nset_values * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a selection's query");
	if (ntied > 0)
		GPU_CHECK(cudaMemcpyAsync(s->values + nset_values, tied, ntied * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a selection's query");
	GPU_CHECK(cudaMemsetAsync(s->counts, 0, 2 * sizeof(unsigned long long), cudaStreamPerThread),
			  "Clearing a selection's counts");
	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
			  "Finding the device's multiprocessors");
	grid = q.nblocks > 1 ? (int) std::min<size_t>(q.nblocks - 1, (size_t) multiprocessors * 8) : 0;
	if (grid > 0)
	{
		if (key_width == 4)
			entries_kernel<uint32_t><<<grid, ENTRY_THREADS, 0, cudaStreamPerThread>>>(
				p->pages, s->query, s->values + nset_values, ntied, (uint32_t *) s->keys,
				s->ordinals, s->counts);
		else
			entries_kernel<uint64_t><<<grid, ENTRY_THREADS, 0, cudaStreamPerThread>>>(
				p->pages, s->query, s->values + nset_values, ntied, (uint64_t *) s->keys,
				s->ordinals, s->counts);
		GPU_CHECK(cudaGetLastError(), "Launching the entry selection");
	}
	GPU_CHECK(cudaMemcpyAsync(counts, s->counts, 2 * sizeof(unsigned long long),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying a selection's counts");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Selecting index entries");
	return GPU_OK;
}

extern "C" GpuStatus
gpu_index_select(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
				 size_t nset_values, const uint64_t *tied, size_t ntied, GpuTopk *t,
				 TopkResult *result, uint64_t *scanned, double *kernel_ms)
{
	auto		started = std::chrono::steady_clock::now();
	int			width = key_width((KeyType) query->program.key_type);
	Scratch		s = {};
	unsigned long long counts[2];

	result->items = NULL;
	result->count = 0;
	GPU_TRY(select_entries(p, query, set_values, nset_values, tied, ntied, width, &s,
						   counts));
	*scanned = counts[1];
	if (counts[0] > 0)
	{
		GPU_TRY(gpu_topk_reset(t, width, query->count,
							   query->exact ? TOPK_EXACT : TOPK_WITH_TIES));
		GPU_TRY(gpu_topk_device(t, s.keys, counts[0], NULL, NULL));
		GPU_TRY(gpu_topk_result(t, result));
	}
	if (result->count > 0)
	{
		size_t		bytes = result->count * sizeof(TopkItem);

		GPU_TRY(scratch_alloc(&s.items, bytes));
		GPU_CHECK(cudaMemcpyAsync(s.items, result->items, bytes, cudaMemcpyHostToDevice,
								  cudaStreamPerThread), "Copying the candidates");
		positions_kernel<<<(result->count + 255) / 256, 256, 0, cudaStreamPerThread>>>(
			s.items, result->count, s.ordinals, query->capacity, query->slot_bits);
		GPU_CHECK(cudaGetLastError(), "Launching the positions kernel");
		GPU_CHECK(cudaMemcpyAsync(result->items, s.items, bytes, cudaMemcpyDeviceToHost,
								  cudaStreamPerThread), "Copying the candidates");
		GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Finding the candidates");
	}
	*kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
														   started).count();
	return GPU_OK;
}
