/*-------------------------------------------------------------------------
 *
 * colindex_select.c
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
 * the tied entries not taken to the next round.  A key program that may
 * raise an error asks for the ties, so that every row that raises is a
 * candidate (its key is the largest); where the pages' summaries show,
 * before the first round, that no entry's program raises, the rounds are
 * exact after all.  The candidates' rows are then fetched through the
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
 * A vector key's entries are keyed by a bound on pgvector's distance, no
 * row's true value being ahead of its key (scan_vector_key.c), and the
 * rounds take their ties.  Then bound rows kept are not enough: rounds go
 * on until the caller's answer_held finds the bound-th best true value
 * among the rows kept at or ahead of the last round's smallest key, which
 * every entry not yet fetched is below, with its true value behind it.
 *
 * Pages are skipped where their summaries (kernels/page_bounds.h) show
 * that no entry passes the index's clauses or has a key the round can
 * still take.  One process reads the pages in the order of their bounds,
 * highest first, as the early-stopping algorithm visits segments, and a
 * round ends at the first page whose bound is below its cut.  The bounds
 * are read once, before the first round, and serve every round: an entry
 * the snapshot sees was added before the snapshot was taken, and a page's
 * summary covers every entry in use from then on (inserts widen it, VACUUM
 * computes it again over the entries left).  The processes of a parallel
 * scan read their chunks in block order and skip page by page.
 *
 * Entries do not move while the scan holds its lock on the index
 * (colindex.h).  A candidate is named by its position
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
 * In a parallel scan each process selects from its own share of the
 * index's blocks and returns its own top rows; a Gather Merge above merges
 * them, and the true top rows are among the union of every process's.
 * The first round hands the blocks out a chunk at a time to whichever
 * process asks next, and each process remembers its chunks and reads the
 * same ones in its later rounds, so that its rounds go on over the same
 * entries.  A block added after a process's first round began holds no
 * entry the snapshot sees, as the transactions that added them could not
 * have committed before the snapshot was taken: it may be left unread.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdlib.h>

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "colindex.h"
#include "colindex_changes.h"
#include "colindex_gpu.h"
#include "colindex_page_eval.h"
#include "colindex_select.h"
#include "cpu_topk.h"
#include "recent_buffers.h"

/* pages pinned ahead of the one a round reads */
#define PAGES_AHEAD 1

/* candidates asked for beyond the planner's guess */
#define EXTRA_CANDIDATES 16

/* blocks handed out at a time to a process of a parallel scan */
#define SHARED_CHUNK_BLOCKS 32

/*
 * Fetching a round's candidates, the parts of pages that the fetch of a
 * candidate FETCH_STEP * 3 ahead will read start coming into the CPU's
 * cache, in three steps FETCH_STEP candidates apart, each reading what the
 * one before brought in: the index entry (its TID), the heap page's line
 * pointer, the tuple.  Candidates are on pages far apart, and a fetch
 * waits for each of them in turn otherwise.  A block whose buffer this
 * backend has not remembered is looked up in the first step, so that its
 * read later finds the buffer at once.  These steps read pages not pinned,
 * which may since hold others: what they read decides only what is
 * prefetched, never what is fetched.  (5,016 candidates of 20M rows on 2
 * cores, with huge pages: 7.8-11.0 ms to fetch without these steps, 5.3-7.4
 * ms with them; the candidates of the query before, 5.7-7.7 against
 * 3.5-5.0 ms.  Of 50M rows on the H100 machine's CPU: the candidates of
 * the query before 8.5-9.9 against 6.5-7.8 ms, new ones no faster.)
 */
#define FETCH_STEP 4
#define FETCH_RING 16			/* a power of 2 above FETCH_STEP * 3 */

typedef struct FetchAhead
{
	const TopkItem *candidates; /* the round's, in the order fetched */
	size_t		n;
	BlockNumber heap_blocks;	/* the table's, as the round began */
	size_t		entries;		/* candidates whose steps have been taken */
	size_t		line_pointers;
	size_t		tuples;
	/* by candidate, modulo FETCH_RING: where its pages were last found */
	const char *index_pages[FETCH_RING];
	const char *heap_pages[FETCH_RING];
	OffsetNumber offsets[FETCH_RING];
} FetchAhead;

/* a data page and the largest key its entries can have */
typedef struct PageBound
{
	uint64		bound;
	BlockNumber block;
} PageBound;

typedef struct Selection
{
	const IndexSelectSpec *spec;
	const ColIndexLayout *layout;
	AttrNumber	attnos[INDEX_MAX_KEYS]; /* the table's column of each index column */
	bool		skip_killed;	/* entries marked dead are skipped */
	IndexPageEval *eval;		/* of a page's entries on the CPU */
	uint64	   *page_keys;		/* a page's keys and slots from it */
	uint16	   *page_slots;
	void	   *keys;			/* a page's keys and positions left for the round */
	uint64	   *positions;
	bool		exact;			/* the rounds take exactly their count */
	bool		heap_table;		/* the table is heap's: pin_heap_page */
	CpuTopk    *topk;			/* of the current round */
	uint64		round_count;	/* the keys it selects */
	uint64		top_keys;		/* of those pushed, how many are the largest key */
	MemoryContextCallback callback;

	/*
	 * in one process, the data pages by bound, highest first (ordered): the
	 * first nsorted in order, the rest a heap that yields the next
	 * (sort_next)
	 */
	bool		ordered;
	PageBound  *order;
	uint32		norder;
	uint32		nsorted;
	uint32		ndata_pages;	/* of the index, those left out of order included */

	/* in a parallel scan, the chunks of blocks this process has claimed */
	bool		claimed;		/* all of them: its first round is over */
	uint32	   *chunks;
	int			nchunks;
	int			chunks_allocated;

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

/* Whether a key is one a round may still select (see Selection). */
static inline bool
key_left(Selection *sel, uint64 key, uint64 position)
{
	if (!sel->have_threshold || key < sel->threshold)
		return true;
	return key == sel->threshold && sel->exact &&
		bsearch(&position, sel->tied_fetched, sel->ntied_fetched, sizeof(uint64),
				key_compare_u64) == NULL;
}

/* Add a key left for the round to the page's; returns whether it was. */
static inline bool
add_key(Selection *sel, size_t *n, uint64 key, uint64 position)
{
	if (!key_left(sel, key, position))
		return false;
	if (key_width(sel->spec->key_type) == 8)
		((uint64 *) sel->keys)[*n] = key;
	else
		((uint32 *) sel->keys)[*n] = (uint32) key;
	sel->positions[(*n)++] = position;
	return true;
}

/* The largest key of the spec's key type. */
static inline uint64
largest_key(const Selection *sel)
{
	return key_width(sel->spec->key_type) == 8 ? PG_UINT64_MAX : PG_UINT32_MAX;
}

/*
 * The smallest key that can still enter the round's top-k; false when none
 * can: it is full of keys that no key is above.  The top-k's cut rises
 * only as its buffer fills; keys at the largest key are counted as they
 * come, so that (with NULLs first, say) the round sees at once when it has
 * enough of them.
 */
static bool
round_floor(Selection *sel, uint64 *floor)
{
	uint64		cut;
	uint64		largest = largest_key(sel);

	*floor = 0;
	if (sel->top_keys >= sel->round_count)
	{
		*floor = largest;
		return !sel->exact;
	}
	if (!cpu_topk_cut(sel->topk, &cut))
		return true;
	if (cut >= largest)
		return false;
	*floor = cut + 1;
	return true;
}

/*
 * The entries of one page that pass, are left and are at least floor, into
 * the round's top-k; returns how many.  bound is the page's, in order of
 * bound, else KEY_PROGRAM_ERROR_KEY (not known).
 */
static size_t
select_page(Selection *sel, Page page, BlockNumber block, uint64 floor, uint64 bound,
			IndexSelectStats *stats)
{
	int			found;
	size_t		n = 0;

	found = colindex_page_eval(sel->eval, page, floor, bound, sel->page_keys, sel->page_slots,
							   &stats->entries_scanned);
	for (int j = 0; j < found; j++)
		if (add_key(sel, &n, sel->page_keys[j], colindex_position(block, sel->page_slots[j])) &&
			sel->page_keys[j] == largest_key(sel))
			sel->top_keys++;
	if (n > 0 && !cpu_topk_push_refs(sel->topk, sel->keys, sel->positions, n))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("GpuTopK could not keep its candidates.")));
	return n;
}

/* Where a round is in the blocks it reads. */
typedef struct BlockCursor
{
	BlockNumber nblocks;		/* of the index when the round began */
	int			chunk;			/* the next of the claimed chunks */
	BlockNumber next;
	BlockNumber end;			/* of the current chunk (or of the index) */
} BlockCursor;

void
colindex_select_shared_init(IndexSharedBlocks *shared)
{
	pg_atomic_init_u32(&shared->next_chunk, 0);
}

/* The next chunk of blocks of a parallel scan's process, or false. */
static bool
next_chunk(Selection *sel, BlockCursor *cursor, uint32 *chunk)
{
	if (sel->claimed)
	{
		if (cursor->chunk >= sel->nchunks)
			return false;
		*chunk = sel->chunks[cursor->chunk++];
		return true;
	}
	*chunk = pg_atomic_fetch_add_u32(&sel->spec->shared->next_chunk, 1);
	if ((uint64) *chunk * SHARED_CHUNK_BLOCKS >= cursor->nblocks)
		return false;
	if (sel->nchunks == sel->chunks_allocated)
	{
		sel->chunks_allocated = Max(2 * sel->chunks_allocated, 16);
		sel->chunks = sel->chunks == NULL ?
			palloc(sizeof(uint32) * sel->chunks_allocated) :
			repalloc(sel->chunks, sizeof(uint32) * sel->chunks_allocated);
	}
	sel->chunks[sel->nchunks++] = *chunk;
	return true;
}

/*
 * The pages not yet sorted are a heap, its first (the page read first of
 * them) at the end of sel->order and its i-th at sel->order[norder - 1 - i].
 * Taking the first out leaves its last's place, the one after the sorted
 * pages, free for it.  A round stops after the few pages whose bounds reach
 * its cut, so sorting only as far as the rounds read saves sorting them all
 * (14,778 pages of a clustered index, of which a round read 334: the full
 * sort took about a quarter of the round's time, on 2 cores).
 */
static inline PageBound *
unsorted_page(Selection *sel, uint32 i)
{
	return &sel->order[sel->norder - 1 - i];
}

/* Whether page a is read before page b: higher bound first, then lower block. */
static inline bool
read_before(const PageBound *a, const PageBound *b)
{
	return a->bound != b->bound ? a->bound > b->bound : a->block < b->block;
}

/* Move the i-th unsorted page down the heap of n until it is in order. */
static void
sift_down(Selection *sel, uint32 i, uint32 n)
{
	PageBound	page = *unsorted_page(sel, i);

	for (;;)
	{
		uint32		child = 2 * i + 1;

		if (child >= n)
			break;
		if (child + 1 < n && read_before(unsorted_page(sel, child + 1), unsorted_page(sel, child)))
			child++;
		if (!read_before(unsorted_page(sel, child), &page))
			break;
		*unsorted_page(sel, i) = *unsorted_page(sel, child);
		i = child;
	}
	*unsorted_page(sel, i) = page;
}

/* Make the pages not yet sorted a heap. */
static void
heapify_pages(Selection *sel)
{
	for (uint32 i = sel->norder / 2; i-- > 0;)
		sift_down(sel, i, sel->norder);
}

/* Sort the next page: the heap's first, into sel->order[nsorted]. */
static void
sort_next(Selection *sel)
{
	uint32		n = sel->norder - sel->nsorted;
	PageBound	first = *unsorted_page(sel, 0);

	*unsorted_page(sel, 0) = *unsorted_page(sel, n - 1);
	sift_down(sel, 0, n - 1);
	sel->order[sel->nsorted++] = first;
}

/*
 * The next data block a round reads and its bound (in block order, not
 * known: the largest key), or false at the end: in order of bound, at the
 * first page whose bound is below floor (the round's cut only rises).
 */
static bool
next_block(Selection *sel, BlockCursor *cursor, uint64 floor, BlockNumber *block,
		   uint64 *bound)
{
	*bound = PG_UINT64_MAX;
	if (sel->ordered)
	{
		if (cursor->next == sel->nsorted && sel->nsorted < sel->norder)
			sort_next(sel);
		if (cursor->next >= sel->norder || sel->order[cursor->next].bound < floor)
			return false;
		*bound = sel->order[cursor->next].bound;
		*block = sel->order[cursor->next++].block;
		return true;
	}
	while (cursor->next >= cursor->end)
	{
		uint32		chunk;

		if (sel->spec->shared == NULL || !next_chunk(sel, cursor, &chunk))
			return false;
		cursor->next = Max((BlockNumber) chunk * SHARED_CHUNK_BLOCKS,
						   COLINDEX_METAPAGE_BLKNO + 1);
		cursor->end = Min((BlockNumber) (chunk + 1) * SHARED_CHUNK_BLOCKS, cursor->nblocks);
	}
	*block = cursor->next++;
	return true;
}

/*
 * In one process, before the first round: the data pages whose entries may
 * pass the filter, by bound, highest first.
 */
static void
order_pages(Selection *sel, BlockNumber nblocks, BufferAccessStrategy strategy)
{
	Relation	index = sel->spec->index;

	sel->order = palloc_extended(sizeof(PageBound) * Max(nblocks, 1), MCXT_ALLOC_HUGE);
	for (BlockNumber block = COLINDEX_METAPAGE_BLKNO + 1; block < nblocks; block++)
	{
		Buffer		buf = recent_buffers_read(index, block, strategy);
		Page		page = BufferGetPage(buf);
		uint64		bound;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (colindex_is_data_page(page))
		{
			sel->ndata_pages++;
			if (colindex_page_eval_bound(sel->eval, page, &bound))
			{
				sel->order[sel->norder].bound = bound;
				sel->order[sel->norder++].block = block;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	heapify_pages(sel);
	if (sel->norder > 0)
		sort_next(sel);
	sel->ordered = true;
	/* no page's bound is the largest key, that of a row that raises (and of NULL first) */
	if (sel->spec->exact_if_no_errors && !sel->have_threshold &&
		(sel->norder == 0 || sel->order[0].bound != largest_key(sel)))
		sel->exact = true;
}

/*
 * Whether a data page the round has pinned is skipped: in order of bound,
 * by the bound it was ordered by (the pages not read are counted when the
 * round ends); else by its summary, and counted here.
 */
static bool
page_skipped(Selection *sel, Page page, uint64 bound, uint64 floor, IndexSelectStats *stats)
{
	if (sel->ordered)
		return bound < floor;
	if (!colindex_page_eval_skips(sel->eval, page, floor))
		return false;
	stats->pages_skipped++;
	return true;
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
	BlockCursor cursor = {.nblocks = RelationGetNumberOfBlocks(index)};
	/* as a sequential scan: a large index does not push everything else out of the buffers */
	BufferAccessStrategy strategy = cursor.nblocks > NBuffers / 4 ?
		GetAccessStrategy(BAS_BULKREAD) : NULL;
	/* the pages pinned and not yet read, in a ring */
	Buffer		pinned[PAGES_AHEAD + 1];
	BlockNumber pinned_blocks[PAGES_AHEAD + 1];
	uint64		pinned_bounds[PAGES_AHEAD + 1];
	int			first = 0;
	int			npinned = 0;
	uint64		pages_read = 0;
	uint64		bound;
	/* keys pushed since the cut was brought up to date, and how many call for it */
	uint64		pushed = 0;
	uint64		refresh_every = Max(count / 8, 1);
	BlockNumber block;

	if (sel->spec->shared == NULL)
	{
		cursor.next = COLINDEX_METAPAGE_BLKNO + 1;
		cursor.end = cursor.nblocks;
		if (sel->layout->summary_offset != 0 && !sel->ordered)
			order_pages(sel, cursor.nblocks, strategy);
		if (sel->ordered)
			cursor.next = 0;
	}
	sel->topk = cpu_topk_create(key_width(sel->spec->key_type), count,
								sel->exact ? TOPK_EXACT : TOPK_WITH_TIES);
	sel->round_count = count;
	sel->top_keys = 0;
	if (sel->topk == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	/*
	 * Pages are pinned up to PAGES_AHEAD blocks ahead of the one read, and
	 * their columns start coming into the CPU's cache then, which hides the
	 * memory's latency (the floor only rises).  The round ends early once
	 * no key can enter; in a parallel scan's first round, this process
	 * claims the rest of its chunks first, to read them in later rounds.
	 */
	for (;;)
	{
		uint64		floor;
		bool		open = round_floor(sel, &floor);
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		while (open && npinned <= PAGES_AHEAD &&
			   next_block(sel, &cursor, floor, &block, &pinned_bounds[(first + npinned) %
																	  (PAGES_AHEAD + 1)]))
		{
			int			at = (first + npinned++) % (PAGES_AHEAD + 1);
			Page		page;

			pinned[at] = recent_buffers_read(index, block, strategy);
			pinned_blocks[at] = block;
			page = BufferGetPage(pinned[at]);
			/* in block order, what the summary says, read without the lock, is a hint */
			if (sel->ordered ||
				!(colindex_is_data_page(page) && colindex_page_eval_skips(sel->eval, page, floor)))
				colindex_page_eval_prefetch(sel->eval, page, floor);
		}
		if (npinned == 0)
			break;
		buf = pinned[first];
		if (open)
		{
			Page		page = BufferGetPage(buf);

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			if (colindex_is_data_page(page) &&
				!page_skipped(sel, page, pinned_bounds[first], floor, stats))
			{
				pushed += select_page(sel, page, pinned_blocks[first], floor,
									  pinned_bounds[first], stats);
				pages_read++;
				/* in order of bound, a current cut ends the round sooner */
				if (sel->ordered && pushed >= refresh_every)
				{
					cpu_topk_refresh_cut(sel->topk);
					pushed = 0;
				}
			}
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
		first = (first + 1) % (PAGES_AHEAD + 1);
		npinned--;
	}
	if (sel->spec->shared)
		while (next_block(sel, &cursor, 0, &block, &bound))
			;
	sel->claimed = true;
	/* in order of bound, the pages not read were all skipped */
	if (sel->ordered)
		stats->pages_skipped += sel->ndata_pages - pages_read;
	if (strategy)
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
	if (!sel->exact)
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
 * Before a heap table's index fetch of tid: its page pinned through the
 * buffer it was last found in (recent_buffers.c) and pruned, as the fetch
 * would pin and prune it (heapam_index_fetch_tuple), which then finds it
 * pinned.  The lookup in the buffer mapping table that this saves is much
 * of a fetch's time, candidates being on pages far apart.
 */
static void
pin_heap_page(Selection *sel, IndexFetchTableData *fetch, ItemPointer tid)
{
	IndexFetchHeapData *heap_fetch = (IndexFetchHeapData *) fetch;
	BlockNumber block = ItemPointerGetBlockNumber(tid);

	if (!sel->heap_table)
		return;
	if (BufferIsValid(heap_fetch->xs_cbuf))
	{
		if (BufferGetBlockNumber(heap_fetch->xs_cbuf) == block)
			return;
		ReleaseBuffer(heap_fetch->xs_cbuf);
	}
	heap_fetch->xs_cbuf = recent_buffers_read(sel->spec->heap, block, NULL);
	heap_page_prune_opt(sel->spec->heap, heap_fetch->xs_cbuf);
}

static inline void
prefetch_address(const void *address)
{
#ifdef __GNUC__
	__builtin_prefetch(address);
#endif
}

/* The index entry of candidate i: its buffer's header, its live bit and its TID. */
static void
prefetch_entry(Selection *sel, FetchAhead *ahead, size_t i)
{
	uint64		position = ahead->candidates[i].ref;
	int			s = colindex_position_slot(position);
	const char *page = recent_buffers_prefetch(sel->spec->index,
											   colindex_position_block(position));

	ahead->index_pages[i % FETCH_RING] = page;
	if (page == NULL)
		return;
	prefetch_address(page + sel->layout->live_offset + s / 8);
	prefetch_address(colindex_slot_tid(sel->layout, (Page) page, s));
}

/* The heap page of candidate i's TID, as its entry showed it: its buffer's header and line pointer. */
static void
prefetch_line_pointer(Selection *sel, FetchAhead *ahead, size_t i)
{
	const char *index_page = ahead->index_pages[i % FETCH_RING];
	ItemPointerData tid;
	const char *page = NULL;

	if (index_page != NULL)
	{
		memcpy(&tid, colindex_slot_tid(sel->layout, (Page) index_page,
									   colindex_position_slot(ahead->candidates[i].ref)),
			   sizeof(tid));
		/* a block the table has, which it keeps while the scan holds its lock */
		if (ItemPointerIsValid(&tid) && ItemPointerGetBlockNumberNoCheck(&tid) < ahead->heap_blocks &&
			ItemPointerGetOffsetNumberNoCheck(&tid) <= MaxHeapTuplesPerPage)
		{
			page = recent_buffers_prefetch(sel->spec->heap, ItemPointerGetBlockNumber(&tid));
			if (page != NULL)
				prefetch_address(PageGetItemId((Page) page,
											   ItemPointerGetOffsetNumber(&tid)));
		}
	}
	ahead->heap_pages[i % FETCH_RING] = page;
	ahead->offsets[i % FETCH_RING] = page ? ItemPointerGetOffsetNumber(&tid) : 0;
}

/* Candidate i's tuple, where its line pointer shows it. */
static void
prefetch_tuple(FetchAhead *ahead, size_t i)
{
	const char *page = ahead->heap_pages[i % FETCH_RING];
	ItemIdData	item;

	if (page == NULL)
		return;
	memcpy(&item, PageGetItemId((Page) page, ahead->offsets[i % FETCH_RING]), sizeof(item));
	if (ItemIdIsNormal(&item) && ItemIdGetOffset(&item) + SizeofHeapTupleHeader <= BLCKSZ)
		prefetch_address(page + ItemIdGetOffset(&item));
}

/*
 * Before candidate i's row is fetched: the steps of those after it, each
 * step FETCH_STEP candidates behind the one before.
 */
static void
fetch_ahead(Selection *sel, FetchAhead *ahead, size_t i)
{
	for (; ahead->entries < Min(i + 3 * FETCH_STEP, ahead->n); ahead->entries++)
		prefetch_entry(sel, ahead, ahead->entries);
	if (!sel->heap_table)
		return;
	for (; ahead->line_pointers < Min(i + 2 * FETCH_STEP, ahead->n); ahead->line_pointers++)
		prefetch_line_pointer(sel, ahead, ahead->line_pointers);
	for (; ahead->tuples < Min(i + FETCH_STEP, ahead->n); ahead->tuples++)
		prefetch_tuple(ahead, ahead->tuples);
}

/*
 * Fetch the row of tid (or none: freed by VACUUM since the round read its
 * entry, dead to everyone) under the query's snapshot, and hand it to the
 * sink with its key if visible; returns whether the sink kept it, and in
 * *all_dead whether no one sees any version of it.
 */
static bool
fetch_candidate(Selection *sel, IndexFetchTableData *fetch, ItemPointer tid, uint64 key,
				IndexRowSink sink, void *arg, TupleTableSlot *slot, IndexSelectStats *stats,
				bool *all_dead)
{
	bool		call_again = false;

	*all_dead = false;
	stats->fetched++;
	if (!ItemPointerIsValid(tid))
	{
		stats->dead++;
		return false;
	}
	pin_heap_page(sel, fetch, tid);
	if (!table_index_fetch_tuple(fetch, tid, sel->spec->snapshot, slot, &call_again, all_dead))
	{
		if (*all_dead)
			stats->dead++;
		else
			stats->invisible++;
		return false;
	}
	if (sink(arg, slot, key))
		return true;
	stats->filtered++;
	return false;
}

/*
 * Fetch the rows of the candidates of one index block (candidates[0..n-1],
 * their refs positions; the round's candidates from first on) and hand
 * the visible ones to the sink with their keys; returns how many it kept.
 */
static uint64
fetch_block(Selection *sel, IndexFetchTableData *fetch, FetchAhead *ahead, size_t first,
			const TopkItem *candidates, int n, IndexRowSink sink, void *arg,
			TupleTableSlot *slot, IndexSelectStats *stats)
{
	const ColIndexLayout *layout = sel->layout;
	Relation	index = sel->spec->index;
	BlockNumber block = colindex_position_block(candidates[0].ref);
	Buffer		buf = recent_buffers_read(index, block, NULL);
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * n);
	bool	   *killed = palloc0(sizeof(bool) * n);
	bool		any_killed = false;
	uint64		kept = 0;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	for (int i = 0; i < n; i++)
	{
		int			s = colindex_position_slot(candidates[i].ref);

		if (colindex_slot_live(layout, BufferGetPage(buf), s))
			tids[i] = *colindex_slot_tid(layout, BufferGetPage(buf), s);
		else
			ItemPointerSetInvalid(&tids[i]);
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);

	for (int i = 0; i < n; i++)
	{
		bool		all_dead;

		CHECK_FOR_INTERRUPTS();
		fetch_ahead(sel, ahead, first + i);
		if (fetch_candidate(sel, fetch, &tids[i], candidates[i].key, sink, arg, slot, stats,
							&all_dead))
			kept++;
		killed[i] = all_dead && sel->skip_killed;
		any_killed |= killed[i];
	}

	if (any_killed)
	{
		Page		page = BufferGetPage(buf);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		for (int i = 0; i < n; i++)
		{
			int			s = colindex_position_slot(candidates[i].ref);

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

/* The order candidates are fetched in: those that raise first, then by position. */
static int
compare_fetch_order(const void *a, const void *b)
{
	bool		a_raises = ((const TopkItem *) a)->key == KEY_PROGRAM_ERROR_KEY;
	bool		b_raises = ((const TopkItem *) b)->key == KEY_PROGRAM_ERROR_KEY;
	uint64		x = ((const TopkItem *) a)->ref;
	uint64		y = ((const TopkItem *) b)->ref;

	if (a_raises != b_raises)
		return a_raises ? -1 : 1;
	return x < y ? -1 : (x > y ? 1 : 0);
}

/* a candidate whose key program raises, by its row's TID */
typedef struct RaisingRow
{
	ItemPointerData tid;
	uint64		key;
} RaisingRow;

static int
compare_tids(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) &((const RaisingRow *) a)->tid,
							  (ItemPointer) &((const RaisingRow *) b)->tid);
}

/*
 * Fetch the rows of the candidates whose key program raises an error
 * (candidates[0..n-1], keyed KEY_PROGRAM_ERROR_KEY) in the table's order:
 * the first that is visible and passes the WHERE clause raises in the sink,
 * as a sequential scan from the table's first block meets it first,
 * whatever the order of the index's entries (a clustered index's is that
 * of their values).  Returns the rows kept.
 */
static uint64
fetch_raising_rows(Selection *sel, IndexFetchTableData *fetch, const TopkItem *candidates,
				   size_t n, IndexRowSink sink, void *arg, TupleTableSlot *slot,
				   IndexSelectStats *stats)
{
	RaisingRow *rows = palloc_extended(sizeof(RaisingRow) * n, MCXT_ALLOC_HUGE);
	uint64		kept = 0;

	for (size_t i = 0; i < n; i++)
	{
		Buffer		buf = recent_buffers_read(sel->spec->index,
											  colindex_position_block(candidates[i].ref), NULL);
		int			s = colindex_position_slot(candidates[i].ref);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (colindex_slot_live(sel->layout, BufferGetPage(buf), s))
			rows[i].tid = *colindex_slot_tid(sel->layout, BufferGetPage(buf), s);
		else
			ItemPointerSetInvalid(&rows[i].tid);
		UnlockReleaseBuffer(buf);
		rows[i].key = candidates[i].key;
	}
	/* an entry freed since the round read it sorts first, and is skipped */
	qsort(rows, n, sizeof(RaisingRow), compare_tids);
	for (size_t i = 0; i < n; i++)
	{
		bool		all_dead;

		CHECK_FOR_INTERRUPTS();
		if (fetch_candidate(sel, fetch, &rows[i].tid, rows[i].key, sink, arg, slot, stats,
							&all_dead))
			kept++;
	}
	pfree(rows);
	return kept;
}

/*
 * Fetch a round's candidates: those whose key program raises first, in the
 * table's order, then the others index block by block; returns the rows
 * kept.
 */
static uint64
fetch_round(Selection *sel, TopkResult *result, IndexRowSink sink, void *arg,
			TupleTableSlot *slot, IndexSelectStats *stats)
{
	IndexFetchTableData *fetch = table_index_fetch_begin(sel->spec->heap);
	TopkItem   *candidates = palloc_extended(sizeof(TopkItem) * Max(result->count, 1),
											 MCXT_ALLOC_HUGE);
	FetchAhead	ahead = {.candidates = candidates,.n = result->count,
	.heap_blocks = sel->heap_table ? RelationGetNumberOfBlocks(sel->spec->heap) : 0};
	uint64		kept = 0;
	size_t		i = 0;

	memcpy(candidates, result->items, sizeof(TopkItem) * result->count);
	qsort(candidates, result->count, sizeof(TopkItem), compare_fetch_order);
	while (i < result->count && candidates[i].key == KEY_PROGRAM_ERROR_KEY)
		i++;
	if (i > 0)
		kept += fetch_raising_rows(sel, fetch, candidates, i, sink, arg, slot, stats);
	ahead.entries = ahead.line_pointers = ahead.tuples = i;
	while (i < result->count)
	{
		size_t		end = i + 1;

		while (end < result->count &&
			   colindex_position_block(candidates[end].ref) ==
			   colindex_position_block(candidates[i].ref))
			end++;
		kept += fetch_block(sel, fetch, &ahead, i, candidates + i, end - i, sink, arg, slot,
							stats);
		i = end;
	}
	table_index_fetch_end(fetch);
	pfree(candidates);
	return kept;
}

/*
 * Hand the sink the candidates' rows, round by round, until it has kept
 * bound rows (or spec->answer_held says that the rows hold the answer) or
 * the index has no candidates left.
 */
void
colindex_select_rows(const IndexSelectSpec *spec, uint64 bound, IndexRowSink sink, void *arg,
					 TupleTableSlot *slot, IndexSelectStats *stats)
{
	Selection  *sel = palloc0(sizeof(Selection));
	uint64		entries_max;
	uint64		count;
	uint64		kept = 0;
	IndexGpu   *gpu;

	/* as a sequential scan does: the answer depends on every row (serializable only) */
	PredicateLockRelation(spec->heap, spec->snapshot);
	sel->spec = spec;
	sel->exact = spec->exact;
	sel->heap_table = spec->heap->rd_tableam == GetHeapamTableAmRoutine();
	sel->layout = colindex_layout(spec->index);
	for (int i = 0; i < sel->layout->ncolumns; i++)
		sel->attnos[i] = spec->index->rd_index->indkey.values[i];
	sel->skip_killed = !TransactionStartedDuringRecovery();
	sel->eval = colindex_page_eval_create(spec, sel->layout, sel->attnos, sel->skip_killed);
	sel->page_keys = palloc(sizeof(uint64) * sel->layout->capacity);
	sel->page_slots = palloc(sizeof(uint16) * sel->layout->capacity);
	sel->keys = palloc(sizeof(uint64) * sel->layout->capacity);
	sel->positions = palloc(sizeof(uint64) * sel->layout->capacity);
	sel->callback.func = destroy_topk;
	sel->callback.arg = sel;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &sel->callback);

	/* a parallel scan's processes share the blocks out on the CPU */
	gpu = spec->shared == NULL ?
		colindex_gpu_begin(spec, sel->layout, sel->attnos, sel->skip_killed, stats) : NULL;

	/* no round can find more entries than the index has slots */
	entries_max = (uint64) RelationGetNumberOfBlocks(spec->index) * sel->layout->capacity;
	count = Min((uint64) (bound * spec->candidates_per_row) + EXTRA_CANDIDATES,
				Max(entries_max, 1));
	for (;;)
	{
		TopkResult	result;
		uint64		round_kept;
		instr_time	fetch_start;
		instr_time	fetch_end;

		stats->rounds++;
		if (gpu == NULL ||
			!colindex_gpu_round(gpu, count, sel->have_threshold, sel->threshold,
								sel->tied_fetched, sel->ntied_fetched, &sel->exact, &result,
								stats))
			select_round(sel, count, &result, stats);
		if (result.count == 0)
			break;
		INSTR_TIME_SET_CURRENT(fetch_start);
		round_kept = fetch_round(sel, &result, sink, arg, slot, stats);
		INSTR_TIME_SET_CURRENT(fetch_end);
		INSTR_TIME_SUBTRACT(fetch_end, fetch_start);
		stats->fetch_ms += INSTR_TIME_GET_MILLISEC(fetch_end);
		kept += round_kept;
		advance_threshold(sel, &result);
		destroy_topk(sel);
		/* enough rows, or every entry left was a candidate, or none can be below */
		if ((spec->answer_held ? spec->answer_held(arg, sel->threshold) : kept >= bound) ||
			result.count < count ||
			(sel->threshold == 0 && !sel->exact))
			break;
		/* enough candidates for the rows missing at this round's rate, at least twice as many */
		count = Max(2 * count,
					(uint64) ((double) (bound - Min(kept, bound)) * result.count /
							  Max(round_kept, 1) * 1.25));
		count = Min(count, Max(entries_max, 1));
	}
	stats->no_errors = sel->exact && !spec->exact;
	destroy_topk(sel);
	colindex_gpu_end(gpu);
}
