/*
 * gpu_topk_stream.cu
 *	  Streamed runs of the GPU top-k engine: keys pushed from host memory.
 *
 * Batches of up to stream_batch keys (the object's; 2^23 unless set) are
 * copied on the copy stream into STREAM_SLOTS device slots while the
 * compute stream appends the keys of earlier batches that beat the running
 * cut (the k-th key so far) to a candidate set.  Events order the two streams: a batch's kernels wait for
 * its copy, and a slot is copied into again only once its kernels have
 * consumed it, so copies overlap kernels and the host waits only when all
 * slots are in flight.  When the set could overflow, a plan compacts it to
 * the answer so far and raises the cut; the result is a last compaction.
 * The same events time the run's copies and kernels on the device.  The
 * answer, of a streamed run or a device-resident one, is read with
 * gpu_topk_result, which lives here because it first finishes a streamed
 * run in progress.
 */
#include <algorithm>

#include "gpu_topk_internal.cuh"

using namespace topk;

/* the most keys a batch may hold: SET_BATCHES of them stay below 2^31 */
#define STREAM_BATCH_MAX ((size_t) 1 << 28)

/*
 * Room in the candidate set beyond k: SET_BATCHES batches, and at least
 * SET_MIN_ROOM keys.  The room is what fills between two compactions when
 * every key beats the cut (input in ascending order), and each compaction
 * has a fixed cost besides its plan's work: a few launches and, with ties,
 * a wait for its count, tens of microseconds.  Four batches of the default
 * 2^23 keys make that nothing; four of the 256Ki keys the GPU service may
 * push are 1Mi keys (4 MiB of 4-byte keys, 80 us of copies at 55 GB/s),
 * where it counts.  2^22 keys (16 or 32 MiB, 0.3 or 0.6 ms of copies) keep
 * it to about a tenth of the copies or less, for a set of 2 x (k + 2^22)
 * keys and references: 96 MiB (4-byte keys) or 128 MiB (8-byte keys)
 * beyond k, against 1 GiB for 8-byte keys at the default batch.
 */
#define SET_BATCHES 4
#define SET_MIN_ROOM ((size_t) 1 << 22)

template <typename K>
static GpuStatus
start_streaming(GpuTopk *t)
{
	const GpuTopkCalibration *cal;

	/* compactions consult the cost model, unless forced: calibrate before copies start */
	if (t->algorithm == GPU_TOPK_AUTO)
		GPU_TRY(current_calibration(&cal));
	t->set_cap = (size_t) t->k + std::max(SET_BATCHES * t->stream_batch, SET_MIN_ROOM);
	if (t->set_cap > UINT32_MAX / 2)
		t->set_cap = UINT32_MAX / 2;
	for (int i = 0; i < STREAM_SLOTS; i++)
	{
		GPU_TRY(ensure(&t->slot[i], t->stream_batch * sizeof(K)));
		t->slot_busy[i] = false;
	}
	for (int i = 0; i < 2; i++)
	{
		GPU_TRY(ensure(&t->set_keys[i], t->set_cap * sizeof(K)));
		GPU_TRY(ensure(&t->set_refs[i], t->set_cap * sizeof(Ref)));
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

/* The time a batch slot's copy and kernels took on the device, once they are done. */
static GpuStatus
add_slot_times(GpuTopk *t, int i)
{
	GPU_TRY(span_add_ms(&t->copy[i], &t->copy_ms));
	GPU_TRY(span_add_ms(&t->kernels[i], &t->kernel_ms));
	t->slot_busy[i] = false;
	return GPU_OK;
}

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
	const GpuTopkCalibration *cal;

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
	/* the candidates have explicit references: delegates do not apply */
	if (t->algorithm == GPU_TOPK_AUTO)
	{
		GPU_TRY(current_calibration(&cal));
		t->last_plan = best_plan(cal, in.n, t->k, sizeof(K), t->mode, false, NULL);
	}
	else
		t->last_plan = {t->algorithm, 0};
	t->last_plan.algorithm = valid_algorithm(t->last_plan.algorithm, t->k);
	GPU_TRY(run_plan<K>(t, in, t->last_plan, out));
	min_key<K>(t->dev, out.keys, out.d_count, out.cap, t->k, (K *) &t->sc->cut, &t->sc->has_cut);
	GPU_TRY(launched("Launching the top-k kernels"));
	t->set = other;
	/* an exact answer holds at most k: no round trip for its count */
	if (t->mode == TOPK_EXACT)
	{
		t->set_bound = std::min<uint64_t>(t->set_bound, t->k);
		return GPU_OK;
	}
	GPU_TRY(read_count(t, out.d_count, &count));
	t->set_bound = count;
	if (count + t->stream_batch > t->set_cap)
	{
		/* keep the tied candidates and make room for more */
		size_t		cap = 2 * ((size_t) count + t->stream_batch);

		GPU_TRY(ensure(&t->set_keys[1 - other], cap * sizeof(K)));
		GPU_TRY(ensure(&t->set_refs[1 - other], cap * sizeof(Ref)));
		GPU_CHECK(cudaMemcpyAsync(t->set_keys[1 - other].ptr, out.keys, count * sizeof(K),
								  cudaMemcpyDeviceToDevice, t->dev.stream), "Growing the candidate set");
		GPU_CHECK(cudaMemcpyAsync(t->set_refs[1 - other].ptr, out.refs, count * sizeof(Ref),
								  cudaMemcpyDeviceToDevice, t->dev.stream), "Growing the candidate set");
		GPU_CHECK(cudaMemcpyAsync(&t->sc->set_count[1 - other], &t->sc->set_count[other],
								  sizeof(uint32_t), cudaMemcpyDeviceToDevice, t->dev.stream),
				  "Growing the candidate set");
		GPU_TRY(wait_stream(t->dev.stream));
		t->set = 1 - other;
		GPU_TRY(ensure(&t->set_keys[other], cap * sizeof(K)));
		GPU_TRY(ensure(&t->set_refs[other], cap * sizeof(Ref)));
		t->set_cap = cap;
	}
	return GPU_OK;
}

/*
 * Enqueue the filter of a batch of n keys on the device (references: refs,
 * or the next ordinals) against the running cut, into the candidate set.
 */
template <typename K>
static GpuStatus
append_batch(GpuTopk *t, const K *keys, const Ref *refs, size_t n)
{
	Keys<K>		in;
	Sink<K>		set;

	/* every key of the batch may pass the cut: make room for all of them */
	if (t->set_bound + n > t->set_cap)
		GPU_TRY(compact<K>(t));
	in.keys = keys;
	in.refs = refs;
	in.base = t->pushed;
	in.n = (uint32_t) n;
	in.d_n = NULL;
	set.keys = (K *) t->set_keys[t->set].ptr;
	set.refs = (Ref *) t->set_refs[t->set].ptr;
	set.cap = (uint32_t) t->set_cap;
	set.d_count = &t->sc->set_count[t->set];
	append_above<K>(t->dev, in, &t->sc->has_cut, (const K *) &t->sc->cut,
					t->mode == TOPK_WITH_TIES, set);
	return launched("Launching the streaming filter");
}

template <typename K>
static GpuStatus
push_keys(GpuTopk *t, const K *host, size_t n)
{
	if (!t->streaming)
		GPU_TRY(start_streaming<K>(t));
	while (n > 0)
	{
		size_t		chunk = std::min(n, t->stream_batch);
		int			i = t->next_slot;
		Keys<K>		in;
		Sink<K>		set;

		/* the slot's last batch must have been read before it is overwritten */
		if (t->slot_busy[i])
		{
			GPU_CHECK(cudaEventSynchronize(t->kernels[i].ended), "Waiting for a batch slot");
			GPU_TRY(add_slot_times(t, i));
		}
		GPU_CHECK(cudaEventRecord(t->copy[i].begun, t->copy_stream), "Recording an event");
		GPU_CHECK(cudaMemcpyAsync(t->slot[i].ptr, host, chunk * sizeof(K),
								  cudaMemcpyHostToDevice, t->copy_stream),
				  "Copying keys to the device");
		GPU_CHECK(cudaEventRecord(t->copy[i].ended, t->copy_stream), "Recording an event");
		/* the kernels wait for the copy on the device; the host goes on */
		GPU_CHECK(cudaStreamWaitEvent(t->dev.stream, t->copy[i].ended, 0), "Waiting for an event");
		GPU_CHECK(cudaEventRecord(t->kernels[i].begun, t->dev.stream), "Recording an event");
		GPU_TRY(append_batch<K>(t, (const K *) t->slot[i].ptr, NULL, chunk));
		GPU_CHECK(cudaEventRecord(t->kernels[i].ended, t->dev.stream), "Recording an event");
		t->slot_busy[i] = true;
		t->next_slot = (i + 1) % STREAM_SLOTS;
		t->set_bound += chunk;
		t->pushed += chunk;
		host += chunk;
		n -= chunk;
	}
	return GPU_OK;
}

/*
 * Keys already on the device, with their references, into the run: the
 * same filter as a batch from the host, on the compute stream, waited for.
 */
template <typename K>
static GpuStatus
push_device_keys(GpuTopk *t, const K *keys, const Ref *refs, size_t n)
{
	if (!t->streaming)
		GPU_TRY(start_streaming<K>(t));
	while (n > 0)
	{
		size_t		chunk = std::min(n, t->stream_batch);

		GPU_TRY(append_batch<K>(t, keys, refs, chunk));
		t->set_bound += chunk;
		t->pushed += chunk;
		keys += chunk;
		refs += chunk;
		n -= chunk;
	}
	return wait_stream(t->dev.stream);
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
	GPU_CHECK(cudaEventRecord(t->finish.begun, t->dev.stream), "Recording an event");
	GPU_TRY(compact<K>(t));
	GPU_TRY(read_count(t, &t->sc->set_count[t->set], &count));
	GPU_TRY(ensure_answer<K>(t, count));
	GPU_CHECK(cudaMemcpyAsync(t->ans_keys[0].ptr, t->set_keys[t->set].ptr, count * sizeof(K),
							  cudaMemcpyDeviceToDevice, t->dev.stream), "Copying the answer");
	GPU_CHECK(cudaMemcpyAsync(t->ans_refs[0].ptr, t->set_refs[t->set].ptr, count * sizeof(Ref),
							  cudaMemcpyDeviceToDevice, t->dev.stream), "Copying the answer");
	t->ans = 0;
	t->answer_count = count;
	GPU_TRY(sort_answer<K>(t));
	GPU_CHECK(cudaEventRecord(t->finish.ended, t->dev.stream), "Recording an event");
	t->streaming = false;
	GPU_TRY(wait_stream(t->dev.stream));
	for (int i = 0; i < STREAM_SLOTS; i++)
		if (t->slot_busy[i])
			GPU_TRY(add_slot_times(t, i));
	return span_add_ms(&t->finish, &t->kernel_ms);
}

/* The streamed answer, sorted in ans_*, once every copy has landed. */
static GpuStatus
stream_finish(GpuTopk *t)
{
	GPU_TRY(gpu_topk_wait_input(t));
	if (t->key_width == 4)
		return finish_streaming<uint32_t>(t);
	return finish_streaming<uint64_t>(t);
}

/* ---------------------------------------------------------------- C API */

extern "C" void
gpu_topk_set_algorithm(GpuTopk *t, GpuTopkAlgorithm algorithm)
{
	t->algorithm = algorithm;
}

extern "C" GpuStatus
gpu_topk_set_stream_batch(GpuTopk *t, size_t keys)
{
	/* the slots and the set of a run in progress are sized from it */
	if (keys == 0 || keys > STREAM_BATCH_MAX || t->streaming)
		return gpu_fail(cudaErrorInvalidValue,
						"Setting the batch of streamed runs (1 to 2^28 keys, not during a run)");
	t->stream_batch = keys;
	return GPU_OK;
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
	/* with k = 0 no key can make the answer: references still count on */
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
gpu_topk_push_device(GpuTopk *t, const void *dev_keys, const uint64_t *dev_refs, size_t n)
{
	if (t->k == 0 || n == 0)
		return GPU_OK;
	if (t->key_width == 4)
		return push_device_keys<uint32_t>(t, (const uint32_t *) dev_keys, (const Ref *) dev_refs, n);
	return push_device_keys<uint64_t>(t, (const uint64_t *) dev_keys, (const Ref *) dev_refs, n);
}

extern "C" GpuStatus
gpu_topk_wait_input(GpuTopk *t)
{
	/* every copy is queued on the copy stream, and only copies are */
	GPU_CHECK(cudaStreamSynchronize(t->copy_stream), "Copying keys to the device");
	return GPU_OK;
}

/*
 * After a streamed run, its last compaction leaves the answer in ans_* like
 * a device-resident run does; from there both are copied out alike.
 */
extern "C" GpuStatus
gpu_topk_result(GpuTopk *t, TopkResult *result)
{
	if (t->streaming)
		GPU_TRY(stream_finish(t));
	if (t->key_width == 4)
		return copy_answer<uint32_t>(t, result);
	return copy_answer<uint64_t>(t, result);
}
