/*
 * select_filter.cu
 *	  Cuts: keeping the keys that can still make the answer.
 *
 * append_above streams keys past a cut (the k-th key known so far) and
 * appends the few that pass; min_key finds the k-th key of an answer, the
 * smallest of its keys, to become the next cut.
 */
#include "select_common.cuh"

namespace topk
{

constexpr int MIN_THREADS = 1024;

template <typename K>
__global__ void __launch_bounds__(BLOCK)
append_above_kernel(Keys<K> in, const uint32_t *d_has_cut, const K *d_cut,
					bool inclusive, Sink<K> out)
{
	constexpr int N = Vec<K>::N;
	__shared__ AppendStorage<> tmp;
	uint32_t	n = in.d_n ? min(*in.d_n, in.n) : in.n;
	bool		has_cut = *d_has_cut;
	K			cut = *d_cut;
	K			flat_key[UNROLL * N];
	Ref			flat_ref[UNROLL * N];
	bool		take[UNROLL * N];

	for_each_tile(in.keys, n,
				  [&](int f, K x, uint32_t index, bool valid) {
					  take[f] = valid && (!has_cut || x > cut || (inclusive && x == cut));
					  flat_key[f] = x;
					  flat_ref[f] = take[f] ? ref_of(in, index) : 0;
				  },
				  [&] { block_append(flat_key, flat_ref, take, out, tmp); });
}

template <typename K>
void
append_above(const Device &dev, Keys<K> in, const uint32_t *d_has_cut,
			 const K *d_cut, bool inclusive, Sink<K> out)
{
	append_above_kernel<K><<<tiles_grid<K>(in.n, dev.sm_count), BLOCK, 0, dev.stream>>>(in, d_has_cut, d_cut, inclusive, out);
}

template <typename K>
__global__ void __launch_bounds__(MIN_THREADS)
min_key_kernel(const K *keys, const uint32_t *d_count, uint32_t cap, uint64_t need,
			   K *d_min, uint32_t *d_has)
{
	__shared__ K part[MIN_THREADS / 32];
	uint32_t	count = min(*d_count, cap);
	K			m = ~K(0);

	for (uint32_t i = threadIdx.x; i < count; i += blockDim.x)
		m = min(m, keys[i]);
	for (int d = 16; d > 0; d >>= 1)
		m = min(m, (K) __shfl_xor_sync(0xffffffffu, m, d));
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x >> 5] = m;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		for (int w = 1; w < MIN_THREADS / 32; w++)
			m = min(m, part[w]);
		*d_min = m;
		*d_has = count > 0 && count >= need;
	}
}

template <typename K>
void
min_key(const Device &dev, const K *keys, const uint32_t *d_count, uint32_t cap,
		uint64_t need, K *d_min, uint32_t *d_has)
{
	min_key_kernel<K><<<1, MIN_THREADS, 0, dev.stream>>>(keys, d_count, cap, need, d_min, d_has);
}

template void append_above<uint32_t>(const Device &, Keys<uint32_t>, const uint32_t *,
									 const uint32_t *, bool, Sink<uint32_t>);
template void append_above<uint64_t>(const Device &, Keys<uint64_t>, const uint32_t *,
									 const uint64_t *, bool, Sink<uint64_t>);
template void min_key<uint32_t>(const Device &, const uint32_t *, const uint32_t *,
								uint32_t, uint64_t, uint32_t *, uint32_t *);
template void min_key<uint64_t>(const Device &, const uint64_t *, const uint32_t *,
								uint32_t, uint64_t, uint64_t *, uint32_t *);

}								/* namespace topk */
