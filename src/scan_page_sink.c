/*-------------------------------------------------------------------------
 *
 * scan_page_sink.c
 *	  A scan's table pages handed to a pages job of the GPU service: pinned
 *	  with the line pointers of their visible tuples, or, where the GPU's
 *	  page cache can stand for an all-visible page, unread on the
 *	  visibility map's word.
 *
 * The job is described once: the table's attributes up to the last one
 * the filter, the key or the groups read (their widths and alignments, for
 * deforming tuples) and the program (scan_gpu_program.c).  A top-k job
 * selects the best rows; a groups job (GpuTopKGroups) adds the rows to
 * groups on the GPU and sends back the best groups.  Then batches of page
 * descriptions (buffer, block, line pointers) fill the job's two staging
 * buffers in turn: while the GPU reads one batch's pages over the bus,
 * the scan pins the next one's.  A batch's pins are released once the
 * service has read it, which is when the buffer comes back to be filled.
 * A batch holds at most half of a fair share of shared_buffers for one
 * process in pins, so that concurrent scans cannot pin every buffer.
 *
 * Pages unread.  With a page cache, the scan sends a block whose bit is set
 * in its copy of the visibility map page as an unpinned page with that
 * map page's LSN (scan_page_sink_next_block).  The GPU reads the cache's copy
 * of the block if that copy was filled, or found current, by a scan that
 * read the same map page LSN, with the bit set, before it read the page;
 * else it sends the block back and the scan reads it as any other.  Why
 * the copy is then the page as the query's snapshot must see it:
 *
 * - Every change to a heap page's tuples or line pointers clears its bit
 *   first, under the page's exclusive lock (inserts, updates, deletes);
 *   locking a row clears only the all-frozen bit and changes no column,
 *   pruning and defragmenting touch only pages with dead tuples, which
 *   all-visible pages have not, and in-place updates are the catalogs'.
 * - A bit is set only by visibilitymap_set, which for a WAL-logged
 *   relation sets the map page's LSN to its record's, later than any LSN
 *   before it, and is never set back.  So a bit set now, on a map page
 *   whose LSN is the one read (with the bit set) before the copy was
 *   filled, has not been cleared since: the page has not changed since.
 * - The map page is read under its share lock (LSN and bits at once),
 *   after the query's snapshot was taken.  A writer that clears the bit
 *   later is not visible to that snapshot, as for index-only scans, so
 *   the page as it was then is the one to read.
 *
 * Pages unread on the WAL's word.  Where every GPU's process follows the
 * WAL for its page cache (src/service_wal.c, which says why this is
 * exact) and the GPU decides visibility, the scan also sends a block whose
 * bit is clear unpinned, marked decide: the cache reads its copy if no WAL
 * record has changed the block since a scan last read the page with the
 * copy's LSN.  The job's query carries the WAL's insert position, read
 * here after the snapshot and before any page.  A block sent back is
 * pinned and its tuples decided on the GPU, unless the GPU sent it back
 * undecided after it was pinned for it (pinned_decide): then on the CPU.
 *
 * Relations that skip WAL, snapshots taken in recovery and
 * old_snapshot_threshold (whose check reads the page) keep to pins.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "catalog/catalog.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "device.h"
#include "scan_page_sink.h"
#include "service_client.h"
#include "settings.h"
#include "visibility_bits.h"



/* the most pinned pages a batch holds, and the fewest worth a job */
#define BATCH_PAGES_MAX 4096
#define BATCH_PAGES_MIN 16
/* the most pages a batch holds, pinned or not */
#define BATCH_UNPINNED_MAX 16384

struct PageSink
{
	ServiceJob *job;
	RowReader  *reader;
	Relation	rel;
	uint64		k;				/* a top-k's rows asked for, */
	uint64		gpu_k;			/* and those the GPU selects (see settle_answer) */
	bool		too_few_visible;	/* its answer could not hold the best k */
	GpuHeapPage *batch;			/* the buffer being filled */
	size_t		nbatch;
	size_t		batch_cap;
	size_t		pins_cap;
	Buffer	   *pins[2];		/* of the batch in each of the job's buffers */
	size_t		npins[2];
	size_t		nunpinned[2];	/* and its unpinned pages, */
	size_t		ndecide[2];		/* and its pages marked decide */

	/* the visibility map page of the last block, copied under its lock */
	bool		unpinning;		/* whether to send blocks unpinned, */
	bool		wal_vouching;	/* also those not all-visible (for the WAL) */
	bool		gpu_decides;	/* whether the GPU decides visibility */
	bits8	   *pinned_decide;	/* with wal_vouching, the blocks pinned for the
								 * GPU to decide: one sent back is the CPU's */
	Buffer		vm_buffer;
	BlockNumber vm_first;		/* the first block it covers, or InvalidBlockNumber */
	XLogRecPtr	vm_lsn;
	uint8		vm_bits[VM_MAP_BYTES];

	/* blocks sent unpinned that the GPU sent back, for the scan to read */
	BlockNumber *returned;
	size_t		nreturned;
	size_t		next_returned;
	size_t		returned_cap;
	bool		reader_done;	/* the reader has no more blocks */
};

bool
scan_page_sink_column(void *arg, AttrNumber attno, GpuColumn *column)
{
	TupleDesc	desc = arg;
	Form_pg_attribute attr;
	bool		text;

	if (attno < 1 || attno > Min(desc->natts, GPU_HEAP_MAX_ATTRS))
		return false;
	attr = TupleDescAttr(desc, attno - 1);
	text = attr->atttypid == TEXTOID || attr->atttypid == VARCHAROID;
	/* a default for rows written before the column was added is not in the tuple */
	if (!(text || (attr->attbyval && attr->attlen > 0)) || attr->atthasmissing ||
		attr->attisdropped)
		return false;
	memset(column, 0, sizeof(GpuColumn));
	column->attno = attno;
	column->width = attr->attlen;
	column->kind = text ? VALUE_TEXT : scan_filter_value_kind(attr->atttypid);
	return true;
}

/*
 * A vector key's column, by its attribute number: the caller checked that
 * a kernel reads its values in place (scan_vector_key_gpu_column).
 */
static bool
vector_column(void *arg, AttrNumber attno, GpuColumn *column)
{
	memset(column, 0, sizeof(GpuColumn));
	column->attno = attno;
	column->width = -1;
	return true;
}

/* The last attribute the program reads. */
static int
last_attno(const GpuRowProgram *p)
{
	int			last = p->key_is_vector ? p->vector.column.attno :
		p->key_is_program ? 0 : p->key_column.attno;

	for (int i = 0; i < p->nloads; i++)
		last = Max(last, p->loads[i].column.attno);
	for (int i = 0; i < p->nkey_steps; i++)
		if (key_step_is_column(&p->key_steps[i].step))
			last = Max(last, p->key_steps[i].column.attno);
	return last;
}

/* The last attribute the groups read (none: 0). */
static int
last_group_attno(const GpuGroupsSpec *groups)
{
	int			last = 0;

	if (groups == NULL)
		return 0;
	for (int i = 0; i < groups->ncolumns; i++)
		last = Max(last, groups->columns[i].attno);
	for (int i = 0; i < groups->naggs; i++)
		last = Max(last, groups->aggs[i].column.attno);
	return last;
}

/*
 * The tuples' layout up to the last attribute read (the program's or the
 * groups'); false if the kernel cannot walk it.
 */
static bool
describe_layout(TupleDesc desc, const GpuGroupsSpec *groups, GpuHeapQuery *q)
{
	int32		offset = 0;
	bool		fixed = true;

	q->page_size = BLCKSZ;
	q->max_lines = MaxHeapTuplesPerPage;
	q->natts = Max(last_attno(&q->program), last_group_attno(groups));
	q->fixed_natts = 0;
	for (int i = 0; i < q->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		int			align = attr->attalign == TYPALIGN_DOUBLE ? ALIGNOF_DOUBLE :
			attr->attalign == TYPALIGN_INT ? ALIGNOF_INT :
			attr->attalign == TYPALIGN_SHORT ? ALIGNOF_SHORT : 1;

		/* cstrings (attlen -2) are not walked */
		if (attr->attlen <= 0 && attr->attlen != -1)
			return false;
		q->attrs[i].len = attr->attlen;
		q->attrs[i].align = align;
		fixed = fixed && attr->attlen > 0;
		if (fixed)
		{
			offset = TYPEALIGN(align, offset);
			q->fixed_offsets[i] = offset;
			offset += attr->attlen;
			q->fixed_natts = i + 1;
		}
	}
	return true;
}

/* Pinned pages a batch may hold: half of one process's share of shared_buffers, at most. */
static size_t
batch_pins(void)
{
	size_t		share = NBuffers / (MaxBackends + NUM_AUXILIARY_PROCS);

	return Min(Min(share / 2, BATCH_PAGES_MAX), SERVICE_HEAP_PAGES(service_buffer_bytes()));
}

/*
 * The reader's snapshot for the GPU, where it may decide the visibility of
 * tuples by their headers (kernels/tuple_visibility.h): an MVCC snapshot
 * not taken in recovery.  A list of xids in progress too long for the
 * query is not sent; the xids it would name are left to the CPU.
 */
static bool
describe_snapshot(const RowReader *reader, GpuHeapSnapshot *out)
{
	const TupleSnapshot *s = &reader->snapshot_xids;

	if (!reader->header_rules || reader->scan->rs_base.rs_snapshot->takenDuringRecovery)
		return false;
	out->xmin = s->xmin;
	out->xmax = s->xmax;
	out->no_own_xids = s->no_own_xids;
	out->complete = s->complete && s->ninprogress <= GPU_HEAP_MAX_XIDS;
	out->ninprogress = out->complete ? s->ninprogress : 0;
	memcpy(out->inprogress, s->inprogress, sizeof(uint32) * out->ninprogress);
	return true;
}

/*
 * A sink whose job spec describes, for the program and (a groups job) the
 * groups; NULL where the GPU cannot read the table's pages.  Where the
 * GPU may decide visibility (an MVCC snapshot outside recovery), it gets
 * the snapshot, and the scan pins pages that are not all-visible for it to
 * decide their tuples (scan_page_sink_next_block).
 */
static PageSink *
create_sink(RowReader *reader, const GpuProgramSource *program, ServiceJobSpec *spec,
			const GpuGroupsSpec *groups, uint64 expected_groups)
{
	Relation	rel = reader->rel;
	GpuProgramSource source = *program;
	ServicePagesRequest request;
	uint64	   *set_values;
	size_t		nset_values;
	PageSink   *sink;

	if (reader->table_qual != NULL || !scan_row_reader_can_read_whole(reader) ||
		!gputopk_gpu_pages ||
		!service_buffers_mapped() || batch_pins() < BATCH_PAGES_MIN ||
		device_selected_backend() != BACKEND_GPU)
		return NULL;
	source.column_of = scan_page_sink_column;
	source.vector_column_of = vector_column;
	source.arg = RelationGetDescr(rel);
	memset(&request, 0, sizeof(request));
	/* the request fills the job's two buffers at most */
	if (!scan_gpu_program_describe(&source, &request.query.program, &set_values, &nset_values) ||
		!describe_layout(RelationGetDescr(rel), groups, &request.query) ||
		!service_request_fits(sizeof(request) + sizeof(uint64) * nset_values))
		return NULL;
	request.nset_values = nset_values;
	request.query.relation[0] = compat_locator_spc(compat_rel_locator(rel));
	request.query.relation[1] = compat_locator_db(compat_rel_locator(rel));
	request.query.relation[2] = compat_locator_rel(compat_rel_locator(rel));
	if (groups)
	{
		request.groups = *groups;
		request.expected_groups = expected_groups;
		spec->record_bytes = GPU_GROUPS_HEADER_BYTES + groups->cell_bytes;
	}

	/* released with the current memory context, errors included (service_client.h) */
	sink = palloc0(sizeof(PageSink));
	sink->job = device_start_job(spec, true);
	if (sink->job == NULL)
		return NULL;
	sink->reader = reader;
	sink->rel = rel;
	sink->gpu_decides = describe_snapshot(reader, &request.query.snapshot);
	/* see the header comment */
	sink->unpinning = service_page_cache_on() && RelationNeedsWAL(rel) &&
		!IsCatalogRelation(rel) && !compat_snapshots_get_too_old() &&
		!reader->scan->rs_base.rs_snapshot->takenDuringRecovery;
	sink->wal_vouching = sink->unpinning && sink->gpu_decides &&
		service_page_cache_follows_wal();
	if (sink->wal_vouching)
		sink->pinned_decide = palloc0(reader->scan->rs_nblocks / BITS_PER_BYTE + 1);
	/* after the snapshot, before any page is read (service_wal.c) */
	request.query.wal_lsn = sink->unpinning ? GetXLogInsertRecPtr() : InvalidXLogRecPtr;
	sink->pins_cap = batch_pins();
	sink->batch_cap = Min(SERVICE_HEAP_PAGES(service_buffer_bytes()), BATCH_UNPINNED_MAX);
	service_job_pages_query(sink->job, &request, set_values);
	for (int i = 0; i < 2; i++)
		sink->pins[i] = palloc(sizeof(Buffer) * sink->pins_cap);
	sink->batch = (GpuHeapPage *) service_job_buffer(sink->job);
	sink->vm_buffer = InvalidBuffer;
	sink->vm_first = InvalidBlockNumber;
	/* the blocks to read again on the CPU if the GPU fails the job */
	scan_row_reader_remember_blocks(reader);
	return sink;
}

/*
 * The rows the GPU selects beyond k where the table has pages that are not
 * all-visible, whose rows it may leave undecided: a margin for those the
 * CPU then finds invisible, so that they rarely leave too few
 * (settle_answer).  None where k is every row the table can hold.
 */
static uint64
undecided_margin(RowReader *reader, uint64 k)
{
	uint64		table_rows = (uint64) reader->scan->rs_nblocks * MaxHeapTuplesPerPage;
	BlockNumber all_visible;

	if (k >= table_rows)
		return 0;
	visibilitymap_count(reader->rel, &all_visible, NULL);
	if (all_visible >= reader->scan->rs_nblocks)
		return 0;
	return Min(Min(Max(k / 8, 16), 4096), table_rows - k);
}

PageSink *
scan_page_sink_create(RowReader *reader, const GpuProgramSource *program, uint64 k, TopkMode mode)
{
	uint64		gpu_k = k + undecided_margin(reader, k);
	ServiceJobSpec spec = {
		.kind = SERVICE_JOB_PAGES,
		.key_width = key_width(program->key_type),
		.k = gpu_k,
		.mode = mode,
		.algorithm = (GpuTopkAlgorithm) gputopk_algorithm,
	};
	PageSink   *sink = create_sink(reader, program, &spec, NULL, 0);

	if (sink != NULL)
	{
		sink->k = k;
		sink->gpu_k = gpu_k;
	}
	return sink;
}

PageSink *
scan_page_sink_create_groups(RowReader *reader, const GpuGroupsSpec *groups,
							 uint64 expected_groups)
{
	ServiceJobSpec spec = {
		.kind = SERVICE_JOB_PAGE_GROUPS,
		.k = groups->keep,
	};
	/* the filter alone: the key, a grouping column, is not computed */
	GpuProgramSource program = {
		.key_type = KEY_INT8,
		.key_attno = groups->columns[0].attno,
		.filter = reader->filter,
	};

	return create_sink(reader, &program, &spec, groups, expected_groups);
}

static void
release_pins(PageSink *sink, int buffer)
{
	for (size_t i = 0; i < sink->npins[buffer]; i++)
		ReleaseBuffer(sink->pins[buffer][i]);
	sink->npins[buffer] = 0;
}

/*
 * The blocks of the buffer's last batch that the GPU sent back, to be read
 * by the scan: unpinned pages without a copy, and a groups job's pages
 * that it left undecided.  Once most of a batch's unpinned pages come back
 * (the cache does not hold the table), the scan stops sending pages
 * unpinned; pages left undecided, few once hint bits are set, count among
 * them.
 */
static void
take_returned(PageSink *sink, int buffer)
{
	size_t		rows;
	const uint32 *blocks;

	if (sink->nunpinned[buffer] + sink->ndecide[buffer] == 0)
		return;
	blocks = (const uint32 *) service_job_returned(sink->job, buffer, &rows);
	if (sink->nunpinned[buffer] > 0 && rows * 2 > sink->nunpinned[buffer])
		sink->unpinning = false;
	sink->nunpinned[buffer] = sink->ndecide[buffer] = 0;
	if (sink->next_returned == sink->nreturned)
		sink->next_returned = sink->nreturned = 0;
	if (sink->nreturned + rows > sink->returned_cap)
	{
		sink->returned_cap = Max(2 * sink->returned_cap, sink->nreturned + rows);
		sink->returned = sink->returned == NULL ?
			palloc(sizeof(BlockNumber) * sink->returned_cap) :
			repalloc(sink->returned, sizeof(BlockNumber) * sink->returned_cap);
	}
	memcpy(sink->returned + sink->nreturned, blocks, sizeof(uint32) * rows);
	sink->nreturned += rows;
}

/*
 * Hand the batch to the GPU; the batch before it is read, its pins
 * released and the blocks it sent back taken.
 */
static void
post_batch(PageSink *sink)
{
	sink->batch = (GpuHeapPage *) service_job_post(sink->job, &sink->nbatch);
	release_pins(sink, service_job_filling(sink->job));
	take_returned(sink, service_job_filling(sink->job));
}

/* The next description of the batch being filled, cleared. */
static GpuHeapPage *
next_description(PageSink *sink)
{
	GpuHeapPage *page = &sink->batch[sink->nbatch++];

	memset(page, 0, sizeof(GpuHeapPage));
	return page;
}

/* Whether the batch is full: of descriptions, or of pins. */
static void
post_if_full(PageSink *sink)
{
	if (sink->nbatch == sink->batch_cap || sink->npins[service_job_filling(sink->job)] == sink->pins_cap)
		post_batch(sink);
}

/* The visibility map page of block copied, unless it is the one copied last. */
static void
load_map_page(PageSink *sink, BlockNumber block)
{
	BlockNumber first = block - block % VM_BLOCKS_PER_PAGE;

	if (sink->vm_first == first)
		return;
	sink->vm_first = first;
	if (!visibility_map_copy_page(sink->rel, block, &sink->vm_buffer, sink->vm_bits,
								  &sink->vm_lsn))
	{
		sink->vm_lsn = InvalidXLogRecPtr;
		memset(sink->vm_bits, 0, sizeof(sink->vm_bits));
	}
}

/* The copied map page's LSN if it has block's all-visible bit set, else 0. */
static XLogRecPtr
map_page_lsn(PageSink *sink, BlockNumber block)
{
	uint32		bit = block % VM_BLOCKS_PER_PAGE;

	if (sink->vm_first != block - bit ||
		!((sink->vm_bits[bit / VM_BLOCKS_PER_BYTE] >> (bit % VM_BLOCKS_PER_BYTE * BITS_PER_HEAPBLOCK)) &
		  VISIBILITYMAP_ALL_VISIBLE))
		return InvalidXLogRecPtr;
	return sink->vm_lsn;
}

/* Whether block was pinned for the GPU to decide its tuples (pinned_decide). */
static bool
pinned_for_gpu(PageSink *sink, BlockNumber block)
{
	return (sink->pinned_decide[block / BITS_PER_BYTE] >> (block % BITS_PER_BYTE)) & 1;
}

/*
 * At the reader's end, wait for the batches with unpinned pages and take
 * the blocks they sent back; whether there are any.
 */
static bool
take_last_returned(PageSink *sink)
{
	if (sink->nunpinned[0] + sink->nunpinned[1] + sink->ndecide[0] + sink->ndecide[1] == 0)
		return false;
	if (sink->nbatch > 0)
		post_batch(sink);
	service_job_wait_batches(sink->job);
	take_returned(sink, 1 - service_job_filling(sink->job));
	return sink->next_returned < sink->nreturned;
}

BlockNumber
scan_page_sink_next_block(PageSink *sink, RowReader *reader, bool *gpu_decides)
{
	for (;;)
	{
		BlockNumber block = InvalidBlockNumber;
		bool		returned = false;
		XLogRecPtr	vm_lsn;
		GpuHeapPage *page;

		CHECK_FOR_INTERRUPTS();
		if (sink->next_returned < sink->nreturned)
		{
			block = sink->returned[sink->next_returned++];
			returned = true;
		}
		else if (!sink->reader_done)
		{
			block = scan_row_reader_next_block(reader);
			sink->reader_done = block == InvalidBlockNumber;
		}
		if (block == InvalidBlockNumber)
		{
			if (!take_last_returned(sink))
				return InvalidBlockNumber;
			continue;
		}
		/* before the scan reads the page, for scan_page_sink_add */
		load_map_page(sink, block);
		vm_lsn = map_page_lsn(sink, block);
		if (!sink->unpinning || returned ||
			(vm_lsn == InvalidXLogRecPtr && !sink->wal_vouching))
		{
			/* a page the GPU left undecided is decided here */
			*gpu_decides = sink->gpu_decides &&
				(!returned || (sink->pinned_decide && !pinned_for_gpu(sink, block)));
			return block;
		}
		page = next_description(sink);
		page->buffer = GPU_HEAP_UNPINNED;
		page->block = block;
		page->vm_lsn = vm_lsn;
		/* not all-visible by the map: the WAL may vouch for it, the GPU decides */
		page->decide = vm_lsn == InvalidXLogRecPtr;
		sink->nunpinned[service_job_filling(sink->job)]++;
		post_if_full(sink);
	}
}

StaticAssertDecl(sizeof(((WholePage *) NULL)->normal) <= sizeof(((GpuHeapPage *) NULL)->normal),
				 "a page's line pointers do not fit the GPU's mask");

void
scan_page_sink_add(PageSink *sink, BlockNumber block, const WholePage *whole)
{
	int			filling = service_job_filling(sink->job);
	GpuHeapPage *page = next_description(sink);

	page->buffer = whole->buffer - 1;
	page->block = block;
	page->lines = whole->lines;
	page->masked = whole->masked;
	page->decide = whole->decide;
	sink->ndecide[filling] += whole->decide;
	page->lsn = whole->lsn;
	if (whole->decide && sink->pinned_decide)
		sink->pinned_decide[block / BITS_PER_BYTE] |= 1 << (block % BITS_PER_BYTE);
	/* a copy of a page that is not all-visible must never stand for one unpinned by the map */
	page->vm_lsn = page->lsn != InvalidXLogRecPtr && whole->all_visible ?
		map_page_lsn(sink, block) : InvalidXLogRecPtr;
	if (whole->masked)
		memcpy(page->normal, whole->normal, sizeof(whole->normal));
	sink->pins[filling][sink->npins[filling]++] = whole->buffer;
	post_if_full(sink);
}

/* The pins of both buffers' batches and of the map page. */
static void
release_all_pins(PageSink *sink)
{
	release_pins(sink, 0);
	release_pins(sink, 1);
	if (BufferIsValid(sink->vm_buffer))
		ReleaseBuffer(sink->vm_buffer);
	sink->vm_buffer = InvalidBuffer;
}

bool
scan_page_sink_failed(PageSink *sink)
{
	return service_job_failed(sink->job) || sink->too_few_visible;
}

bool
scan_page_sink_too_few_visible(PageSink *sink)
{
	return sink->too_few_visible;
}

void
scan_page_sink_abandon(PageSink *sink)
{
	release_all_pins(sink);
	service_job_release(sink->job);
	for (int i = 0; i < 2; i++)
		pfree(sink->pins[i]);
	if (sink->returned)
		pfree(sink->returned);
	if (sink->pinned_decide)
		pfree(sink->pinned_decide);
	pfree(sink);
}

/* The job's counts into *gpu and *stats; the job released. */
static void
finish_job(PageSink *sink, ScanGpuStats *gpu, PageSinkStats *stats)
{
	scan_gpu_stats_add_job(gpu, sink->job);
	stats->rows_read += service_job_stats(sink->job)->rows_read;
	stats->rows_keyed += service_job_stats(sink->job)->rows_keyed;
	stats->pages_cached += service_job_stats(sink->job)->pages_cached;
	stats->pages_unpinned += service_job_stats(sink->job)->pages_unpinned;
	stats->pages_wal_vouched += service_job_stats(sink->job)->pages_wal_vouched;
	stats->pages_wal_decided += service_job_stats(sink->job)->pages_wal_decided;
	stats->rows_settled += service_job_stats(sink->job)->rows_settled;
	stats->rows_undecided += service_job_stats(sink->job)->rows_undecided;
	stats->pages_undecided += service_job_stats(sink->job)->pages_undecided;
	stats->pages_unheld += service_job_stats(sink->job)->pages_unheld;
	stats->plan = service_job_stats(sink->job)->plan;
	stats->groups += service_job_stats(sink->job)->groups;
	service_job_release(sink->job);
}

/*
 * The rows of a top-k's answer that the GPU left undecided, decided
 * (scan_row_reader_settle_tids); too_few_visible where too few of them
 * were visible for the answer to hold the best k.  The GPU selected the
 * best gpu_k of the rows visible or undecided, ties to the last key kept
 * under TOPK_WITH_TIES: every visible row left out is worse than those.
 * So the visible ones hold the best k where they are k or more, or where
 * the GPU had fewer than gpu_k rows to select from.
 */
static void
settle_answer(PageSink *sink, TopkResult *result, PageSinkStats *stats)
{
	uint64		selected = result->count;
	uint64		checked;
	size_t		removed;

	removed = scan_row_reader_settle_tids(sink->reader, sink->reader->scan->rs_base.rs_snapshot,
										  result, &checked);
	stats->tuples_checked += checked;
	sink->too_few_visible = removed > 0 && selected >= sink->gpu_k && result->count < sink->k;
}

void
scan_page_sink_result(PageSink *sink, TopkResult *result, ScanGpuStats *gpu, PageSinkStats *stats)
{
	if (sink->nbatch > 0)
		post_batch(sink);
	service_job_topk_answer(sink->job, result);
	release_all_pins(sink);
	finish_job(sink, gpu, stats);
	if (!service_job_failed(sink->job) && sink->gpu_decides)
		settle_answer(sink, result, stats);
}

void
scan_page_sink_groups(PageSink *sink, char **records, size_t *count, ScanGpuStats *gpu,
					  PageSinkStats *stats)
{
	if (sink->nbatch > 0)
		post_batch(sink);
	service_job_groups_answer(sink->job, records, count);
	release_all_pins(sink);
	finish_job(sink, gpu, stats);
}
