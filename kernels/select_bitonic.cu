/*
 * select_bitonic.cu
 *	  Bitonic top-k for small k (Shanbhag, Pirk and Madden, SIGMOD'18).
 *
 * With kp = k rounded up to a power of two, a tile of 4096 items (16 per
 * thread) is sorted into runs of kp items whose direction alternates; then
 * each round merges neighbouring runs (item i of the result is the better of
 * item i of each: a bitonic run holding the top kp of both) and rebuilds the
 * merged runs into sorted ones, halving the tile.  SortReducer builds the
 * runs and does four rounds, BitonicReducer four rounds on runs it reads
 * back, until one run of kp items is left.  The paper's optimisations:
 *   - everything between a kernel's load and store happens in shared memory;
 *   - local sort, merges and rebuilds are fused into two kernels;
 *   - combined steps: a thread loads 16 items that differ in four index bits
 *     and does four compare-exchange steps in registers before storing them;
 *   - do work before writing: the first runs (up to 16) are sorted in
 *     registers straight from global memory;
 *   - padding: one spare item every 16 avoids shared-memory bank conflicts;
 *   - reassigned partitions: as rounds halve the items, fewer threads each
 *     keep 16 items, so every step stays combined.
 * Items are compared by key, then by position (lower first), which makes the
 * answer deterministic and lets padding items (key 0, no position) lose to
 * every real key.  For 32-bit keys an item is one 64-bit integer, key above
 * inverted position, so that a compare-exchange is a 64-bit min and max.
 */
#include <atomic>

#include "select_common.cuh"

namespace topk
{

constexpr int BITONIC_THREADS = 256;
constexpr int ITEMS_PER_THREAD = 16;
constexpr int TILE = BITONIC_THREADS * ITEMS_PER_THREAD;
constexpr uint32_t NO_INDEX = 0xffffffffu;

/*
 * A key with its position in the input of the first kernel.  Item<K>::T is
 * ordered so that a larger item ranks first.
 */
template <typename K>
struct Item;

template <>
struct Item<uint32_t>
{
	typedef unsigned long long T;

	static __device__ __forceinline__ T make(uint32_t key, uint32_t index)
	{
		return ((T) key << 32) | (uint32_t) ~index;
	}
	static __device__ __forceinline__ uint32_t key(T t)
	{
		return (uint32_t) (t >> 32);
	}
	static __device__ __forceinline__ uint32_t index(T t)
	{
		return ~(uint32_t) t;
	}
	static __device__ __forceinline__ bool before(T a, T b)
	{
		return a > b;
	}
};

struct Item64
{
	uint64_t	key;
	uint32_t	inverted_index;
};

template <>
struct Item<uint64_t>
{
	typedef Item64 T;

	static __device__ __forceinline__ T make(uint64_t key, uint32_t index)
	{
		T			t;

		t.key = key;
		t.inverted_index = ~index;
		return t;
	}
	static __device__ __forceinline__ uint64_t key(T t)
	{
		return t.key;
	}
	static __device__ __forceinline__ uint32_t index(T t)
	{
		return ~t.inverted_index;
	}
	static __device__ __forceinline__ bool before(T a, T b)
	{
		return a.key > b.key || (a.key == b.key && a.inverted_index > b.inverted_index);
	}
};

/* Order a pair: best first when desc, else best last; no branch. */
template <typename K>
__device__ __forceinline__ void
compare_exchange(typename Item<K>::T &a, typename Item<K>::T &b, bool desc)
{
	bool		b_first = Item<K>::before(b, a);
	typename Item<K>::T hi = b_first ? b : a;
	typename Item<K>::T lo = b_first ? a : b;

	a = desc ? hi : lo;
	b = desc ? lo : hi;
}

__device__ __forceinline__ int
padded(int i)
{
	return i + (i >> 4);
}

/*
 * Compare-exchange steps with distances 2^(lo+S-1) .. 2^lo on the first
 * live items in shared memory, combined: each thread takes groups of 2^S
 * items whose indices differ in bits lo..lo+S-1 and does all S steps in
 * registers.  A run of 2^dir_shift items is sorted best first when its
 * index plus dir_offset is even.
 */
template <typename K, int S>
__device__ void
combined_steps(typename Item<K>::T *sm, int live, int lo, int dir_shift, int dir_offset)
{
	constexpr int G = 1 << S;
	int			groups = live >> S;

	for (int g = threadIdx.x; g < groups; g += blockDim.x)
	{
		int			base = ((g >> lo) << (lo + S)) | (g & ((1 << lo) - 1));
		bool		desc = (((base >> dir_shift) + dir_offset) & 1) == 0;
		typename Item<K>::T r[G];

#pragma unroll
		for (int j = 0; j < G; j++)
			r[j] = sm[padded(base + (j << lo))];
#pragma unroll
		for (int s = S - 1; s >= 0; s--)
#pragma unroll
			for (int j = 0; j < G; j++)
				if (!(j & (1 << s)))
					compare_exchange<K>(r[j], r[j | (1 << s)], desc);
#pragma unroll
		for (int j = 0; j < G; j++)
			sm[padded(base + (j << lo))] = r[j];
	}
	__syncthreads();
}

/* All steps of distances 2^(top) .. 1, four at a time. */
template <typename K>
__device__ void
steps_down_from(typename Item<K>::T *sm, int live, int top, int dir_shift, int dir_offset)
{
	while (top >= 0)
	{
		int			s = top + 1 < 4 ? top + 1 : 4;
		int			lo = top - s + 1;

		switch (s)
		{
			case 4:
				combined_steps<K, 4>(sm, live, lo, dir_shift, dir_offset);
				break;
			case 3:
				combined_steps<K, 3>(sm, live, lo, dir_shift, dir_offset);
				break;
			case 2:
				combined_steps<K, 2>(sm, live, lo, dir_shift, dir_offset);
				break;
			default:
				combined_steps<K, 1>(sm, live, lo, dir_shift, dir_offset);
				break;
		}
		top = lo - 1;
	}
}

/*
 * Rounds of merge + rebuild on sorted alternating runs of kp = 2^log_kp
 * items, halving live each time.  The last round orients its runs by
 * global run index (the block's first output run is block_run0), so that
 * the next kernel finds alternating directions across blocks.
 */
template <typename K>
__device__ int
reduce_rounds(typename Item<K>::T *sm, int live, int log_kp, int rounds, int block_run0)
{
	int			kp = 1 << log_kp;

	for (int round = 0; round < rounds; round++)
	{
		constexpr int most = TILE / 2 / BITONIC_THREADS;
		int			half = live / 2;
		typename Item<K>::T merged[most];

#pragma unroll
		for (int m = 0; m < most; m++)
		{
			int			i = threadIdx.x + m * BITONIC_THREADS;
			int			run = i >> log_kp;
			int			at = (run << (log_kp + 1)) + (i & (kp - 1));

			if (i < half)
			{
				typename Item<K>::T a = sm[padded(at)];
				typename Item<K>::T b = sm[padded(at + kp)];

				merged[m] = Item<K>::before(b, a) ? b : a;
			}
		}
		__syncthreads();
#pragma unroll
		for (int m = 0; m < most; m++)
		{
			int			i = threadIdx.x + m * BITONIC_THREADS;

			if (i < half)
				sm[padded(i)] = merged[m];
		}
		__syncthreads();
		live = half;
		steps_down_from<K>(sm, live, log_kp - 1, log_kp,
						round == rounds - 1 ? block_run0 & 1 : 0);
	}
	return live;
}

template <typename K>
__device__ __forceinline__ typename Item<K>::T
padding_item()
{
	return Item<K>::make(0, NO_INDEX);
}

/*
 * Read a tile of keys, build sorted runs of kp, and reduce it by rounds.
 * Writes live items per block to out (as Items).
 */
template <typename K>
__global__ void __launch_bounds__(BITONIC_THREADS)
sort_reducer(Keys<K> in, int log_kp, int rounds, typename Item<K>::T *out)
{
	extern __shared__ char smem[];
	typename Item<K>::T *sm = reinterpret_cast<typename Item<K>::T *>(smem);
	uint32_t	n = in.d_n ? min(*in.d_n, in.n) : in.n;
	uint64_t	first = (uint64_t) blockIdx.x * TILE + threadIdx.x * ITEMS_PER_THREAD;
	int			kp = 1 << log_kp;
	int			i0 = threadIdx.x * ITEMS_PER_THREAD;
	typename Item<K>::T r[ITEMS_PER_THREAD];
	int			live;

	/* do work before writing: sorted runs of up to 16 in registers */
#pragma unroll
	for (int j = 0; j < ITEMS_PER_THREAD; j++)
	{
		uint64_t	i = first + j;

		r[j] = i < n ? Item<K>::make(in.keys[i], (uint32_t) i) : padding_item<K>();
	}
#pragma unroll
	for (int len = 2; len <= ITEMS_PER_THREAD; len <<= 1)
	{
		if (len > kp)
			break;
#pragma unroll
		for (int inc = len >> 1; inc > 0; inc >>= 1)
#pragma unroll
			for (int j = 0; j < ITEMS_PER_THREAD; j++)
				if (!(j & inc))
					compare_exchange<K>(r[j], r[j | inc], ((i0 + j) & len) == 0);
	}
#pragma unroll
	for (int j = 0; j < ITEMS_PER_THREAD; j++)
		sm[padded(i0 + j)] = r[j];
	__syncthreads();

	/* longer runs in shared memory */
	for (int log_len = 5; log_len <= log_kp; log_len++)
		steps_down_from<K>(sm, TILE, log_len - 1, log_len, 0);

	live = reduce_rounds<K>(sm, TILE, log_kp, rounds,
						 blockIdx.x * ((TILE >> rounds) >> log_kp));
	for (int i = threadIdx.x; i < live; i += blockDim.x)
		out[(uint64_t) blockIdx.x * live + i] = sm[padded(i)];
}

/* Read sorted alternating runs of kp items and reduce them by rounds. */
template <typename K>
__global__ void __launch_bounds__(BITONIC_THREADS)
bitonic_reducer(const typename Item<K>::T *in, uint64_t n, int log_kp, int rounds,
				typename Item<K>::T *out)
{
	extern __shared__ char smem[];
	typename Item<K>::T *sm = reinterpret_cast<typename Item<K>::T *>(smem);
	uint64_t	first = (uint64_t) blockIdx.x * TILE;
	int			live;

	for (int i = threadIdx.x; i < TILE; i += blockDim.x)
		sm[padded(i)] = first + i < n ? in[first + i] : padding_item<K>();
	__syncthreads();
	live = reduce_rounds<K>(sm, TILE, log_kp, rounds,
						 blockIdx.x * ((TILE >> rounds) >> log_kp));
	for (int i = threadIdx.x; i < live; i += blockDim.x)
		out[(uint64_t) blockIdx.x * live + i] = sm[padded(i)];
}

/* The first min(k, n) items of the final run, with their references. */
template <typename K>
__global__ void
bitonic_emit(Keys<K> in, const typename Item<K>::T *run, uint64_t k, Sink<K> out)
{
	uint32_t	n = in.d_n ? min(*in.d_n, in.n) : in.n;
	uint64_t	count = k < n ? k : n;

	for (uint64_t i = threadIdx.x; i < count; i += blockDim.x)
	{
		uint32_t	index = Item<K>::index(run[i]);

		out.keys[i] = Item<K>::key(run[i]);
		out.refs[i] = in.refs ? in.refs[index] : in.base + index;
	}
	if (threadIdx.x == 0)
		*out.d_count = (uint32_t) count;
}

static constexpr size_t
smem_bytes(size_t item_bytes)
{
	return (TILE + TILE / 16) * item_bytes;
}

template <typename K>
size_t
bitonic_arena_bytes(uint32_t n, uint64_t k)
{
	uint64_t	blocks = (n + TILE - 1) / TILE;

	/* two levels alive at once: at most a sixteenth of the input each */
	return 2 * arena_bytes<typename Item<K>::T>(blocks * (TILE / 16) + TILE);
}

template <typename K>
void
bitonic_topk(const Device &dev, Keys<K> in, uint64_t k, Sink<K> out, Arena &arena)
{
	int			log_kp = log2_ceil(k);
	int			log_tile = log2_ceil(TILE);
	uint64_t	blocks = (in.n + TILE - 1) / TILE;
	uint64_t	level_cap = blocks * (TILE / 16) + TILE;
	typedef typename Item<K>::T T;
	T		   *level[2] = {arena.take<T>(level_cap), arena.take<T>(level_cap)};
	size_t		smem = smem_bytes(sizeof(T));
	uint64_t	items;
	int			cur = 0;
	int			device = 0;
	uint32_t	bit;

	/*
	 * More than 48 KiB of shared memory is opted into per function in each
	 * device's context: once per device (a bit each; beyond 32 devices every
	 * time), by whichever thread launches there first.  Threads that race
	 * here both set it, which is harmless; the bit is published after.
	 */
	static std::atomic<uint32_t> attributes_set{0};

	cudaGetDevice(&device);
	bit = device >= 0 && device < 32 ? 1u << device : 0;
	if (bit == 0 || !(attributes_set.load(std::memory_order_acquire) & bit))
	{
		cudaFuncSetAttribute(sort_reducer<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
		cudaFuncSetAttribute(bitonic_reducer<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
		attributes_set.fetch_or(bit, std::memory_order_release);
	}
	if (blocks <= 1)
	{
		sort_reducer<K><<<1, BITONIC_THREADS, smem, dev.stream>>>(in, log_kp, log_tile - log_kp, level[cur]);
		items = (uint64_t) 1 << log_kp;
	}
	else
	{
		sort_reducer<K><<<(unsigned) blocks, BITONIC_THREADS, smem, dev.stream>>>(in, log_kp, 4, level[cur]);
		items = blocks * (TILE / 16);
	}
	while (items > ((uint64_t) 1 << log_kp))
	{
		uint64_t	b = (items + TILE - 1) / TILE;
		/* a last, padded tile goes all the way down to one run */
		int			rounds = b == 1 ? log_tile - log_kp : 4;

		bitonic_reducer<K><<<(unsigned) b, BITONIC_THREADS, smem, dev.stream>>>(level[cur], items, log_kp, rounds, level[1 - cur]);
		cur = 1 - cur;
		items = b == 1 ? ((uint64_t) 1 << log_kp) : b * (TILE / 16);
	}
	bitonic_emit<K><<<1, 256, 0, dev.stream>>>(in, level[cur], k, out);
}

template size_t bitonic_arena_bytes<uint32_t>(uint32_t, uint64_t);
template size_t bitonic_arena_bytes<uint64_t>(uint32_t, uint64_t);
template void bitonic_topk<uint32_t>(const Device &, Keys<uint32_t>, uint64_t,
									 Sink<uint32_t>, Arena &);
template void bitonic_topk<uint64_t>(const Device &, Keys<uint64_t>, uint64_t,
									 Sink<uint64_t>, Arena &);

}								/* namespace topk */
