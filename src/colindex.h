/*-------------------------------------------------------------------------
 *
 * colindex.h
 *	  The gputopk column index (CREATE INDEX ... USING gputopk): its pages
 *	  and the functions that read and write them.
 *
 * Block 0 is the metapage: the columns' types, the entries a data page
 * holds, the page inserts try first, and the state of the dictionary.
 * Other blocks are data pages of columnar slots: a bitmap of the slots in
 * use, a bitmap of the entries found dead to every transaction (a hint, as
 * btree's LP_DEAD), the heap TIDs, and per column a null bitmap and an
 * array of fixed-width values, each at an offset that follows from the
 * columns alone (ColIndexLayout).  A column of pgvector's vector or halfvec
 * type, its dimensions fixed by its typmod, stores each value whole, with
 * a 4-byte varlena header (so every value of the column has one width).  A text column stores int4 codes of the
 * index's dictionary, whose values are kept in dictionary pages among the
 * data pages (colindex_dict.c).  From version 3 a data page also keeps a
 * summary of its columns (kernels/page_bounds.h): whether each holds NULLs
 * and values, and the least and greatest value, which scans use to skip
 * the page.
 *
 * An entry does not move while the index is open elsewhere: an insert
 * takes a free slot, VACUUM frees the slots of dead entries.  So a scan may
 * name an entry by its block and slot (colindex_position) and find it
 * again later: if its slot has been freed and taken since, the new entry's
 * row is one the scan's snapshot cannot see (see docs/column-index.md).
 * Only VACUUM moves entries, to compact the index, when it can lock the
 * index exclusively.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_H
#define COLINDEX_H

#include "access/amapi.h"
#include "access/itup.h"
#include "nodes/execnodes.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

#define COLINDEX_AM_NAME "gputopk"
#define COLINDEX_MAGIC 0x47544b49	/* "GTKI" */
#define COLINDEX_VERSION 3
/* the oldest version read: its data pages have no summaries */
#define COLINDEX_OLDEST_VERSION 2
#define COLINDEX_METAPAGE_BLKNO 0

/* a slot's number fits in a position's low bits */
#define COLINDEX_SLOT_BITS 12
#define COLINDEX_MAX_SLOTS ((1 << COLINDEX_SLOT_BITS) - 1)

/* page kinds, in the special space */
#define COLINDEX_PAGE_META 1
#define COLINDEX_PAGE_DATA 2
#define COLINDEX_PAGE_DICT 3

typedef struct ColIndexPageOpaque
{
	uint16		kind;
	uint16		page_id;		/* COLINDEX_PAGE_ID, for tools that read pages */
} ColIndexPageOpaque;

#define COLINDEX_PAGE_ID 0xFF8A

typedef struct ColIndexMeta
{
	uint32		magic;
	uint32		version;
	uint16		ncolumns;
	uint16		capacity;		/* slots of a data page */
	BlockNumber insert_block;	/* tried first by inserts, or InvalidBlockNumber */
	Oid			types[INDEX_MAX_KEYS];
	/* the dictionary of the text columns: codes 1 to dict_count */
	uint32		dict_count;
	bool		dict_full;		/* it took no more values: some are stored as 0 */
	BlockNumber dict_head;		/* its first page, or InvalidBlockNumber */
	BlockNumber dict_tail;		/* the page it adds to */
	int64		dict_id;		/* when the metapage was made: tells dictionaries apart */
	/* the columns' typmods: a vector column's dimensions (0 in older indexes) */
	int32		typmods[INDEX_MAX_KEYS];
} ColIndexMeta;

/* the head of a data page's contents */
typedef struct ColIndexDataHeader
{
	uint16		high;			/* slots at and above are unused */
	uint16		nlive;			/* slots in use */
} ColIndexDataHeader;

/* where things are on a data page; the same for every page of an index */
typedef struct ColIndexLayout
{
	int			ncolumns;
	int			capacity;
	Oid			types[INDEX_MAX_KEYS];
	int32		typmods[INDEX_MAX_KEYS];
	int16		widths[INDEX_MAX_KEYS];
	bool		vectors[INDEX_MAX_KEYS];	/* a pgvector value (colindex.h's head) */
	uint16		live_offset;	/* bitmaps, from the start of the page */
	uint16		killed_offset;
	uint16		summary_offset; /* a data page's summary, or 0 (version 2) */
	uint16		tid_offset;
	uint16		null_offsets[INDEX_MAX_KEYS];
	uint16		value_offsets[INDEX_MAX_KEYS];
	int64		dict_id;		/* the metapage's */
} ColIndexLayout;

#define COLINDEX_BIT(bits, slot) (((const uint8 *) (bits))[(slot) >> 3] & (1 << ((slot) & 7)))

static inline bool
colindex_slot_live(const ColIndexLayout *layout, Page page, int slot)
{
	return COLINDEX_BIT((char *) page + layout->live_offset, slot) != 0;
}

static inline bool
colindex_slot_killed(const ColIndexLayout *layout, Page page, int slot)
{
	return COLINDEX_BIT((char *) page + layout->killed_offset, slot) != 0;
}

static inline ItemPointer
colindex_slot_tid(const ColIndexLayout *layout, Page page, int slot)
{
	return (ItemPointer) ((char *) page + layout->tid_offset) + slot;
}

static inline bool
colindex_slot_isnull(const ColIndexLayout *layout, Page page, int column, int slot)
{
	return COLINDEX_BIT((char *) page + layout->null_offsets[column], slot) != 0;
}

/* where a slot's value of the column is stored */
static inline const char *
colindex_slot_value_pointer(const ColIndexLayout *layout, Page page, int column, int slot)
{
	return (char *) page + layout->value_offsets[column] + slot * layout->widths[column];
}

/* the column's value of a slot whose value is not NULL (a vector's: in the page) */
static inline Datum
colindex_slot_value(const ColIndexLayout *layout, Page page, int column, int slot)
{
	if (layout->vectors[column])
		return PointerGetDatum(colindex_slot_value_pointer(layout, page, column, slot));
	return fetch_att(colindex_slot_value_pointer(layout, page, column, slot), true,
					 layout->widths[column]);
}

static inline ColIndexDataHeader *
colindex_data_header(Page page)
{
	return (ColIndexDataHeader *) PageGetContents(page);
}

static inline bool
colindex_is_data_page(Page page)
{
	return !PageIsNew(page) &&
		((ColIndexPageOpaque *) PageGetSpecialPointer(page))->kind == COLINDEX_PAGE_DATA;
}

/* the index column that holds the table's column attno (attnos: each index column's), or -1 */
static inline int
colindex_column_of(const ColIndexLayout *layout, const AttrNumber *attnos, AttrNumber attno)
{
	for (int i = 0; i < layout->ncolumns; i++)
		if (attnos[i] == attno)
			return i;
	return -1;
}

/* an entry's block and slot as one number, and back */
static inline uint64
colindex_position(BlockNumber block, int slot)
{
	return ((uint64) block << COLINDEX_SLOT_BITS) | (uint64) slot;
}

static inline BlockNumber
colindex_position_block(uint64 position)
{
	return (BlockNumber) (position >> COLINDEX_SLOT_BITS);
}

static inline int
colindex_position_slot(uint64 position)
{
	return (int) (position & COLINDEX_MAX_SLOTS);
}

/* colindex_page.c: the pages */
extern bool colindex_type_supported(Oid type, int32 typmod);
extern bool colindex_type_is_text(Oid type);
extern void colindex_compute_layout(ColIndexLayout *layout, int ncolumns, const Oid *types,
									const int32 *typmods, int version);
extern const ColIndexLayout *colindex_layout(Relation index);
extern void colindex_init_meta_page(Page page, const ColIndexLayout *layout);
extern void colindex_init_data_page(Page page, const ColIndexLayout *layout);
extern bool colindex_page_add(const ColIndexLayout *layout, Page page, ItemPointer tid,
							  const Datum *values, const bool *isnull);
extern void colindex_page_free_slot(const ColIndexLayout *layout, Page page, int slot);
extern bool colindex_page_move(const ColIndexLayout *layout, Page dest, Page src, int slot);
extern void colindex_page_kill_slot(const ColIndexLayout *layout, Page page, int slot);
extern void colindex_page_summarize(const ColIndexLayout *layout, Page page);
extern bool colindex_page_summary_covers(const ColIndexLayout *layout, Page page, int slot);
extern bool colindex_page_has_room(const ColIndexLayout *layout, Page page);
extern Buffer colindex_page_new_block(Relation index);

/* colindex_am.c: the access method */
extern Oid	colindex_am_oid(void);

/* its callbacks: colindex_build.c, colindex_insert.c, colindex_vacuum.c */
extern IndexBuildResult *colindex_build(Relation heap, Relation index, IndexInfo *info);
extern void colindex_build_empty(Relation index);
extern bool colindex_insert(Relation index, Datum *values, bool *isnull, ItemPointer tid,
							Relation heap, IndexUniqueCheck check_unique, bool unchanged,
							IndexInfo *info);
extern void colindex_insert_set_block(Relation index, BlockNumber insert_block);
extern void colindex_insert_stored_values(Relation index, const ColIndexLayout *layout,
										  const Datum *values, const bool *isnull,
										  Datum *stored);
extern void colindex_insert_free_stored(const ColIndexLayout *layout, const Datum *values,
										const bool *isnull, const Datum *stored);
extern IndexBulkDeleteResult *colindex_bulk_delete(IndexVacuumInfo *info,
												   IndexBulkDeleteResult *stats,
												   IndexBulkDeleteCallback callback,
												   void *callback_state);
extern IndexBulkDeleteResult *colindex_vacuum_cleanup(IndexVacuumInfo *info,
													  IndexBulkDeleteResult *stats);

#endif							/* COLINDEX_H */
