/*-------------------------------------------------------------------------
 *
 * agg_exec.c
 *	  Executing GpuTopKAgg: scan the table once under the query's snapshot,
 *	  keep the top k of each group, and return one tuple per group: the
 *	  grouping column's value and each aggregate's array.
 *
 * This file holds the node's callbacks, its parallel shared memory and
 * the order of its runs (agg_state.h); a run's groups are agg_groups.c's,
 * the exchange's and spills' records agg_records.c's, EXPLAIN
 * agg_explain.c's.
 *
 * A run whose groups' states outgrow hash_mem keeps the groups it has and
 * spills the rows of every other group to temporary files, partitioned by
 * group (agg_spill.h); once its groups are returned, each spilled
 * partition is grouped in a run of its own, which may spill in turn (the
 * deeper spills are read first, each level hashing the groups differently).
 *
 * A parallel plan takes one of two forms (every process on the backend
 * gputopk.device says: through the GPU service, each a job of its own).  In a partial aggregation
 * each process groups its share of the table's blocks and returns its
 * groups' states serialized, for PostgreSQL's Finalize Aggregate to
 * combine: for few groups.  In a partitioned one, for many groups, each
 * process writes the rows of its share to the files of their groups'
 * partitions (agg_exchange.h); then the processes claim partitions
 * one at a time, group each one's rows and return its groups' answers,
 * each group whole in one process.  A partitioned plan run outside
 * parallel mode (a set-returning SQL function called row by row, say)
 * goes through the same files in one process.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "agg_exec.h"
#include "agg_explain.h"
#include "agg_groups.h"
#include "agg_records.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_page_sink.h"

static void share_exchange(CustomScanState *node, ScanSharedEvent event, void *own,
						   ParallelContext *pcxt);

static void
begin_topk_agg_scan(CustomScanState *node, EState *estate, int eflags)
{
	AggScanState *ts = (AggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *private = cscan->custom_private;
	TupleDesc	table_desc = RelationGetDescr(node->ss.ss_currentRelation);
	List	   *where;
	bool		fixed = node->ss.ps.scanopsfixed;

	ts->planned.mode = (TopkAggMode) linitial_int(list_nth(private, AGG_FIELD_MODE));
	ts->planned.partitions = linitial_int(list_nth(private, AGG_FIELD_PARTITIONS));
	ts->planned.group_attno = linitial_int(list_nth(private, AGG_FIELD_GROUP_ATTNO));
	ts->planned.naggs = list_length(list_nth(private, AGG_FIELD_KS));
	ts->planned.aggs = palloc0(sizeof(AggSpec) * ts->planned.naggs);
	ts->row = palloc0(sizeof(AggValue) * ts->planned.naggs);
	initStringInfo(&ts->record);
	initStringInfo(&ts->spilled_record);
	ts->hash_mem = get_hash_memory_limit();
	ts->group_bytes = linitial_int(list_nth(private, AGG_FIELD_GROUP_BYTES));
	ts->planned.results_byval = true;
	for (int i = 0; i < ts->planned.naggs; i++)
	{
		AggSpec    *agg = &ts->planned.aggs[i];
		Oid			value_type;
		Form_pg_attribute result;

		agg->value_attno = list_nth_int(list_nth(private, AGG_FIELD_VALUE_ATTNOS), i);
		agg->result_attno = list_nth_int(list_nth(private, AGG_FIELD_RESULT_ATTNOS), i);
		agg->k = list_nth_int(list_nth(private, AGG_FIELD_KS), i);
		agg->largest = list_nth_int(list_nth(private, AGG_FIELD_LARGEST), i) != 0;
		agg->state_text = list_nth_int(list_nth(private, AGG_FIELD_STATE_TEXT), i) != 0;
		value_type = TupleDescAttr(table_desc, agg->value_attno - 1)->atttypid;
		if (!key_type_of(value_type, &agg->key_type))
			elog(ERROR, "gputopk: no keys for type %s", format_type_be(value_type));
		result = TupleDescAttr(table_desc,
							   (agg->result_attno ? agg->result_attno : agg->value_attno) - 1);
		agg->result_byval = result->attbyval;
		agg->result_typlen = result->attlen;
		agg->model = agg_trans_create(CurrentMemoryContext, value_type, agg->largest,
									  agg->k, agg->result_attno != 0, result->atttypid,
									  list_nth_oid(list_nth(private, AGG_FIELD_COLLATIONS), i));
		ts->planned.results_byval &= agg->result_byval;
	}

	/* a parallel scan's shared memory holds a partitioned plan's exchange */
	scan_driver_init(&ts->scan, &node->ss, share_exchange, sizeof(GroupExchangeShared), true);
	/* the WHERE clause is over the table's slots, of any type */
	node->ss.ps.scanopsfixed = false;
	/* the WHERE clause's Vars as planned, renumbered as the scan's (in a subquery they differ) */
	where = copyObject(list_nth(private, AGG_FIELDS));
	ChangeVarNodes((Node *) where, linitial_int(list_nth(private, AGG_FIELD_RELID)),
				   cscan->scan.scanrelid, 0);
	ts->scan.reader.filter = scan_filter_program_compile(where, cscan->scan.scanrelid, &node->ss.ps,
													&ts->planned.interpreted);
	ts->scan.reader.table_qual = ExecInitQual(ts->planned.interpreted, &node->ss.ps);
	node->ss.ps.scanopsfixed = fixed;
}

/*
 * The current table row's group and each aggregate's value, key and result
 * into ts->row.
 */
static void
read_row(AggScanState *ts, Datum *group, bool *group_isnull)
{
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);

	*group = 0;
	*group_isnull = false;
	if (ts->planned.group_attno)
		*group = scan_row_reader_column(&ts->scan.reader, ts->planned.group_attno, desc, group_isnull);
	for (int i = 0; i < ts->planned.naggs; i++)
	{
		AggSpec    *agg = &ts->planned.aggs[i];
		AggValue   *value = &ts->row[i];
		bool		isnull;
		Datum		datum = scan_row_reader_column(&ts->scan.reader, agg->value_attno, desc, &isnull);

		value->present = !isnull;
		value->key = isnull ? 0 : key_of_datum(agg->key_type, datum, agg->largest);
		value->result = isnull ? 0 : datum;
		value->result_isnull = false;
		if (agg->result_attno && !isnull)
			value->result = scan_row_reader_column(&ts->scan.reader, agg->result_attno, desc,
												   &value->result_isnull);
	}
}

/* This process is one of those scanning the table, or the only one. */
static void
count_process(AggScanState *ts)
{
	scan_counters_count_process(&ts->scan.counters, false);
	ts->stats.ngroups = 0;
	ts->stats.memory_used = 0;
	ts->stats.gpu_counted = false;
	ts->run.backend = BACKEND_CPU;
	ts->stats.ran = true;
}

/*
 * A sink for the pages the GPU can read in place, where the scan allows it
 * (scan_page_sink_create) and the query has one aggregate and no GROUP BY.  The
 * GPU returns the rows of the k best values and those tied with the k-th
 * (NULLs last), which are fetched and offered to the state as rows read
 * here are, so the state decides the answer exactly.
 */
static PageSink *
create_page_sink(AggScanState *ts)
{
	AggSpec    *agg = &ts->planned.aggs[0];
	GpuProgramSource program = {
		.key_type = agg->key_type,
		.desc = agg->largest,
		.nulls_first = false,
		.key_attno = agg->value_attno,
		.filter = ts->scan.reader.filter,
	};

	if (ts->planned.group_attno != 0 || ts->planned.naggs != 1 || ts->exchange != NULL)
		return NULL;
	return scan_page_sink_create(&ts->scan.reader, &program,
								 Min((uint64) agg->k,
								 (uint64) ts->scan.reader.scan->rs_nblocks * MaxHeapTuplesPerPage),
								 TOPK_WITH_TIES);
}

/* The current table row to its group, or in a partitioned plan to the exchange. */
static void
group_row(void *arg)
{
	AggScanState *ts = arg;
	Datum		group;
	bool		group_isnull;

	read_row(ts, &group, &group_isnull);
	if (ts->exchange != NULL)
		agg_records_exchange_row(ts, group, group_isnull);
	else
		agg_group_row(ts, group, group_isnull);
}

/* A page read on the CPU: each row to its group (a ScanDriverRoutine's read_page). */
static void
group_page(void *arg, BlockNumber block)
{
	AggScanState *ts = arg;

	while (scan_row_reader_next_row(&ts->scan.reader))
		group_row(ts);
}

static bool
rows_job_failed(void *arg)
{
	return agg_run_rows_job_failed((AggScanState *) arg);
}

/*
 * The table is read: the rows the GPU selected from the pages it read
 * (pages, or NULL) fetched and grouped, and the candidates of the GPU's
 * grouped top-ks into the states; false where the GPU failed a job (under
 * auto).
 */
static bool
take_gpu_answers(void *arg, PageSink *pages, PageSinkStats *stats)
{
	AggScanState *ts = arg;
	TopkResult	result;

	if (pages != NULL)
	{
		scan_page_sink_result(pages, &result, &ts->scan.counters.gpu, stats);
		if (scan_page_sink_failed(pages))
			return false;
		ts->scan.counters.counts[COUNT_GPU_CANDIDATES] += result.count;
		scan_row_reader_fetch_tids(&ts->scan.reader, ts->css.ss.ps.state->es_snapshot, &result,
								   group_row, ts);
		agg_run_on_gpu(ts);
	}
	/* (the exchange's writers start no GPU jobs of their own) */
	return agg_run_take_gpu(ts);
}

/*
 * The GPU failed a job: the run begins again on the CPU, in a memory of its
 * own that replaces the one the scan was in.
 */
static void
group_again_on_cpu(void *arg)
{
	AggScanState *ts = arg;

	agg_run_again_on_cpu(ts);
	MemoryContextSwitchTo(ts->run.cxt);
}

static const ScanDriverRoutine agg_table_routine = {
	.read_page = group_page,
	.rows_job_failed = rows_job_failed,
	.finish = take_gpu_answers,
	.start_over = group_again_on_cpu,
};

/*
 * Read this process's share of the table: each row to its group, or in a
 * partitioned plan to the exchange.  With a page sink, every page goes to
 * the GPU (one GPU job per process); without one, the rows go to the GPU
 * as they are read where this process's backend is the GPU.
 */
static void
scan_table(AggScanState *ts)
{
	PageSink   *pages;
	instr_time	start;
	instr_time	end;

	INSTR_TIME_SET_CURRENT(start);
	scan_driver_begin(&ts->scan);
	pages = create_page_sink(ts);
	/* a partitioned plan's rows go to the exchange, grouped in runs of their own later */
	if (pages == NULL && ts->exchange == NULL)
		agg_run_start_gpu_jobs(ts);
	if (ts->run.sinks != NULL)
		scan_driver_rows_to_gpu(&ts->scan);
	scan_driver_run(&ts->scan, pages, &agg_table_routine, ts);
	scan_driver_end(&ts->scan);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->stats.scan_ms += INSTR_TIME_GET_MILLISEC(end);
}

/*
 * Join a partitioned plan's exchange, and write this process's share of
 * the table to it unless the writing is over; then wait for the other
 * writers.
 */
static void
start_exchange(AggScanState *ts)
{
	MemoryContext query_cxt = ts->css.ss.ps.state->es_query_cxt;
	MemoryContext scan_cxt;
	MemoryContext old = MemoryContextSwitchTo(query_cxt);

	/* the planner's rule: the exchange's fixed-size records carry results by value */
	Assert(ts->planned.results_byval);
	/* without a parallel scan, the same files in this process alone */
	ts->exchange = agg_exchange_join(&ts->exchange_home, ts->planned.partitions,
									 TOPK_AGG_RECORD_BYTES(ts->planned.naggs));
	count_process(ts);
	if (ts->exchange->writing)
	{
		scan_cxt = AllocSetContextCreate(query_cxt, "GpuTopKAgg exchange",
										 ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(scan_cxt);
		scan_table(ts);
		MemoryContextSwitchTo(query_cxt);
		agg_exchange_finish_writing(ts->exchange);
		MemoryContextDelete(scan_cxt);
		ts->scan.counters.counts[COUNT_ROWS_EXCHANGED] += ts->exchange->rows_written;
		ts->scan.counters.counts[COUNT_BYTES_EXCHANGED] += ts->exchange->bytes_written;
		scan_counters_publish(&ts->scan.counters);
	}
	MemoryContextSwitchTo(old);
}

/* A record of the exchange or a spill to the run's groups. */
static void
group_record(AggScanState *ts, const char *record)
{
	Datum		group;
	bool		group_isnull;

	agg_records_decode(ts, record, &group, &group_isnull);
	agg_group_row(ts, group, group_isnull);
}

/* Group a spill's next partition; false when none is left. */
static bool
run_spill_partition(AggScanState *ts, GroupSpill *spill)
{
	MemoryContext old;
	const char *record;
	Size		size;

	if (!agg_spill_next_partition(spill))
		return false;
	agg_run_begin(ts, spill->depth);
	old = MemoryContextSwitchTo(ts->run.cxt);
	while ((record = agg_spill_next_row(spill, &size)) != NULL)
	{
		Assert(size >= TOPK_AGG_RECORD_BYTES(ts->planned.naggs));
		/* results passed by reference are used where they are: aligned */
		if (!ts->planned.results_byval)
		{
			resetStringInfo(&ts->spilled_record);
			appendBinaryStringInfo(&ts->spilled_record, record, size);
			record = ts->spilled_record.data;
		}
		group_record(ts, record);
	}
	MemoryContextSwitchTo(old);
	ts->scan.counters.counts[COUNT_SPILL_BATCHES]++;
	/* a spill's runs are on the CPU */
	agg_run_end(ts);
	return true;
}

/* Group the partition that this process claimed from the exchange, in a run. */
static void
run_exchange_partition(AggScanState *ts)
{
	MemoryContext old;
	instr_time	start;
	instr_time	end;
	const char *record;

	INSTR_TIME_SET_CURRENT(start);
	agg_run_begin(ts, 0);
	agg_run_start_gpu_jobs(ts);
	for (;;)
	{
		old = MemoryContextSwitchTo(ts->run.cxt);
		while ((record = agg_exchange_next_row(ts->exchange)) != NULL)
			group_record(ts, record);
		MemoryContextSwitchTo(old);
		if (agg_run_take_gpu(ts))
			break;
		/* the GPU failed a job (under auto): the partition again, on the CPU */
		agg_run_again_on_cpu(ts);
		agg_exchange_rewind(ts->exchange);
	}
	agg_run_end(ts);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->stats.group_ms += INSTR_TIME_GET_MILLISEC(end);
	ts->stats.leader_partitions += !IsParallelWorker();
}

/*
 * The next run's groups, ready to return: a spilled partition's, the whole
 * table's (or this process's share's), or a partitioned plan's next
 * partition's; false when nothing is left.
 */
static bool
next_run(AggScanState *ts)
{
	MemoryContext old;

	/* the spills of the runs before, the deepest first */
	while (ts->spills != NIL)
	{
		GroupSpill *spill = llast(ts->spills);

		if (run_spill_partition(ts, spill))
			return true;
		ts->spills = list_delete_last(ts->spills);
		agg_spill_free(spill);
	}
	if (ts->exhausted)
		return false;
	if (ts->planned.mode != AGG_MODE_PARTITIONED)
	{
		count_process(ts);
		agg_run_begin(ts, 0);
		old = MemoryContextSwitchTo(ts->run.cxt);
		scan_table(ts);
		MemoryContextSwitchTo(old);
		agg_run_end(ts);
		ts->exhausted = true;
		return true;
	}
	if (ts->exchange == NULL)
		start_exchange(ts);
	/*
	 * The leader returns every process's groups: while workers still group
	 * partitions, it leaves the rest to them and gathers.
	 */
	if (!agg_exchange_next_partition(ts->exchange, !IsParallelWorker()))
	{
		ts->exhausted = true;
		return false;
	}
	run_exchange_partition(ts);
	return true;
}

static TupleTableSlot *
next_group(ScanState *ss)
{
	AggScanState *ts = (AggScanState *) ss;
	TupleTableSlot *slot;

	for (;;)
	{
		if (!ts->run.done && !next_run(ts))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		if ((slot = agg_run_next_tuple(ts)) != NULL)
			return slot;
		/* the run's groups are all out: on to the next run */
		agg_run_free(ts);
	}
}

static TupleTableSlot *
exec_topk_agg_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_group, scan_driver_no_recheck);
}

/*
 * Leave the scan (at its end, or before a rescan): its groups and spills
 * freed, this process out of the exchange.
 */
static void
end_topk_agg_scan(CustomScanState *node)
{
	AggScanState *ts = (AggScanState *) node;
	ListCell   *lc;

	agg_run_free(ts);
	if (ts->run.spill)
		agg_spill_free(ts->run.spill);
	ts->run.spill = NULL;
	foreach(lc, ts->spills)
		agg_spill_free(lfirst(lc));
	list_free(ts->spills);
	ts->spills = NIL;
	agg_exchange_leave(&ts->exchange);
	ts->exhausted = false;
}

/* The exchange in this process alone starts over too (a parallel one: share_exchange). */
static void
rescan_topk_agg_scan(CustomScanState *node)
{
	end_topk_agg_scan(node);
	agg_exchange_restart_local(&((AggScanState *) node)->exchange_home);
}

/* A parallel scan's own part of the shared memory: a partitioned plan's exchange. */
static void
share_exchange(CustomScanState *node, ScanSharedEvent event, void *own, ParallelContext *pcxt)
{
	AggScanState *ts = (AggScanState *) node;

	if (ts->planned.mode == AGG_MODE_PARTITIONED)
		agg_exchange_share(&ts->exchange_home, &ts->exchange, event, own, pcxt,
						   ts->planned.partitions);
}

SCAN_DRIVER_METHODS(agg_scan_methods, TOPK_AGG_SCAN_NAME, AggScanState,
					begin_topk_agg_scan, exec_topk_agg_scan, end_topk_agg_scan,
					rescan_topk_agg_scan, agg_explain_scan);
