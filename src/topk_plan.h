/*-------------------------------------------------------------------------
 *
 * topk_plan.h
 *	  GpuTopK's paths and plans, as the table's and the column index's paths
 *	  make them (topk_plan.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_PLAN_H
#define TOPK_PLAN_H

#include "nodes/extensible.h"
#include "nodes/pathnodes.h"


/* The bound k + m the planner assumes: constants as given, else a default. */
extern double topk_estimated_bound(PlannerInfo *root);

/* A GpuTopK path, not yet costed. */
extern CustomPath *topk_make_path(PlannerInfo *root, RelOptInfo *rel, List *private,
								  int workers);

/* The cost of sorting the bound's rows. */
extern Cost topk_sort_cost(double bound);

/* The workers of a partial path over rel that reads pages, or 0. */
extern int	topk_partial_workers(PlannerInfo *root, RelOptInfo *rel, BlockNumber pages);

/* Whether the ranking key is computed without the interpreter. */
extern bool topk_key_compiles(RelOptInfo *rel, List *private);

#endif							/* TOPK_PLAN_H */
