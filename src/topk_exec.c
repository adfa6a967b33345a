/*-------------------------------------------------------------------------
 *
 * topk_exec.c
 *	  Executing GpuTopK: scan the table once under the query's snapshot,
 *	  hand the first sort key of every qualifying row to the top-k backend,
 *	  read the winning rows again and sort them by the full ORDER BY.
 *
 * The backend knows rows by their ordinal among the qualifying rows of the
 * scan.  The scan notes the first ordinal of each block it reads; a
 * winner's block is read again (a TID range scan under the same snapshot
 * sees the same tuples in the same order), its quals evaluated again, and
 * the row with the winner's ordinal taken.  So memory stays one entry per
 * block, not per row.  PostgreSQL's tuplesort with the query's operators,
 * collations and NULL order then decides the final order, and the Limit
 * node above applies LIMIT, OFFSET and WITH TIES.  Its state is
 * topk_state.h's, its EXPLAIN topk_explain.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "colindex_coverage.h"
#include "colindex_dict.h"
#include "colindex_select.h"
#include "scan_counters.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_gpu_stats.h"
#include "scan_key_program.h"
#include "scan_page_sink.h"
#include "scan_row_reader.h"
#include "settings.h"
#include "topk_exec.h"
#include "topk_key_sink.h"
#include "topk_scan.h"
#include "topk_state.h"

/* the table scan of a parallel scan, after TopkShared */
#define SHARED_SCAN_OFFSET MAXALIGN(sizeof(TopkShared))

static void begin_topk_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_topk_scan(CustomScanState *node);
static void end_topk_scan(CustomScanState *node);
static void rescan_topk_scan(CustomScanState *node);
static Size estimate_shared(CustomScanState *node, ParallelContext *pcxt);
static void initialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void reinitialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void attach_shared(CustomScanState *node, shm_toc *toc, void *coordinate);
static void shutdown_topk_scan(CustomScanState *node);

static const CustomExecMethods topk_exec_methods = {
	.CustomName = TOPK_SCAN_NAME,
	.BeginCustomScan = begin_topk_scan,
	.ExecCustomScan = exec_topk_scan,
	.EndCustomScan = end_topk_scan,
	.ReScanCustomScan = rescan_topk_scan,
	.ExplainCustomScan = topk_explain_scan,
	.EstimateDSMCustomScan = estimate_shared,
	.InitializeDSMCustomScan = initialize_shared,
	.ReInitializeDSMCustomScan = reinitialize_shared,
	.InitializeWorkerCustomScan = attach_shared,
	.ShutdownCustomScan = shutdown_topk_scan,
};

Node *
topk_create_scan_state(CustomScan *cscan)
{
	TopkScanState *ts = (TopkScanState *) newNode(sizeof(TopkScanState),
												  T_CustomScanState);

	ts->css.methods = &topk_exec_methods;
	return (Node *) ts;
}

/*
 * The key's and the ORDER BY's expressions.  Items that are not columns
 * are computed for each candidate and sorted on as extra columns after the
 * table's.
 */
static void
init_sort_exprs(TopkScanState *ts, CustomScan *cscan, EState *estate)
{
	TupleDesc	table_desc = RelationGetDescr(ts->css.ss.ss_currentRelation);
	Expr	   *key = list_nth(cscan->custom_exprs, TOPK_EXPR_KEY);
	int			nexprs = 0;

	ts->key_attno = IsA(key, Var) ? ((Var *) key)->varattno : 0;
	if (ts->key_source == KEY_SOURCE_EXACT_FLOAT8)
		ts->key_program = scan_key_program_compile(key, cscan->scan.scanrelid);
	if (ts->key_attno == 0 && ts->key_program == NULL)
		ts->key_expr = ExecInitExpr(key, &ts->css.ss.ps);
	ts->sort_exprs = palloc0(sizeof(ExprState *) * ts->nsort);
	for (int i = 0; i < ts->nsort; i++)
		if (ts->sort_attnos[i] == 0)
			nexprs++;
	if (nexprs == 0)
	{
		ts->sort_desc = table_desc;
		return;
	}
	ts->sort_desc = CreateTemplateTupleDesc(table_desc->natts + nexprs);
	for (int i = 0; i < table_desc->natts; i++)
		TupleDescCopyEntry(ts->sort_desc, i + 1, table_desc, i + 1);
	nexprs = 0;
	for (int i = 0; i < ts->nsort; i++)
	{
		Expr	   *expr = list_nth(cscan->custom_exprs, TOPK_EXPR_SORT + i);
		Oid			type = exprType((Node *) expr);
		AttrNumber	attno;

		if (ts->sort_attnos[i] != 0)
			continue;
		attno = table_desc->natts + ++nexprs;
		TupleDescInitEntry(ts->sort_desc, attno, NULL, type, exprTypmod((Node *) expr), 0);
		TupleDescInitEntryCollation(ts->sort_desc, attno, exprCollation((Node *) expr));
		ts->sort_exprs[i] = ExecInitExpr(expr, &ts->css.ss.ps);
		ts->sort_attnos[i] = attno;
		if (i == 0 && ts->key_program && (type == FLOAT4OID || type == FLOAT8OID))
			ts->key_value_type = type;
	}
	ts->sort_input = ExecAllocTableSlot(&estate->es_tupleTable, ts->sort_desc,
										&TTSOpsVirtual);
}

/* A text value's code in the column index's dictionary (arg). */
static int32
index_text_code(void *arg, const char *bytes, int length)
{
	return colindex_dict_code((Relation) arg, bytes, length);
}

/*
 * The column index the plan reads, and the WHERE clauses checked on its
 * entries (all of them are checked again on the rows fetched).
 */
static void
open_index(TopkScanState *ts, CustomScan *cscan)
{
	Oid			oid = linitial_oid(list_nth(cscan->custom_private, TOPK_FIELD_INDEX));
	List	   *rest;
	List	   *covered;
	FilterTextCodes codes = {.code = index_text_code};

	ts->index = index_open(oid, AccessShareLock);
	codes.arg = ts->index;
	covered = colindex_coverage_clauses(cscan->scan.plan.qual, cscan->scan.scanrelid,
										colindex_coverage_columns(ts->index));
	ts->index_filter = scan_filter_program_compile_coded(covered, cscan->scan.scanrelid,
														 &ts->css.ss.ps, &codes, &rest);
	Assert(rest == NIL);
	ts->candidates_per_row = floatVal(list_nth(cscan->custom_private, TOPK_FIELD_CANDIDATES));
}

static void
begin_topk_scan(CustomScanState *node, EState *estate, int eflags)
{
	TopkScanState *ts = (TopkScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *private = cscan->custom_private;
	List	   *attnos = list_nth(private, TOPK_FIELD_SORT_ATTNOS);
	List	   *ops = list_nth(private, TOPK_FIELD_SORT_OPS);
	List	   *collations = list_nth(private, TOPK_FIELD_SORT_COLLATIONS);
	List	   *nulls_first = list_nth(private, TOPK_FIELD_SORT_NULLS_FIRST);

	ts->key_type = (KeyType) intVal(list_nth(private, TOPK_FIELD_KEY_TYPE));
	ts->key_source = (TopkKeySource) intVal(list_nth(private, TOPK_FIELD_KEY_SOURCE));
	ts->desc = intVal(list_nth(private, TOPK_FIELD_DESC)) != 0;
	ts->limit_with_ties = intVal(list_nth(private, TOPK_FIELD_WITH_TIES)) != 0;
	ts->nsort = list_length(attnos);
	ts->sort_attnos = palloc(sizeof(AttrNumber) * ts->nsort);
	ts->sort_ops = palloc(sizeof(Oid) * ts->nsort);
	ts->sort_collations = palloc(sizeof(Oid) * ts->nsort);
	ts->sort_nulls_first = palloc(sizeof(bool) * ts->nsort);
	for (int i = 0; i < ts->nsort; i++)
	{
		ts->sort_attnos[i] = (AttrNumber) list_nth_int(attnos, i);
		ts->sort_ops[i] = list_nth_oid(ops, i);
		ts->sort_collations[i] = list_nth_oid(collations, i);
		ts->sort_nulls_first[i] = list_nth_int(nulls_first, i) != 0;
	}
	ts->limit_count = ExecInitExpr(linitial(cscan->custom_exprs), &node->ss.ps);
	ts->limit_offset = ExecInitExpr(lsecond(cscan->custom_exprs), &node->ss.ps);
	ts->reader.rel = node->ss.ss_currentRelation;
	ts->reader.econtext = node->ss.ps.ps_ExprContext;
	ts->reader.table_slot = table_slot_create(node->ss.ss_currentRelation, &estate->es_tupleTable);

	/*
	 * The node's own quals are compiled for its (virtual) scan slot; the
	 * scan needs them, the key and the ORDER BY for the table's slots,
	 * compiled for any slot type.  The quals that can be are compiled into
	 * a filter program.
	 */
	{
		bool		fixed = node->ss.ps.scanopsfixed;
		List	   *interpreted;

		node->ss.ps.scanopsfixed = false;
		ts->reader.filter = scan_filter_program_compile(cscan->scan.plan.qual, cscan->scan.scanrelid,
														&node->ss.ps, &interpreted);
		ts->reader.table_qual = ExecInitQual(interpreted, &node->ss.ps);
		init_sort_exprs(ts, cscan, estate);
		if (list_nth(private, TOPK_FIELD_INDEX) != NIL)
			open_index(ts, cscan);
		node->ss.ps.scanopsfixed = fixed;
	}
	ts->sorted_slot = ExecAllocTableSlot(&estate->es_tupleTable, ts->sort_desc,
										 &TTSOpsMinimalTuple);
}

/* A bigint LIMIT or OFFSET value, or fallback when the expression is absent or NULL. */
static uint64
eval_limit(ExprState *expr, ExprContext *econtext, uint64 fallback)
{
	bool		isnull;
	Datum		d;
	int64		v;

	if (expr == NULL)
		return fallback;
	d = ExecEvalExprSwitchContext(expr, econtext, &isnull);
	if (isnull)
		return fallback;
	v = DatumGetInt64(d);
	/* the Limit node above has already rejected negative values */
	return v < 0 ? 0 : (uint64) v;
}

/* the key of the first sort key's value */
static uint64
key_of(TopkScanState *ts, Datum d, bool isnull)
{
	if (isnull)
		return key_null(ts->key_type, ts->sort_nulls_first[0]);
	if (ts->key_source == KEY_SOURCE_LOSSY_NUMERIC)
		d = DirectFunctionCall1(numeric_float8_no_overflow, d);
	return key_of_datum(ts->key_type, d, ts->desc);
}

/* Record that block's qualifying rows start at ordinal first. */
static void
note_block(TopkScanState *ts, BlockNumber block, uint64 first)
{
	if (ts->nblocks == ts->blocks_cap)
	{
		ts->blocks_cap = Max(ts->blocks_cap * 2, 1024);
		ts->blocks = ts->blocks == NULL ?
			palloc_extended(sizeof(BlockStart) * ts->blocks_cap, MCXT_ALLOC_HUGE) :
			repalloc_huge(ts->blocks, sizeof(BlockStart) * ts->blocks_cap);
	}
	ts->blocks[ts->nblocks].block = block;
	ts->blocks[ts->nblocks].first = first;
	ts->nblocks++;
}

/*
 * Key the qualifying rows of the page the reader has read (block); they
 * get the ordinals from `ordinal` on, and the next one is returned.
 */
static uint64
key_rows(TopkScanState *ts, KeySink *sink, BlockNumber block, uint64 ordinal)
{
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);
	AttrNumber	attno = ts->key_attno;
	uint64		page_first = ordinal;
	uint64		null_key = key_null(ts->key_type, ts->sort_nulls_first[0]);

	if (ts->key_program)
	{
		/* the page's rows keyed at once */
		HeapTupleData tuples[MaxHeapTuplesPerPage];
		uint64		keys[MaxHeapTuplesPerPage];
		int			n = 0;

#ifdef __GNUC__
		/* the page's rows start coming into the CPU's cache at once (its second level) */
		for (int at = ((PageHeader) ts->reader.page)->pd_upper; at < BLCKSZ; at += 64)
			__builtin_prefetch((const char *) ts->reader.page + at, 0, 2);
#endif
		while (scan_row_reader_next_row(&ts->reader))
			tuples[n++] = ts->reader.tuple;
		scan_key_program_keys(ts->key_program, tuples, n, desc, ts->desc, null_key, keys);
		for (int i = 0; i < n; i++)
			topk_key_sink_add(sink, keys[i]);
		ordinal += n;
	}
	else
		while (scan_row_reader_next_row(&ts->reader))
		{
			bool		isnull;
			Datum		d;

			d = attno > 0 ? scan_row_reader_column(&ts->reader, attno, desc, &isnull) :
				scan_row_reader_eval(&ts->reader, ts->key_expr, &isnull);
			topk_key_sink_add(sink, key_of(ts, d, isnull));
			ordinal++;
		}
	if (ordinal > page_first)
		note_block(ts, block, page_first);
	ts->counters.counts[TOPK_COUNT_ROWS_SCANNED] += ts->reader.scan->rs_ntuples;
	InstrCountFiltered1(ts, ts->reader.scan->rs_ntuples - (ordinal - page_first));
	return ordinal;
}

/*
 * Scan the rest of the table, keying every qualifying row read on the CPU
 * from ordinal `ordinal` on; returns the next ordinal.  With a page sink,
 * the pages that can be read whole go to the GPU instead, and those its
 * page cache holds, by the visibility map's word, without the scan reading
 * them.  The block map records blocks in the order read, which in a
 * parallel scan need not be the table's.  Stops early where the GPU failed
 * a job (under auto).
 */
static uint64
scan_keys(TopkScanState *ts, KeySink *sink, PageSink *pages, uint64 ordinal)
{
	BlockNumber block;

	while ((block = pages ? scan_page_sink_next_block(pages, &ts->reader) :
			scan_row_reader_next_read_block(&ts->reader)) != InvalidBlockNumber)
	{
		WholePage	whole;

		ts->counters.counts[TOPK_COUNT_PAGES_READ]++;
		if (pages == NULL)
			scan_row_reader_read_page(&ts->reader, block);
		else if (scan_row_reader_read_or_pin(&ts->reader, block, &whole))
		{
			scan_page_sink_add(pages, block, &whole);
			ts->counters.counts[TOPK_COUNT_GPU_PAGES]++;
			if (scan_page_sink_failed(pages))
				break;
			continue;
		}
		ordinal = key_rows(ts, sink, block, ordinal);
		if (topk_key_sink_failed(sink))
			break;
	}
	return ordinal;
}

/*
 * The answers of the sinks, and their jobs given back; false where the GPU
 * failed a job (under auto), whose answer is then empty.
 */
static bool
take_answers(TopkScanState *ts, KeySink *sink, PageSink *pages, TopkResult *result,
			 TopkResult *gpu_result, PageSinkStats *page_stats)
{
	topk_key_sink_result(sink, result, &ts->counters.gpu, &ts->algorithm);
	if (pages != NULL)
		scan_page_sink_result(pages, gpu_result, &ts->counters.gpu, page_stats);
	return !topk_key_sink_failed(sink) && (pages == NULL || !scan_page_sink_failed(pages));
}

/*
 * The GPU failed a job of this scan (under auto): key again on the CPU,
 * into a new sink, every row this process has keyed or handed to the GPU,
 * then the rest of the table.  Returns the next ordinal; *sink is the new
 * sink, and *pages NULL.  Under the same snapshot, a page read again shows
 * the same rows.
 */
static uint64
key_again_on_cpu(TopkScanState *ts, KeySink **sink, PageSink **pages, uint64 k)
{
	BlockNumber *blocks;
	size_t		nblocks;
	uint64		ordinal = 0;

	if (*pages != NULL)
	{
		scan_page_sink_abandon(*pages);
		nblocks = ts->reader.ntaken;
		blocks = ts->reader.taken;
		/* the blocks read below are taken already */
		ts->reader.remember_blocks = false;
	}
	else
	{
		nblocks = ts->nblocks;
		blocks = palloc_extended(sizeof(BlockNumber) * Max(nblocks, 1), MCXT_ALLOC_HUGE);
		for (size_t i = 0; i < nblocks; i++)
			blocks[i] = ts->blocks[i].block;
	}
	*pages = NULL;
	*sink = topk_key_sink_create(key_width(ts->key_type), k, ts->mode,
								 (GpuTopkAlgorithm) gputopk_algorithm, false);
	ts->nblocks = 0;
	for (size_t i = 0; i < nblocks; i++)
	{
		CHECK_FOR_INTERRUPTS();
		scan_row_reader_read_page(&ts->reader, blocks[i]);
		ordinal = key_rows(ts, *sink, blocks[i], ordinal);
	}
	return scan_keys(ts, *sink, NULL, ordinal);
}

/* The first natts columns of src into the cleared virtual slot dst, not yet stored. */
static void
copy_columns(TupleTableSlot *dst, TupleTableSlot *src, int natts)
{
	slot_getallattrs(src);
	ExecClearTuple(dst);
	memcpy(dst->tts_values, src->tts_values, sizeof(Datum) * natts);
	memcpy(dst->tts_isnull, src->tts_isnull, sizeof(bool) * natts);
}

/*
 * The first ORDER BY item's value from a candidate's key, where the key
 * gives it back: a compiled float key's, unless the key is NULL's or a
 * row's that raises (the extreme keys) or the value is zero (the key
 * does not keep its sign).
 */
static bool
value_of_key(const TopkScanState *ts, uint64 key, Datum *value)
{
	double		v;

	if (ts->key_value_type == InvalidOid || key == 0 || key == PG_UINT64_MAX)
		return false;
	v = float8_of_key(key, ts->desc);
	if (v == 0.0)
		return false;
	*value = ts->key_value_type == FLOAT4OID ? Float4GetDatum((float4) v) : Float8GetDatum(v);
	return true;
}

/*
 * The row in the table slot into the tuplesort, with its computed ORDER BY
 * items; the first from *key where that gives it (NULL: not known).
 */
static void
put_candidate(TopkScanState *ts, const uint64 *key)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	TupleTableSlot *row = ts->reader.table_slot;
	TupleTableSlot *in = ts->sort_input;
	int			natts = RelationGetDescr(ts->css.ss.ss_currentRelation)->natts;

	if (in == NULL)
	{
		tuplesort_puttupleslot(ts->sort, row);
		return;
	}
	copy_columns(in, row, natts);
	econtext->ecxt_scantuple = row;
	ResetExprContext(econtext);
	for (int i = 0; i < ts->nsort; i++)
	{
		AttrNumber	at = ts->sort_attnos[i] - 1;

		if (ts->sort_exprs[i] == NULL)
			continue;
		if (i == 0 && key && value_of_key(ts, *key, &in->tts_values[at]))
			in->tts_isnull[at] = false;
		else
			in->tts_values[at] = ExecEvalExpr(ts->sort_exprs[i], econtext, &in->tts_isnull[at]);
	}
	ExecStoreVirtualTuple(in);
	tuplesort_puttupleslot(ts->sort, in);
}

/*
 * Read the rows of the given ordinals (ascending) again and put them into
 * the tuplesort: block by block, the n-th qualifying row of each.  Under
 * the same snapshot a page shows the same rows in the same order.
 */
static void
fetch_rows(TopkScanState *ts, uint64 *ordinals, size_t count)
{
	uint64		b = 0;
	size_t		i = 0;

	while (i < count)
	{
		uint64		ordinal;

		/* the block of ordinals[i]: the last one starting at or before it */
		while (b + 1 < ts->nblocks && ts->blocks[b + 1].first <= ordinals[i])
			b++;
		scan_row_reader_read_page(&ts->reader, ts->blocks[b].block);
		ordinal = ts->blocks[b].first;
		while (i < count &&
			   (b + 1 >= ts->nblocks || ordinals[i] < ts->blocks[b + 1].first))
		{
			if (!scan_row_reader_next_row(&ts->reader))
				elog(ERROR, "gputopk: row " UINT64_FORMAT " of block %u is no longer visible",
					 ordinals[i], ts->blocks[b].block);
			if (ordinal == ordinals[i])
			{
				ExecStoreBufferHeapTuple(&ts->reader.tuple, ts->reader.table_slot,
										 ts->reader.scan->rs_cbuf);
				put_candidate(ts, NULL);
				i++;
			}
			ordinal++;
		}
	}
}

/* A row read on the GPU, fetched: into the tuplesort. */
static void
put_fetched(void *arg)
{
	put_candidate((TopkScanState *) arg, NULL);
}

/* The refs of a top-k's answer, sorted. */
static uint64 *
sorted_refs(const TopkResult *result)
{
	uint64	   *refs = palloc_extended(sizeof(uint64) * Max(result->count, 1), MCXT_ALLOC_HUGE);

	for (size_t i = 0; i < result->count; i++)
		refs[i] = result->items[i].ref;
	qsort(refs, result->count, sizeof(uint64), key_compare_u64);
	return refs;
}

/*
 * A sink for the pages the GPU can read in place, where the scan allows it
 * (scan_page_sink_create) and the GPU computes the key.  With a page sink the
 * keys of the other pages' rows stay on the CPU (one GPU job per process);
 * without one they go to the GPU as before.
 */
static PageSink *
create_page_sink(TopkScanState *ts, uint64 k)
{
	GpuProgramSource program = {
		.key_type = ts->key_type,
		.desc = ts->desc,
		.nulls_first = ts->sort_nulls_first[0],
		.key_attno = ts->key_attno,
		.key_program = ts->key_program,
		.filter = ts->reader.filter,
	};

	if (ts->key_source == KEY_SOURCE_LOSSY_NUMERIC ||
		(ts->key_attno == 0 && ts->key_program == NULL))
		return NULL;
	return scan_page_sink_create(&ts->reader, &program, k, ts->mode);
}

/*
 * Scan the table, select the best keys on the backend (and those of the
 * pages read on the GPU), and put their rows into the tuplesort;
 * *selected is when the backend answered.
 */
static void
select_from_table(TopkScanState *ts, instr_time *selected)
{
	KeySink    *sink;
	PageSink   *pages;
	TopkResult	result;
	TopkResult	gpu_result = {0};
	PageSinkStats page_stats = {0};
	uint64		k;
	uint64		keyed;
	uint64	   *ordinals;

	ts->reader.parallel = ts->shared ?
		(ParallelTableScanDesc) ((char *) ts->shared + SHARED_SCAN_OFFSET) : NULL;
	scan_row_reader_begin(&ts->reader, ts->css.ss.ps.state->es_snapshot);
	/* a bound above the rows the table can hold is no bound */
	k = Min(ts->bound, (uint64) ts->reader.scan->rs_nblocks * MaxHeapTuplesPerPage);
	pages = create_page_sink(ts, k);
	sink = topk_key_sink_create(key_width(ts->key_type), k, ts->mode,
								(GpuTopkAlgorithm) gputopk_algorithm, pages == NULL);
	ts->nblocks = 0;
	ts->blocks_cap = 0;
	ts->blocks = NULL;
	keyed = scan_keys(ts, sink, pages, 0);
	while (!take_answers(ts, sink, pages, &result, &gpu_result, &page_stats))
		keyed = key_again_on_cpu(ts, &sink, &pages, k);
	ts->counters.counts[TOPK_COUNT_ROWS_KEYED] += keyed;
	ts->backend = sink->backend;
	if (pages != NULL)
	{
		ts->backend = BACKEND_GPU;
		ts->algorithm = scan_gpu_stats_plan_name(page_stats.plan);
		ts->counters.counts[TOPK_COUNT_ROWS_SCANNED] += page_stats.rows_read;
		ts->counters.counts[TOPK_COUNT_ROWS_KEYED] += page_stats.rows_keyed;
		ts->counters.counts[TOPK_COUNT_GPU_CACHED_PAGES] += page_stats.pages_cached;
		ts->counters.counts[TOPK_COUNT_GPU_UNPINNED_PAGES] += page_stats.pages_unpinned;
		ts->counters.counts[TOPK_COUNT_GPU_PAGES] += page_stats.pages_unpinned;
		ts->counters.counts[TOPK_COUNT_PAGES_READ] += page_stats.pages_unpinned;
		InstrCountFiltered1(ts, page_stats.rows_read - page_stats.rows_keyed);
	}
	INSTR_TIME_SET_CURRENT(*selected);
	ts->counters.counts[TOPK_COUNT_CANDIDATES] += result.count + gpu_result.count;
	scan_counters_count_process(&ts->counters, false);
	if (ts->backend == BACKEND_GPU)
		scan_counters_count_process(&ts->counters, true);
	/* the leader shows the counts of all processes */
	scan_counters_publish(&ts->counters);
	ordinals = sorted_refs(&result);
	fetch_rows(ts, ordinals, result.count);
	scan_row_reader_fetch_tids(&ts->reader, ts->css.ss.ps.state->es_snapshot, &gpu_result,
							   put_fetched, ts);
	scan_row_reader_end(&ts->reader);
	ts->blocks = NULL;
}

/* A candidate's row from the index: into the tuplesort if the WHERE clause holds. */
static bool
keep_index_row(void *arg, TupleTableSlot *slot, uint64 key)
{
	TopkScanState *ts = arg;
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;

	if (ts->reader.filter &&
		!scan_filter_program_passes(ts->reader.filter, ExecFetchSlotHeapTuple(slot, false, NULL),
									RelationGetDescr(ts->css.ss.ss_currentRelation)))
		return false;
	if (ts->reader.table_qual)
	{
		econtext->ecxt_scantuple = slot;
		ResetExprContext(econtext);
		if (!ExecQual(ts->reader.table_qual, econtext))
			return false;
	}
	put_candidate(ts, &key);
	return true;
}

/*
 * Whether ties on the first key matter whatever the rows' keys: to later
 * keys, WITH TIES, a rounded key, and a NULL key that is a value's.
 */
static bool
ties_matter(const TopkScanState *ts)
{
	return ts->nsort > 1 || ts->limit_with_ties ||
		ts->key_source == KEY_SOURCE_LOSSY_NUMERIC || !key_null_is_exact(ts->key_type);
}

/*
 * Select from the column index and put the surviving rows into the
 * tuplesort, round by round; *selected is when the rounds ended.
 */
static void
select_from_index(TopkScanState *ts, instr_time *selected)
{
	IndexSelectSpec spec = {
		.index = ts->index,
		.heap = ts->css.ss.ss_currentRelation,
		.snapshot = ts->css.ss.ps.state->es_snapshot,
		.key_type = ts->key_type,
		.desc = ts->desc,
		.nulls_first = ts->sort_nulls_first[0],
		.key_attno = ts->key_attno,
		.key_program = ts->key_program,
		.filter = ts->index_filter,
		.exact = ts->mode == TOPK_EXACT,
		.exact_if_no_errors = !ties_matter(ts),
		.candidates_per_row = ts->candidates_per_row,
		.shared = ts->shared ?
		(IndexSharedBlocks *) ((char *) ts->shared + SHARED_SCAN_OFFSET) : NULL,
	};
	IndexSelectStats stats = {0};
	uint64	   *counts = ts->counters.counts;

	if (ts->index_filter)
		scan_filter_program_bind(ts->index_filter, ts->css.ss.ps.ps_ExprContext);
	colindex_select_rows(&spec, ts->bound, keep_index_row, ts, ts->reader.table_slot, &stats);
	INSTR_TIME_SET_CURRENT(*selected);
	ts->backend = stats.on_gpu ? BACKEND_GPU : BACKEND_CPU;
	ts->algorithm = NULL;
	counts[TOPK_COUNT_INDEX_ROUNDS] += stats.rounds;
	counts[TOPK_COUNT_INDEX_NO_ERRORS] += stats.no_errors;
	counts[TOPK_COUNT_INDEX_ENTRIES] += stats.entries_scanned;
	counts[TOPK_COUNT_INDEX_PAGES_SKIPPED] += stats.pages_skipped;
	counts[TOPK_COUNT_INDEX_FETCHED] += stats.fetched;
	counts[TOPK_COUNT_INDEX_DEAD] += stats.dead;
	counts[TOPK_COUNT_INDEX_INVISIBLE] += stats.invisible;
	counts[TOPK_COUNT_INDEX_FILTERED] += stats.filtered;
	ts->index_stats.on_gpu = stats.on_gpu;
	ts->index_stats.pages_sent += stats.pages_sent;
	ts->index_stats.gpus |= stats.gpus;
	ts->index_stats.gpu_ms += stats.gpu_ms;
	ts->index_stats.fetch_ms += stats.fetch_ms;
	scan_counters_count_process(&ts->counters, false);
	/* the leader shows the counts of all processes */
	scan_counters_publish(&ts->counters);
}

/* One run: select, fetch and sort. */
static void
run_topk(TopkScanState *ts)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	uint64		count = eval_limit(ts->limit_count, econtext, PG_UINT64_MAX);
	uint64		offset = eval_limit(ts->limit_offset, econtext, 0);
	MemoryContext run_cxt;
	MemoryContext old;
	instr_time	start;
	instr_time	mid;
	instr_time	end;

	ts->bound = count > PG_UINT64_MAX - offset ? PG_UINT64_MAX : count + offset;
	/* and the key of rows whose program would raise: every one must be a candidate */
	ts->mode = (ties_matter(ts) ||
				(ts->key_program && scan_key_program_may_raise(ts->key_program))) ?
		TOPK_WITH_TIES : TOPK_EXACT;
	ts->sort_bounded = ts->bound != PG_UINT64_MAX && !ts->limit_with_ties &&
		ts->bound <= INT64_MAX;
	/* a bounded sort frees tuples, which its memory must allow (bump does not) */
	ts->sort = tuplesort_begin_heap(ts->sort_desc,
									ts->nsort, ts->sort_attnos, ts->sort_ops,
									ts->sort_collations, ts->sort_nulls_first,
									work_mem, NULL,
									ts->sort_bounded ? TUPLESORT_ALLOWBOUNDED : TUPLESORT_NONE);
	if (ts->sort_bounded)
		tuplesort_set_bound(ts->sort, (int64) ts->bound);
	ts->returned = 0;
	ts->done = true;
	if (ts->bound == 0)
	{
		tuplesort_performsort(ts->sort);
		return;
	}

	run_cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuTopK run",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(run_cxt);
	INSTR_TIME_SET_CURRENT(start);
	if (ts->reader.filter)
		scan_filter_program_bind(ts->reader.filter, econtext);
	if (ts->index)
		select_from_index(ts, &mid);
	else
		select_from_table(ts, &mid);
	MemoryContextSwitchTo(old);
	tuplesort_performsort(ts->sort);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, mid);
	INSTR_TIME_SUBTRACT(mid, start);
	ts->scan_ms += INSTR_TIME_GET_MILLISEC(mid);
	ts->fetch_ms += INSTR_TIME_GET_MILLISEC(end);
	/* frees the backend (the sink's reset callback), the block map and the ordinals */
	MemoryContextDelete(run_cxt);
}

static TupleTableSlot *
next_sorted(ScanState *ss)
{
	TopkScanState *ts = (TopkScanState *) ss;

	if (!ts->done)
		run_topk(ts);

	/*
	 * A bounded tuplesort must not be asked for more rows than its bound;
	 * a consumer without a limit (a Gather under a Sort) asks until the end.
	 */
	if ((ts->sort_bounded && ts->returned >= ts->bound) ||
		!tuplesort_gettupleslot(ts->sort, true, false, ts->sorted_slot, NULL))
		return ExecClearTuple(ss->ss_ScanTupleSlot);
	ts->returned++;
	if (ts->sort_input == NULL)
		ExecCopySlot(ss->ss_ScanTupleSlot, ts->sorted_slot);
	else
	{
		/* the table's columns of the sorted row */
		copy_columns(ss->ss_ScanTupleSlot, ts->sorted_slot,
					 ss->ss_ScanTupleSlot->tts_tupleDescriptor->natts);
		ExecStoreVirtualTuple(ss->ss_ScanTupleSlot);
	}
	/* a sorted row is a copy: of the system columns it keeps tableoid (the planner allows no other) */
	ss->ss_ScanTupleSlot->tts_tableOid = RelationGetRelid(ss->ss_currentRelation);
	return ss->ss_ScanTupleSlot;
}

static bool
recheck_sorted(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_topk_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_sorted, recheck_sorted);
}

static void
reset_run(TopkScanState *ts)
{
	if (ts->sort)
		tuplesort_end(ts->sort);
	ts->sort = NULL;
	ts->done = false;
}

static void
end_topk_scan(CustomScanState *node)
{
	TopkScanState *ts = (TopkScanState *) node;

	reset_run(ts);
	if (ts->index)
		index_close(ts->index, AccessShareLock);
}

static void
rescan_topk_scan(CustomScanState *node)
{
	reset_run((TopkScanState *) node);
}

static Size
estimate_shared(CustomScanState *node, ParallelContext *pcxt)
{
	if (((TopkScanState *) node)->index)
		return add_size(SHARED_SCAN_OFFSET, sizeof(IndexSharedBlocks));
	return add_size(SHARED_SCAN_OFFSET,
					table_parallelscan_estimate(node->ss.ss_currentRelation,
												node->ss.ps.state->es_snapshot));
}

/* The blocks handed out from the start, for the first run or (again) a rescan. */
static void
start_shared_scan(TopkScanState *ts, void *coordinate, bool again)
{
	void	   *scan = (char *) coordinate + SHARED_SCAN_OFFSET;

	if (ts->index)
		colindex_select_shared_init((IndexSharedBlocks *) scan);
	else if (!again)
		table_parallelscan_initialize(ts->css.ss.ss_currentRelation,
									  (ParallelTableScanDesc) scan,
									  ts->css.ss.ps.state->es_snapshot);
	else
		table_parallelscan_reinitialize(ts->css.ss.ss_currentRelation,
										(ParallelTableScanDesc) scan);
}

static void
initialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	TopkScanState *ts = (TopkScanState *) node;

	start_shared_scan(ts, coordinate, false);
	ts->shared = (TopkShared *) coordinate;
	scan_counters_init_shared(&ts->counters, &ts->shared->counters);
}

/* Before a rescan's workers start: the last run's counts are complete. */
static void
reinitialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	TopkScanState *ts = (TopkScanState *) node;

	scan_counters_collect(&ts->counters);
	start_shared_scan(ts, coordinate, true);
}

static void
attach_shared(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	TopkScanState *ts = (TopkScanState *) node;

	ts->shared = (TopkShared *) coordinate;
	scan_counters_attach(&ts->counters, &ts->shared->counters);
}

/* The workers' counts, before the parallel scan's memory goes. */
static void
shutdown_topk_scan(CustomScanState *node)
{
	TopkScanState *ts = (TopkScanState *) node;

	if (ts->shared == NULL || IsParallelWorker())
		return;
	scan_counters_detach(&ts->counters);
	ts->shared = NULL;
}
