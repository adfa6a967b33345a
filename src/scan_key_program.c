/*-------------------------------------------------------------------------
 *
 * scan_key_program.c
 *	  Ranking expressions compiled into a program that a row is keyed with
 *	  without PostgreSQL's expression interpreter: float4 and float8
 *	  arithmetic, and numeric arithmetic that float8 computes exactly
 *	  (topk_rank_key.c).
 *
 * The program is a postfix list of steps over a stack of doubles
 * (key_steps.h): push a column (int2, int4, int8, float4 or float8) or a
 * constant, then +, -, *, / in float8 or in float4, unary minus, abs, and
 * the rounding of float4(float8).  Each step is the PostgreSQL function of
 * the same name, with its rounding and its checks, so the program gives the
 * interpreter's value on every row; a NULL column makes the value NULL, as
 * the strict functions do.  Where the interpreter would raise an error
 * (overflow, underflow, division by zero), the row gets the largest key,
 * KEY_PROGRAM_ERROR_KEY: it is a candidate, and the executor computes the
 * candidates' ORDER BY values with the interpreter, which raises the error
 * for a row that is visible and passes the quals.  Programs that can raise
 * (scan_key_program_may_raise, from bounds on the values' magnitudes) are
 * run asking for the ties at the boundary, so that every such row stays a
 * candidate (over a column index, unless its pages' summaries show that
 * no row raises).  On the CPU a heap page's rows are keyed together, a step
 * at a time over all of them (scan_key_program_keys, key_batch.c).  Like
 * the filter program it is plain data a device runs too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "nodes/nodeFuncs.h"
#include "port/pg_bitutils.h"
#include "utils/fmgroids.h"

#include "compat.h"
#include "key_batch.h"
#include "scan_key_program.h"

struct KeyProgram
{
	int			nsteps;
	KeyStep    *steps;
	bool		may_raise;
	KeyBatch   *batch;			/* for a heap page's rows, made when first used */
	MemoryContext cxt;			/* the program's: the batch lives as long */
};

/*
 * Bounds on a value's magnitude: a finite value is below 2^max_log2 and a
 * multiple of 2^min_log2, so at least that unless zero (infinities and NaN
 * never make a step raise).  Sums and products of multiples are multiples,
 * and rounding them keeps them so; a quotient is not, and only its
 * magnitude bounds its rounding's unit.
 */
typedef struct Magnitude
{
	int			max_log2;
	int			min_log2;
	bool		may_be_zero;
} Magnitude;

/* float8's and float4's limits, as powers of two */
#define FLOAT8_MAX_LOG2 1024
#define FLOAT8_MIN_LOG2 (-1074)
#define FLOAT4_MAX_LOG2 128
#define FLOAT4_MIN_LOG2 (-149)

typedef struct Compiler
{
	Index		scanrelid;
	List	   *steps;
	bool		may_raise;
} Compiler;

static void
add_step(Compiler *c, KeyStepKind kind, AttrNumber attno, double value)
{
	KeyStep    *step = palloc(sizeof(KeyStep));

	step->kind = kind;
	step->column = attno;
	step->value = value;
	c->steps = lappend(c->steps, step);
}

/* A column of the scanned table, as the step that pushes it. */
static bool
compile_column(Compiler *c, Node *node, Magnitude *m)
{
	Var		   *var = (Var *) node;

	if (!IsA(node, Var) || var->varno != c->scanrelid || var->varlevelsup != 0 ||
		var->varattno <= 0)
		return false;
	m->min_log2 = 0;
	m->may_be_zero = true;
	switch (var->vartype)
	{
		case INT2OID:
			/* -32768 is 2^15 in magnitude */
			m->max_log2 = 16;
			add_step(c, KEY_STEP_INT2_COLUMN, var->varattno, 0);
			return true;
		case INT4OID:
			m->max_log2 = 32;
			add_step(c, KEY_STEP_INT4_COLUMN, var->varattno, 0);
			return true;
		case INT8OID:
			m->max_log2 = 64;
			add_step(c, KEY_STEP_INT8_COLUMN, var->varattno, 0);
			return true;
		case FLOAT4OID:
			m->max_log2 = FLOAT4_MAX_LOG2;
			m->min_log2 = FLOAT4_MIN_LOG2;
			add_step(c, KEY_STEP_FLOAT4_COLUMN, var->varattno, 0);
			return true;
		case FLOAT8OID:
			m->max_log2 = FLOAT8_MAX_LOG2;
			m->min_log2 = FLOAT8_MIN_LOG2;
			add_step(c, KEY_STEP_FLOAT8_COLUMN, var->varattno, 0);
			return true;
		default:
			return false;
	}
}

static bool
compile_const(Compiler *c, Const *k, Magnitude *m)
{
	double		v;
	int			exp;

	if (k->constisnull || (k->consttype != FLOAT8OID && k->consttype != FLOAT4OID))
		return false;
	v = k->consttype == FLOAT8OID ? DatumGetFloat8(k->constvalue) :
		(double) DatumGetFloat4(k->constvalue);
	m->may_be_zero = v == 0.0;
	m->max_log2 = FLOAT8_MIN_LOG2;
	m->min_log2 = FLOAT8_MAX_LOG2;
	if (v != 0.0 && !isinf(v) && !isnan(v))
	{
		/* 2^(exp - 1) <= |v| < 2^exp; a multiple of its mantissa's lowest bit */
		double		mantissa = frexp(fabs(v), &exp);
		uint64		bits = (uint64) ldexp(mantissa, DBL_MANT_DIG);

		m->max_log2 = exp;
		m->min_log2 = exp - DBL_MANT_DIG + pg_rightmost_one_pos64(bits);
	}
	add_step(c, KEY_STEP_CONST, 0, v);
	return true;
}

/*
 * A step over l (and r) whose result has magnitude *m; c->may_raise where
 * it can overflow, underflow or divide by zero.
 */
static void
add_arithmetic(Compiler *c, KeyStepKind kind, Magnitude l, Magnitude r, Magnitude *m)
{
	bool		single = kind >= KEY_STEP_ADD4 && kind <= KEY_STEP_DIV4;
	int			max_log2 = single ? FLOAT4_MAX_LOG2 : FLOAT8_MAX_LOG2;
	int			min_log2 = single ? FLOAT4_MIN_LOG2 : FLOAT8_MIN_LOG2;

	*m = l;
	switch (kind)
	{
		case KEY_STEP_ADD:
		case KEY_STEP_SUB:
		case KEY_STEP_ADD4:
		case KEY_STEP_SUB4:
			m->max_log2 = Max(l.max_log2, r.max_log2) + 1;
			m->min_log2 = Min(l.min_log2, r.min_log2);
			m->may_be_zero = true;
			/* a sum never underflows: it is exact when that small */
			break;
		case KEY_STEP_MUL:
		case KEY_STEP_MUL4:
			m->max_log2 = l.max_log2 + r.max_log2;
			m->min_log2 = l.min_log2 + r.min_log2;
			m->may_be_zero = l.may_be_zero || r.may_be_zero;
			c->may_raise |= m->min_log2 < min_log2;
			break;
		case KEY_STEP_DIV:
		case KEY_STEP_DIV4:
			m->max_log2 = l.max_log2 - r.min_log2;
			/* a quotient not zero is above 2^(l.min_log2 - r.max_log2) */
			m->min_log2 = l.min_log2 - r.max_log2;
			m->may_be_zero = l.may_be_zero;
			c->may_raise |= r.may_be_zero || m->min_log2 < min_log2;
			/* and a multiple of the unit of its last bit there */
			m->min_log2 = Max(m->min_log2 - (single ? FLT_MANT_DIG : DBL_MANT_DIG), min_log2);
			break;
		case KEY_STEP_TO_FLOAT4:
			/* a double below 2^128 may still round up to infinity */
			c->may_raise |= l.max_log2 >= FLOAT4_MAX_LOG2 || l.min_log2 < FLOAT4_MIN_LOG2;
			m->max_log2 = Min(l.max_log2, FLOAT4_MAX_LOG2);
			m->min_log2 = Max(l.min_log2, FLOAT4_MIN_LOG2);
			add_step(c, kind, 0, 0);
			return;
		default:
			/* NEG and ABS keep the magnitude */
			add_step(c, kind, 0, 0);
			return;
	}
	c->may_raise |= m->max_log2 > max_log2;
	add_step(c, kind, 0, 0);
}

/* The step of a function over float8 or float4 values, or -1. */
static int
arithmetic_step(Oid funcid)
{
	switch (funcid)
	{
		case F_FLOAT8PL:
		case F_FLOAT48PL:
		case F_FLOAT84PL:
			return KEY_STEP_ADD;
		case F_FLOAT8MI:
		case F_FLOAT48MI:
		case F_FLOAT84MI:
			return KEY_STEP_SUB;
		case F_FLOAT8MUL:
		case F_FLOAT48MUL:
		case F_FLOAT84MUL:
			return KEY_STEP_MUL;
		case F_FLOAT8DIV:
		case F_FLOAT48DIV:
		case F_FLOAT84DIV:
			return KEY_STEP_DIV;
		case F_FLOAT4PL:
			return KEY_STEP_ADD4;
		case F_FLOAT4MI:
			return KEY_STEP_SUB4;
		case F_FLOAT4MUL:
			return KEY_STEP_MUL4;
		case F_FLOAT4DIV:
			return KEY_STEP_DIV4;
		case F_FLOAT8UM:
		case F_FLOAT4UM:
			return KEY_STEP_NEG;
		case F_FLOAT8ABS:
		case F_FLOAT4ABS:
		case F_ABS_FLOAT8:
		case F_ABS_FLOAT4:
			return KEY_STEP_ABS;
		case F_FLOAT4_FLOAT8:
			return KEY_STEP_TO_FLOAT4;
		default:
			return -1;
	}
}

/* Steps that leave node's value on the stack; false if it does not compile. */
static bool
compile_node(Compiler *c, Node *node, Magnitude *m)
{
	Oid			funcid;
	List	   *args;
	Magnitude	operands[2];
	int			step;
	int			i = 0;
	ListCell   *lc;

	if (IsA(node, Const))
		return compile_const(c, (Const *) node, m);
	/* a float4 or float8 column (integer ones come in casts, below) */
	if (IsA(node, Var))
		return (((Var *) node)->vartype == FLOAT4OID || ((Var *) node)->vartype == FLOAT8OID) &&
			compile_column(c, node, m);
	if (IsA(node, FuncExpr))
	{
		funcid = ((FuncExpr *) node)->funcid;
		args = ((FuncExpr *) node)->args;
	}
	else if (IsA(node, OpExpr))
	{
		funcid = ((OpExpr *) node)->opfuncid;
		args = ((OpExpr *) node)->args;
	}
	else
		return false;
	switch (funcid)
	{
		case F_FLOAT8_INT2:
		case F_FLOAT8_INT4:
		case F_FLOAT8_INT8:
			/* exact, and for int8 rounded as float8(int8) rounds */
			return compile_column(c, linitial(args), m);
		case F_FLOAT8_FLOAT4:
		case F_FLOAT8UP:
		case F_FLOAT4UP:
			/* a float4 value is a float8 one as it stands */
			return compile_node(c, linitial(args), m);
		case F_FLOAT4_INT2:
		case F_FLOAT4_INT4:
			if (!compile_column(c, linitial(args), &operands[0]))
				return false;
			add_arithmetic(c, KEY_STEP_TO_FLOAT4, operands[0], operands[0], m);
			return true;
	}
	step = arithmetic_step(funcid);
	if (step < 0 || list_length(args) > 2)
		return false;
	foreach(lc, args)
		if (!compile_node(c, lfirst(lc), &operands[i++]))
			return false;
	add_arithmetic(c, (KeyStepKind) step, operands[0], operands[i - 1], m);
	return true;
}

/*
 * The program of a float4 or float8 expression over the table's columns
 * (an exact one from topk_rank_key.c included), or NULL when it has other
 * parts.
 */
KeyProgram *
scan_key_program_compile(Expr *expr, Index scanrelid)
{
	Compiler	c = {.scanrelid = scanrelid};
	Magnitude	m;
	KeyProgram *program;
	ListCell   *lc;
	int			i = 0;

	if (!compile_node(&c, (Node *) expr, &m))
		return NULL;
	program = palloc(sizeof(KeyProgram));
	program->nsteps = list_length(c.steps);
	program->steps = palloc(sizeof(KeyStep) * program->nsteps);
	foreach(lc, c.steps)
		program->steps[i++] = *(KeyStep *) lfirst(lc);
	program->may_raise = c.may_raise;
	program->batch = NULL;
	program->cxt = CurrentMemoryContext;
	return program;
}

/* The steps, whose columns are attribute numbers. */
const KeyStep *
scan_key_program_steps(const KeyProgram *program, int *nsteps)
{
	*nsteps = program->nsteps;
	return program->steps;
}

bool
scan_key_program_may_raise(const KeyProgram *program)
{
	return program->may_raise;
}

/* A column step's value from its Datum. */
static double
column_value(const KeyStep *step, Datum d)
{
	switch ((KeyStepKind) step->kind)
	{
		case KEY_STEP_INT2_COLUMN:
			return (double) DatumGetInt16(d);
		case KEY_STEP_INT4_COLUMN:
			return (double) DatumGetInt32(d);
		case KEY_STEP_INT8_COLUMN:
			return (double) DatumGetInt64(d);
		case KEY_STEP_FLOAT4_COLUMN:
			return (double) DatumGetFloat4(d);
		default:
			return DatumGetFloat8(d);
	}
}

/* a heap page's rows whose columns a program's column steps read (heap_column) */
typedef struct HeapColumns
{
	const KeyProgram *program;
	HeapTuple	tuples;
	TupleDesc	desc;
	/* each row's data where it has no NULLs (else NULL), and its columns */
	const char *data[MaxHeapTuplesPerPage];
	int			natts[MaxHeapTuplesPerPage];
} HeapColumns;

/* A stored value of a fixed-width column at each row's data + offset, as a double. */
#define READ_IN_PLACE(TYPE) \
	for (int j = 0; j < n; j++) \
		if (source->data[j] && s->column <= source->natts[j]) \
		{ \
			nulls[j] = false; \
			values[j] = (double) *(const TYPE *) (source->data[j] + offset); \
		} \
		else \
			in_place[j] = false

/*
 * A column step's values as doubles, and a NULL flag per row; whether any
 * is NULL (a KeyBatchColumn).  Where the column has a cached offset (fixed-width
 * columns before it), a row without NULLs holding it has its value there,
 * read in place as heap_getattr would find it; other rows go through
 * heap_getattr.
 */
static bool
heap_column(void *arg, int step, double *values, const float **floats, uint8 *nulls, int n)
{
	HeapColumns *source = arg;
	const KeyStep *s = &source->program->steps[step];
	int			offset = compat_attcacheoff(source->desc, s->column - 1);
	bool		in_place[MaxHeapTuplesPerPage];
	bool		any_null = false;

	memset(in_place, offset >= 0, n);
	if (offset >= 0)
	{
		/* a loop of each type */
		switch ((KeyStepKind) s->kind)
		{
			case KEY_STEP_INT2_COLUMN:
				READ_IN_PLACE(int16);
				break;
			case KEY_STEP_INT4_COLUMN:
				READ_IN_PLACE(int32);
				break;
			case KEY_STEP_INT8_COLUMN:
				READ_IN_PLACE(int64);
				break;
			case KEY_STEP_FLOAT4_COLUMN:
				READ_IN_PLACE(float4);
				break;
			default:
				READ_IN_PLACE(float8);
				break;
		}
	}
	for (int j = 0; j < n; j++)
		if (!in_place[j])
		{
			bool		isnull;
			Datum		d = heap_getattr(&source->tuples[j], s->column, source->desc, &isnull);

			nulls[j] = isnull;
			values[j] = isnull ? 0 : column_value(s, d);
			any_null |= isnull;
		}
	return any_null;
}

/*
 * The keys of n rows of a heap page (at most MaxHeapTuplesPerPage), each
 * null_key where the value is NULL, KEY_PROGRAM_ERROR_KEY where PostgreSQL
 * would raise an error, else the float8 value's; the program runs a step
 * at a time over all of them (key_batch.c).
 */
void
scan_key_program_keys(KeyProgram *program, HeapTuple tuples, int n, TupleDesc desc,
					  bool descending, uint64 null_key, uint64 *keys)
{
	HeapColumns source;			/* its arrays are filled below, not zeroed */
	const double *values;
	const uint8 *nulls;
	const uint8 *errors;

	Assert(n <= MaxHeapTuplesPerPage);
	if (n == 0)
		return;
	if (program->batch == NULL)
	{
		/* made where the program was, not in the run's context, which a rescan resets */
		MemoryContext old = MemoryContextSwitchTo(program->cxt);

		program->batch = key_batch_create(program->steps, program->nsteps, MaxHeapTuplesPerPage);
		MemoryContextSwitchTo(old);
	}
	source.program = program;
	source.tuples = tuples;
	source.desc = desc;
	for (int j = 0; j < n; j++)
	{
		HeapTupleHeader header = tuples[j].t_data;

		source.data[j] = HeapTupleHasNulls(&tuples[j]) ? NULL : (const char *) header + header->t_hoff;
		source.natts[j] = HeapTupleHeaderGetNatts(header);
	}
	key_batch_run(program->batch, n, program->may_raise, heap_column, &source,
				  &values, &nulls, &errors);
	for (int j = 0; j < n; j++)
		keys[j] = errors[j] ? KEY_PROGRAM_ERROR_KEY :
			nulls[j] ? null_key : key_from_float8(values[j], descending);
}
