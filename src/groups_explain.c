/*-------------------------------------------------------------------------
 *
 * groups_explain.c
 *	  EXPLAIN of a GpuTopKGroups scan: its grouping, aggregates, ranking,
 *	  filters and column index, and with ANALYZE what it counted and timed.
 *
 * The counts are the leader's, summed over all processes of a parallel
 * scan (scan_counters.h); the memory and times are the leader's own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "compat.h"
#include "device.h"
#include "gpu_groups.h"
#include "groups_state.h"
#include "scan_filter_program.h"

/*
 * What the GPU form over a column index read: the index's pages sent to
 * bring its copy up to date, the entries of vouched blocks it grouped (the
 * last grouping's) and the pages their summaries let it skip; the table's
 * blocks the visibility map vouched for, and those read on the CPU; and
 * how many groupings it took (more than one where blocks were written to
 * meanwhile).
 */
static void
explain_index(GroupsScanState *gs, ExplainState *es)
{
	ExplainPropertyText("Data Path", gs->ran_on_gpu ?
						"column index entries grouped on the GPU, other pages' rows on the CPU" :
						"heap rows read on the CPU", es);
	ExplainPropertyUInteger("Index Pages Sent to GPU", NULL, gs->index_pages_sent, es);
	ExplainPropertyUInteger("Index Entries Scanned", NULL, gs->index_entries, es);
	ExplainPropertyUInteger("Index Pages Skipped", NULL, gs->index_pages_skipped, es);
	ExplainPropertyUInteger("Heap Pages Vouched by Visibility Map", NULL, gs->blocks_vouched, es);
	ExplainPropertyUInteger("Heap Pages Read on CPU", NULL,
							gs->scan.counters.counts[SCAN_COUNT_PAGES_READ], es);
	ExplainPropertyInteger("Groupings on GPU", NULL, gs->index_rounds, es);
	if (gs->ran_on_gpu)
		scan_gpu_stats_explain_shipped(&gs->gpu, es);
}

void
groups_explain_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GroupsScanState *gs = (GroupsScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan,
												   ancestors);
	bool		prefix = compat_explain_prefix(es);
	const uint64 *count = gs->scan.counters.counts;
	List	   *keys = NIL;
	List	   *aggs = NIL;
	ListCell   *lc;
	StringInfoData rank;

	foreach(lc, gs->exprs)
	{
		char	   *expr = deparse_expression(lfirst(lc), context, prefix, false);

		if (foreach_current_index(lc) < gs->ngroup_columns)
			keys = lappend(keys, expr);
		else
			aggs = lappend(aggs, expr);
	}
	ExplainPropertyList("Group Key", keys, es);
	ExplainPropertyList("Aggregates", aggs, es);
	/* as EXPLAIN shows a sort key: NULLS only where not the direction's default */
	initStringInfo(&rank);
	appendStringInfo(&rank, "%s %s%s", gs->rank ? (char *) list_nth(aggs, gs->rank - gs->aggs) :
					 (char *) list_nth(keys, gs->rank_column),
					 gs->desc ? "DESC" : "ASC",
					 gs->nulls_first == gs->desc ? "" :
					 (gs->nulls_first ? " NULLS FIRST" : " NULLS LAST"));
	ExplainPropertyText("Ranked By", rank.data, es);
	ExplainPropertyInteger("Groups Kept", NULL, gs->keep, es);
	if (gs->table_rows)
		ExplainPropertyText("Returns", "the table's rows of the groups kept", es);
	if (gs->scan.reader.filter)
		scan_filter_program_explain(gs->scan.reader.filter, "Compiled Filter", context, es);
	if (gs->interpreted != NIL)
		ExplainPropertyText("Filter",
							deparse_expression((Node *) make_ands_explicit(gs->interpreted),
											   context, es->verbose, false),
							es);
	if (gs->partitions > 0)
		ExplainPropertyInteger("Partitions", NULL, gs->partitions, es);
	if (OidIsValid(gs->index_oid))
		ExplainPropertyText("Column Index", get_rel_name(gs->index_oid), es);
	/* the GPU form's backend: the GPU as planned, or where the leader's ran */
	ExplainPropertyText("Backend", device_backend_name(gs->gpu_planned &&
													   (!es->analyze || gs->ran_on_gpu) ?
													   BACKEND_GPU : BACKEND_CPU), es);
	if (!(es->analyze && gs->scan.counters.processes > 0))
		return;
	if (node->ss.ps.plan->parallel_aware)
		ExplainPropertyInteger("Scan Processes", NULL, gs->scan.counters.processes, es);
	ExplainPropertyUInteger("Rows Scanned", NULL, count[SCAN_COUNT_ROWS_SCANNED], es);
	if (gs->index_declined > 0)
		ExplainPropertyUInteger("Column Index Declined", "pages not all-visible",
								gs->index_declined, es);
	if (gs->pages_unheld > 0)
		ExplainPropertyUInteger("Regrouped on CPU",
								psprintf("pages with text groups over %d bytes",
										 GPU_GROUPS_TEXT_BYTES),
								gs->pages_unheld, es);
	if (gs->index_used)
		explain_index(gs, es);
	else if (gs->ran_on_gpu)
	{
		scan_driver_explain_pages(count, es->timing ? gs->scan_ms : 0, es);
		scan_gpu_stats_explain_shipped(&gs->gpu, es);
	}
	ExplainPropertyUInteger("Groups", NULL, count[GROUPS_COUNT_GROUPS], es);
	ExplainPropertyUInteger("Groups Returned", NULL, count[GROUPS_COUNT_RETURNED], es);
	if (gs->spill_partitions > 0)
		ExplainPropertyInteger("Spill Partitions", NULL, gs->spill_partitions, es);
	if (gs->partitions > 0 || gs->spill_partitions > 0)
	{
		ExplainPropertyUInteger("Records Exchanged", NULL, count[GROUPS_COUNT_RECORDS], es);
		ExplainPropertyInteger("Exchange Disk", "kB",
							   (int64) ((count[GROUPS_COUNT_BYTES] + 1023) / 1024), es);
	}
	if (gs->memory_used > 0)
		ExplainPropertyInteger("Memory Used", "kB", (int64) ((gs->memory_used + 1023) / 1024),
							   es);
	if (es->timing)
	{
		ExplainPropertyFloat("Scan Time", "ms", gs->scan_ms, 3, es);
		ExplainPropertyFloat("Choose Time", "ms", gs->choose_ms, 3, es);
		if (gs->ran_on_gpu)
			scan_gpu_stats_explain_times(&gs->gpu, es);
	}
}
