/*-------------------------------------------------------------------------
 *
 * topk_scan.h
 *	  The GpuTopK custom scan: what the planner (topk_path.c) hands the
 *	  executor (topk_exec.c).
 *
 * The plan's custom_private is a list of TopkScanField entries in order;
 * custom_exprs holds the LIMIT count and OFFSET expressions (either may be
 * NULL), evaluated when the scan starts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_SCAN_H
#define TOPK_SCAN_H

#include "nodes/extensible.h"

#include "keys.h"

typedef enum TopkScanField
{
	TOPK_FIELD_KEY_TYPE,		/* Integer: KeyType of the first sort key */
	TOPK_FIELD_DESC,			/* Integer: first sort key descending */
	TOPK_FIELD_WITH_TIES,		/* Integer: FETCH FIRST ... WITH TIES */
	TOPK_FIELD_SORT_ATTNOS,		/* IntList: columns of the ORDER BY */
	TOPK_FIELD_SORT_OPS,		/* OidList: their ordering operators */
	TOPK_FIELD_SORT_COLLATIONS, /* OidList */
	TOPK_FIELD_SORT_NULLS_FIRST /* IntList */
} TopkScanField;

#define TOPK_SCAN_NAME "GpuTopK"

extern const CustomScanMethods topk_scan_methods;

/* topk_path.c */
extern void topk_path_init(void);

/* topk_exec.c */
extern Node *topk_create_scan_state(CustomScan *cscan);

#endif							/* TOPK_SCAN_H */
