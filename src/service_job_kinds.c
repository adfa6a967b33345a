/*-------------------------------------------------------------------------
 *
 * service_job_kinds.c
 *	  What each kind of GPU job does in a job thread of the GPU service:
 *	  the table of operations of service_job_kinds.h, an entry per kind.
 *
 *	  keys (top-k)   keys in batches into a top-k object; the k best out
 *	  grouped        (group, key) and payload rows into a grouped top-k
 *	  index          a column index's pages into its copy; rounds of
 *	                 candidates selected on the copy (gpu_index.h)
 *	  pages          heap pages read in place, their rows into a top-k
 *	  page groups    the same pages' rows into groups, the backend's own
 *	                 groups' records merged, the best groups' records out
 *	  index groups   a column index's pages into its copy, its entries
 *	                 grouped, then as page groups
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "gpu_api.h"
#include "service_job_kinds.h"
#include "service_pool.h"
#include "service_wal.h"

/* the GPU this process serves */
#define THIS_DEVICE (&service->devices[service_serving_device])

/* ------------------------------------------------------------ acceptance */

/* An index job's copy of its index (or its part), brought up to date by its batches. */
static GpuStatus
acquire_index(JobRun *run)
{
	return service_index_acquire(&run->slot->spec, &run->resident, &run->slot->index_epoch,
								 run->slot->message);
}

/* A pages job reads shared_buffers where the GPU maps them. */
static GpuStatus
buffers_mapped(JobRun *run)
{
	if (service_pool_buffers() != NULL)
		return GPU_OK;
	strlcpy(run->slot->message, "shared_buffers are not yet mapped for the GPU.",
			sizeof(run->slot->message));
	return GPU_FAILED;
}

static GpuStatus
take_topk(JobRun *run)
{
	return run->topk != NULL ? GPU_OK : service_pool_take_topk(&run->slot->spec, &run->topk);
}

static GpuStatus
take_grouped(JobRun *run)
{
	return service_pool_take_grouped(run->slot->spec.k, &run->grouped);
}

/* ---------------------------------------------------------------- orders */

/* A pages job's query, from the slot's buffers, for the batches that follow. */
static GpuStatus
set_pages_query(JobRun *run)
{
	const ServicePagesRequest *request =
		(const ServicePagesRequest *) service_buffer(run->index, 0);

	if (run->reader == NULL)
		GPU_TRY(gpu_heap_reader_create(&run->reader));
	run->wal_lsn = request->query.wal_lsn;
	return gpu_heap_set_query(run->reader, &request->query,
							  (const uint64 *) (request + 1), request->nset_values);
}

/* The same for a page groups job, its table of groups made first. */
static GpuStatus
set_page_groups_query(JobRun *run)
{
	const ServicePagesRequest *request =
		(const ServicePagesRequest *) service_buffer(run->index, 0);

	if (run->groups == NULL)
		GPU_TRY(gpu_groups_create(&request->groups, request->expected_groups, &run->groups));
	return set_pages_query(run);
}

static GpuStatus
push_keys(JobRun *run, const SlotOrder *order)
{
	GPU_TRY(gpu_topk_push(run->topk, service_buffer(run->index, order->buffer), order->rows));
	GPU_TRY(gpu_topk_wait_input(run->topk));
	pg_atomic_fetch_add_u64(&THIS_DEVICE->bytes_received,
							order->rows * run->slot->spec.key_width);
	return GPU_OK;
}

static GpuStatus
push_grouped(JobRun *run, const SlotOrder *order)
{
	const GroupedKey *keys = (const GroupedKey *) service_buffer(run->index, order->buffer);
	const uint64 *payloads = (const uint64 *) (keys + service_pool_grouped_batch_rows());

	GPU_TRY(gpu_grouped_push(run->grouped, keys, payloads, order->rows));
	GPU_TRY(gpu_grouped_wait_input(run->grouped));
	pg_atomic_fetch_add_u64(&THIS_DEVICE->bytes_received,
							order->rows * (sizeof(GroupedKey) + sizeof(uint64)));
	return GPU_OK;
}

/* An index's changed pages into its copy. */
static GpuStatus
push_index_pages(JobRun *run, const SlotOrder *order)
{
	GPU_TRY(service_index_store(run->resident, service_buffer(run->index, order->buffer),
								order->rows, run->slot->message));
	pg_atomic_fetch_add_u64(&THIS_DEVICE->bytes_received, order->rows * BLCKSZ);
	return GPU_OK;
}

/*
 * Heap pages read in place, their rows to the top-k or the groups; the
 * blocks it did not read (unpinned pages without a copy, a groups job's
 * pages left undecided) go back in the buffer.  Before the first batch,
 * the WAL is followed up to the scan's position, for the page cache to
 * vouch for unpinned pages by it.
 */
static GpuStatus
push_heap_pages(JobRun *run, const SlotOrder *order)
{
	char	   *buffer = service_buffer(run->index, order->buffer);
	uint64		cached = run->pages.pages_cached;
	uint64		undecided = run->pages.pages_undecided;
	size_t		missed;

	if (run->wal_lsn != 0)
	{
		service_wal_await(run->wal_lsn);
		run->wal_lsn = 0;
	}
	if (run->groups)
		GPU_TRY(gpu_heap_read_groups(run->reader, service_pool_page_cache(),
									 service_pool_buffers(), (GpuHeapPage *) buffer,
									 order->rows, run->groups, (uint32 *) buffer, &missed,
									 &run->pages));
	else
		GPU_TRY(gpu_heap_read(run->reader, service_pool_page_cache(), service_pool_buffers(),
							  (GpuHeapPage *) buffer, order->rows, run->topk,
							  (uint32 *) buffer, &missed, &run->pages));
	run->slot->returned[order->buffer] = missed;
	/* the pages that came over the bus, not from the page cache */
	pg_atomic_fetch_add_u64(&THIS_DEVICE->bytes_received,
							(order->rows - (missed - (run->pages.pages_undecided - undecided)) -
							 (run->pages.pages_cached - cached)) * BLCKSZ);
	return GPU_OK;
}

/* The backend's own groups' records, merged into the GPU's. */
static GpuStatus
merge_records(JobRun *run, const SlotOrder *order)
{
	GPU_TRY(gpu_groups_merge(run->groups, service_buffer(run->index, order->buffer),
							 order->rows));
	pg_atomic_fetch_add_u64(&THIS_DEVICE->bytes_received,
							order->rows * run->slot->spec.record_bytes);
	return GPU_OK;
}

/*
 * An index groups job's entries grouped anew, for the groups' records and
 * the answer that follow; the rows read are the entries vouched for.
 */
static GpuStatus
group_entries(JobRun *run)
{
	ServiceSlot *slot = run->slot;

	/* the last grouping's counts and time: SLOT_RESULT reports them */
	GPU_TRY(service_index_group(run->resident, service_buffer(run->index, 0), &run->groups,
								&slot->index_counts, &run->pages.rows_keyed,
								&run->pages.kernel_ms));
	run->pages.rows_read = slot->index_counts.scanned;
	return GPU_OK;
}

/* --------------------------------------------------------------- answers */

/* what a pages job read, for EXPLAIN ANALYZE */
static void
report_pages(JobRun *run)
{
	run->slot->rows_read = run->pages.rows_read;
	run->slot->rows_keyed = run->pages.rows_keyed;
	run->slot->pages_cached = run->pages.pages_cached;
	run->slot->pages_unpinned = run->pages.pages_unpinned;
	run->slot->pages_wal_vouched = run->pages.pages_wal_vouched;
	run->slot->pages_wal_decided = run->pages.pages_wal_decided;
	run->slot->rows_settled = run->pages.rows_settled;
	run->slot->rows_undecided = run->pages.rows_undecided;
	run->slot->pages_undecided = run->pages.pages_undecided;
	run->slot->pages_unheld = run->pages.pages_unheld;
}

/* A top-k's answer, of keys or of pages. */
static GpuStatus
answer_topk(JobRun *run)
{
	ServiceSlot *slot = run->slot;

	GPU_TRY(gpu_topk_result(run->topk, &run->answer));
	gpu_topk_stream_times(run->topk, &slot->copy_ms, &slot->kernel_ms);
	slot->kernel_ms += run->pages.kernel_ms;
	report_pages(run);
	slot->plan = gpu_topk_last_plan(run->topk);
	run->answer_rows = run->answer.count;
	return GPU_OK;
}

static GpuStatus
answer_grouped(JobRun *run)
{
	size_t		count;

	GPU_TRY(gpu_grouped_result(run->grouped, &run->group_keys, &run->group_payloads, &count));
	gpu_grouped_times(run->grouped, &run->slot->copy_ms, &run->slot->kernel_ms);
	run->answer_rows = count;
	return GPU_OK;
}

/* An index job's round: its candidates. */
static GpuStatus
select_candidates(JobRun *run)
{
	ServiceSlot *slot = run->slot;

	GPU_TRY(service_index_select(run->resident, service_buffer(run->index, 0), run->topk,
								 &run->answer, &slot->index_counts, &slot->kernel_ms));
	slot->copy_ms = 0;
	slot->plan = gpu_topk_last_plan(run->topk);
	run->answer_rows = run->answer.count;
	return GPU_OK;
}

/* The groups chosen: the first LIMIT + OFFSET by the ranking value and their ties. */
static GpuStatus
choose_groups(JobRun *run)
{
	size_t		count;

	run->slot->kernel_ms = run->pages.kernel_ms;
	GPU_TRY(gpu_groups_choose(run->groups, &run->group_records, &count, &run->slot->groups,
							  &run->slot->kernel_ms));
	report_pages(run);
	run->answer_rows = count;
	return GPU_OK;
}

/*
 * The answer's chunks go into the slot's two buffers, which lie one after
 * the other: top-k items, groups' records, or a grouped top-k's keys then
 * its payloads.
 */
static uint64
chunk_items(JobRun *run, char *to, uint64 left)
{
	uint64		n = Min(left, 2 * service->buffer_bytes / sizeof(TopkItem));

	memcpy(to, run->answer.items + run->answer_sent, n * sizeof(TopkItem));
	return n;
}

static uint64
chunk_grouped(JobRun *run, char *to, uint64 left)
{
	uint64		cap = 2 * service->buffer_bytes / (sizeof(GroupedKey) + sizeof(uint64));
	uint64		n = Min(left, cap);

	memcpy(to, run->group_keys + run->answer_sent, n * sizeof(GroupedKey));
	memcpy(to + cap * sizeof(GroupedKey), run->group_payloads + run->answer_sent,
		   n * sizeof(uint64));
	return n;
}

static uint64
chunk_records(JobRun *run, char *to, uint64 left)
{
	uint64		bytes = run->slot->spec.record_bytes;
	uint64		n = Min(left, 2 * service->buffer_bytes / bytes);

	memcpy(to, run->group_records + run->answer_sent * bytes, n * bytes);
	return n;
}

/* ----------------------------------------------------------------- table */

static const JobKindOps job_kinds[] = {
	[SERVICE_JOB_TOPK] = {
		.take = take_topk,
		.push = push_keys,
		.answer = answer_topk,
		.chunk = chunk_items,
	},
	[SERVICE_JOB_GROUPED] = {
		.take = take_grouped,
		.push = push_grouped,
		.answer = answer_grouped,
		.chunk = chunk_grouped,
	},
	[SERVICE_JOB_INDEX] = {
		.ready = acquire_index,
		.take = take_topk,
		.push = push_index_pages,
		.answer = select_candidates,
		.chunk = chunk_items,
	},
	[SERVICE_JOB_PAGES] = {
		.ready = buffers_mapped,
		.take = take_topk,
		.query = set_pages_query,
		.push = push_heap_pages,
		.answer = answer_topk,
		.chunk = chunk_items,
	},
	[SERVICE_JOB_PAGE_GROUPS] = {
		.ready = buffers_mapped,
		.query = set_page_groups_query,
		.push = push_heap_pages,
		.answer = choose_groups,
		.chunk = chunk_records,
	},
	[SERVICE_JOB_INDEX_GROUPS] = {
		.ready = acquire_index,
		.push = push_index_pages,
		.records = merge_records,
		.group = group_entries,
		.answer = choose_groups,
		.chunk = chunk_records,
	},
};

const JobKindOps *
service_job_kind_ops(ServiceJobKind kind)
{
	Assert(kind >= 0 && kind < lengthof(job_kinds));
	return &job_kinds[kind];
}

void
service_job_kinds_put_back(JobRun *run, bool reusable)
{
	service_pool_put(run->topk, run->grouped, reusable);
	run->topk = NULL;
	run->grouped = NULL;
	/* a job's groups are its own: their table is sized for its query */
	gpu_groups_destroy(run->groups);
	run->groups = NULL;
	service_index_release(run->resident);
	run->resident = NULL;
}
