/*
 * filter_steps.h
 *	  The interpreter of compiled WHERE clauses (src/scan_filter_program.c),
 *	  for the CPU and for the GPU.
 *
 * A program is a postfix list of steps over SQL's three truth values.  Its
 * registers hold values as order-preserving keys (keys.h): a column's,
 * loaded for each row, or a run constant's, set once per run; its value
 * sets hold an IN list's keys, sorted and distinct.  Keys of one domain
 * compare as the values do, so a comparison of registers is one of keys.
 * The program is plain data: the same steps run in a backend and in a GPU
 * kernel (kernels/gpu_index.cu).
 *
 * Plain C and CUDA, like keys.h.
 */
#ifndef FILTER_STEPS_H
#define FILTER_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "keys.h"

typedef enum FilterTruth
{
	TRUTH_FALSE,
	TRUTH_TRUE,
	TRUTH_NULL
} FilterTruth;

typedef enum FilterComparison
{
	CMP_LT,
	CMP_LE,
	CMP_EQ,
	CMP_GE,
	CMP_GT,
	CMP_NE
} FilterComparison;

/* BooleanTest's tests, in the order of PostgreSQL's BoolTestType */
typedef enum FilterBoolTest
{
	TEST_IS_TRUE,
	TEST_IS_NOT_TRUE,
	TEST_IS_FALSE,
	TEST_IS_NOT_FALSE,
	TEST_IS_UNKNOWN,
	TEST_IS_NOT_UNKNOWN
} FilterBoolTest;

typedef enum FilterStepKind
{
	STEP_COMPARE,				/* left arg right: a FilterComparison of registers */
	STEP_IN,					/* left = ANY (set right); arg: <> ALL instead */
	STEP_IS_NULL,				/* left IS NULL; arg: IS NOT NULL instead */
	STEP_TRUTH,					/* the boolean in left */
	STEP_BOOL_TEST,				/* a FilterBoolTest (arg) of the last result */
	STEP_NOT,					/* NOT of the last result */
	STEP_AND,					/* AND of the last arg results */
	STEP_OR						/* OR of the last arg results */
} FilterStepKind;

typedef struct FilterStep
{
	int32_t		kind;			/* a FilterStepKind */
	int32_t		arg;
	int32_t		left;
	int32_t		right;
} FilterStep;

typedef struct FilterRegister
{
	uint64_t	value;			/* the value's key */
	bool		isnull;
} FilterRegister;

/* an IN list: its non-NULL elements' keys, sorted and distinct */
typedef struct FilterValueSet
{
	bool		isnull;			/* the array itself */
	bool		has_null;
	int32_t		nvalues;
	const uint64_t *values;
} FilterValueSet;

/* The kinds of stored values a register is loaded from, and their keys. */
typedef enum FilterValueKind
{
	VALUE_INT2,
	VALUE_INT4,					/* also date */
	VALUE_INT8,					/* also timestamp and timestamptz */
	VALUE_FLOAT4,
	VALUE_FLOAT8,
	VALUE_BOOL,
	VALUE_TEXT					/* a varlena as a heap tuple stores it */
} FilterValueKind;

/*
 * Text for equality, without a dictionary: a value of at most
 * FILTER_TEXT_KEY_BYTES bytes is its bytes, first byte highest, zero-padded
 * (text holds no zero byte, so no two such values share a key); a longer
 * one is FILTER_TEXT_KEY_LONG, which no short value's key is (a zero byte
 * before a nonzero one).  So the keys of a long value and a short one
 * never match, and a program compares text this way only with constants
 * that are short.
 */
#define FILTER_TEXT_KEY_BYTES 8
#define FILTER_TEXT_KEY_LONG ((uint64_t) 1)

KEY_FN uint64_t
filter_text_key(const uint8_t *bytes, uint32_t length)
{
	uint64_t	key = 0;

	if (length > FILTER_TEXT_KEY_BYTES)
		return FILTER_TEXT_KEY_LONG;
	for (uint32_t i = 0; i < length; i++)
		key |= (uint64_t) bytes[i] << (56 - 8 * i);
	return key;
}

/*
 * The bytes of a text value stored in a heap tuple (little-endian varlena
 * headers, as varatt.h lays them out) inline, with a 1-byte or 4-byte
 * header; false for one compressed or stored out of line.
 */
KEY_FN bool
filter_stored_text_bytes(const uint8_t *p, const uint8_t **bytes, uint32_t *length)
{
	if (p[0] == 0x01 || (p[0] & 0x03) == 0x02)
		return false;			/* a pointer to a value out of line, or compressed */
	if (p[0] & 0x01)
	{
		*bytes = p + 1;
		*length = (uint32_t) (p[0] >> 1) - 1;
		return true;
	}
	*bytes = p + 4;
	*length = (((uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
				(uint32_t) p[3] << 24) >> 2) - 4;
	return true;
}

/*
 * The key of a text value stored in a heap tuple: inline, its bytes' key;
 * compressed or stored out of line, the long key.  That is exact for the
 * comparisons with short constants: the heap compresses or moves out of
 * line only values of more than 20 bytes (toast_tuple_find_biggest_attribute
 * takes none of at most MAXALIGN(TOAST_POINTER_SIZE) bytes, header
 * included).
 */
KEY_FN uint64_t
filter_stored_text_key(const uint8_t *p)
{
	const uint8_t *bytes;
	uint32_t	length;

	if (!filter_stored_text_bytes(p, &bytes, &length))
		return FILTER_TEXT_KEY_LONG;
	return filter_text_key(bytes, length);
}

/*
 * The register key of a stored value (p points at it): integers and dates
 * by value as int64, floats as float8, booleans as 0 or 1, text as
 * filter_stored_text_key; with to_float8, an integer cast to float8 as C
 * and PostgreSQL convert it.
 */
KEY_FN uint64_t
filter_value_key(FilterValueKind kind, const void *p, bool to_float8)
{
	int64_t		i;

	switch (kind)
	{
		case VALUE_INT2:
			i = *(const int16_t *) p;
			break;
		case VALUE_INT4:
			i = *(const int32_t *) p;
			break;
		case VALUE_INT8:
			i = *(const int64_t *) p;
			break;
		case VALUE_FLOAT4:
			return key_from_float8((double) *(const float *) p, true);
		case VALUE_FLOAT8:
			return key_from_float8(*(const double *) p, true);
		case VALUE_TEXT:
			return filter_stored_text_key((const uint8_t *) p);
		default:
			return *(const bool *) p ? 1 : 0;
	}
	return to_float8 ? key_from_float8((double) i, true) : key_from_int64(i, true);
}

KEY_FN FilterTruth
filter_compare(const FilterRegister *l, const FilterRegister *r, FilterComparison cmp)
{
	bool		result = false;

	if (l->isnull || r->isnull)
		return TRUTH_NULL;
	switch (cmp)
	{
		case CMP_LT:
			result = l->value < r->value;
			break;
		case CMP_LE:
			result = l->value <= r->value;
			break;
		case CMP_EQ:
			result = l->value == r->value;
			break;
		case CMP_GE:
			result = l->value >= r->value;
			break;
		case CMP_GT:
			result = l->value > r->value;
			break;
		case CMP_NE:
			result = l->value != r->value;
			break;
	}
	return result ? TRUTH_TRUE : TRUTH_FALSE;
}

/* The first of a set's values that is at least key, or nvalues. */
KEY_FN int32_t
filter_set_lower_bound(const FilterValueSet *set, uint64_t key)
{
	int32_t		lo = 0;
	int32_t		hi = set->nvalues;

	while (lo < hi)
	{
		int32_t		mid = (lo + hi) / 2;

		if (set->values[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* x = ANY (set), or with not_in x <> ALL (set), as ScalarArrayOpExpr gives it */
KEY_FN FilterTruth
filter_in_set(const FilterRegister *x, const FilterValueSet *set, bool not_in)
{
	int32_t		lo;

	if (set->isnull)
		return TRUTH_NULL;
	if (set->nvalues == 0 && !set->has_null)
		return not_in ? TRUTH_TRUE : TRUTH_FALSE;
	if (x->isnull)
		return TRUTH_NULL;
	lo = filter_set_lower_bound(set, x->value);
	if (lo < set->nvalues && set->values[lo] == x->value)
		return not_in ? TRUTH_FALSE : TRUTH_TRUE;
	if (set->has_null)
		return TRUTH_NULL;
	return not_in ? TRUTH_TRUE : TRUTH_FALSE;
}

KEY_FN FilterTruth
filter_bool_test(FilterTruth t, FilterBoolTest test)
{
	bool		result = false;

	switch (test)
	{
		case TEST_IS_TRUE:
			result = t == TRUTH_TRUE;
			break;
		case TEST_IS_NOT_TRUE:
			result = t != TRUTH_TRUE;
			break;
		case TEST_IS_FALSE:
			result = t == TRUTH_FALSE;
			break;
		case TEST_IS_NOT_FALSE:
			result = t != TRUTH_FALSE;
			break;
		case TEST_IS_UNKNOWN:
			result = t == TRUTH_NULL;
			break;
		case TEST_IS_NOT_UNKNOWN:
			result = t != TRUTH_NULL;
			break;
	}
	return result ? TRUTH_TRUE : TRUTH_FALSE;
}

/* AND (or OR) of n truth values: a FALSE (TRUE) decides, else a NULL */
KEY_FN FilterTruth
filter_combine(const FilterTruth *values, int n, FilterTruth deciding)
{
	FilterTruth result = deciding == TRUTH_FALSE ? TRUTH_TRUE : TRUTH_FALSE;

	for (int i = 0; i < n; i++)
	{
		if (values[i] == deciding)
			return deciding;
		if (values[i] == TRUTH_NULL)
			result = TRUTH_NULL;
	}
	return result;
}

/*
 * Whether the registers' values satisfy every clause (are TRUE, not FALSE
 * or NULL); stack has room for nsteps truth values.
 */
KEY_FN bool
filter_steps_run(const FilterStep *steps, int nsteps, const FilterRegister *regs,
				 const FilterValueSet *sets, FilterTruth *stack)
{
	int			top = 0;

	for (int i = 0; i < nsteps; i++)
	{
		const FilterStep *step = &steps[i];

		switch ((FilterStepKind) step->kind)
		{
			case STEP_COMPARE:
				stack[top++] = filter_compare(&regs[step->left], &regs[step->right],
											  (FilterComparison) step->arg);
				break;
			case STEP_IN:
				stack[top++] = filter_in_set(&regs[step->left], &sets[step->right],
											 step->arg != 0);
				break;
			case STEP_IS_NULL:
				stack[top++] = regs[step->left].isnull != (step->arg != 0) ?
					TRUTH_TRUE : TRUTH_FALSE;
				break;
			case STEP_TRUTH:
				stack[top++] = regs[step->left].isnull ? TRUTH_NULL :
					(regs[step->left].value ? TRUTH_TRUE : TRUTH_FALSE);
				break;
			case STEP_BOOL_TEST:
				stack[top - 1] = filter_bool_test(stack[top - 1], (FilterBoolTest) step->arg);
				break;
			case STEP_NOT:
				if (stack[top - 1] != TRUTH_NULL)
					stack[top - 1] = stack[top - 1] == TRUTH_TRUE ? TRUTH_FALSE : TRUTH_TRUE;
				break;
			case STEP_AND:
			case STEP_OR:
				top -= step->arg;
				stack[top] = filter_combine(&stack[top], step->arg,
											step->kind == STEP_AND ? TRUTH_FALSE : TRUTH_TRUE);
				top++;
				break;
		}
	}
	return stack[0] == TRUTH_TRUE;
}

#endif							/* FILTER_STEPS_H */
