/*-------------------------------------------------------------------------
 *
 * topk_index_page.h
 *	  GpuTopK over a column index on the CPU: the keys of a page's entries
 *	  that pass the WHERE clauses over indexed columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOPK_INDEX_PAGE_H
#define TOPK_INDEX_PAGE_H

#include "colindex.h"
#include "topk_index_select.h"

typedef struct IndexPageEval IndexPageEval;

/* run constants as the filter was last bound; attnos: the table's column of each index column */
extern IndexPageEval *index_page_eval_create(const IndexSelectSpec *spec,
											 const ColIndexLayout *layout,
											 const AttrNumber *attnos, bool skip_killed);
extern void index_page_eval_prefetch(const IndexPageEval *eval, Page page, uint64 floor);
extern int	index_page_eval(IndexPageEval *eval, Page page, uint64 floor, uint64 *keys,
							uint16 *slots, uint64 *scanned);

#endif							/* TOPK_INDEX_PAGE_H */
