/*-------------------------------------------------------------------------
 *
 * topk_key_program.h
 *	  Ranking expressions compiled into a program over a row's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_KEY_PROGRAM_H
#define TOPK_KEY_PROGRAM_H

#include "access/htup.h"
#include "nodes/primnodes.h"

#include "key_steps.h"

typedef struct KeyProgram KeyProgram;

extern KeyProgram *key_program_compile(Expr *expr, Index scanrelid);
extern const KeyStep *key_program_steps(const KeyProgram *program, int *nsteps);
extern bool key_program_eval(const KeyProgram *program, HeapTuple tuple, TupleDesc desc,
							 double *value);

#endif							/* TOPK_KEY_PROGRAM_H */
