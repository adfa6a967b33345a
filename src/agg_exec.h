/*-------------------------------------------------------------------------
 *
 * agg_exec.h
 *	  Executing GpuTopKAgg (agg_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_EXEC_H
#define AGG_EXEC_H

#include "nodes/extensible.h"

extern Node *agg_create_scan_state(CustomScan *cscan);

#endif							/* AGG_EXEC_H */
