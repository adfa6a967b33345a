/*
 * test_visibility.c
 *	  Tests of the header rules of kernels/tuple_visibility.h: each of
 *	  HeapTupleSatisfiesMVCC's branches that a header settles, and those it
 *	  leaves to PostgreSQL, on tuples made up for a snapshot.
 *	  Usage: test_visibility.
 */
#include <stdio.h>

#include "tuple_visibility.h"

static int	failures = 0;

/* a snapshot: xids before 100 ended, from 200 on in progress, 150 and 170 in progress */
static const uint32_t in_progress[] = {150, 170};
static const TupleSnapshot snapshot = {100, 200, true, 2, in_progress};
/* the same with its subtransactions overflowed */
static const TupleSnapshot overflowed = {100, 200, false, 2, in_progress};
/* the first two where the current transaction has no xid */
static const TupleSnapshot no_own = {100, 200, true, 2, in_progress, true};
static const TupleSnapshot no_own_overflowed = {100, 200, false, 2, in_progress, true};

static void
check(const char *name, uint16_t infomask, uint32_t xmin, uint32_t xmax,
	  const TupleSnapshot *s, TupleVisibility expected)
{
	uint8_t		header[24] = {0};
	TupleVisibility got;

	memcpy(header + TUPLE_XMIN_OFFSET, &xmin, sizeof(xmin));
	memcpy(header + TUPLE_XMAX_OFFSET, &xmax, sizeof(xmax));
	memcpy(header + TUPLE_INFOMASK_OFFSET, &infomask, sizeof(infomask));
	got = tuple_visibility(header, s);
	if (got != expected)
	{
		printf("test_visibility: %s: got %d, expected %d\n", name, (int) got, (int) expected);
		failures++;
	}
}

int
main(void)
{
	const uint16_t committed = TUPLE_XMIN_COMMITTED;
	const uint16_t live = TUPLE_XMIN_COMMITTED | TUPLE_XMAX_INVALID;

	/* the inserter */
	check("xmin aborted", TUPLE_XMIN_INVALID | TUPLE_XMAX_INVALID, 50, 0, &snapshot,
		  TUPLE_INVISIBLE);
	check("xmin without a hint bit", TUPLE_XMAX_INVALID, 50, 0, &snapshot, TUPLE_UNDECIDED);
	check("xmin frozen, in the range", TUPLE_XMIN_FROZEN | TUPLE_XMAX_INVALID, 150, 0,
		  &snapshot, TUPLE_VISIBLE);
	check("xmin committed before the snapshot", live, 50, 0, &snapshot, TUPLE_VISIBLE);
	check("xmin committed, not listed", live, 160, 0, &snapshot, TUPLE_VISIBLE);
	check("xmin committed, listed in progress", live, 150, 0, &snapshot, TUPLE_INVISIBLE);
	check("xmin committed at the snapshot's xmax", live, 200, 0, &snapshot, TUPLE_INVISIBLE);
	check("xmin committed after the snapshot", live, 900, 0, &snapshot, TUPLE_INVISIBLE);
	check("xmin committed in the range, list overflowed", live, 160, 0, &overflowed,
		  TUPLE_UNDECIDED);
	check("xmin committed before the range, list overflowed", live, 50, 0, &overflowed,
		  TUPLE_VISIBLE);
	check("xmin permanent (frozen xid)", live, 2, 0, &snapshot, TUPLE_VISIBLE);
	check("xmin without a hint bit, listed, no own xid", TUPLE_XMAX_INVALID, 150, 0, &no_own,
		  TUPLE_INVISIBLE);
	check("xmin without a hint bit, after the snapshot, no own xid", TUPLE_XMAX_INVALID, 900, 0,
		  &no_own, TUPLE_INVISIBLE);
	check("xmin without a hint bit, listed, an own xid", TUPLE_XMAX_INVALID, 150, 0, &snapshot,
		  TUPLE_UNDECIDED);
	check("xmin without a hint bit, ended, no own xid", TUPLE_XMAX_INVALID, 50, 0, &no_own,
		  TUPLE_UNDECIDED);
	check("xmin without a hint bit, in the range, list overflowed", TUPLE_XMAX_INVALID, 150, 0,
		  &no_own_overflowed, TUPLE_UNDECIDED);
	check("xmin without a hint bit, moved", TUPLE_XMAX_INVALID | TUPLE_MOVED, 150, 0, &no_own,
		  TUPLE_UNDECIDED);

	/* the deleter */
	check("xmax a lock only", committed | TUPLE_XMAX_LOCK_ONLY, 50, 60, &snapshot,
		  TUPLE_VISIBLE);
	check("xmax an exclusive lock", committed | TUPLE_XMAX_EXCL_LOCK, 50, 60, &snapshot,
		  TUPLE_VISIBLE);
	check("xmax a key-share lock, not only a lock",
		  committed | TUPLE_XMAX_KEYSHR_LOCK | TUPLE_XMAX_COMMITTED, 50, 60, &snapshot,
		  TUPLE_INVISIBLE);
	check("xmax a multixact", committed | TUPLE_XMAX_IS_MULTI, 50, 60, &snapshot,
		  TUPLE_UNDECIDED);
	check("xmax a multixact of lockers", committed | TUPLE_XMAX_IS_MULTI | TUPLE_XMAX_LOCK_ONLY,
		  50, 60, &snapshot, TUPLE_VISIBLE);
	check("xmax without a hint bit", committed, 50, 60, &snapshot, TUPLE_UNDECIDED);
	check("xmax without a hint bit, listed, no own xid", committed, 50, 170, &no_own,
		  TUPLE_VISIBLE);
	check("xmax without a hint bit, after the snapshot, no own xid", committed, 50, 250, &no_own,
		  TUPLE_VISIBLE);
	check("xmax without a hint bit, listed, an own xid", committed, 50, 170, &snapshot,
		  TUPLE_UNDECIDED);
	check("xmax without a hint bit, ended, no own xid", committed, 50, 60, &no_own,
		  TUPLE_UNDECIDED);
	check("xmax committed before the snapshot", committed | TUPLE_XMAX_COMMITTED, 50, 60,
		  &snapshot, TUPLE_INVISIBLE);
	check("xmax committed, listed in progress", committed | TUPLE_XMAX_COMMITTED, 50, 170,
		  &snapshot, TUPLE_VISIBLE);
	check("xmax committed after the snapshot", committed | TUPLE_XMAX_COMMITTED, 50, 250,
		  &snapshot, TUPLE_VISIBLE);
	check("xmax committed in the range, list overflowed", committed | TUPLE_XMAX_COMMITTED,
		  50, 160, &overflowed, TUPLE_UNDECIDED);
	check("xmax aborted (invalid)", live | TUPLE_XMAX_IS_MULTI, 50, 60, &snapshot,
		  TUPLE_VISIBLE);
	check("xmin in progress, deleted too", committed | TUPLE_XMAX_COMMITTED, 170, 180,
		  &snapshot, TUPLE_INVISIBLE);

	/* xids that wrapped around: 4294967000 precedes 100 by modulo-2^32 order */
	check("xmin just before the wraparound", live, 4294967000u, 0, &snapshot, TUPLE_VISIBLE);

	if (failures)
	{
		printf("test_visibility: %d FAILED\n", failures);
		return 1;
	}
	printf("test_visibility: all passed\n");
	return 0;
}
