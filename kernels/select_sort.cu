/*
 * select_sort.cu
 *	  Sorting a small answer in one block: a bitonic sort in shared memory
 *	  over the next power of two of its size, where a device-wide sort would
 *	  cost more in launches than in work.  Equal keys are ordered by
 *	  reference; padding (key 0, largest reference) sorts last.
 */
#include "select_common.cuh"

namespace topk
{

template <typename K>
__global__ void __launch_bounds__(1024)
small_sort_kernel(K *keys, Ref *refs, uint32_t count, uint32_t padded)
{
	__shared__ K sk[SMALL_SORT_MAX];
	__shared__ Ref sr[SMALL_SORT_MAX];

	for (uint32_t i = threadIdx.x; i < padded; i += blockDim.x)
	{
		sk[i] = i < count ? keys[i] : K(0);
		sr[i] = i < count ? refs[i] : ~(Ref) 0;
	}
	__syncthreads();
	for (uint32_t len = 2; len <= padded; len <<= 1)
		for (uint32_t inc = len >> 1; inc > 0; inc >>= 1)
		{
			for (uint32_t i = threadIdx.x; i < padded / 2; i += blockDim.x)
			{
				uint32_t	lo = ((i & ~(inc - 1)) << 1) | (i & (inc - 1));
				uint32_t	hi = lo + inc;
				bool		desc = (lo & len) == 0;
				bool		hi_first = sk[hi] > sk[lo] || (sk[hi] == sk[lo] && sr[hi] < sr[lo]);

				if (hi_first == desc)
				{
					K			k = sk[lo];
					Ref			r = sr[lo];

					sk[lo] = sk[hi];
					sr[lo] = sr[hi];
					sk[hi] = k;
					sr[hi] = r;
				}
			}
			__syncthreads();
		}
	for (uint32_t i = threadIdx.x; i < count; i += blockDim.x)
	{
		keys[i] = sk[i];
		refs[i] = sr[i];
	}
}

template <typename K>
void
small_sort(const Device &dev, K *keys, Ref *refs, uint32_t count)
{
	uint32_t	padded = 2;
	uint32_t	threads;

	while (padded < count)
		padded <<= 1;
	threads = padded / 2 < 32 ? 32 : (padded / 2 > 1024 ? 1024 : padded / 2);
	small_sort_kernel<K><<<1, threads, 0, dev.stream>>>(keys, refs, count, padded);
}

template void small_sort<uint32_t>(const Device &, uint32_t *, Ref *, uint32_t);
template void small_sort<uint64_t>(const Device &, uint64_t *, Ref *, uint32_t);

}								/* namespace topk */
