/*-------------------------------------------------------------------------
 *
 * agg_groups.h
 *	  A GpuTopKAgg run's groups (agg_groups.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_GROUPS_H
#define AGG_GROUPS_H

#include "agg_state.h"

/* A run over one set of rows, at a spill depth; its GPU jobs, if any. */
extern void agg_run_begin(AggScanState *ts, int depth);
extern void agg_run_start_gpu_jobs(AggScanState *ts);
extern void agg_run_on_gpu(AggScanState *ts);

/* The row (ts->row) to its group. */
extern void agg_group_row(AggScanState *ts, Datum group, bool group_isnull);

/*
 * The run's rows are in: its groups' tuples, one at a time; then free it.
 * False where the GPU failed a job of the run (under auto, and never on
 * the CPU): the run has begun again on the CPU, and its rows must be
 * grouped again before the next call.
 */
extern bool agg_run_end(AggScanState *ts);
extern TupleTableSlot *agg_run_next_tuple(AggScanState *ts);
extern void agg_run_free(AggScanState *ts);

#endif							/* AGG_GROUPS_H */
