/*-------------------------------------------------------------------------
 *
 * topk_exec.h
 *	  Executing GpuTopK (topk_exec.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_EXEC_H
#define TOPK_EXEC_H

#include "nodes/extensible.h"

extern Node *topk_create_scan_state(CustomScan *cscan);

#endif							/* TOPK_EXEC_H */
