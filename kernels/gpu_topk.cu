/*
 * gpu_topk.cu
 *	  The GPU top-k backend: plans, device-resident and streamed runs, the
 *	  sorted answer, and the cost model that chooses plans.
 *
 * A plan is bitonic or radix top-k, optionally behind delegate filtering.
 * A device-resident run enqueues the whole plan on one stream and waits
 * once.  A streamed run copies batches of keys from host memory on a copy
 * stream into a few device slots while the compute stream appends the keys
 * that beat the running cut (the k-th key so far) to a candidate set; when
 * the set could overflow, a plan compacts it to the answer so far and
 * raises the cut.  The answer is sorted with CUB and copied to page-locked
 * host memory.  The cost model's parameters are measured on the device once
 * per process.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>

#include <cub/device/device_radix_sort.cuh>

#include "gpu_error.h"
#include "gpu_topk.h"
#include "keys.h"
#include "topk_device.cuh"

using namespace topk;

/* keys per streamed batch, batches in flight, and batches the set holds */
#define STREAM_BATCH_KEYS ((size_t) 1 << 23)
#define STREAM_SLOTS 3
#define SET_BATCHES 4
/* the subrange sizes the cost model considers for delegates */
#define MIN_LOG_SUBRANGE 7
#define MAX_LOG_SUBRANGE 14
/* calibration input: keys */
#define CALIBRATION_KEYS ((size_t) 1 << 26)

/* counts and cuts that kernels read and write, in device memory */
struct Scalars
{
	uint32_t	answer_count;
	uint32_t	set_count[2];
	uint32_t	sel_count;
	uint32_t	cand_count;
	uint32_t	exact_count;
	uint32_t	has_cut;		/* streaming: keys must beat cut */
	uint32_t	has_floor;		/* delegates: keys must reach floor */
	uint32_t	has_kth;		/* bitonic with ties: keys must reach kth */
	uint32_t	equal_taken;	/* delegates: keys equal to the floor kept */
	unsigned long long cut;		/* a 32-bit key lives in the low half */
	unsigned long long floor;
	unsigned long long kth;
};

/* a device buffer that only grows */
struct DevBuf
{
	void	   *ptr;
	size_t		bytes;
};

struct GpuTopk
{
	int			key_width;
	uint64_t	k;
	TopkMode	mode;
	GpuTopkAlgorithm algorithm; /* forced for streamed runs, or AUTO */
	GpuTopkPlan last_plan;		/* the plan of the last selection */
	Device		dev;
	cudaStream_t copy_stream;
	Scalars    *sc;
	DevBuf		arena;
	DevBuf		cand_keys;
	DevBuf		cand_refs;
	DevBuf		ans_keys[2];	/* the answer, and the other half of its sort */
	DevBuf		ans_refs[2];
	DevBuf		sort_temp;
	DevBuf		items;

	/* the answer on the device */
	int			ans;			/* which ans_* holds it */
	size_t		answer_count;

	/* streaming */
	bool		streaming;
	uint64_t	pushed;
	DevBuf		slot[STREAM_SLOTS];
	cudaEvent_t copy_begun[STREAM_SLOTS];
	cudaEvent_t copied[STREAM_SLOTS];
	cudaEvent_t kernels_begun[STREAM_SLOTS];
	cudaEvent_t consumed[STREAM_SLOTS];
	bool		slot_busy[STREAM_SLOTS];
	cudaEvent_t finish_begun;
	cudaEvent_t finished;
	double		copy_ms;		/* the streamed run's copies, summed */
	double		kernel_ms;		/* and its kernels */
	int			next_slot;
	DevBuf		set_keys[2];
	DevBuf		set_refs[2];
	size_t		set_cap;
	int			set;			/* which set_* holds the candidates */
	uint64_t	set_bound;		/* upper bound of its count */

	/* the answer in host memory */
	TopkItem   *host_items;
	size_t		host_cap;
	uint32_t   *host_count;
};

static GpuTopkCalibration calibration;
static bool calibrated = false;

static GpuStatus
ensure(DevBuf *b, size_t bytes)
{
	if (bytes <= b->bytes)
		return GPU_OK;
	if (b->ptr)
	{
		GPU_CHECK(cudaFree(b->ptr), "Freeing device memory");
		b->ptr = NULL;
		b->bytes = 0;
	}
	bytes += bytes / 4;
	GPU_CHECK(cudaMalloc(&b->ptr, bytes), "Allocating device memory");
	b->bytes = bytes;
	return GPU_OK;
}

static void
release(DevBuf *b)
{
	if (b->ptr)
		cudaFree(b->ptr);
	b->ptr = NULL;
	b->bytes = 0;
}

#define TRY(call) \
	do { \
		GpuStatus status_ = (call); \
		if (status_ != GPU_OK) \
			return status_; \
	} while (0)

static GpuStatus
launched(const char *action)
{
	GPU_CHECK(cudaGetLastError(), action);
	return GPU_OK;
}

static GpuStatus
wait_stream(cudaStream_t stream)
{
	GPU_CHECK(cudaStreamSynchronize(stream), "Running the top-k kernels");
	return GPU_OK;
}

static GpuStatus
read_count(GpuTopk *t, const uint32_t *d_count, uint32_t *count)
{
	GPU_CHECK(cudaMemcpyAsync(t->host_count, d_count, sizeof(uint32_t),
							  cudaMemcpyDeviceToHost, t->dev.stream),
			  "Reading a count from the device");
	TRY(wait_stream(t->dev.stream));
	*count = *t->host_count;
	return GPU_OK;
}

/* ---------------------------------------------------------------- plans */

static GpuTopkAlgorithm
valid_algorithm(GpuTopkAlgorithm a, uint64_t k)
{
	return (a == GPU_TOPK_BITONIC && k <= BITONIC_MAX_K) ? GPU_TOPK_BITONIC : GPU_TOPK_RADIX;
}

template <typename K>
static size_t
inner_bytes(GpuTopkAlgorithm algorithm, uint64_t n, uint64_t k)
{
	if (algorithm == GPU_TOPK_BITONIC)
		return bitonic_arena_bytes<K>((uint32_t) n, k) +
			arena_bytes<K>(k) + arena_bytes<Ref>(k);
	return radix_arena_bytes<K>((uint32_t) n);
}

/* An answer of in appended to out: the inner algorithms of every plan. */
template <typename K>
static void
run_inner(GpuTopk *t, GpuTopkAlgorithm algorithm, Keys<K> in, Sink<K> out,
		  Arena &arena)
{
	Sink<K>		exact;

	if (algorithm == GPU_TOPK_RADIX)
	{
		radix_topk<K>(t->dev, in, t->k, t->mode, out, arena);
		return;
	}
	if (t->mode == TOPK_EXACT)
	{
		bitonic_topk<K>(t->dev, in, t->k, out, arena);
		return;
	}
	/* with ties: the k-th key of an exact answer, then every key up to it */
	exact.keys = arena.take<K>(t->k);
	exact.refs = arena.take<Ref>(t->k);
	exact.cap = (uint32_t) t->k;
	exact.d_count = &t->sc->exact_count;
	bitonic_topk<K>(t->dev, in, t->k, exact, arena);
	min_key<K>(t->dev, exact.keys, exact.d_count, exact.cap, t->k,
			   (K *) &t->sc->kth, &t->sc->has_kth);
	append_above<K>(t->dev, in, &t->sc->has_kth, (const K *) &t->sc->kth, true, out);
}

static Arena
arena_of(DevBuf *b)
{
	Arena		a;

	a.base = (char *) b->ptr;
	a.size = b->bytes;
	a.used = 0;
	return a;
}

/*
 * Enqueue plan on in (device-resident keys; delegates need keys with
 * implicit references and a count known on the host).  The counts it
 * appends to must be zero.
 */
template <typename K>
static GpuStatus
run_plan(GpuTopk *t, Keys<K> in, GpuTopkPlan plan, Sink<K> out)
{
	GpuTopkAlgorithm algorithm = valid_algorithm(plan.algorithm, t->k);
	int			log_s = plan.log_subrange;
	uint64_t	s = (uint64_t) 1 << log_s;
	uint64_t	m;
	uint64_t	sel_cap;
	uint64_t	cand_cap;
	size_t		mark;
	K		   *del;
	Sink<K>		sel;
	Sink<K>		cand;
	Keys<K>		dk;
	Keys<K>		ck;
	Arena		arena;

	if (log_s <= 0 || in.refs || in.d_n)
	{
		TRY(ensure(&t->arena, inner_bytes<K>(algorithm, in.n, t->k)));
		arena = arena_of(&t->arena);
		run_inner(t, algorithm, in, out, arena);
		return launched("Launching the top-k kernels");
	}

	m = (in.n + s - 1) >> log_s;
	sel_cap = t->mode == TOPK_EXACT ? (t->k < m ? t->k : m) : m;
	/* with ties the second top-k's input is only bounded by the input */
	cand_cap = t->mode == TOPK_EXACT ? sel_cap * s : in.n;
	if (cand_cap > in.n)
		cand_cap = in.n;
	TRY(ensure(&t->arena, arena_bytes<K>(m) + arena_bytes<K>(sel_cap) +
			   arena_bytes<Ref>(sel_cap) +
			   std::max(inner_bytes<K>(algorithm, m, t->k),
						inner_bytes<K>(algorithm, cand_cap, t->k))));
	arena = arena_of(&t->arena);
	del = arena.take<K>(m);
	sel.keys = arena.take<K>(sel_cap);
	sel.refs = arena.take<Ref>(sel_cap);
	sel.cap = (uint32_t) sel_cap;
	sel.d_count = &t->sc->sel_count;
	mark = arena.used;

	/* delegates, and the subranges whose delegates are the top k */
	subrange_max<K>(t->dev, in.keys, in.n, log_s, del);
	dk.keys = del;
	dk.refs = NULL;
	dk.base = 0;
	dk.n = (uint32_t) m;
	dk.d_n = NULL;
	run_inner(t, algorithm, dk, sel, arena);
	arena.used = mark;
	/* with fewer than k delegates there is no floor: every key may count */
	min_key<K>(t->dev, sel.keys, sel.d_count, sel.cap, t->k,
			   (K *) &t->sc->floor, &t->sc->has_floor);
	TRY(launched("Launching the delegate kernels"));
	if (t->mode == TOPK_WITH_TIES)
	{
		uint32_t	selected = 0;

		TRY(read_count(t, sel.d_count, &selected));
		cand_cap = std::min((uint64_t) selected * s, (uint64_t) in.n);
	}
	TRY(ensure(&t->cand_keys, sizeof(K) * (cand_cap ? cand_cap : 1)));
	TRY(ensure(&t->cand_refs, sizeof(Ref) * (cand_cap ? cand_cap : 1)));

	/* their keys at or above the k-th delegate, and the answer among them */
	cand.keys = (K *) t->cand_keys.ptr;
	cand.refs = (Ref *) t->cand_refs.ptr;
	cand.cap = (uint32_t) cand_cap;
	cand.d_count = &t->sc->cand_count;
	gather_subranges<K>(t->dev, in.keys, in.n, in.base, log_s, sel.refs, sel.d_count,
						sel.cap, &t->sc->has_floor, (const K *) &t->sc->floor,
						t->mode == TOPK_EXACT ? t->k : UINT64_MAX,
						&t->sc->equal_taken, cand);
	ck.keys = cand.keys;
	ck.refs = cand.refs;
	ck.base = 0;
	ck.n = (uint32_t) cand_cap;
	ck.d_n = cand.d_count;
	run_inner(t, algorithm, ck, out, arena);
	return launched("Launching the top-k kernels");
}

/* ------------------------------------------------------ the answer, sorted */

/* Make room for an answer of count keys in both halves of ans_*. */
template <typename K>
static GpuStatus
ensure_answer(GpuTopk *t, size_t count)
{
	count = count ? count : 1;
	for (int i = 0; i < 2; i++)
	{
		TRY(ensure(&t->ans_keys[i], sizeof(K) * count));
		TRY(ensure(&t->ans_refs[i], sizeof(Ref) * count));
	}
	return GPU_OK;
}

/* Sort the answer in ans_*[t->ans] by descending key. */
template <typename K>
static GpuStatus
sort_answer(GpuTopk *t)
{
	cub::DoubleBuffer<K> keys((K *) t->ans_keys[t->ans].ptr, (K *) t->ans_keys[1 - t->ans].ptr);
	cub::DoubleBuffer<Ref> refs((Ref *) t->ans_refs[t->ans].ptr, (Ref *) t->ans_refs[1 - t->ans].ptr);
	size_t		temp = 0;

	if (t->answer_count < 2)
		return GPU_OK;
	if (t->answer_count <= SMALL_SORT_MAX)
	{
		small_sort<K>(t->dev, keys.Current(), refs.Current(), (uint32_t) t->answer_count);
		return launched("Sorting the answer");
	}
	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(NULL, temp, keys, refs,
														(int) t->answer_count, 0,
														(int) sizeof(K) * 8, t->dev.stream),
			  "Sizing the answer's sort");
	TRY(ensure(&t->sort_temp, temp));
	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(t->sort_temp.ptr, temp, keys, refs,
														(int) t->answer_count, 0,
														(int) sizeof(K) * 8, t->dev.stream),
			  "Sorting the answer");
	t->ans = keys.Current() == (K *) t->ans_keys[0].ptr ? 0 : 1;
	return GPU_OK;
}

template <typename K>
__global__ void
pack_items(const K *keys, const Ref *refs, size_t count, TopkItem *items)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		items[i].key = keys[i];
		items[i].ref = refs[i];
	}
}

template <typename K>
static GpuStatus
copy_answer(GpuTopk *t, TopkResult *result)
{
	size_t		count = t->answer_count;

	if (count > t->host_cap)
	{
		if (t->host_items)
			cudaFreeHost(t->host_items);
		t->host_items = NULL;
		t->host_cap = 0;
		GPU_CHECK(cudaHostAlloc((void **) &t->host_items, count * sizeof(TopkItem),
								cudaHostAllocDefault),
				  "Allocating pinned memory for the answer");
		t->host_cap = count;
	}
	if (count > 0)
	{
		TRY(ensure(&t->items, count * sizeof(TopkItem)));
		pack_items<K><<<(unsigned) std::min<size_t>((count + 255) / 256, 1024), 256, 0, t->dev.stream>>>(
			(const K *) t->ans_keys[t->ans].ptr, (const Ref *) t->ans_refs[t->ans].ptr,
			count, (TopkItem *) t->items.ptr);
		TRY(launched("Packing the answer"));
		GPU_CHECK(cudaMemcpyAsync(t->host_items, t->items.ptr, count * sizeof(TopkItem),
								  cudaMemcpyDeviceToHost, t->dev.stream),
				  "Copying the answer to the host");
		TRY(wait_stream(t->dev.stream));
	}
	result->items = t->host_items;
	result->count = count;
	return GPU_OK;
}

/* ------------------------------------------------ device-resident runs */

template <typename K>
static GpuStatus
device_run(GpuTopk *t, const K *keys, size_t n, GpuTopkPlan plan)
{
	Keys<K>		in;
	size_t		cap = t->k < n ? (size_t) t->k : n;

	t->ans = 0;
	t->answer_count = 0;
	if (t->k == 0 || n == 0)
		return GPU_OK;
	in.keys = keys;
	in.refs = NULL;
	in.base = 0;
	in.n = (uint32_t) n;
	in.d_n = NULL;
	for (;;)
	{
		Sink<K>		out;
		uint32_t	count = 0;

		TRY(ensure_answer<K>(t, cap));
		GPU_CHECK(cudaMemsetAsync(t->sc, 0, sizeof(Scalars), t->dev.stream),
				  "Clearing the top-k counters");
		out.keys = (K *) t->ans_keys[0].ptr;
		out.refs = (Ref *) t->ans_refs[0].ptr;
		out.cap = (uint32_t) cap;
		out.d_count = &t->sc->answer_count;
		TRY(run_plan<K>(t, in, plan, out));
		if (t->mode == TOPK_EXACT)
		{
			t->answer_count = cap;	/* exactly min(k, n) */
			break;
		}
		TRY(read_count(t, out.d_count, &count));
		if (count <= cap)
		{
			t->answer_count = count;
			break;
		}
		cap = count;			/* more ties than room: once more, larger */
	}
	if (!(valid_algorithm(plan.algorithm, t->k) == GPU_TOPK_BITONIC &&
		  t->mode == TOPK_EXACT))
		TRY(sort_answer<K>(t));
	return wait_stream(t->dev.stream);
}

/* --------------------------------------------------------- streamed runs */

static GpuStatus ensure_calibrated(void);

template <typename K>
static GpuStatus
start_streaming(GpuTopk *t)
{
	/* compactions consult the cost model, unless forced: calibrate before copies start */
	if (t->algorithm == GPU_TOPK_AUTO)
		TRY(ensure_calibrated());
	t->set_cap = (size_t) t->k + SET_BATCHES * STREAM_BATCH_KEYS;
	if (t->set_cap > UINT32_MAX / 2)
		t->set_cap = UINT32_MAX / 2;
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		TRY(ensure(&t->slot[i], STREAM_BATCH_KEYS * sizeof(K)));
		t->slot_busy[i] = false;
	}
	for (int i = 0; i < 2; i++)
	{
		TRY(ensure(&t->set_keys[i], t->set_cap * sizeof(K)));
		TRY(ensure(&t->set_refs[i], t->set_cap * sizeof(Ref)));
	}
	GPU_CHECK(cudaMemsetAsync(t->sc, 0, sizeof(Scalars), t->dev.stream),
			  "Clearing the top-k counters");
	t->next_slot = 0;
	t->set = 0;
	t->set_bound = 0;
	t->pushed = 0;
	t->copy_ms = 0;
	t->kernel_ms = 0;
	t->streaming = true;
	return GPU_OK;
}

/* The device time from event begun to event ended, once both are done, added to *ms. */
static GpuStatus
add_elapsed(double *ms, cudaEvent_t begun, cudaEvent_t ended)
{
	float		elapsed;

	GPU_CHECK(cudaEventElapsedTime(&elapsed, begun, ended), "Timing the device");
	*ms += elapsed;
	return GPU_OK;
}

/* The time a batch slot's copy and kernels took on the device, once they are done. */
static GpuStatus
add_slot_times(GpuTopk *t, int i)
{
	TRY(add_elapsed(&t->copy_ms, t->copy_begun[i], t->copied[i]));
	TRY(add_elapsed(&t->kernel_ms, t->kernels_begun[i], t->consumed[i]));
	t->slot_busy[i] = false;
	return GPU_OK;
}

/* the cost model's plan for a top-k without delegates */
static GpuTopkPlan plan_without_delegates(size_t n, uint64_t k, int key_width, TopkMode mode);

/*
 * Compact the candidate set to the answer so far, and make the answer's
 * k-th key the cut.  With ties the set may stay large: then it grows.
 */
template <typename K>
static GpuStatus
compact(GpuTopk *t)
{
	int			other = 1 - t->set;
	Keys<K>		in;
	Sink<K>		out;
	uint32_t	count = 0;

	GPU_CHECK(cudaMemsetAsync(&t->sc->set_count[other], 0, sizeof(uint32_t), t->dev.stream),
			  "Clearing a count");
	in.keys = (const K *) t->set_keys[t->set].ptr;
	in.refs = (const Ref *) t->set_refs[t->set].ptr;
	in.base = 0;
	in.n = (uint32_t) std::min<uint64_t>(t->set_bound, t->set_cap);
	in.d_n = &t->sc->set_count[t->set];
	out.keys = (K *) t->set_keys[other].ptr;
	out.refs = (Ref *) t->set_refs[other].ptr;
	out.cap = (uint32_t) t->set_cap;
	out.d_count = &t->sc->set_count[other];
	if (t->algorithm == GPU_TOPK_AUTO)
		t->last_plan = plan_without_delegates(in.n, t->k, sizeof(K), t->mode);
	else
		t->last_plan = {t->algorithm, 0};
	t->last_plan.algorithm = valid_algorithm(t->last_plan.algorithm, t->k);
	TRY(run_plan<K>(t, in, t->last_plan, out));
	min_key<K>(t->dev, out.keys, out.d_count, out.cap, t->k, (K *) &t->sc->cut, &t->sc->has_cut);
	TRY(launched("Launching the top-k kernels"));
	t->set = other;
	if (t->mode == TOPK_EXACT)
	{
		t->set_bound = std::min<uint64_t>(t->set_bound, t->k);
		return GPU_OK;
	}
	TRY(read_count(t, out.d_count, &count));
	t->set_bound = count;
	if (count + STREAM_BATCH_KEYS > t->set_cap)
	{
		/* keep the tied candidates and make room for more */
		size_t		cap = 2 * ((size_t) count + STREAM_BATCH_KEYS);

		TRY(ensure(&t->set_keys[1 - other], cap * sizeof(K)));
		TRY(ensure(&t->set_refs[1 - other], cap * sizeof(Ref)));
		GPU_CHECK(cudaMemcpyAsync(t->set_keys[1 - other].ptr, out.keys, count * sizeof(K),
								  cudaMemcpyDeviceToDevice, t->dev.stream), "Growing the candidate set");
		GPU_CHECK(cudaMemcpyAsync(t->set_refs[1 - other].ptr, out.refs, count * sizeof(Ref),
								  cudaMemcpyDeviceToDevice, t->dev.stream), "Growing the candidate set");
		GPU_CHECK(cudaMemcpyAsync(&t->sc->set_count[1 - other], &t->sc->set_count[other],
								  sizeof(uint32_t), cudaMemcpyDeviceToDevice, t->dev.stream),
				  "Growing the candidate set");
		TRY(wait_stream(t->dev.stream));
		t->set = 1 - other;
		TRY(ensure(&t->set_keys[other], cap * sizeof(K)));
		TRY(ensure(&t->set_refs[other], cap * sizeof(Ref)));
		t->set_cap = cap;
	}
	return GPU_OK;
}

template <typename K>
static GpuStatus
push_keys(GpuTopk *t, const K *host, size_t n)
{
	if (!t->streaming)
		TRY(start_streaming<K>(t));
	while (n > 0)
	{
		size_t		chunk = n < STREAM_BATCH_KEYS ? n : STREAM_BATCH_KEYS;
		int			i = t->next_slot;
		Keys<K>		in;
		Sink<K>		set;

		if (t->slot_busy[i])
		{
			GPU_CHECK(cudaEventSynchronize(t->consumed[i]), "Waiting for a batch slot");
			TRY(add_slot_times(t, i));
		}
		GPU_CHECK(cudaEventRecord(t->copy_begun[i], t->copy_stream), "Recording an event");
		GPU_CHECK(cudaMemcpyAsync(t->slot[i].ptr, host, chunk * sizeof(K),
								  cudaMemcpyHostToDevice, t->copy_stream),
				  "Copying keys to the device");
		GPU_CHECK(cudaEventRecord(t->copied[i], t->copy_stream), "Recording an event");
		GPU_CHECK(cudaStreamWaitEvent(t->dev.stream, t->copied[i], 0), "Waiting for an event");
		GPU_CHECK(cudaEventRecord(t->kernels_begun[i], t->dev.stream), "Recording an event");
		if (t->set_bound + chunk > t->set_cap)
			TRY(compact<K>(t));
		in.keys = (const K *) t->slot[i].ptr;
		in.refs = NULL;
		in.base = t->pushed;
		in.n = (uint32_t) chunk;
		in.d_n = NULL;
		set.keys = (K *) t->set_keys[t->set].ptr;
		set.refs = (Ref *) t->set_refs[t->set].ptr;
		set.cap = (uint32_t) t->set_cap;
		set.d_count = &t->sc->set_count[t->set];
		append_above<K>(t->dev, in, &t->sc->has_cut, (const K *) &t->sc->cut,
						t->mode == TOPK_WITH_TIES, set);
		TRY(launched("Launching the streaming filter"));
		GPU_CHECK(cudaEventRecord(t->consumed[i], t->dev.stream), "Recording an event");
		t->slot_busy[i] = true;
		t->next_slot = (i + 1) % STREAM_SLOTS;
		t->set_bound += chunk;
		t->pushed += chunk;
		host += chunk;
		n -= chunk;
	}
	return GPU_OK;
}

/* The streamed answer: a last compaction, then the set is the answer. */
template <typename K>
static GpuStatus
finish_streaming(GpuTopk *t)
{
	uint32_t	count = 0;

	if (!t->streaming)
	{
		t->answer_count = 0;
		return GPU_OK;
	}
	GPU_CHECK(cudaEventRecord(t->finish_begun, t->dev.stream), "Recording an event");
	TRY(compact<K>(t));
	TRY(read_count(t, &t->sc->set_count[t->set], &count));
	TRY(ensure_answer<K>(t, count));
	GPU_CHECK(cudaMemcpyAsync(t->ans_keys[0].ptr, t->set_keys[t->set].ptr, count * sizeof(K),
							  cudaMemcpyDeviceToDevice, t->dev.stream), "Copying the answer");
	GPU_CHECK(cudaMemcpyAsync(t->ans_refs[0].ptr, t->set_refs[t->set].ptr, count * sizeof(Ref),
							  cudaMemcpyDeviceToDevice, t->dev.stream), "Copying the answer");
	t->ans = 0;
	t->answer_count = count;
	TRY(sort_answer<K>(t));
	GPU_CHECK(cudaEventRecord(t->finished, t->dev.stream), "Recording an event");
	t->streaming = false;
	TRY(wait_stream(t->dev.stream));
	for (int i = 0; i < STREAM_SLOTS; i++)
		if (t->slot_busy[i])
			TRY(add_slot_times(t, i));
	return add_elapsed(&t->kernel_ms, t->finish_begun, t->finished);
}

/* ----------------------------------------------------------- cost model */

static int
width_index(int key_width)
{
	return key_width == 8 ? 1 : 0;
}

/*
 * Dr. Top-k's subrange size, 2^((log2 n - log2 k + 3) / 2), balances the
 * delegates against the keys of the subranges they select.  Rounded down:
 * on adversarial order (all selected subranges above the cut) the gather
 * keeps k * 2^log_s keys, so the smaller size bounds the worst case.
 */
static int
dr_topk_log_subrange(size_t n, uint64_t k)
{
	int			a = (int) floor((log2((double) n) - log2((double) (k ? k : 1)) + 3) / 2);

	return std::max(MIN_LOG_SUBRANGE, std::min(MAX_LOG_SUBRANGE, a));
}

/*
 * The work of a plan over n keys (see GpuTopkCalibration): 1, n, and for
 * delegates m, g and p; for radix the answer's size.
 */
static void
plan_features(size_t n, uint64_t k, bool delegates, double x[5])
{
	x[0] = 1;
	x[1] = (double) n;
	x[2] = 0;
	x[3] = 0;
	x[4] = (double) std::min<uint64_t>(k, n);
	if (delegates)
	{
		size_t		s = (size_t) 1 << dr_topk_log_subrange(n, k);
		size_t		m = (n + s - 1) / s;
		double		ratio = (double) k / (double) m;
		double		g = (double) std::min<size_t>((size_t) std::min<uint64_t>(k, m) * s, n);

		x[2] = (double) m;
		x[3] = g;
		/* with k >= m every subrange is selected and every key passes */
		x[4] = ratio >= 1 ? (double) n :
			std::min(g, ratio < 1e-9 ? (double) k : k * -log1p(-ratio) / ratio);
	}
}

/*
 * Whether delegates can prune: with fewer than 2k subranges of Dr. Top-k's
 * size, the top-k of the delegates selects half of them or more.
 */
static bool
delegates_prune(size_t n, uint64_t k)
{
	size_t		s = (size_t) 1 << dr_topk_log_subrange(n, k);

	return s < n && (n + s - 1) / s >= 2 * k;
}

static GpuTopkFamily
family_of(GpuTopkPlan plan)
{
	if (plan.algorithm == GPU_TOPK_BITONIC)
		return plan.log_subrange > 0 ? GPU_TOPK_FAMILY_BITONIC_DELEGATES : GPU_TOPK_FAMILY_BITONIC;
	return plan.log_subrange > 0 ? GPU_TOPK_FAMILY_RADIX_DELEGATES : GPU_TOPK_FAMILY_RADIX;
}

/* the plan of a family for n keys and a top k */
static GpuTopkPlan
family_plan(GpuTopkFamily f, size_t n, uint64_t k)
{
	GpuTopkPlan plan;

	plan.algorithm = (f == GPU_TOPK_FAMILY_BITONIC || f == GPU_TOPK_FAMILY_BITONIC_DELEGATES) ?
		GPU_TOPK_BITONIC : GPU_TOPK_RADIX;
	plan.log_subrange = (f == GPU_TOPK_FAMILY_RADIX_DELEGATES ||
						 f == GPU_TOPK_FAMILY_BITONIC_DELEGATES) ? dr_topk_log_subrange(n, k) : 0;
	return plan;
}

/* whether the cost model considers a family's plan for n keys and a top k */
static bool
plan_applies(GpuTopkFamily f, size_t n, uint64_t k)
{
	GpuTopkPlan plan = family_plan(f, n, k);

	if (plan.algorithm == GPU_TOPK_BITONIC && k > BITONIC_MAX_K)
		return false;
	return plan.log_subrange == 0 || delegates_prune(n, k);
}

/* the family's line (see GpuTopkCalibration), in seconds */
static double
line_cost(const GpuTopkCalibration *c, int w, GpuTopkFamily f, size_t n, uint64_t k)
{
	const double *coef;
	double		x[5];
	double		t = 0;

	if (f == GPU_TOPK_FAMILY_BITONIC)
		return c->bitonic[w][log2_ceil(k)][0] + c->bitonic[w][log2_ceil(k)][1] * n;
	coef = f == GPU_TOPK_FAMILY_RADIX ? c->radix[w] : c->delegates[w];
	plan_features(n, k, f != GPU_TOPK_FAMILY_RADIX, x);
	for (int j = 0; j < 5; j++)
		t += coef[j] * x[j];
	return t;
}

/* the grid of the measured correction, in log2 n and log2 k */
static const int correction_log_n[GPU_TOPK_CORRECTION_N] = {20, 22, 24, 26};
static const int correction_log_k[GPU_TOPK_CORRECTION_K] = {0, 5, 8, 10, 14, 18};

/* the cell of a sorted grid at or below v, and v's fraction of the way on */
static void
grid_position(double v, const int *grid, int len, int *cell, double *frac)
{
	int			i = 0;

	if (v <= grid[0])
	{
		*cell = 0;
		*frac = 0;
		return;
	}
	if (v >= grid[len - 1])
	{
		*cell = len - 2;
		*frac = 1;
		return;
	}
	while (v > grid[i + 1])
		i++;
	*cell = i;
	*frac = (v - grid[i]) / (grid[i + 1] - grid[i]);
}

/*
 * The measured correction of a family's line at n and k: bilinear in
 * log n and log k over the grid points where the plan ran, 1 where it ran
 * at none of the four around.
 */
static double
correction(const GpuTopkCalibration *c, int w, GpuTopkFamily f, size_t n, uint64_t k)
{
	int			i;
	int			j;
	double		fn;
	double		fk;
	double		sum = 0;
	double		weights = 0;

	grid_position(log2((double) n), correction_log_n, GPU_TOPK_CORRECTION_N, &i, &fn);
	grid_position(log2((double) (k ? k : 1)), correction_log_k, GPU_TOPK_CORRECTION_K, &j, &fk);
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
		{
			double		r = c->correction[w][f][i + a][j + b];
			double		weight = (a ? fn : 1 - fn) * (b ? fk : 1 - fk);

			if (r > 0)
			{
				sum += weight * r;
				weights += weight;
			}
		}
	return weights > 0 ? sum / weights : 1;
}

static double
plan_cost(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, GpuTopkPlan plan)
{
	int			w = width_index(key_width);
	GpuTopkFamily f = family_of(plan);
	double		t = line_cost(c, w, f, n, k) * correction(c, w, f, n, k);

	/* with ties, bitonic reads its input once more */
	if (mode == TOPK_WITH_TIES && f == GPU_TOPK_FAMILY_BITONIC)
		t += c->launch_s + (double) n * key_width / c->read_bytes_per_s;
	return t;
}

/*
 * The cheapest plan by the model among those that apply: bitonic (small k)
 * or radix, each directly or (if delegates is true) behind delegates.
 */
static GpuTopkPlan
best_plan(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, bool delegates, double *seconds)
{
	GpuTopkPlan best = family_plan(GPU_TOPK_FAMILY_RADIX, n, k);
	double		best_t = plan_cost(c, n, k, key_width, mode, best);

	for (int f = GPU_TOPK_FAMILY_RADIX + 1; f < GPU_TOPK_FAMILIES; f++)
	{
		GpuTopkPlan plan = family_plan((GpuTopkFamily) f, n, k);
		double		pt;

		if (!plan_applies((GpuTopkFamily) f, n, k) || (plan.log_subrange && !delegates))
			continue;
		pt = plan_cost(c, n, k, key_width, mode, plan);
		if (pt < best_t)
		{
			best = plan;
			best_t = pt;
		}
	}
	if (seconds)
		*seconds = best_t;
	return best;
}

static GpuTopkPlan
plan_without_delegates(size_t n, uint64_t k, int key_width, TopkMode mode)
{
	return best_plan(&calibration, n, k, key_width, mode, false, NULL);
}

/*
 * Calibration keys from a hash of their position, shaped like common data
 * (shared high bits take radix more passes than hashed bits do): for 4-byte
 * keys, those of float4 values in [0, 1), like scores; for 8-byte keys,
 * those of int8 values in [0, 2^46), like ids or timestamps.
 */
template <typename K>
__global__ void
fill_calibration_keys(K *keys, size_t n)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		unsigned long long z = i * 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z ^= z >> 31;
		if (sizeof(K) == 4)
			keys[i] = (K) key_from_float4((float) (z >> 40) / (float) (1 << 24), true);
		else
			keys[i] = (K) key_from_int64((int64_t) (z >> 18), true);
	}
}

__global__ void
empty_kernel(void)
{
}

/* The fastest of a few runs of fn (after one to warm up), by the host clock. */
template <typename F>
static GpuStatus
time_best(int runs, F fn, double *seconds)
{
	double		best = 1e30;

	for (int r = 0; r <= runs; r++)
	{
		auto		start = std::chrono::steady_clock::now();
		double		t;

		TRY(fn());
		t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		if (r > 0 && t < best)
			best = t;
	}
	*seconds = best;
	return GPU_OK;
}


/* seconds of a device-resident top-k of the first n calibration keys */
static GpuStatus
time_run(GpuTopk *t, const void *keys, size_t n, uint64_t k, GpuTopkPlan plan,
		 double *seconds)
{
	t->k = k;
	return time_best(2, [&] {
		return gpu_topk_device(t, keys, n, &plan, NULL);
	}, seconds);
}

/* a measured run: n, k and its seconds */
struct Sample
{
	double		n;
	double		k;
	double		t;
};

/*
 * Least squares of the samples' seconds on their plan features (see
 * plan_features).  A coefficient that comes out negative drops its feature
 * and the rest are refitted, so the model never predicts less for more
 * work.  For delegates only a and e are fitted, to what the physical terms
 * leave: the keys read (n and g) at read_s each, and the top-k of the m
 * delegates at radix_s per key, radix's own rate (their features are too
 * collinear with the others to be fitted).
 */
static void
fit_family(const Sample *smp, int count, bool delegates, double read_s,
		   double radix_s, double coef[5])
{
	/* scales that bring the features to similar magnitudes */
	const double scale[5] = {1, 1e-6, 1e-4, 1e-6, 1e-3};
	bool		used[5] = {true, !delegates, false, false, true};

	for (;;)
	{
		double		m[5][6] = {{0}};
		int			idx[5];
		int			f = 0;
		bool		negative = false;

		for (int j = 0; j < 5; j++)
			if (used[j])
				idx[f++] = j;
		for (int s = 0; s < count; s++)
		{
			double		x[5];
			double		t = smp[s].t;

			plan_features((size_t) smp[s].n, (uint64_t) smp[s].k, delegates, x);
			if (delegates)
				t -= read_s * (x[1] + x[3]) + radix_s * x[2];
			for (int r = 0; r < f; r++)
			{
				for (int q = 0; q < f; q++)
					m[r][q] += x[idx[r]] * scale[idx[r]] * x[idx[q]] * scale[idx[q]];
				m[r][f] += x[idx[r]] * scale[idx[r]] * t;
			}
		}
		/* Gauss-Jordan elimination with partial pivoting */
		for (int col = 0; col < f; col++)
		{
			int			piv = col;

			for (int r = col + 1; r < f; r++)
				if (fabs(m[r][col]) > fabs(m[piv][col]))
					piv = r;
			for (int q = 0; q <= f; q++)
				std::swap(m[col][q], m[piv][q]);
			for (int r = 0; r < f; r++)
				if (r != col && m[col][col] != 0)
				{
					double		ratio = m[r][col] / m[col][col];

					for (int q = col; q <= f; q++)
						m[r][q] -= ratio * m[col][q];
				}
		}
		for (int j = 0; j < 5; j++)
			coef[j] = 0;
		for (int r = 0; r < f; r++)
		{
			double		v = m[r][r] != 0 ? m[r][f] / m[r][r] : 0;

			coef[idx[r]] = v * scale[idx[r]];
			if (v < 0 && idx[r] != 0)
			{
				used[idx[r]] = false;
				negative = true;
			}
		}
		if (!negative)
		{
			if (delegates)
			{
				coef[1] = coef[3] = read_s;
				coef[2] = radix_s;
			}
			return;
		}
	}
}

/* seconds of each plan of a family at the correction grid; 0 where it does not apply */
typedef double GridTimes[GPU_TOPK_CORRECTION_N][GPU_TOPK_CORRECTION_K];

static GpuStatus
time_grid(GpuTopk *t, const void *keys, GpuTopkFamily f, GridTimes times)
{
	for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
		for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
		{
			size_t		n = (size_t) 1 << correction_log_n[i];
			uint64_t	k = (uint64_t) 1 << correction_log_k[j];

			times[i][j] = 0;
			if (plan_applies(f, n, k))
				TRY(time_run(t, keys, n, k, family_plan(f, n, k), &times[i][j]));
		}
	return GPU_OK;
}

/* fit a radix family's line to its grid times */
static void
fit_grid(const GpuTopkCalibration *c, int w, GpuTopkFamily f, GridTimes times, double coef[5])
{
	Sample		smp[GPU_TOPK_CORRECTION_N * GPU_TOPK_CORRECTION_K];
	int			count = 0;

	for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
		for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
			if (times[i][j] > 0)
			{
				smp[count].n = (double) ((size_t) 1 << correction_log_n[i]);
				smp[count].k = (double) ((uint64_t) 1 << correction_log_k[j]);
				smp[count].t = times[i][j];
				count++;
			}
	fit_family(smp, count, f == GPU_TOPK_FAMILY_RADIX_DELEGATES,
			   (w ? 8 : 4) / c->read_bytes_per_s, c->radix[w][1], coef);
}

/*
 * The lines of every family for one key width, and their corrections: radix
 * first (delegates use its rate), then bitonic's line per log2 k from n =
 * 2^16 and 2^21, then every family on the correction grid.
 */
static GpuStatus
calibrate_blocks(GpuTopkCalibration *c, GpuTopk *t, const void *keys)
{
	int			w = width_index(t->key_width);
	GridTimes	times[GPU_TOPK_FAMILIES];
	GpuTopkPlan bitonic = {GPU_TOPK_BITONIC, 0};

	TRY(time_grid(t, keys, GPU_TOPK_FAMILY_RADIX, times[GPU_TOPK_FAMILY_RADIX]));
	fit_grid(c, w, GPU_TOPK_FAMILY_RADIX, times[GPU_TOPK_FAMILY_RADIX], c->radix[w]);
	TRY(time_grid(t, keys, GPU_TOPK_FAMILY_RADIX_DELEGATES, times[GPU_TOPK_FAMILY_RADIX_DELEGATES]));
	fit_grid(c, w, GPU_TOPK_FAMILY_RADIX_DELEGATES, times[GPU_TOPK_FAMILY_RADIX_DELEGATES],
			 c->delegates[w]);
	for (int l = 0; l <= 8; l++)
	{
		double		t1;
		double		t2;
		size_t		n1 = (size_t) 1 << 16;
		size_t		n2 = (size_t) 1 << 21;

		TRY(time_run(t, keys, n1, (uint64_t) 1 << l, bitonic, &t1));
		TRY(time_run(t, keys, n2, (uint64_t) 1 << l, bitonic, &t2));
		c->bitonic[w][l][1] = std::max(0.0, (t2 - t1) / (double) (n2 - n1));
		c->bitonic[w][l][0] = std::max(0.0, t1 - c->bitonic[w][l][1] * n1);
	}
	TRY(time_grid(t, keys, GPU_TOPK_FAMILY_BITONIC, times[GPU_TOPK_FAMILY_BITONIC]));
	TRY(time_grid(t, keys, GPU_TOPK_FAMILY_BITONIC_DELEGATES,
				  times[GPU_TOPK_FAMILY_BITONIC_DELEGATES]));

	for (int f = 0; f < GPU_TOPK_FAMILIES; f++)
		for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
			for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
			{
				double		line = line_cost(c, w, (GpuTopkFamily) f,
											 (size_t) 1 << correction_log_n[i],
											 (uint64_t) 1 << correction_log_k[j]);

				c->correction[w][f][i][j] = times[f][i][j] > 0 && line > 0 ?
					times[f][i][j] / line : 0;
			}
	return GPU_OK;
}

static GpuStatus
calibrate_width(GpuTopkCalibration *c, const void *keys, int key_width)
{
	GpuTopk    *t;
	GpuStatus	status;

	TRY(gpu_topk_create(key_width, 1, TOPK_EXACT, &t));
	status = calibrate_blocks(c, t, keys);
	gpu_topk_destroy(t);
	return status;
}

static GpuStatus
calibrate(void)
{
	GpuTopkCalibration c;
	Device		dev;
	void	   *keys = NULL;
	uint32_t   *delegates = NULL;
	void	   *host = NULL;
	double		t = 0;
	int			device;
	GpuStatus	status = GPU_OK;
	size_t		copy_bytes = (size_t) 64 << 20;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	GPU_CHECK(cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, device),
			  "Reading device properties");
	dev.cooperative = false;	/* the delegate pass, the one use here, needs none */
	GPU_CHECK(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking), "Creating a stream");
	memset(&c, 0, sizeof(c));

#define CAL(call, what) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { status = gpu_fail(e_, what); goto done; } } while (0)
#define CAL_STATUS(call) \
	do { status = (call); if (status != GPU_OK) goto done; } while (0)

	CAL(cudaMalloc(&keys, CALIBRATION_KEYS * sizeof(uint64_t)), "Allocating calibration memory");
	CAL(cudaMalloc(&delegates, (CALIBRATION_KEYS >> 12) * sizeof(uint32_t)),
		"Allocating calibration memory");
	/* copies first: they overwrite the keys, which are filled after */
	CAL(cudaHostAlloc(&host, copy_bytes, cudaHostAllocDefault), "Allocating calibration memory");
	memset(host, 0x5a, copy_bytes);
	CAL_STATUS(time_best(3, [&] {
		GPU_CHECK(cudaMemcpyAsync(keys, host, copy_bytes, cudaMemcpyHostToDevice, dev.stream),
				  "Timing copies to the device");
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing copies to the device");
		return GPU_OK;
	}, &t));
	c.copy_bytes_per_s = copy_bytes / t;

	fill_calibration_keys<uint32_t><<<1024, 256, 0, dev.stream>>>((uint32_t *) keys, CALIBRATION_KEYS);
	CAL(cudaStreamSynchronize(dev.stream), "Preparing calibration keys");

	CAL_STATUS(time_best(3, [&] {
		subrange_max<uint32_t>(dev, (uint32_t *) keys, CALIBRATION_KEYS, 12, delegates);
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing the delegate pass");
		return GPU_OK;
	}, &t));
	c.read_bytes_per_s = CALIBRATION_KEYS * sizeof(uint32_t) / t;

	CAL_STATUS(time_best(3, [&] {
		for (int i = 0; i < 100; i++)
			empty_kernel<<<1, 32, 0, dev.stream>>>();
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing kernel launches");
		return GPU_OK;
	}, &t));
	c.launch_s = t / 100;

	CAL_STATUS(calibrate_width(&c, keys, 4));
	fill_calibration_keys<uint64_t><<<1024, 256, 0, dev.stream>>>((uint64_t *) keys, CALIBRATION_KEYS);
	CAL(cudaStreamSynchronize(dev.stream), "Preparing calibration keys");
	CAL_STATUS(calibrate_width(&c, keys, 8));
	calibration = c;
	calibrated = true;

done:
	if (keys)
		cudaFree(keys);
	if (delegates)
		cudaFree(delegates);
	if (host)
		cudaFreeHost(host);
	cudaStreamDestroy(dev.stream);
	return status;
#undef CAL
#undef CAL_STATUS
}

/* ---------------------------------------------------------------- C API */

/* the cost model's parameters, measured on first use in the process */
static GpuStatus
ensure_calibrated(void)
{
	if (!calibrated)
		TRY(calibrate());
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_calibration(GpuTopkCalibration *cal)
{
	TRY(ensure_calibrated());
	*cal = calibration;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_estimate(size_t n, uint64_t k, int key_width, TopkMode mode,
				  GpuTopkPlan plan, double *seconds)
{
	TRY(ensure_calibrated());
	plan.algorithm = valid_algorithm(plan.algorithm, k);
	*seconds = plan_cost(&calibration, n, k, key_width, mode, plan);
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_choose(size_t n, uint64_t k, int key_width, TopkMode mode,
				GpuTopkPlan *plan, double *seconds)
{
	TRY(ensure_calibrated());
	*plan = best_plan(&calibration, n, k, key_width, mode, true, seconds);
	return GPU_OK;
}

static GpuStatus
setup(GpuTopk *t)
{
	int			device;
	int			cooperative;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	GPU_CHECK(cudaDeviceGetAttribute(&t->dev.sm_count, cudaDevAttrMultiProcessorCount, device),
			  "Reading device properties");
	GPU_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device),
			  "Reading device properties");
	t->dev.cooperative = cooperative != 0;
	GPU_CHECK(cudaStreamCreateWithFlags(&t->dev.stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaStreamCreateWithFlags(&t->copy_stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaMalloc((void **) &t->sc, sizeof(Scalars)), "Allocating device memory");
	GPU_CHECK(cudaHostAlloc((void **) &t->host_count, sizeof(uint32_t), cudaHostAllocDefault),
			  "Allocating pinned memory");
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		GPU_CHECK(cudaEventCreate(&t->copy_begun[i]), "Creating an event");
		GPU_CHECK(cudaEventCreate(&t->copied[i]), "Creating an event");
		GPU_CHECK(cudaEventCreate(&t->kernels_begun[i]), "Creating an event");
		GPU_CHECK(cudaEventCreate(&t->consumed[i]), "Creating an event");
	}
	GPU_CHECK(cudaEventCreate(&t->finish_begun), "Creating an event");
	GPU_CHECK(cudaEventCreate(&t->finished), "Creating an event");
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_create(int key_width, uint64_t k, TopkMode mode, GpuTopk **out)
{
	GpuTopk    *t;
	GpuStatus	status;

	*out = NULL;
	t = (GpuTopk *) calloc(1, sizeof(GpuTopk));
	if (t == NULL)
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating the top-k state");
	t->key_width = key_width;
	t->k = k;
	t->mode = mode;
	status = setup(t);
	if (status != GPU_OK)
	{
		gpu_topk_destroy(t);
		return status;
	}
	*out = t;
	return GPU_OK;
}

extern "C" void
gpu_topk_destroy(GpuTopk *t)
{
	if (t == NULL)
		return;
	/* queued work may still use the buffers */
	if (t->dev.stream)
		cudaStreamSynchronize(t->dev.stream);
	if (t->copy_stream)
		cudaStreamSynchronize(t->copy_stream);
	release(&t->arena);
	release(&t->cand_keys);
	release(&t->cand_refs);
	for (int i = 0; i < 2; i++)
	{
		release(&t->ans_keys[i]);
		release(&t->ans_refs[i]);
		release(&t->set_keys[i]);
		release(&t->set_refs[i]);
	}
	release(&t->sort_temp);
	release(&t->items);
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		release(&t->slot[i]);
		if (t->copy_begun[i])
			cudaEventDestroy(t->copy_begun[i]);
		if (t->copied[i])
			cudaEventDestroy(t->copied[i]);
		if (t->kernels_begun[i])
			cudaEventDestroy(t->kernels_begun[i]);
		if (t->consumed[i])
			cudaEventDestroy(t->consumed[i]);
	}
	if (t->finish_begun)
		cudaEventDestroy(t->finish_begun);
	if (t->finished)
		cudaEventDestroy(t->finished);
	if (t->sc)
		cudaFree(t->sc);
	if (t->host_items)
		cudaFreeHost(t->host_items);
	if (t->host_count)
		cudaFreeHost(t->host_count);
	if (t->dev.stream)
		cudaStreamDestroy(t->dev.stream);
	if (t->copy_stream)
		cudaStreamDestroy(t->copy_stream);
	free(t);
}

extern "C" GpuStatus
gpu_topk_device(GpuTopk *t, const void *dev_keys, size_t n, const GpuTopkPlan *plan,
				GpuTopkPlan *used)
{
	GpuTopkPlan p;

	if (n >= UINT32_MAX || ((uintptr_t) dev_keys & 15) != 0 || t->streaming)
		return gpu_fail(cudaErrorInvalidValue,
						"Selecting from device memory (at most 2^32 - 2 keys, 16-byte aligned, not while streaming)");
	if (plan && plan->algorithm != GPU_TOPK_AUTO)
		p = *plan;
	else
	{
		TRY(ensure_calibrated());
		p = best_plan(&calibration, n, t->k, t->key_width, t->mode, true, NULL);
	}
	p.algorithm = valid_algorithm(p.algorithm, t->k);
	if (p.log_subrange > 0)
		p.log_subrange = std::max(MIN_LOG_SUBRANGE, std::min(MAX_LOG_SUBRANGE, p.log_subrange));
	if (used)
		*used = p;
	t->last_plan = p;
	if (t->key_width == 4)
		return device_run<uint32_t>(t, (const uint32_t *) dev_keys, n, p);
	return device_run<uint64_t>(t, (const uint64_t *) dev_keys, n, p);
}

extern "C" void
gpu_topk_set_algorithm(GpuTopk *t, GpuTopkAlgorithm algorithm)
{
	t->algorithm = algorithm;
}

extern "C" GpuTopkPlan
gpu_topk_last_plan(const GpuTopk *t)
{
	return t->last_plan;
}

extern "C" void
gpu_topk_stream_times(const GpuTopk *t, double *copy_ms, double *kernel_ms)
{
	*copy_ms = t->copy_ms;
	*kernel_ms = t->kernel_ms;
}

extern "C" GpuStatus
gpu_topk_push(GpuTopk *t, const void *host_keys, size_t n)
{
	if (t->k == 0 || n == 0)
	{
		t->pushed += n;
		return GPU_OK;
	}
	if (t->key_width == 4)
		return push_keys<uint32_t>(t, (const uint32_t *) host_keys, n);
	return push_keys<uint64_t>(t, (const uint64_t *) host_keys, n);
}

extern "C" GpuStatus
gpu_topk_wait_input(GpuTopk *t)
{
	GPU_CHECK(cudaStreamSynchronize(t->copy_stream), "Copying keys to the device");
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_result(GpuTopk *t, TopkResult *result)
{
	if (t->streaming)
	{
		TRY(gpu_topk_wait_input(t));
		if (t->key_width == 4)
			TRY(finish_streaming<uint32_t>(t));
		else
			TRY(finish_streaming<uint64_t>(t));
	}
	if (t->key_width == 4)
		return copy_answer<uint32_t>(t, result);
	return copy_answer<uint64_t>(t, result);
}
