/*-------------------------------------------------------------------------
 *
 * scan_driver.c
 *	  The heap scan of the three custom scans: the block loop, pages to the
 *	  GPU or the CPU, the CPU's second read after a GPU failure, the
 *	  parallel scan's shared memory and the scan's counts (scan_driver.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"

#include "scan_driver.h"

/* the scan's own part of the shared memory, after the counts */
#define OWN_OFFSET MAXALIGN(sizeof(ScanSharedCounters))

static ParallelTableScanDesc
table_scan_of(ScanDriver *driver, void *coordinate)
{
	return (ParallelTableScanDesc) ((char *) coordinate + OWN_OFFSET +
									MAXALIGN(driver->own_bytes));
}

void
scan_driver_init(ScanDriver *driver, ScanState *node, ScanSharedCallback own_callback,
				 Size own_bytes, bool reads_heap)
{
	driver->node = node;
	driver->own_callback = own_callback;
	driver->own_bytes = own_bytes;
	driver->reads_heap = reads_heap;
	driver->reader.rel = node->ss_currentRelation;
	driver->reader.econtext = node->ps.ps_ExprContext;
	driver->reader.table_slot = table_slot_create(node->ss_currentRelation,
												  &node->ps.state->es_tupleTable);
}

void
scan_driver_begin(ScanDriver *driver)
{
	RowReader  *reader = &driver->reader;

	if (reader->filter)
		scan_filter_program_bind(reader->filter, driver->node->ps.ps_ExprContext);
	reader->parallel = driver->shared ? table_scan_of(driver, driver->shared) : NULL;
	scan_row_reader_begin(reader, driver->node->ps.state->es_snapshot);
	driver->rows_to_gpu = false;
	driver->blocks_read = 0;
	memset(&driver->page_stats, 0, sizeof(PageSinkStats));
	memcpy(driver->counts_at_begin, driver->counters.counts, sizeof(driver->counts_at_begin));
}

void
scan_driver_rows_to_gpu(ScanDriver *driver)
{
	driver->rows_to_gpu = true;
}

void
scan_driver_read_block(ScanDriver *driver, BlockNumber block)
{
	scan_row_reader_read_page(&driver->reader, block);
	driver->counters.counts[SCAN_COUNT_PAGES_READ]++;
	driver->counters.counts[SCAN_COUNT_ROWS_SCANNED] += driver->reader.scan->rs_ntuples;
	driver->blocks_read++;
}

/*
 * The table's blocks, the rest of this process's share: each to the page
 * sink where there is one, else read here.  Stops early, false, where the
 * GPU failed a job.
 */
static bool
read_blocks(ScanDriver *driver, PageSink *pages, const ScanDriverRoutine *routine, void *arg)
{
	RowReader  *reader = &driver->reader;
	uint64	   *counts = driver->counters.counts;
	BlockNumber block;
	bool		gpu_decides = false;

	while ((block = pages ? scan_page_sink_next_block(pages, reader, &gpu_decides) :
			scan_row_reader_next_read_block(reader)) != InvalidBlockNumber)
	{
		if (pages != NULL)
		{
			WholePage	whole;

			scan_row_reader_pin(reader, block, gpu_decides, &whole);
			scan_page_sink_add(pages, block, &whole);
			counts[SCAN_COUNT_PAGES_READ]++;
			counts[SCAN_COUNT_GPU_PAGES]++;
			if (!whole.all_visible)
			{
				counts[SCAN_COUNT_GPU_CHECKED_PAGES]++;
				counts[SCAN_COUNT_TUPLES_CHECKED] += whole.checked;
			}
			if (scan_page_sink_failed(pages))
				return false;
			continue;
		}
		scan_driver_read_block(driver, block);
		routine->read_page(arg, block);
		if (driver->rows_to_gpu && routine->rows_job_failed(arg))
			return false;
	}
	return true;
}

/*
 * The GPU failed a job: the scan drops what it made and every block this
 * process took so far is read again, here.  With a page sink those are
 * all the blocks the reader handed out (the sink's, the GPU's and those
 * the GPU sent back); without one, the blocks read so far, as a read
 * stream may have taken more ahead, which it still returns.
 */
static void
start_over(ScanDriver *driver, PageSink *pages, const ScanDriverRoutine *routine, void *arg)
{
	RowReader  *reader = &driver->reader;
	size_t		nblocks = pages ? reader->ntaken : (size_t) driver->blocks_read;

	if (pages != NULL)
		scan_page_sink_abandon(pages);
	/* the counts say what the answer was made of */
	memcpy(driver->counters.counts, driver->counts_at_begin, sizeof(driver->counts_at_begin));
	scan_driver_read_again(driver, nblocks, routine, arg);
}

void
scan_driver_read_again(ScanDriver *driver, size_t nblocks, const ScanDriverRoutine *routine,
					   void *arg)
{
	RowReader  *reader = &driver->reader;

	routine->start_over(arg);
	driver->rows_to_gpu = false;
	for (size_t i = 0; i < nblocks; i++)
	{
		scan_driver_read_block(driver, reader->taken[i]);
		routine->read_page(arg, reader->taken[i]);
	}
}

bool
scan_driver_run(ScanDriver *driver, PageSink *pages, const ScanDriverRoutine *routine, void *arg)
{
	uint64	   *counts = driver->counters.counts;

	if (pages != NULL || driver->rows_to_gpu)
		scan_row_reader_remember_blocks(&driver->reader);
	while (!(read_blocks(driver, pages, routine, arg) &&
			 routine->finish(arg, pages, &driver->page_stats)))
	{
		bool		too_few_visible = pages != NULL && scan_page_sink_too_few_visible(pages);

		start_over(driver, pages, routine, arg);
		counts[SCAN_COUNT_VISIBILITY_RESCANS] += too_few_visible;
		pages = NULL;
	}
	if (pages == NULL)
		return false;
	/* the pages the GPU read without the scan: the page cache held them */
	counts[SCAN_COUNT_ROWS_SCANNED] += driver->page_stats.rows_read;
	/* pages sent back undecided were pinned and counted twice */
	counts[SCAN_COUNT_GPU_SENT_BACK] += driver->page_stats.pages_undecided;
	counts[SCAN_COUNT_PAGES_READ] -= driver->page_stats.pages_undecided;
	counts[SCAN_COUNT_GPU_PAGES] -= driver->page_stats.pages_undecided;
	counts[SCAN_COUNT_GPU_CHECKED_PAGES] -= driver->page_stats.pages_undecided;
	counts[SCAN_COUNT_GPU_CACHED_PAGES] += driver->page_stats.pages_cached;
	counts[SCAN_COUNT_GPU_UNPINNED_PAGES] += driver->page_stats.pages_unpinned;
	counts[SCAN_COUNT_GPU_WAL_VOUCHED] += driver->page_stats.pages_wal_vouched;
	counts[SCAN_COUNT_GPU_CHECKED_PAGES] += driver->page_stats.pages_wal_decided;
	counts[SCAN_COUNT_GPU_PAGES] += driver->page_stats.pages_unpinned;
	counts[SCAN_COUNT_PAGES_READ] += driver->page_stats.pages_unpinned;
	counts[SCAN_COUNT_GPU_SETTLED] += driver->page_stats.rows_settled;
	counts[SCAN_COUNT_GPU_UNDECIDED] += driver->page_stats.rows_undecided;
	counts[SCAN_COUNT_TUPLES_CHECKED] += driver->page_stats.tuples_checked;
	return true;
}

void
scan_driver_end(ScanDriver *driver)
{
	scan_row_reader_end(&driver->reader);
}

void
scan_driver_explain_pages(const uint64 *counts, double scan_ms, ExplainState *es)
{
	uint64		pages_read = counts[SCAN_COUNT_PAGES_READ];
	uint64		gpu_pages = counts[SCAN_COUNT_GPU_PAGES];

	ExplainPropertyUInteger("Pages Read", NULL, pages_read, es);
	if (gpu_pages > 0)
	{
		ExplainPropertyUInteger("Pages Read on GPU", NULL, gpu_pages, es);
		ExplainPropertyUInteger("Pages Read on CPU", NULL, pages_read - gpu_pages, es);
	}
	if (counts[SCAN_COUNT_GPU_CACHED_PAGES] > 0)
		ExplainPropertyUInteger("Pages from GPU Cache", NULL, counts[SCAN_COUNT_GPU_CACHED_PAGES], es);
	if (counts[SCAN_COUNT_GPU_UNPINNED_PAGES] > counts[SCAN_COUNT_GPU_WAL_VOUCHED])
		ExplainPropertyUInteger("Pages Vouched by Visibility Map", NULL,
								counts[SCAN_COUNT_GPU_UNPINNED_PAGES] -
								counts[SCAN_COUNT_GPU_WAL_VOUCHED], es);
	if (counts[SCAN_COUNT_GPU_WAL_VOUCHED] > 0)
		ExplainPropertyUInteger("Pages Vouched by WAL", NULL, counts[SCAN_COUNT_GPU_WAL_VOUCHED],
								es);
	if (counts[SCAN_COUNT_GPU_CHECKED_PAGES] > 0)
	{
		ExplainPropertyUInteger("Pages Not All-Visible on GPU", NULL,
								counts[SCAN_COUNT_GPU_CHECKED_PAGES], es);
		if (counts[SCAN_COUNT_GPU_SETTLED] + counts[SCAN_COUNT_GPU_UNDECIDED] > 0)
		{
			ExplainPropertyUInteger("Tuples Settled on GPU", NULL,
									counts[SCAN_COUNT_GPU_SETTLED], es);
			ExplainPropertyUInteger("Rows Undecided on GPU", NULL,
									counts[SCAN_COUNT_GPU_UNDECIDED], es);
		}
		if (counts[SCAN_COUNT_GPU_SENT_BACK] > 0)
			ExplainPropertyUInteger("Pages Sent Back Undecided", NULL,
									counts[SCAN_COUNT_GPU_SENT_BACK], es);
		ExplainPropertyUInteger("Tuples Checked on CPU", NULL, counts[SCAN_COUNT_TUPLES_CHECKED], es);
	}
	if (counts[SCAN_COUNT_VISIBILITY_RESCANS] > 0)
		ExplainPropertyUInteger("Rescans on CPU for Visibility", NULL,
								counts[SCAN_COUNT_VISIBILITY_RESCANS], es);
	if (es->timing && scan_ms > 0)
	{
		ExplainPropertyFloat("Read Rate", "MB/s",
							 (double) pages_read * BLCKSZ / (scan_ms * 1000.0), 0, es);
		if (gpu_pages > 0)
			ExplainPropertyFloat("GPU Page Rate", "MB/s",
								 (double) gpu_pages * BLCKSZ / (scan_ms * 1000.0), 0, es);
	}
}

bool
scan_driver_no_recheck(ScanState *node, TupleTableSlot *slot)
{
	return true;
}

static ScanDriver *
driver_of(CustomScanState *node)
{
	return &((ScanDriverNode *) node)->scan;
}

Node *
scan_driver_create_state(CustomScan *cscan)
{
	const ScanDriverMethods *methods = (const ScanDriverMethods *) cscan->methods;
	CustomScanState *css = (CustomScanState *) newNode(methods->state_size, T_CustomScanState);

	css->methods = &methods->exec;
	return (Node *) css;
}

Size
scan_driver_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	ScanDriver *driver = driver_of(node);
	Size		size = add_size(OWN_OFFSET, MAXALIGN(driver->own_bytes));

	if (!driver->reads_heap)
		return size;
	return add_size(size, table_parallelscan_estimate(node->ss.ss_currentRelation,
													  node->ss.ps.state->es_snapshot));
}

void
scan_driver_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ScanDriver *driver = driver_of(node);

	driver->shared = coordinate;
	scan_counters_init_shared(&driver->counters, (ScanSharedCounters *) coordinate);
	if (driver->reads_heap)
		table_parallelscan_initialize(node->ss.ss_currentRelation,
									  table_scan_of(driver, coordinate),
									  node->ss.ps.state->es_snapshot);
	driver->own_callback(node, SCAN_SHARED_INITIALIZE, (char *) coordinate + OWN_OFFSET, pcxt);
}

/*
 * Before a rescan's workers start: the last run's counts are complete, and
 * the blocks are handed out from the start again.
 */
void
scan_driver_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ScanDriver *driver = driver_of(node);

	scan_counters_collect(&driver->counters);
	if (driver->reads_heap)
		table_parallelscan_reinitialize(node->ss.ss_currentRelation,
										table_scan_of(driver, coordinate));
	driver->own_callback(node, SCAN_SHARED_REINITIALIZE, (char *) coordinate + OWN_OFFSET, NULL);
}

void
scan_driver_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	ScanDriver *driver = driver_of(node);

	driver->shared = coordinate;
	scan_counters_attach(&driver->counters, (ScanSharedCounters *) coordinate);
	driver->own_callback(node, SCAN_SHARED_ATTACH, (char *) coordinate + OWN_OFFSET, NULL);
}

void
scan_driver_shutdown(CustomScanState *node)
{
	ScanDriver *driver = driver_of(node);

	if (driver->shared == NULL || IsParallelWorker())
		return;
	driver->own_callback(node, SCAN_SHARED_DETACH, (char *) driver->shared + OWN_OFFSET, NULL);
	scan_counters_detach(&driver->counters);
	driver->shared = NULL;
}
