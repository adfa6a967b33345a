/*-------------------------------------------------------------------------
 *
 * colindex_path.c
 *	  Planning GpuTopK over a column index: a path for each gputopk index
 *	  of the table that holds the ranking key's columns.
 *
 * The path reads the index's entries instead of the table's rows: the WHERE
 * clauses that the filter program compiles and that read only indexed
 * columns are checked on the entries, the ranking key computed from them,
 * and only the candidates' rows are fetched from the table, where the
 * whole WHERE clause is checked again (colindex_select.c).  Its cost is
 * the index's pages, a fraction of an operator per entry and per clause,
 * and a random page and a row's qual per candidate; the candidates per row
 * kept are guessed from the selectivity of the clauses the index cannot
 * check and the share of entries that belong to dead row versions.  Where
 * the GPU reads the index (colindex_gpu.c), its pages and entries cost a
 * GPU job and a thousandth of an operator per entry instead.  Under
 * gputopk.device = gpu the path is offered only there.
 *
 * Where the CPU reads the index, a partial path is offered too: each
 * process reads its share of the index's pages and fetches its own
 * candidates (topk_partial_workers).  The index is read from shared
 * buffers and its time goes on the entries, so each process's share of the
 * pages and entries is costed, as for the heap scan its share of the rows.
 * A worker's pages cost twice: it maps each into its memory first.
 *
 * One process, and the GPU, read the pages in the order of their bounds
 * and stop early (colindex_select.c): for a column key, the share of the
 * pages read is costed from the share of the entries above the cut and the
 * column's correlation with the pages' order (pages_read_share).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/xlog.h"
#include "catalog/pg_class_d.h"
#include "catalog/pg_statistic.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

#include "colindex.h"
#include "colindex_cluster.h"
#include "colindex_coverage.h"
#include "colindex_path.h"
#include "device.h"
#include "scan_filter_program.h"
#include "scan_parallel_policy.h"
#include "service_client.h"
#include "settings.h"
#include "topk_plan.h"
#include "topk_scan.h"

/* cost of keying one entry, in cpu_operator_cost */
#define INDEX_ENTRY_COST_FACTOR 0.1

/*
 * more cost of a page read in a parallel scan, in seq_page_cost: a worker,
 * a new process, maps each page of shared memory it reads into its address
 * space first (measured: as long again as the page's entries took, without
 * huge pages)
 */
#define INDEX_WORKER_PAGE_COST_FACTOR 1.0

/* more cost of keying one entry by a vector key, per dimension, in cpu_operator_cost */
#define INDEX_VECTOR_ELEMENT_COST_FACTOR 0.03

/* cost of a compiled WHERE clause on one entry, in cpu_operator_cost */
#define INDEX_CLAUSE_COST_FACTOR 0.25

/* cost of a GPU job over the index's copy, and of its entries, in cpu_operator_cost */
#define INDEX_GPU_JOB_COST_FACTOR 1000.0
#define INDEX_GPU_ENTRY_COST_FACTOR 0.001

/* the fewest rows kept per candidate the planner assumes */
#define MIN_KEPT_PER_CANDIDATE 0.001

/* Whether the index holds what the ranking key is computed from. */
static bool
index_has_key(RelOptInfo *rel, List *private, Bitmapset *columns)
{
	return (topk_key_compiles(rel, private) ||
			intVal(list_nth(private, TOPK_FIELD_KEY_SOURCE)) == KEY_SOURCE_VECTOR_BOUND) &&
		colindex_coverage_reads_only((Node *) linitial(llast(private)), rel->relid, columns);
}

/* The elements a vector key reads of each entry (its column's typmod), or 0. */
static int
vector_key_dims(List *private)
{
	List	   *vars;

	if (intVal(list_nth(private, TOPK_FIELD_KEY_SOURCE)) != KEY_SOURCE_VECTOR_BOUND)
		return 0;
	vars = pull_var_clause((Node *) linitial(llast(private)), 0);
	return vars == NIL ? 0 : Max(exprTypmod(linitial(vars)), 1);
}

bool
colindex_path_read_on_gpu(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index, bool whole)
{
	return service_preloaded() && device_selected_backend() == BACKEND_GPU &&
		get_rel_persistence(planner_rt_fetch(rel->relid, root)->relid) ==
		RELPERSISTENCE_PERMANENT &&
		!RecoveryInProgress() &&
		(double) index->pages * BLCKSZ <= service_gpu_cache_bytes(whole);
}

/*
 * The share of the index's entries that a round on the CPU reads before it
 * stops: all of them, unless NULLs come first with a key no value shares
 * and any tied row will do (one ORDER BY item, no WITH TIES), where it
 * stops once it holds as many NULL keys as candidates it wants
 * (colindex_select.c).  The statistics' null fraction of the key's
 * column and the selectivity of the clauses the index checks say how soon.
 */
static double
share_read(PlannerInfo *root, RelOptInfo *rel, List *private, List *covered,
		   double candidates, double entries)
{
	Expr	   *key = linitial(llast(private));
	VariableStatData vardata;
	double		null_entries = 0.0;

	if (list_length(list_nth(private, TOPK_FIELD_SORT_ATTNOS)) != 1 ||
		intVal(list_nth(private, TOPK_FIELD_WITH_TIES)) ||
		!linitial_int(list_nth(private, TOPK_FIELD_SORT_NULLS_FIRST)) ||
		!key_null_is_exact((KeyType) intVal(list_nth(private, TOPK_FIELD_KEY_TYPE))) ||
		!IsA(key, Var))
		return 1.0;
	examine_variable(root, (Node *) key, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple))
		null_entries = entries * ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac *
			clauselist_selectivity(root, covered, rel->relid, JOIN_INNER, NULL);
	ReleaseVariableStats(vardata);
	return null_entries >= candidates ? candidates / null_entries : 1.0;
}

/*
 * The share of a clustered index's data pages read for a key computed from
 * d of its D columns, a share q of whose entries are above the cut.  Its
 * pages are boxes of the columns' space (colindex_cluster.c), about
 * pages^(-1/D) wide in each column's ranks, and those read are about the
 * boxes that reach the corner of the d columns the key reads that holds
 * the entries above the cut, q^(1/d) wide, as for uniform columns: a share
 * (q^(1/d) + pages^(-1/D))^d.  (3M entries of 8 independent columns, top
 * 50 of a weighted sum: 0.009 for 0.023 read; anti-correlated columns read
 * far more, 0.2.)
 */
static double
clustered_share(RelOptInfo *rel, Expr *key, double q, IndexOptInfo *index)
{
	Bitmapset  *attnos = NULL;
	int			read = 0;
	double		pages = Max(index->pages, 1.0);

	pull_varattnos((Node *) key, rel->relid, &attnos);
	for (int i = 0; i < index->nkeycolumns; i++)
		if (index->indexkeys[i] != 0 &&
			bms_is_member(index->indexkeys[i] - FirstLowInvalidHeapAttributeNumber, attnos))
			read++;
	if (read == 0)
		return 1.0;
	return Max(Min(pow(pow(q, 1.0 / read) + pow(pages, -1.0 / index->nkeycolumns), read), 1.0),
			   1.0 / pages);
}

/*
 * The share of the index's data pages that one process or the GPU reads in
 * the order of their bounds: those whose largest key reaches the cut below
 * which no candidate is wanted.  A share q of the entries the index's
 * clauses accept is above the cut.  Where a column key's values lie in the
 * pages at random, a page of e entries holds one above it with probability
 * 1 - (1 - q)^e; where they lie in the pages' order (the statistics'
 * correlation c at 1 or -1), the pages that hold those entries are about a
 * share q of them; between the two, weighed by c squared, as PostgreSQL
 * weighs a btree's correlation.  The filter's own pruning is left out, and
 * a key program's bounds (sums of each column's greatest value) are costed
 * as reading every page, unless the index is clustered (clustered_share).
 * A clustered index's pages are in the order of their values, not the
 * table's: a column key's statistics say nothing of it, and its values lie
 * in each page as at random.
 */
static double
pages_read_share(PlannerInfo *root, RelOptInfo *rel, List *private, List *covered,
				 double candidates, IndexOptInfo *index, bool clustered)
{
	Expr	   *key = linitial(llast(private));
	VariableStatData vardata;
	AttStatsSlot sslot;
	double		correlation = 0.0;
	double		per_page = index->tuples / Max(index->pages, 1.0);
	double		q;

	if (index->tuples < 1.0 || (!IsA(key, Var) && !clustered))
		return 1.0;
	q = Min(candidates / Max(index->tuples * clauselist_selectivity(root, covered, rel->relid,
																	 JOIN_INNER, NULL),
							  1.0), 1.0);
	if (!IsA(key, Var))
		return clustered_share(rel, key, q, index);
	if (clustered)
		return Max(1.0 - pow(1.0 - q, per_page), 1.0 / Max(index->pages, 1.0));
	examine_variable(root, (Node *) key, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple) &&
		get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_CORRELATION, InvalidOid,
						 ATTSTATSSLOT_NUMBERS))
	{
		correlation = sslot.numbers[0];
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vardata);
	correlation *= correlation;
	return Max(correlation * q + (1.0 - correlation) * (1.0 - pow(1.0 - q, per_page)),
			   1.0 / Max(index->pages, 1.0));
}

/* A path over the index, a partial one if workers > 0. */
static void
add_index_path(PlannerInfo *root, RelOptInfo *rel, List *private, QualCost where,
			   IndexOptInfo *index, Bitmapset *columns, bool clustered, bool on_gpu,
			   int workers)
{
	double		divisor = workers > 0 ? scan_parallel_divisor(workers) : 1.0;
	double		entries_cost;
	double		pages_share;
	double		bound = Min(topk_estimated_bound(root), Max(rel->rows, 1.0));
	List	   *rest = NIL;
	List	   *covered = NIL;
	double		kept_per_candidate;
	double		candidates;
	double		spc_random_page_cost;
	double		spc_seq_page_cost;
	CustomPath *path;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (colindex_coverage_checks((Node *) rinfo->clause, rel->relid, columns))
			covered = lappend(covered, rinfo);
		else
			rest = lappend(rest, rinfo);
	}
	kept_per_candidate = clauselist_selectivity(root, rest, rel->relid, JOIN_INNER, NULL);
	if (index->tuples > rel->tuples && index->tuples > 0)
		kept_per_candidate *= rel->tuples / index->tuples;
	kept_per_candidate = Max(kept_per_candidate, MIN_KEPT_PER_CANDIDATE);
	candidates = Min(bound / kept_per_candidate, Max(index->tuples, 1.0));

	path = topk_make_path(root, rel, list_copy(private), workers);
	list_nth_cell(path->custom_private, TOPK_FIELD_INDEX)->ptr_value =
		list_make1_oid(index->indexoid);
	/* with a decimal point: a plan sent to parallel workers reads "16" back as an Integer */
	list_nth_cell(path->custom_private, TOPK_FIELD_CANDIDATES)->ptr_value =
		makeFloat(psprintf("%f", 1.0 / kept_per_candidate));

	get_tablespace_page_costs(rel->reltablespace, &spc_random_page_cost, &spc_seq_page_cost);
	/* in the order of bounds: a page's summary read first, then the pages that can hold candidates */
	pages_share = workers > 0 ? 1.0 :
		pages_read_share(root, rel, private, covered, candidates, index, clustered);
	if (on_gpu)
		entries_cost = cpu_operator_cost *
			(INDEX_GPU_JOB_COST_FACTOR + INDEX_GPU_ENTRY_COST_FACTOR * index->tuples * pages_share);
	else
		/* a process reads its share, or stops as early as one alone would */
		entries_cost = (workers > 0 ? 0.0 : cpu_operator_cost * index->pages) +
			(spc_seq_page_cost * index->pages *
			 (workers > 0 ? 1.0 + INDEX_WORKER_PAGE_COST_FACTOR : 1.0) +
			 index->tuples * cpu_operator_cost *
			 (INDEX_ENTRY_COST_FACTOR +
			  INDEX_VECTOR_ELEMENT_COST_FACTOR * vector_key_dims(private) +
			  INDEX_CLAUSE_COST_FACTOR * list_length(covered))) *
			Min(Min(1.0 / divisor, pages_share),
				share_read(root, rel, private, covered, candidates, index->tuples));
	/* each process returns at most its own bound's rows */
	path->path.rows = clamp_row_est(Min(bound, rel->rows / divisor));
	path->path.startup_cost = where.startup + path->path.pathtarget->cost.startup +
		entries_cost + spc_random_page_cost * Min(candidates, rel->pages) +
		candidates * (cpu_tuple_cost + where.per_tuple) +
		topk_sort_cost(bound) + path->path.pathtarget->cost.per_tuple * bound;
	path->path.total_cost = path->path.startup_cost;
	if (workers > 0)
		add_partial_path(rel, &path->path);
	else
		add_path(rel, &path->path);
}

/*
 * A GpuTopK path (and a partial one) for each column index that holds the
 * ranking key's columns, unless gputopk.enable_column_index is off, or gputopk.device is
 * gpu and the GPU would not read the index.
 */
void
colindex_path_add(PlannerInfo *root, RelOptInfo *rel, List *private, QualCost where)
{
	Oid			am;
	ListCell   *lc;

	if (!gputopk_enable_column_index || rel->indexlist == NIL)
		return;
	am = colindex_am_oid();
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		Bitmapset  *columns;
		Relation	irel;
		bool		clustered;
		bool		on_gpu;
		int			workers;

		if (!OidIsValid(am) || index->relam != am || index->indpred != NIL)
			continue;
		on_gpu = colindex_path_read_on_gpu(root, rel, index, false);
		/* not read on the CPU where the GPU is demanded */
		if (!on_gpu && gputopk_device == DEVICE_SETTING_GPU)
			continue;
		irel = index_open(index->indexoid, NoLock);
		columns = colindex_coverage_columns(irel);
		clustered = colindex_cluster_enabled(irel);
		index_close(irel, NoLock);
		if (!index_has_key(rel, private, columns))
			continue;
		add_index_path(root, rel, private, where, index, columns, clustered, on_gpu, 0);
		/* the GPU reads the whole index in one job */
		if (!on_gpu && (workers = topk_partial_workers(root, rel, index->pages)) > 0)
			add_index_path(root, rel, private, where, index, columns, clustered, false,
						   workers);
	}
}
