/*-------------------------------------------------------------------------
 *
 * agg_path.c
 *	  Planning GpuTopKAgg: SELECT [g,] gpu_topk(v, k), ... FROM t [WHERE ...]
 *	  [GROUP BY g] as one scan of t that groups its rows and keeps each
 *	  group's top k itself, without PostgreSQL's Agg node.
 *
 * The path is offered to the grouping relation (create_upper_paths_hook at
 * UPPERREL_GROUP_AGG) beside PostgreSQL's own Agg paths, and wins or loses
 * on cost.  So are two parallel forms, built here since PostgreSQL offers
 * no hook for partial aggregation, both asking for the workers that
 * GpuTopK asks for (scan_parallel_policy.h).  The partial form is a Finalize
 * Aggregate over a Gather over a partial GpuTopKAgg, whose processes each
 * group their share of the table's blocks and return their groups' states
 * serialized, which the Finalize Aggregate combines; PostgreSQL costs the
 * gathering per group and process, so it wins for few groups.  The
 * partitioned form, for many groups, is a Gather over a GpuTopKAgg whose
 * processes exchange their rows by group and return whole groups' answers
 * (agg_exec.c).  They are offered when:
 *	 - the query reads one heap table, with no HAVING, grouping sets or
 *	   set-returning functions in its target list;
 *	 - it groups by nothing or by one column of a type whose equality is
 *	   equality of the stored value (integers, date, timestamps, bool);
 *	 - every aggregate is one of the top-k aggregates, over columns of the
 *	   table, with a constant valid k and no DISTINCT, ORDER BY or FILTER;
 *	 - the WHERE clause has no subqueries and no outer references, and the
 *	   table no row-level security policy or security barrier view;
 *	 - the groups' states, as estimated from the grouping column's
 *	   statistics, fit in hash_mem (work_mem times hash_mem_multiplier), or
 *	   for the partitioned form each partition's do: larger groupings, and
 *	   groupings of a column without statistics, are left to PostgreSQL's
 *	   HashAggregate (the node spills only when an estimate proves too low
 *	   as it runs).
 *
 * The plan's custom_scan_tlist holds the grouping column and the Aggrefs;
 * the node returns one tuple of those per group and projects the query's
 * target list over it.  The WHERE clause travels in custom_private (it is
 * over the table's rows, not the node's tuples).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "agg_exchange.h"
#include "agg_exec.h"
#include "agg_functions.h"
#include "agg_path.h"
#include "agg_scan.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_parallel_policy.h"
#include "scan_row_reader.h"
#include "settings.h"

/*
 * Per-row costs in fractions of PostgreSQL's, as measured by bench/agg_bench
 * and bench/scan_bench: the node reads a row's columns from its page in
 * about a fifth of the time a sequential scan and a HashAggregate spend on
 * it, and a row that does not enter its group's top k costs a comparison.
 */
#define TOPK_AGG_TUPLE_COST_FACTOR 0.25
#define TOPK_AGG_GROUP_COST_FACTOR 0.5
#define TOPK_AGG_OFFER_COST_FACTOR 0.25
/* a partitioned plan's row, per word: written to a file and read back */
#define TOPK_AGG_EXCHANGE_COST_FACTOR 0.5

/* in bytes (agg_functions.c): a group's state without its entries, an entry */
#define TOPK_AGG_STATE_BYTES 128.0
#define TOPK_AGG_ENTRY_BYTES 24.0

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_topk_agg_path(PlannerInfo *root, RelOptInfo *rel,
								CustomPath *best_path, List *tlist,
								List *clauses, List *custom_plans);

static const CustomPathMethods topk_agg_path_methods = {
	.CustomName = TOPK_AGG_SCAN_NAME,
	.PlanCustomPath = plan_topk_agg_path,
};

/* The table's column that expr is, or 0. */
static AttrNumber
column_of(Expr *expr, Index relid)
{
	Var		   *var = (Var *) expr;

	if (!IsA(expr, Var) || var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
		return 0;
	return var->varattno;
}

/* The one table the query reads, as a heap relation's RTE; NULL if not. */
RangeTblEntry *
agg_path_heap_table_of(PlannerInfo *root, RelOptInfo *input_rel)
{
	RangeTblEntry *rte;

	if (input_rel->reloptkind != RELOPT_BASEREL || IS_DUMMY_REL(input_rel) ||
		bms_membership(root->all_baserels) != BMS_SINGLETON ||
		input_rel->lateral_relids != NULL)
		return NULL;
	rte = planner_rt_fetch(input_rel->relid, root);
	return scan_row_reader_can_read(rte) ? rte : NULL;
}

/*
 * The column a GROUP BY item is, if it is a column of the table relid whose
 * equality is that of its stored values (a type passed by value); else 0.
 */
AttrNumber
agg_path_group_clause_column(PlannerInfo *root, SortGroupClause *sgc, Index relid)
{
	Expr	   *expr = (Expr *) get_sortgroupclause_expr(sgc, root->processed_tlist);
	AttrNumber	attno = column_of(expr, relid);

	if (attno == 0)
		return 0;
	switch (exprType((Node *) expr))
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			break;
		default:
			return 0;
	}
	return sgc->eqop == lookup_type_cache(exprType((Node *) expr), TYPECACHE_EQ_OPR)->eq_opr ?
		attno : 0;
}

/*
 * The grouping column: 0 for no GROUP BY; false if the grouping is not one
 * column whose equality is the equality of its stored values.
 */
bool
agg_path_group_column(PlannerInfo *root, Index relid, AttrNumber *attno)
{
	Query	   *parse = root->parse;

	*attno = 0;
	if (parse->groupClause == NIL)
		return true;
	if (list_length(parse->groupClause) != 1)
		return false;
	*attno = agg_path_group_clause_column(root, linitial_node(SortGroupClause,
															  parse->groupClause), relid);
	return *attno != 0;
}

/*
 * Citus runs an aggregate with a combine function on its workers as
 * pg_catalog.worker_partial_agg(aggregate, ROW(its arguments)), which
 * returns the aggregate's transition state as text (the output function of
 * its type) for the coordinator to combine.  If aggref is that: the
 * aggregate it wraps and that aggregate's arguments.
 */
static bool
citus_partial_aggregate(Aggref *aggref, Oid *aggfnoid, List **args)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	Const	   *agg;
	RowExpr    *row;
	bool		found;
	ListCell   *lc;

	if (aggref->aggtype != CSTRINGOID || list_length(aggref->args) != 2)
		return false;
	agg = (Const *) linitial_node(TargetEntry, aggref->args)->expr;
	row = (RowExpr *) lsecond_node(TargetEntry, aggref->args)->expr;
	if (!IsA(agg, Const) || agg->constisnull ||
		(agg->consttype != OIDOID && agg->consttype != REGPROCEDUREOID) || !IsA(row, RowExpr))
		return false;
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggref->aggfnoid));
	if (!HeapTupleIsValid(tuple))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	found = proc->pronamespace == PG_CATALOG_NAMESPACE &&
		strcmp(NameStr(proc->proname), "worker_partial_agg") == 0 &&
		proc->pronargs == 2 && proc->proargtypes.values[0] == OIDOID &&
		proc->proargtypes.values[1] == ANYELEMENTOID;
	ReleaseSysCache(tuple);
	if (!found)
		return false;
	*aggfnoid = DatumGetObjectId(agg->constvalue);
	*args = NIL;
	foreach(lc, row->args)
		*args = lappend(*args, makeTargetEntry(lfirst(lc), list_length(*args) + 1, NULL, false));
	return true;
}

/*
 * An aggregate of the target list, if it is a top-k aggregate the node can
 * compute, directly or for Citus's worker_partial_agg: appended to the
 * plan's lists in *private.
 */
static bool
add_aggregate(Aggref *aggref, Index relid, List **private)
{
	Oid			aggfnoid = aggref->aggfnoid;
	List	   *args = aggref->args;
	bool		state_text;
	HeapTuple	tuple;
	Form_pg_aggregate agg;
	FmgrInfo	transfn;
	FmgrInfo	finalfn;
	bool		largest;
	bool		by;
	TargetEntry *value_tle;
	TargetEntry *k_tle;
	Const	   *k;
	AttrNumber	value_attno;
	AttrNumber	result_attno;
	KeyType		key_type;

	if (aggref->aggdistinct != NIL || aggref->aggorder != NIL || aggref->aggfilter != NULL ||
		aggref->aggkind != AGGKIND_NORMAL || aggref->agglevelsup != 0 ||
		aggref->aggsplit != AGGSPLIT_SIMPLE)
		return false;
	state_text = citus_partial_aggregate(aggref, &aggfnoid, &args);
	tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggfnoid));
	if (!HeapTupleIsValid(tuple))
		return false;
	agg = (Form_pg_aggregate) GETSTRUCT(tuple);
	if (!OidIsValid(agg->aggfinalfn))
	{
		ReleaseSysCache(tuple);
		return false;
	}
	fmgr_info(agg->aggtransfn, &transfn);
	fmgr_info(agg->aggfinalfn, &finalfn);
	ReleaseSysCache(tuple);
	/* the _by forms' internal states have no text form: Citus does not ask for it */
	if (!agg_functions_of(transfn.fn_addr, finalfn.fn_addr, &largest, &by) ||
		list_length(args) != (by ? 3 : 2) || (by && state_text))
		return false;
	value_tle = list_nth_node(TargetEntry, args, by ? 1 : 0);
	k_tle = llast_node(TargetEntry, args);
	value_attno = column_of(value_tle->expr, relid);
	result_attno = by ? column_of(linitial_node(TargetEntry, args)->expr, relid) :
		value_attno;
	k = (Const *) k_tle->expr;
	if (value_attno == 0 || result_attno == 0 ||
		!key_type_of(exprType((Node *) value_tle->expr), &key_type) ||
		!IsA(k, Const) || k->constisnull || k->consttype != INT4OID ||
		!agg_k_is_valid(DatumGetInt32(k->constvalue)))
		return false;
	/* the _by forms order equal values by the result: its type needs a btree order */
	if (by)
	{
		Oid			result_type = exprType((Node *) linitial_node(TargetEntry, args)->expr);

		if (!OidIsValid(lookup_type_cache(result_type, TYPECACHE_CMP_PROC)->cmp_proc))
			return false;
	}
	private[AGG_FIELD_VALUE_ATTNOS] = lappend_int(private[AGG_FIELD_VALUE_ATTNOS], value_attno);
	private[AGG_FIELD_RESULT_ATTNOS] = lappend_int(private[AGG_FIELD_RESULT_ATTNOS],
												   by ? result_attno : 0);
	private[AGG_FIELD_KS] = lappend_int(private[AGG_FIELD_KS], DatumGetInt32(k->constvalue));
	private[AGG_FIELD_LARGEST] = lappend_int(private[AGG_FIELD_LARGEST], largest);
	private[AGG_FIELD_COLLATIONS] = lappend_oid(private[AGG_FIELD_COLLATIONS], aggref->inputcollid);
	private[AGG_FIELD_STATE_TEXT] = lappend_int(private[AGG_FIELD_STATE_TEXT], state_text);
	return true;
}

/*
 * The plan's lists for the query, and the columns of the node's tuples
 * (the grouping column, then the aggregates); false if the node cannot
 * compute the target list.
 */
static bool
private_of(PlannerInfo *root, RelOptInfo *grouped_rel, Index relid, List **private,
		   List **scan_exprs)
{
	AttrNumber	group_attno;
	List	   *vars;
	ListCell   *lc;

	if (!agg_path_group_column(root, relid, &group_attno))
		return false;
	/* the mode and partitions are each path's (make_topk_agg_path) */
	for (int i = 0; i < AGG_FIELDS; i++)
		private[i] = NIL;
	private[AGG_FIELD_RELID] = list_make1_int(relid);
	private[AGG_FIELD_GROUP_ATTNO] = list_make1_int(group_attno);
	*scan_exprs = NIL;
	if (group_attno != 0)
		*scan_exprs = list_make1(get_sortgroupclause_expr(linitial(root->parse->groupClause),
														  root->processed_tlist));
	vars = pull_var_clause((Node *) grouped_rel->reltarget->exprs,
						   PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						   PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Node	   *node = lfirst(lc);

		if (list_member(*scan_exprs, node))
			continue;
		/* a column other than the grouping one would need to be grouped by */
		if (!IsA(node, Aggref) || !add_aggregate((Aggref *) node, relid, private))
			return false;
		*scan_exprs = lappend(*scan_exprs, node);
	}
	return private[AGG_FIELD_KS] != NIL;
}

static bool
contains_exec_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind == PARAM_EXEC;
	return expression_tree_walker(node, contains_exec_param, context);
}

/*
 * Whether the node can evaluate the WHERE clause: on the table's rows alone
 * (no subqueries, no values from outside the query level), and with no
 * row-level security policy or security barrier view, whose clauses must run
 * before the user's (the node runs compiled clauses first).
 */
bool
agg_path_where_is_plain(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->security_level > 0 || contain_subplans((Node *) rinfo->clause) ||
			contains_exec_param((Node *) rinfo->clause, NULL))
			return false;
	}
	return true;
}

/*
 * Cost: the table's pages; per row a fraction of what a sequential scan
 * and a HashAggregate cost, and the WHERE clause; per group its output.
 * Nothing comes out before the scan ends.  A partial path's process does
 * its share of the per-row work.
 */
static void
cost_topk_agg_path(PlannerInfo *root, RelOptInfo *input_rel, Path *path, int naggs,
				   bool exchange)
{
	double		divisor = path->parallel_workers > 0 ?
		scan_parallel_divisor(path->parallel_workers) : 1.0;
	double		spc_seq_page_cost;
	QualCost	where;
	Cost		run;

	get_tablespace_page_costs(input_rel->reltablespace, NULL, &spc_seq_page_cost);
	cost_qual_eval(&where, input_rel->baserestrictinfo, root);
	run = spc_seq_page_cost * input_rel->pages +
		((TOPK_AGG_TUPLE_COST_FACTOR * cpu_tuple_cost + where.per_tuple) * input_rel->tuples +
		 (TOPK_AGG_GROUP_COST_FACTOR + TOPK_AGG_OFFER_COST_FACTOR * naggs +
		  (exchange ? TOPK_AGG_EXCHANGE_COST_FACTOR * (1 + naggs) : 0.0)) *
		 cpu_operator_cost * input_rel->rows) / divisor +
		(cpu_tuple_cost + path->pathtarget->cost.per_tuple) * path->rows;
	path->startup_cost = where.startup + path->pathtarget->cost.startup + run;
	path->total_cost = path->startup_cost;
}

/*
 * A GpuTopKAgg path of rel computing target in mode (with partitions, for
 * a partitioned one): private's lists, then the WHERE clause, then the
 * node's tuple (scan_exprs); parallel with workers.
 */
static CustomPath *
make_topk_agg_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *rel,
				   PathTarget *target, List **private, List *scan_exprs,
				   TopkAggMode mode, int partitions, int workers, double rows)
{
	CustomPath *path = makeNode(CustomPath);
	List	   *path_private = NIL;

	for (int i = 0; i < AGG_FIELDS; i++)
		path_private = lappend(path_private,
							   i == AGG_FIELD_MODE ? list_make1_int(mode) :
							   i == AGG_FIELD_PARTITIONS ? list_make1_int(partitions) :
							   private[i]);
	/* clauses without columns (now() < $1) too: no gating Result is made above this path */
	path_private = lappend(path_private,
						   list_concat(extract_actual_clauses(input_rel->baserestrictinfo, true),
									   extract_actual_clauses(input_rel->baserestrictinfo, false)));
	path_private = lappend(path_private, scan_exprs);

	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = target;
	path->path.param_info = NULL;
	path->path.parallel_aware = workers > 0;
	path->path.parallel_safe = workers > 0;
	path->path.parallel_workers = workers;
	path->path.pathkeys = NIL;
	path->path.rows = clamp_row_est(rows);
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_paths = NIL;
	path->custom_private = path_private;
	path->methods = &topk_agg_path_methods;
	cost_topk_agg_path(root, input_rel, &path->path, list_length(private[AGG_FIELD_KS]),
					   mode == AGG_MODE_PARTITIONED);
	return path;
}

/*
 * The parallel form: a partial GpuTopKAgg returning the grouping column and
 * each aggregate's state serialized (the Aggrefs as PostgreSQL marks them
 * for a partial aggregation, so that the Finalize Aggregate finds them),
 * under a Gather and a Finalize Aggregate that combines each group's
 * states.  Its processes may each see every group.
 */
static void
add_parallel_topk_agg_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *grouped_rel,
						   List **private, List *scan_exprs, double groups)
{
	Query	   *parse = root->parse;
	RelOptInfo *partial_rel;
	PathTarget *partial_target = create_empty_pathtarget();
	List	   *partial_exprs = NIL;
	CustomPath *partial;
	double		gathered;
	AggClauseCosts final_costs;
	int			workers;
	ListCell   *lc;

	if (!input_rel->consider_parallel || !grouped_rel->consider_parallel ||
		root->hasNonPartialAggs || root->hasNonSerialAggs ||
		(workers = scan_parallel_workers(input_rel, input_rel->pages)) <= 0)
		return;
	foreach(lc, scan_exprs)
	{
		Expr	   *expr = copyObject(lfirst(lc));

		if (IsA(expr, Aggref))
		{
			mark_partial_aggref((Aggref *) expr, AGGSPLIT_INITIAL_SERIAL);
			add_column_to_pathtarget(partial_target, expr, 0);
		}
		else
			add_column_to_pathtarget(partial_target, expr,
									 linitial_node(SortGroupClause, parse->groupClause)->tleSortGroupRef);
		partial_exprs = lappend(partial_exprs, expr);
	}
	partial_target = set_pathtarget_cost_width(root, partial_target);
	/* PostgreSQL's own partial grouping relation, if it made one: the paths' targets are their own */
	partial_rel = fetch_upper_rel(root, UPPERREL_PARTIAL_GROUP_AGG, input_rel->relids);
	partial = make_topk_agg_path(root, input_rel, partial_rel, partial_target, private,
								 partial_exprs, AGG_MODE_PARTIAL, 0, workers,
								 Min(groups, input_rel->rows / scan_parallel_divisor(workers)));
	gathered = partial->path.rows * workers;
	MemSet(&final_costs, 0, sizeof(AggClauseCosts));
	get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &final_costs);
	add_path(grouped_rel, (Path *)
			 create_agg_path(root, grouped_rel,
							 (Path *) create_gather_path(root, partial_rel, &partial->path,
														 partial_target, NULL, &gathered),
							 grouped_rel->reltarget,
							 parse->groupClause != NIL ? AGG_HASHED : AGG_PLAIN,
							 AGGSPLIT_FINAL_DESERIAL, parse->groupClause, NIL,
							 &final_costs, groups));
}

/* Whether every aggregate's result is passed by value (a word in the exchange's rows). */
static bool
results_by_value(Oid relid, List **private)
{
	ListCell   *lc;

	foreach(lc, private[AGG_FIELD_RESULT_ATTNOS])
		if (lfirst_int(lc) != 0 && !get_typbyval(get_atttype(relid, lfirst_int(lc))))
			return false;
	return true;
}

/*
 * The partitioned parallel form, for many groups: a Gather over a
 * GpuTopKAgg whose processes exchange their rows by group through
 * temporary files (agg_exchange.h), each group going to one process,
 * which returns its answer.  Rows cost their exchange, but no process holds
 * more than a partition's groups, and only answers are gathered.  Enough
 * partitions, at least four a process, that each one's states fit in
 * hash_mem; none if more than GROUP_EXCHANGE_MAX_PARTITIONS would be needed,
 * or if the rows might not fit in temp_file_limit.
 */
static void
add_partitioned_topk_agg_path(PlannerInfo *root, RelOptInfo *input_rel,
							  RelOptInfo *grouped_rel, Oid relid, List **private,
							  List *scan_exprs, double groups, double states_bytes)
{
	CustomPath *path;
	double		partitions;
	int			workers;

	if (!input_rel->consider_parallel || !grouped_rel->consider_parallel ||
		root->parse->groupClause == NIL || !results_by_value(relid, private) ||
		(workers = scan_parallel_workers(input_rel, input_rel->pages)) <= 0)
		return;
	partitions = Max(4.0 * (workers + 1), ceil(states_bytes / (double) get_hash_memory_limit()));
	if (partitions > GROUP_EXCHANGE_MAX_PARTITIONS)
		return;
	/* the leader alone writes every row when no worker starts */
	if (temp_file_limit >= 0 &&
		input_rel->rows * TOPK_AGG_RECORD_BYTES(list_length(private[AGG_FIELD_KS])) >
		(double) temp_file_limit * 1024.0)
		return;
	path = make_topk_agg_path(root, input_rel, grouped_rel, grouped_rel->reltarget, private,
							  scan_exprs, AGG_MODE_PARTITIONED, (int) partitions, workers,
							  groups / scan_parallel_divisor(workers));
	add_path(grouped_rel, (Path *) create_gather_path(root, grouped_rel, &path->path,
													   grouped_rel->reltarget, NULL, &groups));
}

static void
topk_agg_create_upper_paths(PlannerInfo *root, UpperRelationKind stage,
							RelOptInfo *input_rel, RelOptInfo *output_rel,
							void *extra)
{
	Query	   *parse = root->parse;
	List	   *private[AGG_FIELDS];
	List	   *scan_exprs;
	RangeTblEntry *rte;
	EstimationInfo estimate;
	double		groups;
	double		rows_per_group;
	double		state_bytes = 0;
	ListCell   *lc;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);

	if (stage != UPPERREL_GROUP_AGG || !gputopk_enabled ||
		parse->commandType != CMD_SELECT || parse->groupingSets != NIL ||
		parse->havingQual != NULL || parse->hasTargetSRFs ||
		input_rel->tuples < gputopk_min_table_rows ||
		(rte = agg_path_heap_table_of(root, input_rel)) == NULL || rte->securityQuals != NIL ||
		!agg_path_where_is_plain(input_rel) ||
		!private_of(root, output_rel, input_rel->relid, private, &scan_exprs))
		return;

	/* the node keeps the groups (of a partition) in memory: it needs the column's statistics */
	estimate.flags = 0;
	groups = parse->groupClause == NIL ? 1.0 :
		estimate_num_groups(root, list_make1(linitial(scan_exprs)), input_rel->rows, NULL,
							&estimate);
	if (estimate.flags & SELFLAG_USED_DEFAULT)
		return;
	rows_per_group = Max(input_rel->rows, 1.0) / Max(groups, 1.0);
	foreach(lc, private[AGG_FIELD_KS])
		state_bytes += TOPK_AGG_STATE_BYTES +
			TOPK_AGG_ENTRY_BYTES * Min((double) lfirst_int(lc), rows_per_group);
	private[AGG_FIELD_GROUP_BYTES] = list_make1_int((int) Min(state_bytes, (double) PG_INT32_MAX));
	if (groups * state_bytes <= (double) get_hash_memory_limit())
	{
		add_path(output_rel, &make_topk_agg_path(root, input_rel, output_rel,
												 output_rel->reltarget, private, scan_exprs,
												 AGG_MODE_WHOLE, 0, 0, groups)->path);
		add_parallel_topk_agg_path(root, input_rel, output_rel, private, scan_exprs, groups);
	}
	add_partitioned_topk_agg_path(root, input_rel, output_rel, rte->relid, private, scan_exprs,
								  groups, groups * state_bytes);
}

static bool
record_function(Oid funcid, void *context)
{
	record_plan_function_dependency((PlannerInfo *) context, funcid);
	return false;
}

/*
 * What set_plan_references records for the expressions it sees, for the
 * WHERE clause, which it does not see: the functions it calls and the
 * relations it names, so that a cached plan is invalidated when they change.
 */
static bool
record_dependencies(Node *node, PlannerInfo *root)
{
	if (node == NULL)
		return false;
	check_functions_in_node(node, record_function, root);
	if (IsA(node, Const) && ((Const *) node)->consttype == REGCLASSOID &&
		!((Const *) node)->constisnull)
		root->glob->relationOids = lappend_oid(root->glob->relationOids,
											   DatumGetObjectId(((Const *) node)->constvalue));
	return expression_tree_walker(node, record_dependencies, root);
}

/*
 * The plan of a path whose custom_private is nfields fields, the WHERE
 * clause and the scan's expressions: the plan's custom_private is the
 * fields and the WHERE clause, and the expressions are its
 * custom_scan_tlist; or, for a scan that returns the table's rows
 * (table_rows), its custom_private ends with the expressions, unseen by
 * set_plan_references as the WHERE clause is.
 */
Plan *
agg_path_plan_scan(PlannerInfo *root, CustomPath *best_path, List *tlist, int nfields,
				   bool table_rows, const CustomScanMethods *methods)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *private = best_path->custom_private;
	List	   *where = copyObject(list_nth(private, nfields));
	List	   *exprs = copyObject(llast(private));
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	foreach(lc, exprs)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), list_length(scan_tlist) + 1,
														 NULL, false));
	/* the WHERE clause is not seen by set_plan_references: what it does is done here */
	fix_opfuncids((Node *) where);
	record_dependencies((Node *) where, root);
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = bms_singleton_member(root->all_baserels);
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_private = lappend(list_copy_head(private, nfields), where);
	cscan->custom_scan_tlist = scan_tlist;
	if (table_rows)
	{
		fix_opfuncids((Node *) exprs);
		record_dependencies((Node *) exprs, root);
		cscan->custom_private = lappend(cscan->custom_private, exprs);
		cscan->custom_scan_tlist = NIL;
	}
	cscan->methods = methods;
	return &cscan->scan.plan;
}

static Plan *
plan_topk_agg_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				   List *tlist, List *clauses, List *custom_plans)
{
	return agg_path_plan_scan(root, best_path, tlist, AGG_FIELDS, false, &agg_scan_methods.scan);
}

void
agg_path_init(void)
{
	RegisterCustomScanMethods(&agg_scan_methods.scan);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = topk_agg_create_upper_paths;
}
