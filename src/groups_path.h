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


/* Install the planner hook (at _PG_init). */
extern void groups_path_init(void);

#endif							/* GROUPS_PATH_H */
