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

#include "filter_steps.h"

typedef struct FilterProgram FilterProgram;

/* a column read into a register for each row, maybe cast */
typedef struct FilterColumnLoad
{
	AttrNumber	attno;
	Oid			type;			/* the column's */
	bool		to_float8;		/* an integer column cast to float8 */
	bool		value_needed;	/* or only whether it is NULL */
	int			reg;
} FilterColumnLoad;

/* a compiled program's parts, for a device that runs it (filter_steps.h) */
typedef struct FilterProgramParts
{
	int			nloads;
	const FilterColumnLoad *loads;
	int			nregisters;
	const FilterRegister *registers;	/* with the run constants' values */
	int			nsteps;
	const FilterStep *steps;
	int			nsets;
	const FilterValueSet *sets;
} FilterProgramParts;

/*
 * How a program over a column index's entries reads text: its text
 * columns hold dictionary codes, and code() gives a text value's code
 * (or a code no entry has).
 */
typedef struct FilterTextCodes
{
	int32		(*code) (void *arg, const char *bytes, int length);
	void	   *arg;
} FilterTextCodes;

struct ExplainState;

extern FilterProgram *scan_filter_program_compile(List *clauses, Index scanrelid,
												  PlanState *parent, List **rest);
extern FilterProgram *scan_filter_program_compile_coded(List *clauses, Index scanrelid,
														PlanState *parent,
														const FilterTextCodes *codes, List **rest);
extern bool scan_filter_program_compiles(Node *clause, Index scanrelid);
extern bool scan_filter_program_compiles_coded(Node *clause, Index scanrelid);
extern void scan_filter_program_explain(FilterProgram *program, const char *label,
										List *deparse_context, struct ExplainState *es);
extern void scan_filter_program_bind(FilterProgram *program, ExprContext *econtext);
extern bool scan_filter_program_passes(FilterProgram *program, HeapTuple tuple,
									   TupleDesc desc);
extern void scan_filter_program_parts(const FilterProgram *program, FilterProgramParts *parts);
extern FilterValueKind scan_filter_value_kind(Oid type);

#endif							/* SCAN_FILTER_PROGRAM_H */
