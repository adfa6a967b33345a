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
 * gives NULL.  gpu_topk's and gpu_bottomk's transition type is bytea, not
 * internal, so that Citus can run them as partial aggregates on its
 * workers: in an aggregate's memory a state is an expanded object, which
 * PostgreSQL hands from row to row as it is.  The _by forms keep internal
 * states (Citus cannot check their polymorphic result on its workers; see
 * gputopk--0.1.sql).  Where a state leaves its process (a parallel
 * aggregation's workers, Citus's workers) it travels in one checked,
 * machine-independent flat form (agg_trans_serialize).  Partial states are
 * combined by merging heaps.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "agg_functions.h"
#include "compat.h"
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
PG_FUNCTION_INFO_V1(gputopk_topk_by_combine);
PG_FUNCTION_INFO_V1(gputopk_topk_by_serialize);
PG_FUNCTION_INFO_V1(gputopk_topk_by_deserialize);
PG_FUNCTION_INFO_V1(gputopk_topk_final);
PG_FUNCTION_INFO_V1(gputopk_topk_by_final);

/*
 * Two results' images compared: by value as words; varlenas by their
 * contents, whatever their headers (a result read back from a flat state
 * has a 4-byte header where the row's may have had 1); others by bytes.
 */
static int
compare_images(TopkAggState *state, Datum a, Datum b)
{
	Size		a_size;
	Size		b_size;
	const char *a_bytes = DatumGetPointer(a);
	const char *b_bytes = DatumGetPointer(b);

	if (state->result_byval)
		return a < b ? -1 : a > b;
	if (state->result_typlen == -1)
	{
		a_size = VARSIZE_ANY_EXHDR(a_bytes);
		b_size = VARSIZE_ANY_EXHDR(b_bytes);
		a_bytes = VARDATA_ANY(a_bytes);
		b_bytes = VARDATA_ANY(b_bytes);
	}
	else
	{
		a_size = datumGetSize(a, false, state->result_typlen);
		b_size = datumGetSize(b, false, state->result_typlen);
	}
	if (a_size != b_size)
		return a_size < b_size ? -1 : 1;
	return memcmp(a_bytes, b_bytes, a_size);
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

/*
 * An entry's result, copied into the current memory context if it is
 * passed by reference; a varlena detoasted, so that a state holds no
 * pointer into a table and its images compare alike however they came.
 */
static void
keep_result(TopkAggState *state, AggEntry *entry)
{
	if (state->result_byval || entry->result_isnull)
		return;
	if (state->result_typlen == -1)
		entry->result = PointerGetDatum(PG_DETOAST_DATUM_COPY(entry->result));
	else
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
agg_trans_reserve(TopkAggState *state, int32 n, MemoryContext context)
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
		agg_trans_reserve(state, state->capacity * 2, context);
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
agg_trans_offer(TopkAggState *state, uint64 key, Datum result, bool result_isnull,
				MemoryContext context)
{
	AggEntry	entry = {key, result, result_isnull};

	offer(state, entry, context);
}

bool
agg_trans_floor(const TopkAggState *state, uint64 *floor)
{
	if (state->count < state->k)
		return false;
	*floor = state->entries[0].key;
	return true;
}

TopkAggState *
agg_trans_create(MemoryContext context, Oid value_type, bool largest, int32 k,
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
agg_k_is_valid(int32 k)
{
	return k > 0 && k <= TOPK_AGG_MAX_K;
}

bool
agg_functions_of(PGFunction transfn, PGFunction finalfn, bool *largest, bool *by)
{
	*largest = transfn == gputopk_topk_trans || transfn == gputopk_topk_by_trans;
	*by = transfn == gputopk_topk_by_trans || transfn == gputopk_bottomk_by_trans;
	return finalfn == (*by ? gputopk_topk_by_final : gputopk_topk_final) &&
		(*largest || *by || transfn == gputopk_bottomk_trans);
}

/* A new, empty state of the same aggregate as model: its type facts are not looked up again. */
TopkAggState *
agg_trans_like(const TopkAggState *model, MemoryContext context)
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
 * The flat form of a state, in which it travels between processes (a
 * parallel aggregation's workers, Citus's workers) as the aggregates'
 * transition type, bytea.  It is built with the wire protocol's functions,
 * so it is the same on every machine, and read back with every field
 * checked: anyone can hand the aggregates' functions a bytea.
 *
 *	 version byte, value type, result type, collation (uint32 each),
 *	 largest and by (byte each), k and the entry count (int32 each);
 *	 then each entry:
 *	   plain forms: the value (int64, the Datum of a by-value key type);
 *	   _by forms:	its key (int64), a byte saying whether the result is
 *					NULL, and the result: by value as an int64; text, varchar,
 *					bpchar and bytea as their bytes (counted); other types
 *					in their binary form (counted), or the text form for a
 *					type without binary input and output.
 */
#define FLAT_FORM_VERSION 1

/* How a type's by-reference results are written or read: its binary or text functions. */
typedef struct ResultIO
{
	bool		raw;			/* text-like or bytea: the bytes themselves */
	bool		binary;
	FmgrInfo	fn;
	Oid			ioparam;
} ResultIO;

static bool
is_raw_result_type(Oid type)
{
	return type == TEXTOID || type == VARCHAROID || type == BPCHAROID || type == BYTEAOID;
}

static void
result_io_of(Oid type, bool writing, ResultIO *io)
{
	HeapTuple	tuple;
	Form_pg_type form;

	io->raw = is_raw_result_type(type);
	if (io->raw)
		return;
	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for type %u", type);
	form = (Form_pg_type) GETSTRUCT(tuple);
	io->binary = OidIsValid(form->typsend) && OidIsValid(form->typreceive);
	io->ioparam = getTypeIOParam(tuple);
	if (writing)
		fmgr_info(io->binary ? form->typsend : form->typoutput, &io->fn);
	else
		fmgr_info(io->binary ? form->typreceive : form->typinput, &io->fn);
	ReleaseSysCache(tuple);
}

static void
write_result(StringInfo buf, TopkAggState *state, ResultIO *io, Datum result)
{
	if (state->result_byval)
		pq_sendint64(buf, (int64) result);
	else if (io->raw)
	{
		pq_sendint32(buf, VARSIZE_ANY_EXHDR(DatumGetPointer(result)));
		pq_sendbytes(buf, VARDATA_ANY(DatumGetPointer(result)),
					 VARSIZE_ANY_EXHDR(DatumGetPointer(result)));
	}
	else if (io->binary)
	{
		bytea	   *bytes = SendFunctionCall(&io->fn, result);

		pq_sendint32(buf, VARSIZE(bytes) - VARHDRSZ);
		pq_sendbytes(buf, VARDATA(bytes), VARSIZE(bytes) - VARHDRSZ);
	}
	else
	{
		char	   *text = OutputFunctionCall(&io->fn, result);

		pq_sendint32(buf, strlen(text));
		pq_sendbytes(buf, text, strlen(text));
	}
}

bytea *
agg_trans_serialize(TopkAggState *state)
{
	StringInfoData buf;
	ResultIO	io;

	if (state->by && !state->result_byval)
		result_io_of(state->result_type, true, &io);
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, FLAT_FORM_VERSION);
	pq_sendint32(&buf, state->value_type);
	pq_sendint32(&buf, state->result_type);
	pq_sendint32(&buf, state->collation);
	pq_sendbyte(&buf, state->largest);
	pq_sendbyte(&buf, state->by);
	pq_sendint32(&buf, state->k);
	pq_sendint32(&buf, state->count);
	for (int32 i = 0; i < state->count; i++)
	{
		AggEntry   *entry = &state->entries[i];

		if (!state->by)
		{
			pq_sendint64(&buf, (int64) entry->result);
			continue;
		}
		pq_sendint64(&buf, (int64) entry->key);
		pq_sendbyte(&buf, entry->result_isnull);
		if (!entry->result_isnull)
			write_result(&buf, state, &io, entry->result);
	}
	return pq_endtypsend(&buf);
}

pg_noreturn static void
invalid_state(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid top-k aggregate state"),
			 errdetail_internal("%s", detail)));
}

/* That n more bytes are left in a flat state. */
static void
need(StringInfo buf, int n)
{
	if (n > buf->len - buf->cursor)
		invalid_state("It ends before its last value.");
}

static bool
read_flag(StringInfo buf)
{
	int			byte = pq_getmsgbyte(buf);

	if (byte != 0 && byte != 1)
		invalid_state("A flag is neither 0 nor 1.");
	return byte == 1;
}

/* A by-reference result, checked as its type's input functions check it. */
static Datum
read_result(StringInfo buf, TopkAggState *state, ResultIO *io)
{
	int32		length;
	const char *bytes;

	need(buf, 4);
	length = pq_getmsgint(buf, 4);
	if (length < 0)
		invalid_state("A result's length is negative.");
	need(buf, length);
	bytes = pq_getmsgbytes(buf, length);
	if (io->raw)
	{
		text	   *result = palloc(VARHDRSZ + length);

		if (state->result_type != BYTEAOID)
			pg_verifymbstr(bytes, length, false);
		SET_VARSIZE(result, VARHDRSZ + length);
		memcpy(VARDATA(result), bytes, length);
		return PointerGetDatum(result);
	}
	if (io->binary)
	{
		StringInfoData value;

		/* receive functions expect a buffer of their own, terminated by a zero byte */
		initStringInfo(&value);
		appendBinaryStringInfo(&value, bytes, length);
		return ReceiveFunctionCall(&io->fn, &value, io->ioparam, -1);
	}
	return InputFunctionCall(&io->fn, pnstrdup(bytes, length), io->ioparam, -1);
}

/* The type a state's header names, if a _by form may return it. */
static void
check_result_type(Oid type)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	bool		usable;

	if (!HeapTupleIsValid(tuple))
		invalid_state("Its result type does not exist.");
	usable = ((Form_pg_type) GETSTRUCT(tuple))->typisdefined &&
		((Form_pg_type) GETSTRUCT(tuple))->typtype != TYPTYPE_PSEUDO;
	ReleaseSysCache(tuple);
	if (!usable)
		invalid_state("Its result type is a pseudo-type or only a shell.");
}

/* A state from its flat form, every field checked; context holds it. */
static TopkAggState *
topk_agg_deserialize(bytea *flat, MemoryContext context)
{
	StringInfoData buf;
	Oid			value_type;
	Oid			result_type;
	Oid			collation;
	bool		largest;
	bool		by;
	int32		k;
	int32		count;
	TopkAggState *state;
	ResultIO	io;

	buf.data = VARDATA_ANY(flat);
	buf.len = VARSIZE_ANY_EXHDR(flat);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	need(&buf, 1);
	if (pq_getmsgbyte(&buf) != FLAT_FORM_VERSION)
		invalid_state("Its version is not one this gputopk reads.");
	need(&buf, 3 * 4 + 2 + 2 * 4);
	value_type = pq_getmsgint(&buf, 4);
	result_type = pq_getmsgint(&buf, 4);
	collation = pq_getmsgint(&buf, 4);
	largest = read_flag(&buf);
	by = read_flag(&buf);
	k = pq_getmsgint(&buf, 4);
	count = pq_getmsgint(&buf, 4);
	if (!agg_k_is_valid(k) || count < 0 || count > k || count > buf.len - buf.cursor)
		invalid_state("Its k or its count of values is out of range.");
	if (by)
		check_result_type(result_type);
	else if (result_type != value_type)
		invalid_state("Its result type is not its value type.");
	if (OidIsValid(collation) && !SearchSysCacheExists1(COLLOID, ObjectIdGetDatum(collation)))
		invalid_state("Its collation does not exist.");
	/* an unknown value type gets the error the aggregates give for it */
	state = agg_trans_create(context, value_type, largest, k, by, result_type, collation);
	if (by && !state->result_byval)
		result_io_of(result_type, false, &io);
	/* each entry is offered: the heap is rebuilt, not trusted */
	for (int32 i = 0; i < count; i++)
	{
		AggEntry	entry = {0, (Datum) 0, false};

		need(&buf, by ? 8 + 1 : 8);
		if (!by)
		{
			entry.result = (Datum) pq_getmsgint64(&buf);
			entry.key = key_of_datum(state->key_type, entry.result, largest);
		}
		else
		{
			entry.key = (uint64) pq_getmsgint64(&buf);
			entry.result_isnull = read_flag(&buf);
			if (entry.result_isnull)
				;
			else if (state->result_byval)
			{
				need(&buf, 8);
				entry.result = (Datum) pq_getmsgint64(&buf);
			}
			else
				entry.result = read_result(&buf, state, &io);
		}
		offer(state, entry, context);
	}
	if (buf.cursor != buf.len)
		invalid_state("It has bytes after its last value.");
	return state;
}

/*
 * A state in an aggregate's memory is an expanded object (of type bytea),
 * so that PostgreSQL passes it from row to row without copying it and
 * flattens it only where it leaves the process.
 *
 * The states of all groups share one memory context, a child of the
 * aggregate's context, where an expanded object usually has one of its
 * own: a hash aggregation measures its memory by walking the aggregate
 * context's children at every new group, so a context per group costs
 * time quadratic in the groups (30 s for 100,000 groups).  Sharing is safe
 * because an expanded object's context is deleted only where a transition
 * function returns a different datum than the state it was given
 * (PostgreSQL's nodeAgg and nodeWindowAgg, Citus's worker_partial_agg), and
 * these functions return the state they were given whenever it is theirs
 * and read-write; a state they cannot change in place (flat, or
 * read-only) is copied into a new one, and the old one is PostgreSQL's to free.
 */
#define STATES_CONTEXT_NAME "gputopk aggregate states"

typedef struct ExpandedState
{
	ExpandedObjectHeader hdr;
	TopkAggState *state;
	bytea	   *flat;			/* the flat form flat_size made, for flatten_into */
} ExpandedState;

static Size
expanded_flat_size(ExpandedObjectHeader *eohptr)
{
	ExpandedState *expanded = (ExpandedState *) eohptr;

	if (expanded->flat == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(expanded->hdr.eoh_context);

		expanded->flat = agg_trans_serialize(expanded->state);
		MemoryContextSwitchTo(old);
	}
	return VARSIZE(expanded->flat);
}

/* Called right after expanded_flat_size. */
static void
expanded_flatten_into(ExpandedObjectHeader *eohptr, void *result, Size allocated_size)
{
	ExpandedState *expanded = (ExpandedState *) eohptr;

	Assert(expanded->flat != NULL && allocated_size == VARSIZE(expanded->flat));
	memcpy(result, expanded->flat, allocated_size);
	pfree(expanded->flat);
	expanded->flat = NULL;
}

static const ExpandedObjectMethods expanded_state_methods = {
	expanded_flat_size,
	expanded_flatten_into
};

/* A new expanded state, without its TopkAggState, in the aggregate's states context. */
static ExpandedState *
expanded_state_create(MemoryContext aggcontext)
{
	MemoryContext states = NULL;
	ExpandedState *expanded;

	for (MemoryContext child = aggcontext->firstchild; child != NULL; child = child->nextchild)
		if (strcmp(child->name, STATES_CONTEXT_NAME) == 0)
		{
			states = child;
			break;
		}
	if (states == NULL)
		states = AllocSetContextCreate(aggcontext, STATES_CONTEXT_NAME, ALLOCSET_DEFAULT_SIZES);
	expanded = MemoryContextAllocZero(states, sizeof(ExpandedState));
	EOH_init_header(&expanded->hdr, &expanded_state_methods, states);
	return expanded;
}

static ExpandedState *
expanded_state_of(Datum datum)
{
	ExpandedObjectHeader *eoh;

	if (!VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(datum)))
		return NULL;
	eoh = DatumGetEOHP(datum);
	return eoh->eoh_methods == &expanded_state_methods ? (ExpandedState *) eoh : NULL;
}

/* A state to read: an expanded one as it is, a flat one read into the current context. */
static TopkAggState *
readable_state(Datum datum)
{
	ExpandedState *expanded = expanded_state_of(datum);

	if (expanded != NULL)
		return expanded->state;
	return topk_agg_deserialize(DatumGetByteaPP(datum), CurrentMemoryContext);
}

static void merge_states(TopkAggState *into, TopkAggState *from, MemoryContext context);

/* A new expanded state in the aggregate's memory holding a copy of from. */
static ExpandedState *
expanded_state_copy(TopkAggState *from, MemoryContext aggcontext)
{
	ExpandedState *expanded = expanded_state_create(aggcontext);

	expanded->state = agg_trans_like(from, expanded->hdr.eoh_context);
	merge_states(expanded->state, from, expanded->hdr.eoh_context);
	return expanded;
}

/*
 * The state in argument 0 of a transition or combine function, to change:
 * the expanded state this aggregate owns (read-write), else a copy of what
 * came; NULL for NULL.
 */
static ExpandedState *
writable_state(FunctionCallInfo fcinfo, MemoryContext aggcontext)
{
	ExpandedState *expanded;

	if (PG_ARGISNULL(0))
		return NULL;
	expanded = expanded_state_of(PG_GETARG_DATUM(0));
	if (expanded != NULL && VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(PG_GETARG_DATUM(0))))
		return expanded;
	return expanded_state_copy(readable_state(PG_GETARG_DATUM(0)), aggcontext);
}

/*
 * The type of a plain form's value: its argument's, or where it is called
 * without the expression (Citus's worker_partial_agg) the one its
 * transition function is declared with (one per value type, for that).
 * Only a new group asks.
 */
static Oid
plain_value_type(FunctionCallInfo fcinfo)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Oid		   *arg_types;
	int			nargs;

	if (OidIsValid(type))
		return type;
	get_func_signature(fcinfo->flinfo->fn_oid, &arg_types, &nargs);
	return arg_types[1];
}

/* A row into a state: the value is argument value_arg, its result argument 1; context holds the state. */
static void
offer_row(FunctionCallInfo fcinfo, TopkAggState *state, int value_arg, int32 k,
		  MemoryContext context)
{
	AggEntry	entry;

	if (k != state->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", state->k, k)));
	if (PG_ARGISNULL(value_arg))
		return;
	entry.key = key_of_datum(state->key_type, PG_GETARG_DATUM(value_arg), state->largest);
	entry.result = PG_GETARG_DATUM(1);
	entry.result_isnull = PG_ARGISNULL(1);
	offer(state, entry, context);
}

/* gpu_topk and gpu_bottomk: a row into the group's expanded state; the value is the result. */
static Datum
plain_trans(FunctionCallInfo fcinfo, bool largest)
{
	MemoryContext aggcontext;
	int32		k = checked_k(fcinfo, 2);
	ExpandedState *expanded;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k transition function called in a non-aggregate context");
	expanded = writable_state(fcinfo, aggcontext);
	if (expanded == NULL)
	{
		Oid			value_type = plain_value_type(fcinfo);

		expanded = expanded_state_create(aggcontext);
		expanded->state = agg_trans_create(expanded->hdr.eoh_context, value_type, largest,
										   k, false, value_type, InvalidOid);
	}
	offer_row(fcinfo, expanded->state, 1, k, expanded->hdr.eoh_context);
	return EOHPGetRWDatum(&expanded->hdr);
}

/* The _by forms: a row into the group's (internal) state. */
static Datum
by_trans(FunctionCallInfo fcinfo, bool largest)
{
	MemoryContext aggcontext;
	TopkAggState *state = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	int32		k = checked_k(fcinfo, 3);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k transition function called in a non-aggregate context");
	if (state == NULL)
		state = agg_trans_create(aggcontext, get_fn_expr_argtype(fcinfo->flinfo, 2), largest,
								 k, true, get_fn_expr_argtype(fcinfo->flinfo, 1),
								 PG_GET_COLLATION());
	offer_row(fcinfo, state, 2, k, aggcontext);
	PG_RETURN_POINTER(state);
}

Datum
gputopk_topk_trans(PG_FUNCTION_ARGS)
{
	return plain_trans(fcinfo, true);
}

Datum
gputopk_bottomk_trans(PG_FUNCTION_ARGS)
{
	return plain_trans(fcinfo, false);
}

Datum
gputopk_topk_by_trans(PG_FUNCTION_ARGS)
{
	return by_trans(fcinfo, true);
}

Datum
gputopk_bottomk_by_trans(PG_FUNCTION_ARGS)
{
	return by_trans(fcinfo, false);
}

/* Offer from's entries to into, a state of the same aggregate; context holds into. */
static void
merge_states(TopkAggState *into, TopkAggState *from, MemoryContext context)
{
	if (into->value_type != from->value_type || into->result_type != from->result_type ||
		into->largest != from->largest || into->by != from->by ||
		into->collation != from->collation)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("top-k aggregate states of different aggregates cannot be combined")));
	if (into->k != from->k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be the same for all rows of a group"),
				 errdetail("k changed from %d to %d.", into->k, from->k)));
	for (int32 i = 0; i < from->count; i++)
		offer(into, from->entries[i], context);
}

/* Merge two states of one group (partial aggregates of it): the plain forms'. */
Datum
gputopk_topk_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	ExpandedState *into;
	TopkAggState *from;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k combine function called in a non-aggregate context");
	if (PG_ARGISNULL(1))
	{
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	from = readable_state(PG_GETARG_DATUM(1));
	into = writable_state(fcinfo, aggcontext);
	if (into == NULL)
		into = expanded_state_copy(from, aggcontext);
	else
		merge_states(into->state, from, into->hdr.eoh_context);
	return EOHPGetRWDatum(&into->hdr);
}

/* The same for the _by forms' internal states. */
Datum
gputopk_topk_by_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	TopkAggState *into = PG_ARGISNULL(0) ? NULL : (TopkAggState *) PG_GETARG_POINTER(0);
	TopkAggState *from = PG_ARGISNULL(1) ? NULL : (TopkAggState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k combine function called in a non-aggregate context");
	if (from == NULL)
		PG_RETURN_POINTER(into);
	if (into == NULL)
		into = agg_trans_like(from, aggcontext);
	merge_states(into, from, aggcontext);
	PG_RETURN_POINTER(into);
}

Datum
gputopk_topk_by_serialize(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(agg_trans_serialize((TopkAggState *) PG_GETARG_POINTER(0)));
}

Datum
gputopk_topk_by_deserialize(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "gputopk: top-k deserialize function called in a non-aggregate context");
	PG_RETURN_POINTER(topk_agg_deserialize(PG_GETARG_BYTEA_PP(0), aggcontext));
}

static int
compare_best_first(const void *a, const void *b, void *state)
{
	if (ranks_below(state, a, b))
		return 1;
	return ranks_below(state, b, a) ? -1 : 0;
}

Datum
agg_trans_result(TopkAggState *state, bool *isnull)
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

/* The kept results, best first, as an array; NULL without any: the plain forms'. */
Datum
gputopk_topk_final(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result = agg_trans_result(PG_ARGISNULL(0) ? NULL :
										  readable_state(PG_GETARG_DATUM(0)), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* The same for the _by forms. */
Datum
gputopk_topk_by_final(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result = agg_trans_result(PG_ARGISNULL(0) ? NULL :
										  (TopkAggState *) PG_GETARG_POINTER(0), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
