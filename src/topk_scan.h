/*-------------------------------------------------------------------------
 *
 * topk_scan.h
 *	  The GpuTopK custom scan: what the planner (topk_path.c, topk_plan.c,
 *	  colindex_path.c) hands the executor (topk_exec.c).
 *
 * The plan's custom_private is a list of TopkScanField entries in order up
 * to TOPK_FIELD_EXPRS; custom_exprs holds the LIMIT count and OFFSET
 * expressions (either may be NULL, evaluated when the scan starts), the
 * ranking key's expression and the ORDER BY's expressions, in that order.
 * The path's custom_private has those expressions in its last field.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_SCAN_H
#define TOPK_SCAN_H

#include "keys.h"

typedef enum TopkScanField
{
	TOPK_FIELD_KEY_TYPE,		/* Integer: KeyType of the first sort key */
	TOPK_FIELD_DESC,			/* Integer: first sort key descending */
	TOPK_FIELD_WITH_TIES,		/* Integer: FETCH FIRST ... WITH TIES */
	TOPK_FIELD_SORT_ATTNOS,		/* IntList: columns of the ORDER BY, 0 for an expression */
	TOPK_FIELD_SORT_OPS,		/* OidList: their ordering operators */
	TOPK_FIELD_SORT_COLLATIONS, /* OidList */
	TOPK_FIELD_SORT_NULLS_FIRST,	/* IntList */
	TOPK_FIELD_KEY_SOURCE,		/* Integer: TopkKeySource */
	TOPK_FIELD_INDEX,			/* OidList: the column index read, or NIL */
	TOPK_FIELD_CANDIDATES,		/* Float: candidates fetched per row kept, guessed */
	TOPK_FIELD_EXPRS			/* the path's only: key and ORDER BY exprs */
} TopkScanField;

/* custom_exprs: LIMIT, OFFSET, key, then the ORDER BY */
#define TOPK_EXPR_KEY 2
#define TOPK_EXPR_SORT 3

/* How the ranking key's value becomes the engine's key. */
typedef enum TopkKeySource
{
	KEY_SOURCE_VALUE,			/* the first ORDER BY item, of a key type */
	KEY_SOURCE_EXACT_FLOAT8,	/* a key program: float4 or float8 arithmetic,
								 * or numeric arithmetic that float8 does
								 * exactly */
	KEY_SOURCE_LOSSY_NUMERIC,	/* numeric rounded to float8: ties kept */
	KEY_SOURCE_VECTOR_BOUND		/* a pgvector distance (or arithmetic over
								 * one) keyed by a bound on its value: the
								 * candidates' true values decide */
} TopkKeySource;

#define TOPK_SCAN_NAME "GpuTopK"

#endif							/* TOPK_SCAN_H */
