/*-------------------------------------------------------------------------
 *
 * groups_path.h
 *	  Planning GpuTopKGroups (groups_path.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_PATH_H
#define GROUPS_PATH_H

#include "nodes/extensible.h"

extern const CustomScanMethods groups_scan_methods;

/* Install the planner hook (at _PG_init). */
extern void groups_path_init(void);

#endif							/* GROUPS_PATH_H */
