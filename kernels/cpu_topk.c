/*
 * cpu_topk.c
 *	  The CPU backend of the top-k engine: buffered selection on keys.
 *
 * Keys that can still make the answer are appended to a buffer of about 2k
 * items.  When it fills up, a selection (quickselect with random pivots and
 * a three-way partition, linear on any input) keeps the k largest and their
 * smallest key becomes the cut: from then on a key must beat the cut to be
 * appended, which rejects almost every key of a large input with one vector
 * comparison per 32 keys.  Sorted input, the worst case of a binary heap
 * (every key enters), costs one selection per k keys here, O(1) per key.
 * No allocation per key; the buffer grows only while it holds fewer than 2k
 * items, or to keep the ties of TOPK_WITH_TIES.  On x86-64 the block check
 * uses AVX2 where the processor has it.  The answer is sorted by an LSD
 * radix sort that skips the digits all its keys share.
 */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

#include "cpu_topk.h"

/* room kept beyond 2k so that small k still compacts rarely */
#define SLACK_ITEMS 4096
#define FIRST_CAPACITY 1024
/* keys checked together before looking at them one by one */
#define BLOCK_KEYS 32

typedef bool (*PushLoop) (CpuTopk *t, const void *keys, const uint64_t *refs, size_t n);

struct CpuTopk
{
	int			key_width;
	uint64_t	k;
	TopkMode	mode;
	TopkItem   *buf;
	size_t		count;
	size_t		cap;
	size_t		full_cap;		/* capacity at which we compact, not grow */
	uint64_t	pushed;			/* references handed out so far */
	bool		have_cut;		/* when set, only keys > cut can enter */
	uint64_t	cut;
	uint64_t	rng;			/* xorshift state for pivots */
	PushLoop	push;			/* the loop for the key width and processor */
};

static PushLoop choose_push(int key_width);

CpuTopk *
cpu_topk_create(int key_width, uint64_t k, TopkMode mode)
{
	CpuTopk    *t = calloc(1, sizeof(CpuTopk));
	size_t		max_items = SIZE_MAX / sizeof(TopkItem) / 4;

	if (t == NULL)
		return NULL;
	t->key_width = key_width;
	t->k = k;
	t->mode = mode;
	t->full_cap = (k > (max_items - SLACK_ITEMS) / 2) ? max_items :
		(size_t) (2 * k + SLACK_ITEMS);
	t->rng = UINT64_C(0x9e3779b97f4a7c15);
	t->push = choose_push(key_width);
	return t;
}

void
cpu_topk_destroy(CpuTopk *t)
{
	if (t == NULL)
		return;
	free(t->buf);
	free(t);
}

static bool
grow(CpuTopk *t, size_t cap)
{
	TopkItem   *buf = realloc(t->buf, cap * sizeof(TopkItem));

	if (buf == NULL)
		return false;
	t->buf = buf;
	t->cap = cap;
	return true;
}

static uint64_t
next_random(CpuTopk *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

static inline void
swap_items(TopkItem *a, TopkItem *b)
{
	TopkItem	tmp = *a;

	*a = *b;
	*b = tmp;
}

/* Sort a[lo, hi) by key, descending: for short ranges. */
static void
insertion_sort_desc(TopkItem *a, size_t lo, size_t hi)
{
	for (size_t i = lo + 1; i < hi; i++)
	{
		TopkItem	item = a[i];
		size_t		j = i;

		for (; j > lo && a[j - 1].key < item.key; j--)
			a[j] = a[j - 1];
		a[j] = item;
	}
}

/*
 * Rearrange a[0..n) so that a[nth] holds the key of descending rank nth,
 * with no smaller key before it and no larger key after it.
 */
static void
select_nth(CpuTopk *t, TopkItem *a, size_t n, size_t nth)
{
	size_t		lo = 0;
	size_t		hi = n;

	while (hi - lo > 16)
	{
		uint64_t	pivot = a[lo + next_random(t) % (hi - lo)].key;
		size_t		gt = lo;	/* a[lo..gt) > pivot */
		size_t		i = lo;		/* a[gt..i) == pivot */
		size_t		lt = hi;	/* a[lt..hi) < pivot */

		while (i < lt)
		{
			if (a[i].key > pivot)
				swap_items(&a[gt++], &a[i++]);
			else if (a[i].key < pivot)
				swap_items(&a[i], &a[--lt]);
			else
				i++;
		}
		if (nth < gt)
			hi = gt;
		else if (nth >= lt)
			lo = lt;
		else
			return;
	}
	insertion_sort_desc(a, lo, hi);
}

/* Keep the k largest (and, with ties, all keys equal to the k-th). */
static void
compact(CpuTopk *t)
{
	uint64_t	kth;

	if (t->count <= t->k)
		return;
	select_nth(t, t->buf, t->count, t->k - 1);
	kth = t->buf[t->k - 1].key;
	if (t->mode == TOPK_EXACT)
	{
		t->count = t->k;
		t->cut = kth;
		t->have_cut = true;
		return;
	}
	{
		size_t		kept = t->k;

		for (size_t i = t->k; i < t->count; i++)
			if (t->buf[i].key == kth)
				t->buf[kept++] = t->buf[i];
		t->count = kept;
	}
	/* a key equal to the k-th still ties with it */
	t->have_cut = kth > 0;
	t->cut = kth - 1;
}

/* The buffer is full: grow it, or compact it (growing for ties). */
static bool
make_room(CpuTopk *t)
{
	if (t->cap < t->full_cap)
	{
		size_t		cap = t->cap == 0 ? FIRST_CAPACITY : 2 * t->cap;

		return grow(t, cap < t->full_cap ? cap : t->full_cap);
	}
	compact(t);
	if (t->count > t->cap / 2)
		return grow(t, 2 * t->cap);
	return true;
}

static inline bool
append(CpuTopk *t, uint64_t key, uint64_t ref)
{
	if (t->count == t->cap && !make_room(t))
		return false;
	t->buf[t->count].key = key;
	t->buf[t->count].ref = ref;
	t->count++;
	return true;
}

typedef uint32_t u32x4 __attribute__((vector_size(16)));
typedef uint64_t u64x2 __attribute__((vector_size(16)));

/* Does any of the BLOCK_KEYS keys at p beat cut? */
static inline bool
any_above_u32(const uint32_t *p, uint32_t cut)
{
	u32x4		c = {cut, cut, cut, cut};
	u32x4		acc = {0, 0, 0, 0};

	for (int j = 0; j < BLOCK_KEYS; j += 4)
	{
		u32x4		v;

		memcpy(&v, p + j, sizeof(v));
		acc |= (u32x4) (v > c);
	}
	return (acc[0] | acc[1] | acc[2] | acc[3]) != 0;
}

static inline bool
any_above_u64(const uint64_t *p, uint64_t cut)
{
	u64x2		c = {cut, cut};
	u64x2		acc = {0, 0};

	for (int j = 0; j < BLOCK_KEYS; j += 2)
	{
		u64x2		v;

		memcpy(&v, p + j, sizeof(v));
		acc |= (u64x2) (v > c);
	}
	return (acc[0] | acc[1]) != 0;
}

/*
 * The loop of cpu_topk_push for one key width.  While there is a cut, whole
 * blocks of keys that cannot enter are skipped; the cut only rises, so a
 * stale copy of it merely lets a few more keys into the buffer.
 */
#define DEFINE_PUSH(NAME, KEY_T, ANY_ABOVE, ATTRIBUTES) \
static ATTRIBUTES bool \
NAME(CpuTopk *t, const void *all_keys, const uint64_t *refs, size_t n) \
{ \
	const KEY_T *keys = all_keys; \
	size_t		i = 0; \
	\
	while (i < n) \
	{ \
		if (t->have_cut) \
		{ \
			KEY_T		cut = (KEY_T) t->cut; \
			size_t		end; \
			\
			while (i + BLOCK_KEYS <= n && !ANY_ABOVE(keys + i, cut)) \
				i += BLOCK_KEYS; \
			end = (i + BLOCK_KEYS <= n) ? i + BLOCK_KEYS : n; \
			for (; i < end; i++) \
				if (keys[i] > cut && !append(t, keys[i], refs ? refs[i] : t->pushed + i)) \
					return false; \
		} \
		else if (!append(t, keys[i], refs ? refs[i] : t->pushed + i)) \
			return false; \
		else \
			i++; \
	} \
	return true; \
}

DEFINE_PUSH(push_u32, uint32_t, any_above_u32, )
DEFINE_PUSH(push_u64, uint64_t, any_above_u64, )

#ifdef HAVE_AVX2_PATH
static __attribute__((target("avx2"))) inline bool
any_above_u32_avx2(const uint32_t *p, uint32_t cut)
{
	__m256i		bias = _mm256_set1_epi32((int) 0x80000000u);
	__m256i		c = _mm256_xor_si256(_mm256_set1_epi32((int) cut), bias);
	__m256i		acc = _mm256_setzero_si256();

	for (int j = 0; j < BLOCK_KEYS; j += 8)
	{
		__m256i		v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (p + j)), bias);

		acc = _mm256_or_si256(acc, _mm256_cmpgt_epi32(v, c));
	}
	return !_mm256_testz_si256(acc, acc);
}

static __attribute__((target("avx2"))) inline bool
any_above_u64_avx2(const uint64_t *p, uint64_t cut)
{
	__m256i		bias = _mm256_set1_epi64x((long long) 0x8000000000000000ull);
	__m256i		c = _mm256_xor_si256(_mm256_set1_epi64x((long long) cut), bias);
	__m256i		acc = _mm256_setzero_si256();

	for (int j = 0; j < BLOCK_KEYS; j += 4)
	{
		__m256i		v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (p + j)), bias);

		acc = _mm256_or_si256(acc, _mm256_cmpgt_epi64(v, c));
	}
	return !_mm256_testz_si256(acc, acc);
}

DEFINE_PUSH(push_u32_avx2, uint32_t, any_above_u32_avx2, __attribute__((target("avx2"))))
DEFINE_PUSH(push_u64_avx2, uint64_t, any_above_u64_avx2, __attribute__((target("avx2"))))
#endif

/* the push loop for the key width, with AVX2 where the processor has it */
static PushLoop
choose_push(int key_width)
{
#ifdef HAVE_AVX2_PATH
	if (__builtin_cpu_supports("avx2"))
		return key_width == 4 ? push_u32_avx2 : push_u64_avx2;
#endif
	return key_width == 4 ? push_u32 : push_u64;
}

bool
cpu_topk_push(CpuTopk *t, const void *keys, size_t n)
{
	bool		ok;

	ok = t->k == 0 || t->push(t, keys, NULL, n);
	t->pushed += n;
	return ok;
}

bool
cpu_topk_push_refs(CpuTopk *t, const void *keys, const uint64_t *refs, size_t n)
{
	return t->k == 0 || t->push(t, keys, refs, n);
}

void
cpu_topk_refresh_cut(CpuTopk *t)
{
	compact(t);
}

bool
cpu_topk_cut(const CpuTopk *t, uint64_t *cut)
{
	*cut = t->cut;
	return t->have_cut;
}

#define SORT_BITS 11
#define SORT_BINS (1 << SORT_BITS)

/*
 * Sort the buffer by descending key: LSD radix sort, skipping every digit
 * all keys share.  false when out of memory for its scratch space.
 */
static bool
sort_desc(CpuTopk *t)
{
	TopkItem   *a = t->buf;
	TopkItem   *b;
	size_t		n = t->count;
	size_t	   *count;

	if (n < 64)
	{
		insertion_sort_desc(a, 0, n);
		return true;
	}
	b = malloc(n * sizeof(TopkItem));
	count = malloc(SORT_BINS * sizeof(size_t));
	if (b == NULL || count == NULL)
	{
		free(b);
		free(count);
		return false;
	}
	for (int shift = 0; shift < t->key_width * 8; shift += SORT_BITS)
	{
		size_t		at = 0;

		memset(count, 0, SORT_BINS * sizeof(size_t));
		for (size_t i = 0; i < n; i++)
			count[(a[i].key >> shift) & (SORT_BINS - 1)]++;
		if (count[(a[0].key >> shift) & (SORT_BINS - 1)] == n)
			continue;			/* every key has this digit */
		/* descending: the largest digit first */
		for (int d = SORT_BINS - 1; d >= 0; d--)
		{
			size_t		c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i].key >> shift) & (SORT_BINS - 1)]++] = a[i];
		{
			TopkItem   *swap = a;

			a = b;
			b = swap;
		}
	}
	if (a != t->buf)
	{
		memcpy(t->buf, a, n * sizeof(TopkItem));
		b = a;
	}
	free(b);
	free(count);
	return true;
}

bool
cpu_topk_result(CpuTopk *t, TopkResult *result)
{
	compact(t);
	if (!sort_desc(t))
		return false;
	result->items = t->buf;
	result->count = t->count;
	return true;
}
