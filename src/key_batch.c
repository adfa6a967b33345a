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
 * step combines it with a column's.  The interpreter's dispatch happens
 * once per batch instead of once per row, and the loops are short and
 * regular enough for the compiler to vectorize.  Each element is computed
 * by the same functions as the per-row interpreters (kernels/key_steps.h),
 * so every row gets the value, and raises the error, it gets elsewhere.
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
	double	   *stack;			/* a value per row a level */
	bool	   *level_is_const; /* a level that holds one value for every row */
	double	   *level_const;	/* that value */
	uint8	   *level_nulls;	/* a NULL flag per row a level (not of constants) */
	uint8	   *errors;			/* the rows where a step raised */
	double	   *scratch;		/* a step's results, a value per row */
};

KeyBatch *
key_batch_create(const KeyStep *steps, int nsteps, int max_rows)
{
	KeyBatch   *batch = palloc0(sizeof(KeyBatch));
	int			levels = Max(nsteps, 1);

	batch->steps = steps;
	batch->nsteps = nsteps;
	batch->stride = TYPEALIGN(8, Max(max_rows, 1));
	batch->stack = palloc(sizeof(double) * batch->stride * levels);
	batch->level_is_const = palloc(sizeof(bool) * levels);
	batch->level_const = palloc(sizeof(double) * levels);
	batch->level_nulls = palloc((Size) batch->stride * levels);
	batch->errors = palloc(batch->stride);
	batch->scratch = palloc(sizeof(double) * batch->stride);
	return batch;
}

/*
 * A binary step over levels of the stack: a (or, where NULL, x in every
 * row) with b (or y), into out; a row where it raises, its operands not
 * NULL (the result's NULL flag, in nulls), is marked in errors.  The
 * results go to scratch first, in a loop without branches that the
 * compiler vectorizes, with one flag for whether any may have raised
 * (key_step_suspect); only then are the rows checked one by one.  The
 * compiler makes a loop of each kind and shape.
 */
static pg_attribute_always_inline void
binary_loop(KeyStepKind kind, double *out, const double *a, double x, const double *b,
			double y, const uint8 *nulls, uint8 *errors, double *scratch, int n)
{
	int			suspect = 0;

	for (int j = 0; j < n; j++)
	{
		scratch[j] = key_step_value(kind, a ? a[j] : x, b ? b[j] : y);
		suspect |= key_step_suspect(kind, scratch[j]);
	}
	if (suspect)
		for (int j = 0; j < n; j++)
			errors[j] |= key_step_raises(kind, a ? a[j] : x, b ? b[j] : y, scratch[j]) &
				!nulls[j];
	memcpy(out, scratch, sizeof(double) * n);
}

static pg_attribute_always_inline void
binary_shapes(KeyStepKind kind, double *out, const double *a, double x, const double *b,
			  double y, const uint8 *nulls, uint8 *errors, double *scratch, int n)
{
	if (a && b)
		binary_loop(kind, out, a, 0, b, 0, nulls, errors, scratch, n);
	else if (a)
		binary_loop(kind, out, a, 0, NULL, y, nulls, errors, scratch, n);
	else
		binary_loop(kind, out, NULL, x, b, 0, nulls, errors, scratch, n);
}

/* The NULL flags of a level; none where it is a constant's. */
static uint8 *
level_nulls(KeyBatch *batch, int level, int n)
{
	uint8	   *nulls = batch->level_nulls + (Size) level * batch->stride;

	if (batch->level_is_const[level])
		memset(nulls, 0, n);
	return nulls;
}

/* The step kind over the level at left and the one above it, the result at left. */
static void
binary_step(KeyBatch *batch, KeyStepKind kind, int left, int n)
{
	double	   *out = batch->stack + (Size) left * batch->stride;
	const double *a = batch->level_is_const[left] ? NULL : out;
	const double *b = batch->level_is_const[left + 1] ? NULL : out + batch->stride;
	double		x = batch->level_const[left];
	double		y = batch->level_const[left + 1];
	uint8	   *errors = batch->errors;
	uint8	   *nulls;
	const uint8 *right_nulls;

	if (a == NULL && b == NULL)
	{
		/* constants: raising, the step raises on every row */
		if (!key_step_binary(kind, x, y, &batch->level_const[left]))
			memset(errors, 1, n);
		return;
	}
	nulls = level_nulls(batch, left, n);
	right_nulls = level_nulls(batch, left + 1, n);
	for (int j = 0; j < n; j++)
		nulls[j] |= right_nulls[j];
	batch->level_is_const[left] = false;
	/* a loop of each kind: the kind a constant in each */
#define BINARY_STEP(KIND) \
	binary_shapes(KIND, out, a, x, b, y, nulls, errors, batch->scratch, n)
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
}

/* A unary step over the level at top. */
static void
unary_step(KeyBatch *batch, KeyStepKind kind, int top, int n)
{
	double	   *level = batch->stack + (Size) top * batch->stride;
	const uint8 *nulls = batch->level_nulls + (Size) top * batch->stride;
	uint8	   *errors = batch->errors;

	if (batch->level_is_const[top])
	{
		if (!key_step_unary(kind, batch->level_const[top], &batch->level_const[top]))
			memset(errors, 1, n);
		return;
	}
	for (int j = 0; j < n; j++)
		errors[j] |= !key_step_unary(kind, level[j], &level[j]) & !nulls[j];
}

BATCH_VARIANTS void
key_batch_run(KeyBatch *batch, int n, KeyBatchColumn column, void *arg,
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
			column(arg, i, batch->stack + (Size) top * batch->stride,
				   batch->level_nulls + (Size) top * batch->stride, n);
			batch->level_is_const[top++] = false;
		}
		else if (kind == KEY_STEP_CONST)
		{
			batch->level_const[top] = step->value;
			batch->level_is_const[top++] = true;
		}
		else if (kind >= KEY_STEP_NEG)
			unary_step(batch, kind, top - 1, n);
		else
		{
			binary_step(batch, kind, top - 2, n);
			top--;
		}
	}
	Assert(top == 1);
	if (batch->level_is_const[0])
		for (int j = 0; j < n; j++)
			batch->stack[j] = batch->level_const[0];
	*values = batch->stack;
	*nulls = level_nulls(batch, 0, n);
	*errors = batch->errors;
}
