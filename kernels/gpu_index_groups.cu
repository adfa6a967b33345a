/*
 * gpu_index_groups.cu
 *	  GpuTopKGroups over a column index's copy in device memory: the
 *	  entries whose table rows are known visible, filtered and added to a
 *	  table of groups (see gpu_index.h).
 *
 * A thread block reads one data page at a time, a thread per slot.  An
 * entry in use, not marked dead, whose TID's block is set in the vouched
 * bitmap and that passes the compiled filter goes to its group
 * (gpu_groups.cuh), a warp's entries of one group summed first.  A page
 * whose summary shows that no entry passes the filter is not read.  The
 * pages go in chunks of about GROUP_CHUNK_ENTRIES slots, the table grown
 * before each for every slot of the chunk as a new group, so that no
 * insert finds it full.
 *
 * Work runs on the calling thread's per-thread stream; the pages must not
 * be stored meanwhile (the caller's lock).
 */
#include <chrono>

#include "gpu_groups.cuh"
#include "gpu_index.cuh"

#define GROUP_ENTRY_THREADS 256

/* the slots of a chunk of pages, for which the table is grown first */
#define GROUP_CHUNK_ENTRIES ((uint64_t) 1 << 22)

/* The table block of a slot's TID (an ItemPointerData: block high, low, offset). */
static __device__ __forceinline__ uint32_t
tid_block(const char *page, int tid_offset, int slot)
{
	const uint16_t *tid = (const uint16_t *) (page + tid_offset + (size_t) slot * 6);

	return ((uint32_t) tid[0] << 16) | tid[1];
}

/*
 * The entries of blocks first to end - 1 into the groups; counts[0] gets
 * the entries grouped, counts[1] those vouched for, counts[2] the pages
 * skipped by their summaries.
 */
__global__ void
__launch_bounds__(GROUP_ENTRY_THREADS)
group_entries_kernel(const char *pages, const GpuIndexQuery *q, uint32_t first, uint32_t end,
					 const uint64_t *vouched, uint32_t heap_blocks, GroupsView groups,
					 unsigned long long *counts)
{
	ProgramState state;
	unsigned long long scanned = 0;
	unsigned long long skipped = 0;

	state.init(&q->program);
	for (uint32_t block = first + blockIdx.x; block < end; block += gridDim.x)
	{
		const char *page = pages + (size_t) block * q->page_size;
		uint64_t	bound;
		int			high;

		if (*(const uint16_t *) (page + q->kind_offset) != q->data_kind)
			continue;
		if (q->summary_offset != 0 && q->program.nsteps > 0 &&
			!program_page_bound(&q->program, page + q->summary_offset, &bound))
		{
			skipped++;
			continue;
		}
		high = *(const uint16_t *) (page + q->high_offset);
		/* every thread of the block goes round as often: the warps call groups_add_row whole */
		for (int from = 0; from < high; from += GROUP_ENTRY_THREADS)
		{
			int			slot = from + threadIdx.x;
			IndexEntry	entry = {page, slot};
			bool		pass = false;
			uint32_t	heap_block;
			bool		made;

			if (slot < high && bit_set(page, q->live_offset, slot) &&
				!(q->skip_killed && bit_set(page, q->killed_offset, slot)))
			{
				heap_block = tid_block(page, q->tid_offset, slot);
				if (heap_block < heap_blocks && ((vouched[heap_block >> 6] >> (heap_block & 63)) & 1))
				{
					scanned++;
					pass = program_row_passes(&q->program, entry, &state);
				}
			}
			made = groups_add_row(groups, pass ? &entry : (const IndexEntry *) NULL);
			groups_count_rows(groups, pass, made, &counts[0]);
		}
	}
	scanned = __reduce_add_sync(0xFFFFFFFFu, (unsigned int) scanned);
	if ((threadIdx.x & 31) == 0 && scanned > 0)
		atomicAdd(&counts[1], scanned);
	if (threadIdx.x == 0 && skipped > 0)
		atomicAdd(&counts[2], skipped);
}

extern "C" GpuStatus
gpu_index_group(GpuIndexPages *p, const GpuIndexQuery *query, const uint64_t *set_values,
				size_t nset_values, const uint64_t *vouched, uint32_t heap_blocks, GpuGroups *g,
				GpuIndexCounts *counts, uint64_t *passed, double *kernel_ms)
{
	auto		started = std::chrono::steady_clock::now();
	Scratch		s = {};
	GpuIndexQuery q = *query;
	size_t		words = ((size_t) heap_blocks + 63) / 64;
	uint32_t	chunk_pages = (uint32_t) std::max<uint64_t>(1, GROUP_CHUNK_ENTRIES / q.capacity);
	unsigned long long host_counts[3] = {0, 0, 0};
	int			grid = 1;

	q.nblocks = std::min(q.nblocks, p->nblocks);
	GPU_TRY(resident_grid(group_entries_kernel, GROUP_ENTRY_THREADS, &grid));
	GPU_TRY(scratch_part(PART_QUERY, &s.query, sizeof(GpuIndexQuery)));
	GPU_TRY(scratch_part(PART_VALUES, &s.values, (nset_values + words) * sizeof(uint64_t)));
	GPU_TRY(scratch_part(PART_COUNTS, &s.counts, sizeof(host_counts)));
	program_place_sets(&q.program, s.values);
	GPU_CHECK(cudaMemcpyAsync(s.query, &q, sizeof(q), cudaMemcpyHostToDevice, cudaStreamPerThread),
			  "Copying a grouping's query");
	if (nset_values > 0)
		GPU_CHECK(cudaMemcpyAsync(s.values, set_values, nset_values * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a grouping's query");
	if (words > 0)
		GPU_CHECK(cudaMemcpyAsync(s.values + nset_values, vouched, words * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying the vouched blocks");
	GPU_CHECK(cudaMemsetAsync(s.counts, 0, sizeof(host_counts), cudaStreamPerThread),
			  "Clearing a grouping's counts");
	for (uint32_t first = 1; first < q.nblocks; first += chunk_pages)
	{
		uint32_t	end = std::min(q.nblocks, first + chunk_pages);

		GPU_TRY(gpu_groups_reserve(g, (uint64_t) (end - first) * q.capacity));
		group_entries_kernel<<<std::min<uint32_t>(grid, end - first), GROUP_ENTRY_THREADS, 0,
			cudaStreamPerThread>>>(p->pages, s.query, first, end, s.values + nset_values,
								   heap_blocks, gpu_groups_view(g), s.counts);
		GPU_CHECK(cudaGetLastError(), "Launching the entries' grouping");
	}
	GPU_CHECK(cudaMemcpyAsync(host_counts, s.counts, sizeof(host_counts), cudaMemcpyDeviceToHost,
							  cudaStreamPerThread), "Copying a grouping's counts");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Grouping index entries");
	*passed = host_counts[0];
	counts->scanned = host_counts[1];
	counts->pages_skipped = host_counts[2];
	counts->exact = true;
	*kernel_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
														   started).count();
	return GPU_OK;
}
