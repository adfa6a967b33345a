/*-------------------------------------------------------------------------
 *
 * colindex_insert.c
 *	  Inserting into a column index: a row's entry, WAL-logged.
 *
 * An insert goes to the metapage's insert block while it has a free slot;
 * then to a page the free space map names (pages where VACUUM freed
 * slots); then to a new page, which becomes the insert block.  Data pages
 * are locked only after the metapage is unlocked, or while it is locked
 * exclusively to extend the index, so two inserts cannot deadlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "fmgr.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_dict.h"

/* The block inserts try first, in the metapage. */
void
colindex_insert_set_block(Relation index, BlockNumber insert_block)
{
	Buffer		buf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);
	GenericXLogState *xlog;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	xlog = GenericXLogStart(index);
	((ColIndexMeta *) PageGetContents(GenericXLogRegisterBuffer(xlog, buf, 0)))->insert_block =
		insert_block;
	GenericXLogFinish(xlog);
	UnlockReleaseBuffer(buf);
}

/* Add the entry to the page in buf (locked exclusively) if it has room. */
static bool
add_logged(Relation index, const ColIndexLayout *layout, Buffer buf, ItemPointer tid,
		   const Datum *values, const bool *isnull)
{
	GenericXLogState *state = GenericXLogStart(index);
	Page		page = GenericXLogRegisterBuffer(state, buf, 0);

	if (colindex_is_data_page(page) &&
		colindex_page_add(layout, page, tid, values, isnull))
	{
		GenericXLogFinish(state);
		colindex_changes_note(index, BufferGetBlockNumber(buf));
		return true;
	}
	GenericXLogAbort(state);
	return false;
}

/*
 * Add the entry to the block if it has room; a page from the free space
 * map that still has room goes back into it.
 */
static bool
add_to_block(Relation index, const ColIndexLayout *layout, BlockNumber block,
			 bool from_fsm, ItemPointer tid, const Datum *values, const bool *isnull)
{
	Buffer		buf = ReadBuffer(index, block);
	bool		added;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	added = add_logged(index, layout, buf, tid, values, isnull);
	if (added && from_fsm && colindex_page_has_room(layout, BufferGetPage(buf)))
		RecordFreeIndexPage(index, block);
	UnlockReleaseBuffer(buf);
	return added;
}

/* Add an entry: to the insert block, a page with free slots, or a new page. */
static void
insert_entry(Relation index, ItemPointer tid, const Datum *values, const bool *isnull)
{
	const ColIndexLayout *layout = colindex_layout(index);
	Buffer		metabuf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);
	ColIndexMeta *meta = (ColIndexMeta *) PageGetContents(BufferGetPage(metabuf));
	BlockNumber tried;
	BlockNumber block;
	Buffer		buf;
	GenericXLogState *state;
	Page		page;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	tried = meta->insert_block;
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	if (tried != InvalidBlockNumber &&
		add_to_block(index, layout, tried, false, tid, values, isnull))
	{
		ReleaseBuffer(metabuf);
		return;
	}
	while ((block = GetFreeIndexPage(index)) != InvalidBlockNumber)
		if (add_to_block(index, layout, block, true, tid, values, isnull))
		{
			ReleaseBuffer(metabuf);
			return;
		}

	/* a new page, unless another insert has made one meanwhile */
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	if (meta->insert_block != InvalidBlockNumber && meta->insert_block != tried &&
		add_to_block(index, layout, meta->insert_block, false, tid, values, isnull))
	{
		UnlockReleaseBuffer(metabuf);
		return;
	}
	buf = colindex_page_new_block(index);

	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
	colindex_init_data_page(page, layout);
	if (!colindex_page_add(layout, page, tid, values, isnull))
		elog(ERROR, "could not add an entry to a new page of index \"%s\"",
			 RelationGetRelationName(index));
	meta = (ColIndexMeta *) PageGetContents(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->insert_block = BufferGetBlockNumber(buf);
	GenericXLogFinish(state);
	colindex_changes_note(index, BufferGetBlockNumber(buf));
	UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(metabuf);
}

/*
 * A row's values as the index stores them (colindex_page_add): a text
 * column's as its dictionary code (added if new), a vector column's
 * detoasted, the others as they are.
 */
void
colindex_insert_stored_values(Relation index, const ColIndexLayout *layout,
							  const Datum *values, const bool *isnull, Datum *stored)
{
	for (int i = 0; i < layout->ncolumns; i++)
	{
		struct varlena *value;

		stored[i] = values[i];
		if (isnull[i])
			continue;
		if (layout->vectors[i])
			stored[i] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[i]));
		else if (colindex_type_is_text(layout->types[i]))
		{
			value = PG_DETOAST_DATUM_PACKED(values[i]);
			stored[i] = Int32GetDatum(colindex_dict_add(index, VARDATA_ANY(value),
														VARSIZE_ANY_EXHDR(value)));
			if ((Pointer) value != DatumGetPointer(values[i]))
				pfree(value);
		}
	}
}

/*
 * Free what colindex_insert_stored_values detoasted, once the entry is
 * made: the build's and the executor's callers call these in memory that
 * lives as long as the statement.
 */
void
colindex_insert_free_stored(const ColIndexLayout *layout, const Datum *values,
							const bool *isnull, const Datum *stored)
{
	for (int i = 0; i < layout->ncolumns; i++)
		if (!isnull[i] && layout->vectors[i] && stored[i] != values[i])
			pfree(DatumGetPointer(stored[i]));
}

/* aminsert: the row's entry, as colindex_insert_stored_values gives it. */
bool
colindex_insert(Relation index, Datum *values, bool *isnull, ItemPointer tid,
				Relation heap, IndexUniqueCheck check_unique, bool unchanged,
				IndexInfo *info)
{
	const ColIndexLayout *layout = colindex_layout(index);
	Datum		stored[INDEX_MAX_KEYS];

	colindex_insert_stored_values(index, layout, values, isnull, stored);
	insert_entry(index, tid, stored, isnull);
	colindex_insert_free_stored(layout, values, isnull, stored);
	return false;
}
