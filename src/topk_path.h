/*-------------------------------------------------------------------------
 *
 * topk_path.h
 *	  Planning GpuTopK over a table (topk_path.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_PATH_H
#define TOPK_PATH_H


/* Install the planner hook (at _PG_init). */
extern void topk_path_init(void);

#endif							/* TOPK_PATH_H */
