/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The gputopk.* settings that planning and scans read (settings.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SETTINGS_H
#define SETTINGS_H

extern bool gputopk_enabled;
extern bool gputopk_enable_column_index;
extern bool gputopk_gpu_pages;
extern int	gputopk_min_table_rows;
extern int	gputopk_max_parallel_workers;
extern int	gputopk_algorithm;		/* a GpuTopkAlgorithm */

extern void settings_define(void);

#endif							/* SETTINGS_H */
