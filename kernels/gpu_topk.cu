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
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>

#include "gpu_error.h"
#include "gpu_topk.h"
#include "topk_device.cuh"

using namespace topk;

/* keys per streamed batch, batches in flight, and batches the set holds */
#define STREAM_BATCH_KEYS ((size_t) 1 << 23)
#define STREAM_SLOTS 3
#define SET_BATCHES 4
/* the subrange sizes the cost model considers for delegates */
#define MIN_LOG_SUBRANGE 7
#define MAX_LOG_SUBRANGE 14
/* calibration input: keys, and keys for the per-key costs */
#define CALIBRATION_KEYS ((size_t) 1 << 26)
#define CALIBRATION_ALGO_KEYS ((size_t) 1 << 22)

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
	cudaEvent_t copied[STREAM_SLOTS];
	cudaEvent_t consumed[STREAM_SLOTS];
	bool		slot_busy[STREAM_SLOTS];
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
						sel.cap, &t->sc->has_floor, (const K *) &t->sc->floor, cand);
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

template <typename K>
static GpuStatus
start_streaming(GpuTopk *t)
{
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
	t->streaming = true;
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
	TRY(run_plan<K>(t, in, plan_without_delegates(in.n, t->k, sizeof(K), t->mode), out));
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
			GPU_CHECK(cudaEventSynchronize(t->consumed[i]), "Waiting for a batch slot");
		GPU_CHECK(cudaMemcpyAsync(t->slot[i].ptr, host, chunk * sizeof(K),
								  cudaMemcpyHostToDevice, t->copy_stream),
				  "Copying keys to the device");
		GPU_CHECK(cudaEventRecord(t->copied[i], t->copy_stream), "Recording an event");
		GPU_CHECK(cudaStreamWaitEvent(t->dev.stream, t->copied[i], 0), "Waiting for an event");
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
	t->streaming = false;
	return wait_stream(t->dev.stream);
}

/* ----------------------------------------------------------- cost model */

static double
bitonic_cost(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width, TopkMode mode)
{
	int			log_kp = 0;
	int			launches = 2;
	double		t;

	while (((uint64_t) 1 << log_kp) < k)
		log_kp++;
	for (size_t m = n / 4096; m > 1; m /= 16)
		launches++;
	t = launches * c->launch_s + n * c->bitonic_s_per_key[log_kp] * (key_width == 8 ? 1.5 : 1.0);
	if (mode == TOPK_WITH_TIES)
		t += 2 * c->launch_s + (double) n * key_width / c->read_bytes_per_s;
	return t;
}

static double
radix_cost(const GpuTopkCalibration *c, size_t n, int key_width)
{
	int			launches = key_width == 4 ? 9 : 15;

	/* two full reads (histogram, classify) and per-key work */
	return launches * c->launch_s + 2.0 * n * key_width / c->read_bytes_per_s;
}

static double
inner_cost(const GpuTopkCalibration *c, GpuTopkAlgorithm a, size_t n, uint64_t k,
		   int key_width, TopkMode mode)
{
	return a == GPU_TOPK_BITONIC ? bitonic_cost(c, n, k, key_width, mode) :
		radix_cost(c, n, key_width);
}

static double
plan_cost(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, GpuTopkPlan plan)
{
	size_t		s;
	size_t		m;
	size_t		cand;

	if (plan.log_subrange <= 0)
		return inner_cost(c, plan.algorithm, n, k, key_width, mode);
	s = (size_t) 1 << plan.log_subrange;
	m = (n + s - 1) / s;
	cand = std::min<size_t>((size_t) std::min<uint64_t>(k, m) * s, n);
	return 3 * c->launch_s + (double) n * key_width / c->read_bytes_per_s +
		inner_cost(c, plan.algorithm, m, k, key_width, mode) +
		(double) cand * key_width / c->read_bytes_per_s +
		inner_cost(c, plan.algorithm, cand, k, key_width, mode);
}

static GpuTopkPlan
best_plan(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, bool delegates, double *seconds)
{
	GpuTopkPlan best = {GPU_TOPK_RADIX, 0};
	double		best_t = plan_cost(c, n, k, key_width, mode, best);

	for (int a = GPU_TOPK_BITONIC; a <= GPU_TOPK_RADIX; a++)
	{
		if (a == GPU_TOPK_BITONIC && k > BITONIC_MAX_K)
			continue;
		for (int log_s = 0; log_s <= (delegates ? MAX_LOG_SUBRANGE : 0); log_s++)
		{
			GpuTopkPlan p = {(GpuTopkAlgorithm) a, log_s};
			double		pt;

			if (log_s > 0 && (log_s < MIN_LOG_SUBRANGE || ((size_t) 1 << log_s) >= n))
				continue;
			pt = plan_cost(c, n, k, key_width, mode, p);
			if (pt < best_t)
			{
				best = p;
				best_t = pt;
			}
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

/* keys from a hash of their position: distinct enough to calibrate radix */
template <typename K>
__global__ void
fill_hashed(K *keys, size_t n)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		unsigned long long z = i * 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		keys[i] = (K) (z ^ (z >> 31));
	}
}

__global__ void
empty_kernel(void)
{
}

/* Median-free timing: the fastest of a few runs of fn on stream s. */
template <typename F>
static GpuStatus
time_best(cudaStream_t s, int runs, F fn, double *seconds)
{
	cudaEvent_t a;
	cudaEvent_t b;
	float		best = 1e30f;

	GPU_CHECK(cudaEventCreate(&a), "Creating an event");
	GPU_CHECK(cudaEventCreate(&b), "Creating an event");
	for (int r = 0; r < runs + 1; r++)
	{
		float		ms;

		cudaEventRecord(a, s);
		fn();
		cudaEventRecord(b, s);
		GPU_CHECK(cudaEventSynchronize(b), "Timing a calibration run");
		cudaEventElapsedTime(&ms, a, b);
		if (r > 0 && ms < best)	/* the first run warms up */
			best = ms;
	}
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	*seconds = best / 1000.0;
	return launched("Running a calibration kernel");
}

static GpuStatus
calibrate(void)
{
	GpuTopkCalibration c;
	Device		dev;
	uint32_t   *keys = NULL;
	uint32_t   *delegates = NULL;
	void	   *host = NULL;
	void	   *arena_mem = NULL;
	Scalars    *sc = NULL;
	double		t = 0;
	int			device;
	GpuStatus	status = GPU_OK;
	size_t		copy_bytes = (size_t) 64 << 20;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	GPU_CHECK(cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, device),
			  "Reading device properties");
	GPU_CHECK(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking), "Creating a stream");
	memset(&c, 0, sizeof(c));

#define CAL(call, what) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { status = gpu_fail(e_, what); goto done; } } while (0)
#define CAL_STATUS(call) \
	do { status = (call); if (status != GPU_OK) goto done; } while (0)

	CAL(cudaMalloc(&keys, CALIBRATION_KEYS * sizeof(uint32_t)), "Allocating calibration memory");
	CAL(cudaMalloc(&sc, sizeof(Scalars)), "Allocating calibration memory");
	CAL(cudaMalloc(&delegates, (CALIBRATION_KEYS >> 12) * sizeof(uint32_t)),
		"Allocating calibration memory");
	fill_hashed<uint32_t><<<1024, 256, 0, dev.stream>>>(keys, CALIBRATION_KEYS);

	CAL_STATUS(time_best(dev.stream, 3, [&] {
		subrange_max<uint32_t>(dev, keys, CALIBRATION_KEYS, 12, delegates);
	}, &t));
	c.read_bytes_per_s = CALIBRATION_KEYS * sizeof(uint32_t) / t;

	CAL_STATUS(time_best(dev.stream, 3, [&] {
		for (int i = 0; i < 100; i++)
			empty_kernel<<<1, 32, 0, dev.stream>>>();
	}, &t));
	c.launch_s = t / 100;

	CAL(cudaHostAlloc(&host, copy_bytes, cudaHostAllocDefault), "Allocating calibration memory");
	memset(host, 0x5a, copy_bytes);
	CAL_STATUS(time_best(dev.stream, 3, [&] {
		cudaMemcpyAsync(keys, host, copy_bytes, cudaMemcpyHostToDevice, dev.stream);
	}, &t));
	c.copy_bytes_per_s = copy_bytes / t;

	fill_hashed<uint32_t><<<1024, 256, 0, dev.stream>>>(keys, CALIBRATION_ALGO_KEYS);
	CAL(cudaMalloc(&arena_mem, bitonic_arena_bytes<uint32_t>(CALIBRATION_ALGO_KEYS, BITONIC_MAX_K)),
		"Allocating calibration memory");
	for (int log_kp = 0; (1u << log_kp) <= BITONIC_MAX_K; log_kp++)
	{
		Keys<uint32_t> in = {keys, NULL, 0, (uint32_t) CALIBRATION_ALGO_KEYS, NULL};
		Sink<uint32_t> out = {keys + CALIBRATION_ALGO_KEYS, (Ref *) (keys + CALIBRATION_ALGO_KEYS + 1024),
			BITONIC_MAX_K, &sc->answer_count};

		CAL_STATUS(time_best(dev.stream, 2, [&] {
			Arena		a = {(char *) arena_mem,
				bitonic_arena_bytes<uint32_t>(CALIBRATION_ALGO_KEYS, BITONIC_MAX_K), 0};

			bitonic_topk<uint32_t>(dev, in, (uint64_t) 1 << log_kp, out, a);
		}, &t));
		c.bitonic_s_per_key[log_kp] = t / CALIBRATION_ALGO_KEYS;
	}
	calibration = c;
	calibrated = true;

done:
	if (keys)
		cudaFree(keys);
	if (delegates)
		cudaFree(delegates);
	if (sc)
		cudaFree(sc);
	if (arena_mem)
		cudaFree(arena_mem);
	if (host)
		cudaFreeHost(host);
	cudaStreamDestroy(dev.stream);
	return status;
#undef CAL
#undef CAL_STATUS
}

/* ---------------------------------------------------------------- C API */

extern "C" GpuStatus
gpu_topk_calibration(GpuTopkCalibration *cal)
{
	if (!calibrated)
		TRY(calibrate());
	*cal = calibration;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_estimate(size_t n, uint64_t k, int key_width, TopkMode mode,
				  GpuTopkPlan plan, double *seconds)
{
	if (!calibrated)
		TRY(calibrate());
	plan.algorithm = valid_algorithm(plan.algorithm, k);
	*seconds = plan_cost(&calibration, n, k, key_width, mode, plan);
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_choose(size_t n, uint64_t k, int key_width, TopkMode mode,
				GpuTopkPlan *plan, double *seconds)
{
	if (!calibrated)
		TRY(calibrate());
	*plan = best_plan(&calibration, n, k, key_width, mode, true, seconds);
	return GPU_OK;
}

static GpuStatus
setup(GpuTopk *t)
{
	int			device;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	GPU_CHECK(cudaDeviceGetAttribute(&t->dev.sm_count, cudaDevAttrMultiProcessorCount, device),
			  "Reading device properties");
	GPU_CHECK(cudaStreamCreateWithFlags(&t->dev.stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaStreamCreateWithFlags(&t->copy_stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaMalloc((void **) &t->sc, sizeof(Scalars)), "Allocating device memory");
	GPU_CHECK(cudaHostAlloc((void **) &t->host_count, sizeof(uint32_t), cudaHostAllocDefault),
			  "Allocating pinned memory");
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		GPU_CHECK(cudaEventCreateWithFlags(&t->copied[i], cudaEventDisableTiming), "Creating an event");
		GPU_CHECK(cudaEventCreateWithFlags(&t->consumed[i], cudaEventDisableTiming), "Creating an event");
	}
	return GPU_OK;
}

extern "C" GpuStatus
gpu_topk_create(int key_width, uint64_t k, TopkMode mode, GpuTopk **out)
{
	GpuTopk    *t;
	GpuStatus	status;

	*out = NULL;
	if (!calibrated)
		TRY(calibrate());
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
		if (t->copied[i])
			cudaEventDestroy(t->copied[i]);
		if (t->consumed[i])
			cudaEventDestroy(t->consumed[i]);
	}
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
		p = best_plan(&calibration, n, t->k, t->key_width, t->mode, true, NULL);
	p.algorithm = valid_algorithm(p.algorithm, t->k);
	if (used)
		*used = p;
	if (t->key_width == 4)
		return device_run<uint32_t>(t, (const uint32_t *) dev_keys, n, p);
	return device_run<uint64_t>(t, (const uint64_t *) dev_keys, n, p);
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
