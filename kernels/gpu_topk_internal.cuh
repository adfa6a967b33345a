/*
 * gpu_topk_internal.cuh
 *	  What the files of the GPU top-k engine share: the object (struct
 *	  GpuTopk), its counters on the device, small helpers, and the functions
 *	  that one file calls in another.  Not part of the C interface.
 *
 * The engine is layered like CUB (API, tuning, dispatch, agents); each file
 * calls only the files listed below it:
 *	 gpu_topk_plan.cu		the C entry points that use the current device's
 *							model: estimates, the best plan, selections from
 *							device memory with the model's plan (the API)
 *	 gpu_topk_stream.cu		streamed runs: keys from host memory; the answer
 *							of any run read out (gpu_topk_result)
 *	 gpu_topk_calibrate.cu	the model's parameters, measured on the device
 *	 gpu_topk_cost.cu		the cost model: host arithmetic over a calibration
 *							(the tuning; calls no other file)
 *	 gpu_topk.cu			the object, a given plan's runs over device-resident
 *							keys, the sorted answer (the dispatch)
 *	 select_*.cu			the device selection algorithms (the agents;
 *							select_common.cuh)
 */
#ifndef GPU_TOPK_INTERNAL_CUH
#define GPU_TOPK_INTERNAL_CUH

#include <stdint.h>

#include "gpu_error.h"
#include "gpu_resources.cuh"
#include "gpu_topk.h"
#include "select_common.cuh"

/* batches of a streamed run on the device at once: copied, or being consumed */
#define STREAM_SLOTS 3
/* keys per batch of a streamed run, until gpu_topk_set_stream_batch */
#define STREAM_BATCH_DEFAULT ((size_t) 1 << 23)
/* the subrange sizes the cost model considers for delegates */
#define MIN_LOG_SUBRANGE 7
#define MAX_LOG_SUBRANGE 14

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

struct GpuTopk
{
	int			key_width;
	uint64_t	k;
	TopkMode	mode;
	GpuTopkAlgorithm algorithm; /* forced for streamed runs, or AUTO */
	GpuTopkPlan last_plan;		/* the plan of the last selection */
	topk::Device dev;
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
	size_t		stream_batch;	/* keys per batch, which sizes the slots */
	bool		streaming;
	uint64_t	pushed;
	DevBuf		slot[STREAM_SLOTS];
	Span		copy[STREAM_SLOTS];		/* a slot's copy, on copy_stream */
	Span		kernels[STREAM_SLOTS];	/* and the kernels that consume it */
	bool		slot_busy[STREAM_SLOTS];	/* its spans not yet read */
	Span		finish;			/* the last compaction and the sort */
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

/*
 * At least bytes in b; the contents are lost when it grows.  A quarter more
 * than asked, so that sizes creeping up (answers with ties, say) do not
 * reallocate each time.
 */
static inline GpuStatus
ensure(DevBuf *b, size_t bytes)
{
	return devbuf_reserve(b, bytes, bytes / 4);
}

/* Launches report a bad configuration only through cudaGetLastError. */
static inline GpuStatus
launched(const char *action)
{
	GPU_CHECK(cudaGetLastError(), action);
	return GPU_OK;
}

static inline GpuStatus
wait_stream(cudaStream_t stream)
{
	GPU_CHECK(cudaStreamSynchronize(stream), "Running the top-k kernels");
	return GPU_OK;
}

/* A count the kernels left on the device: a round trip, so used sparingly. */
static inline GpuStatus
read_count(GpuTopk *t, const uint32_t *d_count, uint32_t *count)
{
	GPU_CHECK(cudaMemcpyAsync(t->host_count, d_count, sizeof(uint32_t),
							  cudaMemcpyDeviceToHost, t->dev.stream),
			  "Reading a count from the device");
	GPU_TRY(wait_stream(t->dev.stream));
	*count = *t->host_count;
	return GPU_OK;
}

/* The algorithm that runs when a is asked for: bitonic only up to its k. */
static inline GpuTopkAlgorithm
valid_algorithm(GpuTopkAlgorithm a, uint64_t k)
{
	return (a == GPU_TOPK_BITONIC && k <= topk::BITONIC_MAX_K) ? GPU_TOPK_BITONIC : GPU_TOPK_RADIX;
}

/*
 * gpu_topk.cu: plans and the answer, for streamed runs and calibration too
 * (instantiated for uint32_t and uint64_t keys)
 */
template <typename K>
GpuStatus	run_plan(GpuTopk *t, topk::Keys<K> in, GpuTopkPlan plan, topk::Sink<K> out);
template <typename K>
GpuStatus	ensure_answer(GpuTopk *t, size_t count);
template <typename K>
GpuStatus	sort_answer(GpuTopk *t);
template <typename K>
GpuStatus	copy_answer(GpuTopk *t, TopkResult *result);
extern GpuStatus run_device_plan(GpuTopk *t, const void *dev_keys, size_t n,
								 GpuTopkPlan p, GpuTopkPlan *used);

/* gpu_topk_cost.cu: the model (see GpuTopkCalibration in gpu_topk.h) */
extern const int gpu_topk_correction_log_n[GPU_TOPK_CORRECTION_N];
extern const int gpu_topk_correction_log_k[GPU_TOPK_CORRECTION_K];
extern int	width_index(int key_width);
extern void plan_features(size_t n, uint64_t k, bool delegates, double x[5]);
extern GpuTopkPlan family_plan(GpuTopkFamily f, size_t n, uint64_t k);
extern bool plan_applies(GpuTopkFamily f, size_t n, uint64_t k);
extern double line_cost(const GpuTopkCalibration *c, int w, GpuTopkFamily f, size_t n,
						uint64_t k);
extern double plan_cost(const GpuTopkCalibration *c, size_t n, uint64_t k,
						int key_width, TopkMode mode, GpuTopkPlan plan);
extern GpuTopkPlan best_plan(const GpuTopkCalibration *c, size_t n, uint64_t k,
							 int key_width, TopkMode mode, bool delegates,
							 double *seconds);

/* gpu_topk_calibrate.cu: the model's parameters, measured on first use */
extern GpuStatus current_calibration(const GpuTopkCalibration **cal);

#endif							/* GPU_TOPK_INTERNAL_CUH */
