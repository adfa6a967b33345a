/*-------------------------------------------------------------------------
 *
 * groups_path.c
 *	  Planning GpuTopKGroups: SELECT g, agg... FROM t [WHERE ...] GROUP BY g
 *	  ORDER BY agg ... LIMIT k [OFFSET m] as one scan of t that groups its
 *	  rows and returns only the groups that can be among the first k + m.
 *
 * The path is offered to the ordered relation (create_upper_paths_hook at
 * UPPERREL_ORDERED) beside PostgreSQL's sorts of the grouped relation's
 * paths: a Sort over a GpuTopKGroups scan, under PostgreSQL's own Limit.
 * The scan keeps the k + m groups that come first by the first ORDER BY
 * key and every group tied with the last of them; the Sort orders those by
 * the whole ORDER BY and the Limit cuts them, WITH TIES too, so that the
 * answer is PostgreSQL's.  Offered when:
 *	 - the query reads one heap table and groups it by one or two columns
 *	   of types GpuTopKAgg groups by (agg_path.c), or by one text or
 *	   varchar column under a deterministic collation, with no HAVING,
 *	   grouping sets, DISTINCT, window functions or set-returning functions;
 *	 - LIMIT is a constant above 0, and OFFSET a constant or absent;
 *	 - the first ORDER BY key is one of the aggregates the scan computes
 *	   (groups_aggs.c) but avg of integers or numerics, or a grouping column of a type
 *	   with keys (not bool), in its type's default order; and every
 *	   aggregate of the target list (one at least) is one of those, over the
 *	   table's columns, or else the rows form is offered (add_rows_path);
 *	 - the WHERE clause is one the scan can run (agg_path_where_is_plain);
 *	 - the grouping column has statistics: a column not yet analyzed
 *	   stays with PostgreSQL.
 * Where the target list has other aggregates, only the rows form: the
 * scan returns the table's rows of the groups kept to PostgreSQL's
 * HashAggregate, in one process on the CPU (add_rows_path).  Otherwise
 * three forms: in one process, where the estimated groups fit in hash_mem
 * (work_mem times hash_mem_multiplier); partitioned, in a parallel plan;
 * and the GPU form, in one process, where the GPU can group the table's
 * pages (groups_gpu.h): the GPU is the backend, gputopk.gpu_pages is on,
 * the service has mapped shared_buffers, every WHERE clause compiles, the
 * grouping is by value, and the GPU computes every aggregate and ranks by
 * the first ORDER BY key; a text grouping column there is grouped by its
 * bytes, offered where its values average at most GPU_GROUPS_TEXT_BYTES
 * bytes and the groups fit in hash_mem (a longer value sends the scan back
 * to the CPU: groups_gpu.h).  Where a column index the GPU reads holds the
 * grouping and aggregated columns and checks every WHERE clause, the GPU
 * form over its entries is offered too (groups_index.h), its GPU's work
 * costed by the index's pages instead of the table's; a text grouping
 * column there is grouped by the index's dictionary codes.  Under
 * gputopk.device = gpu only the GPU forms are offered.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/paths.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"
#include "utils/typcache.h"

#include "access/xact.h"
#include "access/xlog.h"

#include "agg_exchange.h"
#include "agg_path.h"
#include "colindex.h"
#include "colindex_coverage.h"
#include "colindex_path.h"
#include "device.h"
#include "groups_aggs.h"
#include "groups_exec.h"
#include "groups_path.h"
#include "groups_scan.h"
#include "gpu_groups.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_parallel_policy.h"
#include "service_client.h"
#include "settings.h"

/*
 * Per-row costs in fractions of PostgreSQL's: the scan reads a row's
 * columns from its page for a fraction of what a sequential scan costs,
 * and adds it to its group's cells for a fraction of what a HashAggregate
 * spends on a transition function call.
 */
#define GROUPS_TUPLE_COST_FACTOR 0.25
#define GROUPS_ADD_COST_FACTOR 0.25
/* a partitioned plan's group, per word: written to a file and read back */
#define GROUPS_EXCHANGE_COST_FACTOR 0.5
/* a page the GPU groups: the scan's work on it, in cpu_tuple_costs (as GpuTopK's) */
#define GROUPS_GPU_PAGE_COST_FACTOR 4.0

/* a group's bytes in the hash table beside its cells (groups_table.c) */
#define GROUPS_ENTRY_BYTES 32.0

static create_upper_paths_hook_type prev_create_upper_paths_hook = NULL;

static Plan *plan_groups_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							  List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods groups_path_methods = {
	.CustomName = GROUPS_SCAN_NAME,
	.PlanCustomPath = plan_groups_path,
};

/* what the planner found of a query the scan can run, for its paths */
typedef struct GroupsQuery
{
	RelOptInfo *scan_rel;
	RelOptInfo *grouped_rel;
	List	   *scan_exprs;		/* the grouping column, then the aggregates */
	int			naggs;
	int			cell_bytes;		/* a group's cells */
	double		value_bytes;	/* and the values they keep whole (numeric, text, ...) */
	bool		combinable;		/* every aggregate's cells combine */
	bool		gpu_computable; /* the GPU computes every aggregate, and ranks */
	bool		by_text;		/* the grouping column is text or varchar */
	bool		others;			/* aggregates the scan does not compute, for an
								 * Agg over the kept groups' rows (the rows form) */
	int			rank;			/* GROUPS_FIELD_RANK's */
	bool		desc;
	bool		nulls_first;
	int64		keep;
	double		groups;
} GroupsQuery;

/* The value of a LIMIT or OFFSET clause (0 where absent); false unless a constant. */
static bool
constant_of(Node *clause, int64 *value)
{
	Const	   *c = (Const *) clause;

	*value = 0;
	if (clause == NULL)
		return true;
	if (!IsA(c, Const) || c->constisnull || c->consttype != INT8OID)
		return false;
	*value = DatumGetInt64(c->constvalue);
	return true;
}

/* The groups the scan keeps before ties: LIMIT plus OFFSET; false if not constants. */
static bool
groups_to_keep(Query *parse, int64 *keep)
{
	int64		count;
	int64		offset;

	if (parse->limitCount == NULL || !constant_of(parse->limitCount, &count) ||
		!constant_of(parse->limitOffset, &offset) || count <= 0 || offset < 0 ||
		count > PG_INT64_MAX - offset)
		return false;
	*keep = count + offset;
	return true;
}

/*
 * The grouping column and the aggregates of the grouped relation's target,
 * in the scan's order, with how many aggregates, the bytes of their cells,
 * whether they combine, and what the groups are ranked by: an aggregate
 * (its place among them) or a grouping column of a type with keys (-1 -
 * its place).  False if the scan cannot compute the target or rank by the
 * first ORDER BY key.
 */
static bool
scan_exprs_of(PlannerInfo *root, GroupsQuery *q)
{
	SortGroupClause *sort = linitial_node(SortGroupClause, root->parse->sortClause);
	Node	   *rank_expr = (Node *) get_sortgroupclause_expr(sort, root->processed_tlist);
	List	   *vars;
	ListCell   *lc;

	q->scan_exprs = get_sortgrouplist_exprs(root->parse->groupClause, root->processed_tlist);
	q->naggs = 0;
	q->cell_bytes = 0;
	q->value_bytes = 0;
	q->others = false;
	q->combinable = true;
	q->gpu_computable = q->naggs <= GPU_GROUPS_MAX_AGGS;
	q->rank = -1 - GROUPS_MAX_COLUMNS;	/* none yet */
	vars = pull_var_clause((Node *) q->grouped_rel->reltarget->exprs,
						   PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						   PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Node	   *node = lfirst(lc);
		GroupAgg	agg;
		int			gpu_kind;

		if (list_member(q->scan_exprs, node))
			continue;
		/* a column other than the grouping one would need to be grouped by */
		if (!IsA(node, Aggref))
			return false;
		if (!groups_agg_of((Aggref *) node, q->scan_rel->relid, &agg))
		{
			q->others = true;
			continue;
		}
		if (equal(node, rank_expr) && groups_agg_can_rank(agg.kind))
			q->rank = q->naggs;
		q->gpu_computable &= groups_agg_gpu_kind(&agg, &gpu_kind) &&
			!(q->rank == q->naggs && gpu_kind == GPU_GROUPS_WIDE_SUM);
		q->scan_exprs = lappend(q->scan_exprs, node);
		q->cell_bytes += groups_agg_cell_bytes(agg.kind);
		/* a value kept whole is a palloc'd copy (its chunk header and width) */
		if (groups_agg_keeps_value(agg.kind))
			q->value_bytes += MAXALIGN(2 * sizeof(void *) +
									   get_attavgwidth(planner_rt_fetch(q->scan_rel->relid,
																		root)->relid,
													   agg.attno));
		q->combinable &= groups_agg_can_combine(agg.kind);
		q->naggs++;
	}
	/* or a grouping column of a type with keys, -1 - its place */
	for (int c = 0; q->rank < 0 && c < list_length(root->parse->groupClause); c++)
	{
		KeyType		key_type;

		if (equal(list_nth(q->scan_exprs, c), rank_expr) &&
			key_type_of(exprType(rank_expr), &key_type))
			q->rank = -1 - c;
	}
	q->gpu_computable &= q->naggs <= GPU_GROUPS_MAX_AGGS;
	return q->rank != -1 - GROUPS_MAX_COLUMNS && q->naggs > 0;
}

/* Whether the GPU forms can group the table (see the header comment). */
static bool
gpu_can_group(const GroupsQuery *q)
{
	ListCell   *lc;

	if (!q->gpu_computable || !gputopk_gpu_pages || !service_buffers_mapped() ||
		IsolationIsSerializable() || RecoveryInProgress() ||
		device_selected_backend() != BACKEND_GPU)
		return false;
	foreach(lc, q->scan_rel->baserestrictinfo)
		if (!scan_filter_program_compiles((Node *) lfirst_node(RestrictInfo, lc)->clause,
										  q->scan_rel->relid))
			return false;
	return true;
}

/* Whether a clause reads a text or varchar column. */
static bool
reads_text(Node *clause)
{
	ListCell   *lc;

	foreach(lc, pull_var_clause(clause, PVC_RECURSE_AGGREGATES | PVC_RECURSE_PLACEHOLDERS))
	{
		Oid			type = exprType(lfirst(lc));

		if (type == TEXTOID || type == VARCHAROID)
			return true;
	}
	return false;
}

/*
 * The column index of the table whose entries the GPU form would group
 * instead of the table's pages, or InvalidOid: one that the GPU reads
 * (colindex_path.h), that holds the grouping columns and the aggregates'
 * columns, and checks every WHERE clause (none over text, whose entries
 * hold dictionary codes); of those the one of fewest pages.  *index_pages:
 * its pages.
 */
static Oid
gpu_index_of(PlannerInfo *root, const GroupsQuery *q, double *index_pages)
{
	Oid			am = colindex_am_oid();
	Oid			best = InvalidOid;
	ListCell   *lc;

	if (!gputopk_enable_column_index || !OidIsValid(am))
		return InvalidOid;
	foreach(lc, q->scan_rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		Bitmapset  *columns;
		Relation	irel;
		ListCell   *rc;

		if (index->relam != am || index->indpred != NIL ||
			!colindex_path_read_on_gpu(root, q->scan_rel, index, true) ||
			(OidIsValid(best) && index->pages >= *index_pages))
			continue;
		irel = index_open(index->indexoid, NoLock);
		columns = colindex_coverage_columns(irel);
		index_close(irel, NoLock);
		if (!colindex_coverage_reads_only((Node *) q->scan_exprs, q->scan_rel->relid, columns))
			continue;
		foreach(rc, q->scan_rel->baserestrictinfo)
		{
			Node	   *clause = (Node *) lfirst_node(RestrictInfo, rc)->clause;

			if (reads_text(clause) ||
				!colindex_coverage_checks(clause, q->scan_rel->relid, columns))
				break;
		}
		if (rc != NULL)
			continue;
		best = index->indexoid;
		*index_pages = index->pages;
	}
	return best;
}

/*
 * Whether the grouping is one the scan takes: one column of a type
 * GpuTopKAgg groups by, or of text or varchar under a deterministic
 * collation (*by_text), whose equality is that of the bytes; or two columns
 * of types GpuTopKAgg groups by.
 */
static bool
group_columns_of(PlannerInfo *root, Index relid, bool *by_text)
{
	List	   *clauses = root->parse->groupClause;
	SortGroupClause *sgc = linitial_node(SortGroupClause, clauses);
	Var		   *var = (Var *) get_sortgroupclause_expr(sgc, root->processed_tlist);
	ListCell   *lc;

	*by_text = false;
	if (list_length(clauses) > 2)
		return false;
	foreach(lc, clauses)
		if (agg_path_group_clause_column(root, lfirst_node(SortGroupClause, lc), relid) == 0)
			break;
	if (lc == NULL)
		return true;
	if (list_length(clauses) != 1 || !IsA(var, Var) || var->varno != relid ||
		var->varlevelsup != 0 || var->varattno <= 0 ||
		(var->vartype != TEXTOID && var->vartype != VARCHAROID) ||
		!OidIsValid(var->varcollid) || !get_collation_isdeterministic(var->varcollid) ||
		sgc->eqop != lookup_type_cache(var->vartype, TYPECACHE_EQ_OPR)->eq_opr)
		return false;
	*by_text = true;
	return true;
}

/* The direction of the first ORDER BY key: false unless its type's default order. */
static bool
rank_order_of(PlannerInfo *root, bool *desc, bool *nulls_first)
{
	SortGroupClause *sort = linitial_node(SortGroupClause, root->parse->sortClause);
	Node	   *expr = (Node *) get_sortgroupclause_expr(sort, root->processed_tlist);
	TypeCacheEntry *type = lookup_type_cache(exprType(expr),
											 TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);

	*nulls_first = sort->nulls_first;
	*desc = sort->sortop == type->gt_opr;
	return sort->sortop == type->lt_opr || sort->sortop == type->gt_opr;
}

/*
 * Cost: the table's pages; per row a fraction of what a sequential scan
 * and a HashAggregate cost, and the WHERE clause, each process its share;
 * per group a comparison with the groups kept, in each process that holds
 * it, and in the partitioned form its records written and read back; per
 * group returned its output.  Nothing comes out before the scan ends.  In
 * the GPU form, the gpu_share of the pages that the GPU groups costs
 * instead the scan's work per page, as for GpuTopK, over gpu_pages: the
 * table's pages, or its column index's, whether all-visible or not (the
 * GPU decides visibility on the others).  The rows form (table_rows) then
 * reads the table once more.
 */
static void
cost_groups_path(PlannerInfo *root, const GroupsQuery *q, Path *path, int partitions,
				 double gpu_share, double gpu_pages, bool table_rows)
{
	RelOptInfo *scan_rel = q->scan_rel;
	int			workers = path->parallel_workers;
	double		divisor = workers > 0 ? scan_parallel_divisor(workers) : 1.0;
	double		per_group = 1.0 + log2((double) q->keep + 1.0);
	double		spc_seq_page_cost;
	QualCost	where;
	Cost		run;

	get_tablespace_page_costs(scan_rel->reltablespace, NULL, &spc_seq_page_cost);
	cost_qual_eval(&where, scan_rel->baserestrictinfo, root);
	if (partitions > 0)
		per_group += GROUPS_EXCHANGE_COST_FACTOR * (3.0 + q->cell_bytes / sizeof(uint64)) *
			(workers + 1);
	run = spc_seq_page_cost * scan_rel->pages +
		((GROUPS_TUPLE_COST_FACTOR * cpu_tuple_cost + where.per_tuple) * scan_rel->tuples +
		 GROUPS_ADD_COST_FACTOR * cpu_operator_cost * (1 + q->naggs) * scan_rel->rows +
		 cpu_operator_cost * q->groups * per_group) * (1.0 - gpu_share) / divisor +
		gpu_share * gpu_pages * GROUPS_GPU_PAGE_COST_FACTOR * cpu_tuple_cost +
		(cpu_tuple_cost + path->pathtarget->cost.per_tuple) * path->rows;
	/* the rows form reads the table again, each row's group looked up */
	if (table_rows)
		run += spc_seq_page_cost * scan_rel->pages +
			(GROUPS_TUPLE_COST_FACTOR * cpu_tuple_cost + where.per_tuple + cpu_operator_cost) *
			scan_rel->tuples;
	path->startup_cost = where.startup + path->pathtarget->cost.startup + run;
	path->total_cost = path->startup_cost;
}

/*
 * A GpuTopKGroups path: in one process (on the GPU where gpu_share > 0,
 * over the column index index where valid, else over every page of the
 * table; returning the kept groups' rows of the table where table_rows),
 * or partitioned (parallel with workers).
 */
static CustomPath *
make_groups_path(PlannerInfo *root, const GroupsQuery *q, int partitions, int workers,
				 double gpu_share, Oid index, double index_pages, bool table_rows)
{
	CustomPath *path = makeNode(CustomPath);
	double		returned = Min(q->groups, (double) q->keep * Max(partitions, 1));

	path->path.pathtype = T_CustomScan;
	path->path.parent = table_rows ? q->scan_rel : q->grouped_rel;
	path->path.pathtarget = table_rows ? q->scan_rel->reltarget : q->grouped_rel->reltarget;
	path->path.parallel_aware = workers > 0;
	path->path.parallel_safe = workers > 0;
	path->path.parallel_workers = workers;
	if (table_rows)
		returned = q->scan_rel->rows * returned / Max(q->groups, 1.0);
	path->path.rows = clamp_row_est(workers > 0 ? returned / scan_parallel_divisor(workers) :
									returned);
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_private =
		list_make5(list_make1_int(q->scan_rel->relid),
				   list_make3_int(q->rank, q->desc, q->nulls_first),
				   makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(q->keep),
							 false, FLOAT8PASSBYVAL),
				   list_make4_int(partitions, gpu_share > 0, (int) index, table_rows),
				   makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8), Float8GetDatum(q->groups),
							 false, FLOAT8PASSBYVAL));
	path->custom_private =
		lappend(path->custom_private,
				list_concat(extract_actual_clauses(q->scan_rel->baserestrictinfo, true),
							extract_actual_clauses(q->scan_rel->baserestrictinfo, false)));
	path->custom_private = lappend(path->custom_private, q->scan_exprs);
	path->methods = &groups_path_methods;
	cost_groups_path(root, q, &path->path, partitions, gpu_share,
					 OidIsValid(index) ? index_pages : q->scan_rel->pages, table_rows);
	return path;
}

/* A Sort over a path of the scan's groups into the ordered relation, as create_ordered_paths sorts. */
static void
add_sorted_path(PlannerInfo *root, RelOptInfo *ordered_rel, Path *path)
{
	Path	   *sorted = (Path *) create_sort_path(root, ordered_rel, path, root->sort_pathkeys,
												   root->limit_tuples);

	/* the final target is the planner's note of it */
	if (sorted->pathtarget != root->upper_targets[UPPERREL_ORDERED])
		sorted = apply_projection_to_path(root, ordered_rel, sorted,
										  root->upper_targets[UPPERREL_ORDERED]);
	add_path(ordered_rel, sorted);
}

/*
 * The partitioned form in a parallel plan, for many groups: a Gather over
 * a GpuTopKGroups whose processes exchange their groups' cells by group
 * through temporary files (agg_exchange.h), each group going to one
 * process, which keeps each of its partitions' first groups.  Enough
 * partitions, at least four a process, that each one's groups fit in
 * hash_mem; none if more than GROUP_EXCHANGE_MAX_PARTITIONS would be
 * needed, if the records might not fit in temp_file_limit, if an
 * aggregate's cells do not combine (a float sum's), or for text groups
 * (the records are of a fixed size).
 */
static void
add_partitioned_path(PlannerInfo *root, const GroupsQuery *q, RelOptInfo *ordered_rel)
{
	double		group_bytes = GROUPS_ENTRY_BYTES + q->cell_bytes;
	double		partitions;
	double		rows;
	int			workers;
	CustomPath *path;

	if (!q->combinable || q->by_text || !q->scan_rel->consider_parallel ||
		!q->grouped_rel->consider_parallel ||
		(workers = scan_parallel_workers(q->scan_rel, q->scan_rel->pages)) <= 0)
		return;
	partitions = Max(4.0 * (workers + 1),
					 ceil(q->groups * group_bytes / (double) get_hash_memory_limit()));
	if (partitions > GROUP_EXCHANGE_MAX_PARTITIONS ||
		(temp_file_limit >= 0 &&
		 Min(q->groups * (workers + 1), q->scan_rel->rows) *
		 (GROUPS_RECORD_HEADER_BYTES + q->cell_bytes) > (double) temp_file_limit * 1024.0))
		return;
	path = make_groups_path(root, q, (int) partitions, workers, 0.0, InvalidOid, 0.0, false);
	rows = Min(q->groups, (double) q->keep * partitions);
	add_sorted_path(root, ordered_rel,
					(Path *) create_gather_path(root, q->grouped_rel, &path->path,
												q->grouped_rel->reltarget, NULL, &rows));
}

/*
 * The rows form, for a query whose select list has aggregates the scan
 * does not compute (string_agg, ...): the scan, in one process on the
 * CPU, finds the kept groups by the ranking aggregate, then returns the
 * table's rows of those groups (those that pass the WHERE clause), in the
 * table's order, to PostgreSQL's own HashAggregate, which computes every
 * aggregate of the select list over them; the Sort and Limit above choose
 * as ever.  Not where an aggregate needs its rows sorted (DISTINCT, ORDER
 * BY, WITHIN GROUP), the grouping does not hash, or the groups are ranked
 * by a grouping column.
 */
static void
add_rows_path(PlannerInfo *root, const GroupsQuery *q, RelOptInfo *ordered_rel)
{
	Query	   *parse = root->parse;
	AggClauseCosts costs;
	CustomPath *path;

	if (q->rank < 0 || root->numOrderedAggs > 0 || !grouping_is_hashable(parse->groupClause))
		return;
	path = make_groups_path(root, q, 0, 0, 0.0, InvalidOid, 0.0, true);
	MemSet(&costs, 0, sizeof(costs));
	get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &costs);
	add_sorted_path(root, ordered_rel,
					(Path *) create_agg_path(root, q->grouped_rel, &path->path,
											 q->grouped_rel->reltarget, AGG_HASHED,
											 AGGSPLIT_SIMPLE, parse->groupClause, NIL, &costs,
											 Min(q->groups, (double) q->keep)));
}

static void
groups_create_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
						  RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	GroupsQuery q = {.grouped_rel = input_rel};
	double		group_bytes;
	int32		text_width = 0;
	Oid			index;
	double		index_pages = 0;
	EstimationInfo estimate;

	if (prev_create_upper_paths_hook)
		prev_create_upper_paths_hook(root, stage, input_rel, output_rel, extra);

	if (stage != UPPERREL_ORDERED || !gputopk_enabled ||
		parse->commandType != CMD_SELECT || parse->groupingSets != NIL ||
		parse->groupClause == NIL || parse->havingQual != NULL ||
		parse->hasWindowFuncs || parse->hasTargetSRFs || parse->distinctClause != NIL ||
		parse->sortClause == NIL || !groups_to_keep(parse, &q.keep) ||
		bms_membership(root->all_baserels) != BMS_SINGLETON)
		return;
	q.scan_rel = find_base_rel(root, bms_singleton_member(root->all_baserels));
	if (q.scan_rel->tuples < gputopk_min_table_rows ||
		agg_path_heap_table_of(root, q.scan_rel) == NULL ||
		planner_rt_fetch(q.scan_rel->relid, root)->securityQuals != NIL ||
		!agg_path_where_is_plain(q.scan_rel) ||
		!group_columns_of(root, q.scan_rel->relid, &q.by_text) ||
		!scan_exprs_of(root, &q) || !rank_order_of(root, &q.desc, &q.nulls_first))
		return;

	/* the scan keeps groups in memory: it needs the column's statistics */
	estimate.flags = 0;
	q.groups = estimate_num_groups(root, list_copy_head(q.scan_exprs,
														list_length(parse->groupClause)),
								   q.scan_rel->rows, NULL, &estimate);
	if (estimate.flags & SELFLAG_USED_DEFAULT)
		return;
	/* a text group keeps its value too */
	group_bytes = GROUPS_ENTRY_BYTES + q.cell_bytes + q.value_bytes;
	if (q.by_text)
	{
		text_width = get_attavgwidth(planner_rt_fetch(q.scan_rel->relid, root)->relid,
									 ((Var *) linitial(q.scan_exprs))->varattno);
		group_bytes += MAXALIGN(VARHDRSZ + text_width);
	}
	/* the rows form alone computes every aggregate, on the CPU */
	if (q.others)
	{
		if (!device_gpu_demanded() && q.groups * group_bytes <= (double) get_hash_memory_limit())
			add_rows_path(root, &q, output_rel);
		return;
	}
	if (gpu_can_group(&q))
	{
		/*
		 * a text group by its bytes, where its values are short on average
		 * and the groups fit for the CPU should a longer one send the scan
		 * back there; in an index entry it is a code
		 */
		if (!q.by_text ||
			(text_width <= VARHDRSZ_SHORT + GPU_GROUPS_TEXT_BYTES &&
			 q.groups * group_bytes <= (double) get_hash_memory_limit()))
			add_sorted_path(root, output_rel,
							&make_groups_path(root, &q, 0, 0, 1.0, InvalidOid, 0.0,
											  false)->path);
		/* over the index, the pages that are not all-visible are read on the CPU */
		index = gpu_index_of(root, &q, &index_pages);
		if (OidIsValid(index) && q.scan_rel->allvisfrac > 0)
			add_sorted_path(root, output_rel,
							&make_groups_path(root, &q, 0, 0, q.scan_rel->allvisfrac, index,
											  index_pages, false)->path);
	}
	if (device_gpu_demanded())
		return;
	if (q.groups * group_bytes <= (double) get_hash_memory_limit())
		add_sorted_path(root, output_rel,
						&make_groups_path(root, &q, 0, 0, 0.0, InvalidOid, 0.0, false)->path);
	add_partitioned_path(root, &q, output_rel);
}

static Plan *
plan_groups_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				 List *clauses, List *custom_plans)
{
	return agg_path_plan_scan(root, best_path, tlist, GROUPS_FIELDS,
							  lfourth_int(list_nth(best_path->custom_private,
												   GROUPS_FIELD_PARTITIONS)) != 0,
							  &groups_scan_methods.scan);
}

void
groups_path_init(void)
{
	RegisterCustomScanMethods(&groups_scan_methods.scan);
	prev_create_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = groups_create_upper_paths;
}
