/*-------------------------------------------------------------------------
 *
 * groups_table.c
 *	  A set of GpuTopKGroups's groups: the hash table, a page's rows or
 *	  another process's records into it, its groups out as records, the
 *	  groups chosen and their tuples.
 *
 * Groups live in a hash table keyed by the grouping column's Datum (the
 * types passed by value the planner accepts have the equality of that
 * word), or for text and varchar under a deterministic collation by the
 * value's bytes (their equality then), the value copied once per group;
 * the NULL group has its own place.  Each
 * group has a number, in order of appearance; its grouping value and its
 * aggregates' cells (groups_aggs.c) are in arrays by that number, grown as
 * groups come.
 *
 * Once the set's rows are in, the groups are chosen by the first ORDER BY
 * key, an aggregate or a grouping column: a binary heap of the best LIMIT + OFFSET so far,
 * worst on top, finds the last one kept; then every group at least as good
 * as that one is returned, ties included, in no order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "groups_scan.h"
#include "groups_state.h"
#include "scan_datum_key.h"

/* The hash of a grouping value's Datum: integers' Datums are not random. */
static inline uint32
hash_group(uint64 group)
{
	return hash_combine(murmurhash32((uint32) group), murmurhash32((uint32) (group >> 32)));
}

#define SH_PREFIX groups_table
#define SH_ELEMENT_TYPE GroupSlot
#define SH_KEY_TYPE uint64
#define SH_KEY group
#define SH_HASH_KEY(tb, key) hash_group(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE extern
#define SH_DEFINE
#include "lib/simplehash.h"

/* The bytes of a text value (detoasted; its header short or not) and their hash. */
static inline uint32
hash_text(Datum value)
{
	return hash_bytes((const unsigned char *) VARDATA_ANY(DatumGetPointer(value)),
					  VARSIZE_ANY_EXHDR(DatumGetPointer(value)));
}

static inline bool
text_equal(Datum a, Datum b)
{
	Size		length = VARSIZE_ANY_EXHDR(DatumGetPointer(a));

	return length == VARSIZE_ANY_EXHDR(DatumGetPointer(b)) &&
		memcmp(VARDATA_ANY(DatumGetPointer(a)), VARDATA_ANY(DatumGetPointer(b)), length) == 0;
}

#define SH_PREFIX groups_text_table
#define SH_ELEMENT_TYPE TextGroupSlot
#define SH_KEY_TYPE Datum
#define SH_KEY value
#define SH_HASH_KEY(tb, key) hash_text(key)
#define SH_EQUAL(tb, a, b) text_equal(a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE extern
#define SH_DEFINE
#include "lib/simplehash.h"

static inline uint32
hash_pair(PairKey key)
{
	return hash_combine(hash_group(key.a), hash_group(key.b) ^ key.nulls);
}

static inline bool
pair_equal(PairKey x, PairKey y)
{
	return x.a == y.a && x.b == y.b && x.nulls == y.nulls;
}

#define SH_PREFIX groups_pair_table
#define SH_ELEMENT_TYPE PairGroupSlot
#define SH_KEY_TYPE PairKey
#define SH_KEY key
#define SH_HASH_KEY(tb, key) hash_pair(key)
#define SH_EQUAL(tb, a, b) pair_equal(a, b)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE extern
#define SH_DEFINE
#include "lib/simplehash.h"

/* A row's grouping values as a pair's key. */
static inline PairKey
pair_of(Datum a, bool a_isnull, Datum b, bool b_isnull)
{
	PairKey		key = {.a = a_isnull ? 0 : (uint64) a, .b = b_isnull ? 0 : (uint64) b,
	.nulls = (a_isnull ? 1 : 0) | (b_isnull ? 2 : 0)};

	return key;
}

/* start bringing an address's cache line in (a hint: gcc and clang have it) */
#ifdef __GNUC__
#define prefetch_line(address) __builtin_prefetch(address)
#else
#define prefetch_line(address) ((void) (address))
#endif

/* a record's cells (groups_scan.h); its NULL flags are PairKey's, bit 0 alone for one column */
#define RECORD_CELLS_OFFSET GROUPS_RECORD_HEADER_BYTES

/* An empty set of groups. */
void
groups_begin(GroupsScanState *gs)
{
	MemoryContext old = MemoryContextSwitchTo(gs->groups_cxt);

	if (gs->second_attno != 0)
		gs->pair_table = groups_pair_table_create(gs->groups_cxt, 1024, NULL);
	else if (gs->group_by_text)
		gs->text_table = groups_text_table_create(gs->groups_cxt, 1024, NULL);
	else
		gs->table = groups_table_create(gs->groups_cxt, 1024, NULL);
	gs->values = palloc(sizeof(Datum));
	gs->seconds = palloc(sizeof(Datum));
	gs->nulls = palloc(1);
	gs->cells = palloc(Max(gs->cell_bytes, 1));
	gs->ngroups = gs->capacity = 0;
	gs->null_group = NO_GROUP;
	gs->kept = NULL;
	gs->nkept = gs->next = 0;
	MemoryContextSwitchTo(old);
}

/* Forget the set of groups, noting the memory it took. */
void
groups_reset(GroupsScanState *gs)
{
	gs->memory_used = Max(gs->memory_used, MemoryContextMemAllocated(gs->groups_cxt, true));
	MemoryContextReset(gs->groups_cxt);
	gs->table = NULL;
	gs->text_table = NULL;
	gs->pair_table = NULL;
	gs->values = NULL;
	gs->seconds = NULL;
	gs->nulls = NULL;
	gs->cells = NULL;
	gs->kept = NULL;
	gs->chosen = NULL;
	gs->ngroups = gs->capacity = gs->nkept = gs->next = 0;
}

/* The cells of group number n. */
static inline char *
cells_of(GroupsScanState *gs, uint32 n)
{
	return gs->cells + (Size) n * gs->cell_bytes;
}

/* Group number n's key: its grouping values and which are NULL. */
static PairKey
key_of_group(GroupsScanState *gs, uint32 n)
{
	PairKey		key = {.a = (uint64) gs->values[n]};

	if (gs->second_attno != 0)
	{
		key.b = (uint64) gs->seconds[n];
		key.nulls = gs->nulls[n];
	}
	else if (n == gs->null_group)
		key.a = 0, key.nulls = 1;
	return key;
}

/* binaryheap's order of keys (larger for better): the worst on top */
static int
worst_key_first(Datum a, Datum b, void *arg)
{
	uint64		x = DatumGetUInt64(a);
	uint64		y = DatumGetUInt64(b);

	return x < y ? 1 : (x > y ? -1 : 0);
}

/* binaryheap's order of best entries' indexes: the worst key on top */
static int
worst_entry_first(Datum a, Datum b, void *arg)
{
	const BestGroup *entries = arg;

	return worst_key_first(UInt64GetDatum(entries[DatumGetInt32(a)].key),
						   UInt64GetDatum(entries[DatumGetInt32(b)].key), NULL);
}

/* The best groups, none yet, in the query's memory: keep is at most INT_MAX. */
void
groups_best_begin(GroupsScanState *gs)
{
	MemoryContext old = MemoryContextSwitchTo(gs->css.ss.ps.state->es_query_cxt);

	gs->best = palloc0(sizeof(BestGroups));
	gs->best->keys = binaryheap_allocate((int) gs->keep, worst_key_first, NULL);
	MemoryContextSwitchTo(old);
}

/* No best group: the scan starts over. */
void
groups_best_reset(GroupsScanState *gs)
{
	BestGroups *best = gs->best;

	binaryheap_reset(best->keys);
	if (best->entry_heap != NULL)
		binaryheap_reset(best->entry_heap);
	if (best->members != NULL)
		groups_pair_table_reset(best->members);
	best->written = false;
	best->full = false;
}

/* Whether group n's value of grouping column c is NULL. */
static inline bool
group_value_isnull(GroupsScanState *gs, uint32 n, int c)
{
	if (gs->second_attno == 0)
		return n == gs->null_group;
	return (gs->nulls[n] & (c == 0 ? 1 : 2)) != 0;
}

/* Whether group n's value of the ranking column is not NULL, and its key. */
static inline bool
rank_key_of(GroupsScanState *gs, uint32 n, uint64 *key)
{
	if (group_value_isnull(gs, n, gs->rank_column))
		return false;
	*key = key_of_datum(gs->rank_key_type,
						gs->rank_column == 0 ? gs->values[n] : gs->seconds[n], gs->desc);
	return true;
}

/* d into a heap of the best: in the worst's place once it holds keep; whether it does. */
static bool
best_heap_offer(binaryheap *heap, int64 keep, bool full, Datum d)
{
	if (full)
		binaryheap_replace_first(heap, d);
	else
		binaryheap_add(heap, d);
	return heap->bh_size == keep;
}

/* The set was never written out: key, new to the set, among the best keys. */
static void
note_key(BestGroups *best, int64 keep, uint64 key)
{
	best->full = best_heap_offer(best->keys, keep, best->full, UInt64GetDatum(key));
	if (best->full)
		best->worst = DatumGetUInt64(binaryheap_first(best->keys));
}

/* Since the set was written out: group, of key key, among the best groups unless it is. */
static void
note_group(BestGroups *best, int64 keep, uint64 key, PairKey group)
{
	int			entry;
	bool		found;

	if (groups_pair_table_lookup_hash(best->members, group, hash_pair(group)) != NULL)
		return;
	if (best->full)
	{
		/* the worst entry gives its place to the group */
		entry = DatumGetInt32(binaryheap_first(best->entry_heap));
		groups_pair_table_delete(best->members, best->entries[entry].group);
	}
	else
		entry = best->entry_heap->bh_size;
	best->entries[entry].key = key;
	best->entries[entry].group = group;
	groups_pair_table_insert_hash(best->members, group, hash_pair(group), &found)->number = entry;
	best->full = best_heap_offer(best->entry_heap, keep, best->full, Int32GetDatum(entry));
	if (best->full)
		best->worst = best->entries[DatumGetInt32(binaryheap_first(best->entry_heap))].key;
}

/*
 * Ranked by a grouping column: group n, just made by a page's row, among the
 * best groups made so far, unless its value of that column is NULL, or,
 * since the set was written out, it is among them already.
 */
static void
note_new_group(GroupsScanState *gs, uint32 n)
{
	BestGroups *best = gs->best;
	uint64		key;

	if (!rank_key_of(gs, n, &key) || (best->full && key <= best->worst))
		return;
	if (best->written)
		note_group(best, gs->keep, key, key_of_group(gs, n));
	else
		note_key(best, gs->keep, key);
}

/*
 * The set of groups is about to be written out and emptied, the first time
 * since the scan began: from now on a group may be made again.  The best
 * groups are found again with who they are, from the set, which holds every
 * group made so far; the same keys, so the same worst.
 */
static void
best_groups_written(GroupsScanState *gs)
{
	BestGroups *best = gs->best;
	MemoryContext old;

	if (best->written)
		return;
	if (best->entries == NULL)
	{
		old = MemoryContextSwitchTo(gs->css.ss.ps.state->es_query_cxt);
		best->entries = palloc_extended(sizeof(BestGroup) * gs->keep, MCXT_ALLOC_HUGE);
		best->entry_heap = binaryheap_allocate((int) gs->keep, worst_entry_first, best->entries);
		best->members = groups_pair_table_create(CurrentMemoryContext,
												 (uint32) Min(gs->keep, 1024), NULL);
		MemoryContextSwitchTo(old);
	}
	groups_best_reset(gs);
	best->written = true;
	for (uint32 n = 0; n < gs->ngroups; n++)
	{
		if ((n & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		note_new_group(gs, n);
	}
}

/*
 * Ranked by a grouping column: whether a row whose value of it is value
 * (or NULL) cannot be among the groups returned, as LIMIT + OFFSET groups
 * made so far come strictly before it; then it is not read further.  A
 * NULL comes last unless NULLs come first, where it is always read.
 */
static inline bool
cannot_come_first(GroupsScanState *gs, Datum value, bool isnull)
{
	if (!gs->best->full)
		return false;
	if (isnull)
		return !gs->nulls_first;
	return key_of_datum(gs->rank_key_type, value, gs->desc) < gs->best->worst;
}

/* A new group of grouping value value: its number, its cells empty. */
static uint32
new_group(GroupsScanState *gs, Datum value)
{
	uint32		n = gs->ngroups;

	if (n == gs->capacity)
	{
		if (n == NO_GROUP - 1)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many groups for GpuTopKGroups"),
					 errhint("Set gputopk.enabled to off for this query.")));
		gs->capacity = n == 0 ? 1024 : (uint32) Min((uint64) n * 2, (uint64) NO_GROUP - 1);
		gs->values = repalloc_huge(gs->values, sizeof(Datum) * gs->capacity);
		gs->cells = repalloc_huge(gs->cells, (Size) gs->cell_bytes * gs->capacity);
		if (gs->second_attno != 0)
		{
			gs->seconds = repalloc_huge(gs->seconds, sizeof(Datum) * gs->capacity);
			gs->nulls = repalloc_huge(gs->nulls, gs->capacity);
		}
	}
	gs->values[n] = value;
	for (int i = 0; i < gs->naggs; i++)
		groups_agg_init(&gs->aggs[i], cells_of(gs, n));
	return gs->ngroups++;
}

/* The number of the group of grouping value group (or NULL), made if new; hash is group's. */
static inline uint32
group_number(GroupsScanState *gs, Datum group, bool isnull, uint32 hash)
{
	bool		found;
	GroupSlot  *slot;

	if (isnull)
	{
		if (gs->null_group == NO_GROUP)
			gs->null_group = new_group(gs, (Datum) 0);
		return gs->null_group;
	}
	if (gs->group_by_text)
	{
		TextGroupSlot *text_slot = groups_text_table_insert_hash(gs->text_table, group, hash,
																 &found);

		/* a new group's value, a page's until now, is copied */
		if (!found)
		{
			text_slot->value = datumCopy(group, false, -1);
			text_slot->number = new_group(gs, text_slot->value);
		}
		return text_slot->number;
	}
	slot = groups_table_insert_hash(gs->table, (uint64) group, hash, &found);
	if (!found)
		slot->number = new_group(gs, group);
	return slot->number;
}

/* The number of the group of two grouping columns' values, made if new; hash is key's. */
static inline uint32
pair_number(GroupsScanState *gs, PairKey key, uint32 hash)
{
	bool		found;
	PairGroupSlot *slot = groups_pair_table_insert_hash(gs->pair_table, key, hash, &found);

	if (!found)
	{
		slot->number = new_group(gs, (Datum) key.a);
		gs->seconds[slot->number] = (Datum) key.b;
		gs->nulls[slot->number] = (uint8) key.nulls;
	}
	return slot->number;
}

/*
 * The reader's page's rows that pass the WHERE clause to their groups'
 * cells, in three passes over them, each of which brings into the CPU's
 * cache what the next one reads at random: their columns read, and their
 * hash table buckets fetched; their groups found, and their cells fetched;
 * their values added.  A page's hundred-odd cache misses then overlap
 * instead of coming one by one (with 300,000 groups the table outgrows the
 * cache).  The page's visible rows count as scanned (EXPLAIN's Rows Scanned).
 */
void
groups_add_page(GroupsScanState *gs)
{
	TupleDesc	desc = RelationGetDescr(gs->css.ss.ss_currentRelation);
	PageRows   *rows = &gs->rows;
	int			n = 0;

	MemoryContext old = MemoryContextSwitchTo(gs->page_cxt);

	MemoryContextReset(gs->page_cxt);
	while (scan_row_reader_next_row(&gs->scan.reader))
	{
		rows->groups[n] = scan_row_reader_column(&gs->scan.reader, gs->group_attno, desc,
												 &rows->group_isnull[n]);
		if (gs->second_attno != 0)
			rows->seconds[n] = scan_row_reader_column(&gs->scan.reader, gs->second_attno, desc,
													  &rows->second_isnull[n]);
		if (gs->best != NULL &&
			(gs->rank_column == 0 ?
			 cannot_come_first(gs, rows->groups[n], rows->group_isnull[n]) :
			 cannot_come_first(gs, rows->seconds[n], rows->second_isnull[n])))
			continue;
		if (gs->second_attno != 0)
		{
			rows->hashes[n] = hash_pair(pair_of(rows->groups[n], rows->group_isnull[n],
												rows->seconds[n], rows->second_isnull[n]));
			prefetch_line(&gs->pair_table->data[rows->hashes[n] & gs->pair_table->sizemask]);
		}
		else if (rows->group_isnull[n])
			;
		else if (gs->group_by_text)
		{
			/* compressed or out of line: detoasted in the page's context */
			rows->groups[n] = PointerGetDatum(pg_detoast_datum_packed((struct varlena *)
																	  DatumGetPointer(rows->groups[n])));
			rows->hashes[n] = hash_text(rows->groups[n]);
			prefetch_line(&gs->text_table->data[rows->hashes[n] & gs->text_table->sizemask]);
		}
		else
		{
			rows->hashes[n] = hash_group(rows->groups[n]);
			prefetch_line(&gs->table->data[rows->hashes[n] & gs->table->sizemask]);
		}
		for (int i = 0; i < gs->naggs; i++)
		{
			if (gs->aggs[i].attno == 0)
				continue;
			rows->values[i][n] = scan_row_reader_column(&gs->scan.reader, gs->aggs[i].attno,
														desc, &rows->isnull[i][n]);
			/* a varlena kept whole as its functions take it, in the page's context */
			if (groups_agg_keeps_value(gs->aggs[i].kind) && gs->aggs[i].typlen == -1 &&
				!rows->isnull[i][n])
				rows->values[i][n] = PointerGetDatum(PG_DETOAST_DATUM(rows->values[i][n]));
		}
		n++;
	}
	/* new groups' values are copied into the groups' context */
	MemoryContextSwitchTo(gs->groups_cxt);
	for (int j = 0; j < n; j++)
	{
		uint32		made = gs->ngroups;

		rows->numbers[j] = gs->second_attno != 0 ?
			pair_number(gs, pair_of(rows->groups[j], rows->group_isnull[j],
									rows->seconds[j], rows->second_isnull[j]), rows->hashes[j]) :
			group_number(gs, rows->groups[j], rows->group_isnull[j], rows->hashes[j]);
		if (gs->best != NULL && gs->ngroups > made)
			note_new_group(gs, rows->numbers[j]);
		prefetch_line(cells_of(gs, rows->numbers[j]));
	}
	/* a numeric cell's value is made in the groups' context */
	for (int j = 0; j < n; j++)
	{
		char	   *cells = cells_of(gs, rows->numbers[j]);

		for (int i = 0; i < gs->naggs; i++)
			groups_agg_add(&gs->aggs[i], cells, rows->values[i][j], rows->isnull[i][j]);
	}
	MemoryContextSwitchTo(old);
}

/* Another process's record of a group (groups_write_records) into the set. */
void
groups_merge_record(GroupsScanState *gs, const char *record)
{
	PairKey		key;
	uint64		nulls;
	uint32		n;

	memcpy(&key.a, record, sizeof(uint64));
	memcpy(&key.b, record + sizeof(uint64), sizeof(uint64));
	memcpy(&nulls, record + 2 * sizeof(uint64), sizeof(uint64));
	key.nulls = (uint32) nulls;
	if (gs->second_attno != 0)
		n = pair_number(gs, key, hash_pair(key));
	else
		n = group_number(gs, (Datum) key.a, nulls != 0, nulls != 0 ? 0 : hash_group(key.a));
	for (int i = 0; i < gs->naggs; i++)
		groups_agg_combine(&gs->aggs[i], cells_of(gs, n), record + RECORD_CELLS_OFFSET);
}

/*
 * A record of a group of the text grouping column into the set, its value
 * given apart (a text Datum, unread where the record says NULL): the
 * record's own grouping value is not the text.
 */
void
groups_merge_text_record(GroupsScanState *gs, Datum value, const char *record)
{
	uint64		nulls;
	uint32		n;
	MemoryContext old = MemoryContextSwitchTo(gs->groups_cxt);

	memcpy(&nulls, record + 2 * sizeof(uint64), sizeof(uint64));
	n = group_number(gs, value, nulls != 0, nulls != 0 ? 0 : hash_text(value));
	for (int i = 0; i < gs->naggs; i++)
		groups_agg_combine(&gs->aggs[i], cells_of(gs, n), record + RECORD_CELLS_OFFSET);
	MemoryContextSwitchTo(old);
}

/* Group number n as a record (groups_scan.h), into record. */
void
groups_record_of(GroupsScanState *gs, uint32 n, char *record)
{
	PairKey		key = key_of_group(gs, n);
	uint64		nulls = key.nulls;

	memcpy(record, &key.a, sizeof(uint64));
	memcpy(record + sizeof(uint64), &key.b, sizeof(uint64));
	memcpy(record + 2 * sizeof(uint64), &nulls, sizeof(uint64));
	memcpy(record + RECORD_CELLS_OFFSET, cells_of(gs, n), gs->cell_bytes);
}

/*
 * Every group of the set to the exchange, a record each in the partition
 * of its hash, then the set emptied.
 */
void
groups_write_records(GroupsScanState *gs)
{
	for (uint32 n = 0; n < gs->ngroups; n++)
	{
		PairKey		key = key_of_group(gs, n);

		if ((n & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		groups_record_of(gs, n, gs->record);
		/* a group's records all go to one partition */
		agg_exchange_put(gs->exchange, gs->second_attno != 0 ? hash_pair(key) :
						 key.nulls != 0 ? 0 : hash_group(key.a), gs->record);
	}
	gs->scan.counters.counts[GROUPS_COUNT_RECORDS] += gs->ngroups;
	gs->scan.counters.counts[GROUPS_COUNT_BYTES] += (uint64) gs->ngroups * gs->record_bytes;
	if (gs->best != NULL)
		best_groups_written(gs);
	groups_reset(gs);
	groups_begin(gs);
}

/* > 0 where group a comes before group b in the ORDER BY. */
static int
compare_groups(GroupsScanState *gs, uint32 a, uint32 b)
{
	int			c = gs->rank_column;
	bool		a_isnull;
	bool		b_isnull;
	uint64		x;
	uint64		y;
	int			larger;

	if (gs->rank)
		return groups_agg_compare(gs->rank, cells_of(gs, a), cells_of(gs, b), gs->desc,
								  gs->nulls_first);
	/* by a grouping column's value; NULL first or last whatever the direction */
	a_isnull = group_value_isnull(gs, a, c);
	b_isnull = group_value_isnull(gs, b, c);
	if (a_isnull || b_isnull)
		return a_isnull == b_isnull ? 0 : (a_isnull == gs->nulls_first ? 1 : -1);
	x = key_of_datum(gs->rank_key_type, c == 0 ? gs->values[a] : gs->seconds[a], true);
	y = key_of_datum(gs->rank_key_type, c == 0 ? gs->values[b] : gs->seconds[b], true);
	larger = x > y ? 1 : (x < y ? -1 : 0);
	return gs->desc ? larger : -larger;
}

/* binaryheap's order: the worst group kept on top */
static int
worse_first(Datum a, Datum b, void *arg)
{
	return -compare_groups(arg, DatumGetUInt32(a), DatumGetUInt32(b));
}

/*
 * The groups returned: the keep best by the ranked aggregate and every
 * group tied with the last of them (all of them where there are no more).
 */
void
groups_choose(GroupsScanState *gs)
{
	uint32		last = NO_GROUP;

	gs->kept = MemoryContextAllocHuge(gs->groups_cxt, sizeof(uint32) * Max(gs->ngroups, 1));
	gs->nkept = 0;
	if ((uint64) gs->keep < gs->ngroups && gs->keep <= INT_MAX)
	{
		binaryheap *best = binaryheap_allocate((int) gs->keep, worse_first, gs);

		for (uint32 n = 0; n < gs->ngroups; n++)
		{
			if (n < gs->keep)
				binaryheap_add_unordered(best, UInt32GetDatum(n));
			else
			{
				if (n == gs->keep)
					binaryheap_build(best);
				if (compare_groups(gs, n, DatumGetUInt32(binaryheap_first(best))) > 0)
					binaryheap_replace_first(best, UInt32GetDatum(n));
			}
			if ((n & 0xffff) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		last = DatumGetUInt32(binaryheap_first(best));
		binaryheap_free(best);
	}
	for (uint32 n = 0; n < gs->ngroups; n++)
		if (last == NO_GROUP || compare_groups(gs, n, last) >= 0)
			gs->kept[gs->nkept++] = n;
	gs->next = 0;
	gs->scan.counters.counts[GROUPS_COUNT_GROUPS] += gs->ngroups;
	gs->scan.counters.counts[GROUPS_COUNT_RETURNED] += gs->nkept;
}

/*
 * Whether the reader's current row belongs to a group chosen (gs->chosen,
 * the rows form's): its grouping values looked up in the set, not added.
 */
bool
groups_row_chosen(GroupsScanState *gs)
{
	TupleDesc	desc = RelationGetDescr(gs->css.ss.ss_currentRelation);
	bool		isnull;
	bool		second_isnull;
	Datum		value = scan_row_reader_column(&gs->scan.reader, gs->group_attno, desc, &isnull);
	uint32		n = NO_GROUP;

	if (gs->second_attno != 0)
	{
		Datum		second = scan_row_reader_column(&gs->scan.reader, gs->second_attno, desc,
													&second_isnull);
		PairKey		key = pair_of(value, isnull, second, second_isnull);
		PairGroupSlot *slot = groups_pair_table_lookup_hash(gs->pair_table, key,
															 hash_pair(key));

		n = slot ? slot->number : NO_GROUP;
	}
	else if (isnull)
		n = gs->null_group;
	else if (gs->group_by_text)
	{
		TextGroupSlot *slot;
		MemoryContext old = MemoryContextSwitchTo(gs->page_cxt);

		/* compressed or out of line: detoasted in the page's context */
		value = PointerGetDatum(pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value)));
		MemoryContextSwitchTo(old);
		slot = groups_text_table_lookup_hash(gs->text_table, value, hash_text(value));
		n = slot ? slot->number : NO_GROUP;
	}
	else
	{
		GroupSlot  *slot = groups_table_lookup_hash(gs->table, (uint64) value,
													hash_group((uint64) value));

		n = slot ? slot->number : NO_GROUP;
	}
	return n != NO_GROUP && gs->chosen[n];
}

/*
 * The next group chosen, as the scan's tuple: the grouping value, then each
 * aggregate's; NULL when they are all out.
 */
TupleTableSlot *
groups_next_tuple(GroupsScanState *gs)
{
	TupleTableSlot *slot = gs->css.ss.ss_ScanTupleSlot;
	MemoryContext old;
	uint32		n;

	if (gs->next >= gs->nkept)
		return NULL;
	n = gs->kept[gs->next++];
	ExecClearTuple(slot);
	slot->tts_values[0] = gs->values[n];
	if (gs->second_attno != 0)
	{
		slot->tts_isnull[0] = (gs->nulls[n] & 1) != 0;
		slot->tts_values[1] = gs->seconds[n];
		slot->tts_isnull[1] = (gs->nulls[n] & 2) != 0;
	}
	else
		slot->tts_isnull[0] = n == gs->null_group;
	/* numeric results live until the next tuple */
	old = MemoryContextSwitchTo(gs->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
	for (int i = 0; i < gs->naggs; i++)
		slot->tts_values[gs->ngroup_columns + i] =
			groups_agg_result(&gs->aggs[i], cells_of(gs, n),
							  &slot->tts_isnull[gs->ngroup_columns + i]);
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}
