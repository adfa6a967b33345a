/*-------------------------------------------------------------------------
 *
 * colindex_build.c
 *	  Building a column index: its metapage, then its entries from a scan
 *	  of the table, a data page at a time, in the order the scan reads
 *	  them or, with layout = clustered, in the order of their values
 *	  (colindex_cluster.c); and an unlogged table's empty index.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_cluster.h"
#include "colindex_dict.h"
#include "compat.h"
#include "pgvector_catalog.h"


typedef struct BuildState
{
	const ColIndexLayout *layout;
	PGAlignedBlock page;		/* the data page being filled */
	BlockNumber last_block;
	double		entries;
	ColIndexCluster *cluster;	/* with layout = clustered, the entries to order */
} BuildState;

/* The layout of the index's columns, from its tuple descriptor. */
static void
layout_of_index(Relation index, ColIndexLayout *layout)
{
	TupleDesc	desc = RelationGetDescr(index);
	Oid			types[INDEX_MAX_KEYS];
	int32		typmods[INDEX_MAX_KEYS];

	for (int i = 0; i < desc->natts; i++)
	{
		types[i] = TupleDescAttr(desc, i)->atttypid;
		typmods[i] = TupleDescAttr(desc, i)->atttypmod;
	}
	colindex_compute_layout(layout, desc->natts, types, typmods, COLINDEX_VERSION);
}

/* The columns' layout; errors for what the index cannot hold. */
static void
check_definition(Relation index, IndexInfo *info, ColIndexLayout *layout)
{
	TupleDesc	desc = RelationGetDescr(index);
	VectorElement element;

	if (info->ii_Predicate != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gputopk indexes cannot be partial"),
				 errdetail("GpuTopK needs an entry for every row of the table.")));
	for (int i = 0; i < info->ii_NumIndexAttrs; i++)
	{
		if (info->ii_IndexAttrNumbers[i] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gputopk indexes cannot have expressions"),
					 errhint("Index the columns the expression reads; GpuTopK computes it from them.")));
		if (pgvector_type_element(TupleDescAttr(desc, i)->atttypid, &element) &&
			TupleDescAttr(desc, i)->atttypmod <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gputopk indexes cannot hold vectors without a dimension"),
					 errhint("Declare the column with its dimensions, as vector(n) or halfvec(n).")));
		if (!colindex_type_supported(TupleDescAttr(desc, i)->atttypid,
									 TupleDescAttr(desc, i)->atttypmod))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gputopk indexes cannot hold type %s",
							format_type_be(TupleDescAttr(desc, i)->atttypid)),
					 errhint("The index holds boolean, smallint, integer, bigint, real, double precision, date, timestamp, timestamptz, text and varchar columns, and pgvector's vector(n) and halfvec(n) with their dimensions given.")));
	}
	layout_of_index(index, layout);
	if (layout->capacity < 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gputopk index entries of these columns do not fit a page"),
				 errhint("A vector column of up to about 2,000 dimensions (halfvec, 4,000) fits, with a few other columns.")));
}

/* Write the data page being built as a new block. */
static void
flush_build_page(Relation index, BuildState *state)
{
	Buffer		buf;
	GenericXLogState *xlog;

	buf = colindex_page_new_block(index);
	xlog = GenericXLogStart(index);
	memcpy(GenericXLogRegisterBuffer(xlog, buf, GENERIC_XLOG_FULL_IMAGE),
		   state->page.data, BLCKSZ);
	GenericXLogFinish(xlog);
	state->last_block = BufferGetBlockNumber(buf);
	UnlockReleaseBuffer(buf);
	colindex_init_data_page(state->page.data, state->layout);
}

/* Add an entry (its text columns' codes stored) to the data page being filled. */
static void
add_entry(Relation index, BuildState *state, ItemPointer tid, const Datum *stored,
		  const bool *isnull)
{
	if (!colindex_page_add(state->layout, state->page.data, tid, stored, isnull))
	{
		flush_build_page(index, state);
		if (!colindex_page_add(state->layout, state->page.data, tid, stored, isnull))
			elog(ERROR, "could not add an entry to an empty page");
	}
	state->entries++;
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool alive, void *arg)
{
	BuildState *state = arg;
	Datum		stored[INDEX_MAX_KEYS];

	colindex_insert_stored_values(index, state->layout, values, isnull, stored);
	if (state->cluster)
		colindex_cluster_add(state->cluster, tid, stored, isnull);
	else
		add_entry(index, state, tid, stored, isnull);
	colindex_insert_free_stored(state->layout, values, isnull, stored);
}

/* With layout = clustered: the entries the scan spooled, in order. */
static void
add_clustered_entries(Relation index, BuildState *state)
{
	ItemPointerData tid;
	Datum		stored[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	colindex_cluster_sort(state->cluster);
	while (colindex_cluster_next(state->cluster, &tid, stored, isnull))
		add_entry(index, state, &tid, stored, isnull);
	colindex_cluster_end(state->cluster);
}

/* The metapage, as block 0. */
static void
write_meta_page(Relation index, const ColIndexLayout *layout)
{
	Buffer		buf;
	GenericXLogState *xlog;

	buf = colindex_page_new_block(index);
	Assert(BufferGetBlockNumber(buf) == COLINDEX_METAPAGE_BLKNO);
	xlog = GenericXLogStart(index);
	colindex_init_meta_page(GenericXLogRegisterBuffer(xlog, buf, GENERIC_XLOG_FULL_IMAGE),
							layout);
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

IndexBuildResult *
colindex_build(Relation heap, Relation index, IndexInfo *info)
{
	BuildState *state = palloc0(sizeof(BuildState));
	ColIndexLayout *layout = palloc(sizeof(ColIndexLayout));
	IndexBuildResult *result = palloc(sizeof(IndexBuildResult));

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	check_definition(index, info, layout);
	colindex_changes_forget(index);
	state->layout = layout;
	state->last_block = InvalidBlockNumber;
	write_meta_page(index, layout);
	colindex_init_data_page(state->page.data, layout);
	if (colindex_cluster_enabled(index))
		state->cluster = colindex_cluster_begin(layout);
	result->heap_tuples = table_index_build_scan(heap, index, info, true, true,
												 build_callback, state, NULL);
	if (state->cluster)
		add_clustered_entries(index, state);
	if (colindex_data_header(state->page.data)->nlive > 0)
		flush_build_page(index, state);
	colindex_insert_set_block(index, state->last_block);
	result->index_tuples = state->entries;
	return result;
}

/* The metapage of an unlogged table's index, in its init fork. */
void
colindex_build_empty(Relation index)
{
	ColIndexLayout layout;
	PGAlignedBlock page;
	RelFileLocator locator = compat_rel_locator(index);

	layout_of_index(index, &layout);
	colindex_init_meta_page(page.data, &layout);
	PageSetChecksumInplace(page.data, COLINDEX_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, COLINDEX_METAPAGE_BLKNO, page.data, true);
	log_newpage(&locator, INIT_FORKNUM,
				COLINDEX_METAPAGE_BLKNO, page.data, true);
	/* the write bypassed shared buffers: a checkpoint may not have seen it */
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
