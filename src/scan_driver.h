/*-------------------------------------------------------------------------
 *
 * scan_driver.h
 *	  The heap scan of the three custom scans: the block loop over a table
 *	  or this process's share of it, each page to the GPU or to the CPU
 *	  reader, the CPU's second read of the blocks after the GPU failed a
 *	  job, the parallel scan's shared memory, and the scan's counts.
 *
 * A scan (GpuTopK, GpuTopKAgg, GpuTopKGroups) says only what a page read
 * on the CPU yields and what it does with the GPU's answers, through a
 * ScanDriverRoutine; with a page sink (scan_page_sink.h) the driver hands
 * it every page, pinned with the line pointers of its visible tuples, else
 * it reads the pages here.  Under gputopk.device = auto a GPU job that
 * fails, the page sink's or one the scan feeds with its rows, leaves the
 * scan to start over on the CPU: the driver reads every block this
 * process took again, under the same snapshot, which shows the same rows,
 * then goes on with the rest of the table on the CPU alone.
 *
 * The driver's functions of a parallel scan's shared memory are the
 * scan's CustomExecMethods of that memory; the memory holds the scan's
 * counts, then the scan's own part (its size and its callback are the
 * scan's), then the table's parallel block scan, where the scan reads the
 * table.  A scan's state (a ScanDriverNode) holds its driver right after
 * its CustomScanState.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_DRIVER_H
#define SCAN_DRIVER_H

#include "access/parallel.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"

#include "scan_counters.h"
#include "scan_page_sink.h"
#include "scan_row_reader.h"

/* what the driver counts, the first of a scan's counts (a scan's own follow) */
typedef enum ScanDriverCount
{
	SCAN_COUNT_PAGES_READ,		/* on the CPU or the GPU */
	SCAN_COUNT_GPU_PAGES,		/* of those, read on the GPU in place */
	SCAN_COUNT_GPU_CACHED_PAGES,	/* of those, from the GPU's page cache */
	SCAN_COUNT_GPU_UNPINNED_PAGES,	/* of those, not read by the scan, */
	SCAN_COUNT_GPU_WAL_VOUCHED,	/* of those, vouched for by the WAL */
	SCAN_COUNT_GPU_CHECKED_PAGES,	/* of those, not all-visible */
	SCAN_COUNT_TUPLES_CHECKED,	/* tuples whose visibility the CPU decided */
	SCAN_COUNT_GPU_SETTLED,		/* tuples whose visibility the GPU settled */
	SCAN_COUNT_GPU_UNDECIDED,	/* rows that passed it left to the CPU */
	SCAN_COUNT_GPU_SENT_BACK,	/* pages it left undecided to the CPU whole */
	SCAN_COUNT_VISIBILITY_RESCANS,	/* runs read again on the CPU: too few of
									 * those were visible */
	SCAN_COUNT_ROWS_SCANNED,	/* the visible tuples of the pages read */
	SCAN_DRIVER_COUNTS
} ScanDriverCount;

/* what a scan does with the table's rows */
typedef struct ScanDriverRoutine
{
	/* the rows of a page the reader has read on the CPU (block) */
	void		(*read_page) (void *arg, BlockNumber block);

	/*
	 * Whether the GPU job that the scan hands its rows to failed (under
	 * auto); asked after each page where scan_driver_rows_to_gpu said so.
	 */
	bool		(*rows_job_failed) (void *arg);

	/*
	 * The blocks are read: the GPU's answers taken, the page sink's (pages,
	 * or NULL) with its work in *stats; false where the GPU failed a job.
	 */
	bool		(*finish) (void *arg, PageSink *pages, PageSinkStats *stats);

	/*
	 * The GPU failed a job: what the scan made of the rows so far is
	 * dropped, and the rows it reads from now on stay on the CPU.
	 */
	void		(*start_over) (void *arg);
} ScanDriverRoutine;

/* what befalls a scan's own part of a parallel scan's shared memory */
typedef enum ScanSharedEvent
{
	SCAN_SHARED_INITIALIZE,		/* the leader, in a new segment (pcxt->seg
								 * NULL where none could be made) */
	SCAN_SHARED_REINITIALIZE,	/* the leader, before a rescan's workers start */
	SCAN_SHARED_ATTACH,			/* a worker */
	SCAN_SHARED_DETACH			/* the leader, before the memory goes */
} ScanSharedEvent;

/* a scan's callback for its own part (own); pcxt only at SCAN_SHARED_INITIALIZE */
typedef void (*ScanSharedCallback) (CustomScanState *node, ScanSharedEvent event, void *own,
									ParallelContext *pcxt);

typedef struct ScanDriver
{
	/* the scan's reader: its quals set by the scan, the rest by the driver */
	RowReader	reader;
	/* the scan's counts, SCAN_DRIVER_COUNTS first; the scan counts its processes */
	ScanCounters counters;
	/* what the last run's page sink did, once it answered */
	PageSinkStats page_stats;

	ScanState  *node;
	bool		reads_heap;		/* the parallel scan hands out the table's blocks */
	ScanSharedCallback own_callback;	/* the scan's part of the shared memory, */
	Size		own_bytes;		/* of this size */
	void	   *shared;			/* a parallel scan's shared memory, or NULL */
	bool		rows_to_gpu;	/* the CPU's rows go to a GPU job of the scan */
	uint64		blocks_read;	/* on the CPU, since the scan began */
	uint64		counts_at_begin[SCAN_DRIVER_COUNTS];
} ScanDriver;

/* the first fields of a scan's state */
typedef struct ScanDriverNode
{
	CustomScanState css;
	ScanDriver	scan;
} ScanDriverNode;

#define SCAN_DRIVER_NODE_CHECK(type) \
	StaticAssertDecl(offsetof(type, scan) == offsetof(ScanDriverNode, scan), \
					 #type " holds its driver right after its CustomScanState")

/*
 * At BeginCustomScan: the reader for the node's table (the scan sets its
 * quals); own_bytes of shared memory for the scan's part in a parallel
 * plan, and whether that hands out the table's blocks (reads_heap).
 */
extern void scan_driver_init(ScanDriver *driver, ScanState *node,
							 ScanSharedCallback own_callback, Size own_bytes, bool reads_heap);

/*
 * Begin reading the table, in this process alone or its share of a
 * parallel scan; the reader's filter bound to the node's parameters.
 */
extern void scan_driver_begin(ScanDriver *driver);

/* The rows the CPU reads go to a GPU job of the scan: its blocks are kept. */
extern void scan_driver_rows_to_gpu(ScanDriver *driver);

/*
 * Read the rest of the table: every page to the page sink (pages), or
 * without one (NULL) to routine->read_page; then routine->finish.
 * Where the GPU fails a job, start over on the CPU.  True where the page
 * sink answered (driver->page_stats), false where there was none or it
 * failed.
 */
extern bool scan_driver_run(ScanDriver *driver, PageSink *pages,
							const ScanDriverRoutine *routine, void *arg);

/*
 * What the scan made so far dropped (routine->start_over) and the first
 * nblocks blocks this process took (those remembered) read again, here,
 * with no more rows to the GPU.
 */
extern void scan_driver_read_again(ScanDriver *driver, size_t nblocks,
								   const ScanDriverRoutine *routine, void *arg);

/* Read a block on the CPU, counted; its rows are the reader's. */
extern void scan_driver_read_block(ScanDriver *driver, BlockNumber block);

extern void scan_driver_end(ScanDriver *driver);

/*
 * EXPLAIN ANALYZE's lines for the pages a scan read (counts, summed over its
 * processes): how many on the GPU in place, from its page cache, vouched
 * for by the visibility map unread, not all-visible with their tuples'
 * visibility settled on the GPU or decided on the CPU, runs read again for
 * visibility; with timing on (scan_ms > 0) the rates.
 */
extern void scan_driver_explain_pages(const uint64 *counts, double scan_ms,
									  struct ExplainState *es);

/* ExecScan's recheck of a scan's rows: none, the rows it returns are final */
extern bool scan_driver_no_recheck(ScanState *node, TupleTableSlot *slot);

/*
 * A parallel scan's shared memory: a scan's CustomExecMethods of it, as
 * SCAN_DRIVER_METHODS puts them beside the scan's own.
 */
extern Size scan_driver_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
extern void scan_driver_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									   void *coordinate);
extern void scan_driver_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
										 void *coordinate);
extern void scan_driver_initialize_worker(CustomScanState *node, shm_toc *toc,
										  void *coordinate);
/* the leader's: the workers' counts, before the memory goes */
extern void scan_driver_shutdown(CustomScanState *node);

/*
 * A scan's methods: its CustomScanMethods first (a plan's methods pointer
 * points here, in the executor and, by the scan's registered name, in a
 * parallel worker), then what scan_driver_create_state makes its state of.
 */
typedef struct ScanDriverMethods
{
	CustomScanMethods scan;
	Size		state_size;
	CustomExecMethods exec;
} ScanDriverMethods;

/* A plan's scan state, of its ScanDriverMethods (CreateCustomScanState). */
extern Node *scan_driver_create_state(CustomScan *cscan);

/*
 * Defines name, a scan's ScanDriverMethods: its node's name, its state's
 * type, and its begin, exec, end, rescan and EXPLAIN functions beside the
 * driver's of the parallel scan's shared memory.
 */
#define SCAN_DRIVER_METHODS(name, node_name, state_type, begin, exec_fn, end, rescan, explain) \
	const ScanDriverMethods name = { \
		.scan = { \
			.CustomName = (node_name), \
			.CreateCustomScanState = scan_driver_create_state, \
		}, \
		.state_size = sizeof(state_type), \
		.exec = { \
			.CustomName = (node_name), \
			.BeginCustomScan = (begin), \
			.ExecCustomScan = (exec_fn), \
			.EndCustomScan = (end), \
			.ReScanCustomScan = (rescan), \
			.ExplainCustomScan = (explain), \
			.EstimateDSMCustomScan = scan_driver_estimate_dsm, \
			.InitializeDSMCustomScan = scan_driver_initialize_dsm, \
			.ReInitializeDSMCustomScan = scan_driver_reinitialize_dsm, \
			.InitializeWorkerCustomScan = scan_driver_initialize_worker, \
			.ShutdownCustomScan = scan_driver_shutdown, \
		}, \
	}

#endif							/* SCAN_DRIVER_H */
