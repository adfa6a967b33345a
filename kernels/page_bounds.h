/*
 * page_bounds.h
 *	  What a column index page's entries can hold, read from the page's
 *	  summary: whether any of them can pass the compiled WHERE clauses, and
 *	  the largest key any of them can have.  A scan skips a page whose
 *	  entries cannot pass or whose bound is below its round's cut
 *	  (src/colindex_page_eval.c on the CPU, kernels/gpu_index.cu on the
 *	  GPU).
 *
 * The summary.  A data page keeps, for each column, whether some entry
 * holds NULL, whether some entry holds a value, and the least and the
 * greatest of those values as register keys (filter_value_key, without a
 * cast: keys of one column compare as its values do).  An entry added
 * widens it; VACUUM computes it again from the entries left.  So it covers
 * every entry in use, and may be loose, never too tight.
 *
 * The filter is run over ranges instead of values: each comparison, IN
 * list and test gives the set of truth values its operands' ranges allow,
 * and AND, OR and NOT combine those sets.  A page's entries can pass only
 * where TRUE is in the set of the whole.
 *
 * The key program is run over intervals, each step computing the ends of
 * its result with the rounding of the step itself (key_step_binary).  A
 * step rounds to nearest, which never reverses an order, and each of
 * PostgreSQL's float operators is monotone in each operand over an
 * interval that holds no pole (a divisor's zero) and no NaN, so an entry's
 * value lies between the ends computed.  Where that cannot be said, or
 * where a step might raise an error for some value in the intervals
 * (overflow, underflow, division by zero), the bound is the top key: a
 * page where a row may raise is always read, so that PostgreSQL's error is
 * raised as it would be.  Values of integer columns are kept apart as
 * integral (their nonzero magnitudes are at least 1), which rules out
 * underflow in sums and products of them; a float4 column's nonzero values
 * are at least its smallest subnormal, so that its product with a float8
 * constant (a weighted sum's terms) cannot underflow either.
 *
 * Plain C and CUDA, like keys.h.
 */
#ifndef PAGE_BOUNDS_H
#define PAGE_BOUNDS_H

#include "filter_steps.h"
#include "key_steps.h"
#include "keys.h"

/* bytes of a page's summary of ncolumns columns */
#define PAGE_SUMMARY_BYTES(ncolumns) (8 + 16 * (ncolumns))

/* a column's values on a page, as register keys */
typedef struct ValueRange
{
	uint64_t	lo;
	uint64_t	hi;
	bool		may_null;
	bool		may_value;
} ValueRange;

/* a value of the key program's stack over a page */
typedef struct KeyRange
{
	double		lo;
	double		hi;
	bool		may_null;
	bool		may_value;
	bool		integral;		/* every value is an integer */
	double		least;			/* no nonzero value is of a smaller magnitude
								 * (1 where integral; 0: not known) */
} KeyRange;

/* The summary of an empty page. */
KEY_FN void
page_summary_clear(char *summary)
{
	((uint32_t *) summary)[0] = 0;
	((uint32_t *) summary)[1] = 0;
}

/* Widen a summary with a column's value (its register key) or NULL. */
KEY_FN void
page_summary_add(char *summary, int column, bool isnull, uint64_t key)
{
	uint32_t   *masks = (uint32_t *) summary;
	uint64_t   *range = (uint64_t *) (summary + 8) + 2 * column;
	uint32_t	bit = (uint32_t) 1 << column;

	if (isnull)
		masks[0] |= bit;
	else if (!(masks[1] & bit))
	{
		masks[1] |= bit;
		range[0] = key;
		range[1] = key;
	}
	else
	{
		range[0] = key < range[0] ? key : range[0];
		range[1] = key > range[1] ? key : range[1];
	}
}

KEY_FN ValueRange
page_summary_range(const char *summary, int column)
{
	const uint32_t *masks = (const uint32_t *) summary;
	const uint64_t *range = (const uint64_t *) (summary + 8) + 2 * column;
	uint32_t	bit = (uint32_t) 1 << column;
	ValueRange	r;

	r.may_null = (masks[0] & bit) != 0;
	r.may_value = (masks[1] & bit) != 0;
	r.lo = r.may_value ? range[0] : 0;
	r.hi = r.may_value ? range[1] : 0;
	return r;
}

/* The value of a register key of an integer kind, and of a float kind. */
KEY_FN int64_t
range_key_int(uint64_t key)
{
	return (int64_t) (key ^ UINT64_C(0x8000000000000000));
}

KEY_FN double
range_key_float(uint64_t key)
{
	uint64_t	bits = (key >> 63) ? key ^ UINT64_C(0x8000000000000000) : ~key;
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* A range of an integer column as a register cast to float8 holds it. */
KEY_FN ValueRange
range_to_float8(ValueRange r)
{
	r.lo = key_from_float8((double) range_key_int(r.lo), true);
	r.hi = key_from_float8((double) range_key_int(r.hi), true);
	return r;
}

/* a set of truth values, a bit each */
#define TRUTHS(t) ((uint8_t) (1u << (t)))

/* The truth values a comparison of two ranges allows. */
KEY_FN uint8_t
range_compare(const ValueRange *l, const ValueRange *r, FilterComparison cmp)
{
	uint8_t		s = (l->may_null || r->may_null) ? TRUTHS(TRUTH_NULL) : 0;
	bool		t = false;
	bool		f = false;
	bool		one_value = l->lo == l->hi && r->lo == r->hi && l->lo == r->lo;

	if (!l->may_value || !r->may_value)
		return s;
	switch (cmp)
	{
		case CMP_LT:
			t = l->lo < r->hi;
			f = l->hi >= r->lo;
			break;
		case CMP_LE:
			t = l->lo <= r->hi;
			f = l->hi > r->lo;
			break;
		case CMP_GT:
			t = l->hi > r->lo;
			f = l->lo <= r->hi;
			break;
		case CMP_GE:
			t = l->hi >= r->lo;
			f = l->lo < r->hi;
			break;
		case CMP_EQ:
		case CMP_NE:
			t = l->lo <= r->hi && r->lo <= l->hi;
			f = !one_value;
			if (cmp == CMP_NE)
			{
				bool		swap = t;

				t = f;
				f = swap;
			}
			break;
	}
	return s | (t ? TRUTHS(TRUTH_TRUE) : 0) | (f ? TRUTHS(TRUTH_FALSE) : 0);
}

/* The truth values x = ANY (set) (or x <> ALL (set)) allows, as filter_in_set. */
KEY_FN uint8_t
range_in_set(const ValueRange *x, const FilterValueSet *set, bool not_in)
{
	uint8_t		found = TRUTHS(not_in ? TRUTH_FALSE : TRUTH_TRUE);
	uint8_t		missed = set->has_null ? TRUTHS(TRUTH_NULL) :
		TRUTHS(not_in ? TRUTH_TRUE : TRUTH_FALSE);
	uint8_t		s;
	int32_t		lo;

	if (set->isnull)
		return TRUTHS(TRUTH_NULL);
	if (set->nvalues == 0 && !set->has_null)
		return TRUTHS(not_in ? TRUTH_TRUE : TRUTH_FALSE);
	s = x->may_null ? TRUTHS(TRUTH_NULL) : 0;
	if (!x->may_value)
		return s;
	lo = filter_set_lower_bound(set, x->lo);
	if (lo < set->nvalues && set->values[lo] <= x->hi)
		s |= found;
	if (!(x->lo == x->hi && lo < set->nvalues && set->values[lo] == x->lo))
		s |= missed;
	return s;
}

/* Each truth value of a set mapped by a test (NOT where test < 0). */
KEY_FN uint8_t
truths_map(uint8_t s, int test)
{
	uint8_t		out = 0;

	for (int t = TRUTH_FALSE; t <= TRUTH_NULL; t++)
	{
		FilterTruth mapped = (FilterTruth) t;

		if (!(s & TRUTHS(t)))
			continue;
		if (test >= 0)
			mapped = filter_bool_test((FilterTruth) t, (FilterBoolTest) test);
		else if (t != TRUTH_NULL)
			mapped = t == TRUTH_TRUE ? TRUTH_FALSE : TRUTH_TRUE;
		out |= TRUTHS(mapped);
	}
	return out;
}

/* The truth values AND (OR: deciding is TRUE) of n operands allows, as filter_combine. */
KEY_FN uint8_t
truths_combine(const uint8_t *sets, int n, FilterTruth deciding)
{
	FilterTruth other = deciding == TRUTH_FALSE ? TRUTH_TRUE : TRUTH_FALSE;
	bool		any_deciding = false;
	bool		all_other = true;
	bool		all_not_deciding = true;
	bool		any_null = false;

	for (int i = 0; i < n; i++)
	{
		any_deciding |= (sets[i] & TRUTHS(deciding)) != 0;
		all_other &= (sets[i] & TRUTHS(other)) != 0;
		all_not_deciding &= (sets[i] & (TRUTHS(other) | TRUTHS(TRUTH_NULL))) != 0;
		any_null |= (sets[i] & TRUTHS(TRUTH_NULL)) != 0;
	}
	return (any_deciding ? TRUTHS(deciding) : 0) | (all_other ? TRUTHS(other) : 0) |
		(all_not_deciding && any_null ? TRUTHS(TRUTH_NULL) : 0);
}

/*
 * Whether some entry of a page may pass the filter, over its registers'
 * ranges (a run constant's a single value); stack has room for nsteps.
 */
KEY_FN bool
filter_range_may_pass(const FilterStep *steps, int nsteps, const ValueRange *regs,
					  const FilterValueSet *sets, uint8_t *stack)
{
	int			top = 0;

	for (int i = 0; i < nsteps; i++)
	{
		const FilterStep *step = &steps[i];
		const ValueRange *left = &regs[step->left];

		switch ((FilterStepKind) step->kind)
		{
			case STEP_COMPARE:
				stack[top++] = range_compare(left, &regs[step->right],
											 (FilterComparison) step->arg);
				break;
			case STEP_IN:
				stack[top++] = range_in_set(left, &sets[step->right], step->arg != 0);
				break;
			case STEP_IS_NULL:
				stack[top++] = (left->may_null ? TRUTHS(step->arg ? TRUTH_FALSE : TRUTH_TRUE) : 0) |
					(left->may_value ? TRUTHS(step->arg ? TRUTH_TRUE : TRUTH_FALSE) : 0);
				break;
			case STEP_TRUTH:
				stack[top++] = (left->may_null ? TRUTHS(TRUTH_NULL) : 0) |
					(left->may_value && left->hi != 0 ? TRUTHS(TRUTH_TRUE) : 0) |
					(left->may_value && left->lo == 0 ? TRUTHS(TRUTH_FALSE) : 0);
				break;
			case STEP_BOOL_TEST:
				stack[top - 1] = truths_map(stack[top - 1], step->arg);
				break;
			case STEP_NOT:
				stack[top - 1] = truths_map(stack[top - 1], -1);
				break;
			case STEP_AND:
			case STEP_OR:
				top -= step->arg;
				stack[top] = truths_combine(&stack[top], step->arg,
											step->kind == STEP_AND ? TRUTH_FALSE : TRUTH_TRUE);
				top++;
				break;
		}
	}
	return nsteps == 0 || (stack[0] & TRUTHS(TRUTH_TRUE)) != 0;
}

/* A column step's range on the program's stack, from its column's summary. */
KEY_FN KeyRange
key_range_of_column(const KeyStep *step, const ValueRange *r)
{
	KeyRange	k;
	bool		floats = step->kind == KEY_STEP_FLOAT4_COLUMN || step->kind == KEY_STEP_FLOAT8_COLUMN;

	k.may_null = r->may_null;
	k.may_value = r->may_value;
	k.integral = !floats;
	k.least = !floats ? 1.0 : step->kind == KEY_STEP_FLOAT4_COLUMN ? FLT_TRUE_MIN : DBL_TRUE_MIN;
	k.lo = floats ? range_key_float(r->lo) : (double) range_key_int(r->lo);
	k.hi = floats ? range_key_float(r->hi) : (double) range_key_int(r->hi);
	return k;
}

/* the least magnitude of a range's nonzero values may be: 0 where it cannot be said */
KEY_FN double
key_range_least_nonzero(const KeyRange *k)
{
	if (k->lo > 0)
		return k->lo;
	if (k->hi < 0)
		return -k->hi;
	return k->least;
}

KEY_FN bool
key_range_is_zero(const KeyRange *k)
{
	return k->lo == 0 && k->hi == 0;
}

KEY_FN bool
key_range_finite(double lo, double hi)
{
	return !isinf(lo) && !isinf(hi) && !isnan(lo) && !isnan(hi);
}

/* A binary step over two ranges with values; false where its bound cannot be said. */
KEY_FN bool
key_range_binary(KeyStepKind kind, const KeyRange *l, const KeyRange *r, KeyRange *out)
{
	double		corners[4];
	double		tiny;

	if (!key_range_finite(l->lo, l->hi) || !key_range_finite(r->lo, r->hi))
		return false;
	if ((kind == KEY_STEP_DIV || kind == KEY_STEP_DIV4) && r->lo <= 0 && r->hi >= 0)
		return false;			/* a division by zero */
	key_step_binary(kind, l->lo, r->lo, &corners[0]);
	key_step_binary(kind, l->lo, r->hi, &corners[1]);
	key_step_binary(kind, l->hi, r->lo, &corners[2]);
	key_step_binary(kind, l->hi, r->hi, &corners[3]);
	out->lo = corners[0];
	out->hi = corners[0];
	for (int i = 1; i < 4; i++)
	{
		out->lo = corners[i] < out->lo ? corners[i] : out->lo;
		out->hi = corners[i] > out->hi ? corners[i] : out->hi;
	}
	if (!key_range_finite(out->lo, out->hi))
		return false;			/* an overflow */
	switch (kind)
	{
		case KEY_STEP_ADD:
		case KEY_STEP_SUB:
		case KEY_STEP_ADD4:
		case KEY_STEP_SUB4:
			out->integral = l->integral && r->integral;
			out->least = out->integral ? 1.0 : 0.0;
			return true;
		case KEY_STEP_MUL:
		case KEY_STEP_MUL4:
			out->integral = l->integral && r->integral;
			out->least = out->integral ? 1.0 : 0.0;
			if (key_range_is_zero(l) || key_range_is_zero(r))
				return true;
			/* an underflow: a product of nonzero values rounded to zero */
			if (key_range_least_nonzero(l) == 0 || key_range_least_nonzero(r) == 0)
				return false;
			key_step_binary(kind, key_range_least_nonzero(l), key_range_least_nonzero(r), &tiny);
			return tiny != 0;
		default:
			out->integral = false;
			out->least = 0.0;
			if (key_range_is_zero(l))
				return true;
			if (key_range_least_nonzero(l) == 0)
				return false;
			key_step_binary(kind, key_range_least_nonzero(l),
							fabs(r->lo) > fabs(r->hi) ? fabs(r->lo) : fabs(r->hi), &tiny);
			return tiny != 0;
	}
}

/* A unary step over a range with values; false where its bound cannot be said. */
KEY_FN bool
key_range_unary(KeyStepKind kind, const KeyRange *v, KeyRange *out)
{
	double		lo = v->lo;
	double		hi = v->hi;

	if (!key_range_finite(lo, hi))
		return false;
	out->integral = v->integral;
	out->least = v->least;
	switch (kind)
	{
		case KEY_STEP_NEG:
			out->lo = -hi;
			out->hi = -lo;
			return true;
		case KEY_STEP_ABS:
			out->lo = lo >= 0 ? lo : (hi <= 0 ? -hi : 0);
			out->hi = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
			return true;
		default:
			out->lo = (float) lo;
			out->hi = (float) hi;
			out->least = v->integral ? 1.0 : 0.0;
			if (!key_range_finite(out->lo, out->hi))
				return false;
			/* dtof's underflow: a nonzero value rounded to zero */
			return key_range_is_zero(v) ||
				(key_range_least_nonzero(v) != 0 && (float) key_range_least_nonzero(v) != 0.0f);
	}
}

/*
 * A step that is not a column's over the stack of *top ranges, as
 * key_step_apply runs it over values; false where the program's bound over
 * the page cannot be said.
 */
KEY_FN bool
key_range_apply(const KeyStep *step, KeyRange *stack, int *top)
{
	KeyStepKind kind = (KeyStepKind) step->kind;
	KeyRange	result;
	KeyRange   *last;

	if (kind == KEY_STEP_CONST)
	{
		result.lo = step->value;
		result.hi = step->value;
		result.may_null = false;
		result.may_value = true;
		result.integral = step->value == floor(step->value);
		result.least = fabs(step->value);
		stack[(*top)++] = result;
		return key_range_finite(step->value, step->value);
	}
	if (kind < KEY_STEP_NEG)
		(*top)--;
	last = &stack[*top - 1];
	result.may_null = last->may_null || (kind < KEY_STEP_NEG && stack[*top].may_null);
	result.may_value = last->may_value && (kind >= KEY_STEP_NEG || stack[*top].may_value);
	result.lo = result.hi = 0;
	result.integral = true;
	result.least = 1.0;
	if (result.may_value &&
		!(kind >= KEY_STEP_NEG ? key_range_unary(kind, last, &result) :
		  key_range_binary(kind, last, &stack[*top], &result)))
		return false;
	*last = result;
	return true;
}

/*
 * The largest key of a program's result over a page, keyed as
 * key_from_float8 with desc, or NULL's key.  (Where a step could not say
 * its range, the bound is KEY_PROGRAM_ERROR_KEY.)
 */
KEY_FN uint64_t
key_range_bound(const KeyRange *v, bool desc, uint64_t null_key)
{
	uint64_t	bound = 0;

	if (v->may_value)
		bound = key_from_float8(desc ? v->hi : v->lo, desc);
	if (v->may_null && null_key > bound)
		bound = null_key;
	return bound;
}

/* The largest key of a key column over a page, from its range. */
KEY_FN uint64_t
key_column_bound(KeyType type, const ValueRange *r, bool desc, uint64_t null_key)
{
	uint64_t	bound = 0;
	uint64_t	end = desc ? r->hi : r->lo;

	if (r->may_value)
		switch (type)
		{
			case KEY_INT2:
			case KEY_INT4:
			case KEY_DATE:
				bound = key_from_int32((int32_t) range_key_int(end), desc);
				break;
			case KEY_FLOAT4:
				bound = key_from_float4((float) range_key_float(end), desc);
				break;
			case KEY_FLOAT8:
				bound = key_from_float8(range_key_float(end), desc);
				break;
			default:
				bound = key_from_int64(range_key_int(end), desc);
				break;
		}
	if (r->may_null && null_key > bound)
		bound = null_key;
	return bound;
}

#endif							/* PAGE_BOUNDS_H */
