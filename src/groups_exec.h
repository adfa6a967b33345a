/*-------------------------------------------------------------------------
 *
 * groups_exec.h
 *	  Executing GpuTopKGroups (groups_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_EXEC_H
#define GROUPS_EXEC_H

#include "scan_driver.h"

extern const ScanDriverMethods groups_scan_methods;

#endif							/* GROUPS_EXEC_H */
