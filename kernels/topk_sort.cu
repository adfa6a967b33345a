/*
 * topk_sort.cu
 *	  Sorting a small answer in one block (CUB's block radix sort), where a
 *	  device-wide sort would cost more in launches than in work.
 */
#include <cub/block/block_radix_sort.cuh>

#include "topk_device.cuh"

namespace topk
{

constexpr int SORT_THREADS = 512;
constexpr int SORT_ITEMS = SMALL_SORT_MAX / SORT_THREADS;

template <typename K>
__global__ void __launch_bounds__(SORT_THREADS)
small_sort_kernel(K *keys, Ref *refs, uint32_t count)
{
	typedef cub::BlockRadixSort<K, SORT_THREADS, SORT_ITEMS, Ref> Sort;
	__shared__ typename Sort::TempStorage tmp;
	K			key[SORT_ITEMS];
	Ref			ref[SORT_ITEMS];

	/*
	 * Padding (key 0) goes after the real pairs; the sort is stable, so
	 * it stays behind real pairs of key 0.
	 */
#pragma unroll
	for (int j = 0; j < SORT_ITEMS; j++)
	{
		uint32_t	i = threadIdx.x * SORT_ITEMS + j;

		key[j] = i < count ? keys[i] : K(0);
		ref[j] = i < count ? refs[i] : 0;
	}
	Sort(tmp).SortDescending(key, ref);
#pragma unroll
	for (int j = 0; j < SORT_ITEMS; j++)
	{
		uint32_t	i = threadIdx.x * SORT_ITEMS + j;

		if (i < count)
		{
			keys[i] = key[j];
			refs[i] = ref[j];
		}
	}
}

template <typename K>
void
small_sort(const Device &dev, K *keys, Ref *refs, uint32_t count)
{
	small_sort_kernel<K><<<1, SORT_THREADS, 0, dev.stream>>>(keys, refs, count);
}

template void small_sort<uint32_t>(const Device &, uint32_t *, Ref *, uint32_t);
template void small_sort<uint64_t>(const Device &, uint64_t *, Ref *, uint32_t);

}								/* namespace topk */
