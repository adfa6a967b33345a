/*-------------------------------------------------------------------------
 *
 * scan_vector_key.h
 *	  pgvector's distances as ranking keys computed without pgvector: each
 *	  row keyed by a bound on its distance to the query vector.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_VECTOR_KEY_H
#define SCAN_VECTOR_KEY_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/execnodes.h"

#include "vector_bounds.h"

typedef struct VectorKey VectorKey;

/*
 * Whether expr is a distance of pgvector's between a vector or halfvec
 * column of the scanned table and a vector that stays the same for the
 * whole scan, or float8 arithmetic with constants over one.
 */
extern bool scan_vector_key_compiles(Expr *expr, Index scanrelid);

/*
 * The key of such an expression, in the query's order (descending: larger
 * first), its query vector's expression set up under parent.
 */
extern VectorKey *scan_vector_key_create(Expr *expr, Index scanrelid, bool descending,
										 PlanState *parent);

/* The query vector computed for a run of the scan. */
extern void scan_vector_key_bind(VectorKey *key, ExprContext *econtext);

/*
 * The float8 keys of n rows of a heap page: a key no row's true value
 * passes in the query's order, null_key for NULL,
 * KEY_PROGRAM_ERROR_KEY where pgvector raises an error (vectors of other
 * dimensions than the query's) or the value cannot be bounded.
 */
extern void scan_vector_key_keys(VectorKey *key, HeapTuple tuples, int n, TupleDesc desc,
								 uint64 null_key, uint64 *keys);

/* What the run's keys are computed with (the query bound), for a kernel too. */
extern const VectorKeySpec *scan_vector_key_spec(const VectorKey *key);
extern bool scan_vector_key_query_null(const VectorKey *key);

/* The vector column. */
extern AttrNumber scan_vector_key_column(const VectorKey *key);

/*
 * Whether a kernel reads the vector column of the table's tuples in place:
 * its dimensions fixed (typmod) and few enough that the values are stored
 * inline, the column in every tuple.
 */
extern bool scan_vector_key_gpu_column(const VectorKey *key, TupleDesc desc);

/* The same, for the planner: of an expression scan_vector_key_compiles accepts. */
extern bool scan_vector_key_gpu_readable(Expr *expr, Index scanrelid, TupleDesc desc);

/* The distance, for EXPLAIN: "l2 distance over vector", ... */
extern const char *scan_vector_key_describe(const VectorKey *key);

#endif							/* SCAN_VECTOR_KEY_H */
