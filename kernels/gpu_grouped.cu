/*
 * gpu_grouped.cu
 *	  The GPU's grouped top-k: for every group of rows, its k best rows and
 *	  the rows tied with the k-th, for GROUP BY queries.
 *
 * A push copies its rows (GroupedKey and payload words, from the caller's
 * page-locked buffers) on the object's one stream, after the rows the
 * device holds, and records an event after the copies: wait_input waits
 * for that event only.  The device holds the candidates (what the last
 * compaction kept) followed by the rows pushed since, in one of two pairs
 * of arrays (keys and payloads); the other pair is the second half of the
 * sort's double buffer and receives the next candidates.
 *
 * A compaction sorts every row held by (group, key) descending with CUB's
 * radix sort (a decomposer makes the two words one 128-bit key) and keeps,
 * in each group, the rows ranked below k and those tied with the k-th.
 * One max scan finds it for every row at once: the first row of each run of
 * equal rows (same group, same key) contributes its index and whether it
 * ranks below k (the row k places before it is in another group, or there
 * is none), so each row learns from the start of its run whether it is
 * kept: a row ranked below k or tied with the k-th is exactly one whose run
 * starts below rank k.  The scan writes a byte a row, and two selections
 * move the kept keys and payloads, still sorted, into the other pair.
 *
 * Compactions are lazy so that the work stays linear in the rows pushed:
 * one runs when the rows pushed since the last reach the number it kept (a
 * floor of 8 batches, within 64Ki and 8Mi rows, keeps small answers from
 * compacting often), and one at the result; each sorts no more than twice
 * the rows pushed since the one before, and a batch.  A compaction's count
 * of rows kept comes back to page-locked memory behind an event; the next
 * push or the result waits for that event to know where rows go (the
 * caller filling its next batch meanwhile mostly gives it the time), and
 * that push's copies follow the compaction on the stream.  Device arrays
 * double when they must grow and are kept across runs, as is CUB's
 * temporary storage.
 *
 * Copies and compactions are timed with events and summed per run: a
 * push's events are read back when their slot comes round again (a ring of
 * COPY_SLOTS, so never a wait in practice) or at the result, a
 * compaction's when its count is waited for.  The result is copied into
 * page-locked memory owned by the object.
 */
#include <stdlib.h>

#include <algorithm>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/functional>
#include <cuda/std/tuple>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include "gpu_error.h"
#include "gpu_grouped.h"
#include "gpu_resources.cuh"

/* pushes whose copy events may be outstanding at once */
#define COPY_SLOTS 8
/* pending rows that always allow a compaction: 8 batches, within these */
#define FLOOR_BATCHES 8
#define MIN_FLOOR_ROWS ((size_t) 1 << 16)
#define MAX_FLOOR_ROWS ((size_t) 1 << 23)
/* rows held at once: CUB's 32-bit offsets (far beyond any device's memory) */
#define MAX_HELD_ROWS ((size_t) UINT32_MAX)

struct GpuGroupedTopk
{
	uint64_t	k;
	size_t		batch_cap;
	size_t		floor_rows;		/* pending rows that allow a compaction */
	cudaStream_t stream;

	/*
	 * rows on the device: the candidates, then the pending rows, in
	 * keys[cur] and payloads[cur]; cap rows fit in each of the four arrays
	 * and in flags (a byte a row: kept by the compaction)
	 */
	DevBuf		keys[2];
	DevBuf		payloads[2];
	DevBuf		flags;
	DevBuf		temp;			/* CUB's */
	int			cur;
	size_t		cap;
	size_t		cand;			/* rows the last compaction kept, once counted */
	size_t		pending;		/* rows pushed since */
	bool		counting;		/* the last compaction's count is on its way */
	uint64_t   *d_count;		/* the rows a compaction kept, on the device */
	uint64_t   *h_count;		/* and in page-locked memory */

	/* the run */
	bool		running;		/* rows were pushed since create, reset or the result */
	Span		copy[COPY_SLOTS];	/* a push's copies */
	bool		slot_busy[COPY_SLOTS];	/* its span not yet read */
	int			next_slot;
	int			last_slot;		/* the last push's, or -1 */
	Span		compaction;		/* the last one, up to its count's copy */
	double		run_copy_ms;
	double		run_kernel_ms;
	double		copy_ms;		/* the last run's, once its result is back */
	double		kernel_ms;

	/* the result, in page-locked memory */
	GroupedKey *host_keys;
	uint64_t   *host_payloads;
	size_t		host_cap;
};

/* ------------------------------------------------------------ compaction */

/* CUB's view of a row: the group, then the key (most significant first) */
struct RowDecomposer
{
	__host__ __device__ ::cuda::std::tuple<uint64_t &, uint64_t &>
	operator()(GroupedKey &row) const
	{
		return {row.group, row.key};
	}
};

/*
 * The scan's input at row i of the sorted rows: at the first row of a run
 * of equal rows, 2i + 1 if it ranks below k in its group, 2i if not; 0
 * elsewhere.  The maximum up to row i is its run start's value.
 */
struct RunStart
{
	const GroupedKey *rows;
	uint64_t	k;

	__host__ __device__ uint64_t
	operator()(uint64_t i) const
	{
		GroupedKey	row = rows[i];
		bool		below_k;

		if (i > 0 && rows[i - 1].group == row.group && rows[i - 1].key == row.key)
			return 0;
		below_k = i < k || rows[i - k].group != row.group;
		return (i << 1) | (below_k ? 1 : 0);
	}
};

/*
 * The scan's output at a row: whether its run starts below rank k (the low
 * bit, which a conversion to the output's byte would keep as well).
 */
struct KeptFlag
{
	__host__ __device__ uint8_t
	operator()(uint64_t run_start) const
	{
		return (uint8_t) (run_start & 1);
	}
};

/*
 * Enqueue the CUB calls of a compaction of n rows (n >= 1) from keys[cur],
 * with *temp_bytes of temporary storage at temp; or, with temp NULL, only
 * set *temp_bytes to the most that any of them needs.  Leaves in *out which
 * pair receives the candidates.
 */
static GpuStatus
compaction_calls(GpuGroupedTopk *t, size_t n, void *temp, size_t *temp_bytes, int *out)
{
	int			alt = 1 - t->cur;
	cub::DoubleBuffer<GroupedKey> keys((GroupedKey *) t->keys[t->cur].ptr,
									   (GroupedKey *) t->keys[alt].ptr);
	cub::DoubleBuffer<uint64_t> payloads((uint64_t *) t->payloads[t->cur].ptr,
										 (uint64_t *) t->payloads[alt].ptr);
	uint8_t    *flags = (uint8_t *) t->flags.ptr;
	size_t		bytes[3] = {0, 0, 0};
	bool		sizing = temp == NULL;

	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(temp, sizing ? bytes[0] : *temp_bytes,
														keys, payloads, (uint32_t) n,
														RowDecomposer(), t->stream),
			  "Sorting the rows of a grouped top-k");
	/* sorted into keys.Current(); the candidates go to the other pair */
	*out = keys.selector ? t->cur : alt;
	{
		auto		starts = thrust::make_transform_iterator(thrust::counting_iterator<uint64_t>(0),
															 RunStart{keys.Current(), t->k});
		auto		kept = thrust::make_transform_output_iterator(flags, KeptFlag());

		GPU_CHECK(cub::DeviceScan::InclusiveScan(temp, sizing ? bytes[1] : *temp_bytes,
												 starts, kept, ::cuda::maximum<uint64_t>(),
												 (uint32_t) n, t->stream),
				  "Ranking the rows of a grouped top-k");
	}
	GPU_CHECK(cub::DeviceSelect::Flagged(temp, sizing ? bytes[2] : *temp_bytes,
										 keys.Current(), flags,
										 (GroupedKey *) t->keys[*out].ptr, t->d_count,
										 (int64_t) n, t->stream),
			  "Selecting the rows of a grouped top-k");
	if (sizing)
	{
		size_t		payload_bytes = 0;

		/* the same selection over 8-byte items: sized on its own */
		GPU_CHECK(cub::DeviceSelect::Flagged(temp, payload_bytes, payloads.Current(), flags,
											 (uint64_t *) t->payloads[*out].ptr, t->d_count,
											 (int64_t) n, t->stream),
				  "Selecting the rows of a grouped top-k");
		*temp_bytes = std::max({bytes[0], bytes[1], bytes[2], payload_bytes});
		return GPU_OK;
	}
	GPU_CHECK(cub::DeviceSelect::Flagged(temp, *temp_bytes, payloads.Current(), flags,
										 (uint64_t *) t->payloads[*out].ptr, t->d_count,
										 (int64_t) n, t->stream),
			  "Selecting the rows of a grouped top-k");
	return GPU_OK;
}

/*
 * Compact the rows held to the candidates, asynchronously: the count of
 * rows kept arrives with the end of the span compaction (see await_count).
 */
static GpuStatus
compact(GpuGroupedTopk *t)
{
	size_t		n = t->cand + t->pending;
	size_t		temp_bytes = 0;
	int			out = t->cur;

	if (n == 0)
		return GPU_OK;
	GPU_TRY(compaction_calls(t, n, NULL, &temp_bytes, &out));
	/* the last compaction is over (its count was waited for): temp is free */
	GPU_TRY(devbuf_reserve(&t->temp, temp_bytes, temp_bytes / 4));
	temp_bytes = t->temp.bytes;
	GPU_CHECK(cudaEventRecord(t->compaction.begun, t->stream), "Recording an event");
	GPU_TRY(compaction_calls(t, n, t->temp.ptr, &temp_bytes, &out));
	GPU_CHECK(cudaMemcpyAsync(t->h_count, t->d_count, sizeof(uint64_t),
							  cudaMemcpyDeviceToHost, t->stream),
			  "Reading a count from the device");
	GPU_CHECK(cudaEventRecord(t->compaction.ended, t->stream), "Recording an event");
	t->cur = out;
	t->pending = 0;
	t->counting = true;
	return GPU_OK;
}

/* Wait for the last compaction's count of candidates, if it is on its way. */
static GpuStatus
await_count(GpuGroupedTopk *t)
{
	if (!t->counting)
		return GPU_OK;
	GPU_CHECK(cudaEventSynchronize(t->compaction.ended), "Compacting a grouped top-k");
	t->counting = false;
	t->cand = (size_t) *t->h_count;
	return span_add_ms(&t->compaction, &t->run_kernel_ms);
}

/* Add a push's copy time, waiting for its copies if they are not over. */
static GpuStatus
retire_slot(GpuGroupedTopk *t, int i)
{
	GPU_CHECK(cudaEventSynchronize(t->copy[i].ended), "Copying rows to the device");
	t->slot_busy[i] = false;
	return span_add_ms(&t->copy[i], &t->run_copy_ms);
}

/*
 * Make room for rows rows on the device, keeping the rows held (the count
 * of candidates is known).  Rare: the arrays double, so the waits for the
 * stream here do not count.
 */
static GpuStatus
make_room(GpuGroupedTopk *t, size_t rows)
{
	size_t		held = t->cand + t->pending;
	size_t		cap;
	int			alt = 1 - t->cur;

	if (rows <= t->cap)
		return GPU_OK;
	if (rows > MAX_HELD_ROWS)
		return gpu_fail(cudaErrorMemoryAllocation,
						"Holding the rows of a grouped top-k (at most 2^32 - 1)");
	cap = std::min(std::max({rows, 2 * t->cap, t->batch_cap}), MAX_HELD_ROWS);

	/* queued copies write the rows held, and compactions read every array */
	GPU_CHECK(cudaStreamSynchronize(t->stream), "Growing a grouped top-k");
	t->cap = 0;
	devbuf_free(&t->keys[alt]);
	devbuf_free(&t->payloads[alt]);
	GPU_TRY(devbuf_reserve(&t->keys[alt], cap * sizeof(GroupedKey), 0));
	GPU_TRY(devbuf_reserve(&t->payloads[alt], cap * sizeof(uint64_t), 0));
	if (held > 0)
	{
		GPU_CHECK(cudaMemcpyAsync(t->keys[alt].ptr, t->keys[t->cur].ptr,
								  held * sizeof(GroupedKey), cudaMemcpyDeviceToDevice,
								  t->stream), "Growing a grouped top-k");
		GPU_CHECK(cudaMemcpyAsync(t->payloads[alt].ptr, t->payloads[t->cur].ptr,
								  held * sizeof(uint64_t), cudaMemcpyDeviceToDevice,
								  t->stream), "Growing a grouped top-k");
		GPU_CHECK(cudaStreamSynchronize(t->stream), "Growing a grouped top-k");
	}
	devbuf_free(&t->keys[t->cur]);
	devbuf_free(&t->payloads[t->cur]);
	t->cur = alt;
	GPU_TRY(devbuf_reserve(&t->keys[1 - alt], cap * sizeof(GroupedKey), 0));
	GPU_TRY(devbuf_reserve(&t->payloads[1 - alt], cap * sizeof(uint64_t), 0));
	GPU_TRY(devbuf_reserve(&t->flags, cap, 0));
	t->cap = cap;
	return GPU_OK;
}

/* Page-locked memory for a result of n rows. */
static GpuStatus
host_room(GpuGroupedTopk *t, size_t n)
{
	size_t		cap = std::max(n, 2 * t->host_cap);
	void	   *keys = NULL;
	void	   *payloads = NULL;

	if (n <= t->host_cap)
		return GPU_OK;
	pinned_free(t->host_keys);
	pinned_free(t->host_payloads);
	t->host_keys = NULL;
	t->host_payloads = NULL;
	t->host_cap = 0;
	GPU_CHECK(cudaMallocHost(&keys, cap * sizeof(GroupedKey)),
			  "Allocating page-locked memory for a grouped top-k");
	t->host_keys = (GroupedKey *) keys;
	GPU_CHECK(cudaMallocHost(&payloads, cap * sizeof(uint64_t)),
			  "Allocating page-locked memory for a grouped top-k");
	t->host_payloads = (uint64_t *) payloads;
	t->host_cap = cap;
	return GPU_OK;
}

/* ---------------------------------------------------------------- C API */

static GpuStatus
setup(GpuGroupedTopk *t)
{
	GPU_CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaMalloc((void **) &t->d_count, sizeof(uint64_t)), "Allocating device memory");
	GPU_CHECK(cudaMallocHost((void **) &t->h_count, sizeof(uint64_t)),
			  "Allocating page-locked memory");
	for (int i = 0; i < COPY_SLOTS; i++)
		GPU_TRY(span_create(&t->copy[i]));
	return span_create(&t->compaction);
}

extern "C" GpuStatus
gpu_grouped_create(uint64_t k, size_t batch_cap, GpuGroupedTopk **out)
{
	*out = NULL;
	if (k == 0 || batch_cap == 0)
		return gpu_fail(cudaErrorInvalidValue,
						"Creating a grouped top-k (k and the batch capacity must be at least 1)");
	return object_create("Allocating the grouped top-k state", [&](GpuGroupedTopk *t) {
		t->k = k;
		t->batch_cap = batch_cap;
		t->floor_rows = batch_cap > MAX_FLOOR_ROWS / FLOOR_BATCHES ? MAX_FLOOR_ROWS :
			std::max(FLOOR_BATCHES * batch_cap, MIN_FLOOR_ROWS);
		t->last_slot = -1;
		return setup(t);
	}, gpu_grouped_destroy, out);
}

/* Free the memory that runs grow (no queued work may use it). */
static void
free_run_memory(GpuGroupedTopk *t)
{
	for (int i = 0; i < 2; i++)
	{
		devbuf_free(&t->keys[i]);
		devbuf_free(&t->payloads[i]);
	}
	devbuf_free(&t->flags);
	devbuf_free(&t->temp);
	t->cap = 0;
	pinned_free(t->host_keys);
	pinned_free(t->host_payloads);
	t->host_keys = NULL;
	t->host_payloads = NULL;
	t->host_cap = 0;
}

extern "C" void
gpu_grouped_destroy(GpuGroupedTopk *t)
{
	if (t == NULL)
		return;
	/* queued copies may still read the caller's buffers */
	stream_drain(t->stream);
	free_run_memory(t);
	for (int i = 0; i < COPY_SLOTS; i++)
		span_destroy(&t->copy[i]);
	span_destroy(&t->compaction);
	if (t->d_count)
		cudaFree(t->d_count);
	pinned_free(t->h_count);
	stream_destroy(t->stream);
	delete t;
}

extern "C" GpuStatus
gpu_grouped_reset(GpuGroupedTopk *t, uint64_t k)
{
	if (k == 0)
		return gpu_fail(cudaErrorInvalidValue, "Resetting a grouped top-k (k must be at least 1)");
	/* queued work done, the caller's buffers are free; the rows held are dropped */
	GPU_CHECK(cudaStreamSynchronize(t->stream), "Waiting for a grouped top-k");
	t->running = false;
	t->counting = false;
	t->cand = 0;
	t->pending = 0;
	t->last_slot = -1;
	for (int i = 0; i < COPY_SLOTS; i++)
		t->slot_busy[i] = false;
	t->k = k;
	t->copy_ms = 0;
	t->kernel_ms = 0;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_grouped_push(GpuGroupedTopk *t, const GroupedKey *keys, const uint64_t *payloads, size_t n)
{
	int			i = t->next_slot;
	size_t		at;

	if (n == 0)
		return GPU_OK;
	if (n > t->batch_cap)
		return gpu_fail(cudaErrorInvalidValue,
						"Pushing rows to a grouped top-k (more than its batch capacity)");
	if (!t->running)
	{
		t->running = true;
		t->run_copy_ms = 0;
		t->run_kernel_ms = 0;
	}
	GPU_TRY(await_count(t));
	at = t->cand + t->pending;
	GPU_TRY(make_room(t, at + n));
	if (t->slot_busy[i])
		GPU_TRY(retire_slot(t, i));
	GPU_CHECK(cudaEventRecord(t->copy[i].begun, t->stream), "Recording an event");
	GPU_CHECK(cudaMemcpyAsync((GroupedKey *) t->keys[t->cur].ptr + at, keys,
							  n * sizeof(GroupedKey), cudaMemcpyHostToDevice, t->stream),
			  "Copying rows to the device");
	GPU_CHECK(cudaMemcpyAsync((uint64_t *) t->payloads[t->cur].ptr + at, payloads,
							  n * sizeof(uint64_t), cudaMemcpyHostToDevice, t->stream),
			  "Copying rows to the device");
	GPU_CHECK(cudaEventRecord(t->copy[i].ended, t->stream), "Recording an event");
	t->slot_busy[i] = true;
	t->last_slot = i;
	t->next_slot = (i + 1) % COPY_SLOTS;
	t->pending += n;
	if (t->pending >= std::max(t->cand, t->floor_rows))
		GPU_TRY(compact(t));
	return GPU_OK;
}

extern "C" GpuStatus
gpu_grouped_wait_input(GpuGroupedTopk *t)
{
	/* one stream: the last push's copies end after every earlier one's */
	if (t->last_slot >= 0)
		GPU_CHECK(cudaEventSynchronize(t->copy[t->last_slot].ended), "Copying rows to the device");
	return GPU_OK;
}

extern "C" GpuStatus
gpu_grouped_result(GpuGroupedTopk *t, const GroupedKey **keys, const uint64_t **payloads,
				   size_t *count)
{
	size_t		n = 0;

	*keys = NULL;
	*payloads = NULL;
	*count = 0;
	if (t->running)
	{
		GPU_TRY(await_count(t));
		if (t->pending > 0)
		{
			GPU_TRY(compact(t));
			GPU_TRY(await_count(t));
		}
		n = t->cand;
		GPU_TRY(host_room(t, n));
		if (n > 0)
		{
			GPU_CHECK(cudaMemcpyAsync(t->host_keys, t->keys[t->cur].ptr, n * sizeof(GroupedKey),
									  cudaMemcpyDeviceToHost, t->stream),
					  "Copying a grouped top-k to the host");
			GPU_CHECK(cudaMemcpyAsync(t->host_payloads, t->payloads[t->cur].ptr,
									  n * sizeof(uint64_t), cudaMemcpyDeviceToHost, t->stream),
					  "Copying a grouped top-k to the host");
		}
		GPU_CHECK(cudaStreamSynchronize(t->stream), "Copying a grouped top-k to the host");
		for (int i = 0; i < COPY_SLOTS; i++)
			if (t->slot_busy[i])
				GPU_TRY(retire_slot(t, i));
		t->running = false;
		t->cand = 0;
		t->pending = 0;
		t->last_slot = -1;
	}
	else
	{
		/* nothing pushed: an empty run */
		t->run_copy_ms = 0;
		t->run_kernel_ms = 0;
	}
	t->copy_ms = t->run_copy_ms;
	t->kernel_ms = t->run_kernel_ms;
	*keys = t->host_keys;
	*payloads = t->host_payloads;
	*count = n;
	return GPU_OK;
}

extern "C" void
gpu_grouped_times(const GpuGroupedTopk *t, double *copy_ms, double *kernel_ms)
{
	*copy_ms = t->copy_ms;
	*kernel_ms = t->kernel_ms;
}
