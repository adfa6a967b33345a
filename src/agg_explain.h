/*-------------------------------------------------------------------------
 *
 * agg_explain.h
 *	  EXPLAIN of a GpuTopKAgg scan (agg_explain.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_EXPLAIN_H
#define AGG_EXPLAIN_H

#include "nodes/execnodes.h"

struct ExplainState;

extern void agg_explain_scan(CustomScanState *node, List *ancestors,
							 struct ExplainState *es);

#endif							/* AGG_EXPLAIN_H */
