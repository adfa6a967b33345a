/*-------------------------------------------------------------------------
 *
 * key_batch.h
 *	  A key program (scan_key_program.c) run over a batch of rows at once:
 *	  each step over every row, in loops the compiler vectorizes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KEY_BATCH_H
#define KEY_BATCH_H

#include "key_steps.h"

/*
 * On x86-64 the loops over a batch are compiled twice, for AVX2 and for
 * the baseline, and the dynamic loader picks the one the processor runs
 * (an ifunc); flatten inlines every loop into both copies.
 */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && __has_attribute(flatten)
#define BATCH_VARIANTS __attribute__((target_clones("avx2", "default"), flatten))
#endif
#endif
#ifndef BATCH_VARIANTS
#define BATCH_VARIANTS
#endif

typedef struct KeyBatch KeyBatch;

/*
 * Fill values[0..n-1] with the rows' values of the column of the program's
 * step (its index in the program), as doubles (key_step_column_value), or,
 * for a float4 column whose values lie in an array, point *floats at it
 * instead; return whether any is NULL, and if so fill nulls[0..n-1] with
 * the NULL flags (else they need not be written).
 */
typedef bool (*KeyBatchColumn) (void *arg, int step, double *values, const float **floats,
								uint8 *nulls, int n);

extern KeyBatch *key_batch_create(const KeyStep *steps, int nsteps, int max_rows);

/*
 * Run the program over n rows (at most max_rows), its columns from column;
 * then *values (and *nulls) are each row's value (and whether it is NULL),
 * and *errors flags the rows where a step raises PostgreSQL's error (those
 * whose columns are all not NULL, as PostgreSQL's strict functions).
 * Unless checked, the caller knows that no row raises (none is flagged),
 * and the steps run without looking.
 */
extern void key_batch_run(KeyBatch *batch, int n, bool checked, KeyBatchColumn column,
						  void *arg, const double **values, const uint8 **nulls,
						  const uint8 **errors);

#endif							/* KEY_BATCH_H */
