/*-------------------------------------------------------------------------
 *
 * topk_plan.c
 *	  GpuTopK's paths and plans, as both of its paths make them: over the
 *	  table's pages (topk_path.c) and over a column index (colindex_path.c).
 *
 * A path carries the ranking key and the ORDER BY in its custom_private
 * (topk_scan.h); its plan takes the LIMIT and OFFSET expressions too, and
 * the executor's methods (topk_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"

#include "scan_key_program.h"
#include "scan_parallel_policy.h"
#include "topk_exec.h"
#include "topk_plan.h"
#include "topk_scan.h"

/* the rows assumed for a LIMIT given as a parameter */
#define TOPK_DEFAULT_BOUND 100.0

static Plan *plan_topk_path(PlannerInfo *root, RelOptInfo *rel,
							CustomPath *best_path, List *tlist,
							List *clauses, List *custom_plans);

static const CustomPathMethods topk_path_methods = {
	.CustomName = TOPK_SCAN_NAME,
	.PlanCustomPath = plan_topk_path,
};

/* The bound k + m the planner assumes: constants as given, else a default. */
double
topk_estimated_bound(PlannerInfo *root)
{
	Query	   *parse = root->parse;
	double		bound = TOPK_DEFAULT_BOUND;

	if (IsA(parse->limitCount, Const))
		bound = (double) DatumGetInt64(((Const *) parse->limitCount)->constvalue);
	if (parse->limitOffset && IsA(parse->limitOffset, Const) &&
		!((Const *) parse->limitOffset)->constisnull)
		bound += (double) DatumGetInt64(((Const *) parse->limitOffset)->constvalue);
	return Max(bound, 1.0);
}

/* The cost of sorting the bound's rows. */
Cost
topk_sort_cost(double bound)
{
	return bound * (cpu_tuple_cost + 2.0 * cpu_operator_cost * log2(bound + 1.0));
}

/*
 * Whether the ranking key is computed without the interpreter: a column of
 * a key type, or numeric arithmetic that a key program computes.
 */
bool
topk_key_compiles(RelOptInfo *rel, List *private)
{
	TopkKeySource source = intVal(list_nth(private, TOPK_FIELD_KEY_SOURCE));
	Expr	   *key = linitial(llast(private));

	return (source == KEY_SOURCE_VALUE && IsA(key, Var)) ||
		(source == KEY_SOURCE_EXACT_FLOAT8 && scan_key_program_compile(key, rel->relid) != NULL);
}

/* A GpuTopK path, not yet costed. */
CustomPath *
topk_make_path(PlannerInfo *root, RelOptInfo *rel, List *private, int workers)
{
	CustomPath *path = makeNode(CustomPath);

	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = NULL;
	path->path.parallel_aware = workers > 0;
	path->path.parallel_safe = workers > 0;
	path->path.parallel_workers = workers;
	path->path.pathkeys = root->sort_pathkeys;
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_paths = NIL;
	path->custom_private = private;
	path->methods = &topk_path_methods;
	return path;
}

/*
 * The workers of a partial path over rel that reads pages (the table's or
 * a column index's), or 0 where none is offered.  Besides the scan in one
 * process, such a path has each process scan its share of the pages and
 * return its own top k + m rows in order, and a Gather Merge above merges
 * them for the Limit: the true top k + m rows are among the union of every
 * process's.  A child's partial paths would go to a Parallel Append, which
 * does not keep order.
 */
int
topk_partial_workers(PlannerInfo *root, RelOptInfo *rel, BlockNumber pages)
{
	Query	   *parse = root->parse;

	if (rel->reloptkind != RELOPT_BASEREL || !rel->consider_parallel ||
		!is_parallel_safe(root, parse->limitCount) ||
		!is_parallel_safe(root, parse->limitOffset))
		return 0;
	return scan_parallel_workers(rel, pages);
}

static Plan *
plan_topk_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = list_concat(list_make2(copyObject(root->parse->limitCount),
												 copyObject(root->parse->limitOffset)),
									  copyObject(llast(best_path->custom_private)));
	cscan->custom_private = list_copy_head(best_path->custom_private, TOPK_FIELD_EXPRS);
	cscan->custom_scan_tlist = NIL;
	cscan->methods = &topk_scan_methods.scan;
	return &cscan->scan.plan;
}
