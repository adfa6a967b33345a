/*
 * testlib.h
 *	  Data and checks for the top-k engine tests (test/engine/), with no
 *	  PostgreSQL or CUDA dependency.
 */
#ifndef TESTLIB_H
#define TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topk.h"

typedef enum Distribution
{
	DIST_UNIFORM,
	DIST_NORMAL,
	DIST_SORTED,
	DIST_REVERSED,
	DIST_ALL_EQUAL,
	DIST_FEW_DISTINCT,
	DIST_NARROW_RANGE,
	DIST_ZIPF,
	DIST_SPECIAL,				/* NaN, infinities, -0, extremes mixed in */
	DIST_COUNT
} Distribution;

extern const char *distribution_name(Distribution d);

/* a reproducible stream of random numbers */
typedef struct TestRng
{
	uint64_t	state;
} TestRng;

extern uint64_t rng_next(TestRng *rng);
extern double rng_unit(TestRng *rng);	/* in [0, 1) */

/*
 * n keys of key_width bytes drawn from d: float4 values for 4-byte keys,
 * float8 or (as_int) int8 values for 8-byte keys, encoded for DESC or ASC.
 */
extern void fill_keys(void *keys, size_t n, int key_width, Distribution d,
					  bool desc, bool as_int, TestRng *rng);

/* the same, with the direction and the 8-byte value type drawn at random */
extern void make_keys(void *keys, size_t n, int key_width, Distribution d,
					  TestRng *rng);

/* key i of an array of key_width-byte keys */
extern uint64_t key_at(const void *keys, int key_width, size_t i);

/*
 * Check an answer against a plain sort of the keys: the count, descending
 * order, references that point at keys equal to their item's key and no
 * reference twice, and the multiset of keys.  Prints what is wrong to
 * stderr (prefixed by label) and returns false.
 */
extern bool check_result(const void *keys, size_t n, int key_width,
						 uint64_t k, TopkMode mode, const TopkResult *result,
						 const char *label);

#endif							/* TESTLIB_H */
