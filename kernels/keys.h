/*
 * keys.h
 *	  Order-preserving unsigned keys for PostgreSQL's ordered types.
 *
 * The top-k engine selects the k LARGEST keys.  A key is an unsigned 32- or
 * 64-bit integer whose unsigned order is the query's order: the value that
 * comes first under ORDER BY gets the largest key.  Encodings reproduce
 * PostgreSQL's btree order exactly:
 *
 *	 int2, int4, date		32-bit, sign bit flipped (date is an int32 of days;
 *							-infinity and infinity are its extreme values)
 *	 int8, timestamp(tz)	64-bit, sign bit flipped (likewise int64)
 *	 float4, float8			32-/64-bit: -Inf < ... < -0 = +0 < ... < +Inf < NaN,
 *							all NaNs equal
 *
 * ASC is the bitwise complement of DESC.  NULL takes the largest key when
 * NULLs come first in the query's order and the smallest (0) when they come
 * last.  For float4, float8 and int2 that key is no real value's, so the
 * encoding is exact.  For int4, date, int8, timestamp and timestamptz every
 * key is some value's, so NULL shares its key with the extreme value (e.g.
 * NULLS LAST under DESC shares 0 with INT_MIN): the key is then monotone but
 * lossy, and a caller that can meet both must ask for ties at the boundary
 * and order the candidates itself (key_null_is_exact says which).
 *
 * Plain C and CUDA: included by kernels/cpu_topk.c and by the CUDA files.
 */
#ifndef KEYS_H
#define KEYS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define KEY_FN __host__ __device__ static inline
#else
#define KEY_FN static inline
#endif

/* The types whose values have keys; the order is part of the C API. */
typedef enum KeyType
{
	KEY_INT2,
	KEY_INT4,
	KEY_INT8,
	KEY_FLOAT4,
	KEY_FLOAT8,
	KEY_DATE,
	KEY_TIMESTAMP,
	KEY_TIMESTAMPTZ
} KeyType;

/* bytes of the key of each type: 4 or 8 */
KEY_FN int
key_width(KeyType type)
{
	switch (type)
	{
		case KEY_INT2:
		case KEY_INT4:
		case KEY_FLOAT4:
		case KEY_DATE:
			return 4;
		default:
			return 8;
	}
}

/* whether NULL's key belongs to no value of the type (see above) */
KEY_FN bool
key_null_is_exact(KeyType type)
{
	return type == KEY_INT2 || type == KEY_FLOAT4 || type == KEY_FLOAT8;
}

KEY_FN uint32_t
key_from_int32(int32_t v, bool desc)
{
	uint32_t	k = (uint32_t) v ^ 0x80000000u;

	return desc ? k : ~k;
}

KEY_FN uint64_t
key_from_int64(int64_t v, bool desc)
{
	uint64_t	k = (uint64_t) v ^ UINT64_C(0x8000000000000000);

	return desc ? k : ~k;
}

KEY_FN uint32_t
key_from_float4(float v, bool desc)
{
	uint32_t	bits;
	uint32_t	k;

	memcpy(&bits, &v, sizeof(bits));
	/* one NaN for all, and -0 = +0; selects, not branches, so loops vectorize */
	bits = v != v ? 0x7fc00000u : bits;
	bits = v == 0.0f ? 0 : bits;
	/* negative: all bits flipped; else the sign bit set */
	k = bits ^ ((0u - (bits >> 31)) | 0x80000000u);
	return desc ? k : ~k;
}

KEY_FN uint64_t
key_from_float8(double v, bool desc)
{
	uint64_t	bits;
	uint64_t	k;

	memcpy(&bits, &v, sizeof(bits));
	bits = v != v ? UINT64_C(0x7ff8000000000000) : bits;
	bits = v == 0.0 ? 0 : bits;
	k = bits ^ ((0 - (bits >> 63)) | UINT64_C(0x8000000000000000));
	return desc ? k : ~k;
}

/*
 * The value whose key_from_float8 is key (one NaN for all, and +0 for a
 * -0's key, as key_from_float8 keeps them).
 */
KEY_FN double
float8_of_key(uint64_t key, bool desc)
{
	uint64_t	k = desc ? key : ~key;
	uint64_t	bits = (k >> 63) ? k ^ UINT64_C(0x8000000000000000) : ~k;
	double		v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/*
 * The key of a stored value of a key type (p points at its bytes, as a
 * column index page holds them): larger for larger values when desc.
 */
KEY_FN uint64_t
key_of_stored(KeyType type, const void *p, bool desc)
{
	switch (type)
	{
		case KEY_INT2:
			return key_from_int32(*(const int16_t *) p, desc);
		case KEY_INT4:
		case KEY_DATE:
			return key_from_int32(*(const int32_t *) p, desc);
		case KEY_FLOAT4:
			return key_from_float4(*(const float *) p, desc);
		case KEY_FLOAT8:
			return key_from_float8(*(const double *) p, desc);
		default:
			return key_from_int64(*(const int64_t *) p, desc);
	}
}

/* qsort's comparison of 64-bit keys (or any uint64_t), ascending */
KEY_FN int
key_compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * The key of NULL: the largest key when NULLs come first in the query's
 * order, else the smallest.
 */
KEY_FN uint64_t
key_null(KeyType type, bool nulls_first)
{
	if (!nulls_first)
		return 0;
	return key_width(type) == 4 ? UINT32_MAX : UINT64_MAX;
}

#endif							/* KEYS_H */
