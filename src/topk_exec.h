/*-------------------------------------------------------------------------
 *
 * topk_exec.h
 *	  Executing GpuTopK (topk_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_EXEC_H
#define TOPK_EXEC_H

#include "scan_driver.h"

extern const ScanDriverMethods topk_scan_methods;

#endif							/* TOPK_EXEC_H */
