/*-------------------------------------------------------------------------
 *
 * colindex_am.c
 *	  The column index's access method: its handler, and the callbacks
 *	  that refuse what it does not do (scans, other types).  Its storage
 *	  parameter is colindex_cluster.c's.
 *	  Building, inserting and VACUUM are colindex_build.c's,
 *	  colindex_insert.c's and colindex_vacuum.c's.
 *
 * The index is read only by GpuTopK (colindex_select.c), never by an
 * index or bitmap scan: it has no amgettuple or amgetbitmap, so the
 * planner makes no index paths of it.  Its columns are plain columns of
 * the types colindex_type_supported() names; expressions and partial
 * indexes are refused, since GpuTopK needs an entry for every row version
 * with the columns' own values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_opclass.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "fmgr.h"
#include "optimizer/cost.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_cluster.h"
#include "colindex_dict.h"

PG_FUNCTION_INFO_V1(gputopk_index_handler);

Oid
colindex_am_oid(void)
{
	return get_index_am_oid(COLINDEX_AM_NAME, true);
}

/* Never called: the index offers the planner no scans. */
static void
colindex_cost_estimate(PlannerInfo *root, IndexPath *path, double loop_count,
					   Cost *startup, Cost *total, Selectivity *selectivity,
					   double *correlation, double *pages)
{
	*startup = *total = disable_cost;
	*selectivity = 1.0;
	*correlation = 0.0;
	*pages = path->indexinfo->pages;
}

/*
 * An operator class is valid when its type is one the index holds, or
 * anyelement (any_gputopk_ops: pgvector's types, which need not exist when
 * the extension is made; the build refuses the types it cannot hold).
 */
static bool
colindex_validate(Oid opclass)
{
	HeapTuple	tuple = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	bool		valid;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator class %u", opclass);
	valid = ((Form_pg_opclass) GETSTRUCT(tuple))->opcintype == ANYELEMENTOID ||
		colindex_type_supported(((Form_pg_opclass) GETSTRUCT(tuple))->opcintype, -1);
	if (!valid)
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("gputopk operator class \"%s\" is for a type the index cannot hold",
						NameStr(((Form_pg_opclass) GETSTRUCT(tuple))->opcname))));
	ReleaseSysCache(tuple);
	return valid;
}

static IndexScanDesc
colindex_begin_scan(Relation index, int nkeys, int norderbys)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("gputopk index \"%s\" cannot be scanned by itself",
					RelationGetRelationName(index)),
			 errdetail("Only the GpuTopK scan reads gputopk indexes.")));
	return NULL;				/* keep the compiler quiet */
}

Datum
gputopk_index_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = 0;
	am->amsupport = 0;
	am->amoptsprocnum = 0;
	am->amcanorder = false;
	am->amcanorderbyop = false;
	am->amcanbackward = false;
	am->amcanunique = false;
	am->amcanmulticol = true;
	am->amoptionalkey = true;
	am->amsearcharray = false;
	am->amsearchnulls = false;
	am->amstorage = false;
	am->amclusterable = false;
	am->ampredlocks = false;
	am->amcanparallel = false;
	am->amcaninclude = false;
	am->amusemaintenanceworkmem = false;
	am->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	am->amkeytype = InvalidOid;

	am->ambuild = colindex_build;
	am->ambuildempty = colindex_build_empty;
	am->aminsert = colindex_insert;
	am->ambulkdelete = colindex_bulk_delete;
	am->amvacuumcleanup = colindex_vacuum_cleanup;
	am->amcanreturn = NULL;
	am->amcostestimate = colindex_cost_estimate;
	am->amoptions = colindex_cluster_options;
	am->amproperty = NULL;
	am->ambuildphasename = NULL;
	am->amvalidate = colindex_validate;
	am->amadjustmembers = NULL;
	am->ambeginscan = colindex_begin_scan;
	am->amrescan = NULL;
	am->amgettuple = NULL;
	am->amgetbitmap = NULL;
	am->amendscan = NULL;
	am->ammarkpos = NULL;
	am->amrestrpos = NULL;
	am->amestimateparallelscan = NULL;
	am->aminitparallelscan = NULL;
	am->amparallelrescan = NULL;

	PG_RETURN_POINTER(am);
}
