/*
 * gpu_topk.cu
 *	  The GPU top-k engine's object, and a given plan's runs over keys in
 *	  device memory with the sorted answer: the layer that every other
 *	  gpu_topk_*.cu file runs plans through, and which calls none of them.
 *
 * A plan is bitonic or radix top-k, optionally behind delegate filtering
 * (see gpu_topk.h).  A device-resident run enqueues the whole plan on the
 * object's stream and waits once; a streamed run (gpu_topk_stream.cu) runs
 * plans over its candidates.  Either way the answer ends up in ans_*, is
 * sorted there (one block for small answers, CUB's radix sort beyond) and
 * packed into (key, reference) items that go to page-locked host memory.
 * Device memory only grows and is kept from run to run.  Which plan runs
 * is the caller's: the cost model's choice (gpu_topk_plan.cu,
 * gpu_topk_stream.cu) or a forced one (gpu_topk_calibrate.cu).
 */
#include <stdlib.h>

#include <algorithm>

#include <cub/device/device_radix_sort.cuh>

#include "gpu_topk_internal.cuh"

using namespace topk;

/* ---------------------------------------------------------------- plans */

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
GpuStatus
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
		GPU_TRY(ensure(&t->arena, inner_bytes<K>(algorithm, in.n, t->k)));
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
	GPU_TRY(ensure(&t->arena, arena_bytes<K>(m) + arena_bytes<K>(sel_cap) +
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
	GPU_TRY(launched("Launching the delegate kernels"));
	if (t->mode == TOPK_WITH_TIES)
	{
		uint32_t	selected = 0;

		GPU_TRY(read_count(t, sel.d_count, &selected));
		cand_cap = std::min((uint64_t) selected * s, (uint64_t) in.n);
	}
	GPU_TRY(ensure(&t->cand_keys, sizeof(K) * (cand_cap ? cand_cap : 1)));
	GPU_TRY(ensure(&t->cand_refs, sizeof(Ref) * (cand_cap ? cand_cap : 1)));

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

template GpuStatus run_plan<uint32_t>(GpuTopk *, Keys<uint32_t>, GpuTopkPlan, Sink<uint32_t>);
template GpuStatus run_plan<uint64_t>(GpuTopk *, Keys<uint64_t>, GpuTopkPlan, Sink<uint64_t>);

/* ------------------------------------------------------ the answer, sorted */

/* Make room for an answer of count keys in both halves of ans_*. */
template <typename K>
GpuStatus
ensure_answer(GpuTopk *t, size_t count)
{
	count = count ? count : 1;
	for (int i = 0; i < 2; i++)
	{
		GPU_TRY(ensure(&t->ans_keys[i], sizeof(K) * count));
		GPU_TRY(ensure(&t->ans_refs[i], sizeof(Ref) * count));
	}
	return GPU_OK;
}

/* Sort the answer in ans_*[t->ans] by descending key. */
template <typename K>
GpuStatus
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
	GPU_TRY(ensure(&t->sort_temp, temp));
	GPU_CHECK(cub::DeviceRadixSort::SortPairsDescending(t->sort_temp.ptr, temp, keys, refs,
														(int) t->answer_count, 0,
														(int) sizeof(K) * 8, t->dev.stream),
			  "Sorting the answer");
	t->ans = keys.Current() == (K *) t->ans_keys[0].ptr ? 0 : 1;
	return GPU_OK;
}

template GpuStatus ensure_answer<uint32_t>(GpuTopk *, size_t);
template GpuStatus ensure_answer<uint64_t>(GpuTopk *, size_t);
template GpuStatus sort_answer<uint32_t>(GpuTopk *);
template GpuStatus sort_answer<uint64_t>(GpuTopk *);

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

/* Copy the sorted answer in ans_*[t->ans] to page-locked host memory. */
template <typename K>
GpuStatus
copy_answer(GpuTopk *t, TopkResult *result)
{
	size_t		count = t->answer_count;

	if (count > t->host_cap)
	{
		pinned_free(t->host_items);
		t->host_items = NULL;
		t->host_cap = 0;
		GPU_CHECK(cudaHostAlloc((void **) &t->host_items, count * sizeof(TopkItem),
								cudaHostAllocDefault),
				  "Allocating pinned memory for the answer");
		t->host_cap = count;
	}
	if (count > 0)
	{
		GPU_TRY(ensure(&t->items, count * sizeof(TopkItem)));
		pack_items<K><<<(unsigned) std::min<size_t>((count + 255) / 256, 1024), 256, 0, t->dev.stream>>>(
			(const K *) t->ans_keys[t->ans].ptr, (const Ref *) t->ans_refs[t->ans].ptr,
			count, (TopkItem *) t->items.ptr);
		GPU_TRY(launched("Packing the answer"));
		GPU_CHECK(cudaMemcpyAsync(t->host_items, t->items.ptr, count * sizeof(TopkItem),
								  cudaMemcpyDeviceToHost, t->dev.stream),
				  "Copying the answer to the host");
		GPU_TRY(wait_stream(t->dev.stream));
	}
	result->items = t->host_items;
	result->count = count;
	return GPU_OK;
}

template GpuStatus copy_answer<uint32_t>(GpuTopk *, TopkResult *);
template GpuStatus copy_answer<uint64_t>(GpuTopk *, TopkResult *);

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

		GPU_TRY(ensure_answer<K>(t, cap));
		GPU_CHECK(cudaMemsetAsync(t->sc, 0, sizeof(Scalars), t->dev.stream),
				  "Clearing the top-k counters");
		out.keys = (K *) t->ans_keys[0].ptr;
		out.refs = (Ref *) t->ans_refs[0].ptr;
		out.cap = (uint32_t) cap;
		out.d_count = &t->sc->answer_count;
		GPU_TRY(run_plan<K>(t, in, plan, out));
		if (t->mode == TOPK_EXACT)
		{
			t->answer_count = cap;	/* exactly min(k, n) */
			break;
		}
		GPU_TRY(read_count(t, out.d_count, &count));
		if (count <= cap)
		{
			t->answer_count = count;
			break;
		}
		cap = count;			/* more ties than room: once more, larger */
	}
	/* bitonic's exact answer comes out sorted; every other is in any order */
	if (!(valid_algorithm(plan.algorithm, t->k) == GPU_TOPK_BITONIC &&
		  t->mode == TOPK_EXACT))
		GPU_TRY(sort_answer<K>(t));
	return wait_stream(t->dev.stream);
}

/*
 * A device-resident run of plan p over the n keys at dev_keys, which the
 * caller has checked (see gpu_topk_device); *used (if set) gets the plan
 * that runs.
 */
GpuStatus
run_device_plan(GpuTopk *t, const void *dev_keys, size_t n, GpuTopkPlan p,
				GpuTopkPlan *used)
{
	p.algorithm = valid_algorithm(p.algorithm, t->k);
	/* a forced subrange size beyond what the delegate kernels run is clamped */
	if (p.log_subrange > 0)
		p.log_subrange = std::max(MIN_LOG_SUBRANGE, std::min(MAX_LOG_SUBRANGE, p.log_subrange));
	if (used)
		*used = p;
	t->last_plan = p;
	if (t->key_width == 4)
		return device_run<uint32_t>(t, (const uint32_t *) dev_keys, n, p);
	return device_run<uint64_t>(t, (const uint64_t *) dev_keys, n, p);
}

/* --------------------------------------------------------------- object */

/*
 * The object's resources on the current device, which it then belongs to:
 * its streams (copies of the next batch overlap kernels over the last
 * one), the device's shape for the launches, and the events that order
 * and time streamed runs.  Device memory comes later, as runs need it.
 */
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
	/* radix's one-launch path for small inputs needs cooperative launches */
	t->dev.cooperative = cooperative != 0;
	GPU_CHECK(cudaStreamCreateWithFlags(&t->dev.stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaStreamCreateWithFlags(&t->copy_stream, cudaStreamNonBlocking), "Creating a stream");
	GPU_CHECK(cudaMalloc((void **) &t->sc, sizeof(Scalars)), "Allocating device memory");
	GPU_CHECK(cudaHostAlloc((void **) &t->host_count, sizeof(uint32_t), cudaHostAllocDefault),
			  "Allocating pinned memory");
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		GPU_TRY(span_create(&t->copy[i]));
		GPU_TRY(span_create(&t->kernels[i]));
	}
	return span_create(&t->finish);
}

/* A new top-k's parameters, as gpu_topk_create and gpu_topk_reset leave them. */
static void
configure(GpuTopk *t, int key_width, uint64_t k, TopkMode mode)
{
	t->key_width = key_width;
	t->k = k;
	t->mode = mode;
	t->algorithm = GPU_TOPK_AUTO;
	t->last_plan = {GPU_TOPK_AUTO, 0};
	t->stream_batch = STREAM_BATCH_DEFAULT;
	t->pushed = 0;
	t->copy_ms = 0;
	t->kernel_ms = 0;
}

/* Free the memory that runs grow (no queued work may use it). */
static void
free_run_memory(GpuTopk *t)
{
	devbuf_free(&t->arena);
	devbuf_free(&t->cand_keys);
	devbuf_free(&t->cand_refs);
	for (int i = 0; i < 2; i++)
	{
		devbuf_free(&t->ans_keys[i]);
		devbuf_free(&t->ans_refs[i]);
		devbuf_free(&t->set_keys[i]);
		devbuf_free(&t->set_refs[i]);
	}
	devbuf_free(&t->sort_temp);
	devbuf_free(&t->items);
	for (int i = 0; i < STREAM_SLOTS; i++)
		devbuf_free(&t->slot[i]);
	pinned_free(t->host_items);
	t->host_items = NULL;
	t->host_cap = 0;
}

extern "C" GpuStatus
gpu_topk_create(int key_width, uint64_t k, TopkMode mode, GpuTopk **out)
{
	return object_create("Allocating the top-k state", [&](GpuTopk *t) {
		configure(t, key_width, k, mode);
		return setup(t);
	}, gpu_topk_destroy, out);
}

extern "C" void
gpu_topk_destroy(GpuTopk *t)
{
	if (t == NULL)
		return;
	/* queued work may still use the buffers, the object's and the caller's */
	stream_drain(t->dev.stream);
	stream_drain(t->copy_stream);
	free_run_memory(t);
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		span_destroy(&t->copy[i]);
		span_destroy(&t->kernels[i]);
	}
	span_destroy(&t->finish);
	if (t->sc)
		cudaFree(t->sc);
	pinned_free(t->host_count);
	stream_destroy(t->dev.stream);
	stream_destroy(t->copy_stream);
	delete t;
}

/*
 * Forget a streamed run in progress, once the caller has waited for its
 * queued work: its batches' spans are never read.
 */
static void
stream_abandon(GpuTopk *t)
{
	t->streaming = false;
	for (int i = 0; i < STREAM_SLOTS; i++)
		t->slot_busy[i] = false;
}

/*
 * Wait for t's queued work, so that its memory and the caller's buffers are
 * free, and leave no run in progress and no answer; then the new top-k's
 * parameters.
 */
extern "C" GpuStatus
gpu_topk_reset(GpuTopk *t, int key_width, uint64_t k, TopkMode mode)
{
	GPU_CHECK(cudaStreamSynchronize(t->copy_stream), "Copying keys to the device");
	GPU_TRY(wait_stream(t->dev.stream));
	stream_abandon(t);
	t->ans = 0;
	t->answer_count = 0;
	configure(t, key_width, k, mode);
	return GPU_OK;
}

extern "C" GpuTopkPlan
gpu_topk_last_plan(const GpuTopk *t)
{
	return t->last_plan;
}
