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
 * node above applies LIMIT, OFFSET and WITH TIES.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"

#include "cpu_topk.h"
#include "topk_scan.h"

/* keys handed to the backend at a time */
#define TOPK_BATCH 4096

/* where a block's qualifying rows start among the scan's ordinals */
typedef struct BlockStart
{
	BlockNumber block;
	uint64		first;
} BlockStart;

/* the backend's state, freed with the memory context that owns this */
typedef struct BackendHandle
{
	CpuTopk    *cpu;
	MemoryContextCallback callback;
} BackendHandle;

typedef struct TopkScanState
{
	CustomScanState css;

	/* from the plan */
	KeyType		key_type;
	bool		desc;
	bool		limit_with_ties;
	int			nsort;			/* the ORDER BY; its first item is the key */
	AttrNumber *sort_attnos;
	Oid		   *sort_ops;
	Oid		   *sort_collations;
	bool	   *sort_nulls_first;
	ExprState  *limit_count;
	ExprState  *limit_offset;
	TupleTableSlot *table_slot; /* the table's rows, while scanning */
	ExprState  *table_qual;		/* the WHERE clause over table_slot */

	/* per run */
	bool		done;			/* the sorted rows are ready */
	uint64		bound;			/* k + m, or PG_UINT64_MAX for no limit */
	TopkMode	mode;
	Tuplesortstate *sort;
	TupleTableSlot *sorted_slot;
	BlockStart *blocks;
	uint64		nblocks;
	uint64		blocks_cap;

	/* for EXPLAIN ANALYZE, summed over runs */
	uint64		rows_scanned;
	uint64		rows_keyed;
	uint64		candidates;
	double		scan_ms;
	double		fetch_ms;
} TopkScanState;

static void begin_topk_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_topk_scan(CustomScanState *node);
static void end_topk_scan(CustomScanState *node);
static void rescan_topk_scan(CustomScanState *node);
static void explain_topk_scan(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods topk_exec_methods = {
	.CustomName = TOPK_SCAN_NAME,
	.BeginCustomScan = begin_topk_scan,
	.ExecCustomScan = exec_topk_scan,
	.EndCustomScan = end_topk_scan,
	.ReScanCustomScan = rescan_topk_scan,
	.ExplainCustomScan = explain_topk_scan,
};

Node *
topk_create_scan_state(CustomScan *cscan)
{
	TopkScanState *ts = (TopkScanState *) newNode(sizeof(TopkScanState),
												  T_CustomScanState);

	ts->css.methods = &topk_exec_methods;
	return (Node *) ts;
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
	ts->table_slot = table_slot_create(node->ss.ss_currentRelation, &estate->es_tupleTable);

	/*
	 * The node's own quals are compiled for its (virtual) scan slot; the
	 * scan needs them for the table's slots, compiled for any slot type.
	 */
	{
		bool		fixed = node->ss.ps.scanopsfixed;

		node->ss.ps.scanopsfixed = false;
		ts->table_qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
		node->ss.ps.scanopsfixed = fixed;
	}
	ts->sorted_slot = ExecAllocTableSlot(&estate->es_tupleTable,
										 RelationGetDescr(node->ss.ss_currentRelation),
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
	switch (ts->key_type)
	{
		case KEY_INT2:
			return key_from_int32(DatumGetInt16(d), ts->desc);
		case KEY_INT4:
			return key_from_int32(DatumGetInt32(d), ts->desc);
		case KEY_DATE:
			return key_from_int32(DatumGetDateADT(d), ts->desc);
		case KEY_INT8:
			return key_from_int64(DatumGetInt64(d), ts->desc);
		case KEY_TIMESTAMP:
		case KEY_TIMESTAMPTZ:
			return key_from_int64(DatumGetTimestamp(d), ts->desc);
		case KEY_FLOAT4:
			return key_from_float4(DatumGetFloat4(d), ts->desc);
		case KEY_FLOAT8:
			return key_from_float8(DatumGetFloat8(d), ts->desc);
	}
	pg_unreachable();
}

static void
release_backend(void *arg)
{
	BackendHandle *h = (BackendHandle *) arg;

	if (h->cpu)
		cpu_topk_destroy(h->cpu);
	h->cpu = NULL;
}

static void
backend_out_of_memory(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("%s", detail)));
}

/* A backend for one run, freed when the current memory context goes. */
static BackendHandle *
create_backend(int width, uint64 k, TopkMode mode)
{
	BackendHandle *h = palloc0(sizeof(BackendHandle));

	h->cpu = cpu_topk_create(width, k, mode);
	if (h->cpu == NULL)
		backend_out_of_memory("The top-k state could not be allocated.");
	h->callback.func = release_backend;
	h->callback.arg = h;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &h->callback);
	return h;
}

static void
push_keys(BackendHandle *h, const void *keys, size_t n)
{
	if (n > 0 && !cpu_topk_push(h->cpu, keys, n))
		backend_out_of_memory("The top-k candidates did not fit in memory.");
}

static void
note_block(TopkScanState *ts, BlockNumber block, uint64 first)
{
	if (ts->nblocks > 0 && ts->blocks[ts->nblocks - 1].block == block)
		return;
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

/* Scan the table, keying every qualifying row; returns their count. */
static uint64
scan_keys(TopkScanState *ts, BackendHandle *h)
{
	ScanState  *ss = &ts->css.ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	TupleTableSlot *slot = ts->table_slot;
	EState	   *estate = ss->ps.state;
	int			width = key_width(ts->key_type);
	union
	{
		uint32		k4[TOPK_BATCH];
		uint64		k8[TOPK_BATCH];
	}		   *batch = palloc(sizeof(*batch));
	int			nbatch = 0;
	uint64		ordinal = 0;
	TableScanDesc scan;

	/* no synchronised start: blocks must come in order for note_block */
	scan = table_beginscan_strat(ss->ss_currentRelation, estate->es_snapshot,
								 0, NULL, true, false);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		uint64		key;

		CHECK_FOR_INTERRUPTS();
		ts->rows_scanned++;
		econtext->ecxt_scantuple = slot;
		ResetExprContext(econtext);
		if (!ExecQual(ts->table_qual, econtext))
		{
			InstrCountFiltered1(ts, 1);
			continue;
		}
		d = slot_getattr(slot, ts->sort_attnos[0], &isnull);
		key = key_of(ts, d, isnull);
		note_block(ts, ItemPointerGetBlockNumber(&slot->tts_tid), ordinal);
		if (width == 4)
			batch->k4[nbatch++] = (uint32) key;
		else
			batch->k8[nbatch++] = key;
		ordinal++;
		if (nbatch == TOPK_BATCH)
		{
			push_keys(h, batch, nbatch);
			nbatch = 0;
		}
	}
	push_keys(h, batch, nbatch);
	table_endscan(scan);
	pfree(batch);
	return ordinal;
}

static int
compare_ordinals(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * Read the rows of the given ordinals (ascending) again and put them into
 * the tuplesort: block by block, the n-th qualifying row of each.
 */
static void
fetch_rows(TopkScanState *ts, uint64 *ordinals, size_t count)
{
	ScanState  *ss = &ts->css.ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	TupleTableSlot *slot = ts->table_slot;
	TableScanDesc scan = NULL;
	uint64		b = 0;
	size_t		i = 0;

	while (i < count)
	{
		ItemPointerData lo;
		ItemPointerData hi;
		uint64		ordinal;

		/* the block of ordinals[i]: the last one starting at or before it */
		while (b + 1 < ts->nblocks && ts->blocks[b + 1].first <= ordinals[i])
			b++;
		ItemPointerSet(&lo, ts->blocks[b].block, FirstOffsetNumber);
		ItemPointerSet(&hi, ts->blocks[b].block, MaxOffsetNumber);
		if (scan == NULL)
			scan = table_beginscan_tidrange(ss->ss_currentRelation,
											ss->ps.state->es_snapshot, &lo, &hi);
		else
			table_rescan_tidrange(scan, &lo, &hi);
		ordinal = ts->blocks[b].first;
		while (i < count &&
			   (b + 1 >= ts->nblocks || ordinals[i] < ts->blocks[b + 1].first))
		{
			if (!table_scan_getnextslot_tidrange(scan, ForwardScanDirection, slot))
				elog(ERROR, "gputopk: row " UINT64_FORMAT " of block %u is no longer visible",
					 ordinals[i], ts->blocks[b].block);
			econtext->ecxt_scantuple = slot;
			ResetExprContext(econtext);
			if (!ExecQual(ts->table_qual, econtext))
				continue;
			if (ordinal == ordinals[i])
			{
				tuplesort_puttupleslot(ts->sort, slot);
				i++;
			}
			ordinal++;
		}
		CHECK_FOR_INTERRUPTS();
	}
	if (scan)
		table_endscan(scan);
}

/* One run: scan, select, fetch and sort. */
static void
run_topk(TopkScanState *ts)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	uint64		count = eval_limit(ts->limit_count, econtext, PG_UINT64_MAX);
	uint64		offset = eval_limit(ts->limit_offset, econtext, 0);
	MemoryContext run_cxt;
	MemoryContext old;
	BackendHandle *h;
	TopkResult	result;
	uint64	   *ordinals;
	instr_time	start;
	instr_time	mid;
	instr_time	end;

	ts->bound = count > PG_UINT64_MAX - offset ? PG_UINT64_MAX : count + offset;
	/* ties on the first key matter to later keys, WITH TIES, and a NULL key that is a value's */
	ts->mode = (ts->nsort > 1 || ts->limit_with_ties ||
				!key_null_is_exact(ts->key_type)) ? TOPK_WITH_TIES : TOPK_EXACT;
	ts->sort = tuplesort_begin_heap(RelationGetDescr(ts->css.ss.ss_currentRelation),
									ts->nsort, ts->sort_attnos, ts->sort_ops,
									ts->sort_collations, ts->sort_nulls_first,
									work_mem, NULL, TUPLESORT_NONE);
	if (ts->bound != PG_UINT64_MAX && !ts->limit_with_ties && ts->bound <= INT64_MAX)
		tuplesort_set_bound(ts->sort, (int64) ts->bound);
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
	h = create_backend(key_width(ts->key_type), ts->bound, ts->mode);
	ts->nblocks = 0;
	ts->blocks_cap = 0;
	ts->blocks = NULL;
	ts->rows_keyed += scan_keys(ts, h);
	if (!cpu_topk_result(h->cpu, &result))
		backend_out_of_memory("The top-k answer did not fit in memory.");
	INSTR_TIME_SET_CURRENT(mid);
	ts->candidates += result.count;
	ordinals = palloc_extended(sizeof(uint64) * Max(result.count, 1), MCXT_ALLOC_HUGE);
	for (size_t i = 0; i < result.count; i++)
		ordinals[i] = result.items[i].ref;
	qsort(ordinals, result.count, sizeof(uint64), compare_ordinals);
	MemoryContextSwitchTo(old);
	fetch_rows(ts, ordinals, result.count);
	tuplesort_performsort(ts->sort);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, mid);
	INSTR_TIME_SUBTRACT(mid, start);
	ts->scan_ms += INSTR_TIME_GET_MILLISEC(mid);
	ts->fetch_ms += INSTR_TIME_GET_MILLISEC(end);
	/* frees the backend (its reset callback), the block map and the ordinals */
	MemoryContextDelete(run_cxt);
	ts->blocks = NULL;
}

static TupleTableSlot *
next_sorted(ScanState *ss)
{
	TopkScanState *ts = (TopkScanState *) ss;

	if (!ts->done)
		run_topk(ts);
	if (!tuplesort_gettupleslot(ts->sort, true, false, ts->sorted_slot, NULL))
		return ExecClearTuple(ss->ss_ScanTupleSlot);
	return ExecCopySlot(ss->ss_ScanTupleSlot, ts->sorted_slot);
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
	reset_run((TopkScanState *) node);
}

static void
rescan_topk_scan(CustomScanState *node)
{
	reset_run((TopkScanState *) node);
}

static void
explain_topk_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TopkScanState *ts = (TopkScanState *) node;
	Oid			relid = RelationGetRelid(node->ss.ss_currentRelation);
	StringInfoData keys;

	initStringInfo(&keys);
	for (int i = 0; i < ts->nsort; i++)
	{
		AttrNumber	attno = ts->sort_attnos[i];
		Oid			opfamily;
		Oid			opcintype;
		int16		strategy;
		bool		desc;
		bool		nulls_first = ts->sort_nulls_first[i];

		get_ordering_op_properties(ts->sort_ops[i], &opfamily, &opcintype, &strategy);
		desc = strategy == BTGreaterStrategyNumber;

		appendStringInfo(&keys, "%s%s%s%s", i > 0 ? ", " : "",
						 quote_identifier(get_attname(relid, attno, false)),
						 desc ? " DESC" : "",
						 nulls_first != desc ? (nulls_first ? " NULLS FIRST" : " NULLS LAST") : "");
	}
	ExplainPropertyText("Top-k Key", keys.data, es);
	ExplainPropertyText("Backend", "cpu", es);
	if (es->analyze && ts->done)
	{
		if (ts->bound == PG_UINT64_MAX)
			ExplainPropertyText("Bound", "none", es);
		else
			ExplainPropertyUInteger("Bound", NULL, ts->bound, es);
		ExplainPropertyText("Mode", ts->mode == TOPK_EXACT ? "exact" : "with ties", es);
		ExplainPropertyUInteger("Rows Scanned", NULL, ts->rows_scanned, es);
		ExplainPropertyUInteger("Rows Keyed", NULL, ts->rows_keyed, es);
		ExplainPropertyUInteger("Candidates", NULL, ts->candidates, es);
		if (es->timing)
		{
			ExplainPropertyFloat("Scan and Select Time", "ms", ts->scan_ms, 3, es);
			ExplainPropertyFloat("Fetch and Sort Time", "ms", ts->fetch_ms, 3, es);
		}
	}
}
