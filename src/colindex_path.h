/*-------------------------------------------------------------------------
 *
 * colindex_path.h
 *	  Planning GpuTopK over a column index (colindex_path.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_PATH_H
#define COLINDEX_PATH_H

#include "nodes/pathnodes.h"

/* Add a path over each column index of rel that holds the ranking key. */
extern void colindex_path_add(PlannerInfo *root, RelOptInfo *rel, List *private,
							  QualCost where);

/*
 * Whether the GPU would read the index (see colindex_gpu.c); whole: its
 * copy on one GPU, as grouping needs, else partitioned over the GPUs where
 * it is larger than one's budget.
 */
extern bool colindex_path_read_on_gpu(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
									  bool whole);

#endif							/* COLINDEX_PATH_H */
