/*
 * select_radix.cu
 *	  Radix top-k for any k (RadiK, ICS'24): most significant digit first,
 *	  11-bit digits, 3 passes for 32-bit keys and 6 for 64-bit keys.
 *
 * Pass 0 counts the first digit of every key into block-local histograms
 * (shared-memory atomics, one atomic for a whole warp when its keys share
 * the digit, as they do on adversarial inputs) merged into a global one.
 * A one-block kernel then finds the bin of the k-th key.  Each later pass
 * classifies the keys that still match the pivot's digits so far: keys in a
 * higher bin are certainly in the answer and go straight to the output,
 * keys in the pivot's bin are counted for the next digit and, once their
 * bin is small enough, compacted into a candidate buffer that the following
 * passes read instead of the input.  After the last digit the pivot is
 * known exactly; the final pass adds the keys equal to it: as many as the
 * answer still needs (TOPK_EXACT) or all of them (TOPK_WITH_TIES).  Appends
 * are aggregated per block (one atomic each), so even an input whose keys
 * are all equal costs few atomics.  Results are exact on every input.
 *
 * Inputs of at most radix_small_max keys (up to 2^22 4-byte keys; the
 * delegates and candidates of most plans) run the same passes in a single
 * cooperative launch, since kernel launches, not bytes, are then what costs.
 */
#include <cooperative_groups.h>

#include "select_common.cuh"

namespace topk
{

constexpr int RADIX_BITS = 11;
constexpr int RADIX_BINS = 1 << RADIX_BITS;
constexpr int SELECT_THREADS = RADIX_BINS / 2;

template <typename K>
__host__ __device__ constexpr int
key_bits()
{
	return (int) sizeof(K) * 8;
}

template <typename K>
__host__ __device__ constexpr int
radix_passes()
{
	return (key_bits<K>() + RADIX_BITS - 1) / RADIX_BITS;
}

/* lowest bit of digit p (digit 0 is the most significant) */
template <typename K>
__host__ __device__ constexpr int
digit_shift(int p)
{
	return key_bits<K>() - RADIX_BITS * (p + 1) > 0 ?
		key_bits<K>() - RADIX_BITS * (p + 1) : 0;
}

template <typename K>
__device__ __forceinline__ uint32_t
digit(K x, int p)
{
	int			shift = digit_shift<K>(p);
	int			bits = key_bits<K>() - RADIX_BITS * p - shift;

	return (uint32_t) ((x >> shift) & ((K(1) << bits) - 1));
}

/* the bits of digits 0..p; none for p < 0 */
template <typename K>
__device__ __forceinline__ K
digits_mask(int p)
{
	return p < 0 ? K(0) : (~K(0)) << digit_shift<K>(p);
}

template <typename K>
struct RadixState
{
	K			prefix;			/* the pivot's digits resolved so far */
	K			prev_prefix;	/* the same, one digit fewer */
	uint32_t	n;
	uint32_t	k_rem;			/* rank of the pivot among keys matching
								 * prefix */
	uint32_t	take_all;		/* k >= n: the answer is every key */
	uint32_t	src;			/* keys are read from: 0 the input, 1 or 2 a
								 * candidate buffer */
	uint32_t	compact;		/* the next pass compacts its candidates */
	uint32_t	cand_count[2];
	uint32_t	eq_taken;		/* keys equal to the pivot taken (exact) */
};

/* the candidate buffers and the clamp on their size */
template <typename K>
struct Buffers
{
	K		   *keys[2];
	Ref		   *refs[2];
	uint32_t	cap;
};

/* Count one digit per thread of a warp into a shared histogram. */
__device__ __forceinline__ void
count_digit(uint32_t *hist, uint32_t d, bool counted)
{
	const unsigned full = 0xffffffffu;
	unsigned	mask = __ballot_sync(full, counted);

	if (mask == full && __reduce_min_sync(full, d) == __reduce_max_sync(full, d))
	{
		if ((threadIdx.x & 31) == 0)
			atomicAdd(&hist[d], 32);
		return;
	}
	if (counted)
		atomicAdd(&hist[d], 1);
}

__device__ __forceinline__ void
zero_hist(uint32_t *hist)
{
	for (int b = threadIdx.x; b < RADIX_BINS; b += blockDim.x)
		hist[b] = 0;
	__syncthreads();
}

__device__ __forceinline__ void
flush_hist(const uint32_t *hist, uint32_t *global)
{
	__syncthreads();
	for (int b = threadIdx.x; b < RADIX_BINS; b += blockDim.x)
		if (hist[b])
			atomicAdd(&global[b], hist[b]);
}

template <typename K>
__global__ void
radix_init(Keys<K> in, uint64_t k, RadixState<K> *st)
{
	uint32_t	n = in.n;

	if (in.d_n && *in.d_n < n)
		n = *in.d_n;
	st->prefix = 0;
	st->prev_prefix = 0;
	st->n = n;
	st->k_rem = k < n ? (uint32_t) k : n;
	st->take_all = k >= n;
	st->src = 0;
	st->compact = 0;
	st->cand_count[0] = st->cand_count[1] = 0;
	st->eq_taken = 0;
}

/* Pass 0: histogram of the first digit of every key. */
template <typename K>
__global__ void __launch_bounds__(BLOCK)
radix_count(Keys<K> in, const RadixState<K> *st, uint32_t *hist)
{
	__shared__ uint32_t sh[RADIX_BINS];

	if (st->take_all)
		return;
	zero_hist(sh);
	for_each_tile(in.keys, st->n,
				  [&](int f, K x, uint32_t index, bool valid) {
					  count_digit(sh, digit(x, 0), valid);
				  },
				  [] {});
	flush_hist(sh, hist);
}

/*
 * Find the bin of digit p that holds the pivot, narrow the prefix to it,
 * and decide whether the next pass compacts.  One block: thread t holds the
 * two bins 2t and 2t + 1 counted from the top.
 */
template <typename K>
__global__ void __launch_bounds__(SELECT_THREADS)
radix_select(RadixState<K> *st, const uint32_t *hist, int p, uint32_t cap)
{
	typedef cub::BlockScan<uint32_t, SELECT_THREADS> Scan;
	__shared__ typename Scan::TempStorage scan;
	uint32_t	count[2];
	uint32_t	above[2];
	uint32_t	k_rem = st->k_rem;

	if (st->take_all)
		return;
	count[0] = hist[RADIX_BINS - 1 - 2 * threadIdx.x];
	count[1] = hist[RADIX_BINS - 2 - 2 * threadIdx.x];
	Scan(scan).ExclusiveSum(count, above);

#pragma unroll
	for (int j = 0; j < 2; j++)
	{
		if (above[j] < k_rem && k_rem <= above[j] + count[j])
		{
			uint32_t	bin = RADIX_BINS - 1 - 2 * threadIdx.x - j;
			uint32_t	src = st->src;

			/* the pass that counted these keys compacted them */
			if (p > 0 && st->compact)
				src = st->src = (src == 1) ? 2 : 1;
			st->prev_prefix = st->prefix;
			st->prefix |= K(bin) << digit_shift<K>(p);
			st->k_rem = k_rem - above[j];
			st->compact = count[j] <= cap;
			if (st->compact)
				st->cand_count[src == 1 ? 1 : 0] = 0;
		}
	}
}

/* where the keys of the current pass are read from */
template <typename K>
struct Source
{
	const K    *keys;
	const Ref  *refs;
	Ref			base;
	uint32_t	n;
	bool		check_prev;		/* the input: skip keys decided earlier */
};

template <typename K>
__device__ __forceinline__ Source<K>
current_source(const Keys<K> &in, const RadixState<K> *st, const Buffers<K> &bufs)
{
	Source<K>	s;

	if (st->src == 0)
	{
		s.keys = in.keys;
		s.refs = in.refs;
		s.base = in.base;
		s.n = st->n;
		s.check_prev = true;
	}
	else
	{
		s.keys = bufs.keys[st->src - 1];
		s.refs = bufs.refs[st->src - 1];
		s.base = 0;
		s.n = st->cand_count[st->src - 1];
		s.check_prev = false;
	}
	return s;
}

/*
 * Pass p >= 1: keys matching the pivot's digits 0..p-2 are either above the
 * pivot's bin of digit p-1 (in the answer: to out), in it (counted by digit
 * p, and compacted when decided), or below (dropped).
 */
template <typename K>
__global__ void __launch_bounds__(BLOCK)
radix_classify(Keys<K> in, RadixState<K> *st, int p, uint32_t *hist,
			   Buffers<K> bufs, Sink<K> out)
{
	constexpr int N = Vec<K>::N;
	__shared__ uint32_t sh[RADIX_BINS];
	__shared__ AppendStorage<> tmp;
	Source<K>	s;
	K			prefix;
	K			prev;
	K			mask = digits_mask<K>(p - 1);
	K			prev_mask = digits_mask<K>(p - 2);
	bool		compact;
	Sink<K>		cand;
	K			flat_key[UNROLL * N];
	Ref			flat_ref[UNROLL * N];
	bool		sure[UNROLL * N];
	bool		candidate[UNROLL * N];

	if (st->take_all)
		return;
	s = current_source(in, st, bufs);
	prefix = st->prefix;
	prev = st->prev_prefix;
	compact = st->compact;
	{
		int			dst = st->src == 1 ? 1 : 0;

		cand.keys = bufs.keys[dst];
		cand.refs = bufs.refs[dst];
		cand.cap = bufs.cap;
		cand.d_count = &st->cand_count[dst];
	}
	zero_hist(sh);
	for_each_tile(s.keys, s.n,
				  [&](int f, K x, uint32_t index, bool valid) {
					  bool		live = valid && (!s.check_prev || (x & prev_mask) == prev);

					  sure[f] = live && (x & mask) > prefix;
					  candidate[f] = live && (x & mask) == prefix;
					  count_digit(sh, digit(x, p), candidate[f]);
					  flat_key[f] = x;
					  flat_ref[f] = (sure[f] || (candidate[f] && compact)) ?
						  ref_of(s, index) : 0;
				  },
				  [&] {
					  block_append(flat_key, flat_ref, sure, out, tmp);
					  if (compact)
						  block_append(flat_key, flat_ref, candidate, cand, tmp);
				  });
	flush_hist(sh, hist);
}

/*
 * The last pass: the pivot is known.  Keys above it go to out, and keys
 * equal to it as the mode says; with take_all, every key.
 */
template <typename K>
__global__ void __launch_bounds__(BLOCK)
radix_collect(Keys<K> in, RadixState<K> *st, Buffers<K> bufs, TopkMode mode,
			  Sink<K> out)
{
	constexpr int N = Vec<K>::N;
	constexpr int P = radix_passes<K>();
	__shared__ AppendStorage<> tmp;
	Source<K>	s = current_source(in, st, bufs);
	K			pivot = st->prefix;
	K			prev = st->prev_prefix;
	K			prev_mask = digits_mask<K>(P - 2);
	bool		take_all = st->take_all;
	uint32_t	k_rem = st->k_rem;
	K			flat_key[UNROLL * N];
	Ref			flat_ref[UNROLL * N];
	bool		take[UNROLL * N];
	bool		equal[UNROLL * N];

	for_each_tile(s.keys, s.n,
				  [&](int f, K x, uint32_t index, bool valid) {
					  bool		live = valid &&
						  (take_all || !s.check_prev || (x & prev_mask) == prev);

					  take[f] = live && (take_all || x > pivot);
					  equal[f] = live && !take_all && x == pivot;
					  flat_key[f] = x;
					  flat_ref[f] = (take[f] || equal[f]) ? ref_of(s, index) : 0;
				  },
				  [&] {
					  block_ration(equal, take, &st->eq_taken,
								   mode == TOPK_WITH_TIES ? UINT64_MAX : k_rem, tmp);
					  block_append(flat_key, flat_ref, take, out, tmp);
				  });
}

constexpr int SMALL_THREADS = 1024;
constexpr int SMALL_UNROLL = 8;
/* the fewest keys a block of radix_small is given */
constexpr uint32_t SMALL_SLICE = 4096;

/*
 * All passes in one launch: a cooperative grid of up to one block per SM,
 * each counting its slice of the (cache-resident) input into a global
 * histogram per pass; after a grid-wide barrier every block derives the
 * same pivot bin from it.  hist holds RADIX_PASSES zeroed histograms
 * and a zeroed counter of equal keys taken.
 */
template <typename K>
__global__ void __launch_bounds__(SMALL_THREADS)
radix_small(Keys<K> in, uint64_t k, TopkMode mode, Sink<K> out, uint32_t *hist)
{
	typedef cub::BlockScan<uint32_t, SMALL_THREADS> Scan;
	constexpr int P = radix_passes<K>();
	constexpr uint32_t CHUNK = SMALL_THREADS * SMALL_UNROLL;
	cooperative_groups::grid_group grid = cooperative_groups::this_grid();
	__shared__ uint32_t sh[RADIX_BINS];
	__shared__ typename Scan::TempStorage scan;
	__shared__ AppendStorage<SMALL_THREADS> tmp;
	__shared__ K s_prefix;
	__shared__ uint32_t s_k_rem;
	uint32_t   *equal_taken = hist + P * RADIX_BINS;
	uint32_t	n = in.d_n ? min(*in.d_n, in.n) : in.n;
	uint32_t	slice = (n + gridDim.x - 1) / gridDim.x;
	uint32_t	begin = min(n, blockIdx.x * slice);
	uint32_t	end = min(n, begin + slice);
	uint32_t	k_rem = k < n ? (uint32_t) k : n;
	bool		take_all = k >= n;
	K			prefix = 0;

	for (int p = 0; p < P && !take_all; p++)
	{
		K			mask = digits_mask<K>(p - 1);
		uint32_t   *global = hist + p * RADIX_BINS;
		uint32_t	count[2];
		uint32_t	above[2];

		zero_hist(sh);
		for (uint32_t chunk = begin; chunk < end; chunk += CHUNK)
		{
			K			x[SMALL_UNROLL];

#pragma unroll
			for (int u = 0; u < SMALL_UNROLL; u++)
			{
				uint32_t	i = chunk + u * SMALL_THREADS + threadIdx.x;

				x[u] = i < end ? in.keys[i] : K(0);
			}
#pragma unroll
			for (int u = 0; u < SMALL_UNROLL; u++)
			{
				uint32_t	i = chunk + u * SMALL_THREADS + threadIdx.x;

				count_digit(sh, digit(x[u], p), i < end && (x[u] & mask) == prefix);
			}
		}
		flush_hist(sh, global);
		if (gridDim.x > 1)
			grid.sync();
		else
			__syncthreads();
		count[0] = __ldcg(&global[RADIX_BINS - 1 - 2 * threadIdx.x]);
		count[1] = __ldcg(&global[RADIX_BINS - 2 - 2 * threadIdx.x]);
		Scan(scan).ExclusiveSum(count, above);
#pragma unroll
		for (int j = 0; j < 2; j++)
			if (above[j] < k_rem && k_rem <= above[j] + count[j])
			{
				s_prefix = prefix | (K(RADIX_BINS - 1 - 2 * threadIdx.x - j) << digit_shift<K>(p));
				s_k_rem = k_rem - above[j];
			}
		__syncthreads();
		prefix = s_prefix;
		k_rem = s_k_rem;
	}

	/* collect the keys above the pivot, and those equal to it the mode wants */
	for (uint32_t chunk = begin; chunk < end; chunk += CHUNK)
	{
		K			x[SMALL_UNROLL];
		Ref			ref[SMALL_UNROLL];
		bool		take[SMALL_UNROLL];
		bool		equal[SMALL_UNROLL];

#pragma unroll
		for (int u = 0; u < SMALL_UNROLL; u++)
		{
			uint32_t	i = chunk + u * SMALL_THREADS + threadIdx.x;

			x[u] = i < end ? in.keys[i] : K(0);
			take[u] = i < end && (take_all || x[u] > prefix);
			equal[u] = i < end && !take_all && x[u] == prefix;
			ref[u] = (take[u] || equal[u]) ? (in.refs ? in.refs[i] : in.base + i) : 0;
		}
		block_ration(equal, take, equal_taken, mode == TOPK_WITH_TIES ? UINT64_MAX : k_rem, tmp);
		block_append(x, ref, take, out, tmp);
	}
}

template <typename K>
static uint32_t
buffer_cap(uint32_t n)
{
	uint32_t	cap = n / 16;

	if (cap < (1u << 16))
		cap = 1u << 16;
	if (cap > (1u << 26))
		cap = 1u << 26;
	return cap < n ? cap : n;
}

template <typename K>
size_t
radix_arena_bytes(uint32_t n)
{
	size_t		cap = buffer_cap<K>(n);

	if (n <= radix_small_max<K>())
		return arena_bytes<uint32_t>((size_t) radix_passes<K>() * RADIX_BINS + 1);

	return arena_bytes<RadixState<K>>(1) +
		arena_bytes<uint32_t>((size_t) radix_passes<K>() * RADIX_BINS) +
		2 * (arena_bytes<K>(cap) + arena_bytes<Ref>(cap));
}

template <typename K>
void
radix_topk(const Device &dev, Keys<K> in, uint64_t k, TopkMode mode,
		   Sink<K> out, Arena &arena)
{
	constexpr int P = radix_passes<K>();
	RadixState<K> *st;
	uint32_t   *hist;
	Buffers<K>	bufs;
	unsigned	grid = tiles_grid<K>(in.n, dev.sm_count);

	if (in.n <= radix_small_max<K>())
	{
		/* one block of SMALL_THREADS fits on each SM: all run at once */
		unsigned	blocks = std::min<unsigned>((in.n + SMALL_SLICE - 1) / SMALL_SLICE,
												dev.sm_count);

		hist = arena.take<uint32_t>((size_t) P * RADIX_BINS + 1);
		cudaMemsetAsync(hist, 0, sizeof(uint32_t) * (P * RADIX_BINS + 1), dev.stream);
		if (blocks > 1 && dev.cooperative)
		{
			void	   *args[] = {&in, &k, &mode, &out, &hist};

			if (cudaLaunchCooperativeKernel((void *) radix_small<K>, blocks, SMALL_THREADS,
											args, 0, dev.stream) == cudaSuccess)
				return;
			/* refused (by a tool or MPS, say): one block does it all */
			(void) cudaGetLastError();
		}
		radix_small<K><<<1, SMALL_THREADS, 0, dev.stream>>>(in, k, mode, out, hist);
		return;
	}
	st = arena.take<RadixState<K>>(1);
	hist = arena.take<uint32_t>((size_t) P * RADIX_BINS);
	bufs.cap = buffer_cap<K>(in.n);
	for (int b = 0; b < 2; b++)
	{
		bufs.keys[b] = arena.take<K>(bufs.cap);
		bufs.refs[b] = arena.take<Ref>(bufs.cap);
	}
	cudaMemsetAsync(hist, 0, sizeof(uint32_t) * P * RADIX_BINS, dev.stream);
	radix_init<K><<<1, 1, 0, dev.stream>>>(in, k, st);
	radix_count<K><<<grid, BLOCK, 0, dev.stream>>>(in, st, hist);
	radix_select<K><<<1, SELECT_THREADS, 0, dev.stream>>>(st, hist, 0, bufs.cap);
	for (int p = 1; p < P; p++)
	{
		uint32_t   *h = hist + (size_t) p * RADIX_BINS;

		radix_classify<K><<<grid, BLOCK, 0, dev.stream>>>(in, st, p, h, bufs, out);
		radix_select<K><<<1, SELECT_THREADS, 0, dev.stream>>>(st, h, p, bufs.cap);
	}
	radix_collect<K><<<grid, BLOCK, 0, dev.stream>>>(in, st, bufs, mode, out);
}

template size_t radix_arena_bytes<uint32_t>(uint32_t);
template size_t radix_arena_bytes<uint64_t>(uint32_t);
template void radix_topk<uint32_t>(const Device &, Keys<uint32_t>, uint64_t,
								   TopkMode, Sink<uint32_t>, Arena &);
template void radix_topk<uint64_t>(const Device &, Keys<uint64_t>, uint64_t,
								   TopkMode, Sink<uint64_t>, Arena &);

}								/* namespace topk */
