/*-------------------------------------------------------------------------
 *
 * groups_index.c
 *	  GpuTopKGroups over a column index's copy on the GPU: the entries of
 *	  rows the visibility map vouches for grouped there, the other pages'
 *	  rows on the CPU.
 *
 * The GPU service keeps a copy of the index in device memory, brought up
 * to date at the job's start (colindex_gpu.c).  The scan, in one process,
 * notes the table's blocks whose all-visible bit is set, after its
 * snapshot was taken, and asks the GPU to group every entry of the copy
 * whose TID lies in one of them and that passes the WHERE clause (every
 * clause is checked on the entries).  The other blocks' rows are read
 * here into the scan's own set of groups.  Then the set's groups go to the
 * GPU as records, and the groups it chose become the set the scan chooses
 * from, as in the page form (groups_gpu.c).  Where many blocks are not
 * all-visible, the page form costs less, which reads them on the GPU too:
 * the scan takes it instead (groups_index_declines).
 *
 * Why the GPU's groups are those of the rows the snapshot sees.  An entry
 * is counted only for a block whose bit was set when the scan looked, so:
 *
 * - Every row the snapshot sees on such a block has an entry in the copy:
 *   its transaction inserted the entry before it committed, before the
 *   snapshot, and the copy holds every change made before then.
 * - No entry of such a block belongs to a row the snapshot does not see,
 *   if the bit is still set once the GPU has read the entries.  An insert
 *   clears the bit of its row's block before it adds the entry, and a bit
 *   is set again only by VACUUM, once every row of the block is visible
 *   to every snapshot, ours too; a dead row's entry is gone by then
 *   (VACUUM removes index entries before it sets the bit).  This is the
 *   argument of index-only scans, which look at the bit after the entry.
 *   The copy does not change while the kernel reads it (service_index.c).
 *
 * So once the GPU is done the scan looks at the bits again.  A block whose
 * bit was cleared meanwhile is read here instead, and the entries are
 * grouped anew without it; after GROUPS_INDEX_MAX_ROUNDS such rounds, the
 * scan reads every block here and gives the GPU up.  Under auto the scan
 * gives it up too when the GPU fails the job, reading on the CPU the
 * blocks it had left to the GPU.
 *
 * A text grouping column is grouped by its dictionary codes (one per value,
 * equal codes for equal bytes, which a deterministic collation's equality
 * is): the entries hold them, the set's own groups go to the GPU with
 * their values' codes, and the groups the GPU chose come back as the
 * codes' values.  Every value a visible row holds has its code: the value
 * was added to the dictionary before the row's entry, and a dictionary
 * that is full (values without codes of their own) keeps the scan to the
 * pages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/visibilitymap.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "colindex_dict.h"
#include "colindex_gpu.h"
#include "compat.h"
#include "groups_gpu.h"
#include "groups_index.h"
#include "visibility_bits.h"

/* the groupings a scan asks for before it reads every block on the CPU */
#define GROUPS_INDEX_MAX_ROUNDS 3

/*
 * The page form instead where more than one block in this many is not
 * all-visible.  Measured on the H200 machine (100M rows, 735k pages, 18.5M
 * groups, bench/results/visibility_bench_h200_2026-11-28.md): over the
 * index 43.7 ms with every block all-visible, over the pages 73.0 ms; with
 * 9,938 blocks not all-visible, reading their rows here took 224 ms more
 * (22.5 us a block), the pages 71.2 ms: the page form wins past about one
 * block in 560.  A few blocks cost little either way: up to
 * GROUPS_INDEX_UNVOUCHED_MIN (about 1.5 ms at that rate) the index is kept
 * whatever the table's size.
 */
#define GROUPS_INDEX_UNVOUCHED_SHARE 512
#define GROUPS_INDEX_UNVOUCHED_MIN 64

/* Read a block's rows into the set, on the CPU. */
static void
read_block(GroupsScanState *gs, BlockNumber block)
{
	scan_driver_read_block(&gs->scan, block);
	groups_add_page(gs);
}

/* Every block of the first nblocks whose bit in blocks is set, read on the CPU. */
static void
read_blocks_set(GroupsScanState *gs, BlockNumber nblocks, const uint64 *blocks)
{
	for (Size w = 0; w < VISIBILITY_BITS_WORDS(nblocks); w++)
		for (uint64 left = blocks[w]; left != 0; left &= left - 1)
		{
			BlockNumber block = (BlockNumber) (w * 64 + pg_rightmost_one_pos64(left));

			if (block < nblocks)
				read_block(gs, block);
		}
}

/* Every block not vouched for read on the CPU. */
static void
read_unvouched(GroupsScanState *gs, BlockNumber nblocks, const uint64 *vouched)
{
	Size		words = VISIBILITY_BITS_WORDS(nblocks);
	uint64	   *unvouched = palloc(sizeof(uint64) * words);

	for (Size w = 0; w < words; w++)
		unvouched[w] = ~vouched[w];
	read_blocks_set(gs, nblocks, unvouched);
	pfree(unvouched);
}

/*
 * The vouched blocks whose bit is no longer set taken out of vouched and
 * read on the CPU; how many.
 */
static uint64
read_those_cleared(GroupsScanState *gs, BlockNumber nblocks, uint64 *vouched)
{
	Size		words = VISIBILITY_BITS_WORDS(nblocks);
	uint64	   *cleared = palloc(sizeof(uint64) * words);
	uint64		count = 0;

	(void) visibility_bits_read(gs->css.ss.ss_currentRelation, nblocks, cleared);
	for (Size w = 0; w < words; w++)
	{
		cleared[w] = vouched[w] & ~cleared[w];
		vouched[w] &= ~cleared[w];
		count += pg_popcount64(cleared[w]);
	}
	read_blocks_set(gs, nblocks, cleared);
	pfree(cleared);
	return count;
}

/*
 * The dictionary code of each text group of the set (0 for the NULL
 * group), palloc'd; NULL if a value has none.
 */
static int64 *
text_codes(GroupsScanState *gs, Relation index)
{
	int64	   *codes = palloc0(sizeof(int64) * Max(gs->ngroups, 1));

	for (uint32 group = 0; group < gs->ngroups; group++)
	{
		text	   *value = (text *) DatumGetPointer(gs->values[group]);

		if (group == gs->null_group)
			continue;
		codes[group] = colindex_dict_code(index, VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
		if (codes[group] <= 0)
		{
			pfree(codes);
			return NULL;
		}
	}
	return codes;
}

/*
 * The set's groups sent to the job as records, a text group's value as its
 * code; false, with none sent, if a text value has no code (it cannot
 * happen: a row's value is added to the dictionary before its entry).
 */
static bool
send_records(GroupsScanState *gs, ServiceJob *job, Relation index)
{
	size_t		cap = service_buffer_bytes() / gs->record_bytes;
	size_t		n = 0;
	char	   *buffer = service_job_buffer(job);
	int64	   *codes = gs->group_by_text ? text_codes(gs, index) : NULL;

	if (gs->group_by_text && codes == NULL)
		return false;
	for (uint32 group = 0; group < gs->ngroups; group++)
	{
		char	   *record = buffer + n++ * gs->record_bytes;

		if ((group & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		groups_record_of(gs, group, record);
		if (codes != NULL)
			memcpy(record, &codes[group], sizeof(int64));
		if (n == cap)
			buffer = service_job_post_records(job, &n);
	}
	if (n > 0)
		(void) service_job_post_records(job, &n);
	return true;
}

/*
 * The request's description of the pages, the filter and the groups over
 * the index's columns; false where the GPU cannot take them.
 */
static bool
describe(GroupsScanState *gs, Relation index, ServiceIndexGroupsRequest *request,
		 uint64 **set_values)
{
	ColIndexColumns columns = {colindex_layout(index), index->rd_index->indkey.values};
	size_t		nset_values = 0;
	GpuProgramSource source = {
		.key_type = KEY_INT8,
		.key_attno = gs->group_attno,
		.filter = gs->scan.reader.filter,
	};

	colindex_gpu_describe_pages(columns.layout, !TransactionStartedDuringRecovery(),
								&request->query);
	if (!groups_gpu_describe(gs, colindex_gpu_column_of, &columns, &request->groups) ||
		!colindex_gpu_describe_program(&source, &columns, &request->query.program, set_values,
									   &nset_values))
		return false;
	request->nset_values = nset_values;
	request->query.nblocks = RelationGetNumberOfBlocks(index);
	request->expected_groups = (uint64) gs->expected_groups;
	return true;
}

BlockNumber
groups_index_declines(GroupsScanState *gs)
{
	BlockNumber nblocks = gs->scan.reader.scan->rs_nblocks;
	BlockNumber all_visible;
	BlockNumber unvouched;

	/* a text group stays: the index codes any value, the page form only short ones */
	if (gs->group_by_text)
		return 0;
	visibilitymap_count(gs->css.ss.ss_currentRelation, &all_visible, NULL);
	unvouched = nblocks - Min(all_visible, nblocks);
	if (unvouched <= GROUPS_INDEX_UNVOUCHED_MIN ||
		(uint64) unvouched * GROUPS_INDEX_UNVOUCHED_SHARE <= nblocks)
		return 0;
	return unvouched;
}

bool
groups_index_scan(GroupsScanState *gs)
{
	Relation	rel = gs->css.ss.ss_currentRelation;
	Relation	index;
	ServiceIndexGroupsRequest request = {0};
	ServiceJobSpec spec = {.kind = SERVICE_JOB_INDEX_GROUPS, .k = gs->keep};
	BlockNumber nblocks = gs->scan.reader.scan->rs_nblocks;
	uint64	   *set_values = NULL;
	uint64	   *vouched;
	ServiceJob *job;
	GpuIndexCounts counts;
	char	   *records;
	size_t		count;
	uint64		cleared;
	bool		given_up = false;

	/* a snapshot that can be too old must read the pages (see scan_page_sink.c) */
	if (gs->interpreted != NIL || compat_snapshots_get_too_old() ||
		gs->scan.reader.scan->rs_base.rs_snapshot->takenDuringRecovery)
		return false;
	index = index_open(gs->index_oid, AccessShareLock);
	/* a full dictionary no longer gives every value a code of its own */
	if ((gs->group_by_text && colindex_dict_full(index)) ||
		!describe(gs, index, &request, &set_values) ||
		!service_request_fits(sizeof(request) +
							  sizeof(uint64) * (request.nset_values + VISIBILITY_BITS_WORDS(nblocks))))
	{
		index_close(index, NoLock);
		return false;
	}
	spec.record_bytes = gs->record_bytes;
	job = colindex_gpu_start(index, &spec, &request.epoch, &gs->index_pages_sent);
	if (job == NULL)
	{
		index_close(index, NoLock);
		return false;
	}
	gs->index_used = true;
	vouched = palloc(sizeof(uint64) * VISIBILITY_BITS_WORDS(nblocks));
	gs->blocks_vouched = visibility_bits_read(rel, nblocks, vouched);
	read_unvouched(gs, nblocks, vouched);
	request.heap_blocks = nblocks;
	for (;;)
	{
		(void) service_job_index_groups(job, &request, set_values, vouched, &counts);
		gs->index_rounds++;
		if (service_job_failed(job))
			break;
		cleared = read_those_cleared(gs, nblocks, vouched);
		gs->blocks_vouched -= cleared;
		if (cleared == 0)
			break;
		if (gs->index_rounds == GROUPS_INDEX_MAX_ROUNDS)
		{
			given_up = true;
			break;
		}
	}
	gs->index_entries = counts.scanned;
	gs->index_pages_skipped = counts.pages_skipped;
	if (!service_job_failed(job) && !given_up)
	{
		given_up = !send_records(gs, job, index);
		if (!given_up)
			service_job_groups_answer(job, &records, &count);
	}
	/* the GPU given up: the blocks left to it are read here */
	if (service_job_failed(job) || given_up)
		read_blocks_set(gs, nblocks, vouched);
	else
	{
		groups_gpu_adopt(gs, records, count, service_job_stats(job)->groups, index);
		gs->scan.counters.counts[SCAN_COUNT_ROWS_SCANNED] += service_job_stats(job)->rows_read;
		scan_gpu_stats_add_job(&gs->gpu, job);
	}
	service_job_release(job);
	pfree(vouched);
	index_close(index, NoLock);
	return true;
}
