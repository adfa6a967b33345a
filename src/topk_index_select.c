/*-------------------------------------------------------------------------
 *
 * topk_index_select.c
 *	  GpuTopK over a column index: select candidates from the index's
 *	  entries, fetch their rows under the query's snapshot, and repeat with
 *	  the next candidates until enough rows have survived.
 *
 * A round reads every entry of the index (a copy of each page, taken
 * under a share lock), drops those that fail the WHERE clauses over
 * indexed columns or whose key is not below the last round's smallest,
 * and selects the best n keys with every key tied with the n-th
 * (TOPK_WITH_TIES).  The candidates' rows are then fetched through the
 * table's index fetch, which follows HOT chains and applies the snapshot,
 * and handed to the caller, which checks the whole WHERE clause and keeps
 * the row for its sort.
 *
 * Why this is exact: every row version has an entry with its own values
 * of the indexed columns (a HOT update changes none of them), so a row the
 * snapshot sees and the clauses accept has an entry that passes the
 * index's clauses with the row's key.  Once the rounds have kept `bound`
 * rows, every row not yet fetched has a key below every candidate's, ties
 * included, so it cannot be in the answer.  Rounds end there, or when a
 * round finds fewer candidates than it asked for (none are left).
 *
 * Entries never move (colindex.h).  A candidate is named by its position
 * and its TID read again when fetched; a slot freed and taken again in
 * between holds a row inserted after the snapshot, which it cannot see.
 * An entry whose every version is dead to everyone is marked so that
 * later scans skip it (not in a transaction started in recovery, whose
 * snapshot may still see what the primary has found dead).  The index
 * page stays pinned from reading the TIDs to marking them, which makes
 * VACUUM, which frees slots under a cleanup lock, wait.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colindex.h"
#include "cpu_topk.h"
#include "scan_datum_key.h"
#include "topk_index_select.h"

/* candidates asked for beyond the planner's guess */
#define EXTRA_CANDIDATES 16

typedef struct Selection
{
	const IndexSelectSpec *spec;
	const ColIndexLayout *layout;
	AttrNumber	attnos[INDEX_MAX_KEYS]; /* the table's column of each index column */
	int			key_column;		/* the index column of the key, or -1 */
	bool		load_values;	/* the filter or the key program reads values */
	bool		skip_killed;	/* entries marked dead are skipped */
	Datum	   *values;			/* a row's columns, by attribute number - 1 */
	bool	   *isnull;
	void	   *keys;			/* a page's keys and positions */
	uint64	   *positions;
	CpuTopk    *topk;			/* of the current round */
	MemoryContextCallback callback;
} Selection;

static void
destroy_topk(void *arg)
{
	Selection  *sel = arg;

	if (sel->topk)
		cpu_topk_destroy(sel->topk);
	sel->topk = NULL;
}

/* The entry's key (see keys.h). */
static inline uint64
entry_key(Selection *sel, Page page, int slot)
{
	const IndexSelectSpec *spec = sel->spec;

	if (sel->key_column >= 0)
	{
		if (colindex_slot_isnull(sel->layout, page, sel->key_column, slot))
			return key_null(spec->key_type, spec->nulls_first);
		return key_of_datum(spec->key_type,
							colindex_slot_value(sel->layout, page, sel->key_column, slot),
							spec->desc);
	}
	else
	{
		double		value;

		if (!key_program_eval_values(spec->key_program, sel->values, sel->isnull, &value))
			return key_null(spec->key_type, spec->nulls_first);
		return key_of_datum(spec->key_type, Float8GetDatum(value), spec->desc);
	}
}

/* The entries of one page that pass, keys below the threshold, into the round's top-k. */
static void
select_page(Selection *sel, Page page, BlockNumber block, const uint64 *threshold,
			IndexSelectStats *stats)
{
	const ColIndexLayout *layout = sel->layout;
	const IndexSelectSpec *spec = sel->spec;
	int			high = colindex_data_header(page)->high;
	bool		wide = key_width(spec->key_type) == 8;
	size_t		n = 0;

	for (int slot = 0; slot < high; slot++)
	{
		uint64		key;

		if (!colindex_slot_live(layout, page, slot) ||
			(sel->skip_killed && colindex_slot_killed(layout, page, slot)))
			continue;
		stats->entries_scanned++;
		if (sel->load_values)
			for (int i = 0; i < layout->ncolumns; i++)
			{
				AttrNumber	attno = sel->attnos[i];

				sel->isnull[attno - 1] = colindex_slot_isnull(layout, page, i, slot);
				if (!sel->isnull[attno - 1])
					sel->values[attno - 1] = colindex_slot_value(layout, page, i, slot);
			}
		if (spec->filter && !filter_program_passes_values(spec->filter, sel->values, sel->isnull))
			continue;
		key = entry_key(sel, page, slot);
		if (threshold && key >= *threshold)
			continue;
		if (wide)
			((uint64 *) sel->keys)[n] = key;
		else
			((uint32 *) sel->keys)[n] = (uint32) key;
		sel->positions[n++] = colindex_position(block, slot);
	}
	if (n > 0 && !cpu_topk_push_refs(sel->topk, sel->keys, sel->positions, n))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("GpuTopK could not keep its candidates.")));
}

/* One round's candidates: the best count keys below the threshold, with ties. */
static void
select_round(Selection *sel, uint64 count, const uint64 *threshold, TopkResult *result,
			 IndexSelectStats *stats)
{
	Relation	index = sel->spec->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	PGAlignedBlock copy;

	sel->topk = cpu_topk_create(key_width(sel->spec->key_type), count, TOPK_WITH_TIES);
	if (sel->topk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL, strategy);

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(copy.data, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
		if (colindex_is_data_page(copy.data))
			select_page(sel, copy.data, block, threshold, stats);
	}
	FreeAccessStrategy(strategy);
	if (!cpu_topk_result(sel->topk, result))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
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
	uint64		threshold = 0;
	bool		have_threshold = false;

	sel->spec = spec;
	sel->layout = colindex_layout(spec->index);
	sel->key_column = -1;
	for (int i = 0; i < sel->layout->ncolumns; i++)
	{
		sel->attnos[i] = spec->index->rd_index->indkey.values[i];
		if (spec->key_attno > 0 && sel->attnos[i] == spec->key_attno)
			sel->key_column = i;
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

	/* no round can find more entries than the index has slots */
	entries_max = (uint64) RelationGetNumberOfBlocks(spec->index) * sel->layout->capacity;
	count = Min((uint64) (bound * spec->candidates_per_row) + EXTRA_CANDIDATES,
				Max(entries_max, 1));
	for (;;)
	{
		TopkResult	result;
		uint64		round_kept;

		stats->rounds++;
		select_round(sel, count, have_threshold ? &threshold : NULL, &result, stats);
		if (result.count == 0)
			break;
		threshold = result.items[result.count - 1].key;
		have_threshold = true;
		round_kept = fetch_round(sel, &result, sink, arg, slot, stats);
		kept += round_kept;
		destroy_topk(sel);
		/* enough rows, or every entry that passes was a candidate */
		if (kept >= bound || result.count < count || threshold == 0)
			break;
		/* enough candidates for the rows missing at this round's rate, at least twice as many */
		count = Max(2 * count,
					(uint64) ((double) (bound - kept) * result.count /
							  Max(round_kept, 1) * 1.25));
		count = Min(count, Max(entries_max, 1));
	}
	destroy_topk(sel);
}
