/*
 * cpu_bench.c
 *	  The CPU top-k backend next to bounded binary heaps, one thread, same
 *	  keys, same sorted answer:
 *	  - "PostgreSQL heap": what PostgreSQL's top-N heapsort does, a bounded
 *		heap of 24-byte SortTuples compared through a comparator function
 *		(ApplySortComparator and a SortSupport comparator);
 *	  - "tight heap": the same algorithm on (key, reference) pairs with the
 *		comparison inlined, a lower bound for any heap.
 *
 * Usage: cpu_bench [--quick].  Keys are DESC keys (ascending values are
 * ascending keys: the heap's worst case), pushed in batches of 2^16 as the
 * custom scan will.  Grid: n = 2^20 .. 2^27 uniform and every distribution
 * at 2^24 and 2^27, 4- and 8-byte keys.  Answers are checked against the
 * heaps'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_topk.h"
#include "testlib.h"

#define BATCH ((size_t) 1 << 16)

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* PostgreSQL's SortTuple (utils/sort/tuplesort.c) */
typedef struct SortTuple
{
	void	   *tuple;
	uint64_t	datum1;
	bool		isnull1;
	int			srctape;
} SortTuple;

typedef int (*SortComparator) (uint64_t x, uint64_t y);

static __attribute__((noinline)) int
compare_datums(uint64_t x, uint64_t y)
{
	return x < y ? -1 : (x > y ? 1 : 0);
}

/* ApplySortComparator, with the heap's order reversed (worst on top) */
static inline int
compare_tuples(const SortTuple *a, const SortTuple *b, SortComparator cmp)
{
	if (a->isnull1 || b->isnull1)
		return (int) b->isnull1 - (int) a->isnull1;
	return cmp(a->datum1, b->datum1);
}

static void
sift_down(SortTuple *heap, size_t size, SortTuple item, SortComparator cmp)
{
	size_t		at = 0;

	for (;;)
	{
		size_t		child = 2 * at + 1;

		if (child >= size)
			break;
		if (child + 1 < size && compare_tuples(&heap[child + 1], &heap[child], cmp) < 0)
			child++;
		if (compare_tuples(&item, &heap[child], cmp) <= 0)
			break;
		heap[at] = heap[child];
		at = child;
	}
	heap[at] = item;
}

/* the bounded heap of tuplesort_puttuple_common and sort_bounded_heap */
static size_t
postgres_heap_topk(const void *keys, size_t n, int width, uint64_t k, SortTuple *heap,
				   SortComparator cmp)
{
	size_t		size = 0;

	if (k == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		SortTuple	st;

		st.tuple = (void *) (uintptr_t) i;
		st.datum1 = key_at(keys, width, i);
		st.isnull1 = false;
		st.srctape = 0;
		if (size < k)
		{
			size_t		at = size++;

			while (at > 0 && compare_tuples(&st, &heap[(at - 1) / 2], cmp) < 0)
			{
				heap[at] = heap[(at - 1) / 2];
				at = (at - 1) / 2;
			}
			heap[at] = st;
		}
		else if (compare_tuples(&st, &heap[0], cmp) > 0)
			sift_down(heap, size, st, cmp);
	}
	for (size_t end = size; end > 1; end--)
	{
		SortTuple	last = heap[end - 1];

		heap[end - 1] = heap[0];
		sift_down(heap, end - 1, last, cmp);
	}
	return size;
}

/* item into the min-heap heap[0..size) at its root, moved down to its place */
static void
sift_down_items(TopkItem *heap, size_t size, TopkItem item)
{
	size_t		at = 0;

	for (;;)
	{
		size_t		child = 2 * at + 1;

		if (child >= size)
			break;
		if (child + 1 < size && heap[child + 1].key < heap[child].key)
			child++;
		if (heap[child].key >= item.key)
			break;
		heap[at] = heap[child];
		at = child;
	}
	heap[at] = item;
}

/* a min-heap of the k largest keys seen, then sorted by heapsort */
static size_t
heap_topk(const void *keys, size_t n, int width, uint64_t k, TopkItem *heap)
{
	size_t		size = 0;

	if (k == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		TopkItem	item = {key_at(keys, width, i), i};
		size_t		at;

		if (size < k)
		{
			/* sift up */
			at = size++;
			while (at > 0 && heap[(at - 1) / 2].key > item.key)
			{
				heap[at] = heap[(at - 1) / 2];
				at = (at - 1) / 2;
			}
			heap[at] = item;
			continue;
		}
		if (item.key <= heap[0].key)
			continue;
		/* replace the root and sift down */
		sift_down_items(heap, size, item);
	}
	/* heapsort: the smallest goes last, so the answer is descending */
	for (size_t end = size; end > 1; end--)
	{
		TopkItem	last = heap[end - 1];

		heap[end - 1] = heap[0];
		sift_down_items(heap, end - 1, last);
	}
	return size;
}

/* one configuration's times, in seconds */
typedef struct Row
{
	double		ours;
	double		heap;
	double		pg_heap;
} Row;

static double
median3(double a, double b, double c)
{
	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

static bool
bench_one(const void *keys, size_t n, int width, uint64_t k, Row *row, TopkItem *heap,
		  SortTuple *pg_heap)
{
	double		t_ours[3];
	double		t_heap[3];
	double		t_pg[3];
	size_t		heap_count = 0;
	size_t		pg_count = 0;
	TopkResult	r = {NULL, 0};
	CpuTopk    *t = NULL;
	bool		same = true;

	for (int rep = 0; rep < 3; rep++)
	{
		double		start = now();

		if (t)
			cpu_topk_destroy(t);
		t = cpu_topk_create(width, k, TOPK_EXACT);
		for (size_t i = 0; i < n; i += BATCH)
			cpu_topk_push(t, (const char *) keys + i * width, n - i < BATCH ? n - i : BATCH);
		cpu_topk_result(t, &r);
		t_ours[rep] = now() - start;

		start = now();
		heap_count = heap_topk(keys, n, width, k, heap);
		t_heap[rep] = now() - start;

		start = now();
		pg_count = postgres_heap_topk(keys, n, width, k, pg_heap, compare_datums);
		t_pg[rep] = now() - start;
	}
	if (r.count != heap_count || r.count != pg_count)
		same = false;
	for (size_t i = 0; same && i < r.count; i++)
		same = r.items[i].key == heap[i].key && r.items[i].key == pg_heap[i].datum1;
	cpu_topk_destroy(t);
	row->ours = median3(t_ours[0], t_ours[1], t_ours[2]);
	row->heap = median3(t_heap[0], t_heap[1], t_heap[2]);
	row->pg_heap = median3(t_pg[0], t_pg[1], t_pg[2]);
	return same;
}

int
main(int argc, char **argv)
{
	bool		quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	int			top_log = quick ? 22 : 27;
	size_t		max_n = (size_t) 1 << top_log;
	const uint64_t ks[] = {1, 32, 256, 1024, 16384, 262144, 1048576};
	void	   *keys = malloc(max_n * 8);
	TopkItem   *heap = malloc(((size_t) 1 << 20) * sizeof(TopkItem));
	SortTuple  *pg_heap = malloc(((size_t) 1 << 20) * sizeof(SortTuple));
	TestRng		rng = {42};
	int			nrows = 0;
	int			wrong = 0;
	double		worst_ratio = 1e9;
	double		worst_big_k = 1e9;
	double		worst_tight = 1e9;
	double		worst_tight_big_k = 1e9;

	printf("| key | n | distribution | k | CPU backend ms | PostgreSQL heap ms | speed-up | tight heap ms | speed-up |\n");
	printf("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
	for (int width = 4; width <= 8; width += 4)
		for (int lg = 20; lg <= top_log; lg++)
			for (int d = 0; d < DIST_SPECIAL; d++)
			{
				size_t		n = (size_t) 1 << lg;

				/* every distribution at two sizes, uniform at all */
				if (d != DIST_UNIFORM && lg != 24 && lg != top_log)
					continue;
				if (d == DIST_UNIFORM && lg % 2 == 1 && lg != top_log)
					continue;
				fill_keys(keys, n, width, (Distribution) d, true, width == 8, &rng);
				for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
				{
					Row			row;
					bool		sorted_like = d == DIST_SORTED || d == DIST_REVERSED;

					if (ks[ki] > n)
						continue;
					if (d != DIST_UNIFORM && ks[ki] != 32 && ks[ki] != 1024 && ks[ki] != 262144)
						continue;
					if (!bench_one(keys, n, width, ks[ki], &row, heap, pg_heap))
						wrong++;
					printf("| %d-byte | 2^%d | %s | %llu | %.2f | %.2f | %.1f | %.2f | %.1f |\n", width, lg,
						   distribution_name((Distribution) d), (unsigned long long) ks[ki],
						   row.ours * 1e3, row.pg_heap * 1e3, row.pg_heap / row.ours,
						   row.heap * 1e3, row.heap / row.ours);
					fflush(stdout);
					if (row.pg_heap / row.ours < worst_ratio)
						worst_ratio = row.pg_heap / row.ours;
					if ((ks[ki] >= 1024 || sorted_like) && row.pg_heap / row.ours < worst_big_k)
						worst_big_k = row.pg_heap / row.ours;
					if (row.heap / row.ours < worst_tight)
						worst_tight = row.heap / row.ours;
					if ((ks[ki] >= 1024 || sorted_like) && row.heap / row.ours < worst_tight_big_k)
						worst_tight_big_k = row.heap / row.ours;
					nrows++;
				}
			}
	printf("\nAgainst the PostgreSQL heap: worst speed-up for k >= 1024 or sorted input %.2f (>= 2): %s; "
		   "worst overall %.2f (>= 1, never slower): %s.\n",
		   worst_big_k, worst_big_k >= 2 ? "PASS" : "FAIL", worst_ratio,
		   worst_ratio >= 1 ? "PASS" : "FAIL");
	printf("Against the tight heap: worst speed-up for k >= 1024 or sorted input %.2f; worst overall %.2f.\n",
		   worst_tight_big_k, worst_tight);
	printf("Answers equal to both heaps': %d of %d.\n", nrows - wrong, nrows);
	free(keys);
	free(heap);
	free(pg_heap);
	return wrong ? 1 : 0;
}
