/*-------------------------------------------------------------------------
 *
 * scan_page_sink.c
 *	  A scan's all-visible table pages handed, pinned, to a pages job of
 *	  the GPU service.
 *
 * The job is described once: the table's attributes up to the last one
 * the filter or the key reads (their widths and alignments, for deforming
 * tuples) and the program (scan_gpu_program.c).  Then batches of page
 * descriptions (buffer, block, line pointers) fill the job's two staging
 * buffers in turn: while the GPU reads one batch's pages over the bus,
 * the scan pins the next one's.  A batch's pins are released once the
 * service has read it, which is when the buffer comes back to be filled.
 * A batch holds at most half of a fair share of shared_buffers for one
 * process, so that concurrent scans cannot pin every buffer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/visibilitymap.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/rel.h"

#include "device.h"
#include "gputopk.h"
#include "scan_page_sink.h"
#include "service_client.h"

/* the most pages a batch holds, and the fewest worth a job */
#define BATCH_PAGES_MAX 4096
#define BATCH_PAGES_MIN 16

struct PageSink
{
	ServiceJob *job;
	GpuHeapPage *batch;			/* the buffer being filled */
	size_t		nbatch;
	size_t		batch_cap;
	Buffer	   *pins[2];		/* of the batch in each of the job's buffers */
	size_t		npins[2];
};

/* A column of the table as the kernel reads it: by value, of fixed width, or text. */
static bool
heap_column(void *arg, AttrNumber attno, GpuColumn *column)
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
	column->kind = text ? VALUE_TEXT : filter_value_kind(attr->atttypid);
	return true;
}

/* The last attribute the program reads. */
static int
last_attno(const GpuRowProgram *p)
{
	int			last = p->key_is_program ? 0 : p->key_column.attno;

	for (int i = 0; i < p->nloads; i++)
		last = Max(last, p->loads[i].column.attno);
	for (int i = 0; i < p->nkey_steps; i++)
		if (key_step_is_column(&p->key_steps[i].step))
			last = Max(last, p->key_steps[i].column.attno);
	return last;
}

/* The tuples' layout up to the last attribute read; false if the kernel cannot walk it. */
static bool
describe_layout(TupleDesc desc, GpuHeapQuery *q)
{
	int32		offset = 0;
	bool		fixed = true;

	q->page_size = BLCKSZ;
	q->max_lines = MaxHeapTuplesPerPage;
	q->natts = last_attno(&q->program);
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

/* Pages a batch may hold: half of one process's share of shared_buffers, at most. */
static size_t
batch_pages(void)
{
	size_t		share = NBuffers / (MaxBackends + NUM_AUXILIARY_PROCS);

	return Min(Min(share / 2, BATCH_PAGES_MAX), SERVICE_HEAP_PAGES(service->buffer_bytes));
}

/* Whether at least half of the reader's table is all-visible by its visibility map. */
static bool
mostly_all_visible(RowReader *reader)
{
	BlockNumber all_visible = 0;
	BlockNumber all_frozen = 0;

	visibilitymap_count(reader->rel, &all_visible, &all_frozen);
	return (uint64) all_visible * 2 >= reader->scan->rs_nblocks;
}

PageSink *
page_sink_create(RowReader *reader, const GpuProgramSource *program, uint64 k, TopkMode mode)
{
	Relation	rel = reader->rel;
	ServiceJobSpec spec = {
		.kind = SERVICE_JOB_PAGES,
		.key_width = key_width(program->key_type),
		.k = k,
		.mode = mode,
		.algorithm = (GpuTopkAlgorithm) gputopk_algorithm,
	};
	GpuProgramSource source = *program;
	ServicePagesRequest request;
	uint64	   *set_values;
	size_t		nset_values;
	size_t		bytes;
	char	   *buffer;
	PageSink   *sink;

	if (reader->table_qual != NULL || !row_reader_can_read_whole(reader) ||
		!mostly_all_visible(reader) || service == NULL || !gputopk_gpu_pages ||
		pg_atomic_read_u32(&service->buffers_mapped) == 0 || batch_pages() < BATCH_PAGES_MIN ||
		device_selected_backend() != BACKEND_GPU)
		return NULL;
	source.column_of = heap_column;
	source.arg = RelationGetDescr(rel);
	/* the request fills the job's two buffers at most */
	if (!gpu_program_describe(&source, &request.query.program, &set_values, &nset_values) ||
		!describe_layout(RelationGetDescr(rel), &request.query) ||
		sizeof(request) + sizeof(uint64) * nset_values > 2 * service->buffer_bytes)
		return NULL;
	request.nset_values = nset_values;
	request.query.relation[0] = rel->rd_node.spcNode;
	request.query.relation[1] = rel->rd_node.dbNode;
	request.query.relation[2] = rel->rd_node.relNode;

	/* released with the current memory context, errors included (service_client.h) */
	sink = palloc0(sizeof(PageSink));
	sink->job = device_start_job(&spec, true);
	if (sink->job == NULL)
		return NULL;
	sink->batch_cap = batch_pages();
	buffer = service_job_request_buffer(sink->job, &bytes);
	memcpy(buffer, &request, sizeof(request));
	memcpy(buffer + sizeof(request), set_values, sizeof(uint64) * nset_values);
	service_job_pages_query(sink->job);
	for (int i = 0; i < 2; i++)
		sink->pins[i] = palloc(sizeof(Buffer) * sink->batch_cap);
	sink->batch = (GpuHeapPage *) service_job_buffer(sink->job);
	return sink;
}

static void
release_pins(PageSink *sink, int buffer)
{
	for (size_t i = 0; i < sink->npins[buffer]; i++)
		ReleaseBuffer(sink->pins[buffer][i]);
	sink->npins[buffer] = 0;
}

/* Hand the batch to the GPU; the batch before it is read, its pins released. */
static void
post_batch(PageSink *sink)
{
	sink->batch = (GpuHeapPage *) service_job_post(sink->job, &sink->nbatch);
	release_pins(sink, sink->job->filling);
}

StaticAssertDecl(sizeof(((WholePage *) NULL)->normal) <= sizeof(((GpuHeapPage *) NULL)->normal),
				 "a page's line pointers do not fit the GPU's mask");

void
page_sink_add(PageSink *sink, BlockNumber block, const WholePage *whole)
{
	int			filling = sink->job->filling;
	GpuHeapPage *page = &sink->batch[sink->nbatch++];

	page->buffer = whole->buffer - 1;
	page->block = block;
	page->lines = whole->lines;
	page->masked = whole->masked;
	page->lsn = whole->lsn;
	if (whole->masked)
		memcpy(page->normal, whole->normal, sizeof(whole->normal));
	sink->pins[filling][sink->npins[filling]++] = whole->buffer;
	if (sink->nbatch == sink->batch_cap)
		post_batch(sink);
}

void
page_sink_result(PageSink *sink, TopkResult *result, ScanGpuStats *gpu, PageSinkStats *stats)
{
	if (sink->nbatch > 0)
		post_batch(sink);
	service_job_topk_answer(sink->job, result);
	release_pins(sink, 0);
	release_pins(sink, 1);
	scan_gpu_stats_add_job(gpu, sink->job);
	stats->rows_read += sink->job->rows_read;
	stats->rows_keyed += sink->job->rows_keyed;
	stats->pages_cached += sink->job->pages_cached;
	stats->plan = sink->job->plan;
	service_job_release(sink->job);
}
