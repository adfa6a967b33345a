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
 * Where the pages have summaries (page_bounds.h), bounds_kernel first
 * gives each page the largest key its entries can have, and whether any
 * of them can pass the filter; the pages are sorted by bound, highest
 * first, and read in bands of that order, as the early-stopping algorithm
 * visits segments: first twice as many pages as the round's count of keys
 * (each of the best keys raises its page's bound, so these pages tend to
 * hold them), then each band eight times the last.  Once the keys found
 * number count, the count-th best of them is a floor that the round's
 * count-th key cannot be below: a band skips the pages whose bound is
 * below it and keeps only keys that reach it, the floor rises after each
 * band, and the round ends at the first page whose bound is below the
 * floor (or, where any tied row will do, not above it).  A band grows
 * eightfold, not to every page that still reaches the floor: with a
 * filter the floor rises much from band to band.  Pages whose entries
 * cannot pass are never read.
 *
 * Work runs on the calling thread's per-thread stream, scratch memory is
 * taken from the device's stream-ordered pool (kept between selections),
 * and several threads may select from one object at once; storing must
 * not overlap a selection (the caller's lock).
 */
#include <chrono>

#include <cub/cub.cuh>

#include "gpu_index.cuh"

#define ENTRY_THREADS 256
#define SCATTER_THREADS 256
#define BOUND_THREADS 256

/* the pages of the highest bounds read first: twice the keys wanted, and this many more */
#define FIRST_BAND_PAGES 16
/* each band after, while the keys found are too few, this many times as many */
#define BAND_GROWTH 8

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
 * Each block's bound (0 where no entry of it can pass: a page that is no
 * data page, or empty, has none), its number beside it for the sort, and
 * whether an entry of it may pass; counts[3] gets the data pages.
 */
__global__ void
__launch_bounds__(BOUND_THREADS)
bounds_kernel(const char *pages, const GpuIndexQuery *q, uint64_t *bounds, uint32_t *blocks,
			  uint8_t *passes, unsigned long long *counts)
{
	uint32_t	block = blockIdx.x * blockDim.x + threadIdx.x;
	const char *page = pages + (size_t) block * q->page_size;
	bool		data = block > 0 && block < q->nblocks &&
		*(const uint16_t *) (page + q->kind_offset) == q->data_kind;
	uint64_t	bound = 0;
	bool		pass = data && *(const uint16_t *) (page + q->high_offset) > 0 &&
		program_page_bound(&q->program, page + q->summary_offset, &bound);
	int			data_pages = __syncthreads_count(data);

	if (threadIdx.x == 0 && data_pages > 0)
		atomicAdd(&counts[3], (unsigned long long) data_pages);
	if (block < q->nblocks)
	{
		bounds[block] = pass ? bound : 0;
		blocks[block] = block;
		passes[block] = pass;
	}
}

/* The pages an entries_kernel reads, and the keys it keeps. */
struct Band
{
	const uint32_t *blocks;		/* the pages by bound, highest first, or NULL: every data page */
	const uint64_t *bounds;		/* their bounds */
	const uint8_t *passes;		/* by block: whether an entry of it may pass */
	uint32_t	first;			/* the band: the pages of these places in that order */
	uint32_t	end;
	uint64_t	key_floor;		/* keys below it are dropped, and pages whose bound is */
	bool		floor_reached;	/* and pages whose bound is the floor (any tie will do) */
};

/*
 * In *out, how many of the n bounds (sorted, highest first) are above
 * floor, or at least floor unless strict: the pages a round may still
 * need.
 */
__global__ void
pages_reaching_kernel(const uint64_t *bounds, uint32_t n, uint64_t floor, bool strict,
					  uint32_t *out)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (bounds[mid] > floor || (!strict && bounds[mid] == floor))
			lo = mid + 1;
		else
			hi = mid;
	}
	*out = lo;
}

/*
 * Whether a data page's slot (below its high-water mark) holds an entry the
 * selection reads: in use, and not marked dead where those are skipped.
 */
static __device__ __forceinline__ bool
entry_readable(const GpuIndexQuery *q, const char *page, int slot)
{
	return bit_set(page, q->live_offset, slot) &&
		!(q->skip_killed && bit_set(page, q->killed_offset, slot));
}

/* The n-th page of a band, or false where the band does not read it. */
static __device__ __forceinline__ bool
band_page(const Band &band, uint32_t n, uint32_t *block)
{
	uint64_t	bound;

	if (band.blocks == NULL)
	{
		*block = n + 1;
		return true;
	}
	*block = band.blocks[band.first + n];
	bound = band.bounds[band.first + n];
	return band.passes[*block] && bound >= band.key_floor &&
		!(band.floor_reached && bound == band.key_floor);
}

/*
 * The entries of the band's data pages that pass, are left and reach its
 * floor, compacted into keys and ordinals after the counts[0] already
 * there; counts[1] gets the entries read, counts[2] the pages.
 */
template <typename K>
__global__ void
__launch_bounds__(ENTRY_THREADS)
entries_kernel(const char *pages, const GpuIndexQuery *q, Band band, const uint64_t *tied,
			   size_t ntied, K *keys, uint32_t *ordinals, unsigned long long *counts)
{
	typedef cub::BlockScan<uint32_t, ENTRY_THREADS> Scan;
	__shared__ typename Scan::TempStorage scan;
	__shared__ uint32_t base;
	ProgramState state;
	unsigned long long scanned = 0;
	unsigned long long pages_read = 0;

	state.init(&q->program);
	for (uint32_t n = blockIdx.x; n < band.end - band.first; n += gridDim.x)
	{
		uint32_t	block;
		const char *page;
		int			high;

		if (!band_page(band, n, &block))
			continue;
		page = pages + (size_t) block * q->page_size;
		if (*(const uint16_t *) (page + q->kind_offset) != q->data_kind)
			continue;
		pages_read++;
		high = *(const uint16_t *) (page + q->high_offset);
		for (int first = 0; first < high; first += ENTRY_THREADS)
		{
			int			slot = first + threadIdx.x;
			uint64_t	key = 0;
			uint32_t	pass = 0;
			uint32_t	offset;
			uint32_t	total;

			if (slot < high && entry_readable(q, page, slot))
			{
				scanned++;
				pass = program_row_key(&q->program, IndexEntry{page, slot}, &state, &key) &&
					key >= band.key_floor &&
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
	/* one atomic add a warp: every thread's, at the end of each band, had contended */
	scanned = __reduce_add_sync(0xFFFFFFFFu, (unsigned int) scanned);
	if (threadIdx.x % 32 == 0 && scanned > 0)
		atomicAdd(&counts[1], scanned);
	if (threadIdx.x == 0 && pages_read > 0)
		atomicAdd(&counts[2], pages_read);
}

/*
 * The lanes of a warp that compute one entry's vector key together: a
 * power of 2, about 16 elements a lane, so that a warp computes 32 / that
 * many entries at once (for 128 dimensions, 4 of 8 lanes each).
 */
static __device__ __forceinline__ int
vector_group_lanes(int dims)
{
	int			lanes = 1;

	while (lanes < 32 && lanes * 16 < dims)
		lanes *= 2;
	return lanes;
}

/*
 * A vector key's key of an entry that passed the filter, computed by a
 * group of lanes (mask, lanes of them, this one the member-th): each sums
 * every lanes-th term, so that the group reads the entry's elements in
 * order, and their sums are added up (any order is bounded alike,
 * vector_bounds.h; only those the kind's bound reads).  Every lane of the
 * group gets the key.
 */
static __device__ uint64_t
group_vector_key(const GpuRowProgram *p, const IndexEntry &entry, ProgramState *s,
				 unsigned mask, int lanes, int member)
{
	const GpuVectorKey *vk = &p->vector;
	VectorKeySpec spec = program_vector_spec(p);
	bool		isnull;
	const unsigned char *data =
		vector_stored_data((const unsigned char *) entry.value(vk->column, &isnull));
	VectorSums	sums;

	if (isnull || vk->query_null)
		return key_null(KEY_FLOAT8, p->nulls_first);
	if (data == NULL || !vector_data_fits(&spec, data))
		return KEY_PROGRAM_ERROR_KEY;
	sums = vector_sums(spec.kind, spec.element, data + 4, spec.query, spec.dims, member, lanes);
	for (int offset = lanes / 2; offset > 0; offset /= 2)
	{
		sums.value += __shfl_xor_sync(mask, sums.value, offset);
		if (spec.kind == VECTOR_DISTANCE_L2 || spec.kind == VECTOR_DISTANCE_L1)
			continue;
		sums.magnitude += __shfl_xor_sync(mask, sums.magnitude, offset);
		if (spec.kind == VECTOR_DISTANCE_COSINE)
			sums.row_norm += __shfl_xor_sync(mask, sums.row_norm, offset);
	}
	return vector_key_of_sums(&spec, vector_sums_finish(spec.kind, sums), s->stack, s->nulls);
}

/*
 * entries_kernel for a vector key, whose entries are long (a few a page):
 * each warp takes 32 slots of the band's pages at a time.  Each lane
 * checks its own slot (in use, not marked dead, through the filter); then
 * groups of the warp's lanes compute the keys of the slots that passed, a
 * group an entry (group_vector_key), and the slot's lane keeps its key;
 * the keys that can still be selected go out with one atomic add a warp.
 * No thread waits for another warp.
 */
__global__ void
__launch_bounds__(ENTRY_THREADS)
vector_entries_kernel(const char *pages, const GpuIndexQuery *q, Band band, const uint64_t *tied,
					  size_t ntied, uint64_t *keys, uint32_t *ordinals, unsigned long long *counts)
{
	ProgramState state;
	int			lane = threadIdx.x % 32;
	int			lanes = vector_group_lanes(q->program.vector.dims);
	unsigned	group_mask = (lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1) <<
		(lane / lanes * lanes);
	uint64_t	warps = (uint64_t) gridDim.x * (ENTRY_THREADS / 32);
	uint64_t	slots = (uint64_t) (band.end - band.first) * q->capacity;
	unsigned long long scanned = 0;
	unsigned long long pages_read = 0;

	state.init(&q->program);
	for (uint64_t first = ((uint64_t) blockIdx.x * (ENTRY_THREADS / 32) + threadIdx.x / 32) * 32;
		 first < slots; first += warps * 32)
	{
		uint64_t	at = first + lane;
		uint32_t	block = 1;
		int			slot = (int) (at % q->capacity);
		const char *page = NULL;
		bool		readable = false;
		bool		passes = false;
		uint64_t	key = 0;
		uint32_t	pass;
		uint32_t	todo;
		unsigned long long base = 0;

		if (at < slots && band_page(band, (uint32_t) (at / q->capacity), &block) &&
			*(const uint16_t *) ((page = pages + (size_t) block * q->page_size) +
								 q->kind_offset) == q->data_kind)
		{
			pages_read += slot == 0;
			readable = slot < *(const uint16_t *) (page + q->high_offset) &&
				entry_readable(q, page, slot);
			passes = readable && program_row_passes(&q->program, IndexEntry{page, slot}, &state);
		}
		scanned += readable;
		for (todo = __ballot_sync(0xFFFFFFFFu, passes); todo != 0;)
		{
			/* this lane's group's entry: the group-th slot left that passed */
			uint32_t	mine = todo;
			int			j;
			const char *entry_page;
			int			entry_slot;
			uint64_t	k = 0;

			for (int g = 0; g < lane / lanes && mine != 0; g++)
				mine &= mine - 1;
			j = mine != 0 ? __ffs(mine) - 1 : -1;
			for (int g = 0; g < 32 / lanes && todo != 0; g++)
				todo &= todo - 1;
			entry_page = (const char *) __shfl_sync(0xFFFFFFFFu, (uintptr_t) page, j < 0 ? 0 : j);
			entry_slot = __shfl_sync(0xFFFFFFFFu, slot, j < 0 ? 0 : j);
			if (j >= 0)
				k = group_vector_key(&q->program, IndexEntry{entry_page, entry_slot}, &state,
									 group_mask, lanes, lane % lanes);
			/* each key to the lane of its slot */
			for (int g = 0; g < 32 / lanes; g++)
			{
				uint64_t	gk = __shfl_sync(0xFFFFFFFFu, k, g * lanes);

				if (__shfl_sync(0xFFFFFFFFu, j, g * lanes) == lane)
					key = gk;
			}
		}
		passes = passes && key >= band.key_floor &&
			key_left(q, key, ((uint64_t) block << q->slot_bits) | (uint64_t) slot, tied, ntied);
		pass = __ballot_sync(0xFFFFFFFFu, passes);
		if (pass == 0)
			continue;
		if (lane == 0)
			base = atomicAdd(&counts[0], (unsigned long long) __popc(pass));
		base = __shfl_sync(0xFFFFFFFFu, base, 0) + __popc(pass & ((1u << lane) - 1));
		if (passes)
		{
			keys[base] = key;
			ordinals[base] = (block - 1) * (uint32_t) q->capacity + (uint32_t) slot;
		}
	}
	scanned = __reduce_add_sync(0xFFFFFFFFu, (unsigned int) scanned);
	pages_read = __reduce_add_sync(0xFFFFFFFFu, (unsigned int) pages_read);
	if (lane == 0 && scanned > 0)
		atomicAdd(&counts[1], scanned);
	if (lane == 0 && pages_read > 0)
		atomicAdd(&counts[2], pages_read);
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
	int			no = 0;
	int			device;

	if (p == NULL)
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating host memory");
	p->page_size = page_size;
	/*
	 * The selections' scratch memory stays in the pool between them, and a
	 * job thread's stream reuses only what it freed itself.  Reusing memory
	 * another stream freed, even once its free is done (opportunistic
	 * reuse), made the pool serialise concurrent selections: 16 clients on
	 * one index query over 100M rows ran 1,200 queries a second with it,
	 * 2,130-2,190 without (H100, 2026-11-26).
	 */
	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetDefaultMemPool(&pool, device), "Finding the memory pool");
	GPU_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
			  "Configuring the memory pool");
	GPU_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &no),
			  "Configuring the memory pool");
	GPU_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no),
			  "Configuring the memory pool");
	GPU_TRY(resident_grid(entries_kernel<uint32_t>, ENTRY_THREADS, &p->resident_grid[0]));
	GPU_TRY(resident_grid(entries_kernel<uint64_t>, ENTRY_THREADS, &p->resident_grid[1]));
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

/* A selection under way: its query on the device, its scratch memory, its counts. */
struct Selection
{
	GpuIndexPages *p;
	GpuIndexQuery q;			/* as on the device, the blocks limited to those stored */
	int			key_width;
	size_t		ntied;
	size_t		nset_values;
	int			grid;
	Scratch		s;
	unsigned long long counts[4];
};

static GpuStatus
selection_begin(Selection *sel, const GpuIndexQuery *query, const uint64_t *set_values,
				size_t nset_values, const uint64_t *tied, size_t ntied)
{
	GpuIndexQuery *q = &sel->q;
	Scratch    *s = &sel->s;
	size_t		slots;

	*q = *query;
	q->nblocks = q->nblocks < sel->p->nblocks ? q->nblocks : sel->p->nblocks;
	sel->nset_values = nset_values;
	sel->ntied = ntied;
	slots = q->nblocks > 1 ? (size_t) (q->nblocks - 1) * q->capacity : 0;
	GPU_TRY(scratch_alloc(&s->keys, slots * (sel->key_width + sizeof(uint32_t))));
	s->ordinals = (uint32_t *) ((char *) s->keys + slots * sel->key_width);
	GPU_TRY(scratch_part(PART_QUERY, &s->query, sizeof(GpuIndexQuery)));
	GPU_TRY(scratch_part(PART_VALUES, &s->values, (nset_values + ntied) * sizeof(uint64_t)));
	GPU_TRY(scratch_part(PART_COUNTS, &s->counts, sizeof(sel->counts)));
	program_place_sets(&q->program, s->values);
	GPU_CHECK(cudaMemcpyAsync(s->query, q, sizeof(*q), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying a selection's query");
	if (nset_values > 0)
		GPU_CHECK(cudaMemcpyAsync(s->values, set_values, nset_values * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a selection's query");
	if (ntied > 0)
		GPU_CHECK(cudaMemcpyAsync(s->values + nset_values, tied, ntied * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a selection's query");
	GPU_CHECK(cudaMemsetAsync(s->counts, 0, sizeof(sel->counts), cudaStreamPerThread),
			  "Clearing a selection's counts");
	memset(sel->counts, 0, sizeof(sel->counts));
	sel->grid = q->nblocks > 1 ?
		(int) std::min<size_t>(q->nblocks - 1,
							   sel->p->resident_grid[sel->key_width == 4 ? 0 : 1]) : 0;
	return GPU_OK;
}

/* The entries of a band's pages, added to the keys found; then the counts. */
static GpuStatus
read_band(Selection *sel, const Band &band)
{
	Scratch    *s = &sel->s;
	const uint64_t *tied = s->values + sel->nset_values;
	int			grid = (int) std::min<size_t>(band.end - band.first, sel->grid);

	if (grid > 0 && sel->q.program.key_is_vector)
	{
		/* a warp 32 slots at a time */
		grid = (int) std::min<uint64_t>((uint64_t) (band.end - band.first) * sel->q.capacity /
										ENTRY_THREADS + 1, sel->grid);
		vector_entries_kernel<<<grid, ENTRY_THREADS, 0, cudaStreamPerThread>>>(
			sel->p->pages, s->query, band, tied, sel->ntied, (uint64_t *) s->keys,
			s->ordinals, s->counts);
		GPU_CHECK(cudaGetLastError(), "Launching the entry selection");
	}
	else if (grid > 0)
	{
		if (sel->key_width == 4)
			entries_kernel<uint32_t><<<grid, ENTRY_THREADS, 0, cudaStreamPerThread>>>(
				sel->p->pages, s->query, band, tied, sel->ntied, (uint32_t *) s->keys,
				s->ordinals, s->counts);
		else
			entries_kernel<uint64_t><<<grid, ENTRY_THREADS, 0, cudaStreamPerThread>>>(
				sel->p->pages, s->query, band, tied, sel->ntied, (uint64_t *) s->keys,
				s->ordinals, s->counts);
		GPU_CHECK(cudaGetLastError(), "Launching the entry selection");
	}
	GPU_CHECK(cudaMemcpyAsync(sel->counts, s->counts, sizeof(sel->counts),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying a selection's counts");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Selecting index entries");
	return GPU_OK;
}

/* The best of the keys found so far, by the engine object t. */
static GpuStatus
select_keys(Selection *sel, GpuTopk *t, TopkResult *result)
{
	result->items = NULL;
	result->count = 0;
	if (sel->counts[0] == 0)
		return GPU_OK;
	GPU_TRY(gpu_topk_reset(t, sel->key_width, sel->q.count,
						   sel->q.exact ? TOPK_EXACT : TOPK_WITH_TIES));
	GPU_TRY(gpu_topk_device(t, sel->s.keys, sel->counts[0], NULL, NULL));
	return gpu_topk_result(t, result);
}

/* Each page's bound, and the pages sorted by bound, highest first. */
static GpuStatus
compute_bounds(Selection *sel)
{
	Scratch    *s = &sel->s;
	uint32_t	nblocks = sel->q.nblocks;
	size_t		temp_bytes = 0;
	/* a 4-byte key's bounds fit in the low 32 bits: half the sort's passes */
	int			key_bits = 8 * sel->key_width;

	GPU_TRY(scratch_part(PART_BOUNDS, &s->bounds, nblocks * sizeof(uint64_t)));
	GPU_TRY(scratch_part(PART_BLOCKS, &s->blocks, nblocks * sizeof(uint32_t)));
	GPU_TRY(scratch_part(PART_SORTED_BOUNDS, &s->sorted_bounds, nblocks * sizeof(uint64_t)));
	GPU_TRY(scratch_part(PART_SORTED_BLOCKS, &s->sorted_blocks, nblocks * sizeof(uint32_t)));
	GPU_TRY(scratch_part(PART_PASSES, &s->passes, nblocks));
	GPU_TRY(scratch_part(PART_REACHING, &s->reaching, sizeof(uint32_t)));
	bounds_kernel<<<(nblocks + BOUND_THREADS - 1) / BOUND_THREADS, BOUND_THREADS, 0,
		cudaStreamPerThread>>>(sel->p->pages, s->query, s->bounds, s->blocks, s->passes,
							   s->counts);
	GPU_CHECK(cudaGetLastError(), "Launching the page bounds");
	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, temp_bytes, s->bounds,
														s->sorted_bounds, s->blocks,
														s->sorted_blocks, (int) nblocks, 0,
														key_bits, cudaStreamPerThread),
			  "Sorting the page bounds");
	GPU_TRY(scratch_part(PART_SORT_TEMP, &s->sort_temp, temp_bytes));
	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(s->sort_temp, temp_bytes, s->bounds,
														s->sorted_bounds, s->blocks,
														s->sorted_blocks, (int) nblocks, 0,
														key_bits, cudaStreamPerThread),
			  "Sorting the page bounds");
	return GPU_OK;
}

/*
 * Where the query asks for ties only because its key program may raise:
 * exact after all when no page's bound is the largest key, that of a row
 * that raises (and of NULL first).
 */
static GpuStatus
settle_mode(Selection *sel)
{
	uint64_t	highest = 0;

	if (!sel->q.exact_if_no_errors || sel->q.exact)
		return GPU_OK;
	GPU_CHECK(cudaMemcpyAsync(&highest, sel->s.sorted_bounds, sizeof(highest),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying the highest page bound");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Bounding the pages");
	if (highest == key_null((KeyType) sel->q.program.key_type, true))
		return GPU_OK;
	sel->q.exact = true;
	GPU_CHECK(cudaMemcpyAsync(sel->s.query, &sel->q, sizeof(sel->q), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying a selection's query");
	return GPU_OK;
}

/*
 * The round's keys read band by band of pages (see the top of the file):
 * the best in *result.
 */
static GpuStatus
select_by_bounds(Selection *sel, GpuTopk *t, TopkResult *result)
{
	uint32_t	nblocks = sel->q.nblocks;
	size_t		size = 2 * sel->q.count + FIRST_BAND_PAGES;
	Band		band = {};
	bool		have_floor = false;
	uint64_t	selected = 0;	/* the keys found when *result was selected */

	GPU_TRY(compute_bounds(sel));
	GPU_TRY(settle_mode(sel));
	band.blocks = sel->s.sorted_blocks;
	band.bounds = sel->s.sorted_bounds;
	band.passes = sel->s.passes;
	for (;;)
	{
		uint32_t	reaching;

		band.end = (uint32_t) std::min<size_t>(band.first + size, nblocks);
		GPU_TRY(read_band(sel, band));
		if (sel->counts[0] >= sel->q.count && sel->counts[0] > selected)
		{
			/* the count-th best key found: the round's count-th is not below it */
			GPU_TRY(select_keys(sel, t, result));
			selected = sel->counts[0];
			band.key_floor = UINT64_MAX;
			for (size_t i = 0; i < result->count; i++)
				band.key_floor = std::min(band.key_floor, result->items[i].key);
			band.floor_reached = sel->q.exact;
			have_floor = true;
		}
		if (band.end >= nblocks)
			break;
		if (!have_floor)
		{
			band.first = band.end;
			size *= BAND_GROWTH;
			continue;
		}
		/* the pages that may still hold a key the round takes: none, or the next band */
		pages_reaching_kernel<<<1, 1, 0, cudaStreamPerThread>>>(
			band.bounds, nblocks, band.key_floor, sel->q.exact, sel->s.reaching);
		GPU_CHECK(cudaGetLastError(), "Launching the page count");
		GPU_CHECK(cudaMemcpyAsync(&reaching, sel->s.reaching, sizeof(reaching),
								  cudaMemcpyDeviceToHost, cudaStreamPerThread),
				  "Copying a page count");
		GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Counting pages");
		if (reaching <= band.end)
			break;
		band.first = band.end;
		size = std::min<size_t>(size * BAND_GROWTH, reaching - band.end);
	}
	return selected == sel->counts[0] ? GPU_OK : select_keys(sel, t, result);
}

extern "C" GpuStatus
gpu_index_select(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
				 size_t nset_values, const uint64_t *tied, size_t ntied, GpuTopk *t,
				 TopkResult *result, GpuIndexCounts *counts, double *kernel_ms)
{
	auto		started = std::chrono::steady_clock::now();
	Selection	sel = {};

	sel.p = p;
	sel.key_width = key_width((KeyType) query->program.key_type);
	result->items = NULL;
	result->count = 0;
	GPU_TRY(selection_begin(&sel, query, set_values, nset_values, tied, ntied));
	/* a vector key's pages have no bounds: every page is read */
	if (sel.q.summary_offset != 0 && sel.q.nblocks > 1 && !sel.q.program.key_is_vector)
		GPU_TRY(select_by_bounds(&sel, t, result));
	else
	{
		Band		every_page = {};

		every_page.end = sel.q.nblocks > 1 ? sel.q.nblocks - 1 : 0;
		GPU_TRY(read_band(&sel, every_page));
		GPU_TRY(select_keys(&sel, t, result));
	}
	counts->scanned = sel.counts[1];
	counts->exact = sel.q.exact;
	counts->pages_skipped = sel.counts[3] > sel.counts[2] ? sel.counts[3] - sel.counts[2] : 0;
	if (result->count > 0)
	{
		Scratch    *s = &sel.s;
		size_t		bytes = result->count * sizeof(TopkItem);

		GPU_TRY(scratch_part(PART_ITEMS, &s->items, bytes));
		GPU_CHECK(cudaMemcpyAsync(s->items, result->items, bytes, cudaMemcpyHostToDevice,
								  cudaStreamPerThread), "Copying the candidates");
		positions_kernel<<<(result->count + 255) / 256, 256, 0, cudaStreamPerThread>>>(
			s->items, result->count, s->ordinals, query->capacity, query->slot_bits);
		GPU_CHECK(cudaGetLastError(), "Launching the positions kernel");
		GPU_CHECK(cudaMemcpyAsync(result->items, s->items, bytes, cudaMemcpyDeviceToHost,
								  cudaStreamPerThread), "Copying the candidates");
		GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Finding the candidates");
	}
	*kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
														   started).count();
	return GPU_OK;
}
