/*-------------------------------------------------------------------------
 *
 * key_batch.c
 *	  A key program (scan_key_program.c) run over a batch of rows at once:
 *	  a column index page's entries (colindex_page_eval.c) or a heap page's
 *	  rows (scan_key_program_keys).
 *
 * Each step runs over every row of the batch, as key_step_apply does over
 * one: the stack's levels are arrays, a value and a NULL flag per row, and
 * a step is a loop over them.  A constant is kept as one value until a
 * step combines it with a column's, and a level's NULL flags are kept only
 * where one of its rows is NULL.  A binary step writes its results into a
 * spare array, which then takes the level's place.  The interpreter's
 * dispatch happens once per batch instead of once per row, and the loops
 * are short and regular enough for the compiler to vectorize.  Each
 * element is computed by the same functions as the per-row interpreters
 * (kernels/key_steps.h), so every row gets the value, and raises the
 * error, it gets elsewhere.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "key_batch.h"

struct KeyBatch
{
	const KeyStep *steps;
	int			nsteps;
	int			stride;			/* rows of a level: max_rows rounded up to 8 */
	double	  **level_values;	/* a value per row a level */
	const float **level_floats; /* or a float4 column's values where they lie */
	bool	   *level_is_const; /* a level that holds one value for every row */
	double	   *level_const;	/* that value */
	uint8	   *level_nulls;	/* a NULL flag per row a level, where it has any */
	bool	   *level_has_nulls;	/* (a constant's has none) */
	const uint8 *no_nulls;		/* a NULL flag per row, all false */
	uint8	   *errors;			/* the rows where a step raised */
	double	   *scratch;		/* a step's results, then the level's values */
};

KeyBatch *
key_batch_create(const KeyStep *steps, int nsteps, int max_rows)
{
	KeyBatch   *batch = palloc0(sizeof(KeyBatch));
	int			levels = Max(nsteps, 1);

	batch->steps = steps;
	batch->nsteps = nsteps;
	batch->stride = TYPEALIGN(8, Max(max_rows, 1));
	batch->level_values = palloc(sizeof(double *) * levels);
	for (int i = 0; i < levels; i++)
		batch->level_values[i] = palloc(sizeof(double) * batch->stride);
	batch->level_floats = palloc0(sizeof(float *) * levels);
	batch->level_is_const = palloc(sizeof(bool) * levels);
	batch->level_const = palloc(sizeof(double) * levels);
	batch->level_nulls = palloc((Size) batch->stride * levels);
	batch->level_has_nulls = palloc(sizeof(bool) * levels);
	batch->no_nulls = palloc0(batch->stride);
	batch->errors = palloc(batch->stride);
	batch->scratch = palloc(sizeof(double) * batch->stride);
	return batch;
}

/* An operand of a step in row j: a level's value, a float4 column's, or a constant. */
static pg_attribute_always_inline double
operand(const double *values, const float *floats, double constant, int j)
{
	return values ? values[j] : floats ? (double) floats[j] : constant;
}

/*
 * A binary step over levels of the stack: a (or f, or where both are NULL,
 * x in every row) with b (or g, or y), into scratch.  Where checked, a row
 * where it raises, its operands not NULL (the result's NULL flag, in
 * nulls), is marked in errors; unchecked, no row can.  The results are
 * computed in a loop without branches that the compiler vectorizes, with
 * one flag for whether any may have raised (key_step_suspect), kept in
 * lanes as wide as the values'; only then are the rows checked one by one.
 * The compiler makes a loop of each kind and shape.
 */
static pg_attribute_always_inline void
binary_loop(KeyStepKind kind, bool checked,
			const double *a, const float *f, double x,
			const double *b, const float *g, double y,
			const uint8 *nulls, uint8 *errors, double *scratch, int n)
{
	int64		suspect = 0;

	for (int j = 0; j < n; j++)
	{
		double		l = operand(a, f, x, j);
		double		r = operand(b, g, y, j);

		scratch[j] = key_step_value(kind, l, r);
		if (checked)
			suspect |= key_step_suspect(kind, l, r, scratch[j]);
	}
	if (suspect)
		for (int j = 0; j < n; j++)
			errors[j] |= key_step_raises(kind, operand(a, f, x, j), operand(b, g, y, j),
										 scratch[j]) & !nulls[j];
}

/* The loop of the operands' shape: never two constants, nor two float4 columns. */
static pg_attribute_always_inline void
binary_shapes(KeyStepKind kind, bool checked,
			  const double *a, const float *f, double x,
			  const double *b, const float *g, double y,
			  const uint8 *nulls, uint8 *errors, double *scratch, int n)
{
#define LOOP(A, F, B, G) binary_loop(kind, checked, A, F, x, B, G, y, nulls, errors, scratch, n)
	if (a && b)
		LOOP(a, NULL, b, NULL);
	else if (a && g)
		LOOP(a, NULL, NULL, g);
	else if (a)
		LOOP(a, NULL, NULL, NULL);
	else if (f && b)
		LOOP(NULL, f, b, NULL);
	else if (f)
		LOOP(NULL, f, NULL, NULL);
	else if (b)
		LOOP(NULL, NULL, b, NULL);
	else
		LOOP(NULL, NULL, NULL, g);
#undef LOOP
}

static pg_attribute_always_inline void
binary_checks(KeyStepKind kind, bool checked,
			  const double *a, const float *f, double x,
			  const double *b, const float *g, double y,
			  const uint8 *nulls, uint8 *errors, double *scratch, int n)
{
	if (checked)
		binary_shapes(kind, true, a, f, x, b, g, y, nulls, errors, scratch, n);
	else
		binary_shapes(kind, false, a, f, x, b, g, y, nulls, errors, scratch, n);
}

static uint8 *
level_null_flags(KeyBatch *batch, int level)
{
	return batch->level_nulls + (Size) level * batch->stride;
}

/* The NULL flags of a level: all false where it has none. */
static const uint8 *
level_nulls(KeyBatch *batch, int level)
{
	return batch->level_has_nulls[level] ? level_null_flags(batch, level) : batch->no_nulls;
}

/* The NULL flags of the level at left and the one above it, combined at left. */
static void
combine_nulls(KeyBatch *batch, int left, int n)
{
	uint8	   *nulls = level_null_flags(batch, left);
	const uint8 *right_nulls = level_null_flags(batch, left + 1);

	if (!batch->level_has_nulls[left + 1])
		return;
	if (batch->level_has_nulls[left])
		for (int j = 0; j < n; j++)
			nulls[j] |= right_nulls[j];
	else
		memcpy(nulls, right_nulls, n);
	batch->level_has_nulls[left] = true;
}

/* A level that points at a float4 column's values: its values made its own. */
static void
own_values(KeyBatch *batch, int level, int n)
{
	const float *floats = batch->level_floats[level];
	double	   *values = batch->level_values[level];

	if (floats == NULL)
		return;
	for (int j = 0; j < n; j++)
		values[j] = floats[j];
	batch->level_floats[level] = NULL;
}

/* The step kind over the level at left and the one above it, the result at left. */
static void
binary_step(KeyBatch *batch, KeyStepKind kind, bool checked, int left, int n)
{
	double	   *out;
	const double *a;
	const double *b;
	const float *f;
	const float *g = batch->level_floats[left + 1];
	double		x = batch->level_const[left];
	double		y = batch->level_const[left + 1];
	uint8	   *errors = batch->errors;
	const uint8 *nulls;

	if (batch->level_is_const[left] && batch->level_is_const[left + 1])
	{
		/* constants: raising, the step raises on every row */
		if (!key_step_binary(kind, x, y, &batch->level_const[left]))
			memset(errors, 1, n);
		return;
	}
	if (g != NULL)
		own_values(batch, left, n);
	out = batch->level_values[left];
	f = batch->level_floats[left];
	a = batch->level_is_const[left] || f ? NULL : out;
	b = batch->level_is_const[left + 1] || g ? NULL : batch->level_values[left + 1];
	combine_nulls(batch, left, n);
	nulls = level_nulls(batch, left);
	batch->level_is_const[left] = false;
	batch->level_floats[left] = NULL;
	/* a loop of each kind: the kind a constant in each */
#define BINARY_STEP(KIND) \
	binary_checks(KIND, checked, a, f, x, b, g, y, nulls, errors, batch->scratch, n)
	switch (kind)
	{
		case KEY_STEP_ADD:
			BINARY_STEP(KEY_STEP_ADD);
			break;
		case KEY_STEP_SUB:
			BINARY_STEP(KEY_STEP_SUB);
			break;
		case KEY_STEP_MUL:
			BINARY_STEP(KEY_STEP_MUL);
			break;
		case KEY_STEP_DIV:
			BINARY_STEP(KEY_STEP_DIV);
			break;
		case KEY_STEP_ADD4:
			BINARY_STEP(KEY_STEP_ADD4);
			break;
		case KEY_STEP_SUB4:
			BINARY_STEP(KEY_STEP_SUB4);
			break;
		case KEY_STEP_MUL4:
			BINARY_STEP(KEY_STEP_MUL4);
			break;
		default:
			BINARY_STEP(KEY_STEP_DIV4);
			break;
	}
#undef BINARY_STEP
	/* the results become the level's values, its old array the scratch */
	batch->level_values[left] = batch->scratch;
	batch->scratch = out;
}

/* A unary step over the level at top. */
static void
unary_step(KeyBatch *batch, KeyStepKind kind, int top, int n)
{
	double	   *level = batch->level_values[top];
	const uint8 *nulls = level_nulls(batch, top);
	uint8	   *errors = batch->errors;

	if (batch->level_is_const[top])
	{
		if (!key_step_unary(kind, batch->level_const[top], &batch->level_const[top]))
			memset(errors, 1, n);
		return;
	}
	own_values(batch, top, n);
	for (int j = 0; j < n; j++)
		errors[j] |= !key_step_unary(kind, level[j], &level[j]) & !nulls[j];
}

BATCH_VARIANTS void
key_batch_run(KeyBatch *batch, int n, bool checked, KeyBatchColumn column, void *arg,
			  const double **values, const uint8 **nulls, const uint8 **errors)
{
	int			top = 0;

	Assert(n <= batch->stride);
	memset(batch->errors, 0, n);
	for (int i = 0; i < batch->nsteps; i++)
	{
		const KeyStep *step = &batch->steps[i];
		KeyStepKind kind = (KeyStepKind) step->kind;

		if (key_step_is_column(step))
		{
			batch->level_floats[top] = NULL;
			batch->level_has_nulls[top] = column(arg, i, batch->level_values[top],
												 &batch->level_floats[top],
												 level_null_flags(batch, top), n);
			batch->level_is_const[top++] = false;
		}
		else if (kind == KEY_STEP_CONST)
		{
			batch->level_const[top] = step->value;
			batch->level_floats[top] = NULL;
			batch->level_has_nulls[top] = false;
			batch->level_is_const[top++] = true;
		}
		else if (kind >= KEY_STEP_NEG)
			unary_step(batch, kind, top - 1, n);
		else
		{
			binary_step(batch, kind, checked, top - 2, n);
			top--;
		}
	}
	Assert(top == 1);
	own_values(batch, 0, n);
	if (batch->level_is_const[0])
		for (int j = 0; j < n; j++)
			batch->level_values[0][j] = batch->level_const[0];
	*values = batch->level_values[0];
	*nulls = level_nulls(batch, 0);
	*errors = batch->errors;
}
