/*-------------------------------------------------------------------------
 *
 * topk_rank_key.c
 *	  Ranking keys of numeric expressions: float8 arithmetic where it is
 *	  exact.
 *
 * In PostgreSQL, a + 0.5 * b over int4 columns is numeric arithmetic, and
 * numeric is not a type the top-k engine has keys for.  Numeric +, - and *
 * are exact; so is float8 arithmetic as long as every value, intermediate
 * ones included, is a multiple of a power of two g no smaller than 2^-1074
 * and below 2^53 g (and 2^1023) in magnitude.  Tracking a bound on the magnitude and
 * such a g through the expression proves it for int2 and int4 columns and
 * constants like 0.5 or 1.25; the float8 expression then gives the same
 * values, and so the same order, at a fraction of the cost.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type_d.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/numeric.h"

#include "topk_rank_key.h"
#include "topk_scan.h"

/* values that are multiples of 2^grain_log2, below 2^magnitude_log2 */
typedef struct ExactRange
{
	int			magnitude_log2;
	int			grain_log2;
} ExactRange;

/* float8 has 53 bits of significand */
#define EXACT_BITS 53

static Expr *exact_float8(Expr *expr, ExactRange *range);

static Expr *
float8_call(Oid funcid, List *args)
{
	return (Expr *) makeFuncExpr(funcid, FLOAT8OID, args, InvalidOid, InvalidOid,
								 COERCE_EXPLICIT_CALL);
}

/* a numeric constant that float8 holds exactly */
static Expr *
exact_constant(Const *c, ExactRange *range)
{
	Numeric		num;
	double		v;
	int			exp;

	if (c->constisnull)
		return NULL;
	num = DatumGetNumeric(c->constvalue);
	if (numeric_is_nan(num) || numeric_is_inf(num))
		return NULL;
	/* out of float8's range: infinite, not an error */
	v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, c->constvalue));
	if (isinf(v) ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, c->constvalue,
										  DirectFunctionCall1(float8_numeric,
															  Float8GetDatum(v)))) != 0)
		return NULL;
	if (v == 0.0)
	{
		/* zero is a multiple of every power of two */
		range->magnitude_log2 = -1074;
		range->grain_log2 = 1024;
	}
	else
	{
		int			grain;

		(void) frexp(fabs(v), &exp);	/* |v| < 2^exp */
		/* v / 2^grain is an integer; raise grain while it stays one */
		grain = exp - EXACT_BITS;
		while (grain < exp && fmod(ldexp(fabs(v), -(grain + 1)), 1.0) == 0.0)
			grain++;
		range->magnitude_log2 = exp;
		range->grain_log2 = grain;
	}
	return (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
							  Float8GetDatum(v), false, FLOAT8PASSBYVAL);
}

/* an integer expression cast to numeric */
static Expr *
exact_integer(FuncExpr *cast, ExactRange *range)
{
	Expr	   *arg = linitial(cast->args);

	range->grain_log2 = 0;
	switch (cast->funcid)
	{
		case F_NUMERIC_INT2:
			range->magnitude_log2 = 15;
			return float8_call(F_FLOAT8_INT2, list_make1(arg));
		case F_NUMERIC_INT4:
			range->magnitude_log2 = 31;
			return float8_call(F_FLOAT8_INT4, list_make1(arg));
		default:
			return NULL;
	}
}

static Expr *
exact_operator(OpExpr *op, ExactRange *range)
{
	ExactRange	l;
	ExactRange	r;
	Expr	   *left;
	Expr	   *right;
	Oid			funcid;

	if (list_length(op->args) == 1)
	{
		left = exact_float8(linitial(op->args), range);
		if (left == NULL)
			return NULL;
		if (op->opfuncid == F_NUMERIC_UMINUS)
			return float8_call(F_FLOAT8UM, list_make1(left));
		return op->opfuncid == F_NUMERIC_UPLUS ? left : NULL;
	}
	left = exact_float8(linitial(op->args), &l);
	right = exact_float8(lsecond(op->args), &r);
	if (left == NULL || right == NULL)
		return NULL;
	switch (op->opfuncid)
	{
		case F_NUMERIC_ADD:
		case F_NUMERIC_SUB:
			funcid = op->opfuncid == F_NUMERIC_ADD ? F_FLOAT8PL : F_FLOAT8MI;
			range->magnitude_log2 = Max(l.magnitude_log2, r.magnitude_log2) + 1;
			range->grain_log2 = Min(l.grain_log2, r.grain_log2);
			break;
		case F_NUMERIC_MUL:
			funcid = F_FLOAT8MUL;
			range->magnitude_log2 = l.magnitude_log2 + r.magnitude_log2;
			range->grain_log2 = l.grain_log2 + r.grain_log2;
			break;
		default:
			return NULL;
	}
	/* no rounding, no subnormal steps, no overflow */
	if (range->grain_log2 < -1022 || range->magnitude_log2 > 1023 ||
		range->magnitude_log2 - range->grain_log2 > EXACT_BITS)
		return NULL;
	return float8_call(funcid, list_make2(left, right));
}

static Expr *
exact_float8(Expr *expr, ExactRange *range)
{
	if (exprType((Node *) expr) != NUMERICOID)
		return NULL;
	switch (nodeTag(expr))
	{
		case T_Const:
			return exact_constant((Const *) expr, range);
		case T_FuncExpr:
			return exact_integer((FuncExpr *) expr, range);
		case T_OpExpr:
			return exact_operator((OpExpr *) expr, range);
		default:
			return NULL;
	}
}

/*
 * A float8 expression with the same value as the numeric expr on every
 * row, or NULL where that cannot be shown.
 */
Expr *
topk_rank_key_of_numeric(Expr *expr)
{
	ExactRange	range;

	return exact_float8(expr, &range);
}
