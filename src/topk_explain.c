/*-------------------------------------------------------------------------
 *
 * topk_explain.c
 *	  EXPLAIN of a GpuTopK scan: its ORDER BY, column index, filters and
 *	  ranking key, and with ANALYZE the backend, the bound, the data path
 *	  and what the scan or the column index's rounds counted and timed.
 *
 * The counts are the leader's, summed over all processes of a parallel
 * scan (scan_counters.h); the times are the leader's own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "device.h"
#include "scan_gpu_stats.h"
#include "topk_state.h"

/*
 * What EXPLAIN says of a compiled ranking key: whether ties are kept for
 * rows that may raise an error, and, after a run over a column index,
 * whether its page summaries showed that none does.
 */
static const char *
compiled_key_text(const TopkScanState *ts, ExplainState *es)
{
	if (!(ts->key_program && scan_key_program_may_raise(ts->key_program)))
		return "compiled";
	if (es->analyze && ts->done && ts->scan.counters.counts[TOPK_COUNT_INDEX_NO_ERRORS] > 0)
		return "compiled, ties not kept (the index's page summaries show no row raises an error)";
	return "compiled, ties kept (a row may raise an error)";
}

/* Without a run: k + m where LIMIT and OFFSET are constants. */
static void
explain_planned_bound(CustomScan *cscan, ExplainState *es)
{
	Node	   *count = linitial(cscan->custom_exprs);
	Node	   *offset = lsecond(cscan->custom_exprs);
	int64		bound;

	if (!IsA(count, Const) || (offset != NULL && !IsA(offset, Const)))
	{
		ExplainPropertyText("Bound", "at run time", es);
		return;
	}
	/* the planner offers no path for LIMIT NULL */
	bound = DatumGetInt64(((Const *) count)->constvalue);
	if (offset != NULL && !((Const *) offset)->constisnull)
		bound += DatumGetInt64(((Const *) offset)->constvalue);
	ExplainPropertyInteger("Bound", NULL, bound, es);
}

/*
 * How the rows reached the backend: read on the CPU by this many processes
 * (in a parallel scan, how many of them handed their keys to the GPU), or
 * pages read on the GPU in place; at what rate of table pages per second
 * of the scan.
 */
static void
explain_data_path(TopkScanState *ts, ExplainState *es)
{
	ExplainPropertyText("Data Path", ts->scan.counters.counts[SCAN_COUNT_GPU_PAGES] > 0 ?
						"heap pages read on the GPU in place" :
						"heap rows read on the CPU, keys to the backend", es);
	ExplainPropertyInteger("Scan Processes", NULL, ts->scan.counters.processes, es);
	if (ts->css.ss.ps.plan->parallel_aware)
		ExplainPropertyInteger("GPU Processes", NULL, ts->scan.counters.gpu_processes, es);
	scan_driver_explain_pages(ts->scan.counters.counts, ts->scan_ms, es);
}

/* What the rounds over a column index did. */
static void
explain_index_rounds(TopkScanState *ts, ExplainState *es)
{
	IndexSelectStats *stats = &ts->index_stats;
	uint64	   *counts = ts->scan.counters.counts;

	ExplainPropertyText("Data Path", stats->on_gpu ?
						"index entries read from the GPU's copy, candidates' rows fetched" :
						"index entries read on the CPU, candidates' rows fetched", es);
	if (ts->css.ss.ps.plan->parallel_aware)
		ExplainPropertyInteger("Scan Processes", NULL, ts->scan.counters.processes, es);
	if (stats->on_gpu)
	{
		scan_gpu_stats_explain_gpus(stats->gpus, es);
		ExplainPropertyUInteger("Index Pages Sent to GPU", NULL, stats->pages_sent, es);
	}
	ExplainPropertyUInteger("Index Entries Scanned", NULL, counts[TOPK_COUNT_INDEX_ENTRIES], es);
	ExplainPropertyUInteger("Index Pages Skipped", NULL, counts[TOPK_COUNT_INDEX_PAGES_SKIPPED],
							es);
	ExplainPropertyUInteger("Rounds", NULL, counts[TOPK_COUNT_INDEX_ROUNDS], es);
	ExplainPropertyUInteger("Candidates Fetched", NULL, counts[TOPK_COUNT_INDEX_FETCHED], es);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("Candidates Rejected",
							psprintf("dead=" UINT64_FORMAT " invisible=" UINT64_FORMAT
									 " filter=" UINT64_FORMAT,
									 counts[TOPK_COUNT_INDEX_DEAD],
									 counts[TOPK_COUNT_INDEX_INVISIBLE],
									 counts[TOPK_COUNT_INDEX_FILTERED]),
							es);
	}
	else
	{
		ExplainPropertyUInteger("Candidates Dead", NULL, counts[TOPK_COUNT_INDEX_DEAD], es);
		ExplainPropertyUInteger("Candidates Invisible", NULL,
								counts[TOPK_COUNT_INDEX_INVISIBLE], es);
		ExplainPropertyUInteger("Candidates Filtered", NULL,
								counts[TOPK_COUNT_INDEX_FILTERED], es);
	}
	if (es->timing)
	{
		ExplainPropertyFloat("Rounds Time", "ms", ts->scan_ms, 3, es);
		if (stats->on_gpu)
			ExplainPropertyFloat("GPU Selection Time", "ms", stats->gpu_ms, 3, es);
		ExplainPropertyFloat("Fetch Time", "ms", stats->fetch_ms, 3, es);
		ExplainPropertyFloat("Sort Time", "ms", ts->fetch_ms, 3, es);
	}
}

void
topk_explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TopkScanState *ts = (TopkScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan,
												   ancestors);
	bool		prefix = compat_explain_prefix(es);
	StringInfoData keys;

	initStringInfo(&keys);
	for (int i = 0; i < ts->nsort; i++)
	{
		Node	   *expr = list_nth(cscan->custom_exprs, TOPK_EXPR_SORT + i);
		bool		desc = compat_ordering_op_descending(ts->sort_ops[i]);
		bool		nulls_first = ts->sort_nulls_first[i];

		appendStringInfo(&keys, "%s%s%s%s", i > 0 ? ", " : "",
						 deparse_expression(expr, context, prefix, false),
						 desc ? " DESC" : "",
						 nulls_first != desc ? (nulls_first ? " NULLS FIRST" : " NULLS LAST") : "");
	}
	ExplainPropertyText("Top-k Key", keys.data, es);
	if (ts->index)
		ExplainPropertyText("Column Index", RelationGetRelationName(ts->index), es);
	if (ts->index_filter)
		scan_filter_program_explain(ts->index_filter, "Index Filter", context, es);
	if (ts->scan.reader.filter)
		scan_filter_program_explain(ts->scan.reader.filter, "Compiled Filter", context, es);
	if (ts->key_source == KEY_SOURCE_EXACT_FLOAT8 &&
		exprType(list_nth(cscan->custom_exprs, TOPK_EXPR_SORT)) != NUMERICOID)
		ExplainPropertyText("Ranking Key", compiled_key_text(ts, es), es);
	else if (ts->key_source == KEY_SOURCE_EXACT_FLOAT8)
		ExplainPropertyText("Ranking Key", ts->key_program ? "float8, exact, compiled" :
							"float8, exact", es);
	else if (ts->key_source == KEY_SOURCE_LOSSY_NUMERIC)
		ExplainPropertyText("Ranking Key", "numeric rounded to float8, ties kept", es);
	else if (ts->vector_key)
		ExplainPropertyText("Ranking Key",
							psprintf("bound on pgvector's %s, compiled; candidates rechecked",
									 scan_vector_key_describe(ts->vector_key)), es);
	if (!(es->analyze && ts->done))
	{
		ExplainPropertyText("Backend", device_backend_name(device_selected_backend()), es);
		explain_planned_bound(cscan, es);
		return;
	}
	ExplainPropertyText("Backend", device_backend_name(ts->backend), es);
	if (ts->algorithm)
		ExplainPropertyText("Algorithm", ts->algorithm, es);
	if (ts->bound == PG_UINT64_MAX)
		ExplainPropertyText("Bound", "none", es);
	else
		ExplainPropertyUInteger("Bound", NULL, ts->bound, es);
	if (ts->index)
	{
		explain_index_rounds(ts, es);
		return;
	}
	ExplainPropertyText("Mode", ts->mode == TOPK_EXACT ? "exact" : "with ties", es);
	explain_data_path(ts, es);
	ExplainPropertyUInteger("Rows Scanned", NULL, ts->scan.counters.counts[SCAN_COUNT_ROWS_SCANNED], es);
	ExplainPropertyUInteger("Rows Keyed", NULL, ts->scan.counters.counts[TOPK_COUNT_ROWS_KEYED], es);
	if (ts->scan.counters.gpu_processes > 0)
		scan_gpu_stats_explain_shipped(&ts->scan.counters.gpu, es);
	ExplainPropertyUInteger("Candidates", NULL, ts->scan.counters.counts[TOPK_COUNT_CANDIDATES], es);
	if (ts->vector_key)
		ExplainPropertyUInteger("Rereads for Bounds", NULL,
								ts->scan.counters.counts[TOPK_COUNT_BOUND_REREADS], es);
	if (es->timing)
	{
		ExplainPropertyFloat("Scan and Select Time", "ms", ts->scan_ms, 3, es);
		if (ts->scan.counters.gpu_processes > 0)
			scan_gpu_stats_explain_times(&ts->scan.counters.gpu, es);
		ExplainPropertyFloat("Fetch and Sort Time", "ms", ts->fetch_ms, 3, es);
	}
}
