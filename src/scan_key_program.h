/*-------------------------------------------------------------------------
 *
 * scan_key_program.h
 *	  Ranking expressions compiled into a program over a row's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_KEY_PROGRAM_H
#define SCAN_KEY_PROGRAM_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/primnodes.h"

#include "key_steps.h"

typedef struct KeyProgram KeyProgram;

extern KeyProgram *scan_key_program_compile(Expr *expr, Index scanrelid);
extern const KeyStep *scan_key_program_steps(const KeyProgram *program, int *nsteps);

/*
 * Whether a row can make a step raise an error (a bound on the values'
 * magnitudes cannot rule it out): the executor then asks for the ties at
 * the boundary, so that every such row, keyed KEY_PROGRAM_ERROR_KEY, stays
 * a candidate.
 */
extern bool scan_key_program_may_raise(const KeyProgram *program);

/*
 * The float8 keys of n rows of a heap page (desc: larger first), null_key,
 * or KEY_PROGRAM_ERROR_KEY.
 */
extern void scan_key_program_keys(KeyProgram *program, HeapTuple tuples, int n, TupleDesc desc,
								  bool descending, uint64 null_key, uint64 *keys);

#endif							/* SCAN_KEY_PROGRAM_H */
