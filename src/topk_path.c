/*-------------------------------------------------------------------------
 *
 * topk_path.c
 *	  Planning GpuTopK: recognise SELECT ... FROM t [WHERE ...] ORDER BY
 *	  ... LIMIT k [OFFSET m] and offer a scan of t that returns its top
 *	  k + m rows already in the query's order.
 *
 * The path is added to the table's own paths (set_rel_pathlist_hook) with
 * the query's sort pathkeys, so PostgreSQL compares it by cost with a
 * sequential scan under a top-N sort, an index scan that gives the order,
 * or a parallel plan, and keeps its Limit node above whichever it picks.
 * It is offered only when nothing but that Limit can consume the scan: one
 * table, no grouping, aggregates, window functions, DISTINCT, set
 * operations or row locks.  For a partitioned or inheritance table each
 * heap child is offered one with the same pathkeys, so that a Merge Append
 * of the children's top k + m rows can feed the Limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/heaptoast.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/spccache.h"
#include "utils/typcache.h"

#include "colindex_path.h"
#include "compat.h"
#include "device.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_key_program.h"
#include "scan_parallel_policy.h"
#include "scan_row_reader.h"
#include "scan_vector_key.h"
#include "service_client.h"
#include "settings.h"
#include "topk_exec.h"
#include "topk_path.h"
#include "topk_plan.h"
#include "topk_rank_key.h"
#include "topk_scan.h"

/* cost of handing one row's key to the top-k backend, in cpu_operator_cost */
#define TOPK_PUSH_COST_FACTOR 0.25

/* cost of a WHERE clause the filter program checks, per row, in cpu_operator_cost */
#define TOPK_COMPILED_CLAUSE_COST_FACTOR 0.25

/*
 * cost of a page the GPU reads in place, in cpu_tuple_cost (about 0.1 us of
 * a plain scan's time per row): a process's pin, lock and description of
 * it (0.27 us measured on the H200 machine's host, one process reading 30
 * GB/s; slower hosts take more), and its trip over the bus, which the
 * processes share (8 kB at about 45 GB/s)
 */
#define TOPK_GPU_PAGE_CPU_COST_FACTOR 4.0
#define TOPK_GPU_PAGE_BUS_COST_FACTOR 2.0

/*
 * cost of finding one out-of-line value's chunks through its TOAST index,
 * in cpu_operator_cost besides a comparison per level (as btcostestimate
 * charges a descent: 50 per page level, two levels)
 */
#define TOPK_TOAST_FETCH_COST_FACTOR 100.0

/*
 * What a heap path's cost is made of, besides the table's size: its WHERE
 * clause, the share of pages the GPU reads in place, and where the ranking
 * key is computed by PostgreSQL's interpreter, that key's cost per row and
 * the reading of the out-of-line values it takes (out_of_line: the cost
 * for every row it is computed on, in one process; out_of_line_pages: the
 * TOAST pages that reads).
 */
typedef struct HeapCostInputs
{
	QualCost	where;
	double		gpu_share;
	Cost		key_per_row;	/* these three zero where the key compiles */
	Cost		out_of_line;
	double		out_of_line_pages;
	double		most_processes;	/* the divisor of the most parallel scan of
								 * rel, PostgreSQL's own or this one's */
} HeapCostInputs;

static set_rel_pathlist_hook_type prev_set_rel_pathlist_hook = NULL;

/* Whether the query's shape lets the scan of its one table return top-k rows. */
static bool
query_is_topk(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	Query	   *parse = root->parse;
	Bitmapset  *attnos = NULL;
	ListCell   *lc;

	if (parse->commandType != CMD_SELECT || parse->limitCount == NULL ||
		parse->sortClause == NIL || root->sort_pathkeys == NIL ||
		parse->groupClause != NIL || parse->groupingSets != NIL ||
		parse->hasAggs || parse->hasWindowFuncs || parse->havingQual != NULL ||
		parse->distinctClause != NIL || parse->hasTargetSRFs ||
		parse->rowMarks != NIL || parse->setOperations != NULL)
		return false;
	/* LIMIT NULL or LIMIT ALL: nothing to bound */
	if (IsA(parse->limitCount, Const) && ((Const *) parse->limitCount)->constisnull)
		return false;
	if (bms_membership(root->all_baserels) != BMS_SINGLETON || rel->lateral_relids != NULL)
		return false;
	/* the table, or a partition or inheritance child of it (not of a UNION ALL) */
	if (rel->reloptkind == RELOPT_OTHER_MEMBER_REL)
	{
		RangeTblEntry *top = planner_rt_fetch(bms_singleton_member(rel->top_parent_relids),
											  root);

		if (top->rtekind != RTE_RELATION)
			return false;
	}
	else if (rel->reloptkind != RELOPT_BASEREL)
		return false;
	/* rows are found again by page and position */
	if (!scan_row_reader_can_read(rte))
		return false;
	/* rows are found again by re-reading their pages: quals must repeat */
	if (contain_volatile_functions((Node *) rel->baserestrictinfo))
		return false;
	/* rows come back as sorted copies, without their ctid, xmin, ... */
	pull_varattnos((Node *) rel->reltarget->exprs, rel->relid, &attnos);
	foreach(lc, rel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause, rel->relid, &attnos);
	for (int i = -1; (i = bms_next_member(attnos, i)) >= 0;)
	{
		AttrNumber	attno = i + FirstLowInvalidHeapAttributeNumber;

		if (attno < 0 && attno != TableOidAttributeNumber)
			return false;
	}
	return true;
}

/*
 * Whether an ORDER BY item can be computed from a row of the table: a
 * column, or an expression over its columns whose value the same row
 * always gives (rows are found again and ordered by it later).
 */
static bool
sortable_from_row(PlannerInfo *root, RelOptInfo *rel, Expr *expr)
{
	if (IsA(expr, Var))
	{
		Var		   *var = (Var *) expr;

		return var->varno == rel->relid && var->varlevelsup == 0 && var->varattno > 0;
	}
	return bms_is_subset(pull_varnos(root, (Node *) expr), rel->relids) &&
		!contain_volatile_functions((Node *) expr) &&
		!contain_subplans((Node *) expr);
}

/*
 * The ranking key of the first ORDER BY item: its value when its type has
 * keys, computed by a key program where it is float4 or float8 arithmetic
 * that compiles (keyed as float8: a float4 value is one, in the same
 * order); for numeric, float8 arithmetic where that is exact, else its
 * value rounded to float8 (monotone, so the ties of the rounded keys keep
 * every row that can be in the answer).  False if the type has no keys.
 */
static bool
ranking_key_of(Expr *expr, Index relid, KeyType *key_type, TopkKeySource *source,
			   Expr **key_expr)
{
	Oid			type = exprType((Node *) expr);

	*key_expr = expr;
	*source = KEY_SOURCE_VALUE;
	if ((type == FLOAT4OID || type == FLOAT8OID) && !IsA(expr, Var) &&
		scan_key_program_compile(expr, relid) != NULL)
	{
		*key_type = KEY_FLOAT8;
		*source = KEY_SOURCE_EXACT_FLOAT8;
		return true;
	}
	if (type == FLOAT8OID && scan_vector_key_compiles(expr, relid))
	{
		*key_type = KEY_FLOAT8;
		*source = KEY_SOURCE_VECTOR_BOUND;
		return true;
	}
	if (key_type_of(type, key_type))
		return true;
	if (type != NUMERICOID)
		return false;
	*key_type = KEY_FLOAT8;
	*key_expr = topk_rank_key_of_numeric(expr);
	*source = *key_expr ? KEY_SOURCE_EXACT_FLOAT8 : KEY_SOURCE_LOSSY_NUMERIC;
	if (*key_expr == NULL)
		*key_expr = expr;
	return true;
}

/*
 * The ORDER BY as lists for the plan: each item must be computable from a
 * row of the table, the first one of a type with keys (or numeric) and
 * ordered by its type's own < or >.  False if not.
 */
static bool
sort_keys_of(PlannerInfo *root, RelOptInfo *rel, List **private)
{
	Query	   *parse = root->parse;
	List	   *attnos = NIL;
	List	   *ops = NIL;
	List	   *collations = NIL;
	List	   *nulls_first = NIL;
	List	   *exprs = NIL;
	KeyType		key_type = KEY_INT4;
	TopkKeySource source = KEY_SOURCE_VALUE;
	Expr	   *key_expr = NULL;
	bool		desc = false;
	ListCell   *lc;

	foreach(lc, parse->sortClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, parse->targetList);
		Expr	   *expr = tle->expr;

		/* a child's columns for a partition or inheritance child */
		if (rel->reloptkind == RELOPT_OTHER_MEMBER_REL)
			expr = (Expr *) compat_adjust_to_child(root, (Node *) expr, rel);

		if (!OidIsValid(sgc->sortop) || !sortable_from_row(root, rel, expr))
			return false;
		if (attnos == NIL)
		{
			TypeCacheEntry *tc = lookup_type_cache(exprType((Node *) expr),
												   TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);

			if (!ranking_key_of(expr, rel->relid, &key_type, &source, &key_expr))
				return false;
			if (sgc->sortop == tc->gt_opr)
				desc = true;
			else if (sgc->sortop != tc->lt_opr)
				return false;
		}
		attnos = lappend_int(attnos, IsA(expr, Var) ? ((Var *) expr)->varattno : 0);
		ops = lappend_oid(ops, sgc->sortop);
		collations = lappend_oid(collations, exprCollation((Node *) expr));
		nulls_first = lappend_int(nulls_first, sgc->nulls_first);
		exprs = lappend(exprs, expr);
	}
	*private = list_make4(makeInteger(key_type), makeInteger(desc),
						  makeInteger(parse->limitOption == LIMIT_OPTION_WITH_TIES),
						  attnos);
	*private = lappend(*private, ops);
	*private = lappend(*private, collations);
	*private = lappend(*private, nulls_first);
	*private = lappend(*private, makeInteger(source));
	*private = lappend(*private, NIL);
	*private = lappend(*private, makeFloat(pstrdup("1")));
	*private = lappend(*private, lcons(key_expr, exprs));
	return true;
}

/*
 * The cost of the WHERE clause: clauses the filter program checks cost a
 * fraction of an operator per row (their run constants are evaluated once),
 * the others what PostgreSQL's interpreter costs.  *all_compiled: whether
 * every clause compiles.
 */
static QualCost
where_clause_cost(PlannerInfo *root, RelOptInfo *rel, bool *all_compiled)
{
	QualCost	total = {0, 0};
	ListCell   *lc;

	*all_compiled = true;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		QualCost	cost;

		cost_qual_eval_node(&cost, (Node *) rinfo, root);
		if (scan_filter_program_compiles((Node *) rinfo->clause, rel->relid))
		{
			total.startup += cost.startup + cost.per_tuple;
			total.per_tuple += TOPK_COMPILED_CLAUSE_COST_FACTOR * cpu_operator_cost;
		}
		else
		{
			total.startup += cost.startup;
			total.per_tuple += cost.per_tuple;
			*all_compiled = false;
		}
	}
	return total;
}

/*
 * The share of the table's pages that the GPU would read in place
 * (create_page_sink in topk_exec.c): all of them where gputopk.gpu_pages is
 * on, the GPU service has mapped shared_buffers and is the backend, every
 * WHERE clause and the key compile for a kernel (compiled: a pgvector
 * distance over inline vectors too) and the transaction need not record
 * serializable conflicts; else none.
 */
static double
gpu_pages_share(bool compiled)
{
	if (!gputopk_gpu_pages || !compiled || !service_buffers_mapped() ||
		IsolationIsSerializable() || RecoveryInProgress() ||
		device_selected_backend() != BACKEND_GPU)
		return 0.0;
	return 1.0;
}

/*
 * Whether the key is a pgvector distance that a heap kernel computes on
 * the pages in place (scan_vector_key_gpu_readable): its vectors stored
 * inline, its cost per row then the GPU's.
 */
static bool
vector_key_on_gpu(PlannerInfo *root, RelOptInfo *rel, List *private)
{
	Relation	table;
	bool		readable;

	if (intVal(list_nth(private, TOPK_FIELD_KEY_SOURCE)) != KEY_SOURCE_VECTOR_BOUND)
		return false;
	table = table_open(planner_rt_fetch(rel->relid, root)->relid, NoLock);
	readable = scan_vector_key_gpu_readable(linitial(llast(private)), rel->relid,
											RelationGetDescr(table));
	table_close(table, NoLock);
	return readable;
}

/*
 * A ranking key the interpreter computes: its cost per row, and the
 * reading of the out-of-line (TOAST) values it takes: for every row that
 * passes the WHERE clause, a descent of the TOAST index and the value's
 * chunks, its share of the TOAST relation's pages and tuples (a column
 * stored EXTENDED or EXTERNAL of a table with a TOAST relation; the whole
 * relation counts, whichever columns its values are of).  Zero where it
 * takes no such column.
 */
static void
interpreted_key_cost(PlannerInfo *root, RelOptInfo *rel, List *private, HeapCostInputs *in)
{
	Expr	   *key = linitial(llast(private));
	Bitmapset  *attnos = NULL;
	Relation	table;
	Oid			toast_relid = InvalidOid;
	double		chunks;
	double		reached;
	double		spc_seq_page_cost;
	QualCost	key_cost;

	cost_qual_eval_node(&key_cost, (Node *) key, root);
	in->key_per_row = key_cost.per_tuple;
	if (rel->tuples <= 0.0)
		return;
	pull_varattnos((Node *) key, rel->relid, &attnos);
	table = table_open(planner_rt_fetch(rel->relid, root)->relid, NoLock);
	for (int i = -1; (i = bms_next_member(attnos, i)) >= 0;)
	{
		AttrNumber	attno = i + FirstLowInvalidHeapAttributeNumber;
		Form_pg_attribute att;

		if (attno <= 0)
			continue;
		att = TupleDescAttr(RelationGetDescr(table), attno - 1);
		if (att->attlen == -1 && (att->attstorage == TYPSTORAGE_EXTENDED ||
								  att->attstorage == TYPSTORAGE_EXTERNAL))
			toast_relid = table->rd_rel->reltoastrelid;
	}
	table_close(table, NoLock);
	if (!OidIsValid(toast_relid))
		return;

	table = table_open(toast_relid, AccessShareLock);
	in->out_of_line_pages = RelationGetNumberOfBlocks(table);
	chunks = table->rd_rel->reltuples >= 0 ? table->rd_rel->reltuples :
		in->out_of_line_pages * EXTERN_TUPLES_PER_PAGE;
	table_close(table, AccessShareLock);

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	reached = Min(1.0, rel->rows / rel->tuples);
	in->out_of_line_pages *= reached;
	in->out_of_line = in->out_of_line_pages * spc_seq_page_cost +
		chunks * reached * cpu_tuple_cost +
		Min(rel->tuples, chunks) * reached *
		(log2(chunks + 1.0) + TOPK_TOAST_FETCH_COST_FACTOR) * cpu_operator_cost;
}

/*
 * The share of the work of one process of the parallel sequential scan
 * PostgreSQL's own heuristic would give rel (1 where it gives none).
 */
static double
postgres_scan_divisor(RelOptInfo *rel)
{
	int			workers = 0;

	if (rel->consider_parallel && max_parallel_workers_per_gather > 0)
		workers = compute_parallel_worker(rel, rel->pages, -1, max_parallel_workers_per_gather);
	return workers > 0 ? scan_parallel_divisor(workers) : 1.0;
}

/*
 * Cost: a sequential scan of the table (pages, tuples, the WHERE clause),
 * a key per qualifying row for the top-k backend (computed, where the
 * interpreter computes it), and for the bound's rows their pages read
 * again (in block order) and their sort.  All of it happens before the
 * first row.  A partial path's process does its share of the per-row work.
 * The gpu_share of the pages that the GPU reads in place costs instead each
 * process's work per page, or the bus's where that is more, whether the
 * pages are all-visible or not: the GPU decides the visibility of the
 * others' tuples (scan_row_reader_pin).
 *
 * PostgreSQL's cost model leaves out the reading of out-of-line values,
 * for its plans as for this one, though it can be most of a scan's time
 * (a vector of 768 dimensions is two TOAST chunks found through an index:
 * several microseconds a row, against a tenth of one for a plain row).
 * Both plans read the same values; what differs is in how many processes.
 * So this path is charged the difference between its process's share of
 * that reading and a process's share in the most parallel scan of the
 * table, PostgreSQL's own (as its heuristic sizes it) or GpuTopK's partial
 * path: nothing for the most parallel one, the more the fewer processes.
 */
static void
cost_topk_path(PlannerInfo *root, RelOptInfo *rel, Path *path, const HeapCostInputs *in)
{
	double		bound = Min(topk_estimated_bound(root), Max(rel->rows, 1.0));
	double		divisor = path->parallel_workers > 0 ?
		scan_parallel_divisor(path->parallel_workers) : 1.0;
	Cost		run;
	double		spc_seq_page_cost;

	get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
	/* as for a parallel sequential scan, the pages are not divided */
	run = spc_seq_page_cost * rel->pages +
		((cpu_tuple_cost + in->where.per_tuple) * rel->tuples +
		 (TOPK_PUSH_COST_FACTOR * cpu_operator_cost + in->key_per_row) * rel->rows) *
		(1.0 - in->gpu_share) / divisor +
		in->gpu_share * rel->pages * cpu_tuple_cost *
		Max(TOPK_GPU_PAGE_CPU_COST_FACTOR / divisor, TOPK_GPU_PAGE_BUS_COST_FACTOR) +
		in->out_of_line * (1.0 / divisor - 1.0 / in->most_processes) +
		spc_seq_page_cost * Min(bound, rel->pages) +
		topk_sort_cost(bound) + path->pathtarget->cost.per_tuple * bound;
	/* each process returns at most its own bound's rows */
	path->rows = clamp_row_est(Min(bound, rel->rows / divisor));
	path->startup_cost = in->where.startup + path->pathtarget->cost.startup + run;
	path->total_cost = path->startup_cost;
}

static Path *
make_heap_topk_path(PlannerInfo *root, RelOptInfo *rel, List *private, int workers,
					const HeapCostInputs *in)
{
	CustomPath *path = topk_make_path(root, rel, private, workers);

	cost_topk_path(root, rel, &path->path, in);
	return &path->path;
}

static void
topk_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					  RangeTblEntry *rte)
{
	List	   *private;
	HeapCostInputs in = {0};
	bool		all_compiled;
	bool		key_compiles;
	int			workers;

	if (prev_set_rel_pathlist_hook)
		prev_set_rel_pathlist_hook(root, rel, rti, rte);

	if (!gputopk_enabled || !query_is_topk(root, rel, rte) ||
		rel->tuples < gputopk_min_table_rows || !sort_keys_of(root, rel, &private))
		return;

	in.where = where_clause_cost(root, rel, &all_compiled);
	key_compiles = topk_key_compiles(rel, private);
	in.gpu_share = gpu_pages_share(all_compiled &&
								   (key_compiles || vector_key_on_gpu(root, rel, private)));
	if (!key_compiles)
		interpreted_key_cost(root, rel, private, &in);
	/* the TOAST pages the key reads are read by the processes too */
	workers = topk_partial_workers(root, rel, rel->pages + (BlockNumber) in.out_of_line_pages);
	in.most_processes = Max(postgres_scan_divisor(rel),
							workers > 0 ? scan_parallel_divisor(workers) : 1.0);
	add_path(rel, make_heap_topk_path(root, rel, private, 0, &in));
	colindex_path_add(root, rel, private, in.where);
	if (workers > 0)
		add_partial_path(rel, make_heap_topk_path(root, rel, private, workers, &in));
}

void
topk_path_init(void)
{
	RegisterCustomScanMethods(&topk_scan_methods.scan);
	prev_set_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = topk_set_rel_pathlist;
}
