/*-------------------------------------------------------------------------
 *
 * topk_agg.c
 *	  The top-k aggregates: gpu_topk(value, k), the k largest values as an
 *	  array in descending order, and gpu_bottomk(value, k), the k smallest
 *	  in ascending order, over the key types; on the CPU.
 *
 * A group's state is its best values so far, at most k of them, in a
 * binary heap whose root is the worst kept, so that a value that does not
 * beat it costs one comparison.  The heap grows with the group, so many
 * small groups with a large k cost what their rows need.  Values compare
 * by their order-preserving keys (keys.h), which is PostgreSQL's order:
 * NaN above every number, -0 equal to 0.  Values that compare equal but
 * differ (-0 and 0) are ranked by their bits, so which of them is kept, and
 * where it stands, does not depend on the order of the rows, nor on how a
 * parallel aggregation splits them.
 *
 * NULL values are skipped, and a group without other values gives NULL.
 * The states of a parallel aggregation are combined by merging heaps and
 * travel serialized as bytea.  All key types are passed by value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "keys.h"

/* a kept value and its key: larger (key, value bits) ranks better */
typedef struct AggEntry
{
	uint64		key;
	Datum		value;
} AggEntry;

typedef struct TopkAggState
{
	Oid			type;			/* the values' type */
	bool		largest;		/* gpu_topk, or gpu_bottomk */
	int32		k;
	int32		count;			/* entries kept, at most k */
	int32		capacity;
	AggEntry   *entries;		/* a heap: entries[0] ranks worst */
} TopkAggState;

/* the largest k: the answer is an array, and a state must fit in memory */
#define TOPK_AGG_MAX_K ((int32) (MaxAllocSize / sizeof(AggEntry)))

PG_FUNCTION_INFO_V1(gputopk_topk_trans);
PG_FUNCTION_INFO_V1(gputopk_bottomk_trans);
PG_FUNCTION_INFO_V1(gputopk_topk_combine);
PG_FUNCTION_INFO_V1(gputopk_topk_serialize);
PG_FUNCTION_INFO_V1(gputopk_topk_deserialize);
PG_FUNCTION_INFO_V1(gputopk_topk_final);

static bool
ranks_below(const AggEntry *a, const AggEntry *b)
{
	return a->key < b->key || (a->key == b->key && a->value < b->value);
}

/* the key of a value, larger for the better of the aggregate's order */
static uint64
agg_key(Oid type, Datum d, bool largest)
{
	switch (type)
	{
		case INT2OID:
			return key_from_int32(DatumGetInt16(d), largest);
		case INT4OID:
			return key_from_int32(DatumGetInt32(d), largest);
		case DATEOID:
			return key_from_int32(DatumGetDateADT(d), largest);
		case INT8OID:
			return key_from_int64(DatumGetInt64(d), largest);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return key_from_int64(DatumGetTimestamp(d), largest);
		case FLOAT4OID:
			return key_from_float4(DatumGetFloat4(d), largest);
		case FLOAT8OID:
			return key_from_float8(DatumGetFloat8(d), largest);
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("top-k aggregates do not support type %s", format_type_be(type))));
	pg_unreachable();
}

static void
sift_down(AggEntry *heap, int32 count, int32 i)
{
	AggEntry	moving = heap[i];

	for (;;)
	{
		int32		child = 2 * i + 1;

		if (child >= count)
			break;
		if (child + 1 < count && ranks_below(&heap[child + 1], &heap[child]))
			child++;
		if (!ranks_below(&heap[child], &moving))
			break;
		heap[i] = heap[child];
		i = child;
	}
	heap[i] = moving;
}

/* Keep an entry if it is among the best k. */
static void
offer(TopkAggState *state, AggEntry entry)
{
	int32		i;

	if (state->count == state->k)
	{
		if (ranks_below(&entry, &state->entries[0]) ||
			(entry.key == state->entries[0].key && entry.value == state->entries[0].value))
			return;
		state->entries[0] = entry;
		sift_down(state->entries, state->count, 0);
		return;
	}
	if (state->count == state->capacity)
	{
		state->capacity = Min(Max(state->capacity * 2, 8), state->k);
		state->entries = repalloc(state->entries, sizeof(AggEntry) * state->capacity);
	}
	/* sift up */
	i = state->count++;
	while (i > 0 && ranks_below(&entry, &state->entries[(i - 1) / 2]))
	{
		state->entries[i] = state->entries[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	state->entries[i] = entry;
}

static TopkAggState *
new_state(MemoryContext context, Oid type, bool largest, int32 k)
{
	TopkAggState *state = MemoryContextAllocZero(context, sizeof(TopkAggState));

	state->type = type;
	state->largest = largest;
	state->k = k;
	state->capacity = Min(k, 8);
	state->entries = MemoryContextAlloc(context, sizeof(AggEntry) * state->capacity);
	return state;
}

static int32
checked_k(FunctionCallInfo fcinfo)
{
	int32		k;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be null")));
	k = PG_GETARG_INT32(2);
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

static Datum
topk_trans(FunctionCallInfo fcinfo, bool largest)
{
	MemoryContext aggcontext;
	TopkAggState *state = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	int32		k = checked_k(fcinfo);
	AggEntry	entry;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k transition function called in a non-aggregate context");
	if (state == NULL)
		state = new_state(aggcontext, get_fn_expr_argtype(fcinfo->flinfo, 1), largest, k);
	else if (k != state->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", state->k, k)));
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(state);
	entry.value = PG_GETARG_DATUM(1);
	entry.key = agg_key(state->type, entry.value, largest);
	offer(state, entry);
	PG_RETURN_POINTER(state);
}

Datum
gputopk_topk_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, true);
}

Datum
gputopk_bottomk_trans(PG_FUNCTION_ARGS)
{
	return topk_trans(fcinfo, false);
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
		into = new_state(aggcontext, from->type, from->largest, from->k);
	else if (into->k != from->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", into->k, from->k)));
	for (int32 i = 0; i < from->count; i++)
		offer(into, from->entries[i]);
	PG_RETURN_POINTER(into);
}

Datum
gputopk_topk_serialize(PG_FUNCTION_ARGS)
{
	TopkAggState *state = (TopkAggState *) PG_GETARG_POINTER(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, state->type);
	pq_sendbyte(&buf, state->largest);
	pq_sendint32(&buf, state->k);
	pq_sendint32(&buf, state->count);
	for (int32 i = 0; i < state->count; i++)
	{
		pq_sendint64(&buf, state->entries[i].key);
		pq_sendint64(&buf, (int64) state->entries[i].value);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
gputopk_topk_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);
	MemoryContext aggcontext;
	StringInfoData buf;
	TopkAggState *state;
	Oid			type;
	bool		largest;
	int32		k;
	int32		count;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k deserialize function called in a non-aggregate context");
	buf.data = VARDATA_ANY(bytes);
	buf.len = VARSIZE_ANY_EXHDR(bytes);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	type = pq_getmsgint(&buf, 4);
	largest = pq_getmsgbyte(&buf) != 0;
	k = pq_getmsgint(&buf, 4);
	count = pq_getmsgint(&buf, 4);
	state = new_state(aggcontext, type, largest, k);
	for (int32 i = 0; i < count; i++)
	{
		AggEntry	entry;

		entry.key = (uint64) pq_getmsgint64(&buf);
		entry.value = (Datum) pq_getmsgint64(&buf);
		offer(state, entry);
	}
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

static int
compare_best_first(const void *a, const void *b)
{
	const AggEntry *x = a;
	const AggEntry *y = b;

	if (ranks_below(x, y))
		return 1;
	return ranks_below(y, x) ? -1 : 0;
}

/* The kept values, best first, as an array; NULL without any. */
Datum
gputopk_topk_final(PG_FUNCTION_ARGS)
{
	TopkAggState *state = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	AggEntry   *sorted;
	Datum	   *values;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (state == NULL || state->count == 0)
		PG_RETURN_NULL();
	/* the state stays as it is: a window aggregate goes on with it */
	sorted = palloc(sizeof(AggEntry) * state->count);
	memcpy(sorted, state->entries, sizeof(AggEntry) * state->count);
	qsort(sorted, state->count, sizeof(AggEntry), compare_best_first);
	values = palloc(sizeof(Datum) * state->count);
	for (int32 i = 0; i < state->count; i++)
		values[i] = sorted[i].value;
	get_typlenbyvalalign(state->type, &typlen, &typbyval, &typalign);
	PG_RETURN_ARRAYTYPE_P(construct_array(values, state->count, state->type,
										  typlen, typbyval, typalign));
}
