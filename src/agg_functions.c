/*-------------------------------------------------------------------------
 *
 * agg_functions.c
 *	  The top-k aggregates, on the CPU: gpu_topk(value, k), the k largest
 *	  values as an array in descending order, gpu_bottomk(value, k), the k
 *	  smallest in ascending order, and gpu_topk_by(result, value, k) and
 *	  gpu_bottomk_by(result, value, k), the results of the rows with those
 *	  values, in the same order; the values of the key types.
 *
 * A group's state is its best rows so far, at most k of them, in a binary
 * heap whose root is the worst kept, so that a row that does not beat it
 * costs one comparison.  The heap grows with the group, so many small
 * groups with a large k cost what their rows need.  Values compare by
 * their order-preserving keys (keys.h), which is PostgreSQL's order: NaN
 * above every number, -0 equal to 0.  Rows whose values are equal are
 * ranked by the result, ascending in its type's order with NULLs last (as
 * array_agg(result ORDER BY value DESC, result) does), and results that
 * are equal but differ (-0 and 0) by their stored images, ascending;
 * gpu_topk's result is the value itself, and of values that are equal but
 * differ the one with the larger bits ranks first.  So the answer never depends on
 * the order of the rows, nor on how a parallel aggregation splits them.
 *
 * Rows whose value is NULL are skipped, and a group without other rows
 * gives NULL.  The states of a parallel aggregation are combined by merging
 * heaps and travel serialized as bytea.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "agg_functions.h"
#include "scan_datum_key.h"

/* a kept row: its value's key and its result */
typedef struct AggEntry
{
	uint64		key;			/* larger for the better value */
	Datum		result;
	bool		result_isnull;
} AggEntry;

struct TopkAggState
{
	Oid			value_type;
	KeyType		key_type;		/* value_type's */
	bool		largest;		/* gpu_topk*, or gpu_bottomk* */
	int32		k;
	int32		count;			/* entries kept, at most k */
	int32		capacity;
	AggEntry   *entries;		/* a heap: entries[0] ranks worst; at first
								 * the few that follow the state */
	/* the results: the values themselves, or another column (the _by forms) */
	bool		by;
	Oid			result_type;
	int16		result_typlen;
	bool		result_byval;
	char		result_typalign;
	Oid			collation;
	FmgrInfo   *result_cmp;		/* the _by forms' btree comparison (the type cache's) */
};

/*
 * The entries a state starts with, in its own allocation: groups are often
 * small, and a million groups should cost what their rows need.
 */
#define INLINE_ENTRIES 2

static inline AggEntry *
inline_entries(TopkAggState *state)
{
	return (AggEntry *) ((char *) state + MAXALIGN(sizeof(TopkAggState)));
}

/* the largest k: the answer is an array, and a state must fit in memory */
#define TOPK_AGG_MAX_K ((int32) (MaxAllocSize / sizeof(AggEntry)))

PG_FUNCTION_INFO_V1(gputopk_topk_trans);
PG_FUNCTION_INFO_V1(gputopk_bottomk_trans);
PG_FUNCTION_INFO_V1(gputopk_topk_by_trans);
PG_FUNCTION_INFO_V1(gputopk_bottomk_by_trans);
PG_FUNCTION_INFO_V1(gputopk_topk_combine);
PG_FUNCTION_INFO_V1(gputopk_topk_serialize);
PG_FUNCTION_INFO_V1(gputopk_topk_deserialize);
PG_FUNCTION_INFO_V1(gputopk_topk_final);

/* Two results' stored images compared: by value as words, else by length and bytes. */
static int
compare_images(TopkAggState *state, Datum a, Datum b)
{
	Size		a_size;
	Size		b_size;

	if (state->result_byval)
		return a < b ? -1 : a > b;
	a_size = datumGetSize(a, false, state->result_typlen);
	b_size = datumGetSize(b, false, state->result_typlen);
	if (a_size != b_size)
		return a_size < b_size ? -1 : 1;
	return memcmp(DatumGetPointer(a), DatumGetPointer(b), a_size);
}

/* Whether entry a ranks below entry b. */
static bool
ranks_below(TopkAggState *state, const AggEntry *a, const AggEntry *b)
{
	int			order;

	if (a->key != b->key)
		return a->key < b->key;
	if (!state->by)
		return a->result < b->result;
	/* equal values: the larger result, NULL the largest, ranks below */
	if (a->result_isnull || b->result_isnull)
		return a->result_isnull && !b->result_isnull;
	order = DatumGetInt32(FunctionCall2Coll(state->result_cmp, state->collation,
											a->result, b->result));
	if (order != 0)
		return order > 0;
	/* results that are equal but differ (-0 and 0): the larger image ranks below */
	return compare_images(state, a->result, b->result) > 0;
}

static void
sift_down(TopkAggState *state, int32 i)
{
	AggEntry   *heap = state->entries;
	int32		count = state->count;
	AggEntry	moving = heap[i];

	for (;;)
	{
		int32		child = 2 * i + 1;

		if (child >= count)
			break;
		if (child + 1 < count && ranks_below(state, &heap[child + 1], &heap[child]))
			child++;
		if (!ranks_below(state, &heap[child], &moving))
			break;
		heap[i] = heap[child];
		i = child;
	}
	heap[i] = moving;
}

/* An entry's result, copied into the current memory context if it is passed by reference. */
static void
keep_result(TopkAggState *state, AggEntry *entry)
{
	if (!state->result_byval && !entry->result_isnull)
		entry->result = datumCopy(entry->result, false, state->result_typlen);
}

static void
free_result(TopkAggState *state, AggEntry *entry)
{
	if (!state->result_byval && !entry->result_isnull)
		pfree(DatumGetPointer(entry->result));
}

/* Room for n entries (at most k) in a state; context holds it. */
void
topk_agg_reserve(TopkAggState *state, int32 n, MemoryContext context)
{
	AggEntry   *first = state->entries;

	n = Min(n, state->k);
	if (n <= state->capacity)
		return;
	state->capacity = n;
	if (first == inline_entries(state))
	{
		state->entries = MemoryContextAlloc(context, sizeof(AggEntry) * state->capacity);
		memcpy(state->entries, first, sizeof(AggEntry) * state->count);
	}
	else
		state->entries = repalloc(first, sizeof(AggEntry) * state->capacity);
}

/* Keep an entry if it is among the best k; context holds the state. */
static void
offer(TopkAggState *state, AggEntry entry, MemoryContext context)
{
	MemoryContext old;
	int32		i;

	if (state->count == state->k)
	{
		if (!ranks_below(state, &state->entries[0], &entry))
			return;
		free_result(state, &state->entries[0]);
		old = MemoryContextSwitchTo(context);
		keep_result(state, &entry);
		MemoryContextSwitchTo(old);
		state->entries[0] = entry;
		sift_down(state, 0);
		return;
	}
	if (state->count == state->capacity)
		topk_agg_reserve(state, state->capacity * 2, context);
	old = MemoryContextSwitchTo(context);
	keep_result(state, &entry);
	MemoryContextSwitchTo(old);
	/* sift up */
	i = state->count++;
	while (i > 0 && ranks_below(state, &entry, &state->entries[(i - 1) / 2]))
	{
		state->entries[i] = state->entries[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	state->entries[i] = entry;
}

void
topk_agg_offer(TopkAggState *state, uint64 key, Datum result, bool result_isnull,
			   MemoryContext context)
{
	AggEntry	entry = {key, result, result_isnull};

	offer(state, entry, context);
}

bool
topk_agg_floor(const TopkAggState *state, uint64 *floor)
{
	if (state->count < state->k)
		return false;
	*floor = state->entries[0].key;
	return true;
}

TopkAggState *
topk_agg_state_create(MemoryContext context, Oid value_type, bool largest, int32 k,
		  bool by, Oid result_type, Oid collation)
{
	int32		capacity = Min(k, INLINE_ENTRIES);
	TopkAggState *state = MemoryContextAllocZero(context, MAXALIGN(sizeof(TopkAggState)) +
												 sizeof(AggEntry) * capacity);
	TypeCacheEntry *tc;

	state->value_type = value_type;
	if (!key_type_of(value_type, &state->key_type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("top-k aggregates do not support type %s", format_type_be(value_type))));
	state->largest = largest;
	state->k = k;
	state->capacity = capacity;
	state->entries = inline_entries(state);
	state->by = by;
	state->result_type = result_type;
	state->collation = collation;
	tc = lookup_type_cache(result_type, by ? TYPECACHE_CMP_PROC_FINFO : 0);
	state->result_typlen = tc->typlen;
	state->result_byval = tc->typbyval;
	state->result_typalign = tc->typalign;
	if (by)
	{
		if (!OidIsValid(tc->cmp_proc_finfo.fn_oid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("could not identify a comparison function for type %s",
							format_type_be(result_type)),
					 errdetail("Rows with equal values are ordered by the result, so its type needs a btree order.")));
		state->result_cmp = &tc->cmp_proc_finfo;
	}
	return state;
}

bool
topk_agg_k_is_valid(int32 k)
{
	return k > 0 && k <= TOPK_AGG_MAX_K;
}

bool
topk_agg_functions(PGFunction transfn, PGFunction finalfn, bool *largest, bool *by)
{
	*largest = transfn == gputopk_topk_trans || transfn == gputopk_topk_by_trans;
	*by = transfn == gputopk_topk_by_trans || transfn == gputopk_bottomk_by_trans;
	return finalfn == gputopk_topk_final &&
		(*largest || *by || transfn == gputopk_bottomk_trans);
}

/* A new, empty state of the same aggregate as model: its type facts are not looked up again. */
TopkAggState *
topk_agg_state_like(const TopkAggState *model, MemoryContext context)
{
	int32		capacity = Min(model->k, INLINE_ENTRIES);
	TopkAggState *state = MemoryContextAlloc(context, MAXALIGN(sizeof(TopkAggState)) +
											 sizeof(AggEntry) * capacity);

	*state = *model;
	state->count = 0;
	state->capacity = capacity;
	state->entries = inline_entries(state);
	return state;
}

/* The k in argument arg, checked. */
static int32
checked_k(FunctionCallInfo fcinfo, int arg)
{
	int32		k;

	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be null")));
	k = PG_GETARG_INT32(arg);
	if (k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be positive"),
				 errdetail("k is %d.", k)));
	if (k > TOPK_AGG_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("k is too large"),
				 errdetail("k is %d; at most %d values can be kept.", k, TOPK_AGG_MAX_K)));
	return k;
}

/*
 * A row into the group's state: the value is argument value_arg, its
 * result the argument before it in the _by forms (by), else the value.
 */
static Datum
topk_trans(FunctionCallInfo fcinfo, bool largest, bool by)
{
	MemoryContext aggcontext;
	TopkAggState *state = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	int			value_arg = by ? 2 : 1;
	int32		k = checked_k(fcinfo, value_arg + 1);
	AggEntry	entry;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k transition function called in a non-aggregate context");
	if (state == NULL)
		state = topk_agg_state_create(aggcontext, get_fn_expr_argtype(fcinfo->flinfo, value_arg), largest, k,
						  by, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GET_COLLATION());
	else if (k != state->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", state->k, k)));
	if (PG_ARGISNULL(value_arg))
		PG_RETURN_POINTER(state);
	entry.key = key_of_datum(state->key_type, PG_GETARG_DATUM(value_arg), largest);
	entry.result = PG_GETARG_DATUM(1);
	entry.result_isnull = PG_ARGISNULL(1);
	offer(state, entry, aggcontext);
	PG_RETURN_POINTER(state);
}

Datum
gputopk_topk_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, true, false);
}

Datum
gputopk_bottomk_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, false, false);
}

Datum
gputopk_topk_by_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, true, true);
}

Datum
gputopk_bottomk_by_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, false, true);
}

/* Merge two groups' states (partial aggregates of one group). */
Datum
gputopk_topk_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	TopkAggState *into = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	TopkAggState *from = PG_ARGISNULL(1) ? NULL : (TopkAggState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k combine function called in a non-aggregate context");
	if (from == NULL)
		PG_RETURN_POINTER(into);
	if (into == NULL)
		into = topk_agg_state_like(from, aggcontext);
	else if (into->k != from->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", into->k, from->k)));
	for (int32 i = 0; i < from->count; i++)
		offer(into, from->entries[i], aggcontext);
	PG_RETURN_POINTER(into);
}

/* what a serialized state starts with; the entries follow */
typedef struct SerializedHeader
{
	Oid			value_type;
	Oid			result_type;
	Oid			collation;
	bool		largest;
	bool		by;
	int32		k;
	int32		count;
} SerializedHeader;

bytea *
topk_agg_serialize(TopkAggState *state)
{
	SerializedHeader header = {state->value_type, state->result_type, state->collation,
	state->largest, state->by, state->k, state->count};
	Size		size = VARHDRSZ + sizeof(header);
	bytea	   *bytes;
	char	   *p;

	for (int32 i = 0; i < state->count; i++)
		size += sizeof(uint64) +
			datumEstimateSpace(state->entries[i].result, state->entries[i].result_isnull,
							   state->result_byval, state->result_typlen);
	bytes = palloc(size);
	SET_VARSIZE(bytes, size);
	p = VARDATA(bytes);
	memcpy(p, &header, sizeof(header));
	p += sizeof(header);
	for (int32 i = 0; i < state->count; i++)
	{
		memcpy(p, &state->entries[i].key, sizeof(uint64));
		p += sizeof(uint64);
		datumSerialize(state->entries[i].result, state->entries[i].result_isnull,
					   state->result_byval, state->result_typlen, &p);
	}
	return bytes;
}

Datum
gputopk_topk_serialize(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(topk_agg_serialize((TopkAggState *) PG_GETARG_POINTER(0)));
}

Datum
gputopk_topk_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcontext;
	MemoryContext old;
	SerializedHeader header;
	TopkAggState *state;
	char	   *p = VARDATA_ANY(bytes);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k deserialize function called in a non-aggregate context");
	memcpy(&header, p, sizeof(header));
	p += sizeof(header);
	state = topk_agg_state_create(aggcontext, header.value_type, header.largest, header.k,
					  header.by, header.result_type, header.collation);
	/* the entries were serialized as a heap: they are restored as they were */
	old = MemoryContextSwitchTo(aggcontext);
	if (header.count > state->capacity)
	{
		state->capacity = header.count;
		state->entries = palloc(sizeof(AggEntry) * state->capacity);
	}
	for (int32 i = 0; i < header.count; i++)
	{
		memcpy(&state->entries[i].key, p, sizeof(uint64));
		p += sizeof(uint64);
		state->entries[i].result = datumRestore(&p, &state->entries[i].result_isnull);
	}
	state->count = header.count;
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(state);
}

static int
compare_best_first(const void *a, const void *b, void *state)
{
	if (ranks_below(state, a, b))
		return 1;
	return ranks_below(state, b, a) ? -1 : 0;
}

Datum
topk_agg_result(TopkAggState *state, bool *isnull)
{
	AggEntry   *sorted;
	Datum	   *results;
	bool	   *nulls;
	int			dims[1];
	int			lbs[1] = {1};

	*isnull = state == NULL || state->count == 0;
	if (*isnull)
		return (Datum) 0;
	/* the state stays as it is: a window aggregate goes on with it */
	sorted = palloc(sizeof(AggEntry) * state->count);
	memcpy(sorted, state->entries, sizeof(AggEntry) * state->count);
	qsort_arg(sorted, state->count, sizeof(AggEntry), compare_best_first, state);
	results = palloc(sizeof(Datum) * state->count);
	nulls = palloc(sizeof(bool) * state->count);
	for (int32 i = 0; i < state->count; i++)
	{
		results[i] = sorted[i].result;
		nulls[i] = sorted[i].result_isnull;
	}
	dims[0] = state->count;
	return PointerGetDatum(construct_md_array(results, nulls, 1, dims, lbs, state->result_type,
											  state->result_typlen, state->result_byval,
											  state->result_typalign));
}

/* The kept results, best first, as an array; NULL without any. */
Datum
gputopk_topk_final(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result = topk_agg_result(PG_ARGISNULL(0) ? NULL :
										 (TopkAggState *) PG_GETARG_POINTER(0), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
