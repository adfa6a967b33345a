/*
 * vector_bounds.h
 *	  Bounds on pgvector's distances, for ranking rows by them without
 *	  pgvector's own functions.
 *
 * pgvector sums a distance's terms in single precision, in an order its
 * compiler chose (it builds with -fassociative-math, and may fuse a
 * multiply and an add), so no other code can give its value to the last
 * bit.  Here the terms are summed in double precision, and the interval
 * that must hold pgvector's value is derived from the sum and the sum of
 * the terms' magnitudes: a sum of n float terms in any order, of products
 * or differences of float inputs rounded once each, is within
 * gamma(n + 2) = (n + 2)u / (1 - (n + 2)u) of the exact sum relative to
 * the magnitudes' sum (u = 2^-24), plus half the smallest subnormal for
 * each operation that underflows.  Where a partial sum may overflow a
 * float, or a cosine's norm may underflow to zero, no bound is given.
 * PostgreSQL's and pgvector's double-precision steps after the sum
 * (sqrt, the cosine's division, 1 - similarity, the clamp to [-1, 1])
 * are monotone and correctly rounded, so they map the bounds through.
 *
 * pgvector accepts finite elements only, so the sums are finite.  Plain C
 * and CUDA, like keys.h.
 */
#ifndef VECTOR_BOUNDS_H
#define VECTOR_BOUNDS_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "key_steps.h"
#include "keys.h"

/* inlined, so that a constant kind and element make their own loops */
#ifdef __CUDACC__
#define VECTOR_INLINE __host__ __device__ __forceinline__ static
#else
#define VECTOR_INLINE static inline __attribute__((always_inline))
#endif

/* pgvector's distance functions, by the C function that computes them */
typedef enum VectorDistanceKind
{
	VECTOR_DISTANCE_L2,			/* <->: l2_distance */
	VECTOR_DISTANCE_INNER_PRODUCT,	/* inner_product */
	VECTOR_DISTANCE_NEGATIVE_INNER_PRODUCT, /* <#>: vector_negative_inner_product */
	VECTOR_DISTANCE_COSINE,		/* <=>: cosine_distance */
	VECTOR_DISTANCE_L1			/* <+>: l1_distance */
} VectorDistanceKind;

/* a vector's elements: vector's float4, halfvec's IEEE half */
typedef enum VectorElement
{
	VECTOR_ELEMENT_FLOAT4,
	VECTOR_ELEMENT_HALF,
	VECTOR_ELEMENT_FLOAT4_ALIGNED	/* vector_sums's, for float4s at a multiple of 4 */
} VectorElement;

/* what a row's value is known to be */
typedef enum VectorBound
{
	VECTOR_BOUND_RANGE,			/* within [lo, hi] */
	VECTOR_BOUND_NAN,			/* NaN (cosine with a zero vector) */
	VECTOR_BOUND_UNKNOWN		/* not bounded: float overflow or underflow */
} VectorBound;

/* the sums of a row against the query, in double precision */
typedef struct VectorSums
{
	double		value;			/* the terms' sum */
	double		magnitude;		/* the sum of their magnitudes */
	double		row_norm;		/* cosine: the row's sum of squares */
} VectorSums;

/* An IEEE half's value, exactly (as pgvector's HalfToFloat4). */
KEY_FN float
vector_half_to_float(uint16_t h)
{
	uint32_t	sign = (uint32_t) (h & 0x8000u) << 16;
	uint32_t	exponent = (h >> 10) & 0x1f;
	uint32_t	mantissa = h & 0x3ff;
	uint32_t	bits;
	float		f;

	if (exponent == 0x1f)
		bits = sign | 0x7f800000u | (mantissa << 13);
	else if (exponent != 0)
		bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
	else if (mantissa == 0)
		bits = sign;
	else
	{
		/* a subnormal half is a normal float */
		exponent = 113;
		while (!(mantissa & 0x400))
		{
			mantissa <<= 1;
			exponent--;
		}
		bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Element i of a vector's stored elements, as a float. */
VECTOR_INLINE float
vector_element(VectorElement element, const unsigned char *x, int i)
{
	float		f;
	uint16_t	h;

	if (element == VECTOR_ELEMENT_FLOAT4_ALIGNED)
		return ((const float *) x)[i];
	if (element == VECTOR_ELEMENT_FLOAT4)
	{
		memcpy(&f, x + 4 * i, sizeof(f));
		return f;
	}
	memcpy(&h, x + 2 * i, sizeof(h));
	return vector_half_to_float(h);
}

/* independent sums a row's terms go to in turn, for the CPU's vector units */
#define VECTOR_LANES 8

/* Term i of a row's sums of kind, into lane j's sums. */
VECTOR_INLINE void
vector_add_term(VectorDistanceKind kind, double xi, double qi, double *value, double *magnitude,
				double *row_norm)
{
	double		d = xi - qi;
	double		p = xi * qi;	/* exact: a product of floats */

	switch (kind)
	{
		case VECTOR_DISTANCE_L2:
			*value += d * d;
			break;
		case VECTOR_DISTANCE_L1:
			*value += fabs(d);
			break;
		case VECTOR_DISTANCE_COSINE:
			*row_norm += xi * xi;
			/* and the inner product's sums */
			/* FALLTHROUGH */
		default:
			*value += p;
			*magnitude += fabs(p);
			break;
	}
}

/* The sums of kind once their parts are added up: a distance's magnitude is its value. */
KEY_FN VectorSums
vector_sums_finish(VectorDistanceKind kind, VectorSums s)
{
	if (kind == VECTOR_DISTANCE_L2 || kind == VECTOR_DISTANCE_L1)
		s.magnitude = s.value;
	return s;
}

/*
 * The sums of terms first, first + step, ... of a row's n stored elements
 * x against the query's q (first 0 and step 1: all of them; a GPU's group
 * of step lanes each takes its part, added up with vector_sums_finish),
 * in VECTOR_LANES lanes added up at the end (any order is bounded alike).
 * The lanes' terms are independent, so their reads are in flight together.
 */
VECTOR_INLINE VectorSums
vector_sums_of(VectorDistanceKind kind, VectorElement element, const unsigned char *x,
			   const float *q, int n, int first, int step)
{
	double		value[VECTOR_LANES] = {0};
	double		magnitude[VECTOR_LANES] = {0};
	double		row_norm[VECTOR_LANES] = {0};
	VectorSums	s = {0.0, 0.0, 0.0};
	int			i = first;

	for (; i + (VECTOR_LANES - 1) * step < n; i += VECTOR_LANES * step)
		for (int j = 0; j < VECTOR_LANES; j++)
			vector_add_term(kind, vector_element(element, x, i + j * step), q[i + j * step],
							&value[j], &magnitude[j], &row_norm[j]);
	for (; i < n; i += step)
		vector_add_term(kind, vector_element(element, x, i), q[i],
						&value[0], &magnitude[0], &row_norm[0]);
	for (int j = 0; j < VECTOR_LANES; j++)
	{
		s.value += value[j];
		s.magnitude += magnitude[j];
		s.row_norm += row_norm[j];
	}
	return vector_sums_finish(kind, s);
}

/* vector_sums_of for one element type, its kind a constant. */
VECTOR_INLINE VectorSums
vector_sums_by_kind(VectorDistanceKind kind, VectorElement element, const unsigned char *x,
					const float *q, int n, int first, int step)
{
	switch (kind)
	{
		case VECTOR_DISTANCE_L2:
			return vector_sums_of(VECTOR_DISTANCE_L2, element, x, q, n, first, step);
		case VECTOR_DISTANCE_L1:
			return vector_sums_of(VECTOR_DISTANCE_L1, element, x, q, n, first, step);
		case VECTOR_DISTANCE_COSINE:
			return vector_sums_of(VECTOR_DISTANCE_COSINE, element, x, q, n, first, step);
		default:
			/* the inner products' sums are the same */
			return vector_sums_of(VECTOR_DISTANCE_INNER_PRODUCT, element, x, q, n, first,
								  step);
	}
}

/* vector_sums_by_kind for the element type of x, a constant. */
VECTOR_INLINE VectorSums
vector_sums_by_element(VectorDistanceKind kind, VectorElement element, const unsigned char *x,
					   const float *q, int n, int first, int step)
{
	if (element == VECTOR_ELEMENT_HALF)
		return vector_sums_by_kind(kind, VECTOR_ELEMENT_HALF, x, q, n, first, step);
	if (((uintptr_t) x & 3) == 0)
		return vector_sums_by_kind(kind, VECTOR_ELEMENT_FLOAT4_ALIGNED, x, q, n, first, step);
	return vector_sums_by_kind(kind, VECTOR_ELEMENT_FLOAT4, x, q, n, first, step);
}

/* The sums of terms first, first + step, ... of a row's n stored elements x against the query's q. */
KEY_FN VectorSums
vector_sums(VectorDistanceKind kind, VectorElement element, const unsigned char *x,
			const float *q, int n, int first, int step)
{
	/* all the terms: a step the compiler knows, whose loops it vectorizes */
	if (step == 1)
		return vector_sums_by_element(kind, element, x, q, n, 0, 1);
	return vector_sums_by_element(kind, element, x, q, n, first, step);
}

/*
 * How far pgvector's float sum of n terms may be from the double sum here,
 * whose terms' magnitudes add up to magnitude: its rounding, this sum's
 * own (far smaller) and the subnormal rounding of underflowing operations.
 */
KEY_FN double
vector_sum_error(int n, double magnitude)
{
	double		g = (n + 2) * 0x1p-24;

	g = g / (1.0 - g) + 8.0 * (n + 2) * 0x1p-53;
	return g * magnitude + (2.0 * n + 2.0) * 0x1p-150;
}

/* Whether a float sum within error of magnitude may have overflowed. */
KEY_FN bool
vector_sum_may_overflow(double magnitude, double error)
{
	return magnitude + error >= (double) FLT_MAX;
}

/*
 * The interval [*lo, *hi] that holds pgvector's distance of kind between a
 * row of n elements with the given sums and the query (query_norm: the
 * query's sum of squares, for cosine).
 */
KEY_FN VectorBound
vector_distance_bounds(VectorDistanceKind kind, int n, VectorSums s, double query_norm,
					   double *lo, double *hi)
{
	double		e = vector_sum_error(n, s.magnitude);
	double		e_row;
	double		e_query;
	double		den_lo;
	double		den_hi;
	double		sim_lo;
	double		sim_hi;

	if (kind == VECTOR_DISTANCE_COSINE && (s.row_norm == 0.0 || query_norm == 0.0))
		return VECTOR_BOUND_NAN;
	if (vector_sum_may_overflow(s.magnitude, e))
		return VECTOR_BOUND_UNKNOWN;
	switch (kind)
	{
		case VECTOR_DISTANCE_L2:
			*lo = sqrt(fmax(s.value - e, 0.0));
			*hi = sqrt(s.value + e);
			return VECTOR_BOUND_RANGE;
		case VECTOR_DISTANCE_L1:
			*lo = fmax(s.value - e, 0.0);
			*hi = s.value + e;
			return VECTOR_BOUND_RANGE;
		case VECTOR_DISTANCE_INNER_PRODUCT:
			*lo = s.value - e;
			*hi = s.value + e;
			return VECTOR_BOUND_RANGE;
		case VECTOR_DISTANCE_NEGATIVE_INNER_PRODUCT:
			*lo = -(s.value + e);
			*hi = -(s.value - e);
			return VECTOR_BOUND_RANGE;
		default:
			break;
	}

	/* cosine: similarity = dot / sqrt(norm(row) * norm(query)), clamped */
	e_row = vector_sum_error(n, s.row_norm);
	e_query = vector_sum_error(n, query_norm);
	if (vector_sum_may_overflow(s.row_norm, e_row) ||
		vector_sum_may_overflow(query_norm, e_query) ||
		s.row_norm - e_row <= 0.0 || query_norm - e_query <= 0.0)
		return VECTOR_BOUND_UNKNOWN;
	/* a product, a square root and this code's own roundings: 2^-50 covers them */
	den_lo = sqrt((s.row_norm - e_row) * (query_norm - e_query)) * (1.0 - 0x1p-50);
	den_hi = sqrt((s.row_norm + e_row) * (query_norm + e_query)) * (1.0 + 0x1p-50);
	sim_lo = (s.value - e) / (s.value - e >= 0.0 ? den_hi : den_lo);
	sim_hi = (s.value + e) / (s.value + e >= 0.0 ? den_lo : den_hi);
	sim_lo -= fabs(sim_lo) * 0x1p-50;
	sim_hi += fabs(sim_hi) * 0x1p-50;
	sim_lo = fmin(fmax(sim_lo, -1.0), 1.0);
	sim_hi = fmin(fmax(sim_hi, -1.0), 1.0);
	*lo = 1.0 - sim_hi;
	*hi = 1.0 - sim_lo;
	return VECTOR_BOUND_RANGE;
}

/*
 * A row's key from its distance's bounds (or exact NaN): the arithmetic
 * around the distance (steps whose one column step is the distance; on a
 * stack and NULL flags of nsteps) run on each end, the one toward the
 * front of the order taken (the steps are monotone, rising or falling).
 * Where no bound is known, or a step raises, the row is keyed first.
 */
KEY_FN uint64_t
vector_key_of_bounds(const KeyStep *steps, int nsteps, double *stack, bool *nulls,
					 VectorBound bound, double lo, double hi, bool desc)
{
	double		ends[2] = {lo, hi};
	int			nends = 2;

	if (bound == VECTOR_BOUND_UNKNOWN)
		return KEY_PROGRAM_ERROR_KEY;
	if (bound == VECTOR_BOUND_NAN)
	{
		ends[0] = NAN;
		nends = 1;
	}
	/* the distance alone (its column step): the end toward the front of the order */
	if (nsteps == 1)
		return key_from_float8(nends == 1 ? ends[0] : desc ? hi : lo, desc);
	for (int e = 0; e < nends; e++)
	{
		int			top = 0;

		for (int s = 0; s < nsteps; s++)
		{
			if (key_step_is_column(&steps[s]))
			{
				nulls[top] = false;
				stack[top++] = ends[e];
			}
			else if (!key_step_apply(&steps[s], stack, nulls, &top))
				return KEY_PROGRAM_ERROR_KEY;
		}
		ends[e] = stack[0];
	}
	if (nends == 1)
		return key_from_float8(ends[0], desc);
	return key_from_float8(desc ? fmax(ends[0], ends[1]) : fmin(ends[0], ends[1]), desc);
}

/* what a vector key computes a row's key with (the query's side) */
typedef struct VectorKeySpec
{
	VectorDistanceKind kind;
	VectorElement element;
	int			dims;			/* the query's */
	const float *query;			/* its elements */
	double		query_norm;		/* its sum of squares, for cosine */
	const KeyStep *steps;		/* the arithmetic around the distance */
	int			nsteps;
	bool		desc;
} VectorKeySpec;

/* The key of a row of the query's dimensions whose sums are these. */
KEY_FN uint64_t
vector_key_of_sums(const VectorKeySpec *spec, VectorSums sums, double *stack, bool *nulls)
{
	double		lo = 0.0;
	double		hi = 0.0;
	VectorBound bound = vector_distance_bounds(spec->kind, spec->dims, sums, spec->query_norm,
											   &lo, &hi);

	return vector_key_of_bounds(spec->steps, spec->nsteps, stack, nulls, bound, lo, hi,
								spec->desc);
}

/* Whether a pgvector value's data (see vector_data_key) has the query's dimensions. */
KEY_FN bool
vector_data_fits(const VectorKeySpec *spec, const unsigned char *data)
{
	int16_t		dims;

	memcpy(&dims, data, sizeof(dims));
	return dims == spec->dims;
}

/*
 * The key of a pgvector value whose data (dim, an unused int16, then the
 * elements: what follows the varlena header) is at data:
 * KEY_PROGRAM_ERROR_KEY where its dimensions are not the query's
 * (pgvector raises), else vector_key_of_bounds's; stack and nulls of
 * spec->nsteps.
 */
KEY_FN uint64_t
vector_data_key(const VectorKeySpec *spec, const unsigned char *data, double *stack, bool *nulls)
{
	if (!vector_data_fits(spec, data))
		return KEY_PROGRAM_ERROR_KEY;
	return vector_key_of_sums(spec, vector_sums(spec->kind, spec->element, data + 4,
												spec->query, spec->dims, 0, 1),
							  stack, nulls);
}

/*
 * The data of a pgvector value stored inline at v, after its varlena
 * header (little-endian, as on the machines with GPUs), or NULL where the
 * value is compressed or out of line.
 */
KEY_FN const unsigned char *
vector_stored_data(const unsigned char *v)
{
	if ((v[0] & 3) == 0)
		return v + 4;			/* a 4-byte header */
	if ((v[0] & 1) && v[0] != 1)
		return v + 1;			/* a short one */
	return NULL;
}

/*
 * The key of a pgvector value stored inline at v (its varlena header
 * there, little-endian, as on the machines with GPUs): vector_data_key's,
 * or KEY_PROGRAM_ERROR_KEY where the value is compressed or out of line
 * (the CPU reads those).
 */
KEY_FN uint64_t
vector_stored_key(const VectorKeySpec *spec, const unsigned char *v, double *stack, bool *nulls)
{
	const unsigned char *data = vector_stored_data(v);

	return data ? vector_data_key(spec, data, stack, nulls) : KEY_PROGRAM_ERROR_KEY;
}

#endif							/* VECTOR_BOUNDS_H */
