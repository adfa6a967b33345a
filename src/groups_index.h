/*-------------------------------------------------------------------------
 *
 * groups_index.h
 *	  GpuTopKGroups over a column index's copy on the GPU (groups_index.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_INDEX_H
#define GROUPS_INDEX_H

#include "groups_state.h"

/*
 * The scan in one process, its reader begun, over the plan's column index
 * (gs->index_oid): the entries of all-visible blocks grouped on the GPU,
 * the other blocks' rows on the CPU, and the groups the GPU chose made the
 * set (or, should the GPU fail the job under auto, every block read on the
 * CPU).  False, with nothing read, where the GPU cannot take the query:
 * the caller reads the table.
 */
extern bool groups_index_scan(GroupsScanState *gs);

/*
 * The table's blocks that are not all-visible where they are so many that
 * the page form (groups_gpu.c), which reads them on the GPU too, costs
 * less than reading their rows on the CPU beside the index; else 0.
 */
extern BlockNumber groups_index_declines(GroupsScanState *gs);

#endif							/* GROUPS_INDEX_H */
