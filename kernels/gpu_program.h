/*
 * gpu_program.h
 *	  A row's compiled WHERE clauses and ranking key, as a GPU kernel runs
 *	  them: over a column index's entries (gpu_index.h) or over heap tuples
 *	  read in place from shared_buffers (gpu_heap.h).
 *
 * The filter is the program of src/scan_filter_program.c (filter_steps.h)
 * and the key a column or the program of src/scan_key_program.c
 * (key_steps.h).  Columns are described by GpuColumn, which each reader
 * interprets: an index page's null bitmap and value array, or a heap
 * tuple's attribute number.  gpu_program.cuh evaluates a program.
 *
 * Like the rest of kernels/: no PostgreSQL headers.
 */
#ifndef GPU_PROGRAM_H
#define GPU_PROGRAM_H

#include "filter_steps.h"
#include "key_steps.h"
#include "keys.h"
#include "vector_bounds.h"

/* limits of what a kernel runs; a query beyond them stays on the CPU */
#define GPU_PROGRAM_MAX_LOADS 16
#define GPU_PROGRAM_MAX_REGISTERS 32
#define GPU_PROGRAM_MAX_STEPS 64
#define GPU_PROGRAM_MAX_SETS 16
#define GPU_PROGRAM_MAX_KEY_STEPS 32
/* a vector key's query: a value stored inline in a heap page has fewer */
#define GPU_PROGRAM_MAX_VECTOR_DIMS 1024

/* where a column of a row is, for the reader */
typedef struct GpuColumn
{
	int32_t		attno;			/* heap: the table's attribute number */
	int32_t		null_offset;	/* index: the null bitmap's, from the page's start */
	int32_t		value_offset;	/* index: the value array's */
	int32_t		column;			/* index: the column's place in a page's summary */
	int32_t		width;			/* bytes of a value */
	int32_t		kind;			/* a FilterValueKind */
} GpuColumn;

/* a column the filter reads into a register */
typedef struct GpuLoad
{
	GpuColumn	column;
	int32_t		reg;
	bool		to_float8;
	bool		value_needed;
} GpuLoad;

/* a key step; a column step's column is described here */
typedef struct GpuKeyStep
{
	KeyStep		step;
	GpuColumn	column;
} GpuKeyStep;

/*
 * A term of a key program that is a sum: a column, or a column multiplied
 * by a constant (either side), added to or subtracted from the terms
 * before it, left to right.
 */
typedef struct GpuKeyTerm
{
	int32_t		column_step;	/* the column's step, in key_steps */
	int32_t		multiply;		/* KEY_STEP_MUL or KEY_STEP_MUL4, or 0: none */
	bool		constant_first; /* the constant is the product's left operand */
	double		constant;
	int32_t		combine;		/* with the terms before: KEY_STEP_ADD, SUB, ADD4 or SUB4 */
} GpuKeyTerm;

/* a vector key: a pgvector distance's bound (vector_bounds.h) */
typedef struct GpuVectorKey
{
	GpuColumn	column;			/* the vector column */
	int32_t		kind;			/* a VectorDistanceKind */
	int32_t		element;		/* a VectorElement */
	int32_t		dims;			/* the query's */
	bool		query_null;
	double		query_norm;
	int32_t		nsteps;			/* the arithmetic around the distance */
	KeyStep		steps[GPU_PROGRAM_MAX_KEY_STEPS];
	float		query[GPU_PROGRAM_MAX_VECTOR_DIMS];
} GpuVectorKey;

typedef struct GpuRowProgram
{
	/* the key: a column or a program, encoded as keys.h says */
	int32_t		key_type;		/* a KeyType */
	bool		desc;
	bool		nulls_first;
	bool		key_is_program;
	GpuColumn	key_column;
	int32_t		nkey_steps;
	GpuKeyStep	key_steps[GPU_PROGRAM_MAX_KEY_STEPS];
	/* the same program as terms where it is a sum of them (else nterms is 0) */
	int32_t		nterms;
	GpuKeyTerm	terms[GPU_PROGRAM_MAX_KEY_STEPS];
	/* or a vector key, instead of the column or the program */
	bool		key_is_vector;
	GpuVectorKey vector;

	/* the filter, if nsteps > 0; sets' values pointers are offsets into the set values */
	int32_t		nloads;
	GpuLoad		loads[GPU_PROGRAM_MAX_LOADS];
	int32_t		nregisters;
	FilterRegister registers[GPU_PROGRAM_MAX_REGISTERS];
	int32_t		nsteps;
	FilterStep	steps[GPU_PROGRAM_MAX_STEPS];
	int32_t		nsets;
	FilterValueSet sets[GPU_PROGRAM_MAX_SETS];
} GpuRowProgram;

#endif							/* GPU_PROGRAM_H */
