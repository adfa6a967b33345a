/*-------------------------------------------------------------------------
 *
 * scan_gpu_program.h
 *	  A scan's compiled WHERE clauses and ranking key described for a GPU
 *	  kernel (kernels/gpu_program.h): over a column index's entries or over
 *	  heap tuples in shared_buffers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_GPU_PROGRAM_H
#define SCAN_GPU_PROGRAM_H

#include "gpu_program.h"
#include "scan_filter_program.h"
#include "scan_key_program.h"
#include "scan_vector_key.h"

/* What a GPU reads of a row: a table column's place, or false if it cannot. */
typedef bool (*GpuColumnOf) (void *arg, AttrNumber attno, GpuColumn *column);

typedef struct GpuProgramSource
{
	KeyType		key_type;
	bool		desc;
	bool		nulls_first;
	AttrNumber	key_attno;		/* the key's column, or 0: key_program */
	KeyProgram *key_program;
	VectorKey  *vector_key;		/* or a pgvector distance's bound, its query bound */
	FilterProgram *filter;		/* or NULL */
	GpuColumnOf column_of;
	/* where the vector key's column is: an index's entries, a heap tuple's attribute */
	GpuColumnOf vector_column_of;
	void	   *arg;
} GpuProgramSource;

/*
 * The program for the kernel, its filter's set values (palloc'd, the sets'
 * values pointers then being offsets into them); false beyond the
 * kernel's limits or where a column cannot be read there.
 */
extern bool scan_gpu_program_describe(const GpuProgramSource *source, GpuRowProgram *program,
									  uint64 **set_values, size_t *nset_values);

#endif							/* SCAN_GPU_PROGRAM_H */
