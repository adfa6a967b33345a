/*-------------------------------------------------------------------------
 *
 * colindex_gpu.c
 *	  GpuTopK over a column index on the GPU: the GPU service's copy of the
 *	  index brought up to date, and each round's candidates selected there.
 *
 * A query starts an index job in the GPU service, which finds or makes
 * its copy of the index in device memory and says as of which epoch of
 * the index's changes (colindex_changes.c) it is current.  The query sends
 * the pages changed since then (all of them for a new copy), each read
 * under a share lock after the current epoch was read, so the copy is
 * then current as of that epoch; every change a committed transaction
 * made before the query's snapshot is in it.  Each round then sends the
 * compiled WHERE clauses over indexed columns, the ranking key (a column
 * or a key program) and what earlier rounds covered, and gets back the
 * candidates' keys and positions, as a round on the CPU gives them
 * (colindex_select.c), which fetches and rechecks them as usual.
 *
 * An index larger than one GPU's gputopk.gpu_cache_size is partitioned
 * over the GPUs (service_protocol.h): the query starts a job on each GPU
 * for its part, sends each the changed pages of its part, posts each round
 * to every part at once and merges their candidates here.  Each part gives
 * its best count keys (and their ties, unless exact), so the best count of
 * them all (and their ties) are among those it gave.
 *
 * The GPU reads an index only where every change of its pages is
 * recorded: a WAL-logged index (pages carry the LSNs the service orders
 * them by), outside recovery, with gputopk preloaded.  A filter or key
 * program beyond the kernel's limits, or a round with more tied positions
 * than a request holds, runs on the CPU.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type_d.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "colindex_changes.h"
#include "colindex_gpu.h"
#include "compat.h"
#include "device.h"
#include "scan_gpu_program.h"


struct IndexGpu
{
	Relation	index;
	int			nparts;			/* 1 for a whole copy, else a job per part */
	ServiceJob *jobs[SERVICE_MAX_DEVICES];
	uint64		epochs[SERVICE_MAX_DEVICES];	/* as of when each job's copy is current */
	ServiceIndexRequest request;	/* the rounds' common part */
	uint64	   *set_values;
	size_t		nset_values;
};

bool
colindex_gpu_column_of(void *arg, AttrNumber attno, GpuColumn *column)
{
	const ColIndexColumns *columns = arg;
	const ColIndexLayout *layout = columns->layout;
	int			i = colindex_column_of(layout, columns->attnos, attno);

	if (i < 0)
		return false;
	memset(column, 0, sizeof(GpuColumn));
	column->attno = attno;
	column->null_offset = layout->null_offsets[i];
	column->value_offset = layout->value_offsets[i];
	column->column = i;
	column->width = layout->widths[i];
	column->kind = scan_filter_value_kind(layout->types[i]);
	return true;
}

void
colindex_gpu_describe_pages(const ColIndexLayout *layout, bool skip_killed, GpuIndexQuery *q)
{
	q->page_size = BLCKSZ;
	q->kind_offset = BLCKSZ - MAXALIGN(sizeof(ColIndexPageOpaque)) +
		offsetof(ColIndexPageOpaque, kind);
	q->data_kind = COLINDEX_PAGE_DATA;
	q->high_offset = MAXALIGN(SizeOfPageHeaderData) + offsetof(ColIndexDataHeader, high);
	q->capacity = layout->capacity;
	q->slot_bits = COLINDEX_SLOT_BITS;
	q->live_offset = layout->live_offset;
	q->killed_offset = layout->killed_offset;
	q->tid_offset = layout->tid_offset;
	q->summary_offset = layout->summary_offset;
	q->skip_killed = skip_killed;
}

bool
colindex_gpu_describe_program(const GpuProgramSource *source, const ColIndexColumns *columns,
							  GpuRowProgram *program, uint64 **set_values, size_t *nset_values)
{
	GpuProgramSource over_index = *source;

	over_index.column_of = colindex_gpu_column_of;
	over_index.vector_column_of = colindex_gpu_column_of;
	over_index.arg = (void *) columns;
	return scan_gpu_program_describe(&over_index, program, set_values, nset_values);
}

/* The rounds' common part of the query: the pages, the key, the filter. */
static bool
describe_query(IndexGpu *g, const IndexSelectSpec *spec, const ColIndexLayout *layout,
			   const AttrNumber *attnos, bool skip_killed)
{
	GpuIndexQuery *q = &g->request.query;
	GpuProgramSource source = {
		.key_type = spec->key_type,
		.desc = spec->desc,
		.nulls_first = spec->nulls_first,
		.key_attno = spec->key_attno,
		.key_program = spec->key_program,
		.vector_key = spec->vector_key,
		.filter = spec->filter,
	};

	ColIndexColumns columns = {layout, attnos};

	colindex_gpu_describe_pages(layout, skip_killed, q);
	q->exact = spec->exact;
	q->exact_if_no_errors = spec->exact_if_no_errors;
	return colindex_gpu_describe_program(&source, &columns, &q->program, &g->set_values,
										 &g->nset_values);
}

/*
 * Send the pages of the spec's part changed since the copy's epoch, or
 * all; false when the index's changes are no longer recorded.  *epoch: as
 * of when the copy is then current.
 */
static bool
send_changed_pages(ServiceJob *job, Relation index, const ServiceJobSpec *spec, uint64 *epoch,
				   uint64 *pages_sent)
{
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	BlockNumber *blocks;
	int			nchanged;
	BlockNumber nblocks;
	size_t		per_buffer = service_job_batch_rows(job);
	size_t		rows = 0;
	char	   *buffer = service_job_buffer(job);
	ChangesSince since = colindex_changes_since(index, spec->index_generation,
												service_job_stats(job)->index_epoch, epoch,
												&blocks, &nchanged);

	if (since == CHANGES_UNTRACKED)
		return false;
	/* read after the epoch: pages extended since are in it */
	nblocks = RelationGetNumberOfBlocks(index);
	if (since == CHANGES_ALL)
		nchanged = nblocks > 1 ? nblocks - 1 : 0;
	for (int i = 0; i < nchanged; i++)
	{
		BlockNumber block = since == CHANGES_ALL ? COLINDEX_METAPAGE_BLKNO + 1 + i : blocks[i];
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		if (!index_part_holds(block, spec->index_part, spec->index_parts))
			continue;
		buf = ReadBufferExtended(index, MAIN_FORKNUM, block, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(buffer + rows * BLCKSZ, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
		((uint32 *) (buffer + per_buffer * BLCKSZ))[rows++] = block;
		(*pages_sent)++;
		if (rows == per_buffer)
			buffer = service_job_post(job, &rows);
	}
	if (rows > 0)
		(void) service_job_post(job, &rows);
	FreeAccessStrategy(strategy);
	return !service_job_failed(job);
}

ServiceJob *
colindex_gpu_start(Relation index, ServiceJobSpec *spec, uint64 *epoch, uint64 *pages_sent)
{
	ServiceJob *job;

	if (!service_preloaded() || !RelationNeedsWAL(index) || RecoveryInProgress() ||
		device_selected_backend() != BACKEND_GPU ||
		!colindex_changes_track(index, &spec->index_generation))
		return NULL;
	spec->index_node = compat_rel_locator(index);
	spec->index_blocks = RelationGetNumberOfBlocks(index);
	spec->index_parts = Max(spec->index_parts, 1);
	job = device_start_job(spec, true);
	if (job == NULL)
		return NULL;
	if (!send_changed_pages(job, index, spec, epoch, pages_sent))
	{
		service_job_release(job);
		return NULL;
	}
	return job;
}

/*
 * The parts of the index's copies: 1 where it fits one GPU's
 * gputopk.gpu_cache_size, else one per GPU.
 */
static int
index_parts(Relation index)
{
	double		bytes = (double) RelationGetNumberOfBlocks(index) * BLCKSZ;
	int			gpus = service_gpu_count();

	return gpus > 1 && bytes > service_gpu_cache_bytes(true) ? gpus : 1;
}

IndexGpu *
colindex_gpu_begin(const IndexSelectSpec *spec, const ColIndexLayout *layout,
				   const AttrNumber *attnos, bool skip_killed, IndexSelectStats *stats)
{
	Relation	index = spec->index;
	ServiceJobSpec job_spec = {
		.kind = SERVICE_JOB_INDEX,
		.key_width = key_width(spec->key_type),
		.k = 1,
		.mode = spec->exact ? TOPK_EXACT : TOPK_WITH_TIES,
		.algorithm = GPU_TOPK_AUTO,
	};
	IndexGpu   *g = palloc0(sizeof(IndexGpu));

	g->index = index;
	if (!describe_query(g, spec, layout, attnos, skip_killed))
		return NULL;
	job_spec.index_parts = index_parts(index);
	for (int p = 0; p < job_spec.index_parts; p++)
	{
		job_spec.index_part = p;
		g->jobs[p] = colindex_gpu_start(index, &job_spec, &g->epochs[p], &stats->pages_sent);
		if (g->jobs[p] == NULL)
		{
			colindex_gpu_end(g);
			return NULL;
		}
		g->nparts++;
		stats->gpus |= service_job_stats(g->jobs[p])->gpus;
	}
	stats->on_gpu = true;
	return g;
}

/* best first: the higher key, then the lower position */
static int
candidate_cmp(const void *a, const void *b)
{
	const TopkItem *x = a;
	const TopkItem *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->ref < y->ref ? -1 : x->ref > y->ref;
}

/*
 * The best count of the parts' candidates, and unless exact every one
 * tied with the last.
 */
static void
merge_parts(const TopkResult *parts, int nparts, uint64 count, bool exact, TopkResult *result)
{
	size_t		n = 0;
	size_t		kept;

	for (int p = 0; p < nparts; p++)
		n += parts[p].count;
	result->items = palloc_extended(sizeof(TopkItem) * Max(n, 1), MCXT_ALLOC_HUGE);
	n = 0;
	for (int p = 0; p < nparts; p++)
	{
		memcpy(result->items + n, parts[p].items, sizeof(TopkItem) * parts[p].count);
		n += parts[p].count;
	}
	qsort(result->items, n, sizeof(TopkItem), candidate_cmp);
	kept = Min(n, count);
	if (!exact)
		while (kept > 0 && kept < n && result->items[kept].key == result->items[kept - 1].key)
			kept++;
	result->count = kept;
}

bool
colindex_gpu_round(IndexGpu *g, uint64 count, bool have_threshold, uint64 threshold,
				   const uint64 *tied, size_t ntied, bool *exact, TopkResult *result,
				   IndexSelectStats *stats)
{
	ServiceIndexRequest request = g->request;
	TopkResult	parts[SERVICE_MAX_DEVICES];
	double		longest_ms = 0;

	request.nset_values = g->nset_values;
	request.ntied = ntied;
	request.query.nblocks = RelationGetNumberOfBlocks(g->index);
	request.query.count = count;
	request.query.have_threshold = have_threshold;
	request.query.threshold = threshold;
	request.query.exact = *exact;
	/* the mode is settled by the first round, which later ones go on from */
	request.query.exact_if_no_errors &= !have_threshold && !*exact;
	for (int p = 0; p < g->nparts; p++)
		if (service_job_failed(g->jobs[p]))
			return false;
	/* every part's GPU selects at once: the round is posted to all before any answer */
	for (int p = 0; p < g->nparts; p++)
	{
		request.epoch = g->epochs[p];
		if (!service_job_index_round(g->jobs[p], &request, g->set_values, tied))
			return false;
	}
	for (int p = 0; p < g->nparts; p++)
	{
		GpuIndexCounts counts;

		service_job_index_candidates(g->jobs[p], &parts[p], &counts);
		/* under auto, a round the GPU failed is the CPU's, and so are those after it */
		if (service_job_failed(g->jobs[p]))
		{
			stats->on_gpu = false;
			return false;
		}
		/* parts choose no mode of their own: they keep the request's */
		*exact = g->nparts == 1 ? counts.exact : request.query.exact;
		stats->entries_scanned += counts.scanned;
		stats->pages_skipped += counts.pages_skipped;
		longest_ms = Max(longest_ms, service_job_stats(g->jobs[p])->kernel_ms);
	}
	stats->gpu_ms += longest_ms;
	if (g->nparts == 1)
		*result = parts[0];
	else
		merge_parts(parts, g->nparts, count, *exact, result);
	return true;
}

void
colindex_gpu_end(IndexGpu *g)
{
	for (int p = 0; g != NULL && p < g->nparts; p++)
		service_job_release(g->jobs[p]);
}
