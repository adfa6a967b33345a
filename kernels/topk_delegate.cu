/*
 * topk_delegate.cu
 *	  Delegate filtering (Dr. Top-k, SC'21) in front of the other algorithms.
 *
 * The input is cut into subranges of 2^log_s keys and a warp reads each one
 * at full memory bandwidth, keeping its largest key: the delegate.  A
 * subrange whose delegate is not among the k largest delegates holds no key
 * of the answer, and no key of the answer is below the k-th delegate.  So
 * after a top-k of the delegates, only the k subranges it names are read
 * again, for their keys at or above that delegate: at most k * 2^log_s
 * candidates for the final top-k, whatever the distribution.
 */
#include "topk_device.cuh"

namespace topk
{

constexpr int WARPS_PER_BLOCK = 8;

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

template <typename K>
__global__ void __launch_bounds__(WARPS_PER_BLOCK * 32)
subrange_max_kernel(const K *keys, uint64_t n, int log_s, K *out, uint64_t m)
{
	typedef typename Vec<K>::type V;
	constexpr int N = Vec<K>::N;
	int			lane = threadIdx.x & 31;
	uint64_t	warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint64_t	warps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
	uint64_t	s = (uint64_t) 1 << log_s;

	for (uint64_t sub = warp; sub < m; sub += warps)
	{
		uint64_t	start = sub << log_s;
		K			best = 0;

		if (start + s <= n)
		{
			const V    *v = reinterpret_cast<const V *>(keys + start);
			uint32_t	vectors = (uint32_t) (s / N);

#pragma unroll 8
			for (uint32_t i = lane; i < vectors; i += 32)
			{
				V			x = __ldcs(v + i);
				K			part[N];

				memcpy(part, &x, sizeof(V));
#pragma unroll
				for (int j = 0; j < N; j++)
					best = max(best, part[j]);
			}
		}
		else
		{
			for (uint64_t i = start + lane; i < n; i += 32)
				best = max(best, keys[i]);
		}
		best = warp_max(best);
		if (lane == 0)
			out[sub] = best;
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

template <typename K>
__global__ void __launch_bounds__(BLOCK)
gather_kernel(const K *keys, uint64_t n, Ref base, int log_s, const Ref *sub,
			  const uint32_t *d_sub_count, uint32_t sub_cap, const uint32_t *d_has_floor,
			  const K *d_floor, Sink<K> out)
{
	typedef typename Vec<K>::type V;
	constexpr int N = Vec<K>::N;
	__shared__ AppendStorage tmp;
	uint32_t	count = min(*d_sub_count, sub_cap);
	K			floor = *d_has_floor ? *d_floor : K(0);
	uint64_t	s = (uint64_t) 1 << log_s;

	for (uint32_t i = blockIdx.x; i < count; i += gridDim.x)
	{
		uint64_t	start = sub[i] << log_s;
		uint64_t	end = start + s < n ? start + s : n;

		for (uint64_t chunk = start; chunk < end; chunk += (uint64_t) BLOCK * N)
		{
			uint64_t	first = chunk + (uint64_t) threadIdx.x * N;
			K			key[N];
			Ref			ref[N];
			bool		take[N];

			if (first + N <= end)
			{
				V			v = __ldcs(reinterpret_cast<const V *>(keys + first));

				memcpy(key, &v, sizeof(V));
			}
			else
			{
#pragma unroll
				for (int j = 0; j < N; j++)
					key[j] = first + j < end ? keys[first + j] : 0;
			}
#pragma unroll
			for (int j = 0; j < N; j++)
			{
				take[j] = first + j < end && key[j] >= floor;
				ref[j] = base + first + j;
			}
			block_append(key, ref, take, out, tmp);
		}
	}
}

template <typename K>
void
gather_subranges(const Device &dev, const K *keys, uint64_t n, Ref base, int log_s,
				 const Ref *sub, const uint32_t *d_sub_count, uint32_t sub_cap,
				 const uint32_t *d_has_floor, const K *d_floor, Sink<K> out)
{
	uint64_t	most = (uint64_t) dev.sm_count * 8;
	unsigned	grid = (unsigned) (sub_cap < most ? (sub_cap ? sub_cap : 1) : most);

	gather_kernel<K><<<grid, BLOCK, 0, dev.stream>>>(keys, n, base, log_s, sub, d_sub_count, sub_cap, d_has_floor, d_floor, out);
}

template void subrange_max<uint32_t>(const Device &, const uint32_t *, uint64_t, int, uint32_t *);
template void subrange_max<uint64_t>(const Device &, const uint64_t *, uint64_t, int, uint64_t *);
template void gather_subranges<uint32_t>(const Device &, const uint32_t *, uint64_t, Ref, int,
										 const Ref *, const uint32_t *, uint32_t,
										 const uint32_t *, const uint32_t *, Sink<uint32_t>);
template void gather_subranges<uint64_t>(const Device &, const uint64_t *, uint64_t, Ref, int,
										 const Ref *, const uint32_t *, uint32_t,
										 const uint32_t *, const uint64_t *, Sink<uint64_t>);

}								/* namespace topk */
