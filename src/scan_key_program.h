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
extern bool scan_key_program_eval(const KeyProgram *program, HeapTuple tuple, TupleDesc desc,
								  double *value);

#endif							/* SCAN_KEY_PROGRAM_H */
