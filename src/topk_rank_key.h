/*-------------------------------------------------------------------------
 *
 * topk_rank_key.h
 *	  Numeric ranking expressions as exact float8 arithmetic
 *	  (topk_rank_key.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_RANK_KEY_H
#define TOPK_RANK_KEY_H

#include "nodes/primnodes.h"

/* The float8 expression that computes a numeric one exactly, or NULL. */
extern Expr *topk_rank_key_of_numeric(Expr *expr);

#endif							/* TOPK_RANK_KEY_H */
