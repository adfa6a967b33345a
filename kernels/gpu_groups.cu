/*
 * gpu_groups.cu
 *	  GpuTopKGroups's table of groups in device memory (gpu_groups.h): made
 *	  and grown, other groups' records merged in, and the best groups
 *	  chosen and copied out as records.
 *
 * Choosing: each group's ranking value becomes a 64-bit key, larger for
 * better (keys.h); the non-NULL keys are sorted (CUB's radix sort) to find
 * the last one kept, and every group at least as good as that one comes
 * out, with the NULL groups where the order puts them among the kept.
 */
#include <algorithm>

#include <cub/device/device_radix_sort.cuh>

#include "gpu_error.h"
#include "gpu_groups.cuh"
#include "gpu_resources.cuh"

#define GROUPS_THREADS 256
/* the fewest slots a table has */
#define GROUPS_MIN_SLOTS (1u << 16)
/* the records a merge copies to the device at a time */
#define MERGE_CHUNK_RECORDS 65536

struct GpuGroups
{
	GpuGroupsSpec spec;
	GpuGroupsSpec *device_spec;
	char	   *slots;
	uint64_t	nslots;
	size_t		stride;
	unsigned long long *counts; /* groups; then, when choosing: keys, NULLs, records */
	unsigned long long *host_counts;
	char	   *staging;		/* records merged, MERGE_CHUNK_RECORDS of them */
	uint64_t   *keys;			/* the non-NULL groups' keys, and sorted */
	uint64_t   *sorted;
	void	   *sort_temp;
	size_t		sort_temp_bytes;
	char	   *chosen;			/* the groups chosen, on the device */
	char	   *host_chosen;	/* and in pinned host memory */
	size_t		chosen_cap;
	int			multiprocessors;
	Span		choice;			/* around choosing */
};

GroupsView
gpu_groups_view(GpuGroups *g)
{
	GroupsView	v = {g->device_spec, g->slots, g->nslots - 1, g->stride, g->counts};

	return v;
}

/* A grid for n items: enough blocks to fill the device, no more than n needs. */
static int
grid_for(const GpuGroups *g, uint64_t n)
{
	uint64_t	blocks = (n + GROUPS_THREADS - 1) / GROUPS_THREADS;

	return (int) std::max<uint64_t>(1, std::min<uint64_t>(blocks, (uint64_t) g->multiprocessors * 8));
}

/* Every made slot of from into the table v (whose slots are new). */
__global__ void
rehash_kernel(const char *from, uint64_t nslots, GroupsView v)
{
	int			cell_bytes = v.spec->cell_bytes;

	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < nslots;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		const char *slot = from + i * v.stride;
		char	   *to;
		bool		made;

		if (slot_state(slot) != GROUP_SLOT_MADE)
			continue;
		to = groups_find(v, *(const uint64_t *) slot, *(const uint64_t *) (slot + 8),
						 *(const uint32_t *) (slot + 16), &made);
		atomicAdd(v.ngroups, 1ULL);
		memcpy(to + GPU_GROUPS_HEADER_BYTES, slot + GPU_GROUPS_HEADER_BYTES, cell_bytes);
	}
}

/* n records' groups found or made, and their cells added. */
__global__ void
merge_kernel(const char *records, size_t n, GroupsView v)
{
	const GpuGroupsSpec *spec = v.spec;

	for (size_t r = blockIdx.x * (size_t) blockDim.x + threadIdx.x; r < n;
		 r += (size_t) gridDim.x * blockDim.x)
	{
		const char *record = records + r * v.stride;
		bool		made;
		char	   *cells = groups_find(v, *(const uint64_t *) record,
										*(const uint64_t *) (record + 8),
										*(const uint32_t *) (record + 16), &made) +
			GPU_GROUPS_HEADER_BYTES;

		if (made)
			atomicAdd(v.ngroups, 1ULL);
		for (int i = 0; i < spec->naggs; i++)
			groups_combine_cell(spec->aggs[i], cells + spec->aggs[i].offset,
								record + GPU_GROUPS_HEADER_BYTES + spec->aggs[i].offset);
	}
}

/* A made slot's ranking key (larger for better); false where its ranking value is NULL. */
static __device__ bool
rank_key(const GpuGroupsSpec *spec, const char *slot, uint64_t *key)
{
	int64_t		value;

	if (spec->rank < 0)
	{
		int			c = -1 - spec->rank;

		if (*(const uint32_t *) (slot + 16) & (1u << c))
			return false;
		value = *(const int64_t *) (slot + 8 * c);
	}
	else
	{
		const GpuGroupsAgg &agg = spec->aggs[spec->rank];
		const char *cell = slot + GPU_GROUPS_HEADER_BYTES + agg.offset;

		switch (agg.kind)
		{
			case GPU_GROUPS_COUNT_STAR:
			case GPU_GROUPS_COUNT:
				value = *(const int64_t *) cell;
				break;
			case GPU_GROUPS_SUM:
				if (*(const int64_t *) (cell + 8) == 0)
					return false;
				value = *(const int64_t *) cell;
				break;
			default:
				/* min and max (the host ranks by no 128-bit sum) */
				if (*(const int64_t *) (cell + 16) == 0)
					return false;
				value = *(const int64_t *) (cell + 8);
				break;
		}
	}
	*key = key_from_int64(value, spec->desc);
	return true;
}

/* The non-NULL groups' keys into keys (counts[1] of them); counts[2] the NULL groups. */
__global__ void
keys_kernel(const char *slots, uint64_t nslots, size_t stride, const GpuGroupsSpec *spec,
			uint64_t *keys, unsigned long long *counts)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < nslots;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		const char *slot = slots + i * stride;
		uint64_t	key;

		if (slot_state(slot) != GROUP_SLOT_MADE)
			continue;
		if (rank_key(spec, slot, &key))
			keys[atomicAdd(&counts[1], 1ULL)] = key;
		else
			atomicAdd(&counts[2], 1ULL);
	}
}

/*
 * The groups kept, as records, into out (counts[3] of them; only counted
 * where out is NULL): the NULL
 * groups if nulls, and the others whose key is at least threshold if
 * others.  A min's or max's key is set from its value, as the host's is.
 */
__global__ void
chosen_kernel(const char *slots, uint64_t nslots, size_t stride, const GpuGroupsSpec *spec,
			  bool nulls, bool others, uint64_t threshold, char *out,
			  unsigned long long *counts)
{
	for (uint64_t i = blockIdx.x * (uint64_t) blockDim.x + threadIdx.x; i < nslots;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		const char *slot = slots + i * stride;
		uint64_t	key;
		bool		has_key;
		char	   *record;

		if (slot_state(slot) != GROUP_SLOT_MADE)
			continue;
		has_key = rank_key(spec, slot, &key);
		if (has_key ? !(others && key >= threshold) : !nulls)
			continue;
		if (out == NULL)
		{
			atomicAdd(&counts[3], 1ULL);
			continue;
		}
		record = out + atomicAdd(&counts[3], 1ULL) * stride;
		memcpy(record, slot, stride);
		/* the NULL flags alone: the slot's state is not the record's */
		*(uint32_t *) (record + 20) = 0;
		for (int a = 0; a < spec->naggs; a++)
		{
			const GpuGroupsAgg &agg = spec->aggs[a];
			char	   *cell = record + GPU_GROUPS_HEADER_BYTES + agg.offset;

			if ((agg.kind == GPU_GROUPS_MIN || agg.kind == GPU_GROUPS_MAX) &&
				*(const int64_t *) (cell + 16) != 0)
				*(uint64_t *) cell = key_of_stored((KeyType) agg.key_type, cell + 8, true);
		}
	}
}

/* Slots for twice this many groups, a power of two. */
static uint64_t
slots_for(uint64_t groups)
{
	uint64_t	n = GROUPS_MIN_SLOTS;

	while (n < 2 * groups)
		n *= 2;
	return n;
}

/* New, empty slots: n of them. */
static GpuStatus
alloc_slots(GpuGroups *g, uint64_t n, char **slots)
{
	*slots = NULL;
	GPU_CHECK(cudaMalloc(slots, n * g->stride), "Allocating device memory for groups");
	GPU_CHECK(cudaMemsetAsync(*slots, 0, n * g->stride, cudaStreamPerThread),
			  "Clearing device memory for groups");
	return GPU_OK;
}

static GpuStatus
groups_init(GpuGroups *g, uint64_t expected)
{
	int			device;

	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetAttribute(&g->multiprocessors, cudaDevAttrMultiProcessorCount, device),
			  "Finding the device's multiprocessors");
	GPU_CHECK(cudaMalloc(&g->device_spec, sizeof(GpuGroupsSpec)), "Allocating device memory");
	GPU_CHECK(cudaMemcpyAsync(g->device_spec, &g->spec, sizeof(GpuGroupsSpec),
							  cudaMemcpyHostToDevice, cudaStreamPerThread),
			  "Copying a groups query");
	GPU_CHECK(cudaMalloc(&g->counts, 4 * sizeof(unsigned long long)), "Allocating device memory");
	GPU_CHECK(cudaMemsetAsync(g->counts, 0, 4 * sizeof(unsigned long long), cudaStreamPerThread),
			  "Clearing device memory");
	GPU_CHECK(cudaMallocHost(&g->host_counts, 4 * sizeof(unsigned long long)),
			  "Allocating pinned host memory");
	GPU_TRY(span_create(&g->choice));
	g->nslots = slots_for(std::min<uint64_t>(expected, UINT64_C(1) << 26));
	GPU_TRY(alloc_slots(g, g->nslots, &g->slots));
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Making a table of groups");
	return GPU_OK;
}

extern "C" GpuStatus
gpu_groups_create(const GpuGroupsSpec *spec, uint64_t expected, GpuGroups **out)
{
	return object_create("Allocating a table of groups", [&](GpuGroups *g) {
		g->spec = *spec;
		g->stride = GPU_GROUPS_HEADER_BYTES + (size_t) spec->cell_bytes;
		return groups_init(g, expected);
	}, gpu_groups_destroy, out);
}

extern "C" void
gpu_groups_destroy(GpuGroups *g)
{
	if (g == NULL)
		return;
	stream_drain(cudaStreamPerThread);
	cudaFree(g->device_spec);
	cudaFree(g->slots);
	cudaFree(g->counts);
	pinned_free(g->host_counts);
	cudaFree(g->staging);
	cudaFree(g->keys);
	cudaFree(g->sorted);
	cudaFree(g->sort_temp);
	cudaFree(g->chosen);
	pinned_free(g->host_chosen);
	span_destroy(&g->choice);
	delete g;
}

/* The table's groups now, waiting for its work. */
static GpuStatus
count_groups(GpuGroups *g, uint64_t *groups)
{
	*groups = 0;
	GPU_CHECK(cudaMemcpyAsync(g->host_counts, g->counts, sizeof(unsigned long long),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Counting groups");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Counting groups");
	*groups = g->host_counts[0];
	return GPU_OK;
}

extern "C" GpuStatus
gpu_groups_reserve(GpuGroups *g, uint64_t rows)
{
	uint64_t	groups;
	uint64_t	nslots;
	char	   *slots;
	GpuStatus	status;
	GroupsView	v;

	GPU_TRY(count_groups(g, &groups));
	if (2 * (groups + rows) <= g->nslots)
		return GPU_OK;
	nslots = slots_for(groups + rows);
	status = alloc_slots(g, nslots, &slots);
	if (status != GPU_OK)
	{
		cudaFree(slots);
		return status;
	}
	/* the groups counted again as they are made in the new slots */
	GPU_CHECK(cudaMemsetAsync(g->counts, 0, sizeof(unsigned long long), cudaStreamPerThread),
			  "Clearing a count");
	v = gpu_groups_view(g);
	v.slots = slots;
	v.mask = nslots - 1;
	rehash_kernel<<<grid_for(g, g->nslots), GROUPS_THREADS, 0, cudaStreamPerThread>>>(
		g->slots, g->nslots, v);
	GPU_CHECK(cudaGetLastError(), "Launching the groups' rehash");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Growing a table of groups");
	cudaFree(g->slots);
	g->slots = slots;
	g->nslots = nslots;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_groups_merge(GpuGroups *g, const char *records, size_t n)
{
	if (g->staging == NULL)
		GPU_CHECK(cudaMalloc(&g->staging, MERGE_CHUNK_RECORDS * g->stride),
				  "Allocating device memory for groups");
	for (size_t done = 0; done < n; done += MERGE_CHUNK_RECORDS)
	{
		size_t		chunk = std::min<size_t>(n - done, MERGE_CHUNK_RECORDS);

		GPU_TRY(gpu_groups_reserve(g, chunk));
		GPU_CHECK(cudaMemcpyAsync(g->staging, records + done * g->stride, chunk * g->stride,
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying groups to the device");
		merge_kernel<<<grid_for(g, chunk), GROUPS_THREADS, 0, cudaStreamPerThread>>>(
			g->staging, chunk, gpu_groups_view(g));
		GPU_CHECK(cudaGetLastError(), "Launching the groups' merge");
	}
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Merging groups");
	return GPU_OK;
}

/* Device memory for the keys of n groups and their sort. */
static GpuStatus
ensure_sort(GpuGroups *g, uint64_t n)
{
	size_t		temp = 0;

	cudaFree(g->keys);
	cudaFree(g->sorted);
	cudaFree(g->sort_temp);
	g->keys = g->sorted = NULL;
	g->sort_temp = NULL;
	GPU_CHECK(cub::DeviceRadixSort::SortKeysDescending(NULL, temp, g->keys, g->sorted, (int) n,
													   0, 64, cudaStreamPerThread),
			  "Sizing a sort of groups");
	GPU_CHECK(cudaMalloc(&g->keys, std::max<uint64_t>(n, 1) * sizeof(uint64_t)),
			  "Allocating device memory for groups");
	GPU_CHECK(cudaMalloc(&g->sorted, std::max<uint64_t>(n, 1) * sizeof(uint64_t)),
			  "Allocating device memory for groups");
	GPU_CHECK(cudaMalloc(&g->sort_temp, std::max<size_t>(temp, 1)), "Allocating device memory");
	g->sort_temp_bytes = temp;
	return GPU_OK;
}

/*
 * The key of the last non-NULL group kept, where need of the nonnull
 * groups are (0 < need < nonnull): the need-th largest key.
 */
static GpuStatus
last_key(GpuGroups *g, uint64_t nonnull, uint64_t need, uint64_t *threshold)
{
	size_t		temp = g->sort_temp_bytes;

	GPU_CHECK(cub::DeviceRadixSort::SortKeysDescending(g->sort_temp, temp, g->keys, g->sorted,
													   (int) nonnull, 0, 64,
													   cudaStreamPerThread),
			  "Sorting groups");
	GPU_CHECK(cudaMemcpyAsync(threshold, g->sorted + need - 1, sizeof(uint64_t),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying a key");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Sorting groups");
	return GPU_OK;
}

/* The chosen groups' records (out NULL: only their count) by chosen_kernel; their count. */
static GpuStatus
run_chosen(GpuGroups *g, bool nulls, bool others, uint64_t threshold, char *out,
		   uint64_t *count)
{
	GPU_CHECK(cudaMemsetAsync(g->counts + 3, 0, sizeof(unsigned long long), cudaStreamPerThread),
			  "Clearing a count");
	chosen_kernel<<<grid_for(g, g->nslots), GROUPS_THREADS, 0, cudaStreamPerThread>>>(
		g->slots, g->nslots, g->stride, g->device_spec, nulls, others, threshold, out,
		g->counts);
	GPU_CHECK(cudaGetLastError(), "Launching the groups' choice");
	GPU_CHECK(cudaMemcpyAsync(g->host_counts, g->counts, 4 * sizeof(unsigned long long),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Counting groups");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Choosing groups");
	*count = g->host_counts[3];
	return GPU_OK;
}

/* The chosen groups counted, then their records copied into pinned host memory. */
static GpuStatus
copy_chosen(GpuGroups *g, bool nulls, bool others, uint64_t threshold, size_t *count)
{
	uint64_t	n = 0;

	GPU_TRY(run_chosen(g, nulls, others, threshold, NULL, &n));
	if (n > g->chosen_cap)
	{
		cudaFree(g->chosen);
		cudaFreeHost(g->host_chosen);
		g->chosen = g->host_chosen = NULL;
		g->chosen_cap = 0;
		GPU_CHECK(cudaMalloc(&g->chosen, n * g->stride), "Allocating device memory for groups");
		GPU_CHECK(cudaMallocHost(&g->host_chosen, n * g->stride),
				  "Allocating pinned host memory for groups");
		g->chosen_cap = n;
	}
	if (n > 0)
		GPU_TRY(run_chosen(g, nulls, others, threshold, g->chosen, &n));
	GPU_CHECK(cudaMemcpyAsync(g->host_chosen, g->chosen, n * g->stride,
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying groups from the device");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Copying groups from the device");
	*count = n;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_groups_choose(GpuGroups *g, const char **records, size_t *count, uint64_t *groups,
				  double *kernel_ms)
{
	uint64_t	keep = g->spec.keep;
	uint64_t	nonnull;
	uint64_t	nnull;
	uint64_t	need;
	uint64_t	threshold = 0;
	bool		nulls;

	*records = NULL;
	*count = 0;
	GPU_TRY(count_groups(g, groups));
	GPU_TRY(ensure_sort(g, *groups));
	GPU_CHECK(cudaEventRecord(g->choice.begun, cudaStreamPerThread), "Recording an event");
	GPU_CHECK(cudaMemsetAsync(g->counts + 1, 0, 3 * sizeof(unsigned long long),
							  cudaStreamPerThread), "Clearing counts");
	keys_kernel<<<grid_for(g, g->nslots), GROUPS_THREADS, 0, cudaStreamPerThread>>>(
		g->slots, g->nslots, g->stride, g->device_spec, g->keys, g->counts);
	GPU_CHECK(cudaGetLastError(), "Launching the groups' keys");
	GPU_CHECK(cudaMemcpyAsync(g->host_counts, g->counts, 4 * sizeof(unsigned long long),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Counting groups");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Keying groups");
	nonnull = g->host_counts[1];
	nnull = g->host_counts[2];
	if (keep == 0)
		return GPU_OK;
	/* NULL groups tie with each other: all or none of them are kept */
	if (g->spec.nulls_first)
	{
		nulls = nnull > 0;
		need = nnull >= keep ? 0 : keep - nnull;
	}
	else
	{
		need = keep;
		nulls = nnull > 0 && nonnull < keep;
	}
	if (need > 0 && need < nonnull)
		GPU_TRY(last_key(g, nonnull, need, &threshold));
	GPU_TRY(copy_chosen(g, nulls, need > 0, threshold, count));
	GPU_CHECK(cudaEventRecord(g->choice.ended, cudaStreamPerThread), "Recording an event");
	GPU_CHECK(cudaEventSynchronize(g->choice.ended), "Choosing groups");
	GPU_TRY(span_add_ms(&g->choice, kernel_ms));
	*records = g->host_chosen;
	return GPU_OK;
}
