/*
 * select_delegate.cu
 *	  Delegate filtering (Dr. Top-k, SC'21) in front of the other algorithms.
 *
 * The input is cut into subranges of 2^log_s keys and a warp reads each one
 * at full memory bandwidth, keeping its largest key: the delegate.  A
 * subrange whose delegate is not among the k largest delegates holds no key
 * of the answer, and no key of the answer is below the k-th delegate.  So
 * after a top-k of the delegates, only the k subranges it names are read
 * again, for their keys at or above that delegate: at most k * 2^log_s
 * candidates for the final top-k, whatever the distribution.  An exact
 * top-k needs at most k of the keys equal to that delegate, so the gather
 * keeps no more (inputs of few distinct values would otherwise keep all).
 */
#include "select_common.cuh"

namespace topk
{

constexpr int WARPS_PER_BLOCK = 8;
/* 16-byte loads a lane keeps in flight */
constexpr int DEPTH = 8;

template <typename K>
__device__ __forceinline__ K
warp_max(K x)
{
	for (int d = 16; d > 0; d >>= 1)
		x = max(x, (K) __shfl_xor_sync(0xffffffffu, x, d));
	return x;
}

template <>
__device__ __forceinline__ uint32_t
warp_max(uint32_t x)
{
	return __reduce_max_sync(0xffffffffu, x);
}

/* the largest of the keys of the vector at keys[i..i+N), those below n */
template <typename K>
__device__ __forceinline__ K
vector_max(const K *keys, uint64_t i, uint64_t n)
{
	constexpr int N = Vec<K>::N;
	K			part[N];
	K			best = 0;

	load_vector(keys, i, n, part);
#pragma unroll
	for (int j = 0; j < N; j++)
		best = max(best, part[j]);
	return best;
}

/*
 * A warp reads rows of 32 vectors, DEPTH rows in flight.  A subrange is a
 * whole number of rows (it holds at least 32 vectors): a large one takes a
 * warp several steps, a small one shares a step with others.
 */
template <typename K>
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)
subrange_max_kernel(const K *keys, uint64_t n, int log_s, K *out, uint64_t m)
{
	constexpr int N = Vec<K>::N;
	constexpr uint64_t ROW = 32 * N;
	int			lane = threadIdx.x & 31;
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	warps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
	uint64_t	s = (uint64_t) 1 << log_s;
	uint64_t	rows = s / ROW;
	uint64_t	per_step = rows >= DEPTH ? 1 : DEPTH / rows;

	for (uint64_t first = warp * per_step; first < m; first += warps * per_step)
	{
		if (rows >= DEPTH)
		{
			uint64_t	start = first << log_s;
			K			best = 0;

			for (uint64_t r = 0; r < rows; r += DEPTH)
			{
				K			x[DEPTH];

#pragma unroll
				for (int d = 0; d < DEPTH; d++)
					x[d] = vector_max(keys, start + (r + d) * ROW + lane * N, n);
#pragma unroll
				for (int d = 0; d < DEPTH; d++)
					best = max(best, x[d]);
			}
			best = warp_max(best);
			if (lane == 0)
				out[first] = best;
		}
		else
		{
			uint64_t	start = first << log_s;
			K			x[DEPTH];

#pragma unroll
			for (int d = 0; d < DEPTH; d++)
				x[d] = vector_max(keys, start + d * ROW + lane * N, n);
			for (uint64_t j = 0; j < per_step; j++)
			{
				K			best = 0;

#pragma unroll
				for (int d = 0; d < DEPTH; d++)
					if ((uint64_t) d / rows == j)
						best = max(best, x[d]);
				best = warp_max(best);
				if (lane == 0 && first + j < m)
					out[first + j] = best;
			}
		}
	}
}

template <typename K>
void
subrange_max(const Device &dev, const K *keys, uint64_t n, int log_s, K *max_out)
{
	uint64_t	m = (n + ((uint64_t) 1 << log_s) - 1) >> log_s;
	uint64_t	blocks = (m + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
	uint64_t	most = (uint64_t) dev.sm_count * 8;

	subrange_max_kernel<K><<<(unsigned) (blocks < most ? blocks : most), WARPS_PER_BLOCK * 32, 0, dev.stream>>>(keys, n, log_s, max_out, m);
}

/*
 * The selected subranges, read as one array of count * 2^log_s keys in
 * block tiles of one vector per thread, so that small subranges keep every
 * thread busy.
 */
template <typename K>
__global__ void __launch_bounds__(BLOCK)
gather_kernel(const K *keys, uint64_t n, Ref base, int log_s, const Ref *sub,
			  const uint32_t *d_sub_count, uint32_t sub_cap, const uint32_t *d_has_floor,
			  const K *d_floor, uint64_t equal_cap, uint32_t *d_equal_taken, Sink<K> out)
{
	constexpr int N = Vec<K>::N;
	__shared__ AppendStorage<> tmp;
	uint32_t	count = min(*d_sub_count, sub_cap);
	bool		has_floor = *d_has_floor;
	K			floor = *d_floor;
	uint64_t	total = (uint64_t) count << log_s;
	uint64_t	mask = ((uint64_t) 1 << log_s) - 1;

	for (uint64_t tile = (uint64_t) blockIdx.x * BLOCK * N; tile < total;
		 tile += (uint64_t) gridDim.x * BLOCK * N)
	{
		uint64_t	v = tile + (uint64_t) threadIdx.x * N;
		uint64_t	first = v < total ? (sub[v >> log_s] << log_s) + (v & mask) : n;
		K			key[N];
		Ref			ref[N];
		bool		take[N];
		bool		equal[N];

		load_vector(keys, first, n, key);
#pragma unroll
		for (int j = 0; j < N; j++)
		{
			bool		in = first + j < n;

			take[j] = in && (!has_floor || key[j] > floor);
			equal[j] = in && has_floor && key[j] == floor;
			ref[j] = base + first + j;
		}
		block_ration(equal, take, d_equal_taken, equal_cap, tmp);
		block_append(key, ref, take, out, tmp);
	}
}

template <typename K>
void
gather_subranges(const Device &dev, const K *keys, uint64_t n, Ref base, int log_s,
				 const Ref *sub, const uint32_t *d_sub_count, uint32_t sub_cap,
				 const uint32_t *d_has_floor, const K *d_floor, uint64_t equal_cap,
				 uint32_t *d_equal_taken, Sink<K> out)
{
	uint64_t	tiles = (((uint64_t) sub_cap << log_s) + BLOCK * Vec<K>::N - 1) / (BLOCK * Vec<K>::N);
	uint64_t	most = (uint64_t) dev.sm_count * 8;

	gather_kernel<K><<<(unsigned) (tiles < most ? (tiles ? tiles : 1) : most), BLOCK, 0, dev.stream>>>(keys, n, base, log_s, sub, d_sub_count, sub_cap, d_has_floor, d_floor, equal_cap, d_equal_taken, out);
}

template void subrange_max<uint32_t>(const Device &, const uint32_t *, uint64_t, int, uint32_t *);
template void subrange_max<uint64_t>(const Device &, const uint64_t *, uint64_t, int, uint64_t *);
template void gather_subranges<uint32_t>(const Device &, const uint32_t *, uint64_t, Ref, int,
										 const Ref *, const uint32_t *, uint32_t,
										 const uint32_t *, const uint32_t *, uint64_t, uint32_t *,
										 Sink<uint32_t>);
template void gather_subranges<uint64_t>(const Device &, const uint64_t *, uint64_t, Ref, int,
										 const Ref *, const uint32_t *, uint32_t,
										 const uint32_t *, const uint64_t *, uint64_t, uint32_t *,
										 Sink<uint64_t>);

}								/* namespace topk */
