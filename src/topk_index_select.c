/*-------------------------------------------------------------------------
 *
 * topk_index_select.c
 *	  GpuTopK over a column index: select candidates from the index's
 *	  entries, fetch their rows under the query's snapshot, and repeat with
 *	  the next candidates until enough rows have survived.
 *
 * A round reads every entry of the index (each page in place, under a
 * share lock), drops those that fail the WHERE clauses over
 * indexed columns or whose key is not below the last round's smallest,
 * and selects the best n keys with every key tied with the n-th
 * (TOPK_WITH_TIES), or, where any of the rows tied at the bound will do
 * (one ORDER BY item, no WITH TIES, see topk_exec.c), exactly n, leaving
 * the tied entries not taken to the next round.  The candidates' rows are then fetched through the
 * table's index fetch, which follows HOT chains and applies the snapshot,
 * and handed to the caller, which checks the whole WHERE clause and keeps
 * the row for its sort.
 *
 * Why this is exact: every row version has an entry with its own values
 * of the indexed columns (a HOT update changes none of them), so a row the
 * snapshot sees and the clauses accept has an entry that passes the
 * index's clauses with the row's key.  Once the rounds have kept `bound`
 * rows, every row not yet fetched has a key below every candidate's (or,
 * when ties may be broken either way, at most equal), so it cannot be in
 * the answer.  Rounds end there, or when a
 * round finds fewer candidates than it asked for (none are left).
 *
 * Entries never move (colindex.h).  A candidate is named by its position
 * and its TID read again when fetched; a slot freed and taken again in
 * between holds a row inserted after the snapshot, which it cannot see.
 * An entry whose every version is dead to everyone is marked so that
 * later scans skip it (not in a transaction started in recovery, whose
 * snapshot may still see what the primary has found dead).  The index
 * page stays pinned from reading the TIDs to marking them, which makes
 * VACUUM, which frees slots under a cleanup lock, wait.  Under
 * serializable isolation the table is predicate-locked as a whole, as a
 * sequential scan locks it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdlib.h>

#include "access/sysattr.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "cpu_topk.h"
#include "scan_datum_key.h"
#include "topk_index_gpu.h"
#include "topk_index_select.h"

/* candidates asked for beyond the planner's guess */
#define EXTRA_CANDIDATES 16

typedef struct Selection
{
	const IndexSelectSpec *spec;
	const ColIndexLayout *layout;
	AttrNumber	attnos[INDEX_MAX_KEYS]; /* the table's column of each index column */
	int			nloads;			/* the index columns the filter or the key program reads */
	int			loads[INDEX_MAX_KEYS];
	int			key_column;		/* the index column of the key, or -1 */
	bool		load_values;	/* the filter or the key program reads values */
	bool		skip_killed;	/* entries marked dead are skipped */
	Datum	   *values;			/* a row's columns, by attribute number - 1 */
	bool	   *isnull;
	void	   *keys;			/* a page's keys and positions */
	uint64	   *positions;
	CpuTopk    *topk;			/* of the current round */
	MemoryContextCallback callback;

	/* the rounds so far: keys below threshold are left, and, when exact, */
	bool		have_threshold;
	uint64		threshold;
	/* those equal to it whose positions are not among these (sorted) */
	uint64	   *tied_fetched;
	size_t		ntied_fetched;
} Selection;

static void
destroy_topk(void *arg)
{
	Selection  *sel = arg;

	if (sel->topk)
		cpu_topk_destroy(sel->topk);
	sel->topk = NULL;
}

/* The key (see keys.h) of an entry's key column, of the given key type. */
static pg_attribute_always_inline uint64
column_key(Selection *sel, Page page, int slot, KeyType type)
{
	if (colindex_slot_isnull(sel->layout, page, sel->key_column, slot))
		return key_null(type, sel->spec->nulls_first);
	return key_of_stored(type, colindex_slot_value_pointer(sel->layout, page, sel->key_column,
														   slot),
						 sel->spec->desc);
}

/* The entry's key: of its key column, or of the key program over its values. */
static inline uint64
entry_key(Selection *sel, Page page, int slot)
{
	const IndexSelectSpec *spec = sel->spec;

	if (sel->key_column >= 0)
		return column_key(sel, page, slot, spec->key_type);
	else
	{
		double		value;

		if (!key_program_eval_values(spec->key_program, sel->values, sel->isnull, &value))
			return key_null(spec->key_type, spec->nulls_first);
		return key_of_datum(spec->key_type, Float8GetDatum(value), spec->desc);
	}
}

/* Whether a key is one a round may still select (see Selection). */
static inline bool
key_left(Selection *sel, uint64 key, uint64 position)
{
	if (!sel->have_threshold || key < sel->threshold)
		return true;
	return key == sel->threshold && sel->spec->exact &&
		bsearch(&position, sel->tied_fetched, sel->ntied_fetched, sizeof(uint64),
				key_compare_u64) == NULL;
}

/* the slots a scan reads: in use and not marked dead */
static inline bool
slot_readable(Selection *sel, Page page, int slot)
{
	return colindex_slot_live(sel->layout, page, slot) &&
		!(sel->skip_killed && colindex_slot_killed(sel->layout, page, slot));
}

static inline void
add_key(Selection *sel, size_t *n, uint64 key, uint64 position)
{
	if (!key_left(sel, key, position))
		return;
	if (key_width(sel->spec->key_type) == 8)
		((uint64 *) sel->keys)[*n] = key;
	else
		((uint32 *) sel->keys)[*n] = (uint32) key;
	sel->positions[(*n)++] = position;
}

/*
 * The keys of a page when the key is a column and no clause is checked:
 * one loop per key type, so that the key's encoding is inlined.
 */
static pg_attribute_always_inline size_t
column_keys(Selection *sel, Page page, BlockNumber block, KeyType type,
			IndexSelectStats *stats)
{
	int			high = colindex_data_header(page)->high;
	size_t		n = 0;

	for (int slot = 0; slot < high; slot++)
	{
		if (!slot_readable(sel, page, slot))
			continue;
		stats->entries_scanned++;
		add_key(sel, &n, column_key(sel, page, slot, type), colindex_position(block, slot));
	}
	return n;
}

/* The keys of a page in general: the entry's values, the clauses, the key. */
static size_t
entry_keys(Selection *sel, Page page, BlockNumber block, IndexSelectStats *stats)
{
	const ColIndexLayout *layout = sel->layout;
	const IndexSelectSpec *spec = sel->spec;
	int			high = colindex_data_header(page)->high;
	size_t		n = 0;

	for (int slot = 0; slot < high; slot++)
	{
		if (!slot_readable(sel, page, slot))
			continue;
		stats->entries_scanned++;
		for (int j = 0; j < sel->nloads; j++)
		{
			int			i = sel->loads[j];
			AttrNumber	attno = sel->attnos[i];

			sel->isnull[attno - 1] = colindex_slot_isnull(layout, page, i, slot);
			if (!sel->isnull[attno - 1])
				sel->values[attno - 1] = colindex_slot_value(layout, page, i, slot);
		}
		if (spec->filter && !filter_program_passes_values(spec->filter, sel->values, sel->isnull))
			continue;
		add_key(sel, &n, entry_key(sel, page, slot), colindex_position(block, slot));
	}
	return n;
}

/* The entries of one page that pass and are left, into the round's top-k. */
static void
select_page(Selection *sel, Page page, BlockNumber block, IndexSelectStats *stats)
{
	size_t		n;

	if (sel->load_values)
		n = entry_keys(sel, page, block, stats);
	else
		switch (sel->spec->key_type)
		{
			case KEY_INT2:
				n = column_keys(sel, page, block, KEY_INT2, stats);
				break;
			case KEY_INT4:
				n = column_keys(sel, page, block, KEY_INT4, stats);
				break;
			case KEY_INT8:
				n = column_keys(sel, page, block, KEY_INT8, stats);
				break;
			case KEY_FLOAT4:
				n = column_keys(sel, page, block, KEY_FLOAT4, stats);
				break;
			case KEY_FLOAT8:
				n = column_keys(sel, page, block, KEY_FLOAT8, stats);
				break;
			case KEY_DATE:
				n = column_keys(sel, page, block, KEY_DATE, stats);
				break;
			case KEY_TIMESTAMP:
				n = column_keys(sel, page, block, KEY_TIMESTAMP, stats);
				break;
			default:
				n = column_keys(sel, page, block, KEY_TIMESTAMPTZ, stats);
				break;
		}
	if (n > 0 && !cpu_topk_push_refs(sel->topk, sel->keys, sel->positions, n))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("GpuTopK could not keep its candidates.")));
}

/*
 * One round's candidates: the best count keys of those left, with their
 * ties unless any of them will do.  Pages are read in place under a share
 * lock.
 */
static void
select_round(Selection *sel, uint64 count, TopkResult *result, IndexSelectStats *stats)
{
	Relation	index = sel->spec->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);

	sel->topk = cpu_topk_create(key_width(sel->spec->key_type), count,
								sel->spec->exact ? TOPK_EXACT : TOPK_WITH_TIES);
	if (sel->topk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL, strategy);

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (colindex_is_data_page(BufferGetPage(buf)))
			select_page(sel, BufferGetPage(buf), block, stats);
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(strategy);
	if (!cpu_topk_result(sel->topk, result))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
}

/*
 * After a round: keys below its smallest are left, and, when any tied row
 * will do, those equal to it that no round has fetched.
 */
static void
advance_threshold(Selection *sel, TopkResult *result)
{
	uint64		smallest = result->items[result->count - 1].key;

	/* the tied positions of earlier rounds still count while the key is the same */
	if (!sel->have_threshold || smallest != sel->threshold)
		sel->ntied_fetched = 0;
	sel->have_threshold = true;
	sel->threshold = smallest;
	if (!sel->spec->exact)
		return;
	sel->tied_fetched = sel->tied_fetched == NULL ?
		palloc_extended(sizeof(uint64) * (sel->ntied_fetched + result->count), MCXT_ALLOC_HUGE) :
		repalloc_huge(sel->tied_fetched, sizeof(uint64) * (sel->ntied_fetched + result->count));
	for (size_t i = 0; i < result->count; i++)
		if (result->items[i].key == smallest)
			sel->tied_fetched[sel->ntied_fetched++] = result->items[i].ref;
	qsort(sel->tied_fetched, sel->ntied_fetched, sizeof(uint64), key_compare_u64);
}

/*
 * Fetch the rows of the candidates of one index block (positions[0..n-1])
 * and hand the visible ones to the sink; returns how many it kept.
 */
static uint64
fetch_block(Selection *sel, IndexFetchTableData *fetch, const uint64 *positions, int n,
			IndexRowSink sink, void *arg, TupleTableSlot *slot, IndexSelectStats *stats)
{
	const ColIndexLayout *layout = sel->layout;
	Relation	index = sel->spec->index;
	BlockNumber block = colindex_position_block(positions[0]);
	Buffer		buf = ReadBuffer(index, block);
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * n);
	bool	   *killed = palloc0(sizeof(bool) * n);
	bool		any_killed = false;
	uint64		kept = 0;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	for (int i = 0; i < n; i++)
	{
		int			s = colindex_position_slot(positions[i]);

		if (colindex_slot_live(layout, BufferGetPage(buf), s))
			tids[i] = *colindex_slot_tid(layout, BufferGetPage(buf), s);
		else
			ItemPointerSetInvalid(&tids[i]);
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);

	for (int i = 0; i < n; i++)
	{
		bool		call_again = false;
		bool		all_dead = false;

		CHECK_FOR_INTERRUPTS();
		stats->fetched++;
		/* freed by VACUUM since the round read it: dead to everyone */
		if (!ItemPointerIsValid(&tids[i]))
		{
			stats->dead++;
			continue;
		}
		if (!table_index_fetch_tuple(fetch, &tids[i], sel->spec->snapshot, slot,
									 &call_again, &all_dead))
		{
			if (all_dead)
			{
				stats->dead++;
				killed[i] = sel->skip_killed;
				any_killed |= killed[i];
			}
			else
				stats->invisible++;
			continue;
		}
		if (sink(arg, slot))
			kept++;
		else
			stats->filtered++;
	}

	if (any_killed)
	{
		Page		page = BufferGetPage(buf);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		for (int i = 0; i < n; i++)
		{
			int			s = colindex_position_slot(positions[i]);

			if (killed[i] && colindex_slot_live(layout, page, s) &&
				ItemPointerEquals(colindex_slot_tid(layout, page, s), &tids[i]))
				colindex_page_kill_slot(layout, page, s);
		}
		MarkBufferDirtyHint(buf, true);
		/* a hint, but the GPU's copy of the page should learn it too */
		colindex_changes_note(index, block);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	ReleaseBuffer(buf);
	pfree(tids);
	pfree(killed);
	return kept;
}

/* Fetch a round's candidates, index block by block; returns the rows kept. */
static uint64
fetch_round(Selection *sel, TopkResult *result, IndexRowSink sink, void *arg,
			TupleTableSlot *slot, IndexSelectStats *stats)
{
	IndexFetchTableData *fetch = table_index_fetch_begin(sel->spec->heap);
	uint64	   *positions = palloc_extended(sizeof(uint64) * Max(result->count, 1),
											MCXT_ALLOC_HUGE);
	uint64		kept = 0;
	size_t		i = 0;

	for (size_t j = 0; j < result->count; j++)
		positions[j] = result->items[j].ref;
	qsort(positions, result->count, sizeof(uint64), key_compare_u64);
	while (i < result->count)
	{
		size_t		end = i + 1;

		while (end < result->count &&
			   colindex_position_block(positions[end]) == colindex_position_block(positions[i]))
			end++;
		kept += fetch_block(sel, fetch, positions + i, end - i, sink, arg, slot, stats);
		i = end;
	}
	table_index_fetch_end(fetch);
	pfree(positions);
	return kept;
}

/*
 * Hand the sink the candidates' rows, round by round, until it has kept
 * bound rows or the index has no candidates left.
 */
void
index_select_rows(const IndexSelectSpec *spec, uint64 bound, IndexRowSink sink, void *arg,
				  TupleTableSlot *slot, IndexSelectStats *stats)
{
	Selection  *sel = palloc0(sizeof(Selection));
	int			natts = RelationGetDescr(spec->heap)->natts;
	uint64		entries_max;
	uint64		count;
	uint64		kept = 0;
	IndexGpu   *gpu;

	/* as a sequential scan does: the answer depends on every row (serializable only) */
	PredicateLockRelation(spec->heap, spec->snapshot);
	sel->spec = spec;
	sel->layout = colindex_layout(spec->index);
	sel->key_column = -1;
	for (int i = 0; i < sel->layout->ncolumns; i++)
	{
		sel->attnos[i] = spec->index->rd_index->indkey.values[i];
		if (spec->key_attno > 0 && sel->attnos[i] == spec->key_attno)
			sel->key_column = i;
		if (bms_is_member(sel->attnos[i] - FirstLowInvalidHeapAttributeNumber,
						  spec->columns_read))
			sel->loads[sel->nloads++] = i;
	}
	Assert(spec->key_attno == 0 || sel->key_column >= 0);
	sel->load_values = spec->filter != NULL || sel->key_column < 0;
	sel->skip_killed = !TransactionStartedDuringRecovery();
	sel->values = palloc0(sizeof(Datum) * natts);
	sel->isnull = palloc(sizeof(bool) * natts);
	memset(sel->isnull, true, sizeof(bool) * natts);
	sel->keys = palloc(sizeof(uint64) * sel->layout->capacity);
	sel->positions = palloc(sizeof(uint64) * sel->layout->capacity);
	sel->callback.func = destroy_topk;
	sel->callback.arg = sel;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &sel->callback);

	gpu = index_gpu_begin(spec, sel->layout, sel->attnos, sel->skip_killed, stats);

	/* no round can find more entries than the index has slots */
	entries_max = (uint64) RelationGetNumberOfBlocks(spec->index) * sel->layout->capacity;
	count = Min((uint64) (bound * spec->candidates_per_row) + EXTRA_CANDIDATES,
				Max(entries_max, 1));
	for (;;)
	{
		TopkResult	result;
		uint64		round_kept;

		stats->rounds++;
		if (gpu == NULL ||
			!index_gpu_round(gpu, count, sel->have_threshold, sel->threshold,
							 sel->tied_fetched, sel->ntied_fetched, &result, stats))
			select_round(sel, count, &result, stats);
		if (result.count == 0)
			break;
		round_kept = fetch_round(sel, &result, sink, arg, slot, stats);
		kept += round_kept;
		advance_threshold(sel, &result);
		destroy_topk(sel);
		/* enough rows, or every entry left was a candidate, or none can be below */
		if (kept >= bound || result.count < count ||
			(sel->threshold == 0 && !spec->exact))
			break;
		/* enough candidates for the rows missing at this round's rate, at least twice as many */
		count = Max(2 * count,
					(uint64) ((double) (bound - kept) * result.count /
							  Max(round_kept, 1) * 1.25));
		count = Min(count, Max(entries_max, 1));
	}
	destroy_topk(sel);
	index_gpu_end(gpu);
}
