/*-------------------------------------------------------------------------
 *
 * agg_explain.c
 *	  EXPLAIN of a GpuTopKAgg scan: its grouping, aggregates and filters,
 *	  the backend, and with ANALYZE what its runs counted and timed.
 *
 * The counts are the leader's, summed over all processes of a parallel
 * scan (scan_counters.h); the GPU's lines are those GpuTopK shows too
 * (scan_gpu_stats.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/makefuncs.h"
#include "utils/ruleutils.h"

#include "agg_explain.h"
#include "agg_state.h"
#include "compat.h"
#include "scan_filter_program.h"


void
agg_explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AggScanState *ts = (AggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan,
												   ancestors);
	bool		prefix = compat_explain_prefix(es);
	const uint64 *count = ts->scan.counters.counts;
	List	   *aggs = NIL;
	ListCell   *lc;

	foreach(lc, cscan->custom_scan_tlist)
	{
		Node	   *expr = (Node *) lfirst_node(TargetEntry, lc)->expr;

		if (IsA(expr, Aggref))
			aggs = lappend(aggs, deparse_expression(expr, context, prefix, false));
		else
			ExplainPropertyText("Group Key", deparse_expression(expr, context, prefix, false),
								es);
	}
	ExplainPropertyList("Aggregates", aggs, es);
	if (ts->scan.reader.filter)
		scan_filter_program_explain(ts->scan.reader.filter, "Compiled Filter", context, es);
	if (ts->planned.interpreted != NIL)
		ExplainPropertyText("Filter",
							deparse_expression((Node *) make_ands_explicit(ts->planned.interpreted),
											   context, es->verbose, false),
							es);
	if (ts->planned.mode == AGG_MODE_PARTITIONED)
		ExplainPropertyInteger("Partitions", NULL, ts->planned.partitions, es);
	/* the backend the leader used, or would use (it may not have run) */
	ExplainPropertyText("Backend", device_backend_name(ts->stats.ran ? ts->run.backend :
													   ts->planned.results_byval ?
													   device_selected_backend() :
													   BACKEND_CPU), es);
	if (!(es->analyze && ts->scan.counters.processes > 0))
		return;
	if (node->ss.ps.plan->parallel_aware)
	{
		ExplainPropertyInteger("Scan Processes", NULL, ts->scan.counters.processes, es);
		ExplainPropertyInteger("GPU Processes", NULL, ts->scan.counters.gpu_processes, es);
	}
	/* pages are shown where some were read on the GPU, or read again for visibility */
	if (count[SCAN_COUNT_GPU_PAGES] > 0 || count[SCAN_COUNT_VISIBILITY_RESCANS] > 0)
		scan_driver_explain_pages(count, ts->stats.scan_ms, es);
	ExplainPropertyUInteger("Rows Scanned", NULL, count[SCAN_COUNT_ROWS_SCANNED], es);
	ExplainPropertyUInteger("Groups", NULL, node->ss.ps.plan->parallel_aware ?
							count[COUNT_PARTIAL_GROUPS] : ts->stats.ngroups, es);
	/* the leader's groups: none if it grouped none */
	if (ts->stats.memory_used > 0)
		ExplainPropertyInteger("Memory Used", "kB",
							   (int64) ((ts->stats.memory_used + 1023) / 1024), es);
	if (ts->planned.mode == AGG_MODE_PARTITIONED)
	{
		ExplainPropertyUInteger("Rows Exchanged", NULL, count[COUNT_ROWS_EXCHANGED], es);
		ExplainPropertyInteger("Exchange Disk", "kB",
							   (int64) ((count[COUNT_BYTES_EXCHANGED] + 1023) / 1024), es);
		ExplainPropertyInteger("Leader Partitions", NULL, ts->stats.leader_partitions, es);
	}
	if (count[COUNT_ROWS_SPILLED] > 0)
	{
		ExplainPropertyUInteger("Rows Spilled", NULL, count[COUNT_ROWS_SPILLED], es);
		ExplainPropertyUInteger("Spill Batches", NULL, count[COUNT_SPILL_BATCHES], es);
		ExplainPropertyInteger("Spill Disk", "kB",
							   (int64) ((count[COUNT_BYTES_SPILLED] + 1023) / 1024), es);
	}
	if (ts->scan.counters.gpu_processes > 0)
	{
		scan_gpu_stats_explain_shipped(&ts->scan.counters.gpu, es);
		ExplainPropertyUInteger("Candidates", NULL, count[COUNT_GPU_CANDIDATES], es);
	}
	if (es->timing)
	{
		ExplainPropertyFloat("Scan Time", "ms", ts->stats.scan_ms, 3, es);
		if (ts->planned.mode == AGG_MODE_PARTITIONED)
			ExplainPropertyFloat("Group Time", "ms", ts->stats.group_ms, 3, es);
		if (ts->scan.counters.gpu_processes > 0)
		{
			scan_gpu_stats_explain_times(&ts->scan.counters.gpu, es);
			ExplainPropertyFloat("Merge Time", "ms", ts->stats.merge_ms, 3, es);
		}
	}
}
