/*-------------------------------------------------------------------------
 *
 * groups_aggs.c
 *	  The aggregates GpuTopKGroups computes itself: count(*), count(col),
 *	  sum and avg over integer and float columns, min and max over columns
 *	  with keys.
 *
 * A group keeps a cell per aggregate, a few words each, among its cells
 * (groups_exec.c).  Each cell holds what PostgreSQL's own transition
 * state holds, so that the results are PostgreSQL's to the bit:
 *	 - count: the rows (with a value, for count(col));
 *	 - sum(int2), sum(int4): a 64-bit sum, as int4_sum keeps it;
 *	 - sum(int8) and the avgs: a 128-bit sum and the rows with a value, as
 *	   int8_avg_accum and int4_avg_accum keep them; the result is the same
 *	   numeric (the sum, or the sum divided by the count by numeric_div);
 *	 - sum of floats: the sum, added in the order of the rows as float4pl
 *	   and float8pl add (in float4 for float4), with their overflow error;
 *	 - avg of floats: float8_accum's count, sum and sum of squares (whose
 *	   overflow is an error too), the result the sum over the count;
 *	 - min and max: the value and its key (keys.h).  Where a row's value
 *	   equals the cell's, the row's is kept, as the types' larger and
 *	   smaller functions keep their second argument; so -0 and 0 come out
 *	   as from PostgreSQL's aggregate over the same rows in the same order;
 *	 - sum and avg of numeric: the value (a numeric of the set's memory,
 *	   replaced at each row) and the rows with a value.  numeric_add gives
 *	   the exact sum of PostgreSQL's accumulator, its display scale, NaN
 *	   and infinities alike; avg is numeric_div of the sum by the count, as
 *	   numeric_avg;
 *	 - min and max of a type without keys but with a btree order (numeric,
 *	   text and varchar under their collation, interval, ...): the value,
 *	   copied, and the rows with a value; compared by the order's comparison
 *	   function, the later of equal values kept (1.0 and 1.00 are equal), as
 *	   the built-in smaller and larger functions keep them.
 * A cell with no value (no row, or only NULLs) gives NULL, but count's 0.
 * A float sum depends on the order of the additions: the scan adds a
 * group's rows in the table's order, as PostgreSQL's plan without parallel
 * workers does, and so gives that plan's answer to the bit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type_d.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "gpu_groups.h"
#include "groups_aggs.h"
#include "scan_datum_key.h"

/* count's cell */
typedef struct CountCell
{
	int64		rows;
} CountCell;

/* sum(int2) and sum(int4)'s */
typedef struct SumCell
{
	int64		sum;
	int64		rows;
} SumCell;

#ifdef HAVE_INT128
/* sum(int8) and avg's */
typedef struct WideSumCell
{
	int128		sum;
	int64		rows;
} WideSumCell;
#endif

/* a sum of floats' */
typedef struct FloatSumCell
{
	double		sum;			/* a float4 sum holds a float4's value */
	int64		rows;
} FloatSumCell;

/* avg of floats': float8_accum's transition values */
typedef struct FloatAvgCell
{
	double		n;
	double		sx;
	double		sxx;
} FloatAvgCell;

/* a value kept whole (numeric's, ordered min's and max's): valid where rows > 0 */
typedef struct NumericCell
{
	Datum		value;
	int64		rows;
} NumericCell;

/* min and max's */
typedef struct BestCell
{
	uint64		key;			/* the value's key, larger for larger values */
	Datum		value;
	int64		rows;
} BestCell;

/* the cells the GPU adds to are these, byte for byte (gpu_groups.h) */
StaticAssertDecl(sizeof(SumCell) == 16, "sum's cell is not the GPU's");
#ifdef HAVE_INT128
StaticAssertDecl(offsetof(WideSumCell, rows) == 16, "a 128-bit sum's cell is not the GPU's");
#endif
StaticAssertDecl(offsetof(BestCell, value) == 8 && offsetof(BestCell, rows) == 16,
				 "min's and max's cell is not the GPU's");

/* The value column's type of the aggregate function, for those of min and max; else 0. */
static Oid
best_value_type(Oid aggfnoid, bool *largest)
{
	*largest = true;
	switch (aggfnoid)
	{
		case F_MAX_INT2:
			return INT2OID;
		case F_MAX_INT4:
			return INT4OID;
		case F_MAX_INT8:
			return INT8OID;
		case F_MAX_FLOAT4:
			return FLOAT4OID;
		case F_MAX_FLOAT8:
			return FLOAT8OID;
		case F_MAX_DATE:
			return DATEOID;
		case F_MAX_TIMESTAMP:
			return TIMESTAMPOID;
		case F_MAX_TIMESTAMPTZ:
			return TIMESTAMPTZOID;
	}
	*largest = false;
	switch (aggfnoid)
	{
		case F_MIN_INT2:
			return INT2OID;
		case F_MIN_INT4:
			return INT4OID;
		case F_MIN_INT8:
			return INT8OID;
		case F_MIN_FLOAT4:
			return FLOAT4OID;
		case F_MIN_FLOAT8:
			return FLOAT8OID;
		case F_MIN_DATE:
			return DATEOID;
		case F_MIN_TIMESTAMP:
			return TIMESTAMPOID;
		case F_MIN_TIMESTAMPTZ:
			return TIMESTAMPTZOID;
	}
	return InvalidOid;
}

/*
 * Whether aggref is a built-in min or max (it has a sort operator, the
 * less-than or greater-than of its input type's btree order) of a type
 * without keys: its kind if so.  Those keep the later of equal values.
 */
static bool
ordered_kind_of(Aggref *aggref, GroupAggKind *kind)
{
	HeapTuple	tuple;
	Oid			sortop;
	Oid			type;
	TypeCacheEntry *typcache;
	KeyType		key_type;

	if (aggref->aggfnoid >= FirstGenbkiObjectId || list_length(aggref->args) != 1)
		return false;
	type = exprType((Node *) linitial_node(TargetEntry, aggref->args)->expr);
	if (key_type_of(type, &key_type))
		return false;
	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tuple))
		return false;
	sortop = ((Form_pg_aggregate) GETSTRUCT(tuple))->aggsortop;
	ReleaseSysCache(tuple);
	typcache = lookup_type_cache(type, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR |
								 TYPECACHE_CMP_PROC);
	if (!OidIsValid(sortop) || !OidIsValid(typcache->cmp_proc) ||
		(sortop != typcache->lt_opr && sortop != typcache->gt_opr))
		return false;
	*kind = sortop == typcache->gt_opr ? GROUP_AGG_MAX_ORDERED : GROUP_AGG_MIN_ORDERED;
	return true;
}

/* The kind of aggregate function aggfnoid; false if it is none of ours. */
static bool
kind_of(Oid aggfnoid, GroupAggKind *kind)
{
	bool		largest;

	switch (aggfnoid)
	{
		case F_COUNT_:
			*kind = GROUP_AGG_COUNT_STAR;
			return true;
		case F_SUM_NUMERIC:
			*kind = GROUP_AGG_SUM_NUMERIC;
			return true;
		case F_AVG_NUMERIC:
			*kind = GROUP_AGG_AVG_NUMERIC;
			return true;
		case F_COUNT_ANY:
			*kind = GROUP_AGG_COUNT;
			return true;
		case F_SUM_INT2:
		case F_SUM_INT4:
			*kind = GROUP_AGG_SUM_INT;
			return true;
#ifdef HAVE_INT128
		case F_SUM_INT8:
			*kind = GROUP_AGG_SUM_INT8;
			return true;
		case F_AVG_INT2:
		case F_AVG_INT4:
		case F_AVG_INT8:
			*kind = GROUP_AGG_AVG_INT;
			return true;
#endif
		case F_SUM_FLOAT4:
			*kind = GROUP_AGG_SUM_FLOAT4;
			return true;
		case F_SUM_FLOAT8:
			*kind = GROUP_AGG_SUM_FLOAT8;
			return true;
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
			*kind = GROUP_AGG_AVG_FLOAT;
			return true;
	}
	if (!OidIsValid(best_value_type(aggfnoid, &largest)))
		return false;
	*kind = largest ? GROUP_AGG_MAX : GROUP_AGG_MIN;
	return true;
}

bool
groups_agg_of(Aggref *aggref, Index relid, GroupAgg *agg)
{
	TargetEntry *arg;
	Var		   *var;
	bool		largest;

	memset(agg, 0, sizeof(GroupAgg));
	if (aggref->aggdistinct != NIL || aggref->aggorder != NIL || aggref->aggfilter != NULL ||
		aggref->agglevelsup != 0 || aggref->aggkind != AGGKIND_NORMAL ||
		aggref->aggsplit != AGGSPLIT_SIMPLE ||
		!(kind_of(aggref->aggfnoid, &agg->kind) || ordered_kind_of(aggref, &agg->kind)))
		return false;
	agg->attno = 0;
	agg->offset = 0;
	if (agg->kind == GROUP_AGG_COUNT_STAR)
		return true;
	if (list_length(aggref->args) != 1)
		return false;
	arg = linitial_node(TargetEntry, aggref->args);
	var = (Var *) arg->expr;
	/* a binary-compatible cast (varchar to text) reads the column as it is */
	if (groups_agg_keeps_value(agg->kind) && IsA(var, RelabelType))
		var = (Var *) ((RelabelType *) var)->arg;
	if (!IsA(var, Var) || var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
		return false;
	agg->attno = var->varattno;
	if (groups_agg_keeps_value(agg->kind))
	{
		agg->value_type = exprType((Node *) arg->expr);
		agg->collation = aggref->inputcollid;
		get_typlenbyval(agg->value_type, &agg->typlen, &agg->typbyval);
		return true;
	}
	if (agg->kind == GROUP_AGG_MIN || agg->kind == GROUP_AGG_MAX)
		return key_type_of(best_value_type(aggref->aggfnoid, &largest), &agg->key_type);
	/* avg's input: float4's values are widened */
	agg->key_type = aggref->aggfnoid == F_AVG_FLOAT4 ? KEY_FLOAT4 : KEY_FLOAT8;
	return true;
}

bool
groups_agg_gpu_kind(const GroupAgg *agg, int *kind)
{
	switch (agg->kind)
	{
		case GROUP_AGG_COUNT_STAR:
			*kind = GPU_GROUPS_COUNT_STAR;
			return true;
		case GROUP_AGG_COUNT:
			*kind = GPU_GROUPS_COUNT;
			return true;
		case GROUP_AGG_SUM_INT:
			*kind = GPU_GROUPS_SUM;
			return true;
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			*kind = GPU_GROUPS_WIDE_SUM;
			return true;
		case GROUP_AGG_MIN:
		case GROUP_AGG_MAX:
			*kind = agg->kind == GROUP_AGG_MIN ? GPU_GROUPS_MIN : GPU_GROUPS_MAX;
			return agg->key_type != KEY_FLOAT4 && agg->key_type != KEY_FLOAT8;
		default:
			return false;
	}
}

bool
groups_agg_keeps_value(GroupAggKind kind)
{
	return kind == GROUP_AGG_SUM_NUMERIC || kind == GROUP_AGG_AVG_NUMERIC ||
		kind == GROUP_AGG_MIN_ORDERED || kind == GROUP_AGG_MAX_ORDERED;
}

void
groups_agg_prepare(GroupAgg *agg)
{
	if (agg->kind != GROUP_AGG_MIN_ORDERED && agg->kind != GROUP_AGG_MAX_ORDERED)
		return;
	agg->order = palloc(sizeof(FmgrInfo));
	fmgr_info(lookup_type_cache(agg->value_type, TYPECACHE_CMP_PROC)->cmp_proc, agg->order);
}

bool
groups_agg_can_rank(GroupAggKind kind)
{
	/* avg of integers or numerics orders as numerics rounded by numeric_div: not computed here */
	return kind != GROUP_AGG_AVG_INT && kind != GROUP_AGG_AVG_NUMERIC;
}

int
groups_agg_cell_bytes(GroupAggKind kind)
{
	switch (kind)
	{
		case GROUP_AGG_COUNT_STAR:
		case GROUP_AGG_COUNT:
			return MAXALIGN(sizeof(CountCell));
		case GROUP_AGG_SUM_INT:
			return MAXALIGN(sizeof(SumCell));
		case GROUP_AGG_SUM_FLOAT4:
		case GROUP_AGG_SUM_FLOAT8:
			return MAXALIGN(sizeof(FloatSumCell));
		case GROUP_AGG_AVG_FLOAT:
			return MAXALIGN(sizeof(FloatAvgCell));
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			return MAXALIGN(sizeof(WideSumCell));
#endif
		case GROUP_AGG_SUM_NUMERIC:
		case GROUP_AGG_AVG_NUMERIC:
		case GROUP_AGG_MIN_ORDERED:
		case GROUP_AGG_MAX_ORDERED:
			return MAXALIGN(sizeof(NumericCell));
		default:
			return MAXALIGN(sizeof(BestCell));
	}
}

void
groups_agg_init(const GroupAgg *agg, char *cells)
{
	memset(cells + agg->offset, 0, groups_agg_cell_bytes(agg->kind));
}

/* A value into an avg's cell, as float8_accum (and float4_accum, widened) adds it. */
static void
add_to_avg(FloatAvgCell *avg, float8 x)
{
	float8		n = avg->n + 1.0;
	float8		sx = avg->sx + x;
	float8		sxx = avg->sxx;

	if (avg->n > 0.0)
	{
		float8		d = x * n - sx;

		sxx += d * d / (n * avg->n);
		/* an infinite result of finite values is an error; else the squares are NaN */
		if (isinf(sx) || isinf(sxx))
		{
			if (!isinf(avg->sx) && !isinf(x))
				float_overflow_error();
			sxx = get_float8_nan();
		}
	}
	else if (isnan(x) || isinf(x))
		sxx = get_float8_nan();
	avg->n = n;
	avg->sx = sx;
	avg->sxx = sxx;
}

/* The order of two values of an ordered min's or max's type, as its btree sorts them. */
static int
value_order(const GroupAgg *agg, Datum a, Datum b)
{
	return DatumGetInt32(FunctionCall2Coll(agg->order, agg->collation, a, b));
}

/* A row's value x into the cell of an aggregate that keeps its value whole. */
static void
add_whole_value(const GroupAgg *agg, NumericCell *cell, Datum x)
{
	Datum		old = cell->value;

	if (cell->rows++ == 0)
		cell->value = datumCopy(x, agg->typbyval, agg->typlen);
	else if (agg->kind == GROUP_AGG_SUM_NUMERIC || agg->kind == GROUP_AGG_AVG_NUMERIC)
		cell->value = DirectFunctionCall2(numeric_add, old, x);
	else if (agg->kind == GROUP_AGG_MAX_ORDERED ? value_order(agg, x, old) >= 0 :
			 value_order(agg, x, old) <= 0)
		cell->value = datumCopy(x, agg->typbyval, agg->typlen);
	if (cell->value != old && !agg->typbyval && old != (Datum) 0)
		pfree(DatumGetPointer(old));
}

void
groups_agg_add(const GroupAgg *agg, char *cells, Datum value, bool isnull)
{
	char	   *cell = cells + agg->offset;

	switch (agg->kind)
	{
		case GROUP_AGG_COUNT_STAR:
			((CountCell *) cell)->rows++;
			return;
		case GROUP_AGG_COUNT:
			((CountCell *) cell)->rows += !isnull;
			return;
		default:
			break;
	}
	if (isnull)
		return;
	switch (agg->kind)
	{
		case GROUP_AGG_SUM_INT:
			{
				SumCell    *sum = (SumCell *) cell;

				/* an int2's Datum, sign-extended, reads as the same int32 */
				sum->sum += (int64) DatumGetInt32(value);
				sum->rows++;
				return;
			}
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			{
				WideSumCell *sum = (WideSumCell *) cell;

				sum->sum += (int128) DatumGetInt64(value);
				sum->rows++;
				return;
			}
#endif
		case GROUP_AGG_SUM_FLOAT4:
			{
				FloatSumCell *sum = (FloatSumCell *) cell;
				float4		x = DatumGetFloat4(value);

				/* the first value is the state, as for a strict transition function */
				sum->sum = sum->rows == 0 ? x : float4_pl((float4) sum->sum, x);
				sum->rows++;
				return;
			}
		case GROUP_AGG_SUM_FLOAT8:
			{
				FloatSumCell *sum = (FloatSumCell *) cell;
				float8		x = DatumGetFloat8(value);

				sum->sum = sum->rows == 0 ? x : float8_pl(sum->sum, x);
				sum->rows++;
				return;
			}
		case GROUP_AGG_AVG_FLOAT:
			add_to_avg((FloatAvgCell *) cell, agg->key_type == KEY_FLOAT4 ?
					   (float8) DatumGetFloat4(value) : DatumGetFloat8(value));
			return;
		case GROUP_AGG_SUM_NUMERIC:
		case GROUP_AGG_AVG_NUMERIC:
		case GROUP_AGG_MIN_ORDERED:
		case GROUP_AGG_MAX_ORDERED:
			add_whole_value(agg, (NumericCell *) cell, value);
			return;
		default:
			{
				BestCell   *best = (BestCell *) cell;
				uint64		key = key_of_datum(agg->key_type, value, true);

				if (best->rows == 0 ||
					(agg->kind == GROUP_AGG_MAX ? key >= best->key : key <= best->key))
				{
					best->key = key;
					best->value = value;
				}
				best->rows++;
				return;
			}
	}
}

bool
groups_agg_can_combine(GroupAggKind kind)
{
	return kind != GROUP_AGG_SUM_FLOAT4 && kind != GROUP_AGG_SUM_FLOAT8 &&
		kind != GROUP_AGG_AVG_FLOAT && !groups_agg_keeps_value(kind);
}

void
groups_agg_combine(const GroupAgg *agg, char *cells, const char *other)
{
	char	   *cell = cells + agg->offset;
	const char *from = other + agg->offset;

	switch (agg->kind)
	{
		case GROUP_AGG_COUNT_STAR:
		case GROUP_AGG_COUNT:
			((CountCell *) cell)->rows += ((const CountCell *) from)->rows;
			return;
		case GROUP_AGG_SUM_INT:
			((SumCell *) cell)->sum += ((const SumCell *) from)->sum;
			((SumCell *) cell)->rows += ((const SumCell *) from)->rows;
			return;
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			((WideSumCell *) cell)->sum += ((const WideSumCell *) from)->sum;
			((WideSumCell *) cell)->rows += ((const WideSumCell *) from)->rows;
			return;
#endif
		case GROUP_AGG_MIN:
		case GROUP_AGG_MAX:
			{
				BestCell   *best = (BestCell *) cell;
				const BestCell *theirs = (const BestCell *) from;

				if (theirs->rows == 0)
					return;
				if (best->rows == 0 ||
					(agg->kind == GROUP_AGG_MAX ? theirs->key >= best->key :
					 theirs->key <= best->key))
				{
					best->key = theirs->key;
					best->value = theirs->value;
				}
				best->rows += theirs->rows;
				return;
			}
		default:
			elog(ERROR, "gputopk: a float sum's or a numeric's cells do not combine");
	}
}

/* The result of a float sum's or avg's cell that has values. */
static float8
float_value(GroupAggKind kind, const char *cell)
{
	if (kind == GROUP_AGG_AVG_FLOAT)
		return ((const FloatAvgCell *) cell)->sx / ((const FloatAvgCell *) cell)->n;
	return ((const FloatSumCell *) cell)->sum;
}

/* The rows of a cell that count, or that have a value. */
static int64
cell_rows(GroupAggKind kind, const char *cell)
{
	switch (kind)
	{
		case GROUP_AGG_COUNT_STAR:
		case GROUP_AGG_COUNT:
			return ((const CountCell *) cell)->rows;
		case GROUP_AGG_SUM_INT:
			return ((const SumCell *) cell)->rows;
		case GROUP_AGG_SUM_FLOAT4:
		case GROUP_AGG_SUM_FLOAT8:
			return ((const FloatSumCell *) cell)->rows;
		case GROUP_AGG_AVG_FLOAT:
			return (int64) ((const FloatAvgCell *) cell)->n;
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			return ((const WideSumCell *) cell)->rows;
#endif
		case GROUP_AGG_SUM_NUMERIC:
		case GROUP_AGG_AVG_NUMERIC:
		case GROUP_AGG_MIN_ORDERED:
		case GROUP_AGG_MAX_ORDERED:
			return ((const NumericCell *) cell)->rows;
		default:
			return ((const BestCell *) cell)->rows;
	}
}

/*
 * Compare a and b, larger first (> 0 where a is larger), NULLs as the sort
 * places them; the cells are of an aggregate that can rank.
 */
int
groups_agg_compare(const GroupAgg *agg, const char *a, const char *b, bool desc,
				   bool nulls_first)
{
	const char *x = a + agg->offset;
	const char *y = b + agg->offset;
	int64		x_rows = cell_rows(agg->kind, x);
	int64		y_rows = cell_rows(agg->kind, y);
	int			larger;

	if (agg->kind == GROUP_AGG_COUNT_STAR || agg->kind == GROUP_AGG_COUNT)
	{
		larger = x_rows > y_rows ? 1 : (x_rows < y_rows ? -1 : 0);
		return desc ? larger : -larger;
	}
	/* a NULL result (no value) sorts first or last whatever the direction */
	if (x_rows == 0 || y_rows == 0)
	{
		if (x_rows == 0 && y_rows == 0)
			return 0;
		return (x_rows == 0) == nulls_first ? 1 : -1;
	}
	switch (agg->kind)
	{
		case GROUP_AGG_SUM_INT:
			{
				int64		p = ((const SumCell *) x)->sum;
				int64		q = ((const SumCell *) y)->sum;

				larger = p > q ? 1 : (p < q ? -1 : 0);
				break;
			}
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
			{
				int128		p = ((const WideSumCell *) x)->sum;
				int128		q = ((const WideSumCell *) y)->sum;

				larger = p > q ? 1 : (p < q ? -1 : 0);
				break;
			}
#endif
		case GROUP_AGG_SUM_FLOAT4:
		case GROUP_AGG_SUM_FLOAT8:
		case GROUP_AGG_AVG_FLOAT:
			{
				/* as float8's order: NaN above every number, -0 equal to 0 */
				uint64		p = key_from_float8(float_value(agg->kind, x), true);
				uint64		q = key_from_float8(float_value(agg->kind, y), true);

				larger = p > q ? 1 : (p < q ? -1 : 0);
				break;
			}
		case GROUP_AGG_SUM_NUMERIC:
			{
				int			order = DatumGetInt32(DirectFunctionCall2(numeric_cmp,
																	  ((const NumericCell *) x)->value,
																	  ((const NumericCell *) y)->value));

				larger = order > 0 ? 1 : (order < 0 ? -1 : 0);
				break;
			}
		case GROUP_AGG_MIN_ORDERED:
		case GROUP_AGG_MAX_ORDERED:
			{
				int			order = value_order(agg, ((const NumericCell *) x)->value,
												((const NumericCell *) y)->value);

				larger = order > 0 ? 1 : (order < 0 ? -1 : 0);
				break;
			}
		default:
			{
				uint64		p = ((const BestCell *) x)->key;
				uint64		q = ((const BestCell *) y)->key;

				larger = p > q ? 1 : (p < q ? -1 : 0);
				break;
			}
	}
	return desc ? larger : -larger;
}

#ifdef HAVE_INT128
/* A 128-bit integer as a numeric, as int128_to_numericvar and make_result give it. */
static Numeric
numeric_of_int128(int128 value)
{
	char		digits[48];
	char	   *at = digits + sizeof(digits) - 1;
	bool		negative = value < 0;
	uint128		magnitude = negative ? -(uint128) value : (uint128) value;

	if (value >= PG_INT64_MIN && value <= PG_INT64_MAX)
		return int64_to_numeric((int64) value);
	*at = '\0';
	do
	{
		*--at = '0' + (int) (magnitude % 10);
		magnitude /= 10;
	} while (magnitude != 0);
	if (negative)
		*--at = '-';
	return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(at),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}
#endif

Datum
groups_agg_result(const GroupAgg *agg, const char *cells, bool *isnull)
{
	const char *cell = cells + agg->offset;

	*isnull = agg->kind != GROUP_AGG_COUNT_STAR && agg->kind != GROUP_AGG_COUNT &&
		cell_rows(agg->kind, cell) == 0;
	if (*isnull)
		return (Datum) 0;
	switch (agg->kind)
	{
		case GROUP_AGG_COUNT_STAR:
		case GROUP_AGG_COUNT:
			return Int64GetDatum(((const CountCell *) cell)->rows);
		case GROUP_AGG_SUM_INT:
			return Int64GetDatum(((const SumCell *) cell)->sum);
		case GROUP_AGG_SUM_FLOAT4:
			return Float4GetDatum((float4) float_value(agg->kind, cell));
		case GROUP_AGG_SUM_FLOAT8:
		case GROUP_AGG_AVG_FLOAT:
			return Float8GetDatum(float_value(agg->kind, cell));
#ifdef HAVE_INT128
		case GROUP_AGG_SUM_INT8:
		case GROUP_AGG_AVG_INT:
			{
				const WideSumCell *sum = (const WideSumCell *) cell;
				Numeric		total = numeric_of_int128(sum->sum);

				if (agg->kind == GROUP_AGG_SUM_INT8)
					return NumericGetDatum(total);
				return DirectFunctionCall2(numeric_div, NumericGetDatum(total),
										   NumericGetDatum(int64_to_numeric(sum->rows)));
			}
#endif
		case GROUP_AGG_SUM_NUMERIC:
		case GROUP_AGG_MIN_ORDERED:
		case GROUP_AGG_MAX_ORDERED:
			return ((const NumericCell *) cell)->value;
		case GROUP_AGG_AVG_NUMERIC:
			return DirectFunctionCall2(numeric_div, ((const NumericCell *) cell)->value,
									   NumericGetDatum(int64_to_numeric(((const NumericCell *) cell)->rows)));
		default:
			return ((const BestCell *) cell)->value;
	}
}
