/*-------------------------------------------------------------------------
 *
 * colindex_coverage.c
 *	  What a column index covers: the table's columns it checks clauses
 *	  on, and the WHERE clauses it checks on its entries.
 *
 * The planner (colindex_path.c) decides from these whether a path over the
 * index applies, and the executor (topk_exec.c) which clauses the entries
 * are filtered by; every other clause is checked on the fetched rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_coverage.h"
#include "colindex_dict.h"
#include "scan_filter_program.h"

/*
 * The table's columns that the index checks clauses on, as pull_varattnos
 * gives them: all of its columns, but its text columns only while its
 * dictionary decides equality (colindex_dict.c).
 */
Bitmapset *
colindex_coverage_columns(Relation index)
{
	const ColIndexLayout *layout = colindex_layout(index);
	Bitmapset  *columns = NULL;
	int			dict_decides = -1;	/* not looked up yet */

	for (int i = 0; i < layout->ncolumns; i++)
	{
		if (colindex_type_is_text(layout->types[i]))
		{
			if (dict_decides < 0)
				dict_decides = !colindex_dict_full(index);
			if (!dict_decides)
				continue;
		}
		columns = bms_add_member(columns, index->rd_index->indkey.values[i] -
								 FirstLowInvalidHeapAttributeNumber);
	}
	return columns;
}

/* Whether an expression reads only the given columns. */
bool
colindex_coverage_reads_only(Node *node, Index relid, Bitmapset *columns)
{
	Bitmapset  *read = NULL;

	pull_varattnos(node, relid, &read);
	return bms_is_subset(read, columns);
}

/* Whether the index checks a clause: compiled, over its columns only. */
bool
colindex_coverage_checks(Node *clause, Index relid, Bitmapset *columns)
{
	return scan_filter_program_compiles_coded(clause, relid) && colindex_coverage_reads_only(clause, relid, columns);
}

/* The clauses the index checks. */
List *
colindex_coverage_clauses(List *clauses, Index relid, Bitmapset *columns)
{
	List	   *covered = NIL;
	ListCell   *lc;

	foreach(lc, clauses)
		if (colindex_coverage_checks(lfirst(lc), relid, columns))
			covered = lappend(covered, lfirst(lc));
	return covered;
}
