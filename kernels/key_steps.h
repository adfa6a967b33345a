/*
 * key_steps.h
 *	  The interpreter of compiled ranking expressions
 *	  (src/scan_key_program.c), for the CPU and for the GPU.
 *
 * A program is a postfix list of steps over a stack of doubles: push a
 * column (an int2 or int4 value converted to float8) or a constant, add,
 * subtract, multiply, negate.  The caller pushes columns, from a heap
 * tuple, an index entry or a GPU's copy of an index page; key_step_apply
 * does the rest.  Plain C and CUDA, like keys.h.
 */
#ifndef KEY_STEPS_H
#define KEY_STEPS_H

#include <stdint.h>

#include "keys.h"

typedef enum KeyStepKind
{
	KEY_STEP_INT2_COLUMN,
	KEY_STEP_INT4_COLUMN,
	KEY_STEP_CONST,
	KEY_STEP_ADD,
	KEY_STEP_SUB,
	KEY_STEP_MUL,
	KEY_STEP_NEG
} KeyStepKind;

typedef struct KeyStep
{
	int32_t		kind;			/* a KeyStepKind */
	int32_t		column;			/* of a column step: the caller's number for it */
	double		value;			/* of a constant */
} KeyStep;

/* Whether a step pushes a column, which the caller does. */
KEY_FN bool
key_step_is_column(const KeyStep *step)
{
	return step->kind == KEY_STEP_INT2_COLUMN || step->kind == KEY_STEP_INT4_COLUMN;
}

/* A step that is not a column's, on the stack of *top values. */
KEY_FN void
key_step_apply(const KeyStep *step, double *stack, int *top)
{
	switch ((KeyStepKind) step->kind)
	{
		case KEY_STEP_CONST:
			stack[(*top)++] = step->value;
			break;
		case KEY_STEP_ADD:
			(*top)--;
			stack[*top - 1] = stack[*top - 1] + stack[*top];
			break;
		case KEY_STEP_SUB:
			(*top)--;
			stack[*top - 1] = stack[*top - 1] - stack[*top];
			break;
		case KEY_STEP_MUL:
			(*top)--;
			stack[*top - 1] = stack[*top - 1] * stack[*top];
			break;
		case KEY_STEP_NEG:
			stack[*top - 1] = -stack[*top - 1];
			break;
		default:
			break;
	}
}

#endif							/* KEY_STEPS_H */
