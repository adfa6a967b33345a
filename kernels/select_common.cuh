/*
 * select_common.cuh
 *	  What the GPU top-k algorithms share: inputs and outputs in device
 *	  memory, block-wide appends, vector loads, and the launch functions each
 *	  algorithm file (select_*.cu) defines for kernels/gpu_topk*.cu.
 *
 * Every algorithm is a sequence of kernel launches on one stream with no
 * host synchronisation inside: counts produced on the device (how many
 * candidates survived) stay there and the next kernel reads them, while the
 * host sizes grids and buffers from upper bounds it knows.  Keys are
 * uint32_t or uint64_t (keys.h); a reference is a 64-bit row ordinal.
 */
#ifndef SELECT_COMMON_CUH
#define SELECT_COMMON_CUH

#include <stdint.h>

#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "topk.h"

namespace topk
{

typedef unsigned long long Ref;

/* threads per block of the streaming kernels */
constexpr int BLOCK = 256;
/* 16-byte vectors of keys per thread per block tile */
constexpr int UNROLL = 4;

/*
 * Keys to select from.  refs == NULL means key i has reference base + i.
 * With d_n set, the count is on the device and n is only an upper bound.
 */
template <typename K>
struct Keys
{
	const K    *keys;
	const Ref  *refs;
	Ref			base;
	uint32_t	n;
	const uint32_t *d_n;
};

/*
 * Where (key, reference) pairs are appended.  *d_count counts every append,
 * also those beyond cap that were dropped, so the host can see an overflow.
 */
template <typename K>
struct Sink
{
	K		   *keys;
	Ref		   *refs;
	uint32_t	cap;
	uint32_t   *d_count;
};

/* a bump allocator over one device buffer, sized by the host beforehand */
struct Arena
{
	char	   *base;
	size_t		size;
	size_t		used;

	template <typename T>
	T		   *take(size_t count)
	{
		size_t		start = (used + 255) & ~(size_t) 255;

		used = start + count * sizeof(T);
		return used <= size ? (T *) (base + start) : NULL;
	}
};

/* bytes Arena::take needs for count items, with its alignment */
template <typename T>
constexpr size_t
arena_bytes(size_t count)
{
	return ((count * sizeof(T) + 255) & ~(size_t) 255) + 256;
}

template <typename K>
struct Vec;
template <>
struct Vec<uint32_t>
{
	typedef uint4 type;
	static constexpr int N = 4;
};
template <>
struct Vec<uint64_t>
{
	typedef ulonglong2 type;
	static constexpr int N = 2;
};

/* keys per block tile of the streaming kernels */
template <typename K>
__host__ __device__ constexpr uint32_t
tile_keys()
{
	return BLOCK * UNROLL * Vec<K>::N;
}

/*
 * The N keys at keys[first ...], those at or past n as 0: one streaming
 * 16-byte load (the data is read once) when all are below n.
 */
template <typename K>
__device__ __forceinline__ void
load_vector(const K *keys, uint64_t first, uint64_t n, K (&key)[Vec<K>::N])
{
	typedef typename Vec<K>::type V;
	constexpr int N = Vec<K>::N;

	if (first + N <= n)
	{
		V			v = __ldcs(reinterpret_cast<const V *>(keys + first));

		memcpy(key, &v, sizeof(V));
		return;
	}
#pragma unroll
	for (int j = 0; j < N; j++)
		key[j] = first + j < n ? keys[first + j] : K(0);
}

/*
 * Load the keys of thread slot j of a block tile: vector u of the tile is
 * the 16 bytes at keys[(tile * BLOCK * UNROLL + u) * N ...].  Keys at or past
 * n come back invalid.
 */
template <typename K>
__device__ __forceinline__ void
load_tile(const K *keys, uint32_t n, uint64_t tile, K (&key)[UNROLL][Vec<K>::N],
		  uint32_t (&index)[UNROLL][Vec<K>::N], bool (&valid)[UNROLL][Vec<K>::N])
{
	constexpr int N = Vec<K>::N;

#pragma unroll
	for (int u = 0; u < UNROLL; u++)
	{
		uint64_t	first = (tile * BLOCK * UNROLL + (uint64_t) u * BLOCK + threadIdx.x) * N;

		load_vector(keys, first, n, key[u]);
#pragma unroll
		for (int j = 0; j < N; j++)
		{
			valid[u][j] = first + j < n;
			index[u][j] = (uint32_t) (first + j);
		}
	}
}

/*
 * The grid-stride loop over the block tiles of n keys that the streaming
 * kernels share: for each tile, on_key(f, key, index, valid) for each of the
 * thread's UNROLL * N slots f, then on_tile() (the block's appends: every
 * thread of the block reaches it).
 */
template <typename K, typename OnKey, typename OnTile>
__device__ __forceinline__ void
for_each_tile(const K *keys, uint32_t n, OnKey on_key, OnTile on_tile)
{
	constexpr int N = Vec<K>::N;
	uint64_t	tiles = (n + tile_keys<K>() - 1) / tile_keys<K>();

	for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x)
	{
		K			key[UNROLL][N];
		uint32_t	index[UNROLL][N];
		bool		valid[UNROLL][N];

		load_tile(keys, n, tile, key, index, valid);
#pragma unroll
		for (int u = 0; u < UNROLL; u++)
#pragma unroll
			for (int j = 0; j < N; j++)
				on_key(u * N + j, key[u][j], index[u][j], valid[u][j]);
		on_tile();
	}
}

/* the reference of key index of an input with optional explicit references */
template <typename In>
__device__ __forceinline__ Ref
ref_of(const In &in, uint32_t index)
{
	return in.refs ? in.refs[index] : in.base + index;
}

/* scratch for block_append and block_ration in blocks of THREADS threads */
template <int THREADS = BLOCK>
struct AppendStorage
{
	typename cub::BlockScan<uint32_t, THREADS>::TempStorage scan;
	uint32_t	base;
};

/*
 * Reserve places for the items a block's threads flag with one atomic on
 * *d_counter for the whole block: offset gets this thread's first place.
 * False, after one barrier, when no thread flags any; else the caller ends
 * with a barrier before tmp is used again.  Every thread of the block must
 * call it.
 */
template <int THREADS, int N>
__device__ __forceinline__ bool
block_reserve(const bool (&flag)[N], uint32_t *d_counter, AppendStorage<THREADS> &tmp,
			  uint32_t &offset)
{
	uint32_t	mine = 0;
	uint32_t	total;

#pragma unroll
	for (int j = 0; j < N; j++)
		mine += flag[j];
	if (!__syncthreads_or(mine))
		return false;
	cub::BlockScan<uint32_t, THREADS>(tmp.scan).ExclusiveSum(mine, offset, total);
	if (threadIdx.x == 0)
		tmp.base = atomicAdd(d_counter, total);
	__syncthreads();
	offset += tmp.base;
	return true;
}

/*
 * Append the items a block's threads take to a sink with one atomic for the
 * whole block; blocks with nothing to append return after one barrier.
 * Every thread of the block must call it.
 */
template <int THREADS, typename K, int N>
__device__ __forceinline__ void
block_append(const K (&key)[N], const Ref (&ref)[N], const bool (&take)[N],
			 Sink<K> sink, AppendStorage<THREADS> &tmp)
{
	uint32_t	offset;

	if (!block_reserve(take, sink.d_count, tmp, offset))
		return;
#pragma unroll
	for (int j = 0; j < N; j++)
	{
		if (take[j])
		{
			if (offset < sink.cap)
			{
				sink.keys[offset] = key[j];
				sink.refs[offset] = ref[j];
			}
			offset++;
		}
	}
	__syncthreads();
}

/*
 * Of the keys a block's threads flag as equal (to a pivot or a floor), take
 * those whose rank among all equal keys taken so far (*d_taken, shared by
 * every block) is below cap; with no cap (UINT64_MAX, the same for the whole
 * block) all of them, without counting.  Every thread of the block must
 * call it.
 */
template <int THREADS, int N>
__device__ __forceinline__ void
block_ration(const bool (&equal)[N], bool (&take)[N], uint32_t *d_taken,
			 uint64_t cap, AppendStorage<THREADS> &tmp)
{
	uint32_t	offset;

	if (cap == UINT64_MAX)
	{
#pragma unroll
		for (int j = 0; j < N; j++)
			take[j] |= equal[j];
		return;
	}
	if (!block_reserve(equal, d_taken, tmp, offset))
		return;
#pragma unroll
	for (int j = 0; j < N; j++)
		if (equal[j])
			take[j] |= offset++ < cap;
	__syncthreads();
}

/* the smallest l with 2^l >= x */
static inline int
log2_ceil(uint64_t x)
{
	int			l = 0;

	while (((uint64_t) 1 << l) < x)
		l++;
	return l;
}

/* grid size for a kernel that walks n keys in block tiles */
template <typename K>
inline unsigned
tiles_grid(uint64_t n, int sm_count)
{
	uint64_t	tiles = (n + tile_keys<K>() - 1) / tile_keys<K>();
	uint64_t	most = (uint64_t) sm_count * 8;

	return (unsigned) (tiles < 1 ? 1 : (tiles < most ? tiles : most));
}

/* the device a launch sequence runs on */
struct Device
{
	int			sm_count;
	bool		cooperative;	/* supports cooperative launches */
	cudaStream_t stream;
};

/*
 * Algorithms.  Each appends the answer's (key, reference) pairs to out and
 * takes its scratch memory from the arena; *_arena_bytes says how much.
 * Radix answers in any order; bitonic (TOPK_EXACT only, k <= BITONIC_MAX_K)
 * in descending order.
 */
constexpr uint64_t BITONIC_MAX_K = 256;

/*
 * Inputs of up to 16 MiB of keys (they stay in L2) run radix top-k in one
 * launch: rereading them each pass costs less than a launch per pass.
 */
template <typename K>
__host__ __device__ constexpr uint32_t
radix_small_max()
{
	return (uint32_t) ((16u << 20) / sizeof(K));
}

template <typename K>
size_t		radix_arena_bytes(uint32_t n);
template <typename K>
void		radix_topk(const Device &dev, Keys<K> in, uint64_t k, TopkMode mode,
					   Sink<K> out, Arena &arena);

template <typename K>
size_t		bitonic_arena_bytes(uint32_t n, uint64_t k);
template <typename K>
void		bitonic_topk(const Device &dev, Keys<K> in, uint64_t k, Sink<K> out,
						 Arena &arena);

/*
 * Append every key of in that passes the cut to out: keys > *d_cut, or
 * >= *d_cut when inclusive; all keys when *d_has_cut is 0.
 */
template <typename K>
void		append_above(const Device &dev, Keys<K> in, const uint32_t *d_has_cut,
						 const K *d_cut, bool inclusive, Sink<K> out);

/*
 * *d_min = the smallest of the first *d_count keys (at most cap), and
 * *d_has = whether there are at least need (>= 1) of them.
 */
template <typename K>
void		min_key(const Device &dev, const K *keys, const uint32_t *d_count,
					uint32_t cap, uint64_t need, K *d_min, uint32_t *d_has);

/* Sort count <= SMALL_SORT_MAX pairs by descending key in one block. */
constexpr uint32_t SMALL_SORT_MAX = 2048;
template <typename K>
void		small_sort(const Device &dev, K *keys, Ref *refs, uint32_t count);

/* delegates: the largest key of each subrange of 2^log_s keys */
template <typename K>
void		subrange_max(const Device &dev, const K *keys, uint64_t n, int log_s,
						 K *max_out);

/*
 * Append the keys of the subranges listed in sub (count on the device, at
 * most sub_cap) to out, with references base + position: those above
 * *d_floor and at most equal_cap equal to it (counted in *d_equal_taken)
 * when *d_has_floor, else all.
 */
template <typename K>
void		gather_subranges(const Device &dev, const K *keys, uint64_t n, Ref base,
							 int log_s, const Ref *sub, const uint32_t *d_sub_count,
							 uint32_t sub_cap, const uint32_t *d_has_floor,
							 const K *d_floor, uint64_t equal_cap,
							 uint32_t *d_equal_taken, Sink<K> out);

}								/* namespace topk */

#endif							/* SELECT_COMMON_CUH */
