/*-------------------------------------------------------------------------
 *
 * groups_exec.c
 *	  Executing GpuTopKGroups: scan the table once under the query's
 *	  snapshot, group its rows, and return only the groups that can be
 *	  among the first LIMIT + OFFSET of the ORDER BY.
 *
 * This file holds the node's callbacks, its parallel shared memory and the
 * order of its work; a set of groups is groups_table.c's, EXPLAIN
 * groups_explain.c's.
 *
 * In one process the whole table goes into one set of groups, whose groups
 * are chosen and returned (the planner offers this form where its estimate
 * fits in hash_mem); a set that outgrows hash_mem all the same spills to
 * files, as the partitioned form writes them, unless an aggregate's cells
 * do not combine (a float sum's: the set then grows).  The partitioned form
 * runs in a parallel plan's processes, or in one outside parallel mode:
 * each process reads its share of the table's blocks into a set of groups,
 * and writes the set's groups, a record each, to the exchange's file of its
 * group's partition (agg_exchange.h) whenever the set outgrows hash_mem and
 * at the end; once every process is done writing, the processes claim
 * partitions one at a time, combine each group's records into a set of its
 * own (a group's records all go to one partition) and return the groups
 * chosen in it.  Each partition keeps its own LIMIT + OFFSET groups and
 * their ties, among which are the query's; the Gather above brings them to
 * the Sort and the Limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/parallel.h"
#include "access/tableam.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteManip.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "groups_exec.h"
#include "groups_gpu.h"
#include "groups_index.h"
#include "groups_scan.h"
#include "groups_state.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"

/* the most groups kept for which rows are dropped as they are read (best) */
#define GROUPS_DROP_MAX_KEEP 100000

static void share_exchange(CustomScanState *node, ScanSharedEvent event, void *own,
						   ParallelContext *pcxt);

static void
begin_groups_scan(CustomScanState *node, EState *estate, int eflags)
{
	GroupsScanState *gs = (GroupsScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *private = cscan->custom_private;
	List	   *rank = list_nth(private, GROUPS_FIELD_RANK);
	Index		planned_relid = linitial_int(list_nth(private, GROUPS_FIELD_RELID));
	List	   *where;
	Oid			group_type;
	bool		fixed = node->ss.ps.scanopsfixed;
	ListCell   *lc;

	/*
	 * The grouping columns, then the aggregates: the scan's tuple, or where
	 * it returns the table's rows, after the WHERE clause, with its Vars as
	 * planned, renumbered as the scan's
	 */
	gs->table_rows = lfourth_int(list_nth(private, GROUPS_FIELD_PARTITIONS)) != 0;
	if (gs->table_rows)
	{
		gs->exprs = copyObject(list_nth(private, GROUPS_FIELDS + 1));
		ChangeVarNodes((Node *) gs->exprs, planned_relid, cscan->scan.scanrelid, 0);
	}
	else
		foreach(lc, cscan->custom_scan_tlist)
			gs->exprs = lappend(gs->exprs, lfirst_node(TargetEntry, lc)->expr);
	gs->group_attno = linitial_node(Var, gs->exprs)->varattno;
	gs->ngroup_columns = 1;
	if (IsA(lsecond(gs->exprs), Var))
	{
		gs->second_attno = lsecond_node(Var, gs->exprs)->varattno;
		gs->ngroup_columns = 2;
	}
	gs->naggs = list_length(gs->exprs) - gs->ngroup_columns;
	gs->aggs = palloc(sizeof(GroupAgg) * gs->naggs);
	for_each_from(lc, gs->exprs, gs->ngroup_columns)
	{
		GroupAgg   *agg = &gs->aggs[foreach_current_index(lc) - gs->ngroup_columns];

		if (!groups_agg_of(lfirst_node(Aggref, lc), cscan->scan.scanrelid, agg))
			elog(ERROR, "gputopk: an aggregate GpuTopKGroups does not compute");
		agg->offset = gs->cell_bytes;
		gs->cell_bytes += groups_agg_cell_bytes(agg->kind);
		groups_agg_prepare(agg);
	}
	gs->rows.values = palloc(sizeof(Datum *) * gs->naggs);
	gs->rows.isnull = palloc(sizeof(bool *) * gs->naggs);
	for (int i = 0; i < gs->naggs; i++)
	{
		/* count(*) reads no column: its values are never set */
		gs->rows.values[i] = palloc0(sizeof(Datum) * MaxHeapTuplesPerPage);
		gs->rows.isnull[i] = palloc0(sizeof(bool) * MaxHeapTuplesPerPage);
	}
	if (linitial_int(rank) >= 0)
		gs->rank = &gs->aggs[linitial_int(rank)];
	else
	{
		gs->rank_column = -1 - linitial_int(rank);
		if (!key_type_of(TupleDescAttr(RelationGetDescr(node->ss.ss_currentRelation),
									   (gs->rank_column == 0 ? gs->group_attno :
										gs->second_attno) - 1)->atttypid,
						 &gs->rank_key_type))
			elog(ERROR, "gputopk: a grouping column without keys ranks GpuTopKGroups");
	}
	gs->desc = lsecond_int(rank) != 0;
	gs->nulls_first = lthird_int(rank) != 0;
	gs->keep = DatumGetInt64(castNode(Const, list_nth(private, GROUPS_FIELD_KEEP))->constvalue);
	gs->partitions = linitial_int(list_nth(private, GROUPS_FIELD_PARTITIONS));
	gs->gpu_planned = lsecond_int(list_nth(private, GROUPS_FIELD_PARTITIONS)) != 0;
	gs->index_oid = (Oid) lthird_int(list_nth(private, GROUPS_FIELD_PARTITIONS));
	gs->expected_groups =
		DatumGetFloat8(castNode(Const, list_nth(private, GROUPS_FIELD_ESTIMATE))->constvalue);
	gs->hash_mem = get_hash_memory_limit();
	/* ranked by a grouping column: rows of groups that cannot come first are dropped */
	if (gs->rank == NULL && gs->keep <= GROUPS_DROP_MAX_KEEP)
		groups_best_begin(gs);
	gs->record_bytes = GROUPS_RECORD_HEADER_BYTES + gs->cell_bytes;
	gs->record = palloc(gs->record_bytes);
	group_type = TupleDescAttr(RelationGetDescr(node->ss.ss_currentRelation),
							   gs->group_attno - 1)->atttypid;
	gs->group_by_text = group_type == TEXTOID || group_type == VARCHAROID;
	/*
	 * records carry values passed by value, and cells that combine; the rows
	 * form looks the table's rows up in the one set of the groups chosen
	 */
	gs->spillable = !gs->group_by_text && !gs->table_rows;
	for (int i = 0; i < gs->naggs; i++)
		gs->spillable &= groups_agg_can_combine(gs->aggs[i].kind);
	gs->groups_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuTopKGroups groups",
										   ALLOCSET_DEFAULT_SIZES);
	gs->page_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuTopKGroups page",
										 ALLOCSET_DEFAULT_SIZES);

	/* a parallel scan's shared memory holds the exchange */
	scan_driver_init(&gs->scan, &node->ss, share_exchange, sizeof(GroupExchangeShared), true);
	/* the WHERE clause is over the table's slots, of any type */
	node->ss.ps.scanopsfixed = false;
	/* its Vars as planned, renumbered as the scan's (in a subquery they differ) */
	where = copyObject(list_nth(private, GROUPS_FIELDS));
	ChangeVarNodes((Node *) where, planned_relid, cscan->scan.scanrelid, 0);
	gs->scan.reader.filter = scan_filter_program_compile(where, cscan->scan.scanrelid, &node->ss.ps,
													&gs->interpreted);
	gs->scan.reader.table_qual = ExecInitQual(gs->interpreted, &node->ss.ps);
	node->ss.ps.scanopsfixed = fixed;
}

/*
 * In one process, a set of groups that outgrows hash_mem while the table is
 * read spills: from then on it goes to an exchange of this process alone
 * (the partitioned form's, outside parallel mode) whenever it outgrows
 * hash_mem, and at the end, and its partitions are read back one at a time.
 * Its partitions are enough for twice the memory the groups would take at
 * the end if they kept coming as they have over the pages read so far.
 */
static void
start_spill(GroupsScanState *gs, BlockNumber pages_read)
{
	double		share = (double) Max(pages_read, 1) / Max(gs->scan.reader.scan->rs_nblocks, 1);
	double		bytes = (double) MemoryContextMemAllocated(gs->groups_cxt, true) / share;
	MemoryContext old = MemoryContextSwitchTo(gs->css.ss.ps.state->es_query_cxt);

	/* a rescan's spill keeps the partitions of the first */
	gs->exchange = agg_exchange_join(&gs->exchange_home,
									 (int) Min(GROUP_EXCHANGE_MAX_PARTITIONS,
											   Max(4.0, ceil(2.0 * bytes / gs->hash_mem))),
									 gs->record_bytes);
	gs->spill_partitions = gs->exchange->shared->partitions;
	MemoryContextSwitchTo(old);
}

/*
 * A page read on the CPU: its rows into the set of groups (a
 * ScanDriverRoutine's read_page).  In the partitioned form, or once it
 * spills, the set goes to the exchange whenever it outgrows hash_mem.
 * (In the GPU form every page goes to the GPU, until it fails the job.)
 */
static void
group_page(void *arg, BlockNumber block)
{
	GroupsScanState *gs = arg;

	groups_add_page(gs);
	if (MemoryContextMemAllocated(gs->groups_cxt, true) > gs->hash_mem)
	{
		if (gs->exchange == NULL && gs->partitions == 0 && gs->spillable)
			start_spill(gs, (BlockNumber) gs->scan.blocks_read);
		if (gs->exchange)
			groups_write_records(gs);
	}
}

/* The blocks are read: in the GPU form, the set ends as the groups the GPU chose. */
static bool
take_gpu_groups(void *arg, PageSink *pages, PageSinkStats *stats)
{
	return pages == NULL || groups_gpu_finish((GroupsScanState *) arg, pages, stats);
}

/* The GPU failed the job (under auto): the groups it held are gone, the set starts empty. */
static void
group_again_on_cpu(void *arg)
{
	GroupsScanState *gs = arg;

	groups_reset(gs);
	groups_begin(gs);
	if (gs->best != NULL)
		groups_best_reset(gs);
}

static const ScanDriverRoutine groups_table_routine = {
	.read_page = group_page,
	.finish = take_gpu_groups,
	.start_over = group_again_on_cpu,
};

/*
 * The table, or this process's share of it, into the set of groups: in
 * the GPU form over a column index, its entries (groups_index.c), else its
 * blocks; in the partitioned form, or once it spilled, the set then goes
 * to the exchange.
 */
static void
scan_table(GroupsScanState *gs)
{
	bool		whole = gs->partitions == 0 && gs->exchange == NULL;
	bool		index_read = false;
	PageSink   *pages = NULL;
	instr_time	start;
	instr_time	end;

	INSTR_TIME_SET_CURRENT(start);
	scan_counters_count_process(&gs->scan.counters, false);
	scan_driver_begin(&gs->scan);
	if (gs->best != NULL)
		groups_best_reset(gs);
	/*
	 * The GPU form reads the pages it can whole, in one process: over the
	 * column index where it is planned and cheaper, else the pages.
	 */
	gs->index_declined = 0;
	gs->pages_unheld = 0;
	if (whole && OidIsValid(gs->index_oid))
	{
		BlockNumber declined = groups_index_declines(gs);

		if (declined > 0 && (pages = groups_gpu_sink(gs)) != NULL)
			gs->index_declined = declined;
		else
			index_read = groups_index_scan(gs);
	}
	if (!index_read)
		scan_driver_run(&gs->scan, pages == NULL && whole ? groups_gpu_sink(gs) : pages,
						&groups_table_routine, gs);
	scan_driver_end(&gs->scan);
	if (gs->exchange)
		groups_write_records(gs);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	gs->scan_ms += INSTR_TIME_GET_MILLISEC(end);
}

/*
 * Join the partitioned form's exchange, and write this process's share of
 * the table to it unless the writing is over; then wait for the other
 * writers.
 */
static void
start_exchange(GroupsScanState *gs)
{
	MemoryContext old = MemoryContextSwitchTo(gs->css.ss.ps.state->es_query_cxt);

	/* without a parallel scan, the same files in this process alone */
	gs->exchange = agg_exchange_join(&gs->exchange_home, gs->partitions, gs->record_bytes);
	MemoryContextSwitchTo(old);
	if (gs->exchange->writing)
	{
		groups_begin(gs);
		scan_table(gs);
		groups_reset(gs);
		agg_exchange_finish_writing(gs->exchange);
	}
}

/* The set of groups chosen from, timed; for the rows form, each group marked. */
static void
choose(GroupsScanState *gs)
{
	instr_time	start;
	instr_time	end;

	INSTR_TIME_SET_CURRENT(start);
	groups_choose(gs);
	if (gs->table_rows)
	{
		gs->chosen = MemoryContextAllocExtended(gs->groups_cxt, Max(gs->ngroups, 1),
												MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (uint32 i = 0; i < gs->nkept; i++)
			gs->chosen[gs->kept[i]] = true;
	}
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	gs->choose_ms += INSTR_TIME_GET_MILLISEC(end);
}

/*
 * The next set of groups, read and chosen from: the table's, or the next
 * partition this process claims; false when none is left.  The leader of a
 * parallel plan returns every process's groups: while workers still claim
 * partitions, it leaves the rest to them and gathers.
 */
static bool
next_set(GroupsScanState *gs)
{
	const char *record;

	if (gs->exhausted)
		return false;
	if (gs->partitions == 0 && gs->exchange == NULL)
	{
		groups_begin(gs);
		scan_table(gs);
		if (gs->exchange == NULL)
		{
			choose(gs);
			gs->exhausted = true;
			return true;
		}
		/* it spilled: its groups are read back by partition */
		groups_reset(gs);
		agg_exchange_finish_writing(gs->exchange);
	}
	else if (gs->exchange == NULL)
		start_exchange(gs);
	if (!agg_exchange_next_partition(gs->exchange, !IsParallelWorker()))
	{
		gs->exhausted = true;
		scan_counters_publish(&gs->scan.counters);
		return false;
	}
	groups_begin(gs);
	for (uint64 n = 0; (record = agg_exchange_next_row(gs->exchange)) != NULL; n++)
	{
		if ((n & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		groups_merge_record(gs, record);
	}
	choose(gs);
	return true;
}

static TupleTableSlot *
next_group(ScanState *ss)
{
	GroupsScanState *gs = (GroupsScanState *) ss;
	TupleTableSlot *slot;

	for (;;)
	{
		/* a set chosen from, whose groups are being returned */
		if (gs->kept != NULL)
		{
			if ((slot = groups_next_tuple(gs)) != NULL)
				return slot;
			groups_reset(gs);
		}
		if (!next_set(gs))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
	}
}

/* The rows form's next page of the table read, on its second pass; false at the end. */
static bool
read_next_page(GroupsScanState *gs)
{
	BlockNumber block = scan_row_reader_next_read_block(&gs->scan.reader);

	if (block == InvalidBlockNumber)
		return false;
	MemoryContextReset(gs->page_cxt);
	scan_row_reader_read_page(&gs->scan.reader, block);
	return true;
}

/*
 * The rows form's next row: once the table's groups are chosen, the table
 * is read again, and its rows of the groups chosen that pass the WHERE
 * clause are returned as they come, in the table's order.
 */
static TupleTableSlot *
next_row(ScanState *ss)
{
	GroupsScanState *gs = (GroupsScanState *) ss;
	bool		page = true;

	if (gs->chosen == NULL)
	{
		if (!next_set(gs))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		scan_row_reader_begin(&gs->scan.reader, ss->ps.state->es_snapshot);
		page = read_next_page(gs);
	}
	while (page)
	{
		while (scan_row_reader_next_row(&gs->scan.reader))
			if (groups_row_chosen(gs))
			{
				/* the scan's slot is virtual: the row copied, defaults of added columns too */
				ExecStoreBufferHeapTuple(&gs->scan.reader.tuple, gs->scan.reader.table_slot,
										 gs->scan.reader.scan->rs_cbuf);
				return ExecCopySlot(ss->ss_ScanTupleSlot, gs->scan.reader.table_slot);
			}
		CHECK_FOR_INTERRUPTS();
		page = read_next_page(gs);
	}
	scan_row_reader_end(&gs->scan.reader);
	groups_reset(gs);
	return ExecClearTuple(ss->ss_ScanTupleSlot);
}

static TupleTableSlot *
exec_groups_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, ((GroupsScanState *) node)->table_rows ? next_row : next_group,
					scan_driver_no_recheck);
}

/*
 * Leave the scan (at its end, or before a rescan): its groups freed, this
 * process out of the exchange.
 */
static void
end_groups_scan(CustomScanState *node)
{
	GroupsScanState *gs = (GroupsScanState *) node;

	/* the rows form's second pass, left before its end */
	if (gs->scan.reader.scan != NULL)
		scan_row_reader_end(&gs->scan.reader);
	groups_reset(gs);
	MemoryContextReset(gs->page_cxt);
	agg_exchange_leave(&gs->exchange);
	gs->exhausted = false;
}

/*
 * The exchange in this process alone starts over too (a parallel one:
 * share_exchange), and the rows form's scan slot is cleared.
 */
static void
rescan_groups_scan(CustomScanState *node)
{
	end_groups_scan(node);
	agg_exchange_restart_local(&((GroupsScanState *) node)->exchange_home);
	ExecScanReScan(&node->ss);
}

/* A parallel scan's own part of the shared memory: the exchange. */
static void
share_exchange(CustomScanState *node, ScanSharedEvent event, void *own, ParallelContext *pcxt)
{
	GroupsScanState *gs = (GroupsScanState *) node;

	agg_exchange_share(&gs->exchange_home, &gs->exchange, event, own, pcxt, gs->partitions);
}

SCAN_DRIVER_METHODS(groups_scan_methods, GROUPS_SCAN_NAME, GroupsScanState,
					begin_groups_scan, exec_groups_scan, end_groups_scan,
					rescan_groups_scan, groups_explain_scan);
