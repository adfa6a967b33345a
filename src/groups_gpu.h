/*-------------------------------------------------------------------------
 *
 * groups_gpu.h
 *	  GpuTopKGroups on the GPU (groups_gpu.c): the scan's pages grouped
 *	  there, and the groups the GPU chose brought back as the scan's set.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_GPU_H
#define GROUPS_GPU_H

#include "gpu_groups.h"
#include "groups_state.h"
#include "scan_gpu_program.h"
#include "scan_page_sink.h"

/*
 * The scan's groups as the GPU computes them, each column where column_of
 * says (in a heap page, or in a column index's entry, where a text column
 * holds dictionary codes); false where it cannot: a column it cannot read,
 * an aggregate it does not compute (groups_agg_gpu_kind) or but count over
 * a heap page's text, or a 128-bit sum to rank by.
 */
extern bool groups_gpu_describe(GroupsScanState *gs, GpuColumnOf column_of, void *arg,
								GpuGroupsSpec *spec);

/*
 * The groups the GPU chose (count records, pfree'd here, of gpu_groups it
 * held) made the scan's set, in place of the set's own.  A text grouping
 * column's values are the codes of dictionary (a column index: see
 * groups_index.c), turned back into text, or without one their bytes.
 */
extern void groups_gpu_adopt(GroupsScanState *gs, char *records, size_t count,
							 uint64 gpu_groups, Relation dictionary);

/*
 * A groups job for the scan in one process, its reader begun; NULL where
 * the plan is not the GPU form or the GPU cannot take it
 * (scan_page_sink_create_groups), for the CPU to do the work.
 */
extern PageSink *groups_gpu_sink(GroupsScanState *gs);

/*
 * Once every block is read: the groups the GPU chose made the set, the
 * job's work in *stats; false, leaving the set as it was, where the GPU
 * failed the job (under auto) or left out pages whose text groups it
 * could not hold (counted in gs->pages_unheld): the scan then groups the
 * table on the CPU.
 */
extern bool groups_gpu_finish(GroupsScanState *gs, PageSink *sink, PageSinkStats *stats);

#endif							/* GROUPS_GPU_H */
