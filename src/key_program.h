/*-------------------------------------------------------------------------
 *
 * key_program.h
 *	  Ranking expressions compiled into a program over a row's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KEY_PROGRAM_H
#define KEY_PROGRAM_H

#include "access/htup.h"
#include "nodes/primnodes.h"

typedef struct KeyProgram KeyProgram;

extern KeyProgram *key_program_compile(Expr *expr, Index scanrelid);
extern bool key_program_eval(const KeyProgram *program, HeapTuple tuple, TupleDesc desc,
							 double *value);

#endif							/* KEY_PROGRAM_H */
