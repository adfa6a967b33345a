/*
 * key_steps.h
 *	  The interpreter of compiled ranking expressions
 *	  (src/scan_key_program.c), for the CPU and for the GPU.
 *
 * A program is a postfix list of steps over a stack of doubles: push a
 * column's value (int2, int4 and float4 exactly; int8 rounded to float8,
 * as float8(int8) does) or a constant, then arithmetic.  A float4 value is
 * held exactly in a double, and float4 steps compute in single precision.
 * Each step computes as PostgreSQL's function of the same name does
 * (utils/float.h), rounding once, to nearest: on the GPU through the
 * _rn intrinsics, which the compiler never fuses into a multiply-add.  A
 * step where PostgreSQL raises an error (overflow, underflow, division by
 * zero) returns false; the caller gives that row KEY_PROGRAM_ERROR_KEY, so
 * that PostgreSQL's own evaluation of the row, if it is visible and passes
 * the query's quals, raises the error.  The caller pushes columns, from a
 * heap tuple, an index entry or a GPU's copy of an index page
 * (key_step_column_value converts them); key_step_apply does the rest.
 * Plain C and CUDA, like keys.h.
 */
#ifndef KEY_STEPS_H
#define KEY_STEPS_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "keys.h"

typedef enum KeyStepKind
{
	/* a column's value, pushed by the caller */
	KEY_STEP_INT2_COLUMN,
	KEY_STEP_INT4_COLUMN,
	KEY_STEP_INT8_COLUMN,
	KEY_STEP_FLOAT4_COLUMN,
	KEY_STEP_FLOAT8_COLUMN,
	KEY_STEP_CONST,
	/* float8pl, float8mi, float8mul, float8div (and float48/float84 ones) */
	KEY_STEP_ADD,
	KEY_STEP_SUB,
	KEY_STEP_MUL,
	KEY_STEP_DIV,
	/* float4pl, float4mi, float4mul, float4div */
	KEY_STEP_ADD4,
	KEY_STEP_SUB4,
	KEY_STEP_MUL4,
	KEY_STEP_DIV4,
	/* float8um and float4um, float8abs and float4abs */
	KEY_STEP_NEG,
	KEY_STEP_ABS,
	/* float4(float8), float4(int2), float4(int4): rounded to float4 */
	KEY_STEP_TO_FLOAT4
} KeyStepKind;

typedef struct KeyStep
{
	int32_t		kind;			/* a KeyStepKind */
	int32_t		column;			/* of a column step: the caller's number for it */
	double		value;			/* of a constant */
} KeyStep;

/*
 * The key of a row where a step raised: above every value's and NULL's, so
 * that the row is a candidate (ties at the boundary kept: the executor asks
 * for them where a program can raise).
 */
#define KEY_PROGRAM_ERROR_KEY UINT64_MAX

#ifdef __CUDA_ARCH__
#define KEY_DADD(a, b) __dadd_rn((a), (b))
#define KEY_DSUB(a, b) __dsub_rn((a), (b))
#define KEY_DMUL(a, b) __dmul_rn((a), (b))
#define KEY_DDIV(a, b) __ddiv_rn((a), (b))
#define KEY_FADD(a, b) __fadd_rn((a), (b))
#define KEY_FSUB(a, b) __fsub_rn((a), (b))
#define KEY_FMUL(a, b) __fmul_rn((a), (b))
#define KEY_FDIV(a, b) __fdiv_rn((a), (b))
#else
#define KEY_DADD(a, b) ((a) + (b))
#define KEY_DSUB(a, b) ((a) - (b))
#define KEY_DMUL(a, b) ((a) * (b))
#define KEY_DDIV(a, b) ((a) / (b))
#define KEY_FADD(a, b) ((a) + (b))
#define KEY_FSUB(a, b) ((a) - (b))
#define KEY_FMUL(a, b) ((a) * (b))
#define KEY_FDIV(a, b) ((a) / (b))
#endif

/* Whether a step pushes a column, which the caller does. */
KEY_FN bool
key_step_is_column(const KeyStep *step)
{
	return step->kind <= KEY_STEP_FLOAT8_COLUMN;
}

/* A column step's stored value as the stack holds it. */
KEY_FN double
key_step_column_value(const KeyStep *step, const void *stored)
{
	switch ((KeyStepKind) step->kind)
	{
		case KEY_STEP_INT2_COLUMN:
			return (double) *(const int16_t *) stored;
		case KEY_STEP_INT4_COLUMN:
			return (double) *(const int32_t *) stored;
		case KEY_STEP_INT8_COLUMN:
			return (double) *(const int64_t *) stored;
		case KEY_STEP_FLOAT4_COLUMN:
			return (double) *(const float *) stored;
		default:
			return *(const double *) stored;
	}
}

/*
 * Whether PostgreSQL raises an error where a binary step of kind over l
 * and r gives d (float8pl and float4pl, and so on, check the same things;
 * a float4 operand or result held in a double keeps being infinite, zero
 * or NaN).
 */
KEY_FN bool
key_step_raises(KeyStepKind kind, double l, double r, double d)
{
	switch (kind)
	{
		case KEY_STEP_ADD:
		case KEY_STEP_SUB:
		case KEY_STEP_ADD4:
		case KEY_STEP_SUB4:
			return isinf(d) && !isinf(l) && !isinf(r);
		case KEY_STEP_MUL:
		case KEY_STEP_MUL4:
			return (isinf(d) && !isinf(l) && !isinf(r)) || (d == 0.0 && l != 0.0 && r != 0.0);
		default:
			/* division: by zero first */
			return (r == 0.0 && !isnan(l)) || (isinf(d) && !isinf(l)) ||
				(d == 0.0 && l != 0.0 && !isinf(r));
	}
}

/*
 * A binary step's result over l and r, as PostgreSQL computes it: in
 * double, or for the float4 steps in single precision over float4 values
 * (the casts are exact).
 */
KEY_FN double
key_step_value(KeyStepKind kind, double l, double r)
{
	switch (kind)
	{
		case KEY_STEP_ADD:
			return KEY_DADD(l, r);
		case KEY_STEP_SUB:
			return KEY_DSUB(l, r);
		case KEY_STEP_MUL:
			return KEY_DMUL(l, r);
		case KEY_STEP_DIV:
			return KEY_DDIV(l, r);
		case KEY_STEP_ADD4:
			return KEY_FADD((float) l, (float) r);
		case KEY_STEP_SUB4:
			return KEY_FSUB((float) l, (float) r);
		case KEY_STEP_MUL4:
			return KEY_FMUL((float) l, (float) r);
		default:
			return KEY_FDIV((float) l, (float) r);
	}
}

/*
 * Whether a binary step of kind over l and r giving d may have raised
 * (key_step_raises says whether it did): only where d is infinite, NaN or
 * a zero that a product of two non-zero operands, or a quotient of a
 * non-zero dividend, gives.  One flag for a batch of results is computed
 * without branches, and only a batch flagged needs key_step_raises.  A
 * zero operand is common (data clipped at 0); a zero result from one is
 * not suspect, so such rows keep the fast path.
 */
KEY_FN int
key_step_suspect(KeyStepKind kind, double l, double r, double d)
{
	int			unusual = (fabs(d) > DBL_MAX) | (d != d);

	switch (kind)
	{
		case KEY_STEP_ADD:
		case KEY_STEP_SUB:
		case KEY_STEP_ADD4:
		case KEY_STEP_SUB4:
			return unusual;
		case KEY_STEP_MUL:
		case KEY_STEP_MUL4:
			return unusual | ((d == 0.0) & (l != 0.0) & (r != 0.0));
		default:
			return unusual | ((d == 0.0) & (l != 0.0));
	}
}

/* A binary step's result over l and r; false where PostgreSQL raises an error. */
KEY_FN bool
key_step_binary(KeyStepKind kind, double l, double r, double *result)
{
	*result = key_step_value(kind, l, r);
	return !key_step_raises(kind, l, r, *result);
}

/* A unary step's result, as PostgreSQL computes it; false where it raises. */
KEY_FN bool
key_step_unary(KeyStepKind kind, double v, double *result)
{
	float		f;

	switch (kind)
	{
		case KEY_STEP_NEG:
			*result = -v;
			return true;
		case KEY_STEP_ABS:
			*result = fabs(v);
			return true;
		default:
			/* dtof's checks; those of float4(int2) and float4(int4) never fail */
			f = (float) v;
			*result = f;
			return !(isinf(f) && !isinf(v)) && !(f == 0.0f && v != 0.0);
	}
}

/*
 * A step that is not a column's, on the stack of *top values and their
 * NULL flags; false where PostgreSQL raises an error.  As PostgreSQL's
 * strict functions, a step with a NULL operand gives NULL without
 * computing; PostgreSQL evaluates every operand first, so a step that
 * raises raises whatever other operands are NULL.
 */
KEY_FN bool
key_step_apply(const KeyStep *step, double *stack, bool *nulls, int *top)
{
	KeyStepKind kind = (KeyStepKind) step->kind;
	int			last;

	if (kind == KEY_STEP_CONST)
	{
		nulls[*top] = false;
		stack[(*top)++] = step->value;
		return true;
	}
	if (kind < KEY_STEP_NEG)
	{
		(*top)--;
		nulls[*top - 1] |= nulls[*top];
	}
	last = *top - 1;
	if (nulls[last])
		return true;
	if (kind >= KEY_STEP_NEG)
		return key_step_unary(kind, stack[last], &stack[last]);
	return key_step_binary(kind, stack[last], stack[last + 1], &stack[last]);
}

#endif							/* KEY_STEPS_H */
