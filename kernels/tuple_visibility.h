/*
 * tuple_visibility.h
 *	  Whether a heap tuple's header alone settles its visibility to an MVCC
 *	  snapshot, by the rules of PostgreSQL's HeapTupleSatisfiesMVCC: for the
 *	  tuples of pages that are not all-visible (src/scan_row_reader.c).
 *
 * The header settles a tuple where its hint bits say how the transactions
 * that inserted and deleted it ended, and the snapshot says whether those
 * had ended for it:
 *
 *	 xmin aborted (XMIN_INVALID alone)					invisible
 *	 xmin committed (or frozen), and in progress to
 *	 the snapshot (not frozen)							invisible
 *	 xmin without a hint bit, in progress to the
 *	 snapshot, of a transaction not the current one		invisible
 *	 then: xmax invalid, or a lock only					visible
 *	 xmax committed: in progress to the snapshot		visible
 *					 ended before it					invisible
 *	 xmax without a hint bit, in progress to the
 *	 snapshot, of a transaction not the current one		visible
 *
 * Everything else is left to PostgreSQL's own routine: an xmin or xmax
 * without a hint bit that the snapshot does not see in progress (its fate
 * is in the commit log), any xid without one where the current
 * transaction has an xid (its own tuples, whose command ids decide), an
 * xmin moved by a VACUUM FULL of old versions (HEAP_MOVED), a multixact
 * xmax, and any xid the snapshot may list where its list is not complete
 * (subtransactions overflowed).  A committed hint bit is never the current
 * transaction's, which has not committed, and a transaction without an xid
 * has written no tuple.  An xid is in progress to the snapshot where it is
 * not before its xmin and either not before its xmax or listed
 * (XidInMVCCSnapshot, with its list of top-level and subtransaction xids
 * merged and sorted).
 *
 * Plain C and CUDA, like keys.h: the header's offsets and bits are
 * PostgreSQL's (htup_details.h), which src/scan_row_reader.c checks.
 */
#ifndef TUPLE_VISIBILITY_H
#define TUPLE_VISIBILITY_H

#include "keys.h"

/* offsets in a tuple's header */
#define TUPLE_XMIN_OFFSET 0
#define TUPLE_XMAX_OFFSET 4
#define TUPLE_INFOMASK_OFFSET 20

/* t_infomask's bits */
#define TUPLE_XMAX_KEYSHR_LOCK 0x0010
#define TUPLE_XMAX_EXCL_LOCK 0x0040
#define TUPLE_XMAX_LOCK_ONLY 0x0080
#define TUPLE_XMIN_COMMITTED 0x0100
#define TUPLE_XMIN_INVALID 0x0200
#define TUPLE_XMIN_FROZEN (TUPLE_XMIN_COMMITTED | TUPLE_XMIN_INVALID)
#define TUPLE_XMAX_COMMITTED 0x0400
#define TUPLE_XMAX_INVALID 0x0800
#define TUPLE_XMAX_IS_MULTI 0x1000
#define TUPLE_MOVED 0xC000		/* HEAP_MOVED_OFF | HEAP_MOVED_IN */
#define TUPLE_LOCK_MASK (TUPLE_XMAX_EXCL_LOCK | TUPLE_XMAX_KEYSHR_LOCK)

/* the first normal xid: those before it are permanent */
#define TUPLE_FIRST_NORMAL_XID 3

/* what an MVCC snapshot says of xids */
typedef struct TupleSnapshot
{
	uint32_t	xmin;			/* xids before it had ended */
	uint32_t	xmax;			/* xids from it on had not */
	bool		complete;		/* whether inprogress holds all between */
	uint32_t	ninprogress;
	const uint32_t *inprogress; /* those between that had not ended, sorted */
	bool		no_own_xids;	/* the current transaction has no xid */
} TupleSnapshot;

typedef enum TupleVisibility
{
	TUPLE_UNDECIDED,
	TUPLE_VISIBLE,
	TUPLE_INVISIBLE
} TupleVisibility;

/* TransactionIdPrecedes: modulo 2^32 for normal xids, plain for permanent ones */
KEY_FN bool
tuple_xid_precedes(uint32_t a, uint32_t b)
{
	if (a < TUPLE_FIRST_NORMAL_XID || b < TUPLE_FIRST_NORMAL_XID)
		return a < b;
	return (int32_t) (a - b) < 0;
}

/* what a snapshot says of an xid */
typedef enum TupleXidState
{
	TUPLE_XID_UNKNOWN,			/* its list is not complete */
	TUPLE_XID_ENDED,			/* it had committed or aborted */
	TUPLE_XID_IN_PROGRESS		/* it had not (XidInMVCCSnapshot) */
} TupleXidState;

KEY_FN TupleXidState
tuple_xid_state(uint32_t xid, const TupleSnapshot *s)
{
	uint32_t	lo = 0;
	uint32_t	hi = s->ninprogress;

	if (tuple_xid_precedes(xid, s->xmin))
		return TUPLE_XID_ENDED;
	if (!tuple_xid_precedes(xid, s->xmax))
		return TUPLE_XID_IN_PROGRESS;
	if (!s->complete)
		return TUPLE_XID_UNKNOWN;
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (s->inprogress[mid] < xid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->ninprogress && s->inprogress[lo] == xid ? TUPLE_XID_IN_PROGRESS :
		TUPLE_XID_ENDED;
}

/* HEAP_XMAX_IS_LOCKED_ONLY */
KEY_FN bool
tuple_xmax_locks_only(uint16_t infomask)
{
	return (infomask & TUPLE_XMAX_LOCK_ONLY) ||
		(infomask & (TUPLE_XMAX_IS_MULTI | TUPLE_LOCK_MASK)) == TUPLE_XMAX_EXCL_LOCK;
}

/* What the header of a tuple (its first bytes, aligned) settles for the snapshot. */
KEY_FN TupleVisibility
tuple_visibility(const uint8_t *header, const TupleSnapshot *s)
{
	uint16_t	infomask;
	uint32_t	xmin;
	uint32_t	xmax;
	TupleXidState state;

	memcpy(&infomask, header + TUPLE_INFOMASK_OFFSET, sizeof(infomask));
	memcpy(&xmin, header + TUPLE_XMIN_OFFSET, sizeof(xmin));
	memcpy(&xmax, header + TUPLE_XMAX_OFFSET, sizeof(xmax));
	/* the inserter: aborted, not known here, or committed */
	if ((infomask & TUPLE_XMIN_FROZEN) == TUPLE_XMIN_INVALID)
		return TUPLE_INVISIBLE;
	if (!(infomask & TUPLE_XMIN_COMMITTED))
	{
		if (!s->no_own_xids || (infomask & TUPLE_MOVED))
			return TUPLE_UNDECIDED;
		/* not committed when the snapshot was taken: whatever befell it since */
		return tuple_xid_state(xmin, s) == TUPLE_XID_IN_PROGRESS ? TUPLE_INVISIBLE :
			TUPLE_UNDECIDED;
	}
	if ((infomask & TUPLE_XMIN_FROZEN) != TUPLE_XMIN_FROZEN)
	{
		state = tuple_xid_state(xmin, s);
		if (state != TUPLE_XID_ENDED)
			return state == TUPLE_XID_IN_PROGRESS ? TUPLE_INVISIBLE : TUPLE_UNDECIDED;
	}
	/* the deleter: none, a locker, not known here, or committed */
	if ((infomask & TUPLE_XMAX_INVALID) || tuple_xmax_locks_only(infomask))
		return TUPLE_VISIBLE;
	if (infomask & TUPLE_XMAX_IS_MULTI)
		return TUPLE_UNDECIDED;
	state = tuple_xid_state(xmax, s);
	if (!(infomask & TUPLE_XMAX_COMMITTED))
		return s->no_own_xids && state == TUPLE_XID_IN_PROGRESS ? TUPLE_VISIBLE :
			TUPLE_UNDECIDED;
	if (state == TUPLE_XID_UNKNOWN)
		return TUPLE_UNDECIDED;
	/* deleted: visible while the deleter was in progress to the snapshot */
	return state == TUPLE_XID_IN_PROGRESS ? TUPLE_VISIBLE : TUPLE_INVISIBLE;
}

#endif							/* TUPLE_VISIBILITY_H */
