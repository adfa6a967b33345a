/*-------------------------------------------------------------------------
 *
 * colindex_page.c
 *	  The column index's pages: their layout, and entries added to, moved
 *	  between and freed from a page; the callers WAL-log the changes with
 *	  generic WAL records (colindex_build.c, colindex_insert.c,
 *	  colindex_vacuum.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "page_bounds.h"
#include "pgvector_catalog.h"
#include "scan_filter_program.h"

/*
 * The bytes of a value of a supported type, or 0: a vector column's
 * dimensions are its typmod (the build refuses those too wide for a page).
 */
static int
value_width(Oid type, int32 typmod)
{
	VectorElement element;

	if (pgvector_type_element(type, &element))
		return typmod > 0 && typmod <= BLCKSZ ? pgvector_value_bytes(element, typmod) : 0;
	switch (type)
	{
		case BOOLOID:
			return 1;
		case INT2OID:
			return 2;
		case INT4OID:
		case FLOAT4OID:
		case DATEOID:
		case TEXTOID:			/* a dictionary code */
		case VARCHAROID:
			return 4;
		case INT8OID:
		case FLOAT8OID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return 8;
		default:
			return 0;
	}
}

bool
colindex_type_supported(Oid type, int32 typmod)
{
	return value_width(type, typmod) > 0;
}

/* Whether a column of the type stores codes of the dictionary. */
bool
colindex_type_is_text(Oid type)
{
	return type == TEXTOID || type == VARCHAROID;
}

/* Lay out a page of capacity slots; returns the bytes it needs. */
static Size
lay_out(ColIndexLayout *layout, int capacity)
{
	Size		bitmap = (capacity + 7) / 8;
	Size		at = MAXALIGN(SizeOfPageHeaderData) + MAXALIGN(sizeof(ColIndexDataHeader));

	layout->capacity = capacity;
	if (layout->summary_offset != 0)
	{
		layout->summary_offset = at;
		at += MAXALIGN(PAGE_SUMMARY_BYTES(layout->ncolumns));
	}
	layout->live_offset = at;
	at += bitmap;
	layout->killed_offset = at;
	at += bitmap;
	at = SHORTALIGN(at);
	layout->tid_offset = at;
	at += capacity * sizeof(ItemPointerData);
	for (int i = 0; i < layout->ncolumns; i++)
	{
		layout->null_offsets[i] = at;
		at += bitmap;
		/* a vector's floats at a multiple of 4 in every slot: its width is one */
		at = layout->vectors[i] ? INTALIGN(at) : TYPEALIGN(layout->widths[i], at);
		layout->value_offsets[i] = at;
		at += capacity * layout->widths[i];
	}
	return at;
}

/*
 * The layout of a data page for the columns, in the pages of version:
 * as many slots as fit.
 */
void
colindex_compute_layout(ColIndexLayout *layout, int ncolumns, const Oid *types,
						const int32 *typmods, int version)
{
	VectorElement element;

	Size		room = BLCKSZ - MAXALIGN(sizeof(ColIndexPageOpaque));
	Size		entry = sizeof(ItemPointerData);
	int			capacity;

	layout->ncolumns = ncolumns;
	/* lay_out places the summary where this is not 0 */
	layout->summary_offset = version >= 3 ? 1 : 0;
	for (int i = 0; i < ncolumns; i++)
	{
		layout->types[i] = types[i];
		layout->typmods[i] = typmods[i];
		layout->vectors[i] = pgvector_type_element(types[i], &element);
		layout->widths[i] = value_width(types[i], typmods[i]);
		entry += layout->widths[i];
	}
	/* an estimate from the bytes per entry, then down until it fits */
	capacity = Min(room / entry, COLINDEX_MAX_SLOTS);
	while (lay_out(layout, capacity) > room)
		capacity--;
}

/* The layout of an index, read from its metapage once and kept in its relcache entry. */
const ColIndexLayout *
colindex_layout(Relation index)
{
	if (index->rd_amcache == NULL)
	{
		Buffer		buf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);
		ColIndexMeta *meta;
		ColIndexLayout *layout;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		meta = (ColIndexMeta *) PageGetContents(BufferGetPage(buf));
		if (meta->magic != COLINDEX_MAGIC || meta->version < COLINDEX_OLDEST_VERSION ||
			meta->version > COLINDEX_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" is not a gputopk index of version %d or %d",
							RelationGetRelationName(index), COLINDEX_OLDEST_VERSION,
							COLINDEX_VERSION),
					 errhint("An index made by an earlier version of gputopk must be rebuilt with REINDEX.")));
		layout = MemoryContextAlloc(index->rd_indexcxt, sizeof(ColIndexLayout));
		colindex_compute_layout(layout, meta->ncolumns, meta->types, meta->typmods,
								meta->version);
		layout->dict_id = meta->dict_id;
		UnlockReleaseBuffer(buf);
		index->rd_amcache = layout;
	}
	return index->rd_amcache;
}

static void
init_page(Page page, uint16 kind)
{
	ColIndexPageOpaque *opaque;

	PageInit(page, BLCKSZ, sizeof(ColIndexPageOpaque));
	opaque = (ColIndexPageOpaque *) PageGetSpecialPointer(page);
	opaque->kind = kind;
	opaque->page_id = COLINDEX_PAGE_ID;
}

void
colindex_init_meta_page(Page page, const ColIndexLayout *layout)
{
	ColIndexMeta *meta;

	init_page(page, COLINDEX_PAGE_META);
	meta = (ColIndexMeta *) PageGetContents(page);
	memset(meta, 0, sizeof(ColIndexMeta));
	meta->magic = COLINDEX_MAGIC;
	meta->version = COLINDEX_VERSION;
	meta->ncolumns = layout->ncolumns;
	meta->capacity = layout->capacity;
	meta->insert_block = InvalidBlockNumber;
	memcpy(meta->types, layout->types, sizeof(Oid) * layout->ncolumns);
	memcpy(meta->typmods, layout->typmods, sizeof(int32) * layout->ncolumns);
	meta->dict_head = InvalidBlockNumber;
	meta->dict_tail = InvalidBlockNumber;
	meta->dict_id = GetCurrentTimestamp();
	/* generic WAL leaves out what lies between pd_lower and pd_upper */
	((PageHeader) page)->pd_lower = (char *) meta + sizeof(ColIndexMeta) - (char *) page;
}

void
colindex_init_data_page(Page page, const ColIndexLayout *layout)
{
	init_page(page, COLINDEX_PAGE_DATA);
	memset(PageGetContents(page), 0, ((PageHeader) page)->pd_upper - SizeOfPageHeaderData);
	((PageHeader) page)->pd_lower = ((PageHeader) page)->pd_upper;
}

static void
set_bit(char *bits, int slot, bool on)
{
	uint8	   *byte = (uint8 *) bits + (slot >> 3);

	if (on)
		*byte |= 1 << (slot & 7);
	else
		*byte &= ~(1 << (slot & 7));
}

/*
 * A slot's column value as its page's summary keeps it (page_bounds.h); a
 * vector column's summary says only whether it holds NULLs and values.
 */
static uint64
summary_key(const ColIndexLayout *layout, Page page, int column, int slot)
{
	if (layout->vectors[column])
		return 0;
	return filter_value_key(scan_filter_value_kind(layout->types[column]),
							colindex_slot_value_pointer(layout, page, column, slot), false);
}

/* Widen the page's summary, if it has one, with the entry in slot. */
static void
summary_add(const ColIndexLayout *layout, Page page, int slot)
{
	char	   *summary = (char *) page + layout->summary_offset;

	if (layout->summary_offset == 0)
		return;
	for (int i = 0; i < layout->ncolumns; i++)
	{
		bool		isnull = colindex_slot_isnull(layout, page, i, slot);

		page_summary_add(summary, i, isnull, isnull ? 0 : summary_key(layout, page, i, slot));
	}
}

/*
 * Compute the page's summary again from the entries in use, after some
 * were freed; a summary is widened only by entries added, so this is what
 * tightens it.
 */
void
colindex_page_summarize(const ColIndexLayout *layout, Page page)
{
	if (layout->summary_offset == 0)
		return;
	page_summary_clear((char *) page + layout->summary_offset);
	for (int slot = 0; slot < colindex_data_header(page)->high; slot++)
		if (colindex_slot_live(layout, page, slot))
			summary_add(layout, page, slot);
}

/* Whether the page's summary covers the entry in slot (pages without one cover all). */
bool
colindex_page_summary_covers(const ColIndexLayout *layout, Page page, int slot)
{
	const char *summary = (const char *) page + layout->summary_offset;

	if (layout->summary_offset == 0)
		return true;
	for (int i = 0; i < layout->ncolumns; i++)
	{
		ValueRange	r = page_summary_range(summary, i);
		uint64		key;

		if (colindex_slot_isnull(layout, page, i, slot))
		{
			if (!r.may_null)
				return false;
			continue;
		}
		key = summary_key(layout, page, i, slot);
		if (!r.may_value || key < r.lo || key > r.hi)
			return false;
	}
	return true;
}

/* A free slot of the page, or -1. */
static int
free_slot(const ColIndexLayout *layout, Page page)
{
	ColIndexDataHeader *header = colindex_data_header(page);

	if (header->nlive < header->high)
		for (int slot = 0; slot < header->high; slot++)
			if (!colindex_slot_live(layout, page, slot))
				return slot;
	return header->high < layout->capacity ? header->high : -1;
}

/*
 * A vector value (not compressed or out of line) into its slot, with a
 * 4-byte header; the column's typmod fixes its dimensions.
 */
static void
store_vector(const ColIndexLayout *layout, int column, char *slot_value, Datum value)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(value);

	Assert(!VARATT_IS_EXTENDED(v) || VARATT_IS_SHORT(v));
	if (VARSIZE_ANY_EXHDR(v) != layout->widths[column] - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector of %d bytes does not fit a column of %d",
						(int) VARSIZE_ANY_EXHDR(v), layout->widths[column] - VARHDRSZ),
				 errdetail("A gputopk index stores the vectors of the dimensions its column's type names.")));
	SET_VARSIZE(slot_value, layout->widths[column]);
	memcpy(slot_value + VARHDRSZ, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
}

/* Add an entry to a data page; false when it is full. */
bool
colindex_page_add(const ColIndexLayout *layout, Page page, ItemPointer tid,
				  const Datum *values, const bool *isnull)
{
	ColIndexDataHeader *header = colindex_data_header(page);
	int			slot = free_slot(layout, page);

	if (slot < 0)
		return false;
	*colindex_slot_tid(layout, page, slot) = *tid;
	for (int i = 0; i < layout->ncolumns; i++)
	{
		char	   *value = (char *) page + layout->value_offsets[i] + slot * layout->widths[i];

		set_bit((char *) page + layout->null_offsets[i], slot, isnull[i]);
		if (isnull[i])
			memset(value, 0, layout->widths[i]);
		else if (layout->vectors[i])
			store_vector(layout, i, value, values[i]);
		else
			store_att_byval(value, values[i], layout->widths[i]);
	}
	set_bit((char *) page + layout->killed_offset, slot, false);
	set_bit((char *) page + layout->live_offset, slot, true);
	header->nlive++;
	if (slot == header->high)
		header->high++;
	summary_add(layout, page, slot);
	return true;
}

/*
 * A new block at the index's end, locked exclusively; the extension lock is
 * held only while the block is added.
 */
Buffer
colindex_page_new_block(Relation index)
{
	Buffer		buf;

	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/* Whether the page has a free slot. */
bool
colindex_page_has_room(const ColIndexLayout *layout, Page page)
{
	return free_slot(layout, page) >= 0;
}

void
colindex_page_free_slot(const ColIndexLayout *layout, Page page, int slot)
{
	ColIndexDataHeader *header = colindex_data_header(page);

	Assert(colindex_slot_live(layout, page, slot));
	set_bit((char *) page + layout->live_offset, slot, false);
	set_bit((char *) page + layout->killed_offset, slot, false);
	header->nlive--;
	/* the high-water mark comes down over freed slots at the end */
	while (header->high > 0 && !colindex_slot_live(layout, page, header->high - 1))
		header->high--;
}

/*
 * Move the entry in slot of src, with its dead mark, to a free slot of
 * dest; false when dest is full.
 */
bool
colindex_page_move(const ColIndexLayout *layout, Page dest, Page src, int slot)
{
	ColIndexDataHeader *header = colindex_data_header(dest);
	int			to = free_slot(layout, dest);

	if (to < 0)
		return false;
	*colindex_slot_tid(layout, dest, to) = *colindex_slot_tid(layout, src, slot);
	for (int i = 0; i < layout->ncolumns; i++)
	{
		set_bit((char *) dest + layout->null_offsets[i], to,
				colindex_slot_isnull(layout, src, i, slot));
		memcpy((char *) dest + layout->value_offsets[i] + to * layout->widths[i],
			   colindex_slot_value_pointer(layout, src, i, slot), layout->widths[i]);
	}
	set_bit((char *) dest + layout->killed_offset, to, colindex_slot_killed(layout, src, slot));
	set_bit((char *) dest + layout->live_offset, to, true);
	header->nlive++;
	if (to == header->high)
		header->high++;
	summary_add(layout, dest, to);
	colindex_page_free_slot(layout, src, slot);
	return true;
}

/* Mark an entry dead to everyone: a hint, set under a share lock. */
void
colindex_page_kill_slot(const ColIndexLayout *layout, Page page, int slot)
{
	set_bit((char *) page + layout->killed_offset, slot, true);
}

