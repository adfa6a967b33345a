/*-------------------------------------------------------------------------
 *
 * groups_aggs.h
 *	  The aggregates GpuTopKGroups computes itself (groups_aggs.c): which
 *	  they are, a group's cells for them, and their results as PostgreSQL
 *	  gives them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_AGGS_H
#define GROUPS_AGGS_H

#include "fmgr.h"
#include "nodes/primnodes.h"

#include "keys.h"

typedef enum GroupAggKind
{
	GROUP_AGG_COUNT_STAR,		/* count(*): int8 */
	GROUP_AGG_COUNT,			/* count(col): int8 */
	GROUP_AGG_SUM_INT,			/* sum(int2), sum(int4): int8 */
	GROUP_AGG_SUM_INT8,			/* sum(int8): numeric */
	GROUP_AGG_AVG_INT,			/* avg(int2), avg(int4), avg(int8): numeric */
	GROUP_AGG_SUM_FLOAT4,		/* sum(float4): float4 */
	GROUP_AGG_SUM_FLOAT8,		/* sum(float8): float8 */
	GROUP_AGG_AVG_FLOAT,		/* avg(float4), avg(float8): float8 */
	GROUP_AGG_MIN,				/* min of a type with keys (keys.h): that type */
	GROUP_AGG_MAX,
	GROUP_AGG_SUM_NUMERIC,		/* sum(numeric): numeric */
	GROUP_AGG_AVG_NUMERIC,		/* avg(numeric): numeric */
	GROUP_AGG_MIN_ORDERED,		/* min and max of another type with a btree
								 * order (numeric, text, interval, ...) */
	GROUP_AGG_MAX_ORDERED
} GroupAggKind;

/* one aggregate of a GpuTopKGroups scan */
typedef struct GroupAgg
{
	GroupAggKind kind;
	AttrNumber	attno;			/* the column it reads; 0 for count(*) */
	KeyType		key_type;		/* min and max: the column's */
	int			offset;			/* of its cell among a group's cells */
	/* a column of a value kept whole (numeric, or min and max ordered) */
	Oid			value_type;
	Oid			collation;		/* the aggregate's input collation */
	int16		typlen;
	bool		typbyval;
	FmgrInfo   *order;			/* min and max ordered: the type's btree
								 * comparison (groups_agg_prepare) */
} GroupAgg;

/*
 * Which of the aggregates aggref is, over a column of the table relid: false
 * if it is none of them, or has DISTINCT, ORDER BY or FILTER.
 */
extern bool groups_agg_of(Aggref *aggref, Index relid, GroupAgg *agg);

/*
 * The aggregate's kind on the GPU (a GpuGroupsAggKind, gpu_groups.h);
 * false where the GPU does not compute it: a float sum or avg, whose value
 * depends on the order of its additions, and min or max of floats, whose
 * -0 and 0 depend on the order of the rows.
 */
extern bool groups_agg_gpu_kind(const GroupAgg *agg, int *kind);

/* Whether a GpuTopKGroups scan can choose its groups by the aggregate's value. */
extern bool groups_agg_can_rank(GroupAggKind kind);

/* The bytes of the aggregate's cell (a multiple of 8). */
extern int	groups_agg_cell_bytes(GroupAggKind kind);

/* An empty cell: that of a group before its first row. */
extern void groups_agg_init(const GroupAgg *agg, char *cells);

/*
 * Whether the aggregate keeps a value whole, a numeric or another type's
 * (varlena values come detoasted, for groups_agg_add).
 */
extern bool groups_agg_keeps_value(GroupAggKind kind);

/* The executor's look-ups for the aggregate (a btree comparison), in the current context. */
extern void groups_agg_prepare(GroupAgg *agg);

/*
 * A row's value of the aggregate's column (unused by count(*)) into its
 * cell; raises PostgreSQL's error where its transition function would (a
 * float sum that overflows).  A numeric value comes detoasted; the cell's
 * own numeric is made in the current memory context, which must hold it
 * as long as the cell.
 */
extern void groups_agg_add(const GroupAgg *agg, char *cells, Datum value, bool isnull);

/*
 * Whether two processes' cells of a group combine into what one process's
 * would hold: all but a float sum's or avg's, whose value depends on the
 * order of its additions, and a numeric's, which points to its value.
 */
extern bool groups_agg_can_combine(GroupAggKind kind);

/*
 * Another process's cell of a group into this one's: counts and sums add;
 * min and max keep the better value, the other's where they are equal.
 */
extern void groups_agg_combine(const GroupAgg *agg, char *cells, const char *other);

/*
 * The order of two groups by the aggregate's value, as ORDER BY sorts them:
 * > 0 where a's comes first, < 0 where b's does, 0 where they tie.  desc
 * and nulls_first are the sort's.
 */
extern int	groups_agg_compare(const GroupAgg *agg, const char *a, const char *b, bool desc,
							   bool nulls_first);

/* The aggregate's result over a group's cells, as PostgreSQL's own gives it. */
extern Datum groups_agg_result(const GroupAgg *agg, const char *cells, bool *isnull);

#endif							/* GROUPS_AGGS_H */
