/*
 * testlib.c
 *	  Data and checks for the top-k engine tests.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "testlib.h"

static const char *const names[DIST_COUNT] = {
	"uniform", "normal", "sorted", "reversed", "all-equal", "few-distinct",
	"narrow-range", "zipf", "special"
};

const char *
distribution_name(Distribution d)
{
	return names[d];
}

uint64_t
rng_next(TestRng *rng)
{
	/* splitmix64 */
	uint64_t	z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

double
rng_unit(TestRng *rng)
{
	return (rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

static double
special_value(TestRng *rng)
{
	static const double specials[] = {
		NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 1e300, -1e300,
		5e-324, -5e-324
	};

	return specials[rng_next(rng) % (sizeof(specials) / sizeof(specials[0]))];
}

/* the i-th of n values from d, as a double */
static double
draw(Distribution d, size_t i, size_t n, TestRng *rng)
{
	double		u = rng_unit(rng);

	switch (d)
	{
		case DIST_UNIFORM:
			return u;
		case DIST_NORMAL:
			return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * rng_unit(rng));
		case DIST_SORTED:
			return (double) i / (double) (n ? n : 1);
		case DIST_REVERSED:
			return 1.0 - (double) i / (double) (n ? n : 1);
		case DIST_ALL_EQUAL:
			return 42.0;
		case DIST_FEW_DISTINCT:
			return (double) (rng_next(rng) % 16);
		case DIST_NARROW_RANGE:
			return 1000.0 + u / 1024.0;
		case DIST_ZIPF:
			return floor(1.0 / pow(1.0 - u, 1.2));
		case DIST_SPECIAL:
			return (rng_next(rng) % 4 == 0) ? special_value(rng) : u - 0.5;
		case DIST_COUNT:
			break;
	}
	return 0.0;
}

void
make_keys(void *keys, size_t n, int key_width, Distribution d, TestRng *rng)
{
	bool		desc = rng_next(rng) & 1;
	bool		as_int = rng_next(rng) & 1;

	fill_keys(keys, n, key_width, d, desc, as_int, rng);
}

void
fill_keys(void *keys, size_t n, int key_width, Distribution d, bool desc,
		  bool as_int, TestRng *rng)
{
	as_int = as_int && key_width == 8 && d != DIST_SPECIAL;
	for (size_t i = 0; i < n; i++)
	{
		double		v = draw(d, i, n, rng);

		if (key_width == 4)
			((uint32_t *) keys)[i] = key_from_float4((float) v, desc);
		else if (as_int)
			((uint64_t *) keys)[i] = key_from_int64((int64_t) (v * 1e9), desc);
		else
			((uint64_t *) keys)[i] = key_from_float8(v, desc);
	}
}

static int
compare_u64_desc(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? 1 : (x > y ? -1 : 0);
}

uint64_t
key_at(const void *keys, int key_width, size_t i)
{
	return key_width == 4 ? ((const uint32_t *) keys)[i] : ((const uint64_t *) keys)[i];
}

bool
check_result(const void *keys, size_t n, int key_width, uint64_t k,
			 TopkMode mode, const TopkResult *result, const char *label)
{
	uint64_t   *sorted = malloc((n ? n : 1) * sizeof(uint64_t));
	uint8_t    *seen = calloc(n ? n : 1, 1);
	size_t		expect;
	bool		ok = true;

	for (size_t i = 0; i < n; i++)
		sorted[i] = key_at(keys, key_width, i);
	qsort(sorted, n, sizeof(uint64_t), compare_u64_desc);

	expect = k < n ? (size_t) k : n;
	if (mode == TOPK_WITH_TIES && expect > 0)
		while (expect < n && sorted[expect] == sorted[expect - 1])
			expect++;
	if (result->count != expect)
	{
		fprintf(stderr, "%s: %zu items, expected %zu\n", label, result->count, expect);
		ok = false;
	}
	for (size_t i = 0; ok && i < result->count; i++)
	{
		const TopkItem *item = &result->items[i];

		if (i > 0 && item->key > result->items[i - 1].key)
		{
			fprintf(stderr, "%s: item %zu out of order\n", label, i);
			ok = false;
		}
		else if (item->ref >= n || seen[item->ref])
		{
			fprintf(stderr, "%s: item %zu has bad or repeated reference %llu\n",
					label, i, (unsigned long long) item->ref);
			ok = false;
		}
		else if (key_at(keys, key_width, item->ref) != item->key)
		{
			fprintf(stderr, "%s: item %zu: key does not match its reference\n", label, i);
			ok = false;
		}
		else if (item->key != sorted[i])
		{
			fprintf(stderr, "%s: item %zu has key %llx, expected %llx\n", label, i,
					(unsigned long long) item->key, (unsigned long long) sorted[i]);
			ok = false;
		}
		else
			seen[item->ref] = 1;
	}
	free(sorted);
	free(seen);
	return ok;
}
