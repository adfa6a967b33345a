/*-------------------------------------------------------------------------
 *
 * agg_functions.h
 *	  The state of one group of a top-k aggregate (agg_functions.c), for the
 *	  aggregates' own functions and for GpuTopKAgg, which keeps a state per
 *	  group without PostgreSQL's Agg node.  Its functions are agg_trans_*
 *	  (a transition state), apart from GpuTopKAgg's executor state
 *	  (agg_state.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_FUNCTIONS_H
#define AGG_FUNCTIONS_H

#include "fmgr.h"

typedef struct TopkAggState TopkAggState;

/*
 * Whether an aggregate's transition and final functions are those of a
 * top-k aggregate, and which: gpu_topk* (largest) or gpu_bottomk*, the _by
 * forms (by) or not.
 */
extern bool agg_functions_of(PGFunction transfn, PGFunction finalfn, bool *largest,
							 bool *by);

/* Whether k is one the aggregates accept (else their transition functions raise an error). */
extern bool agg_k_is_valid(int32 k);

extern TopkAggState *agg_trans_create(MemoryContext context, Oid value_type,
									  bool largest, int32 k, bool by,
									  Oid result_type, Oid collation);

/* A new, empty state of the same aggregate as model: its type facts are not looked up again. */
extern TopkAggState *agg_trans_like(const TopkAggState *model, MemoryContext context);

/* Room for n entries (at most k) in a state; context holds it. */
extern void agg_trans_reserve(TopkAggState *state, int32 n, MemoryContext context);

/*
 * Offer a row: key is its value's key (larger for the better value), result
 * its result (the value itself but for the _by forms).  A kept result is
 * copied into context.
 */
extern void agg_trans_offer(TopkAggState *state, uint64 key, Datum result,
							bool result_isnull, MemoryContext context);

/*
 * Whether the state holds k results, and then in *floor the key below which
 * an offer cannot enter (one of that key may, by its result).  The floor
 * only rises as offers enter.
 */
extern bool agg_trans_floor(const TopkAggState *state, uint64 *floor);

/* The kept results, best first, as an array; NULL without any. */
extern Datum agg_trans_result(TopkAggState *state, bool *isnull);

/* The state as the aggregates' serialize function gives it, in the current context. */
extern bytea *agg_trans_serialize(TopkAggState *state);

#endif							/* AGG_FUNCTIONS_H */
