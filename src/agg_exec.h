/*-------------------------------------------------------------------------
 *
 * agg_exec.h
 *	  Executing GpuTopKAgg (agg_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_EXEC_H
#define AGG_EXEC_H

#include "scan_driver.h"

extern const ScanDriverMethods agg_scan_methods;

#endif							/* AGG_EXEC_H */
