/*-------------------------------------------------------------------------
 *
 * scan_filter_program.c
 *	  The WHERE clauses of a custom scan (GpuTopK or GpuTopKAgg) that have
 *	  a simple form, compiled into a program that a row is checked with
 *	  without PostgreSQL's expression interpreter.
 *
 * A clause compiles when it is built from comparisons of columns (or casts
 * of them that cannot fail) and run constants, IN lists (= ANY, <> ALL), IS [NOT] NULL, boolean columns,
 * IS [NOT] TRUE/FALSE/UNKNOWN, AND, OR and NOT, over int2, int4, int8,
 * float4, float8, date, timestamp, timestamptz and boolean values.  A run
 * constant is an expression without columns, volatile functions or
 * subplans: a constant, a parameter, or something like now() - interval
 * '1 day'; it is evaluated once per run.  A comparison compiles only when
 * its operator is a member of the btree operator family of its operands'
 * types (or the negator of its equality), so it means what the index
 * order means.  Values are compared as the top-k engine's order-preserving
 * keys (keys.h), which give exactly those operators' answers: NaN equals
 * NaN and is above every number, -0 equals +0, and integers (and floats)
 * of different widths compare by value.
 *
 * Text and varchar columns compile too, in = and <> comparisons and IN
 * lists under a deterministic collation, where equality is equality of
 * bytes.  Over a column index's entries (scan_filter_program_compile_coded),
 * with any run constants: the entries hold the values' dictionary codes,
 * and a run constant becomes its code when the run starts.  Over heap
 * tuples, with constants (not parameters) of at most
 * FILTER_TEXT_KEY_BYTES bytes: a value's key is then its bytes, or one key
 * for every longer value, which equals no constant's (filter_steps.h).
 *
 * The program is a postfix list of steps over SQL's three truth values, so
 * NULLs behave as in the interpreter; it is plain data (registers, steps,
 * sorted value sets) that a device could run as well.  Clauses that do not
 * compile are left to the interpreter, and a row qualifies when both
 * accept it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type_d.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "lib/qunique.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "compat.h"
#include "filter_steps.h"
#include "keys.h"
#include "scan_filter_program.h"


/* values that compare with each other */
typedef enum ValueDomain
{
	DOMAIN_NONE,
	DOMAIN_INTEGER,
	DOMAIN_FLOAT,
	DOMAIN_DATE,
	DOMAIN_TIMESTAMP,
	DOMAIN_TIMESTAMPTZ,
	DOMAIN_BOOL,
	DOMAIN_TEXT					/* equality only: codes, or short values' bytes */
} ValueDomain;

/* a run constant: a value for a register, or an array for a value set */
typedef struct RunConstant
{
	ExprState  *expr;
	Oid			type;			/* of the value, or of the array's elements */
	bool		is_set;
	int			target;			/* register, or value set */
} RunConstant;

struct FilterProgram
{
	List	   *clauses;		/* the clauses compiled */
	int			ncolumns;
	FilterColumnLoad *columns;
	int			nconstants;
	RunConstant *constants;
	int			nsteps;
	FilterStep *steps;
	int			nregisters;
	FilterRegister *registers;
	int			nsets;
	FilterValueSet *sets;
	FilterTruth *stack;
	MemoryContext sets_cxt;		/* the value sets of the current run */
	FilterTextCodes codes;		/* of a coded program */
};

/* the program while it is compiled, clause by clause */
typedef struct Builder
{
	Index		scanrelid;
	PlanState  *parent;			/* NULL: only find out whether clauses compile */
	List	   *columns;		/* FilterColumnLoad * */
	List	   *constants;		/* RunConstant * */
	List	   *steps;			/* FilterStep * */
	int			nregisters;
	int			nsets;
	bool		coded;			/* text columns hold dictionary codes */
} Builder;

static bool compile_node(Builder *b, Node *node);

static ValueDomain
domain_of(Oid type)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return DOMAIN_INTEGER;
		case FLOAT4OID:
		case FLOAT8OID:
			return DOMAIN_FLOAT;
		case DATEOID:
			return DOMAIN_DATE;
		case TIMESTAMPOID:
			return DOMAIN_TIMESTAMP;
		case TIMESTAMPTZOID:
			return DOMAIN_TIMESTAMPTZ;
		case BOOLOID:
			return DOMAIN_BOOL;
		case TEXTOID:
		case VARCHAROID:
			return DOMAIN_TEXT;
		default:
			return DOMAIN_NONE;
	}
}

/* The key of a value of a type with a domain; keys of one domain compare as the values do. */
static uint64
encode(Oid type, Datum d)
{
	switch (type)
	{
		case INT2OID:
			return key_from_int64(DatumGetInt16(d), true);
		case INT4OID:
			return key_from_int64(DatumGetInt32(d), true);
		case INT8OID:
			return key_from_int64(DatumGetInt64(d), true);
		case FLOAT4OID:
			return key_from_float8(DatumGetFloat4(d), true);
		case FLOAT8OID:
			return key_from_float8(DatumGetFloat8(d), true);
		case DATEOID:
			return key_from_int64(DatumGetDateADT(d), true);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return key_from_int64(DatumGetTimestamp(d), true);
		case BOOLOID:
			return DatumGetBool(d) ? 1 : 0;
		case TEXTOID:
		case VARCHAROID:
			{
				struct varlena *text;

				/* a long value's key, without reading a compressed or moved value */
				if (toast_raw_datum_size(d) - VARHDRSZ > FILTER_TEXT_KEY_BYTES)
					return FILTER_TEXT_KEY_LONG;
				text = PG_DETOAST_DATUM_PACKED(d);
				return filter_text_key((const uint8_t *) VARDATA_ANY(text),
									   VARSIZE_ANY_EXHDR(text));
			}
	}
	pg_unreachable();
}

/*
 * The key of an integer column's value cast to float8, as C and
 * PostgreSQL's casts convert it.  (Casts within a domain keep the key.)
 */
static uint64
encode_as_float8(Oid type, Datum d)
{
	int64		v = type == INT2OID ? DatumGetInt16(d) :
		type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);

	return key_from_float8((double) v, true);
}

static void
add_step(Builder *b, FilterStepKind kind, int arg, int left, int right)
{
	FilterStep *step = palloc(sizeof(FilterStep));

	step->kind = kind;
	step->arg = arg;
	step->left = left;
	step->right = right;
	b->steps = lappend(b->steps, step);
}

/*
 * The register of a column of the scanned table as as_type (its own type
 * or a cast's), added when first used.
 */
static int
column_register(Builder *b, Var *var, Oid as_type, bool value_needed)
{
	bool		to_float8 = domain_of(var->vartype) == DOMAIN_INTEGER &&
		domain_of(as_type) == DOMAIN_FLOAT;
	FilterColumnLoad *load;
	ListCell   *lc;

	foreach(lc, b->columns)
	{
		load = lfirst(lc);
		if (load->attno == var->varattno && load->to_float8 == to_float8)
		{
			load->value_needed |= value_needed;
			return load->reg;
		}
	}
	load = palloc(sizeof(FilterColumnLoad));
	load->attno = var->varattno;
	load->type = var->vartype;
	load->to_float8 = to_float8;
	load->value_needed = value_needed;
	load->reg = b->nregisters++;
	b->columns = lappend(b->columns, load);
	return load->reg;
}

static bool
is_column(Builder *b, Node *node)
{
	Var		   *var = (Var *) node;

	return IsA(node, Var) && var->varno == b->scanrelid &&
		var->varlevelsup == 0 && var->varattno > 0;
}

/* Whether an expression has one value for the whole run. */
static bool
is_run_constant(Node *node)
{
	return !contain_var_clause(node) && !contain_volatile_functions(node) &&
		!contain_subplans(node);
}

static void
add_constant(Builder *b, Node *expr, Oid type, bool is_set, int target)
{
	RunConstant *c = palloc(sizeof(RunConstant));

	c->expr = b->parent ? ExecInitExpr((Expr *) expr, b->parent) : NULL;
	c->type = type;
	c->is_set = is_set;
	c->target = target;
	b->constants = lappend(b->constants, c);
}

/*
 * Whether node is a cast of a column that never fails: to a wider integer,
 * float4 to float8, or an integer to float8.
 */
static bool
is_cast_column(Builder *b, Node *node)
{
	FuncExpr   *f = (FuncExpr *) node;

	if (!IsA(node, FuncExpr) || list_length(f->args) != 1 || !is_column(b, linitial(f->args)))
		return false;
	switch (f->funcid)
	{
		case F_INT4_INT2:
		case F_INT8_INT2:
		case F_INT8_INT4:
		case F_FLOAT8_FLOAT4:
		case F_FLOAT8_INT2:
		case F_FLOAT8_INT4:
		case F_FLOAT8_INT8:
			return true;
		default:
			return false;
	}
}

/* Whether a text value has a key of its own outside a coded program (filter_text_key). */
static bool
is_short_text(Datum d)
{
	return VARSIZE_ANY_EXHDR(PG_DETOAST_DATUM_PACKED(d)) <= FILTER_TEXT_KEY_BYTES;
}

/*
 * Whether a run constant of text (an array of it for a set) compiles: any
 * in a coded program, otherwise a constant whose values are short.
 */
static bool
text_constant_compiles(Builder *b, Node *node, bool is_set)
{
	Const	   *c = (Const *) node;
	ArrayIterator it;
	Datum		d;
	bool		isnull;
	bool		all_short = true;

	if (b->coded)
		return true;
	if (!IsA(node, Const))
		return false;
	if (c->constisnull)
		return true;
	if (!is_set)
		return is_short_text(c->constvalue);
	it = array_create_iterator(DatumGetArrayTypeP(c->constvalue), 0, NULL);
	while (all_short && array_iterate(it, &d, &isnull))
		all_short = isnull || is_short_text(d);
	array_free_iterator(it);
	return all_short;
}

/*
 * A column (maybe cast) or a run constant of a type with a domain, in a
 * register; a varchar column read as text as it is.
 */
static bool
compile_operand(Builder *b, Node *node, ValueDomain *domain, int *reg)
{
	Oid			type = exprType(node);

	*domain = domain_of(type);
	if (*domain == DOMAIN_NONE)
		return false;
	if (*domain == DOMAIN_TEXT && IsA(node, RelabelType) &&
		is_column(b, (Node *) ((RelabelType *) node)->arg))
		node = (Node *) ((RelabelType *) node)->arg;
	if (is_column(b, node))
		*reg = column_register(b, (Var *) node, type, true);
	else if (is_cast_column(b, node))
		*reg = column_register(b, linitial(((FuncExpr *) node)->args), type, true);
	else if (is_run_constant(node) &&
			 (*domain != DOMAIN_TEXT || text_constant_compiles(b, node, false)))
	{
		*reg = b->nregisters++;
		add_constant(b, node, type, false, *reg);
	}
	else
		return false;
	return true;
}

/*
 * What an operator over values of these types means in their btree
 * operator family, or -1 when it is not one of its comparisons.
 */
static int
comparison_of(Oid opno, Oid lefttype, Oid righttype)
{
	Oid			family = lookup_type_cache(lefttype, TYPECACHE_BTREE_OPFAMILY)->btree_opf;
	Oid			negator;
	Oid			oprleft;
	Oid			oprright;

	if (!OidIsValid(family))
		return -1;
	op_input_types(opno, &oprleft, &oprright);
	if (oprleft != lefttype || oprright != righttype)
		return -1;
	switch (get_op_opfamily_strategy(opno, family))
	{
		case BTLessStrategyNumber:
			return CMP_LT;
		case BTLessEqualStrategyNumber:
			return CMP_LE;
		case BTEqualStrategyNumber:
			return CMP_EQ;
		case BTGreaterEqualStrategyNumber:
			return CMP_GE;
		case BTGreaterStrategyNumber:
			return CMP_GT;
	}
	negator = get_negator(opno);
	if (OidIsValid(negator) &&
		get_op_opfamily_strategy(negator, family) == BTEqualStrategyNumber)
		return CMP_NE;
	return -1;
}

/* Whether dictionary codes decide a comparison of text: = or <>, equality of bytes. */
static bool
codes_decide(int cmp, Oid collation)
{
	return (cmp == CMP_EQ || cmp == CMP_NE) && OidIsValid(collation) &&
		get_collation_isdeterministic(collation);
}

static bool
compile_comparison(Builder *b, OpExpr *op)
{
	Node	   *left;
	Node	   *right;
	ValueDomain left_domain;
	ValueDomain right_domain;
	int			left_reg;
	int			right_reg;
	int			cmp;

	if (list_length(op->args) != 2)
		return false;
	left = linitial(op->args);
	right = lsecond(op->args);
	cmp = comparison_of(op->opno, exprType(left), exprType(right));
	/* outside a coded program, long text values share a key: one side must be a constant */
	if (cmp < 0 ||
		(domain_of(exprType(left)) == DOMAIN_TEXT && !b->coded &&
		 !is_run_constant(left) && !is_run_constant(right)) ||
		!compile_operand(b, left, &left_domain, &left_reg) ||
		!compile_operand(b, right, &right_domain, &right_reg) ||
		left_domain != right_domain ||
		(left_domain == DOMAIN_TEXT && !codes_decide(cmp, op->inputcollid)))
		return false;
	add_step(b, STEP_COMPARE, cmp, left_reg, right_reg);
	return true;
}

/* x = ANY (array) and x <> ALL (array), the array a run constant */
static bool
compile_in_list(Builder *b, ScalarArrayOpExpr *saop)
{
	Node	   *left = linitial(saop->args);
	Node	   *array = lsecond(saop->args);
	Oid			elemtype = get_element_type(exprType(array));
	ValueDomain domain;
	int			reg;
	int			cmp;

	if (!OidIsValid(elemtype) || domain_of(elemtype) == DOMAIN_NONE ||
		!is_run_constant(array) ||
		(domain_of(elemtype) == DOMAIN_TEXT && !text_constant_compiles(b, array, true)))
		return false;
	cmp = comparison_of(saop->opno, exprType(left), elemtype);
	if (!(saop->useOr ? cmp == CMP_EQ : cmp == CMP_NE) ||
		!compile_operand(b, left, &domain, &reg) || domain != domain_of(elemtype) ||
		(domain == DOMAIN_TEXT && !codes_decide(cmp, saop->inputcollid)))
		return false;
	add_constant(b, array, elemtype, true, b->nsets);
	add_step(b, STEP_IN, !saop->useOr, reg, b->nsets++);
	return true;
}

/* Steps that leave one truth value for node; false if it does not compile. */
static bool
compile_node(Builder *b, Node *node)
{
	switch (nodeTag(node))
	{
		case T_OpExpr:
			return compile_comparison(b, (OpExpr *) node);
		case T_ScalarArrayOpExpr:
			return compile_in_list(b, (ScalarArrayOpExpr *) node);
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				if (nt->argisrow || !is_column(b, (Node *) nt->arg) ||
					type_is_rowtype(exprType((Node *) nt->arg)))
					return false;
				add_step(b, STEP_IS_NULL, nt->nulltesttype == IS_NOT_NULL,
						 column_register(b, (Var *) nt->arg, exprType((Node *) nt->arg), false), 0);
				return true;
			}
		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;

				if (!compile_node(b, (Node *) bt->arg))
					return false;
				StaticAssertStmt(IS_NOT_UNKNOWN == (int) TEST_IS_NOT_UNKNOWN &&
								 IS_TRUE == (int) TEST_IS_TRUE,
								 "FilterBoolTest follows BoolTestType");
				add_step(b, STEP_BOOL_TEST, bt->booltesttype, 0, 0);
				return true;
			}
		case T_Var:
			if (!is_column(b, node) || exprType(node) != BOOLOID)
				return false;
			add_step(b, STEP_TRUTH, 0, column_register(b, (Var *) node, BOOLOID, true), 0);
			return true;
		case T_BoolExpr:
			{
				BoolExpr   *be = (BoolExpr *) node;
				ListCell   *lc;

				foreach(lc, be->args)
					if (!compile_node(b, lfirst(lc)))
						return false;
				if (be->boolop == NOT_EXPR)
					add_step(b, STEP_NOT, 0, 0, 0);
				else
					add_step(b, be->boolop == AND_EXPR ? STEP_AND : STEP_OR,
							 list_length(be->args), 0, 0);
				return true;
			}
		default:
			return false;
	}
}

/*
 * Compile those of the (implicitly ANDed) clauses that can be; the others
 * go to *rest.  NULL when none can.  codes: how text becomes codes, in a
 * program over a column index's entries, or NULL.
 */
static FilterProgram *
compile(List *clauses, Index scanrelid, PlanState *parent, const FilterTextCodes *codes,
		List **rest)
{
	Builder		b = {.scanrelid = scanrelid,.parent = parent,.coded = codes != NULL};
	List	   *compiled = NIL;
	FilterProgram *program;
	ListCell   *lc;
	int			i;

	*rest = NIL;
	foreach(lc, clauses)
	{
		int			ncolumns = list_length(b.columns);
		int			nconstants = list_length(b.constants);
		int			nsteps = list_length(b.steps);
		int			nregisters = b.nregisters;
		int			nsets = b.nsets;

		if (compile_node(&b, lfirst(lc)))
		{
			compiled = lappend(compiled, lfirst(lc));
			continue;
		}
		/* forget the clause's part; a column it shared only widens its load */
		b.columns = list_truncate(b.columns, ncolumns);
		b.constants = list_truncate(b.constants, nconstants);
		b.steps = list_truncate(b.steps, nsteps);
		b.nregisters = nregisters;
		b.nsets = nsets;
		*rest = lappend(*rest, lfirst(lc));
	}
	if (compiled == NIL)
		return NULL;
	add_step(&b, STEP_AND, list_length(compiled), 0, 0);

	program = palloc0(sizeof(FilterProgram));
	program->clauses = compiled;
	program->ncolumns = list_length(b.columns);
	program->columns = palloc(sizeof(FilterColumnLoad) * program->ncolumns);
	i = 0;
	foreach(lc, b.columns)
		program->columns[i++] = *(FilterColumnLoad *) lfirst(lc);
	program->nconstants = list_length(b.constants);
	program->constants = palloc(sizeof(RunConstant) * Max(program->nconstants, 1));
	i = 0;
	foreach(lc, b.constants)
		program->constants[i++] = *(RunConstant *) lfirst(lc);
	program->nsteps = list_length(b.steps);
	program->steps = palloc(sizeof(FilterStep) * program->nsteps);
	i = 0;
	foreach(lc, b.steps)
		program->steps[i++] = *(FilterStep *) lfirst(lc);
	program->nregisters = b.nregisters;
	program->registers = palloc0(sizeof(FilterRegister) * Max(b.nregisters, 1));
	program->nsets = b.nsets;
	program->sets = palloc0(sizeof(FilterValueSet) * Max(b.nsets, 1));
	program->stack = palloc(sizeof(FilterTruth) * program->nsteps);
	program->sets_cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuTopK filter sets",
											  ALLOCSET_SMALL_SIZES);
	if (codes)
		program->codes = *codes;
	return program;
}

FilterProgram *
scan_filter_program_compile(List *clauses, Index scanrelid, PlanState *parent, List **rest)
{
	return compile(clauses, scanrelid, parent, NULL, rest);
}

/* A program over a column index's entries, whose text columns hold codes. */
FilterProgram *
scan_filter_program_compile_coded(List *clauses, Index scanrelid, PlanState *parent,
								  const FilterTextCodes *codes, List **rest)
{
	return compile(clauses, scanrelid, parent, codes, rest);
}

/* Whether a clause compiles: for the planner, which costs it less. */
bool
scan_filter_program_compiles(Node *clause, Index scanrelid)
{
	Builder		b = {.scanrelid = scanrelid};

	return compile_node(&b, clause);
}

/* Whether a clause compiles into a program over a column index's entries. */
bool
scan_filter_program_compiles_coded(Node *clause, Index scanrelid)
{
	Builder		b = {.scanrelid = scanrelid,.coded = true};

	return compile_node(&b, clause);
}

/*
 * EXPLAIN's "Compiled Filter" line: the clauses the program checks,
 * prefixed as EXPLAIN prefixes the Filter line.
 */
void
scan_filter_program_explain(FilterProgram *program, const char *label, List *deparse_context,
							ExplainState *es)
{
	ExplainPropertyText(label,
						deparse_expression((Node *) make_ands_explicit(program->clauses),
										   deparse_context, es->verbose, false),
						es);
}

/* The key of a run constant's value: in a coded program a text value's is its code's. */
static uint64
encode_run_value(const FilterProgram *program, Oid type, Datum d)
{
	struct varlena *text;
	int32		code;

	if (domain_of(type) != DOMAIN_TEXT || program->codes.code == NULL)
		return encode(type, d);
	text = PG_DETOAST_DATUM_PACKED(d);
	code = program->codes.code(program->codes.arg, VARDATA_ANY(text), VARSIZE_ANY_EXHDR(text));
	return encode(INT4OID, Int32GetDatum(code));
}

/* An array's elements as a value set (in the program's sets context). */
static void
build_set(const FilterProgram *program, FilterValueSet *set, Oid elemtype, Datum array,
		  bool isnull)
{
	uint64	   *values;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nitems;
	int			n = 0;

	memset(set, 0, sizeof(FilterValueSet));
	set->isnull = isnull;
	if (isnull)
		return;
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(DatumGetArrayTypeP(array), elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &nitems);
	values = palloc(sizeof(uint64) * Max(nitems, 1));
	for (int i = 0; i < nitems; i++)
	{
		if (nulls[i])
			set->has_null = true;
		else
			values[n++] = encode_run_value(program, elemtype, elems[i]);
	}
	qsort(values, n, sizeof(uint64), key_compare_u64);
	set->nvalues = qunique(values, n, sizeof(uint64), key_compare_u64);
	set->values = values;
}

/* The program's parts, for a device that runs it; run constants as last bound. */
void
scan_filter_program_parts(const FilterProgram *program, FilterProgramParts *parts)
{
	parts->nloads = program->ncolumns;
	parts->loads = program->columns;
	parts->nregisters = program->nregisters;
	parts->registers = program->registers;
	parts->nsteps = program->nsteps;
	parts->steps = program->steps;
	parts->nsets = program->nsets;
	parts->sets = program->sets;
}

/* Evaluate the run constants: before each run, as parameters may change. */
void
scan_filter_program_bind(FilterProgram *program, ExprContext *econtext)
{
	MemoryContextReset(program->sets_cxt);
	for (int i = 0; i < program->nconstants; i++)
	{
		RunConstant *c = &program->constants[i];
		bool		isnull;
		Datum		d = ExecEvalExprSwitchContext(c->expr, econtext, &isnull);

		if (c->is_set)
		{
			MemoryContext old = MemoryContextSwitchTo(program->sets_cxt);

			build_set(program, &program->sets[c->target], c->type, d, isnull);
			MemoryContextSwitchTo(old);
		}
		else
		{
			program->registers[c->target].isnull = isnull;
			if (!isnull)
				program->registers[c->target].value = encode_run_value(program, c->type, d);
		}
	}
	ResetExprContext(econtext);
}

/* A column's value into its register. */
static inline void
load_column(const FilterColumnLoad *load, FilterRegister *reg, Datum d)
{
	if (!reg->isnull && load->value_needed)
		reg->value = load->to_float8 ? encode_as_float8(load->type, d) :
			encode(load->type, d);
}

/* Whether the registers' values satisfy every clause. */
static inline bool
run_steps(FilterProgram *program)
{
	return filter_steps_run(program->steps, program->nsteps, program->registers,
							program->sets, program->stack);
}

/* Whether the row satisfies every compiled clause. */
bool
scan_filter_program_passes(FilterProgram *program, HeapTuple tuple, TupleDesc desc)
{
	for (int i = 0; i < program->ncolumns; i++)
	{
		FilterColumnLoad *load = &program->columns[i];
		FilterRegister *reg = &program->registers[load->reg];

		load_column(load, reg, heap_getattr(tuple, load->attno, desc, &reg->isnull));
	}
	return run_steps(program);
}

/* The kind of value a column of the type stores, as filter_value_key reads it. */
FilterValueKind
scan_filter_value_kind(Oid type)
{
	switch (type)
	{
		case INT2OID:
			return VALUE_INT2;
		case INT4OID:
		case DATEOID:
		case TEXTOID:			/* a column index's dictionary code */
		case VARCHAROID:
			return VALUE_INT4;
		case FLOAT4OID:
			return VALUE_FLOAT4;
		case FLOAT8OID:
			return VALUE_FLOAT8;
		case BOOLOID:
			return VALUE_BOOL;
		default:
			return VALUE_INT8;
	}
}
