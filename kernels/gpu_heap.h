/*
 * gpu_heap.h
 *	  Heap pages read in place from PostgreSQL's shared_buffers by a GPU
 *	  kernel: tuples deformed, the compiled filter and key run, and the keys
 *	  of the rows that pass handed to a top-k (the GPU side of
 *	  src/scan_page_sink.c).
 *
 * The GPU service registers shared_buffers with CUDA, mapped, so that a
 * kernel reads a page where it is, over the bus, without a copy by the
 * CPU.  A scan process pins the pages it hands over and keeps them pinned
 * until the batch is read.  On an all-visible page every tuple is visible
 * to every snapshot; on another the scan either listed the line pointers
 * of the tuples visible to its snapshot, or (a top-k's page marked
 * decide) the kernel decides each tuple by its header and the query's
 * snapshot (tuple_visibility.h), and a row whose header does not settle
 * it goes to the top-k with GPU_HEAP_TID_UNDECIDED in its TID, for the
 * CPU to decide.  Line pointers up to lines cannot change while pinned,
 * or the scan listed the normal ones (see src/scan_row_reader.c).  Each
 * row is known to the top-k by its TID, block << 16 | offset.
 *
 * Like the rest of kernels/: no PostgreSQL headers, GpuStatus results.  A
 * reader is used by one thread at a time, with its device current.
 */
#ifndef GPU_HEAP_H
#define GPU_HEAP_H

#include "gpu_api.h"
#include "gpu_groups.h"
#include "gpu_program.h"
#include "gpu_topk.h"
#include "tuple_visibility.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* the most attributes a query reads up to; a query beyond stays on the CPU */
#define GPU_HEAP_MAX_ATTRS 64

/* the most in-progress xids a query's snapshot carries; beyond, it carries none */
#define GPU_HEAP_MAX_XIDS 512

/* a TID's bit (in its offset) for a row whose visibility the GPU left to the CPU */
#define GPU_HEAP_TID_UNDECIDED 0x8000

/* the query's MVCC snapshot, for pages marked decide (a TupleSnapshot) */
typedef struct GpuHeapSnapshot
{
	uint32_t	xmin;
	uint32_t	xmax;
	uint32_t	complete;		/* whether inprogress holds all between */
	uint32_t	ninprogress;
	uint32_t	no_own_xids;	/* the current transaction has no xid */
	uint32_t	inprogress[GPU_HEAP_MAX_XIDS];	/* sorted */
} GpuHeapSnapshot;

/* a table attribute as the tuple holds it */
typedef struct GpuHeapAttr
{
	int16_t		len;			/* attlen: > 0 fixed, -1 varlena */
	int16_t		align;			/* in bytes: 1, 2, 4 or 8 */
} GpuHeapAttr;

typedef struct GpuHeapQuery
{
	int32_t		page_size;
	int32_t		max_lines;		/* line pointers a page can have */
	int32_t		natts;			/* attributes 1 to natts are described */
	int32_t		fixed_natts;	/* the leading ones of fixed width */
	GpuHeapAttr attrs[GPU_HEAP_MAX_ATTRS];
	int32_t		fixed_offsets[GPU_HEAP_MAX_ATTRS];	/* theirs in a tuple without NULLs */
	/* the filter and the key over a tuple's columns (attno) */
	GpuRowProgram program;
	uint32_t	relation[3];	/* the table's tablespace, database and relfilenode */
	GpuHeapSnapshot snapshot;
	uint64_t	wal_lsn;		/* the WAL's insert position, read after the snapshot
								 * was taken and before any page: 0 where the page
								 * cache may not vouch for pages by the WAL */
} GpuHeapQuery;

/* words of a page's mask of line pointers: enough for 8 kB pages */
#define GPU_HEAP_MASK_WORDS 10

/* a page the scan did not read: the cache's copy, if current, stands for it */
#define GPU_HEAP_UNPINNED 0xFFFFFFFFu

/*
 * A page of the table: pinned in shared_buffers, or (buffer
 * GPU_HEAP_UNPINNED) unread, for the page cache to vouch for: by the
 * visibility map (vm_lsn) or by the WAL (the query's wal_lsn).  An
 * unpinned page's lines are the ones its copy was read with.
 */
typedef struct GpuHeapPage
{
	uint32_t	buffer;			/* its index in shared_buffers, from 0 */
	uint32_t	block;			/* its block in the table */
	uint32_t	lines;			/* line pointers 1 to lines are read, */
	uint32_t	masked;			/* if not 0, only those with their bit in normal */
	uint32_t	normal[GPU_HEAP_MASK_WORDS];	/* bit i - 1: line pointer i */
	uint32_t	decide;			/* if not 0, the kernel decides visibility (a
								 * page not all-visible, lsn not 0 if pinned) */
	uint64_t	lsn;			/* the page's LSN where every change to its tuples
								 * and line pointers sets it (WAL-logged), else 0 */
	uint64_t	vm_lsn;			/* the LSN of its visibility map page, read before
								 * the page while the page's bit was set, else 0 */
} GpuHeapPage;

typedef struct GpuHeapReader GpuHeapReader;

/*
 * Copies of heap pages in device memory, shared by the readers of one
 * device (thread-safe).  A copy stands for its page while the page's
 * (relation, block, LSN) is the same: a page with LSN 0 is never kept.  For
 * a page marked decide, only while its last read as one left no tuple
 * undecided: hint bits set since (without moving the LSN) may settle them,
 * so such a copy is filled again.  It
 * also stands for an unpinned page whose vm_lsn is the one it was filled
 * or last found current with (not 0): see src/scan_page_sink.c for why.
 * And, where the cache follows the WAL (gpu_page_cache_follow_wal), for an
 * unpinned page whose copy was filled or found current by a query whose
 * wal_lsn no WAL record changing the block has started at or after, once
 * every record before the reading query's wal_lsn has been seen
 * (src/service_wal.c says why).
 * Slots are reused clock-wise, never while a kernel reads or fills them.
 */
typedef struct GpuPageCache GpuPageCache;

/* On the current device: bytes / page_size slots; GPU_OK with *out NULL for 0 bytes. */
extern GpuStatus gpu_page_cache_create(size_t bytes, int32_t page_size, GpuPageCache **out);
extern void gpu_page_cache_destroy(GpuPageCache *c);

/* every block of the relation, in a GpuWalChange */
#define GPU_WAL_WHOLE_RELATION 0xFFFFFFFFu

/* a WAL record's change to a block of a relation (or to all of them) */
typedef struct GpuWalChange
{
	uint32_t	relation[3];	/* tablespace, database and relfilenode */
	uint32_t	block;			/* or GPU_WAL_WHOLE_RELATION */
	uint64_t	lsn;			/* where the record starts */
} GpuWalChange;

/*
 * The WAL is followed from from on (again, after a gap): no copy read
 * before it is vouched for by the WAL.  0 stops following it.
 */
extern void gpu_page_cache_follow_wal(GpuPageCache *c, uint64_t from);

/* Changes seen in the WAL; every record that starts before upto has been. */
extern void gpu_page_cache_wal_changes(GpuPageCache *c, const GpuWalChange *changes, size_t n,
									   uint64_t upto);

/* Where the WAL has been seen up to; 0 where it is not followed. */
extern uint64_t gpu_page_cache_wal_upto(GpuPageCache *c);

extern GpuStatus gpu_heap_reader_create(GpuHeapReader **out);
/* NULL is fine; waits for queued work. */
extern void gpu_heap_reader_destroy(GpuHeapReader *r);

/* The query of the batches that follow; set_values holds its sets' values. */
extern GpuStatus gpu_heap_set_query(GpuHeapReader *r, const GpuHeapQuery *query,
									const uint64_t *set_values, size_t nset_values);

/* what gpu_heap_read adds to */
typedef struct GpuHeapCounts
{
	uint64_t	rows_read;		/* tuples read */
	uint64_t	rows_keyed;		/* rows that passed the filter */
	uint64_t	pages_cached;	/* pages read from the cache's copies, */
	uint64_t	pages_unpinned; /* of those, pages the scan did not read, */
	uint64_t	pages_wal_vouched;	/* of those, pages vouched for by the WAL, */
	uint64_t	pages_wal_decided;	/* of those, pages not all-visible */
	uint64_t	rows_settled;	/* tuples of decide pages their headers settled */
	uint64_t	rows_undecided; /* rows that passed, left to the CPU */
	uint64_t	pages_undecided;	/* a groups job's pages sent back undecided */
	uint64_t	pages_unheld;	/* and its pages with text groups it cannot hold */
	double		kernel_ms;		/* device time */
} GpuHeapCounts;

/*
 * Read n pages (descriptions in host memory, reordered here) of the
 * shared_buffers that start at buffers (a device pointer) and push the keys
 * of the rows that pass to the streamed run of t (gpu_topk_push_device).
 * With a cache, a page whose copy is current is read from the copy, and
 * others are copied into it as they are read.  An unpinned page without a
 * current copy is not read: its block goes to missed (room for n, written
 * last, so it may be the descriptions' memory), their count to *nmissed.
 * Returns once the pages have been read: their pins may go.
 */
extern GpuStatus gpu_heap_read(GpuHeapReader *r, GpuPageCache *cache, const char *buffers,
							   GpuHeapPage *pages, size_t n, GpuTopk *t, uint32_t *missed,
							   size_t *nmissed, GpuHeapCounts *counts);

/*
 * The same, but the rows that pass go to their groups in groups
 * (gpu_groups.h), grown first for every row the pages could hold.  A page
 * marked decide whose tuples the kernel cannot all settle is not read:
 * its block goes to missed as well (counts->pages_undecided).  Nor is a
 * page with a visible row whose text group is longer than
 * GPU_GROUPS_TEXT_BYTES, compressed or out of line: it is counted in
 * counts->pages_unheld, and the groups lack its rows.
 */
extern GpuStatus gpu_heap_read_groups(GpuHeapReader *r, GpuPageCache *cache,
									  const char *buffers, GpuHeapPage *pages, size_t n,
									  GpuGroups *groups, uint32_t *missed, size_t *nmissed,
									  GpuHeapCounts *counts);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_HEAP_H */
