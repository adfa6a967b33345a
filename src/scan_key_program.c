/*-------------------------------------------------------------------------
 *
 * scan_key_program.c
 *	  Ranking expressions that float8 computes exactly (topk_rank_key.c:
 *	  numeric +, - and * over int2 and int4 columns and constants), compiled
 *	  into a program that a row is keyed with without PostgreSQL's
 *	  expression interpreter.
 *
 * The program is a postfix list of steps over a stack of doubles: push a
 * column (converted as int2 or int4 to float8) or a constant, add,
 * subtract, multiply, negate.  topk_rank_key.c has shown that no step
 * rounds or overflows, so the C arithmetic gives the interpreter's values
 * exactly; a NULL column makes the value NULL, as the strict operators do.  Like the
 * filter program it is plain data a device could run as well.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"

#include "scan_key_program.h"

struct KeyProgram
{
	int			nsteps;
	KeyStep    *steps;
	double	   *stack;
};

static void
add_step(List **steps, KeyStepKind kind, AttrNumber attno, double value)
{
	KeyStep    *step = palloc(sizeof(KeyStep));

	step->kind = kind;
	step->column = attno;
	step->value = value;
	*steps = lappend(*steps, step);
}

/* Steps that leave expr's value on the stack; false if it does not compile. */
static bool
compile_node(Node *node, Index scanrelid, List **steps)
{
	if (IsA(node, Const) && ((Const *) node)->consttype == FLOAT8OID &&
		!((Const *) node)->constisnull)
	{
		add_step(steps, KEY_STEP_CONST, 0, DatumGetFloat8(((Const *) node)->constvalue));
		return true;
	}
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;
		Var		   *var = linitial(f->args);
		ListCell   *lc;

		switch (f->funcid)
		{
			case F_FLOAT8_INT2:
			case F_FLOAT8_INT4:
				if (!IsA(var, Var) || var->varno != scanrelid || var->varlevelsup != 0 ||
					var->varattno <= 0)
					return false;
				add_step(steps, f->funcid == F_FLOAT8_INT2 ? KEY_STEP_INT2_COLUMN :
						 KEY_STEP_INT4_COLUMN, var->varattno, 0);
				return true;
			case F_FLOAT8PL:
			case F_FLOAT8MI:
			case F_FLOAT8MUL:
			case F_FLOAT8UM:
				foreach(lc, f->args)
					if (!compile_node(lfirst(lc), scanrelid, steps))
						return false;
				add_step(steps, f->funcid == F_FLOAT8PL ? KEY_STEP_ADD :
						 f->funcid == F_FLOAT8MI ? KEY_STEP_SUB :
						 f->funcid == F_FLOAT8MUL ? KEY_STEP_MUL : KEY_STEP_NEG, 0, 0);
				return true;
		}
	}
	return false;
}

/*
 * The program of an exact float8 expression from topk_rank_key.c over the
 * table's columns, or NULL when it has other parts.
 */
KeyProgram *
scan_key_program_compile(Expr *expr, Index scanrelid)
{
	List	   *steps = NIL;
	KeyProgram *program;
	ListCell   *lc;
	int			i = 0;

	if (!compile_node((Node *) expr, scanrelid, &steps))
		return NULL;
	program = palloc(sizeof(KeyProgram));
	program->nsteps = list_length(steps);
	program->steps = palloc(sizeof(KeyStep) * program->nsteps);
	foreach(lc, steps)
		program->steps[i++] = *(KeyStep *) lfirst(lc);
	program->stack = palloc(sizeof(double) * program->nsteps);
	return program;
}

/* The steps, whose columns are attribute numbers. */
const KeyStep *
scan_key_program_steps(const KeyProgram *program, int *nsteps)
{
	*nsteps = program->nsteps;
	return program->steps;
}

/* The value on a row; false when it is NULL. */
bool
scan_key_program_eval(const KeyProgram *program, HeapTuple tuple, TupleDesc desc, double *value)
{
	double	   *stack = program->stack;
	int			top = 0;

	for (int i = 0; i < program->nsteps; i++)
	{
		const KeyStep *step = &program->steps[i];
		bool		isnull;
		Datum		d;

		if (!key_step_is_column(step))
		{
			key_step_apply(step, stack, &top);
			continue;
		}
		d = heap_getattr(tuple, step->column, desc, &isnull);
		if (isnull)
			return false;
		stack[top++] = step->kind == KEY_STEP_INT2_COLUMN ?
			(double) DatumGetInt16(d) : (double) DatumGetInt32(d);
	}
	*value = stack[0];
	return true;
}
