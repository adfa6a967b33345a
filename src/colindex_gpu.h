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
#include "scan_gpu_program.h"
#include "service_client.h"
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

/*
 * An index job of spec's kind over index, its copy brought up to date
 * (the pages sent counted in *pages_sent, *epoch set to as of when the
 * copy is current); NULL where the GPU does not read the index (see
 * colindex_gpu.c) or, without demand, is not at hand.  Sets the spec's
 * index fields.
 */
extern ServiceJob *colindex_gpu_start(Relation index, ServiceJobSpec *spec, uint64 *epoch,
									  uint64 *pages_sent);

/* A GpuIndexQuery's description of the index's pages. */
extern void colindex_gpu_describe_pages(const ColIndexLayout *layout, bool skip_killed,
										GpuIndexQuery *q);

/* an index's columns: its layout, and the table's column of each */
typedef struct ColIndexColumns
{
	const ColIndexLayout *layout;
	const AttrNumber *attnos;
} ColIndexColumns;

/*
 * Where the index column that holds table column attno is, as the GPU
 * reads an entry; false if none does.  A GpuColumnOf whose arg is a
 * ColIndexColumns.
 */
extern bool colindex_gpu_column_of(void *arg, AttrNumber attno, GpuColumn *column);

/* scan_gpu_program_describe over the index's columns (source's column_of is ignored). */
extern bool colindex_gpu_describe_program(const GpuProgramSource *source,
										  const ColIndexColumns *columns,
										  GpuRowProgram *program, uint64 **set_values,
										  size_t *nset_values);

#endif							/* COLINDEX_GPU_H */
