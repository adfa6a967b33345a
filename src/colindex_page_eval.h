/*-------------------------------------------------------------------------
 *
 * colindex_page_eval.h
 *	  GpuTopK over a column index on the CPU: the keys of a page's entries
 *	  that pass the WHERE clauses over indexed columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_PAGE_EVAL_H
#define COLINDEX_PAGE_EVAL_H

#include "colindex.h"
#include "colindex_query.h"

typedef struct IndexPageEval IndexPageEval;

/* run constants as the filter was last bound; attnos: the table's column of each index column */
extern IndexPageEval *colindex_page_eval_create(const IndexSelectSpec *spec,
												const ColIndexLayout *layout,
												const AttrNumber *attnos, bool skip_killed);
extern bool colindex_page_eval_bound(IndexPageEval *eval, Page page, uint64 *bound);
extern bool colindex_page_eval_skips(IndexPageEval *eval, Page page, uint64 floor);
extern void colindex_page_eval_prefetch(const IndexPageEval *eval, Page page, uint64 floor);
extern int	colindex_page_eval(IndexPageEval *eval, Page page, uint64 floor, uint64 bound,
							   uint64 *keys, uint16 *slots, uint64 *scanned);

#endif							/* COLINDEX_PAGE_EVAL_H */
