/*-------------------------------------------------------------------------
 *
 * colindex_coverage.h
 *	  What a column index covers: its columns, the clauses it checks
 *	  (colindex_coverage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_COVERAGE_H
#define COLINDEX_COVERAGE_H

#include "nodes/pg_list.h"
#include "utils/relcache.h"

extern Bitmapset *colindex_coverage_columns(Relation index);
extern bool colindex_coverage_reads_only(Node *node, Index relid, Bitmapset *columns);
extern bool colindex_coverage_checks(Node *clause, Index relid, Bitmapset *columns);
extern List *colindex_coverage_clauses(List *clauses, Index relid, Bitmapset *columns);

#endif							/* COLINDEX_COVERAGE_H */
