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
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_gpu_stats.h"
#include "scan_key_program.h"
#include "scan_page_sink.h"
#include "settings.h"
#include "topk_exec.h"
#include "topk_key_sink.h"
#include "topk_scan.h"
#include "topk_state.h"

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
	else if (ts->key_source == KEY_SOURCE_VECTOR_BOUND)
		ts->vector_key = scan_vector_key_create(key, cscan->scan.scanrelid, ts->desc,
											   &ts->css.ss.ps);
	if (ts->key_attno == 0 && ts->key_program == NULL && ts->vector_key == NULL)
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

/*
 * Over a column index, a parallel scan's own part of the shared memory
 * hands out the index's blocks (colindex_select.h): a ScanSharedCallback.
 */
static void
share_index_blocks(CustomScanState *node, ScanSharedEvent event, void *own,
				   ParallelContext *pcxt)
{
	TopkScanState *ts = (TopkScanState *) node;

	if (ts->index == NULL)
		return;
	ts->index_shared = event == SCAN_SHARED_DETACH ? NULL : own;
	if (event == SCAN_SHARED_INITIALIZE || event == SCAN_SHARED_REINITIALIZE)
		colindex_select_shared_init(ts->index_shared);
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
	bool		over_index = list_nth(private, TOPK_FIELD_INDEX) != NIL;

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
	/* over a column index, a parallel scan hands out its blocks */
	scan_driver_init(&ts->scan, &node->ss, share_index_blocks,
					 over_index ? sizeof(IndexSharedBlocks) : 0, !over_index);

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
		ts->scan.reader.filter = scan_filter_program_compile(cscan->scan.plan.qual, cscan->scan.scanrelid,
														&node->ss.ps, &interpreted);
		ts->scan.reader.table_qual = ExecInitQual(interpreted, &node->ss.ps);
		init_sort_exprs(ts, cscan, estate);
		if (over_index)
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

	if (ts->key_program || ts->vector_key)
	{
		/* the page's rows keyed at once */
		HeapTupleData tuples[MaxHeapTuplesPerPage];
		uint64		keys[MaxHeapTuplesPerPage];
		int			n = 0;

#ifdef __GNUC__
		/* the page's rows start coming into the CPU's cache at once (its second level) */
		for (int at = ((PageHeader) ts->scan.reader.page)->pd_upper; at < BLCKSZ; at += 64)
			__builtin_prefetch((const char *) ts->scan.reader.page + at, 0, 2);
#endif
		while (scan_row_reader_next_row(&ts->scan.reader))
			tuples[n++] = ts->scan.reader.tuple;
		if (ts->key_program)
			scan_key_program_keys(ts->key_program, tuples, n, desc, ts->desc, null_key, keys);
		else
			scan_vector_key_keys(ts->vector_key, tuples, n, desc, null_key, keys);
		for (int i = 0; i < n; i++)
			topk_key_sink_add(sink, keys[i]);
		ordinal += n;
	}
	else
		while (scan_row_reader_next_row(&ts->scan.reader))
		{
			bool		isnull;
			Datum		d;

			d = attno > 0 ? scan_row_reader_column(&ts->scan.reader, attno, desc, &isnull) :
				scan_row_reader_eval(&ts->scan.reader, ts->key_expr, &isnull);
			topk_key_sink_add(sink, key_of(ts, d, isnull));
			ordinal++;
		}
	if (ordinal > page_first)
		note_block(ts, block, page_first);
	InstrCountFiltered1(ts, ts->scan.reader.scan->rs_ntuples - (ordinal - page_first));
	return ordinal;
}

/* a run over the table: the key sink of the rows read on the CPU, the answers */
typedef struct TableRun
{
	TopkScanState *ts;
	uint64		k;
	KeySink    *sink;
	uint64		keyed;			/* the rows keyed, the next one's ordinal */
	TopkResult	result;			/* the key sink's answer */
	TopkResult	gpu_result;		/* the page sink's */
} TableRun;

/* A page read on the CPU: its qualifying rows keyed (a ScanDriverRoutine's read_page). */
static void
key_page(void *arg, BlockNumber block)
{
	TableRun   *run = arg;

	run->keyed = key_rows(run->ts, run->sink, block, run->keyed);
}

static bool
key_job_failed(void *arg)
{
	return topk_key_sink_failed(((TableRun *) arg)->sink);
}

/*
 * The answers of the sinks, and their jobs given back; false where the GPU
 * failed a job (under auto), or left too few visible rows.
 */
static bool
take_answers(void *arg, PageSink *pages, PageSinkStats *stats)
{
	TableRun   *run = arg;
	ScanCounters *counters = &run->ts->scan.counters;

	topk_key_sink_result(run->sink, &run->result, &counters->gpu, &run->ts->algorithm);
	if (pages != NULL)
		scan_page_sink_result(pages, &run->gpu_result, &counters->gpu, stats);
	return !topk_key_sink_failed(run->sink) && (pages == NULL || !scan_page_sink_failed(pages));
}

/*
 * The GPU failed a job of this run (under auto): the rows are keyed again
 * from the first ordinal, into a new sink on the CPU.
 */
static void
key_again_on_cpu(void *arg)
{
	TableRun   *run = arg;
	TopkScanState *ts = run->ts;

	run->sink = topk_key_sink_create(key_width(ts->key_type), run->k, ts->mode,
									 (GpuTopkAlgorithm) gputopk_algorithm, false);
	run->keyed = 0;
	memset(&run->gpu_result, 0, sizeof(TopkResult));
	ts->nblocks = 0;
}

static const ScanDriverRoutine topk_table_routine = {
	.read_page = key_page,
	.rows_job_failed = key_job_failed,
	.finish = take_answers,
	.start_over = key_again_on_cpu,
};

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

/* A vector key's candidate's key of its true value, kept in the run's memory. */
static void
keep_true_key(TopkScanState *ts, uint64 key)
{
	if (ts->ntrue_keys == ts->true_keys_room)
	{
		ts->true_keys_room = Max(2 * ts->true_keys_room, 64);
		ts->true_keys = ts->true_keys == NULL ?
			palloc_extended(sizeof(uint64) * ts->true_keys_room, MCXT_ALLOC_HUGE) :
			repalloc_huge(ts->true_keys, sizeof(uint64) * ts->true_keys_room);
	}
	ts->true_keys[ts->ntrue_keys++] = key;
}

/*
 * The row in the table slot into the tuplesort, with its computed ORDER BY
 * items; the first from *key where that gives it (NULL: not known).
 */
static void
put_candidate(TopkScanState *ts, const uint64 *key)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	TupleTableSlot *row = ts->scan.reader.table_slot;
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
			in->tts_values[at] = ExecEvalExprSwitchContext(ts->sort_exprs[i], econtext,
													   &in->tts_isnull[at]);
		if (i == 0 && ts->vector_key)
			keep_true_key(ts, key_of(ts, in->tts_values[at], in->tts_isnull[at]));
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
		scan_row_reader_read_page(&ts->scan.reader, ts->blocks[b].block);
		ordinal = ts->blocks[b].first;
		while (i < count &&
			   (b + 1 >= ts->nblocks || ordinals[i] < ts->blocks[b + 1].first))
		{
			if (!scan_row_reader_next_row(&ts->scan.reader))
				elog(ERROR, "gputopk: row " UINT64_FORMAT " of block %u is no longer visible",
					 ordinals[i], ts->blocks[b].block);
			if (ordinal == ordinals[i])
			{
				ExecStoreBufferHeapTuple(&ts->scan.reader.tuple, ts->scan.reader.table_slot,
										 ts->scan.reader.scan->rs_cbuf);
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
 * (scan_page_sink_create) and the GPU computes the key.  With a page sink
 * every page goes to the GPU (one GPU job per process), and the key sink,
 * on the CPU, has rows only where the GPU fails the job; without one the
 * keys go to the GPU as the rows are read.
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
		.vector_key = ts->vector_key,
		.filter = ts->scan.reader.filter,
	};

	if (ts->key_source == KEY_SOURCE_LOSSY_NUMERIC ||
		(ts->key_attno == 0 && ts->key_program == NULL && ts->vector_key == NULL) ||
		(ts->vector_key &&
		 !scan_vector_key_gpu_column(ts->vector_key,
									 RelationGetDescr(ts->css.ss.ss_currentRelation))))
		return NULL;
	return scan_page_sink_create(&ts->scan.reader, &program, k, ts->mode);
}

/* The tuplesort of a run's candidates, for the query's lifetime. */
static void
begin_sort(TopkScanState *ts)
{
	MemoryContext old = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);

	/* a bounded sort frees tuples, which its memory must allow (bump does not) */
	ts->sort = tuplesort_begin_heap(ts->sort_desc,
									ts->nsort, ts->sort_attnos, ts->sort_ops,
									ts->sort_collations, ts->sort_nulls_first,
									work_mem, NULL,
									ts->sort_bounded ? TUPLESORT_ALLOWBOUNDED : TUPLESORT_NONE);
	if (ts->sort_bounded)
		tuplesort_set_bound(ts->sort, (int64) ts->bound);
	MemoryContextSwitchTo(old);
}

/* The candidates of a run's answers into the tuplesort. */
static void
fetch_candidates(TopkScanState *ts, TableRun *run)
{
	uint64	   *ordinals = sorted_refs(&run->result);

	/* a reread's candidates are all new */
	ts->ntrue_keys = 0;
	fetch_rows(ts, ordinals, run->result.count);
	scan_row_reader_fetch_tids(&ts->scan.reader, ts->css.ss.ps.state->es_snapshot,
							   &run->gpu_result, put_fetched, ts);
}

/*
 * How many candidates a vector key's run takes first: the bound and a
 * margin for the rows whose bounds reach past the k-th row's value (a
 * bound is off the value by about dimensions * 2^-24 of it, relatively,
 * so few rows' do unless many tie).
 */
static uint64
vector_candidates(uint64 bound, uint64 most)
{
	return bound >= most ? most : Min(bound + Max(bound / 4, 16), most);
}

/*
 * Whether the bound-th best of the candidates' true values' keys is at
 * least key.
 */
static bool
true_keys_reach(TopkScanState *ts, uint64 key)
{
	if (ts->ntrue_keys < ts->bound)
		return false;
	qsort(ts->true_keys, ts->ntrue_keys, sizeof(uint64), key_compare_u64);
	return key <= ts->true_keys[ts->ntrue_keys - ts->bound];
}

/*
 * Whether a vector key's candidates hold every row of the answer: the k-th
 * best of their true values' keys is no worse than the last candidate's
 * key, a bound.  Every row not taken has a bound below that key (the ties
 * at it are taken), and its true value is behind its bound, so behind the
 * k-th best value of the whole table, which is no worse than the
 * candidates' k-th.  Fewer candidates than asked for are all the rows.
 */
static bool
candidates_hold_answer(TopkScanState *ts, const TableRun *run)
{
	/* the GPU's, where it read the pages (the CPU's rows only after it failed) */
	const TopkResult *result = run->gpu_result.count > 0 ? &run->gpu_result : &run->result;

	if (result->count < run->k)
		return true;
	/*
	 * the answer's items come in descending key order; where some of the
	 * GPU's rows were not visible after all, fewer than the bound have true
	 * keys, and the table is read again
	 */
	return true_keys_reach(ts, result->items[result->count - 1].key);
}

/*
 * Whether a vector key's rows kept from the index hold the answer: every
 * entry not yet fetched has a bound below threshold (colindex_select.c).
 */
static bool
index_answer_held(void *arg, uint64 threshold)
{
	return true_keys_reach((TopkScanState *) arg, threshold);
}

/*
 * A vector key's candidates fell short: the sort starts again, and every
 * block this process took is read again on the CPU for k candidates.
 */
static void
read_again(TopkScanState *ts, TableRun *run, uint64 k)
{
	tuplesort_end(ts->sort);
	begin_sort(ts);
	run->k = k;
	scan_driver_read_again(&ts->scan, ts->scan.reader.ntaken, &topk_table_routine, run);
	take_answers(run, NULL, NULL);
	ts->scan.counters.counts[TOPK_COUNT_BOUND_REREADS]++;
	ts->scan.counters.counts[TOPK_COUNT_CANDIDATES] += run->result.count;
}

/*
 * Scan the table, select the best keys on the backend (and those of the
 * pages read on the GPU), and put their rows into the tuplesort;
 * *selected is when the backend answered.
 */
static void
select_from_table(TopkScanState *ts, instr_time *selected)
{
	TableRun	run = {.ts = ts};
	PageSink   *pages;
	uint64	   *counts = ts->scan.counters.counts;
	/* a bound above the rows the table can hold is no bound */
	uint64		most;

	scan_driver_begin(&ts->scan);
	most = (uint64) ts->scan.reader.scan->rs_nblocks * MaxHeapTuplesPerPage;
	run.k = ts->vector_key ? vector_candidates(ts->bound, most) : Min(ts->bound, most);
	if (ts->vector_key)
		scan_row_reader_remember_blocks(&ts->scan.reader);
	pages = create_page_sink(ts, run.k);
	run.sink = topk_key_sink_create(key_width(ts->key_type), run.k, ts->mode,
									(GpuTopkAlgorithm) gputopk_algorithm, pages == NULL);
	if (run.sink->backend == BACKEND_GPU)
		scan_driver_rows_to_gpu(&ts->scan);
	ts->nblocks = 0;
	ts->blocks_cap = 0;
	ts->blocks = NULL;
	if (scan_driver_run(&ts->scan, pages, &topk_table_routine, &run))
	{
		PageSinkStats *stats = &ts->scan.page_stats;

		ts->backend = BACKEND_GPU;
		ts->algorithm = scan_gpu_stats_plan_name(stats->plan);
		counts[TOPK_COUNT_ROWS_KEYED] += stats->rows_keyed;
		InstrCountFiltered1(ts, stats->rows_read - stats->rows_keyed);
	}
	else
		ts->backend = run.sink->backend;
	counts[TOPK_COUNT_ROWS_KEYED] += run.keyed;
	INSTR_TIME_SET_CURRENT(*selected);
	counts[TOPK_COUNT_CANDIDATES] += run.result.count + run.gpu_result.count;
	scan_counters_count_process(&ts->scan.counters, false);
	if (ts->backend == BACKEND_GPU)
		scan_counters_count_process(&ts->scan.counters, true);
	fetch_candidates(ts, &run);
	while (ts->vector_key && !candidates_hold_answer(ts, &run))
	{
		read_again(ts, &run, run.k > most / 4 ? most : run.k * 4);
		fetch_candidates(ts, &run);
	}
	/* the leader shows the counts of all processes */
	scan_counters_publish(&ts->scan.counters);
	scan_driver_end(&ts->scan);
	ts->blocks = NULL;
}

/* A candidate's row from the index: into the tuplesort if the WHERE clause holds. */
static bool
keep_index_row(void *arg, TupleTableSlot *slot, uint64 key)
{
	TopkScanState *ts = arg;
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;

	if (ts->scan.reader.filter &&
		!scan_filter_program_passes(ts->scan.reader.filter, ExecFetchSlotHeapTuple(slot, false, NULL),
									RelationGetDescr(ts->css.ss.ss_currentRelation)))
		return false;
	if (ts->scan.reader.table_qual)
	{
		econtext->ecxt_scantuple = slot;
		ResetExprContext(econtext);
		if (!ExecQual(ts->scan.reader.table_qual, econtext))
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
		.vector_key = ts->vector_key,
		.filter = ts->index_filter,
		.exact = ts->mode == TOPK_EXACT,
		.exact_if_no_errors = !ties_matter(ts) && ts->vector_key == NULL,
		.candidates_per_row = ts->candidates_per_row,
		.shared = ts->index_shared,
		.answer_held = ts->vector_key ? index_answer_held : NULL,
	};
	IndexSelectStats stats = {0};
	uint64	   *counts = ts->scan.counters.counts;

	if (ts->scan.reader.filter)
		scan_filter_program_bind(ts->scan.reader.filter, ts->css.ss.ps.ps_ExprContext);
	if (ts->index_filter)
		scan_filter_program_bind(ts->index_filter, ts->css.ss.ps.ps_ExprContext);
	colindex_select_rows(&spec, ts->bound, keep_index_row, ts, ts->scan.reader.table_slot, &stats);
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
	scan_counters_count_process(&ts->scan.counters, false);
	/* the leader shows the counts of all processes */
	scan_counters_publish(&ts->scan.counters);
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
	/*
	 * and the key of rows whose program would raise: every one must be a
	 * candidate; a vector key's bounds: every row at the last candidate's
	 */
	ts->mode = (ties_matter(ts) || ts->vector_key ||
				(ts->key_program && scan_key_program_may_raise(ts->key_program))) ?
		TOPK_WITH_TIES : TOPK_EXACT;
	ts->sort_bounded = ts->bound != PG_UINT64_MAX && !ts->limit_with_ties &&
		ts->bound <= INT64_MAX;
	begin_sort(ts);
	ts->returned = 0;
	ts->done = true;
	if (ts->bound == 0)
	{
		tuplesort_performsort(ts->sort);
		return;
	}

	if (ts->vector_key)
		scan_vector_key_bind(ts->vector_key, econtext);
	run_cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuTopK run",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(run_cxt);
	/* a vector key's candidates' true keys, in the run's memory */
	ts->true_keys = NULL;
	ts->ntrue_keys = ts->true_keys_room = 0;
	INSTR_TIME_SET_CURRENT(start);
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

static TupleTableSlot *
exec_topk_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_sorted, scan_driver_no_recheck);
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

SCAN_DRIVER_METHODS(topk_scan_methods, TOPK_SCAN_NAME, TopkScanState,
					begin_topk_scan, exec_topk_scan, end_topk_scan,
					rescan_topk_scan, topk_explain_scan);
