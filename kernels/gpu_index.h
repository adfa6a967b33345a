/*
 * gpu_index.h
 *	  A column index's pages kept in device memory, and the selection of
 *	  a round's candidates from them (the GPU side of src/colindex_gpu.c).
 *
 * The pages are copies of the index's 8 kB pages, each at its block
 * number, stored as the GPU service receives them.  A selection runs one
 * kernel over every data page: for each entry in use (and not marked dead)
 * it runs the compiled WHERE clauses and the ranking key (gpu_program.h),
 * drops keys a round before has already covered, and compacts the rest; the engine
 * (gpu_topk.h) then selects the best of them on the device.  Candidates
 * come back as TopkItems whose ref is the entry's position, block <<
 * slot_bits | slot, as src/colindex.h numbers them.
 *
 * Grouping (gpu_index_groups.cu) reads every data page too: the entries
 * whose table rows are known visible, by a bitmap of the table's blocks,
 * that pass the filter go to a table of groups (gpu_groups.h).
 *
 * Like the rest of kernels/: no PostgreSQL headers, GpuStatus results.
 * An object is used by one thread at a time, with its device current.
 */
#ifndef GPU_INDEX_H
#define GPU_INDEX_H

#include "gpu_api.h"
#include "gpu_groups.h"
#include "gpu_program.h"
#include "gpu_topk.h"

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct GpuIndexQuery
{
	/* the pages: which are data pages, where their entries are */
	uint32_t	nblocks;		/* blocks 1 to nblocks - 1 are read */
	int32_t		page_size;
	int32_t		kind_offset;	/* a page's uint16 kind */
	int32_t		data_kind;		/* the kind of a data page */
	int32_t		high_offset;	/* a data page's uint16 count of slots used */
	int32_t		capacity;		/* slots per page */
	int32_t		slot_bits;		/* a position is block << slot_bits | slot */
	int32_t		live_offset;	/* bitmaps of the slots in use, and marked dead */
	int32_t		killed_offset;
	int32_t		tid_offset;		/* the slots' table TIDs, 6 bytes each */
	int32_t		summary_offset; /* a data page's summary (page_bounds.h), or 0 */
	bool		skip_killed;

	/* the filter and the key over an entry's columns (null_offset, value_offset) */
	GpuRowProgram program;

	/*
	 * What earlier rounds covered: keys above threshold, and, when exact,
	 * the positions in tied (sorted) of those equal to it.
	 */
	bool		have_threshold;
	bool		exact;
	uint64_t	threshold;

	/* the selection: count keys, and their ties unless exact */
	uint64_t	count;
	/* exact too where the pages' summaries show that no key program raises */
	bool		exact_if_no_errors;
} GpuIndexQuery;

/* what a selection read */
typedef struct GpuIndexCounts
{
	uint64_t	scanned;		/* entries */
	uint64_t	pages_skipped;	/* data pages left unread: their summaries */
	bool		exact;			/* exactly count keys were selected */
} GpuIndexCounts;

typedef struct GpuIndexPages GpuIndexPages;

extern GpuStatus gpu_index_pages_create(int page_size, GpuIndexPages **out);
/* NULL is fine; waits for queued work. */
extern void gpu_index_pages_destroy(GpuIndexPages *p);

/* Device memory the pages take, in bytes. */
extern size_t gpu_index_pages_bytes(const GpuIndexPages *p);

/* Room for blocks 0 to nblocks - 1 (more is kept); new blocks read as zeros. */
extern GpuStatus gpu_index_pages_reserve(GpuIndexPages *p, uint32_t nblocks);

/*
 * Store n pages from host memory (page-locked gives full speed), page i at
 * blocks[i], which must be reserved; a block of UINT32_MAX skips its page.
 * Returns when the host memory may be reused.
 */
extern GpuStatus gpu_index_pages_store(GpuIndexPages *p, const void *pages,
									   const uint32_t *blocks, size_t n);

/*
 * One round's candidates from the pages, by the engine object t (made for
 * the query's key width; reset here for its count and mode): the answer in
 * *result (memory of t), what was read in *counts, the device time in
 * *kernel_ms.  set_values holds the filter's value sets; tied, the
 * positions excluded at the threshold.
 */
extern GpuStatus gpu_index_select(GpuIndexPages *p, const GpuIndexQuery *query,
								  const uint64_t *set_values, size_t nset_values,
								  const uint64_t *tied, size_t ntied, GpuTopk *t,
								  TopkResult *result, GpuIndexCounts *counts, double *kernel_ms);

/*
 * Group the entries: every entry in use (and not marked dead) of a data
 * page whose table block is set in vouched (a bit per block of the first
 * heap_blocks, 64 a word) and that passes the query's filter is added to
 * g, a new table of groups (gpu_groups.h) whose grouping columns and
 * aggregates read the entries' columns.  The query's key, threshold and
 * count are unused.  counts->scanned gets the entries vouched for,
 * counts->pages_skipped the data pages whose summaries show that no entry
 * passes, *passed the entries grouped.
 */
extern GpuStatus gpu_index_group(GpuIndexPages *p, const GpuIndexQuery *query,
								 const uint64_t *set_values, size_t nset_values,
								 const uint64_t *vouched, uint32_t heap_blocks, GpuGroups *g,
								 GpuIndexCounts *counts, uint64_t *passed, double *kernel_ms);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_INDEX_H */
