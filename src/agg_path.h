/*-------------------------------------------------------------------------
 *
 * agg_path.h
 *	  Planning GpuTopKAgg (agg_path.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_PATH_H
#define AGG_PATH_H

#include "nodes/extensible.h"
#include "nodes/pathnodes.h"


/*
 * What GpuTopKAgg and GpuTopKGroups (groups_path.c) ask of a query: the
 * one table it reads, as a heap relation's RTE (NULL if not); its grouping
 * column (0 for no GROUP BY; false unless one column whose equality is that
 * of its stored values), or the column of one GROUP BY item (0 if none
 * such); whether the node can run its WHERE clause itself.
 */
extern RangeTblEntry *agg_path_heap_table_of(PlannerInfo *root, RelOptInfo *input_rel);
extern bool agg_path_group_column(PlannerInfo *root, Index relid, AttrNumber *attno);
extern AttrNumber agg_path_group_clause_column(PlannerInfo *root, SortGroupClause *sgc,
											   Index relid);
extern bool agg_path_where_is_plain(RelOptInfo *rel);

/*
 * The plan of a GpuTopKAgg or GpuTopKGroups path whose custom_private is
 * nfields fields, the WHERE clause and the scan's expressions; with
 * table_rows, of a scan that returns the table's rows (see agg_path.c).
 */
extern Plan *agg_path_plan_scan(PlannerInfo *root, CustomPath *best_path, List *tlist,
								int nfields, bool table_rows,
								const CustomScanMethods *methods);

/* Install the planner hook (at _PG_init). */
extern void agg_path_init(void);

#endif							/* AGG_PATH_H */
