/*-------------------------------------------------------------------------
 *
 * scan_page_sink.h
 *	  A scan's table pages handed, pinned, to a pages job of the GPU
 *	  service, which reads them in place in shared_buffers and selects the
 *	  best rows of them (kernels/gpu_heap.h).
 *
 * The scan pins each block (scan_row_reader_pin), with the line pointers
 * of the tuples visible to its snapshot, and the page goes into the sink.
 * A top-k's job gets the snapshot too: its pages that are not all-visible
 * go with their normal line pointers, and the GPU decides their tuples'
 * visibility where their headers settle it.  The answer is the best rows
 * of the sink's pages, known by their TIDs; in a top-k's, a TID with
 * GPU_HEAP_TID_UNDECIDED is a row the CPU must decide
 * (scan_row_reader_settle_tids).
 * Everything is released with the memory context that was current at
 * scan_page_sink_create, errors included.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_PAGE_SINK_H
#define SCAN_PAGE_SINK_H

#include "storage/buf.h"
#include "storage/off.h"
#include "utils/relcache.h"

#include "gpu_groups.h"
#include "scan_gpu_program.h"
#include "gpu_topk.h"
#include "scan_gpu_stats.h"
#include "scan_row_reader.h"
#include "topk.h"

typedef struct PageSink PageSink;

/* what the GPU did, for EXPLAIN ANALYZE */
typedef struct PageSinkStats
{
	uint64		rows_read;		/* tuples on the pages read on the GPU */
	uint64		rows_keyed;		/* rows that passed the filter */
	uint64		pages_cached;	/* pages read from the GPU's page cache, */
	uint64		pages_unpinned; /* of them those the scan did not read, */
	uint64		pages_wal_vouched;	/* of those, the ones the WAL vouched for, */
	uint64		pages_wal_decided;	/* of those, the ones not all-visible */
	uint64		rows_settled;	/* tuples whose visibility the GPU settled */
	uint64		rows_undecided; /* rows that passed it left to the CPU, */
	uint64		tuples_checked; /* of those, the answer's, decided on the CPU */
	uint64		pages_undecided;	/* a groups job's pages sent back undecided, */
	uint64		pages_unheld;	/* and its pages with text groups it cannot hold */
	GpuTopkPlan plan;			/* the top-k's last selection */
	uint64		groups;			/* a groups job's groups */
} PageSinkStats;

/*
 * A sink for the reader's scan (begun) whose rows the program selects, or
 * NULL where the GPU cannot read the table's pages: the reader has quals
 * the program does not hold, the snapshot needs serializable conflicts
 * recorded, gputopk.gpu_pages is off, no GPU is at hand under
 * gputopk.device = auto, shared_buffers are not mapped, the kernel cannot
 * read a column or the program, or too few buffers can be pinned.  Under
 * gputopk.device = gpu, an error where the GPU cannot take the job.
 */
extern PageSink *scan_page_sink_create(RowReader *reader, const GpuProgramSource *program, uint64 k,
									   TopkMode mode);

/*
 * A column of a table whose TupleDesc is arg as the page kernel reads it
 * (a GpuColumnOf): by value and of fixed width, or text; false for other
 * columns, a column added with a default (rows written before hold none),
 * or one beyond GPU_HEAP_MAX_ATTRS.
 */
extern bool scan_page_sink_column(void *arg, AttrNumber attno, GpuColumn *column);

/*
 * The same for a groups job: the rows of the pages the GPU reads that pass
 * the reader's filter go to their groups there (gpu_groups.h), a table
 * sized at first for expected_groups.
 */
extern PageSink *scan_page_sink_create_groups(RowReader *reader, const GpuGroupsSpec *groups,
											  uint64 expected_groups);

/*
 * The next block for the scan to pin, InvalidBlockNumber at the end:
 * blocks the GPU sent back, then the reader's next block that does not go
 * to the GPU unread (see scan_page_sink.c).  *gpu_decides: whether the GPU
 * may decide the visibility of its tuples (scan_row_reader_pin); not for a
 * block it sent back.
 */
extern BlockNumber scan_page_sink_next_block(PageSink *sink, RowReader *reader,
											 bool *gpu_decides);

/*
 * A block the scan pinned (scan_row_reader_pin), with its line pointers to read:
 * the GPU reads it, and the sink releases the pin.
 */
extern void scan_page_sink_add(PageSink *sink, BlockNumber block, const WholePage *whole);

/*
 * Whether the GPU failed the sink's job (under auto: service_client.h), or
 * its answer could not hold the best k (too few of the rows the GPU left
 * undecided were visible): the pages it was to read must be read again on
 * the CPU.  The reader keeps the blocks a sink's scan takes
 * (scan_row_reader_remember_blocks) for that.
 */
extern bool scan_page_sink_failed(PageSink *sink);

/* Whether the sink failed for the second reason only. */
extern bool scan_page_sink_too_few_visible(PageSink *sink);

/* After a failure: every pin, the job and the sink released. */
extern void scan_page_sink_abandon(PageSink *sink);

/*
 * The best rows of the pages, in the current memory context, refs being
 * TIDs (block << 16 | offset), every one visible to the snapshot (those
 * the GPU left undecided are decided here); the job's work is added to
 * *gpu and *stats.  Every pin is released.
 */
extern void scan_page_sink_result(PageSink *sink, TopkResult *result, ScanGpuStats *gpu,
								  PageSinkStats *stats);

/*
 * A groups job's answer: the records of the groups chosen, in the current
 * memory context, and their count (0 where the GPU failed the job).
 * Every pin is released.
 */
extern void scan_page_sink_groups(PageSink *sink, char **records, size_t *count,
								  ScanGpuStats *gpu, PageSinkStats *stats);

#endif							/* SCAN_PAGE_SINK_H */
