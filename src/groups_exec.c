/*-------------------------------------------------------------------------
 *
 * groups_exec.c
 *	  Executing GpuTopKGroups: scan the table once under the query's
 *	  snapshot, group its rows, and return only the groups that can be
 *	  among the first LIMIT + OFFSET of the ORDER BY.
 *
 * Groups live in a hash table keyed by the grouping column's Datum (every
 * grouping type the planner accepts is passed by value, and its equality
 * is equality of that word), and the NULL group has its own place.  Each
 * group has a number, in order of appearance; its grouping value and its
 * aggregates' cells (groups_aggs.c) are in arrays by that number, grown as
 * groups come.
 *
 * Once the table is read, the groups are chosen by the aggregate of the
 * first ORDER BY key: a binary heap of the best LIMIT + OFFSET so far,
 * worst on top, finds the last one kept; then every group at least as good
 * as that one is returned, ties included, in no order.  The Sort above
 * orders them by the whole ORDER BY and PostgreSQL's Limit cuts them.
 *
 * The scan runs in one process on the CPU backend.  The groups stay in
 * memory: the planner offers the scan where their estimate fits in
 * hash_mem, and where the estimate is too low they grow past it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "commands/explain.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteManip.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "device.h"
#include "groups_aggs.h"
#include "groups_exec.h"
#include "groups_scan.h"
#include "scan_filter_program.h"
#include "scan_row_reader.h"

/* The hash of a grouping value's Datum: integers' Datums are not random. */
static inline uint32
hash_group(uint64 group)
{
	return hash_combine(murmurhash32((uint32) group), murmurhash32((uint32) (group >> 32)));
}

/* a group in the hash table: its grouping value's Datum and its number */
typedef struct GroupSlot
{
	uint64		group;
	uint32		number;
	char		status;			/* simplehash's */
} GroupSlot;

#define SH_PREFIX groups_table
#define SH_ELEMENT_TYPE GroupSlot
#define SH_KEY_TYPE uint64
#define SH_KEY group
#define SH_HASH_KEY(tb, key) hash_group(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* start bringing an address's cache line in (a hint: gcc and clang have it) */
#ifdef __GNUC__
#define prefetch_line(address) __builtin_prefetch(address)
#else
#define prefetch_line(address) ((void) (address))
#endif

/* no group has this number */
#define NO_GROUP PG_UINT32_MAX

/* a page's rows that pass, read before they go to their groups (group_page) */
typedef struct PageRows
{
	Datum		groups[MaxHeapTuplesPerPage];
	bool		group_isnull[MaxHeapTuplesPerPage];
	uint32		hashes[MaxHeapTuplesPerPage];
	uint32		numbers[MaxHeapTuplesPerPage];
	Datum	  **values;			/* per aggregate, a value per row */
	bool	  **isnull;
} PageRows;

typedef struct GroupsScanState
{
	CustomScanState css;

	/* as planned */
	AttrNumber	group_attno;
	int			naggs;
	GroupAgg   *aggs;
	int			cell_bytes;		/* a group's cells, for every aggregate */
	const GroupAgg *rank;		/* the aggregate the groups are chosen by */
	bool		desc;
	bool		nulls_first;
	int64		keep;
	List	   *interpreted;	/* the WHERE clauses that did not compile */
	RowReader	reader;
	PageRows	rows;

	/* the groups, in groups_cxt */
	MemoryContext groups_cxt;
	groups_table_hash *table;
	uint32		ngroups;
	uint32		capacity;		/* of the arrays below, in groups */
	Datum	   *values;			/* each group's grouping value */
	char	   *cells;			/* each group's cells */
	uint32		null_group;		/* the NULL group's number, or NO_GROUP */
	bool		chosen;			/* the table is read and the groups chosen */
	uint32	   *kept;			/* the numbers of the groups returned */
	uint32		nkept;
	uint32		next;			/* the next of them to return */

	/* for EXPLAIN ANALYZE */
	bool		ran;
	uint64		rows_scanned;
	Size		memory_used;
	double		scan_ms;
	double		choose_ms;
} GroupsScanState;

static void begin_groups_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_groups_scan(CustomScanState *node);
static void end_groups_scan(CustomScanState *node);
static void rescan_groups_scan(CustomScanState *node);
static void explain_groups_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods groups_exec_methods = {
	.CustomName = GROUPS_SCAN_NAME,
	.BeginCustomScan = begin_groups_scan,
	.ExecCustomScan = exec_groups_scan,
	.EndCustomScan = end_groups_scan,
	.ReScanCustomScan = rescan_groups_scan,
	.ExplainCustomScan = explain_groups_scan,
};

Node *
groups_create_scan_state(CustomScan *cscan)
{
	GroupsScanState *gs = (GroupsScanState *) newNode(sizeof(GroupsScanState),
													  T_CustomScanState);

	gs->css.methods = &groups_exec_methods;
	return (Node *) gs;
}

static void
begin_groups_scan(CustomScanState *node, EState *estate, int eflags)
{
	GroupsScanState *gs = (GroupsScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *private = cscan->custom_private;
	List	   *rank = list_nth(private, GROUPS_FIELD_RANK);
	List	   *where;
	bool		fixed = node->ss.ps.scanopsfixed;
	ListCell   *lc;

	gs->group_attno = castNode(Var, linitial_node(TargetEntry,
												  cscan->custom_scan_tlist)->expr)->varattno;
	gs->naggs = list_length(cscan->custom_scan_tlist) - 1;
	gs->aggs = palloc(sizeof(GroupAgg) * gs->naggs);
	for_each_from(lc, cscan->custom_scan_tlist, 1)
	{
		GroupAgg   *agg = &gs->aggs[foreach_current_index(lc) - 1];

		if (!groups_agg_of(castNode(Aggref, lfirst_node(TargetEntry, lc)->expr),
						   cscan->scan.scanrelid, agg))
			elog(ERROR, "gputopk: an aggregate GpuTopKGroups does not compute");
		agg->offset = gs->cell_bytes;
		gs->cell_bytes += groups_agg_cell_bytes(agg->kind);
	}
	gs->rows.values = palloc(sizeof(Datum *) * gs->naggs);
	gs->rows.isnull = palloc(sizeof(bool *) * gs->naggs);
	for (int i = 0; i < gs->naggs; i++)
	{
		/* count(*) reads no column: its values are never set */
		gs->rows.values[i] = palloc0(sizeof(Datum) * MaxHeapTuplesPerPage);
		gs->rows.isnull[i] = palloc0(sizeof(bool) * MaxHeapTuplesPerPage);
	}
	gs->rank = &gs->aggs[linitial_int(rank)];
	gs->desc = lsecond_int(rank) != 0;
	gs->nulls_first = lthird_int(rank) != 0;
	gs->keep = DatumGetInt64(castNode(Const, list_nth(private, GROUPS_FIELD_KEEP))->constvalue);
	gs->groups_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuTopKGroups groups",
										   ALLOCSET_DEFAULT_SIZES);

	gs->reader.rel = node->ss.ss_currentRelation;
	gs->reader.econtext = node->ss.ps.ps_ExprContext;
	gs->reader.table_slot = table_slot_create(node->ss.ss_currentRelation,
											  &estate->es_tupleTable);
	/* the WHERE clause is over the table's slots, of any type */
	node->ss.ps.scanopsfixed = false;
	/* its Vars as planned, renumbered as the scan's (in a subquery they differ) */
	where = copyObject(list_nth(private, GROUPS_FIELDS));
	ChangeVarNodes((Node *) where, linitial_int(list_nth(private, GROUPS_FIELD_RELID)),
				   cscan->scan.scanrelid, 0);
	gs->reader.filter = scan_filter_program_compile(where, cscan->scan.scanrelid, &node->ss.ps,
													&gs->interpreted);
	gs->reader.table_qual = ExecInitQual(gs->interpreted, &node->ss.ps);
	node->ss.ps.scanopsfixed = fixed;
}

/* The cells of group number n. */
static inline char *
cells_of(GroupsScanState *gs, uint32 n)
{
	return gs->cells + (Size) n * gs->cell_bytes;
}

/* A new group of grouping value value: its number, its cells empty. */
static uint32
new_group(GroupsScanState *gs, Datum value)
{
	uint32		n = gs->ngroups;

	if (n == gs->capacity)
	{
		if (n == NO_GROUP - 1)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many groups for GpuTopKGroups"),
					 errhint("Set gputopk.enabled to off for this query.")));
		gs->capacity = n == 0 ? 1024 : (uint32) Min((uint64) n * 2, (uint64) NO_GROUP - 1);
		gs->values = repalloc_huge(gs->values, sizeof(Datum) * gs->capacity);
		gs->cells = repalloc_huge(gs->cells, (Size) gs->cell_bytes * gs->capacity);
	}
	gs->values[n] = value;
	for (int i = 0; i < gs->naggs; i++)
		groups_agg_init(&gs->aggs[i], cells_of(gs, n));
	return gs->ngroups++;
}

/* The number of the group of grouping value group (or NULL), made if new; hash is group's. */
static inline uint32
group_number(GroupsScanState *gs, Datum group, bool isnull, uint32 hash)
{
	bool		found;
	GroupSlot  *slot;

	if (isnull)
	{
		if (gs->null_group == NO_GROUP)
			gs->null_group = new_group(gs, (Datum) 0);
		return gs->null_group;
	}
	slot = groups_table_insert_hash(gs->table, (uint64) group, hash, &found);
	if (!found)
		slot->number = new_group(gs, group);
	return slot->number;
}

/*
 * The page's rows that pass the WHERE clause to their groups' cells, in
 * three passes over them, each of which brings into the CPU's cache what
 * the next one reads at random: their columns read, and their hash table
 * buckets fetched; their groups found, and their cells fetched; their
 * values added.  A page's hundred-odd cache misses then overlap instead of
 * coming one by one (with 300,000 groups the table outgrows the cache).
 */
static void
group_page(GroupsScanState *gs, TupleDesc desc)
{
	PageRows   *rows = &gs->rows;
	int			n = 0;

	while (scan_row_reader_next_row(&gs->reader))
	{
		rows->groups[n] = scan_row_reader_column(&gs->reader, gs->group_attno, desc,
												 &rows->group_isnull[n]);
		if (!rows->group_isnull[n])
		{
			rows->hashes[n] = hash_group(rows->groups[n]);
			prefetch_line(&gs->table->data[rows->hashes[n] & gs->table->sizemask]);
		}
		for (int i = 0; i < gs->naggs; i++)
			if (gs->aggs[i].attno != 0)
				rows->values[i][n] = scan_row_reader_column(&gs->reader, gs->aggs[i].attno,
															desc, &rows->isnull[i][n]);
		n++;
	}
	for (int j = 0; j < n; j++)
	{
		rows->numbers[j] = group_number(gs, rows->groups[j], rows->group_isnull[j],
										rows->hashes[j]);
		prefetch_line(cells_of(gs, rows->numbers[j]));
	}
	for (int j = 0; j < n; j++)
	{
		char	   *cells = cells_of(gs, rows->numbers[j]);

		for (int i = 0; i < gs->naggs; i++)
			groups_agg_add(&gs->aggs[i], cells, rows->values[i][j], rows->isnull[i][j]);
	}
}

/* Read the table, each row that passes the WHERE clause to its group. */
static void
scan_table(GroupsScanState *gs)
{
	TupleDesc	desc = RelationGetDescr(gs->css.ss.ss_currentRelation);
	MemoryContext old = MemoryContextSwitchTo(gs->groups_cxt);
	BlockNumber block;

	gs->table = groups_table_create(gs->groups_cxt, 1024, NULL);
	gs->values = palloc(sizeof(Datum));
	gs->cells = palloc(Max(gs->cell_bytes, 1));
	gs->null_group = NO_GROUP;
	gs->rows_scanned = 0;
	MemoryContextSwitchTo(old);
	if (gs->reader.filter)
		scan_filter_program_bind(gs->reader.filter, gs->css.ss.ps.ps_ExprContext);
	gs->reader.parallel = NULL;
	scan_row_reader_begin(&gs->reader, gs->css.ss.ps.state->es_snapshot);
	while ((block = scan_row_reader_next_read_block(&gs->reader)) != InvalidBlockNumber)
	{
		CHECK_FOR_INTERRUPTS();
		scan_row_reader_read_page(&gs->reader, block);
		group_page(gs, desc);
		gs->rows_scanned += gs->reader.scan->rs_ntuples;
	}
	scan_row_reader_end(&gs->reader);
}

/* > 0 where group a comes before group b in the ORDER BY (binaryheap's Datums). */
static int
compare_groups(GroupsScanState *gs, uint32 a, uint32 b)
{
	return groups_agg_compare(gs->rank, cells_of(gs, a), cells_of(gs, b), gs->desc,
							  gs->nulls_first);
}

/* binaryheap's order: the worst group kept on top */
static int
worse_first(Datum a, Datum b, void *arg)
{
	return -compare_groups(arg, DatumGetUInt32(a), DatumGetUInt32(b));
}

/*
 * The groups returned: the keep best by the ranked aggregate and every
 * group tied with the last of them (all of them where there are no more).
 */
static void
choose_groups(GroupsScanState *gs)
{
	uint32		last = NO_GROUP;

	gs->kept = MemoryContextAllocHuge(gs->groups_cxt, sizeof(uint32) * Max(gs->ngroups, 1));
	gs->nkept = 0;
	if ((uint64) gs->keep < gs->ngroups && gs->keep <= INT_MAX)
	{
		binaryheap *best = binaryheap_allocate((int) gs->keep, worse_first, gs);

		for (uint32 n = 0; n < gs->ngroups; n++)
		{
			if (n < gs->keep)
				binaryheap_add_unordered(best, UInt32GetDatum(n));
			else
			{
				if (n == gs->keep)
					binaryheap_build(best);
				if (compare_groups(gs, n, DatumGetUInt32(binaryheap_first(best))) > 0)
					binaryheap_replace_first(best, UInt32GetDatum(n));
			}
			if ((n & 0xffff) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		last = DatumGetUInt32(binaryheap_first(best));
		binaryheap_free(best);
	}
	for (uint32 n = 0; n < gs->ngroups; n++)
		if (last == NO_GROUP || compare_groups(gs, n, last) >= 0)
			gs->kept[gs->nkept++] = n;
	gs->next = 0;
}

/* The next group kept, as the scan's tuple: the grouping value, then each aggregate's. */
static TupleTableSlot *
next_group(ScanState *ss)
{
	GroupsScanState *gs = (GroupsScanState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	MemoryContext old;
	uint32		n;

	if (!gs->chosen)
	{
		instr_time	start;
		instr_time	scanned;
		instr_time	chosen;

		INSTR_TIME_SET_CURRENT(start);
		scan_table(gs);
		INSTR_TIME_SET_CURRENT(scanned);
		choose_groups(gs);
		INSTR_TIME_SET_CURRENT(chosen);
		gs->chosen = true;
		gs->ran = true;
		gs->memory_used = MemoryContextMemAllocated(gs->groups_cxt, true);
		INSTR_TIME_SUBTRACT(chosen, scanned);
		INSTR_TIME_SUBTRACT(scanned, start);
		gs->scan_ms = INSTR_TIME_GET_MILLISEC(scanned);
		gs->choose_ms = INSTR_TIME_GET_MILLISEC(chosen);
	}
	ExecClearTuple(slot);
	if (gs->next >= gs->nkept)
		return slot;
	n = gs->kept[gs->next++];
	slot->tts_values[0] = gs->values[n];
	slot->tts_isnull[0] = n == gs->null_group;
	/* numeric results live until the next tuple */
	old = MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
	for (int i = 0; i < gs->naggs; i++)
		slot->tts_values[i + 1] = groups_agg_result(&gs->aggs[i], cells_of(gs, n),
													&slot->tts_isnull[i + 1]);
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

static bool
recheck_group(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_groups_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_group, recheck_group);
}

/* Forget the groups: the next call reads the table again. */
static void
reset_groups(GroupsScanState *gs)
{
	MemoryContextReset(gs->groups_cxt);
	gs->table = NULL;
	gs->values = NULL;
	gs->cells = NULL;
	gs->kept = NULL;
	gs->ngroups = gs->capacity = gs->nkept = gs->next = 0;
	gs->chosen = false;
}

static void
end_groups_scan(CustomScanState *node)
{
	reset_groups((GroupsScanState *) node);
}

static void
rescan_groups_scan(CustomScanState *node)
{
	reset_groups((GroupsScanState *) node);
	ExecScanReScan(&node->ss);
}

static void
explain_groups_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GroupsScanState *gs = (GroupsScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan,
												   ancestors);
	bool		prefix = compat_explain_prefix(es);
	List	   *aggs = NIL;
	ListCell   *lc;
	StringInfoData rank;

	ExplainPropertyText("Group Key",
						deparse_expression((Node *) linitial_node(TargetEntry,
																  cscan->custom_scan_tlist)->expr,
										   context, prefix, false), es);
	for_each_from(lc, cscan->custom_scan_tlist, 1)
		aggs = lappend(aggs, deparse_expression((Node *) lfirst_node(TargetEntry, lc)->expr,
												context, prefix, false));
	ExplainPropertyList("Aggregates", aggs, es);
	/* as EXPLAIN shows a sort key: NULLS only where not the direction's default */
	initStringInfo(&rank);
	appendStringInfo(&rank, "%s %s%s", (char *) list_nth(aggs, gs->rank - gs->aggs),
					 gs->desc ? "DESC" : "ASC",
					 gs->nulls_first == gs->desc ? "" :
					 (gs->nulls_first ? " NULLS FIRST" : " NULLS LAST"));
	ExplainPropertyText("Ranked By", rank.data, es);
	ExplainPropertyInteger("Groups Kept", NULL, gs->keep, es);
	if (gs->reader.filter)
		scan_filter_program_explain(gs->reader.filter, "Compiled Filter", context, es);
	if (gs->interpreted != NIL)
		ExplainPropertyText("Filter",
							deparse_expression((Node *) make_ands_explicit(gs->interpreted),
											   context, es->verbose, false),
							es);
	ExplainPropertyText("Backend", device_backend_name(BACKEND_CPU), es);
	if (!(es->analyze && gs->ran))
		return;
	ExplainPropertyUInteger("Rows Scanned", NULL, gs->rows_scanned, es);
	ExplainPropertyUInteger("Groups", NULL, gs->ngroups, es);
	ExplainPropertyUInteger("Groups Returned", NULL, gs->nkept, es);
	ExplainPropertyInteger("Memory Used", "kB", (int64) ((gs->memory_used + 1023) / 1024), es);
	if (es->timing)
	{
		ExplainPropertyFloat("Scan Time", "ms", gs->scan_ms, 3, es);
		ExplainPropertyFloat("Choose Time", "ms", gs->choose_ms, 3, es);
	}
}
