/*-------------------------------------------------------------------------
 *
 * colindex_check.c
 *	  gputopk_index_check(regclass): verify a column index against its table.
 *
 * Every row the current snapshot sees must have exactly one live entry,
 * at the root of its HOT chain, with the row's values of the indexed
 * columns (a text column's through the dictionary, a vector column's by a
 * 64-bit hash of its bytes, so that the entries read need not be kept
 * whole); no two live entries
 * may name one TID; each live entry must lie within its page's summary
 * (checked on the copy of the page that holds both).  The first difference is
 * an error (ERRCODE_INDEX_CORRUPTED); otherwise the rows checked are
 * returned.
 *
 * The check runs beside writers and VACUUM (on a hot standby, beside their
 * replay), holding AccessShareLock, which keeps out only a compaction: it
 * waits for AccessExclusiveLock, which a standby's startup process holds
 * while it replays one.  So no entry moves.  The snapshot is taken before
 * the entries are read, and a row it sees keeps one live entry, never
 * written again, from before the snapshot to the end: the entry was made
 * before the row's transaction committed, a HOT update keeps its chain's
 * root and entry, and VACUUM frees only the entries of rows dead to every
 * snapshot (a standby cancels the check, or waits for it, before it
 * replays the pruning of rows the check sees, which comes first).  Hence a
 * consistent index never gives "no live entry" or "values differ".  It may
 * give two live entries for a TID: the pages are read one at a time, and
 * after an entry is read, VACUUM may free it, the table give its TID to a
 * new row, and that row's entry go to a page not read yet.  As VACUUM frees
 * an entry before the table can reuse its TID, at no moment do two live
 * entries name one TID; so on a second one, both are read again together,
 * and the one still live with that TID is kept (neither, where the TID's
 * entry was freed since: no row the snapshot sees has it).  Only two live
 * at once are corruption.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "colindex.h"
#include "colindex_dict.h"

PG_FUNCTION_INFO_V1(gputopk_index_check);

/* a live entry: its TID (the key), where it was read, and its values */
typedef struct CheckedEntry
{
	ItemPointerData tid;
	uint64		position;		/* colindex_position */
	bool		isnull[INDEX_MAX_KEYS];
	Datum		values[INDEX_MAX_KEYS]; /* a vector's: vector_hash */
} CheckedEntry;

/* A vector's elements (the bytes after its varlena header), hashed. */
static Datum
vector_hash(const char *bytes, int length)
{
	return UInt64GetDatum(hash_bytes_extended((const unsigned char *) bytes, length, 0));
}

static void
report_corrupt(Relation index, const char *what, ItemPointer tid)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gputopk index \"%s\" does not match its table",
					RelationGetRelationName(index)),
			 errdetail("%s (%u,%u).", what, ItemPointerGetBlockNumber(tid),
					   ItemPointerGetOffsetNumber(tid))));
}

/*
 * Whether a row's value of index column i (not NULL) is the one its entry
 * stores: a text column's is its code's value in the dictionary (any once
 * the dictionary is full, for COLINDEX_DICT_OTHER).
 */
static bool
value_matches(Relation index, const ColIndexLayout *layout, int i, Datum value, Datum stored)
{
	struct varlena *text;
	const char *bytes;
	int			length;
	bool		matches;

	if (layout->vectors[i])
	{
		struct varlena *vector = PG_DETOAST_DATUM_PACKED(value);

		matches = VARSIZE_ANY_EXHDR(vector) == layout->widths[i] - VARHDRSZ &&
			vector_hash(VARDATA_ANY(vector), VARSIZE_ANY_EXHDR(vector)) == stored;
		if ((Pointer) vector != DatumGetPointer(value))
			pfree(vector);
		return matches;
	}
	if (!colindex_type_is_text(layout->types[i]))
		return datumIsEqual(value, stored, true, layout->widths[i]);
	if (DatumGetInt32(stored) == COLINDEX_DICT_OTHER)
		return colindex_dict_full(index);
	if (!colindex_dict_value(index, DatumGetInt32(stored), &bytes, &length))
		return false;
	text = PG_DETOAST_DATUM_PACKED(value);
	matches = VARSIZE_ANY_EXHDR(text) == length && memcmp(VARDATA_ANY(text), bytes, length) == 0;
	if ((Pointer) text != DatumGetPointer(value))
		pfree(text);
	return matches;
}

/* Take the entry's place and values from the live slot at position of page. */
static void
read_slot(CheckedEntry *entry, const ColIndexLayout *layout, Page page, uint64 position)
{
	int			slot = colindex_position_slot(position);

	entry->position = position;
	for (int i = 0; i < layout->ncolumns; i++)
	{
		entry->isnull[i] = colindex_slot_isnull(layout, page, i, slot);
		if (entry->isnull[i])
			entry->values[i] = (Datum) 0;
		else if (layout->vectors[i])
			entry->values[i] =
				vector_hash(colindex_slot_value_pointer(layout, page, i, slot) + VARHDRSZ,
							layout->widths[i] - VARHDRSZ);
		else
			entry->values[i] = colindex_slot_value(layout, page, i, slot);
	}
}

/* Whether the slot at position of page (locked) is live and names tid. */
static bool
slot_names(const ColIndexLayout *layout, Page page, uint64 position, ItemPointer tid)
{
	int			slot = colindex_position_slot(position);

	return colindex_is_data_page(page) && slot < colindex_data_header(page)->high &&
		colindex_slot_live(layout, page, slot) &&
		ItemPointerEquals(colindex_slot_tid(layout, page, slot), tid);
}

/*
 * A second live entry, at position, for the TID of entry, read on an
 * earlier page.  With both pages locked (in block order), keep the one that
 * is still live with that TID, or forget the TID where neither is; both
 * are corruption.
 */
static void
recheck_duplicate(Relation index, const ColIndexLayout *layout, HTAB *entries,
				  CheckedEntry *entry, uint64 position)
{
	ItemPointerData tid = entry->tid;
	uint64		positions[2] = {entry->position, position};
	Buffer		bufs[2];
	bool		kept = false;

	Assert(colindex_position_block(positions[0]) < colindex_position_block(positions[1]));
	for (int i = 0; i < 2; i++)
	{
		bufs[i] = ReadBuffer(index, colindex_position_block(positions[i]));
		LockBuffer(bufs[i], BUFFER_LOCK_SHARE);
	}
	for (int i = 0; i < 2; i++)
	{
		Page		page = BufferGetPage(bufs[i]);

		if (!slot_names(layout, page, positions[i], &tid))
			continue;
		if (kept)
			report_corrupt(index, "Two live entries name the row", &tid);
		read_slot(entry, layout, page, positions[i]);
		kept = true;
	}
	for (int i = 0; i < 2; i++)
		UnlockReleaseBuffer(bufs[i]);
	if (!kept)
		hash_search(entries, &tid, HASH_REMOVE, NULL);
}

/*
 * Every live entry of the index, by TID.  Each page is copied under its
 * lock and read from the copy, so that no lock is held where a second
 * entry for a TID takes the check back to the pages of both.
 */
static HTAB *
read_entries(Relation index, const ColIndexLayout *layout)
{
	HASHCTL		ctl;
	HTAB	   *entries;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	PGAlignedBlock copy;
	Page		page = copy.data;

	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(CheckedEntry);
	ctl.hcxt = CurrentMemoryContext;
	entries = hash_create("gputopk index check", 1024, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
	{
		Buffer		buf = ReadBuffer(index, block);

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(page, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
		if (!colindex_is_data_page(page))
			continue;
		for (int slot = 0; slot < colindex_data_header(page)->high; slot++)
		{
			uint64		position = colindex_position(block, slot);
			CheckedEntry *entry;
			bool		found;

			if (!colindex_slot_live(layout, page, slot))
				continue;
			/* one copy of the page: the summary and the entry as they were together */
			if (!colindex_page_summary_covers(layout, page, slot))
				report_corrupt(index, "The summary of its index page leaves out the entry of the row",
							   colindex_slot_tid(layout, page, slot));
			entry = hash_search(entries, colindex_slot_tid(layout, page, slot), HASH_ENTER,
								&found);
			if (!found)
				read_slot(entry, layout, page, position);
			/* live together in one copy of the page */
			else if (colindex_position_block(entry->position) == block)
				report_corrupt(index, "Two live entries name the row", &entry->tid);
			else
				recheck_duplicate(index, layout, entries, entry, position);
		}
	}
	return entries;
}

/* Check the visible rows of one heap page against the entries. */
static uint64
check_page(Relation heap, Relation index, const ColIndexLayout *layout, HTAB *entries,
		   BlockNumber block, Snapshot snapshot)
{
	Buffer		buf = ReadBuffer(heap, block);
	Page		page = BufferGetPage(buf);
	TupleDesc	desc = RelationGetDescr(heap);
	OffsetNumber roots[MaxHeapTuplesPerPage];
	uint64		checked = 0;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	heap_get_root_tuples(page, roots);
	for (OffsetNumber off = FirstOffsetNumber; off <= PageGetMaxOffsetNumber(page); off++)
	{
		ItemId		item = PageGetItemId(page, off);
		HeapTupleData tuple;
		ItemPointerData root;
		CheckedEntry *entry;

		if (!ItemIdIsNormal(item))
			continue;
		tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
		tuple.t_len = ItemIdGetLength(item);
		tuple.t_tableOid = RelationGetRelid(heap);
		ItemPointerSet(&tuple.t_self, block, off);
		if (!HeapTupleSatisfiesVisibility(&tuple, snapshot, buf))
			continue;
		ItemPointerSet(&root, block, roots[off - 1]);
		entry = hash_search(entries, &root, HASH_FIND, NULL);
		if (entry == NULL)
			report_corrupt(index, "No live entry names the visible row", &tuple.t_self);
		for (int i = 0; i < layout->ncolumns; i++)
		{
			bool		isnull;
			Datum		value = heap_getattr(&tuple, index->rd_index->indkey.values[i],
											 desc, &isnull);

			if (isnull != entry->isnull[i] ||
				(!isnull && !value_matches(index, layout, i, value, entry->values[i])))
				report_corrupt(index, "An entry's values differ from those of the row",
							   &tuple.t_self);
		}
		checked++;
	}
	UnlockReleaseBuffer(buf);
	return checked;
}

/*
 * Raise an error unless relid is a column index: no such relation, a
 * partitioned one (whose partitions hold the entries), or another kind.
 */
static void
refuse_other_relation(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	char	   *name;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation with OID %u does not exist", relid)));
	form = (Form_pg_class) GETSTRUCT(tuple);
	name = pstrdup(NameStr(form->relname));
	if (form->relam != colindex_am_oid() ||
		(form->relkind != RELKIND_INDEX && form->relkind != RELKIND_PARTITIONED_INDEX))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gputopk index", name)));
	if (form->relkind == RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot check partitioned index \"%s\"", name),
				 errdetail("A partitioned index holds no entries; the index of each partition holds its own."),
				 errhint("Check each partition's index: SELECT gputopk_index_check(relid) FROM pg_partition_tree(%s) WHERE isleaf;",
						 quote_literal_cstr(quote_qualified_identifier(get_namespace_name(form->relnamespace),
																	   name)))));
	ReleaseSysCache(tuple);
}

/*
 * Raise an error for a table or index the check cannot read or judge.  A
 * standby has no data of unlogged tables (only their empty init forks).
 */
static void
refuse_uncheckable(Relation heap, Relation index)
{
	if (RELATION_IS_OTHER_TEMP(heap))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions")));
	if (RecoveryInProgress() && !RelationIsPermanent(heap))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary or unlogged relations during recovery")));
	if (heap->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gputopk_index_check reads heap tables only")));
	/* left by a failed CREATE INDEX CONCURRENTLY, it may lack entries */
	if (!index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot check invalid index \"%s\"",
						RelationGetRelationName(index)),
				 errdetail("An invalid index, like one left by a failed CREATE INDEX CONCURRENTLY, may lack the entries of some rows."),
				 errhint("Build it again with REINDEX INDEX, or drop it and create it again.")));
}

Datum
gputopk_index_check(PG_FUNCTION_ARGS)
{
	Oid			index_oid = PG_GETARG_OID(0);
	Relation	heap;
	Relation	index;
	Snapshot	snapshot;
	const ColIndexLayout *layout;
	HTAB	   *entries;
	BlockNumber nblocks;
	uint64		checked = 0;

	refuse_other_relation(index_oid);
	heap = table_open(IndexGetRelation(index_oid, false), AccessShareLock);
	index = index_open(index_oid, AccessShareLock);
	refuse_uncheckable(heap, index);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	layout = colindex_layout(index);
	entries = read_entries(index, layout);
	nblocks = RelationGetNumberOfBlocks(heap);
	for (BlockNumber block = 0; block < nblocks; block++)
	{
		CHECK_FOR_INTERRUPTS();
		checked += check_page(heap, index, layout, entries, block, snapshot);
	}
	UnregisterSnapshot(snapshot);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_INT64((int64) checked);
}
