/*-------------------------------------------------------------------------
 *
 * groups_exec.h
 *	  Executing GpuTopKGroups (groups_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_EXEC_H
#define GROUPS_EXEC_H

#include "nodes/extensible.h"

extern Node *groups_create_scan_state(CustomScan *cscan);

#endif							/* GROUPS_EXEC_H */
