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

/* Whether the GPU failed a job the run's rows go to (under auto). */
extern bool agg_run_rows_job_failed(AggScanState *ts);

/*
 * The run's rows are in: the GPU's candidates into the groups' states;
 * false where the GPU failed a job of the run (under auto, and never on
 * the CPU).
 */
extern bool agg_run_take_gpu(AggScanState *ts);

/*
 * After such a failure: the run's groups and spill dropped, and the run
 * begun again on the CPU, for its rows to be grouped again.
 */
extern void agg_run_again_on_cpu(AggScanState *ts);

/* Then its groups' tuples, one at a time; then free it. */
extern void agg_run_end(AggScanState *ts);
extern TupleTableSlot *agg_run_next_tuple(AggScanState *ts);
extern void agg_run_free(AggScanState *ts);

#endif							/* AGG_GROUPS_H */
