/*
 * gpu_groups.cuh
 *	  A GpuGroups table (gpu_groups.h) as kernels use it: a group found or
 *	  made for a row's grouping values, and a warp's rows' or a record's
 *	  values added to its cells, with atomics, so that any number of threads
 *	  add at once.
 *
 * A slot is a record (gpu_groups.h) whose NULL-flags word also holds the
 * slot's state in its high half: empty, being made, or made.  A thread
 * that finds an empty slot claims it with a compare-and-swap, writes the
 * grouping values, then marks it made; a thread that finds a slot being
 * made waits until it is made before it compares.  Probing is linear.
 */
#ifndef GPU_GROUPS_CUH
#define GPU_GROUPS_CUH

#include "gpu_groups.h"
#include "keys.h"

#define GROUP_SLOT_EMPTY 0u
#define GROUP_SLOT_MAKING 1u
#define GROUP_SLOT_MADE 2u

/* the table as a kernel sees it */
struct GroupsView
{
	const GpuGroupsSpec *spec;	/* in device memory */
	char	   *slots;
	uint64_t	mask;			/* slots - 1: a power of two */
	size_t		stride;			/* a slot's bytes: a record's */
	unsigned long long *ngroups;
};

/* The table's view for a kernel (gpu_groups.cu). */
GroupsView	gpu_groups_view(GpuGroups *g);

static __device__ __forceinline__ uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static __device__ __forceinline__ uint64_t
group_hash(uint64_t a, uint64_t b, uint32_t nulls)
{
	return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL * (nulls + 1)));
}

/* The state of a slot, read past the cache. */
static __device__ __forceinline__ uint32_t
slot_state(const char *slot)
{
	return *(const volatile uint32_t *) (slot + 20);
}

/*
 * A new group's cells, zero but min's and max's values: the largest and
 * the smallest, which any value replaces.
 */
static __device__ __forceinline__ void
groups_init_cells(const GpuGroupsSpec *spec, char *cells)
{
	for (int i = 0; i < spec->naggs; i++)
	{
		if (spec->aggs[i].kind == GPU_GROUPS_MIN)
			*(int64_t *) (cells + spec->aggs[i].offset + 8) = INT64_MAX;
		else if (spec->aggs[i].kind == GPU_GROUPS_MAX)
			*(int64_t *) (cells + spec->aggs[i].offset + 8) = INT64_MIN;
	}
}

/*
 * The slot of the group (a, b, nulls), made if new; *made says whether it
 * was, for the caller to count in v.ngroups.
 */
static __device__ char *
groups_find(const GroupsView &v, uint64_t a, uint64_t b, uint32_t nulls, bool *made)
{
	uint64_t	i = group_hash(a, b, nulls) & v.mask;

	*made = false;
	for (;;)
	{
		char	   *slot = v.slots + i * v.stride;
		uint32_t	state = slot_state(slot);

		if (state == GROUP_SLOT_EMPTY)
		{
			state = atomicCAS((unsigned int *) (slot + 20), GROUP_SLOT_EMPTY, GROUP_SLOT_MAKING);
			if (state == GROUP_SLOT_EMPTY)
			{
				*(uint64_t *) slot = a;
				*(uint64_t *) (slot + 8) = b;
				*(uint32_t *) (slot + 16) = nulls;
				groups_init_cells(v.spec, slot + GPU_GROUPS_HEADER_BYTES);
				__threadfence();
				atomicExch((unsigned int *) (slot + 20), GROUP_SLOT_MADE);
				*made = true;
				return slot;
			}
		}
		while (state == GROUP_SLOT_MAKING)
			state = slot_state(slot);
		__threadfence();
		if (*(const volatile uint64_t *) slot == a &&
			*(const volatile uint64_t *) (slot + 8) == b &&
			*(const volatile uint32_t *) (slot + 16) == nulls)
			return slot;
		i = (i + 1) & v.mask;
	}
}

static __device__ __forceinline__ void
add_u64(char *p, uint64_t x)
{
	atomicAdd((unsigned long long *) p, (unsigned long long) x);
}

/* A 128-bit value (lo, hi) added to the 128-bit sum at p: any order gives the same sum. */
static __device__ __forceinline__ void
add_u128(char *p, uint64_t lo, uint64_t hi)
{
	uint64_t	old = atomicAdd((unsigned long long *) p, (unsigned long long) lo);

	hi += old + lo < old;
	if (hi != 0)
		add_u64(p + 8, hi);
}

/* A stored value of a by-value column as its Datum: signed, sign-extended. */
static __device__ __forceinline__ int64_t
stored_datum(const void *p, int width)
{
	switch (width)
	{
		case 1:
			return *(const uint8_t *) p;
		case 2:
			return *(const int16_t *) p;
		case 4:
			return *(const int32_t *) p;
		default:
			return *(const int64_t *) p;
	}
}

/* Another set's cell of a group added to this one's. */
static __device__ __forceinline__ void
groups_combine_cell(const GpuGroupsAgg &agg, char *cell, const char *from)
{
	switch (agg.kind)
	{
		case GPU_GROUPS_COUNT_STAR:
		case GPU_GROUPS_COUNT:
			add_u64(cell, *(const uint64_t *) from);
			break;
		case GPU_GROUPS_SUM:
			add_u64(cell, *(const uint64_t *) from);
			add_u64(cell + 8, *(const uint64_t *) (from + 8));
			break;
		case GPU_GROUPS_WIDE_SUM:
			add_u128(cell, *(const uint64_t *) from, *(const uint64_t *) (from + 8));
			add_u64(cell + 16, *(const uint64_t *) (from + 16));
			break;
		case GPU_GROUPS_MIN:
		case GPU_GROUPS_MAX:
			if (*(const uint64_t *) (from + 16) == 0)
				break;
			if (agg.kind == GPU_GROUPS_MIN)
				atomicMin((long long *) (cell + 8), *(const long long *) (from + 8));
			else
				atomicMax((long long *) (cell + 8), *(const long long *) (from + 8));
			add_u64(cell + 16, *(const uint64_t *) (from + 16));
			break;
	}
}

/* The sum over the peers (lanes of one group, this one among them) of x: each gets it. */
static __device__ __forceinline__ int64_t
peers_sum(unsigned peers, int64_t x)
{
	int64_t		sum = 0;

	for (unsigned m = peers; m != 0; m &= m - 1)
		sum += __shfl_sync(peers, x, __ffs(m) - 1);
	return sum;
}

/* The same as a 128-bit sum, in *lo and *hi. */
static __device__ __forceinline__ void
peers_wide_sum(unsigned peers, int64_t x, uint64_t *lo, uint64_t *hi)
{
	*lo = 0;
	*hi = 0;
	for (unsigned m = peers; m != 0; m &= m - 1)
	{
		int64_t		y = __shfl_sync(peers, x, __ffs(m) - 1);
		uint64_t	before = *lo;

		*lo += (uint64_t) y;
		*hi += (y < 0 ? ~0ULL : 0) + (*lo < before);
	}
}

/* The least (or largest) of the peers' x that have a value; INT64_MAX (INT64_MIN) if none. */
static __device__ __forceinline__ int64_t
peers_best(unsigned peers, unsigned valued, int64_t x, bool largest)
{
	int64_t		best = largest ? INT64_MIN : INT64_MAX;

	for (unsigned m = peers; m != 0; m &= m - 1)
	{
		int			lane = __ffs(m) - 1;
		int64_t		y = __shfl_sync(peers, x, lane);

		if ((valued >> lane) & 1)
			best = largest ? max(best, y) : min(best, y);
	}
	return best;
}

/*
 * A text grouping value as a heap tuple stores it (p), in two grouping
 * values: its bytes zero-padded, first byte highest (a text holds no zero
 * byte, so no two values share them); false for one the GPU does not
 * group, of more than GPU_GROUPS_TEXT_BYTES bytes, compressed or out of
 * line.
 */
static __device__ __forceinline__ bool
text_group_values(const uint8_t *p, uint64_t values[2])
{
	const uint8_t *bytes;
	uint32_t	length;

	if (!filter_stored_text_bytes(p, &bytes, &length) || length > GPU_GROUPS_TEXT_BYTES)
		return false;
	values[0] = filter_text_key(bytes, min(length, 8u));
	values[1] = length > 8 ? filter_text_key(bytes + 8, length - 8) : 0;
	return true;
}

/*
 * Whether the GPU can group a row: a text grouping value it holds, if the
 * grouping is by text (the page kernel sends a page with any other back).
 */
template <typename Row>
static __device__ bool
groups_hold_row(const GroupsView &v, const Row &row)
{
	const GpuColumn &column = v.spec->columns[0];
	uint64_t	values[2];
	bool		isnull;
	const void *p;

	if (column.kind != VALUE_TEXT)
		return true;
	p = row.value(column, &isnull);
	return isnull || text_group_values((const uint8_t *) p, values);
}

/*
 * A row that passed the filter (row, or NULL where this lane has none)
 * added to its group; row->value(column, &isnull) as for the programs
 * (gpu_program.cuh).  Every lane of a warp calls it at once: the lanes of
 * one group (its peers) add up their values by shuffles, and one of them
 * adds the sums to the cells, so that a group many rows of a warp share
 * takes one atomic, not one a row.  Whether this lane's group is new.
 */
template <typename Row>
static __device__ bool
groups_add_row(const GroupsView &v, const Row *row)
{
	const GpuGroupsSpec *spec = v.spec;
	unsigned	lanes = __ballot_sync(0xFFFFFFFFu, row != NULL);
	uint64_t	values[2] = {0, 0};
	uint32_t	nulls = 0;
	char	   *cells;
	bool		made;
	unsigned	peers;
	bool		leader;

	if (row == NULL)
		return false;
	for (int c = 0; c < spec->ncolumns; c++)
	{
		bool		isnull;
		const void *p = row->value(spec->columns[c], &isnull);

		if (isnull)
			nulls |= 1u << c;
		else if (spec->columns[c].kind == VALUE_TEXT)
			(void) text_group_values((const uint8_t *) p, values);
		else
			values[c] = (uint64_t) stored_datum(p, spec->columns[c].width);
	}
	cells = groups_find(v, values[0], values[1], nulls, &made) + GPU_GROUPS_HEADER_BYTES;
	peers = __match_any_sync(lanes, (unsigned long long) cells);
	leader = (threadIdx.x & 31) == __ffs(peers) - 1;
	for (int i = 0; i < spec->naggs; i++)
	{
		const GpuGroupsAgg &agg = spec->aggs[i];
		char	   *cell = cells + agg.offset;
		bool		isnull = false;
		const void *p = agg.kind == GPU_GROUPS_COUNT_STAR ? NULL :
			row->value(agg.column, &isnull);
		int64_t		x = isnull || p == NULL || agg.column.kind == VALUE_TEXT ? 0 :
			stored_datum(p, agg.column.width);
		unsigned	valued = __ballot_sync(peers, !isnull) & peers;
		uint64_t	lo;
		uint64_t	hi;

		switch (agg.kind)
		{
			case GPU_GROUPS_COUNT_STAR:
			case GPU_GROUPS_COUNT:
				if (leader && valued != 0)
					add_u64(cell, __popc(valued));
				break;
			case GPU_GROUPS_SUM:
				x = peers_sum(peers, x);
				if (leader && valued != 0)
				{
					add_u64(cell, (uint64_t) x);
					add_u64(cell + 8, __popc(valued));
				}
				break;
			case GPU_GROUPS_WIDE_SUM:
				peers_wide_sum(peers, x, &lo, &hi);
				if (leader && valued != 0)
				{
					add_u128(cell, lo, hi);
					add_u64(cell + 16, __popc(valued));
				}
				break;
			case GPU_GROUPS_MIN:
			case GPU_GROUPS_MAX:
				x = peers_best(peers, valued, x, agg.kind == GPU_GROUPS_MAX);
				if (leader && valued != 0)
				{
					if (agg.kind == GPU_GROUPS_MIN)
						atomicMin((long long *) (cell + 8), (long long) x);
					else
						atomicMax((long long *) (cell + 8), (long long) x);
					add_u64(cell + 16, __popc(valued));
				}
				break;
		}
	}
	return made;
}

/*
 * A warp's rows counted once groups_add_row has taken them (every lane
 * calls it at once): those that passed the filter into *passed, the groups
 * they made into v.ngroups, an atomic of each a warp.
 */
static __device__ __forceinline__ void
groups_count_rows(const GroupsView &v, bool pass, bool made, unsigned long long *passed)
{
	uint32_t	passing = __ballot_sync(0xFFFFFFFFu, pass);
	uint32_t	making = __ballot_sync(0xFFFFFFFFu, made);

	if ((threadIdx.x & 31) == 0 && passing != 0)
		atomicAdd(passed, (unsigned long long) __popc(passing));
	if ((threadIdx.x & 31) == 0 && making != 0)
		atomicAdd(v.ngroups, (unsigned long long) __popc(making));
}

#endif							/* GPU_GROUPS_CUH */
