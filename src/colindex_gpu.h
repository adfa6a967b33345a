/*-------------------------------------------------------------------------
 *
 * colindex_gpu.h
 *	  GpuTopK over a column index on the GPU: the GPU service's copy of
 *	  the index, and rounds of candidates selected from it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_GPU_H
#define COLINDEX_GPU_H

#include "colindex.h"
#include "colindex_query.h"
#include "topk.h"

typedef struct IndexGpu IndexGpu;

/*
 * The index's copy on the GPU brought up to date for the query, or NULL
 * where the rounds run on the CPU (see colindex_gpu.c); under
 * gputopk.device = gpu, an error where the GPU cannot take the job.
 * attnos: the table's column of each index column.
 */
extern IndexGpu *colindex_gpu_begin(const IndexSelectSpec *spec, const ColIndexLayout *layout,
									const AttrNumber *attnos, bool skip_killed,
									IndexSelectStats *stats);

/*
 * A round on the GPU, as select_round does it on the CPU: the best count
 * keys left (below threshold, if have_threshold, or equal to it at a
 * position not in tied), with their ties unless *exact; a first round
 * turns *exact on where the query allows it when no key raises
 * (exact_if_no_errors).  False when this round cannot run there, or (under
 * auto) the GPU failed it or an earlier one: the caller runs it on the CPU.
 */
extern bool colindex_gpu_round(IndexGpu *g, uint64 count, bool have_threshold, uint64 threshold,
							   const uint64 *tied, size_t ntied, bool *exact,
							   TopkResult *result, IndexSelectStats *stats);

extern void colindex_gpu_end(IndexGpu *g);

#endif							/* COLINDEX_GPU_H */
