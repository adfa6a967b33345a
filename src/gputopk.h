/*-------------------------------------------------------------------------
 *
 * gputopk.h
 *	  Settings and version of the gputopk extension, shared by src/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUTOPK_H
#define GPUTOPK_H

/* keep in step with default_version in gputopk.control */
#define GPUTOPK_VERSION "0.1"

/* values of gputopk.device */
typedef enum DeviceSetting
{
	DEVICE_SETTING_AUTO,
	DEVICE_SETTING_GPU,
	DEVICE_SETTING_CPU
} DeviceSetting;

/* GUC variables (src/gputopk.c) */
extern bool gputopk_enabled;
extern bool gputopk_enable_column_index;
extern bool gputopk_gpu_pages;
extern int	gputopk_device;
extern int	gputopk_min_table_rows;
extern int	gputopk_max_parallel_workers;
extern int	gputopk_algorithm;		/* a GpuTopkAlgorithm */

#endif							/* GPUTOPK_H */
