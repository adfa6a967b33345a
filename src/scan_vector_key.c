/*-------------------------------------------------------------------------
 *
 * scan_vector_key.c
 *	  pgvector's distances as ranking keys computed without pgvector: each
 *	  row keyed by a bound on its distance to the query vector.
 *
 * The distance functions are known by the C function they call in
 * pgvector's library (pg_proc's probin and prosrc), so gputopk neither
 * links with pgvector nor needs it installed: l2_distance,
 * (negative) inner product, cosine_distance and l1_distance, over vector
 * and halfvec.  One argument is a column of the scanned table, the other
 * an expression whose value stays the same for the whole scan (a
 * constant, a parameter, an initplan's value), computed when a run
 * begins.  float8 arithmetic with finite constants around the distance
 * (1 - (emb <=> $1), say) is a key program (scan_key_program.c) run on
 * the distance: every step is monotone in it, so the program maps the
 * distance's bounds to the expression's.
 *
 * pgvector's value cannot be reproduced to the last bit (vector_bounds.h),
 * so a row's key is the bound of its value toward the front of the
 * query's order: no row's true value comes before its key.  The executor
 * takes more candidates than it needs, computes their true values with
 * pgvector's functions, and reads the table again with more where the
 * candidates do not prove that they hold the answer (topk_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"

#include "gpu_heap.h"
#include "key_steps.h"
#include "pgvector_catalog.h"
#include "scan_key_program.h"
#include "scan_vector_key.h"
#include "vector_bounds.h"

/*
 * The largest vector value a heap kernel reads: one that leaves room for
 * a tuple's header and a few other columns below the size at which
 * PostgreSQL moves values out of line.
 */
#define VECTOR_INLINE_BYTES (TOAST_TUPLE_THRESHOLD - 256)

/* pgvector's C functions of the distances */
typedef struct DistanceFunction
{
	const char *symbol;
	VectorDistanceKind kind;
	VectorElement element;
	const char *description;
} DistanceFunction;

static const DistanceFunction distance_functions[] = {
	{"l2_distance", VECTOR_DISTANCE_L2, VECTOR_ELEMENT_FLOAT4, "l2 distance over vector"},
	{"inner_product", VECTOR_DISTANCE_INNER_PRODUCT, VECTOR_ELEMENT_FLOAT4,
	"inner product over vector"},
	{"vector_negative_inner_product", VECTOR_DISTANCE_NEGATIVE_INNER_PRODUCT,
	VECTOR_ELEMENT_FLOAT4, "negative inner product over vector"},
	{"cosine_distance", VECTOR_DISTANCE_COSINE, VECTOR_ELEMENT_FLOAT4,
	"cosine distance over vector"},
	{"l1_distance", VECTOR_DISTANCE_L1, VECTOR_ELEMENT_FLOAT4, "l1 distance over vector"},
	{"halfvec_l2_distance", VECTOR_DISTANCE_L2, VECTOR_ELEMENT_HALF, "l2 distance over halfvec"},
	{"halfvec_inner_product", VECTOR_DISTANCE_INNER_PRODUCT, VECTOR_ELEMENT_HALF,
	"inner product over halfvec"},
	{"halfvec_negative_inner_product", VECTOR_DISTANCE_NEGATIVE_INNER_PRODUCT,
	VECTOR_ELEMENT_HALF, "negative inner product over halfvec"},
	{"halfvec_cosine_distance", VECTOR_DISTANCE_COSINE, VECTOR_ELEMENT_HALF,
	"cosine distance over halfvec"},
	{"halfvec_l1_distance", VECTOR_DISTANCE_L1, VECTOR_ELEMENT_HALF, "l1 distance over halfvec"},
};

struct VectorKey
{
	const DistanceFunction *function;
	AttrNumber	attno;			/* the vector column */
	ExprState  *query_expr;		/* the query vector */
	/*
	 * what a row's key is computed with: the distance, the arithmetic around
	 * it (its one column step the distance), the order, and the run's query
	 * vector (its elements as floats, its dimensions and norm)
	 */
	VectorKeySpec spec;
	double	   *stack;			/* the steps' stack and its NULL flags */
	bool	   *nulls;
	bool		query_null;		/* the run's query vector is NULL */
	MemoryContext cxt;			/* the query's, as long as the scan */
	MemoryContext rows_cxt;		/* a row's detoasted vector */
};

/* The distance function that funcid calls in pgvector's library, or NULL. */
static const DistanceFunction *
distance_function(Oid funcid)
{
	char	   *symbol = pgvector_symbol(funcid);

	if (symbol != NULL)
		for (int i = 0; i < lengthof(distance_functions); i++)
			if (strcmp(symbol, distance_functions[i].symbol) == 0)
				return &distance_functions[i];
	return NULL;
}

/* A node's function and arguments, where it calls one. */
static bool
call_of(Node *node, Oid *funcid, List **args)
{
	if (IsA(node, FuncExpr))
	{
		*funcid = ((FuncExpr *) node)->funcid;
		*args = ((FuncExpr *) node)->args;
		return true;
	}
	if (IsA(node, OpExpr))
	{
		*funcid = ((OpExpr *) node)->opfuncid;
		*args = ((OpExpr *) node)->args;
		return true;
	}
	return false;
}

/* A column of the scanned table. */
static bool
is_column(Node *node, Index scanrelid)
{
	Var		   *var = (Var *) node;

	return IsA(node, Var) && var->varno == scanrelid && var->varlevelsup == 0 &&
		var->varattno > 0;
}

/* Whether node's value is the same for every row of a scan. */
static bool
is_run_constant(Node *node)
{
	return !contain_vars_of_level(node, 0) && !contain_volatile_functions(node) &&
		!contain_subplans(node);
}

/*
 * Whether node is a distance of pgvector's between a column and a run
 * constant; *column and *query are its arguments.
 */
static const DistanceFunction *
distance_of(Node *node, Index scanrelid, Var **column, Expr **query)
{
	const DistanceFunction *function;
	Oid			funcid;
	List	   *args;

	if (!call_of(node, &funcid, &args) || list_length(args) != 2 ||
		exprType(node) != FLOAT8OID)
		return NULL;
	for (int i = 0; i < 2; i++)
	{
		Node	   *col = list_nth(args, i);
		Node	   *other = list_nth(args, 1 - i);

		if (is_column(col, scanrelid) && exprType(other) == exprType(col) &&
			is_run_constant(other) && (function = distance_function(funcid)) != NULL)
		{
			*column = (Var *) col;
			*query = (Expr *) other;
			return function;
		}
	}
	return NULL;
}

/*
 * Whether the value of the float8 function funcid is monotone in argument
 * i where the other is a constant: +, -, * and unary minus, and / by a
 * constant (a quotient of a constant is not monotone across zero).
 */
static bool
monotone_in(Oid funcid, int i)
{
	switch (funcid)
	{
		case F_FLOAT8PL:
		case F_FLOAT8MI:
		case F_FLOAT8MUL:
		case F_FLOAT8UM:
		case F_FLOAT8UP:
			return true;
		case F_FLOAT8DIV:
			return i == 0;
		default:
			return false;
	}
}

/*
 * The expression with the distance in it replaced by a float8 column
 * (the vector column's number): a key program compiles that, its column
 * step then being the distance.  NULL where the arithmetic around the
 * distance is not monotone arithmetic with finite constants.
 */
static Expr *
with_distance_as_column(Node *node, Index scanrelid, const DistanceFunction **function,
						Var **column, Expr **query)
{
	Oid			funcid;
	List	   *args;
	List	   *new_args = NIL;
	int			found = -1;
	Node	   *copy;

	if ((*function = distance_of(node, scanrelid, column, query)) != NULL)
		return (Expr *) makeVar(scanrelid, (*column)->varattno, FLOAT8OID, -1, InvalidOid, 0);
	if (!call_of(node, &funcid, &args))
		return NULL;
	for (int i = 0; i < list_length(args); i++)
	{
		Node	   *arg = list_nth(args, i);
		Expr	   *replaced;

		if (IsA(arg, Const))
		{
			Const	   *k = (Const *) arg;

			if (k->constisnull || k->consttype != FLOAT8OID ||
				!isfinite(DatumGetFloat8(k->constvalue)))
				return NULL;
			new_args = lappend(new_args, arg);
			continue;
		}
		if (found >= 0 || !monotone_in(funcid, i))
			return NULL;
		replaced = with_distance_as_column(arg, scanrelid, function, column, query);
		if (replaced == NULL)
			return NULL;
		found = i;
		new_args = lappend(new_args, replaced);
	}
	if (found < 0)
		return NULL;
	copy = copyObject(node);
	if (IsA(copy, FuncExpr))
		((FuncExpr *) copy)->args = new_args;
	else
		((OpExpr *) copy)->args = new_args;
	return (Expr *) copy;
}

/* The program of expr around its distance, or NULL where it does not compile. */
static KeyProgram *
compile(Expr *expr, Index scanrelid, const DistanceFunction **function, Var **column,
		Expr **query)
{
	Expr	   *around;

	if (exprType((Node *) expr) != FLOAT8OID)
		return NULL;
	around = with_distance_as_column((Node *) expr, scanrelid, function, column, query);
	return around ? scan_key_program_compile(around, scanrelid) : NULL;
}

bool
scan_vector_key_compiles(Expr *expr, Index scanrelid)
{
	const DistanceFunction *function;
	Var		   *column;
	Expr	   *query;

	return compile(expr, scanrelid, &function, &column, &query) != NULL;
}

VectorKey *
scan_vector_key_create(Expr *expr, Index scanrelid, bool descending, PlanState *parent)
{
	VectorKey  *key = palloc0(sizeof(VectorKey));
	Var		   *column;
	Expr	   *query;
	KeyProgram *program = compile(expr, scanrelid, &key->function, &column, &query);

	Assert(program != NULL);
	key->spec.kind = key->function->kind;
	key->spec.element = key->function->element;
	key->spec.steps = scan_key_program_steps(program, &key->spec.nsteps);
	key->spec.desc = descending;
	key->stack = palloc(sizeof(double) * key->spec.nsteps);
	key->nulls = palloc(sizeof(bool) * key->spec.nsteps);
	key->attno = column->varattno;
	key->query_expr = ExecInitExpr(query, parent);
	key->cxt = CurrentMemoryContext;
	key->rows_cxt = AllocSetContextCreate(CurrentMemoryContext, "gputopk vector row",
										  ALLOCSET_DEFAULT_SIZES);
	return key;
}

/* A pgvector value's elements (as stored) as floats. */
static float *
elements_as_floats(VectorElement element, const char *x, int dims)
{
	float	   *floats = palloc(sizeof(float) * Max(dims, 1));

	for (int i = 0; i < dims; i++)
		floats[i] = vector_element(element, (const unsigned char *) x, i);
	return floats;
}

/*
 * A pgvector value's data: its dimensions, an unused int16, then its
 * elements (detoasted, once, into the current context).
 */
static const unsigned char *
vector_data(Datum d)
{
	struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(d));

	return (const unsigned char *) VARDATA_ANY(v);
}

void
scan_vector_key_bind(VectorKey *key, ExprContext *econtext)
{
	VectorKeySpec *spec = &key->spec;
	Datum		d = ExecEvalExprSwitchContext(key->query_expr, econtext, &key->query_null);
	MemoryContext old;
	const unsigned char *data;
	int16		dims;

	if (spec->query)
		pfree((float *) spec->query);
	spec->query = NULL;
	spec->query_norm = 0.0;
	spec->dims = 0;
	if (key->query_null)
		return;
	/* detoasted with the value, in the expression's memory */
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	data = vector_data(d);
	memcpy(&dims, data, sizeof(dims));
	MemoryContextSwitchTo(key->cxt);
	spec->query = elements_as_floats(spec->element, (const char *) data + PGVECTOR_HEADER_BYTES,
									 dims);
	MemoryContextSwitchTo(old);
	spec->dims = dims;
	for (int i = 0; i < dims; i++)
		spec->query_norm += (double) spec->query[i] * spec->query[i];
}

void
scan_vector_key_keys(VectorKey *key, HeapTuple tuples, int n, TupleDesc desc,
					 uint64 null_key, uint64 *keys)
{
	MemoryContext old = MemoryContextSwitchTo(key->rows_cxt);

	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d = heap_getattr(&tuples[i], key->attno, desc, &isnull);

		/* a row's detoasted value at a time: its memory block is used again */
		MemoryContextReset(key->rows_cxt);
		keys[i] = isnull || key->query_null ? null_key :
			vector_data_key(&key->spec, vector_data(d), key->stack, key->nulls);
	}
	MemoryContextSwitchTo(old);
}

/* Whether a kernel reads a vector column of the function's element in place. */
static bool
gpu_column(const DistanceFunction *function, AttrNumber attno, TupleDesc desc)
{
	Form_pg_attribute attr;

	if (attno > Min(desc->natts, GPU_HEAP_MAX_ATTRS))
		return false;
	attr = TupleDescAttr(desc, attno - 1);
	/* pgvector's typmod is the dimensions */
	return !attr->atthasmissing && !attr->attisdropped && attr->atttypmod > 0 &&
		attr->atttypmod <= GPU_PROGRAM_MAX_VECTOR_DIMS &&
		pgvector_value_bytes(function->element, attr->atttypmod) <= VECTOR_INLINE_BYTES;
}

bool
scan_vector_key_gpu_column(const VectorKey *key, TupleDesc desc)
{
	return gpu_column(key->function, key->attno, desc);
}

bool
scan_vector_key_gpu_readable(Expr *expr, Index scanrelid, TupleDesc desc)
{
	const DistanceFunction *function;
	Var		   *column;
	Expr	   *query;

	return compile(expr, scanrelid, &function, &column, &query) != NULL &&
		gpu_column(function, column->varattno, desc);
}

const VectorKeySpec *
scan_vector_key_spec(const VectorKey *key)
{
	return &key->spec;
}

bool
scan_vector_key_query_null(const VectorKey *key)
{
	return key->query_null;
}

AttrNumber
scan_vector_key_column(const VectorKey *key)
{
	return key->attno;
}

const char *
scan_vector_key_describe(const VectorKey *key)
{
	return key->function->description;
}
