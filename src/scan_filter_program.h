/*-------------------------------------------------------------------------
 *
 * scan_filter_program.h
 *	  WHERE clauses compiled into a program over a row's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_FILTER_PROGRAM_H
#define SCAN_FILTER_PROGRAM_H

#include "access/htup.h"
#include "nodes/execnodes.h"

typedef struct FilterProgram FilterProgram;

struct ExplainState;

extern FilterProgram *filter_program_compile(List *clauses, Index scanrelid,
											 PlanState *parent, List **rest);
extern bool filter_program_compiles(Node *clause, Index scanrelid);
extern void filter_program_explain(FilterProgram *program, const char *label,
								   List *deparse_context, struct ExplainState *es);
extern void filter_program_bind(FilterProgram *program, ExprContext *econtext);
extern bool filter_program_passes(FilterProgram *program, HeapTuple tuple,
								  TupleDesc desc);
extern bool filter_program_passes_values(FilterProgram *program, const Datum *values,
										 const bool *isnull);

#endif							/* SCAN_FILTER_PROGRAM_H */
