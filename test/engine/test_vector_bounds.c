/*
 * test_vector_bounds.c
 *	  Tests of kernels/vector_bounds.h: pgvector's distances, computed as
 *	  its compiler may sum them (in order, in 4, 8 or 16 lanes, backwards,
 *	  pairwise, with fused multiply-adds or without), must fall within the
 *	  bounds for every row, the bounds' sums taken whole or in parts as a
 *	  GPU's lanes take them; over vectors whose sums cancel, underflow,
 *	  approach float's limit, and zero vectors.  Usage:
 *	  test_vector_bounds [SEED] [CASES]; the seed is printed.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "testlib.h"
#include "vector_bounds.h"

#define MAX_DIMS 2000
#define ORDERS 6

static int	failures = 0;

/* A float sum of terms the way one of pgvector's compilations may add them. */
static float
float_sum(const float *a, const float *b, int n, int order, float (*term) (float, float, float))
{
	float		lanes[16] = {0};
	int			width = order == 1 ? 4 : order == 2 ? 8 : order == 3 ? 16 : 1;
	float		sum = 0.0f;

	if (order == 4)
	{
		for (int i = n - 1; i >= 0; i--)
			sum = term(a[i], b[i], sum);
		return sum;
	}
	if (order == 5)
	{
		/* pairwise: halves summed apart */
		int			half = n / 2;

		if (n < 2)
			return n ? term(a[0], b[0], 0.0f) : 0.0f;
		return float_sum(a, b, half, 5, term) + float_sum(a + half, b + half, n - half, 5, term);
	}
	for (int i = 0; i < n; i++)
		lanes[i % width] = term(a[i], b[i], lanes[i % width]);
	for (int l = 0; l < width; l++)
		sum += lanes[l];
	return sum;
}

static int	use_fma;

static float
l2_term(float x, float q, float acc)
{
	float		d = x - q;

	return use_fma ? fmaf(d, d, acc) : acc + d * d;
}

static float
product_term(float x, float q, float acc)
{
	return use_fma ? fmaf(x, q, acc) : acc + x * q;
}

static float
l1_term(float x, float q, float acc)
{
	return acc + fabsf(x - q);
}

static float
square_term(float x, float q, float acc)
{
	return use_fma ? fmaf(x, x, acc) : acc + x * x;
}

/* pgvector's value of kind, summed in the given order. */
static double
pgvector_value(VectorDistanceKind kind, const float *x, const float *q, int n, int order)
{
	double		sim;

	switch (kind)
	{
		case VECTOR_DISTANCE_L2:
			return sqrt((double) float_sum(x, q, n, order, l2_term));
		case VECTOR_DISTANCE_L1:
			return (double) float_sum(x, q, n, order, l1_term);
		case VECTOR_DISTANCE_INNER_PRODUCT:
			return (double) float_sum(x, q, n, order, product_term);
		case VECTOR_DISTANCE_NEGATIVE_INNER_PRODUCT:
			return (double) -float_sum(x, q, n, order, product_term);
		default:
			sim = (double) float_sum(x, q, n, order, product_term) /
				sqrt((double) float_sum(x, x, n, order, square_term) *
					 (double) float_sum(q, q, n, order, square_term));
			if (sim > 1)
				sim = 1.0;
			else if (sim < -1)
				sim = -1.0;
			return 1.0 - sim;
	}
}

/* A random float of the case's shape. */
static float
random_element(TestRng *rng, int shape)
{
	double		u = rng_unit(rng) * 2.0 - 1.0;

	switch (shape)
	{
		case 0:
			return (float) u;
		case 1:
			/* large: sums near float's limit */
			return (float) (u * 1e18);
		case 2:
			/* tiny: products underflow */
			return (float) (u * 1e-22);
		case 3:
			/* magnitudes from 1e-30 to 1e10 */
			return (float) (u * pow(10.0, rng_unit(rng) * 40.0 - 30.0));
		default:
			/* one decimal: ties and exact zeros */
			return (float) (round(u * 10.0) / 10.0);
	}
}

static void
test_case(TestRng *rng)
{
	static float x[MAX_DIMS];
	static float q[MAX_DIMS];
	static const int dims[] = {1, 2, 3, 7, 16, 100, 768, 2000};
	int			n = dims[rng_next(rng) % 8];
	int			shape = (int) (rng_next(rng) % 5);
	VectorDistanceKind kind = (VectorDistanceKind) (rng_next(rng) % 5);
	int			near = rng_next(rng) % 3 == 0;
	static const int steps[] = {1, 8, 32};
	int			step = steps[rng_next(rng) % 3];
	double		query_norm = 0.0;
	double		lo = 0.0;
	double		hi = 0.0;
	VectorSums	sums;
	VectorBound bound;

	for (int i = 0; i < n; i++)
	{
		q[i] = random_element(rng, shape);
		/* rows near the query: sums that cancel */
		x[i] = near ? q[i] + random_element(rng, 2) * 1e15f : random_element(rng, shape);
		query_norm += (double) q[i] * q[i];
	}
	if (rng_next(rng) % 20 == 0)
		for (int i = 0; i < n; i++)
			x[i] = 0.0f;
	/* whole, or in parts added up as a GPU's group of lanes adds them */
	sums = vector_sums(kind, VECTOR_ELEMENT_FLOAT4, (const unsigned char *) x, q, n, 0, step);
	for (int first = 1; first < step; first++)
	{
		VectorSums	part = vector_sums(kind, VECTOR_ELEMENT_FLOAT4, (const unsigned char *) x,
									   q, n, first, step);

		sums.value += part.value;
		sums.magnitude += part.magnitude;
		sums.row_norm += part.row_norm;
	}
	sums = vector_sums_finish(kind, sums);
	bound = vector_distance_bounds(kind, n, sums, query_norm, &lo, &hi);
	if (bound == VECTOR_BOUND_UNKNOWN)
		return;
	for (int order = 0; order < ORDERS; order++)
		for (use_fma = 0; use_fma < 2; use_fma++)
		{
			double		v = pgvector_value(kind, x, q, n, order);
			bool		ok = bound == VECTOR_BOUND_NAN ? isnan(v) : (v >= lo && v <= hi);

			if (!ok)
			{
				if (failures++ < 10)
					printf("test_vector_bounds: kind %d, %d dims, shape %d, order %d, fma %d: "
						   "%.17g outside [%.17g, %.17g]%s\n", kind, n, shape, order, use_fma,
						   v, lo, hi, bound == VECTOR_BOUND_NAN ? " (NaN expected)" : "");
				return;
			}
		}
}

/* An IEEE half's value against the float conversion of every half. */
static void
test_halves(void)
{
	for (uint32_t h = 0; h < 0x10000; h++)
	{
		float		f = vector_half_to_float((uint16_t) h);
		int			e = (h >> 10) & 0x1f;
		int			m = h & 0x3ff;
		double		expected = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) :
			ldexp(1024 + m, e - 25);

		if (h & 0x8000)
			expected = -expected;
		if (!(isnan(expected) ? isnan(f) : (double) f == expected && !!signbit(f) == !!signbit(expected)))
		{
			if (failures++ < 10)
				printf("test_vector_bounds: half %04x gives %.9g, not %.9g\n", h, f, expected);
		}
	}
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 && argv[1][0] ? strtoull(argv[1], NULL, 10) : (uint64_t) time(NULL);
	int			cases = argc > 2 ? atoi(argv[2]) : 20000;
	TestRng		rng = {seed * 2 + 1};

	printf("test_vector_bounds: seed %llu, %d random cases\n", (unsigned long long) seed, cases);
	test_halves();
	for (int i = 0; i < cases; i++)
		test_case(&rng);
	if (failures)
	{
		printf("test_vector_bounds: %d FAILED (seed %llu)\n", failures, (unsigned long long) seed);
		return 1;
	}
	printf("test_vector_bounds: all passed\n");
	return 0;
}
