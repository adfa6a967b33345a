/*
 * test_cpu.c
 *	  Tests of the key encodings and of the CPU top-k backend against a plain
 *	  sort.  Usage: test_cpu [SEED] [CASES]; the seed is printed.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu_topk.h"
#include "keys.h"
#include "testlib.h"

static int	failures = 0;

/*
 * Values of one type in ascending PostgreSQL order, as groups of equal
 * values.  Each group is up to 3 values; NAN marks an unused slot for
 * integer groups, so they use the count instead.
 */
typedef struct Group
{
	int			count;
	double		v[3];
} Group;

static uint64_t
encode(KeyType type, double v, bool desc)
{
	switch (type)
	{
		case KEY_INT2:
			return key_from_int32((int16_t) v, desc);
		case KEY_INT4:
		case KEY_DATE:
			return key_from_int32((int32_t) v, desc);
		case KEY_INT8:
		case KEY_TIMESTAMP:
		case KEY_TIMESTAMPTZ:
			return key_from_int64((int64_t) v, desc);
		case KEY_FLOAT4:
			return key_from_float4((float) v, desc);
		case KEY_FLOAT8:
			return key_from_float8(v, desc);
	}
	return 0;
}

static void
check_order(const char *name, KeyType type, const Group *groups, int ngroups)
{
	for (int desc = 0; desc <= 1; desc++)
	{
		for (int i = 0; i < ngroups; i++)
			for (int a = 0; a < groups[i].count; a++)
				for (int j = 0; j < ngroups; j++)
					for (int b = 0; b < groups[j].count; b++)
					{
						uint64_t	x = encode(type, groups[i].v[a], desc);
						uint64_t	y = encode(type, groups[j].v[b], desc);
						/* DESC: the larger value gets the larger key */
						int			want = (i == j) ? 0 : ((i < j) == desc ? -1 : 1);
						int			got = (x == y) ? 0 : (x < y ? -1 : 1);

						if (want != got)
						{
							fprintf(stderr, "%s %s: group %d value %d vs group %d value %d\n",
									name, desc ? "DESC" : "ASC", i, a, j, b);
							failures++;
						}
					}
		/* NULL: first or last, strictly so where the encoding is exact */
		for (int nulls_first = 0; nulls_first <= 1; nulls_first++)
		{
			uint64_t	null_key = key_null(type, nulls_first);

			for (int i = 0; i < ngroups; i++)
				for (int a = 0; a < groups[i].count; a++)
				{
					uint64_t	x = encode(type, groups[i].v[a], desc);
					bool		ok = nulls_first ?
						(key_null_is_exact(type) ? null_key > x : null_key >= x) :
						(key_null_is_exact(type) ? null_key < x : null_key <= x);

					if (!ok)
					{
						fprintf(stderr, "%s %s NULLS %s: NULL misplaced against group %d\n",
								name, desc ? "DESC" : "ASC", nulls_first ? "FIRST" : "LAST", i);
						failures++;
					}
				}
		}
	}
}

static void
test_encodings(void)
{
	const Group int2[] = {{1, {-32768}}, {1, {-1}}, {1, {0}}, {1, {1}}, {1, {32767}}};
	const Group int4[] = {{1, {-2147483648.0}}, {1, {-65536}}, {1, {-1}}, {1, {0}},
	{1, {1}}, {1, {65536}}, {1, {2147483647.0}}};
	/* int8 values exactly representable as doubles, extremes included */
	const Group int8[] = {{1, {-9223372036854775808.0}}, {1, {-4294967296.0}}, {1, {-1}},
	{1, {0}}, {1, {1}}, {1, {4294967296.0}}, {1, {4611686018427387904.0}}};
	const Group f4[] = {{1, {-INFINITY}}, {1, {-FLT_MAX}}, {1, {-1}}, {1, {-FLT_TRUE_MIN}},
	{2, {0.0, -0.0}}, {1, {FLT_TRUE_MIN}}, {1, {FLT_MIN}}, {1, {1}},
	{1, {FLT_MAX}}, {1, {INFINITY}}, {2, {NAN, -NAN}}};
	const Group f8[] = {{1, {-INFINITY}}, {1, {-DBL_MAX}}, {1, {-1}}, {1, {-DBL_TRUE_MIN}},
	{2, {0.0, -0.0}}, {1, {DBL_TRUE_MIN}}, {1, {1}}, {1, {DBL_MAX}},
	{1, {INFINITY}}, {2, {NAN, -NAN}}};
	/* date: -infinity is INT32_MIN, infinity INT32_MAX; 4713-11-24 BC is -2451545 */
	const Group date[] = {{1, {-2147483648.0}}, {1, {-2451545}}, {1, {0}}, {1, {9000}},
	{1, {2147483647.0}}};

	check_order("int2", KEY_INT2, int2, 5);
	check_order("int4", KEY_INT4, int4, 7);
	check_order("int8", KEY_INT8, int8, 7);
	check_order("float4", KEY_FLOAT4, f4, 11);
	check_order("float8", KEY_FLOAT8, f8, 10);
	check_order("date", KEY_DATE, date, 5);
	check_order("timestamp", KEY_TIMESTAMP, int8, 7);
	check_order("timestamptz", KEY_TIMESTAMPTZ, int8, 7);
	/* NaNs with other payloads are the same key */
	{
		uint32_t	bits = 0x7f800001u;
		float		other_nan;

		memcpy(&other_nan, &bits, sizeof(other_nan));
		if (key_from_float4(other_nan, true) != key_from_float4(NAN, true))
		{
			fprintf(stderr, "float4: NaN payloads differ\n");
			failures++;
		}
	}
}

/* Push n keys in batches of random sizes, as the custom scan will. */
static bool
run_cpu(const void *keys, size_t n, int width, uint64_t k, TopkMode mode,
		TestRng *rng, TopkResult *result, CpuTopk **out)
{
	CpuTopk    *t = cpu_topk_create(width, k, mode);
	size_t		done = 0;

	if (t == NULL)
		return false;
	while (done < n)
	{
		size_t		batch = 1 + rng_next(rng) % (rng_next(rng) % 2 ? 1000 : 300000);

		if (batch > n - done)
			batch = n - done;
		if (!cpu_topk_push(t, (const char *) keys + done * width, batch))
			return false;
		done += batch;
	}
	*out = t;
	return cpu_topk_result(t, result);
}

static uint64_t
random_k(size_t n, TestRng *rng)
{
	switch (rng_next(rng) % 6)
	{
		case 0:
			return rng_next(rng) % 3;	/* 0, 1, 2 */
		case 1:
			return n + rng_next(rng) % 2;	/* n, n + 1 */
		case 2:
			return n ? rng_next(rng) % n : 0;
		default:
			return 1 + rng_next(rng) % 3000;
	}
}

static void
test_random(uint64_t seed, int cases)
{
	TestRng		rng = {seed};
	void	   *keys = malloc((size_t) 8 << 22);

	for (int c = 0; c < cases; c++)
	{
		size_t		n;
		int			width = (rng_next(&rng) & 1) ? 8 : 4;
		Distribution d = rng_next(&rng) % DIST_COUNT;
		TopkMode	mode = (rng_next(&rng) & 1) ? TOPK_WITH_TIES : TOPK_EXACT;
		uint64_t	k;
		char		label[200];
		TopkResult	result;
		CpuTopk    *t;

		switch (rng_next(&rng) % 4)
		{
			case 0:
				n = rng_next(&rng) % 20;
				break;
			case 1:
				n = rng_next(&rng) % 5000;
				break;
			case 2:
				n = rng_next(&rng) % (1 << 18);
				break;
			default:
				n = (c % 20 == 0) ? (size_t) 1 << 22 : rng_next(&rng) % (1 << 20);
				break;
		}
		k = random_k(n, &rng);
		if (mode == TOPK_WITH_TIES && d == DIST_ALL_EQUAL && n > (1 << 20))
			d = DIST_FEW_DISTINCT;	/* keeps the answer small */
		make_keys(keys, n, width, d, &rng);
		snprintf(label, sizeof(label), "case %d (n=%zu k=%llu %d-byte %s %s)", c, n,
				 (unsigned long long) k, width, distribution_name(d),
				 mode == TOPK_EXACT ? "exact" : "with-ties");
		if (!run_cpu(keys, n, width, k, mode, &rng, &result, &t))
		{
			fprintf(stderr, "%s: out of memory\n", label);
			failures++;
			continue;
		}
		if (!check_result(keys, n, width, k, mode, &result, label))
			failures++;
		cpu_topk_destroy(t);
	}
	free(keys);
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 && argv[1][0] ? strtoull(argv[1], NULL, 10) : (uint64_t) time(NULL);
	int			cases = argc > 2 ? atoi(argv[2]) : 400;

	printf("test_cpu: seed %llu, %d random cases\n", (unsigned long long) seed, cases);
	test_encodings();
	test_random(seed, cases);
	if (failures)
	{
		printf("test_cpu: %d FAILED (seed %llu)\n", failures, (unsigned long long) seed);
		return 1;
	}
	printf("test_cpu: all passed\n");
	return 0;
}
