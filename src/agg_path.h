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

extern const CustomScanMethods agg_scan_methods;

/* Install the planner hook (at _PG_init). */
extern void agg_path_init(void);

#endif							/* AGG_PATH_H */
