/*-------------------------------------------------------------------------
 *
 * colindex_dict.c
 *	  The column index's dictionary: each distinct value of its text
 *	  columns gets an int4 code, which the data pages store.
 *
 * Codes are numbered from 1 in the order values first came, and never
 * change: the dictionary only grows, until REINDEX builds a new one.  Its
 * values are kept in dictionary pages, chained from the metapage's
 * dict_head, each value as a 2-byte length and its bytes; the metapage
 * counts them.  A value is added under an exclusive lock on the metapage,
 * in one generic WAL record with the page it goes to.
 *
 * The index decides text equality from codes exactly, as long as every
 * value ever stored has one: equality under a deterministic collation is
 * equality of bytes, so two values are equal if and only if their codes
 * are, and a constant the dictionary does not hold is held by no entry.
 * A value longer than COLINDEX_DICT_MAX_VALUE bytes, or one more than
 * COLINDEX_DICT_MAX_CODES values, makes the dictionary full: from then on
 * values it does not hold are stored as COLINDEX_DICT_OTHER, and the index
 * no longer checks clauses on its text columns (colindex_dict_full).  A
 * value committed before a query's snapshot was added before it, so the
 * query finds every code it can meet by reading the dictionary once.
 *
 * Each backend keeps the values it has read, by the index's relfilenode
 * and the dictionary's id (set when the metapage is made), and reads only
 * the values added since when it misses one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_dict.h"
#include "compat.h"


/* the head of a dictionary page's contents; the values follow */
typedef struct DictPageHeader
{
	BlockNumber next;			/* the next page, or InvalidBlockNumber */
	uint16		nvalues;
	uint16		used;			/* bytes of values */
} DictPageHeader;

#define DICT_PAGE_ROOM \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(DictPageHeader)) - \
	 MAXALIGN(sizeof(ColIndexPageOpaque)))

/* a backend's copy of an index's dictionary */
typedef struct Dict
{
	RelFileLocator node;			/* the hash key */
	int64		id;				/* the metapage's dict_id: a relfilenode may be used again */
	MemoryContext cxt;
	uint32		count;			/* codes read: 1 to count */
	char	  **values;			/* by code: a 2-byte length, then the bytes */
	uint32		allocated;
	uint32	   *table;			/* open addressing: a code, or 0 for none */
	uint32		table_size;		/* a power of 2, at least twice count */
	BlockNumber page;			/* where reading goes on: a page, and its values read */
	uint16		page_values;
	bool		full;
} Dict;

static HTAB *dicts = NULL;

static inline uint16
value_length(const char *value)
{
	uint16		length;

	memcpy(&length, value, sizeof(length));
	return length;
}

static inline uint32
value_hash(const char *bytes, int length)
{
	return hash_bytes((const unsigned char *) bytes, length);
}

/* The slot of the value's code in the table, or of the empty slot it would go to. */
static uint32
table_slot(const Dict *dict, const char *bytes, int length)
{
	uint32		mask = dict->table_size - 1;
	uint32		slot = value_hash(bytes, length) & mask;

	for (;; slot = (slot + 1) & mask)
	{
		uint32		code = dict->table[slot];
		const char *value;

		if (code == 0)
			return slot;
		value = dict->values[code];
		if (value_length(value) == length &&
			memcmp(value + sizeof(uint16), bytes, length) == 0)
			return slot;
	}
}

/* Take a value read from a page as the next code. */
static void
remember(Dict *dict, const char *value)
{
	uint16		length = value_length(value);
	char	   *copy;

	if (dict->count + 1 >= dict->allocated)
	{
		dict->allocated *= 2;
		dict->values = repalloc(dict->values, sizeof(char *) * dict->allocated);
	}
	if (2 * (dict->count + 1) > dict->table_size)
	{
		uint32	   *old = dict->table;
		uint32		old_size = dict->table_size;

		dict->table_size *= 2;
		dict->table = MemoryContextAllocZero(dict->cxt, sizeof(uint32) * dict->table_size);
		for (uint32 i = 0; i < old_size; i++)
			if (old[i] != 0)
			{
				const char *v = dict->values[old[i]];

				dict->table[table_slot(dict, v + sizeof(uint16), value_length(v))] = old[i];
			}
		pfree(old);
	}
	copy = MemoryContextAlloc(dict->cxt, sizeof(uint16) + length);
	memcpy(copy, value, sizeof(uint16) + length);
	dict->values[++dict->count] = copy;
	dict->table[table_slot(dict, value + sizeof(uint16), length)] = dict->count;
}

/* This backend's copy of the index's dictionary, maybe not read yet. */
static Dict *
dict_of(Relation index)
{
	int64		id = colindex_layout(index)->dict_id;
	Dict	   *dict;
	bool		found;

	if (dicts == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(RelFileLocator),.entrysize = sizeof(Dict)};

		dicts = hash_create("gputopk index dictionaries", 16, &ctl, HASH_ELEM | HASH_BLOBS);
	}
	dict = hash_search(dicts, &compat_rel_locator(index), HASH_ENTER, &found);
	if (found && dict->id != id)
	{
		MemoryContextDelete(dict->cxt);
		found = false;
	}
	if (!found)
	{
		dict->id = id;
		dict->cxt = AllocSetContextCreate(TopMemoryContext, "gputopk index dictionary",
										  ALLOCSET_DEFAULT_SIZES);
		dict->count = 0;
		dict->allocated = 64;
		dict->values = MemoryContextAlloc(dict->cxt, sizeof(char *) * dict->allocated);
		dict->table_size = 128;
		dict->table = MemoryContextAllocZero(dict->cxt, sizeof(uint32) * dict->table_size);
		dict->page = InvalidBlockNumber;
		dict->page_values = 0;
		dict->full = false;
	}
	return dict;
}

/*
 * Read the values added since this backend last read them; the caller
 * holds a lock on the metapage, whose contents are meta.
 */
static void
read_new_values(Relation index, Dict *dict, const ColIndexMeta *meta)
{
	dict->full = meta->dict_full;
	if (dict->count == meta->dict_count)
		return;
	if (dict->page == InvalidBlockNumber)
	{
		dict->page = meta->dict_head;
		dict->page_values = 0;
	}
	while (dict->count < meta->dict_count)
	{
		Buffer		buf = ReadBuffer(index, dict->page);
		Page		page;
		DictPageHeader *header;
		const char *value;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		header = (DictPageHeader *) PageGetContents(page);
		value = (const char *) header + MAXALIGN(sizeof(DictPageHeader));
		for (int i = 0; i < header->nvalues; i++)
		{
			if (i >= dict->page_values)
				remember(dict, value);
			value += sizeof(uint16) + value_length(value);
		}
		dict->page_values = header->nvalues;
		if (dict->count < meta->dict_count)
		{
			if (header->next == InvalidBlockNumber)
				elog(ERROR, "the dictionary of index \"%s\" ends before its %u values",
					 RelationGetRelationName(index), meta->dict_count);
			dict->page = header->next;
			dict->page_values = 0;
		}
		UnlockReleaseBuffer(buf);
	}
}

/* Bring the copy up to date, under a share lock on the metapage. */
static void
refresh(Relation index, Dict *dict)
{
	Buffer		metabuf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	read_new_values(index, dict, (ColIndexMeta *) PageGetContents(BufferGetPage(metabuf)));
	UnlockReleaseBuffer(metabuf);
}

static int32
find(const Dict *dict, const char *bytes, int length)
{
	return (int32) dict->table[table_slot(dict, bytes, length)];
}

static void
init_dict_page(Page page)
{
	ColIndexPageOpaque *opaque;
	DictPageHeader *header;

	PageInit(page, BLCKSZ, sizeof(ColIndexPageOpaque));
	opaque = (ColIndexPageOpaque *) PageGetSpecialPointer(page);
	opaque->kind = COLINDEX_PAGE_DICT;
	opaque->page_id = COLINDEX_PAGE_ID;
	header = (DictPageHeader *) PageGetContents(page);
	header->next = InvalidBlockNumber;
	header->nvalues = 0;
	header->used = 0;
	((PageHeader) page)->pd_lower = (char *) header + MAXALIGN(sizeof(DictPageHeader)) -
		(char *) page;
}

/* Append the value to the page if it has room; pd_lower follows the values, for generic WAL. */
static bool
append_to_page(Page page, const char *bytes, int length)
{
	DictPageHeader *header = (DictPageHeader *) PageGetContents(page);
	char	   *at = (char *) header + MAXALIGN(sizeof(DictPageHeader)) + header->used;
	uint16		length16 = length;

	if (header->used + sizeof(uint16) + length > DICT_PAGE_ROOM)
		return false;
	memcpy(at, &length16, sizeof(uint16));
	memcpy(at + sizeof(uint16), bytes, length);
	header->used += sizeof(uint16) + length;
	header->nvalues++;
	((PageHeader) page)->pd_lower = at + sizeof(uint16) + length - (char *) page;
	return true;
}

/*
 * Add the value under the exclusive lock on the metapage (in metabuf), or
 * mark the dictionary full when it cannot take it.
 */
static void
add_locked(Relation index, Buffer metabuf, const char *bytes, int length)
{
	GenericXLogState *xlog = GenericXLogStart(index);
	ColIndexMeta *meta = (ColIndexMeta *) PageGetContents(GenericXLogRegisterBuffer(xlog, metabuf, 0));
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	Page		tail = NULL;

	if (length > COLINDEX_DICT_MAX_VALUE || meta->dict_count >= COLINDEX_DICT_MAX_CODES)
	{
		meta->dict_full = true;
		GenericXLogFinish(xlog);
		return;
	}
	if (meta->dict_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->dict_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tail = GenericXLogRegisterBuffer(xlog, tailbuf, 0);
	}
	if (tail == NULL || !append_to_page(tail, bytes, length))
	{
		Page		page;

		newbuf = colindex_page_new_block(index);
		page = GenericXLogRegisterBuffer(xlog, newbuf, GENERIC_XLOG_FULL_IMAGE);
		init_dict_page(page);
		if (!append_to_page(page, bytes, length))
			elog(ERROR, "a dictionary value does not fit in an empty page");
		if (tail != NULL)
			((DictPageHeader *) PageGetContents(tail))->next = BufferGetBlockNumber(newbuf);
		else
			meta->dict_head = BufferGetBlockNumber(newbuf);
		meta->dict_tail = BufferGetBlockNumber(newbuf);
	}
	meta->dict_count++;
	GenericXLogFinish(xlog);
	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
}

/*
 * The code of a value to store: the dictionary's, added if it is new, or
 * COLINDEX_DICT_OTHER once the dictionary is full.
 */
int32
colindex_dict_add(Relation index, const char *bytes, int length)
{
	Dict	   *dict = dict_of(index);
	int32		code = find(dict, bytes, length);
	Buffer		metabuf;

	if (code > 0)
		return code;
	refresh(index, dict);
	if ((code = find(dict, bytes, length)) > 0 || dict->full)
		return Max(code, COLINDEX_DICT_OTHER);

	/* another backend may add it meanwhile: looked up again under the lock */
	metabuf = ReadBuffer(index, COLINDEX_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	read_new_values(index, dict, (ColIndexMeta *) PageGetContents(BufferGetPage(metabuf)));
	code = find(dict, bytes, length);
	if (code == 0 && !dict->full)
	{
		add_locked(index, metabuf, bytes, length);
		read_new_values(index, dict, (ColIndexMeta *) PageGetContents(BufferGetPage(metabuf)));
		code = find(dict, bytes, length);
	}
	UnlockReleaseBuffer(metabuf);
	return code > 0 ? code : COLINDEX_DICT_OTHER;
}

/* The code of a value, or COLINDEX_DICT_ABSENT where no entry holds it. */
int32
colindex_dict_code(Relation index, const char *bytes, int length)
{
	Dict	   *dict = dict_of(index);
	int32		code = find(dict, bytes, length);

	if (code > 0)
		return code;
	refresh(index, dict);
	code = find(dict, bytes, length);
	return code > 0 ? code : COLINDEX_DICT_ABSENT;
}

/* The value of a code, as its bytes; false for a code the dictionary does not have. */
bool
colindex_dict_value(Relation index, int32 code, const char **bytes, int *length)
{
	Dict	   *dict = dict_of(index);

	if (code <= 0)
		return false;
	if ((uint32) code > dict->count)
		refresh(index, dict);
	if ((uint32) code > dict->count)
		return false;
	*length = value_length(dict->values[code]);
	*bytes = dict->values[code] + sizeof(uint16);
	return true;
}

/* Whether the dictionary is full, so that codes no longer decide equality. */
bool
colindex_dict_full(Relation index)
{
	Dict	   *dict = dict_of(index);

	refresh(index, dict);
	return dict->full;
}
