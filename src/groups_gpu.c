/*-------------------------------------------------------------------------
 *
 * groups_gpu.c
 *	  GpuTopKGroups on the GPU: the table's pages are grouped there
 *	  (kernels/gpu_groups.h), in place in shared_buffers or from the GPU's
 *	  page cache, through a page sink's groups job (scan_page_sink.h).
 *
 * The scan in one process reads each block as GpuTopK's page scan does:
 * each page goes to the GPU, pinned with the line pointers of its visible
 * tuples or, where the page cache stands for it, unread.  Once the table
 * is read, the GPU sends back the groups it chose (the first LIMIT +
 * OFFSET by the ranking value and those tied with the last): they become
 * the set that the scan chooses from and returns, as on the CPU.  Only aggregates whose cells add up in
 * any order run there, so the answer is the CPU's to the bit.
 *
 * Should the GPU fail the job (under gputopk.device = auto), the scan
 * starts over on the CPU (scan_driver.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "colindex_dict.h"
#include "groups_gpu.h"
#include "groups_scan.h"

/*
 * A column of the table as the GPU reads it in a heap page, by value: a
 * grouping value or an aggregate's; false where it cannot (text too).
 */
static bool
heap_column(void *arg, AttrNumber attno, GpuColumn *column)
{
	return scan_page_sink_column(arg, attno, column) && column->kind != VALUE_TEXT;
}

bool
groups_gpu_describe(GroupsScanState *gs, GpuColumnOf column_of, void *arg, GpuGroupsSpec *spec)
{
	int			kind;

	memset(spec, 0, sizeof(GpuGroupsSpec));
	if (gs->naggs > GPU_GROUPS_MAX_AGGS)
		return false;
	spec->ncolumns = gs->ngroup_columns;
	if (!column_of(arg, gs->group_attno, &spec->columns[0]) ||
		(gs->ngroup_columns == 2 && !column_of(arg, gs->second_attno, &spec->columns[1])))
		return false;
	spec->naggs = gs->naggs;
	for (int i = 0; i < gs->naggs; i++)
	{
		GpuGroupsAgg *agg = &spec->aggs[i];

		if (!groups_agg_gpu_kind(&gs->aggs[i], &kind) ||
			(gs->aggs[i].attno != 0 && !column_of(arg, gs->aggs[i].attno, &agg->column)))
			return false;
		agg->kind = kind;
		agg->offset = gs->aggs[i].offset;
		agg->key_type = gs->aggs[i].key_type;
	}
	spec->cell_bytes = gs->cell_bytes;
	spec->rank = gs->rank ? (int32) (gs->rank - gs->aggs) : -1 - gs->rank_column;
	/* a 128-bit sum is not ranked on the GPU */
	if (gs->rank && spec->aggs[spec->rank].kind == GPU_GROUPS_WIDE_SUM)
		return false;
	spec->desc = gs->desc;
	spec->nulls_first = gs->nulls_first;
	spec->keep = (uint64) gs->keep;
	return true;
}

/*
 * A text group's value: its dictionary code's in the column index
 * dictionary, made in the page's context.
 */
static Datum
text_of_code(GroupsScanState *gs, Relation dictionary, int64 code)
{
	const char *bytes;
	int			length;
	MemoryContext old;
	text	   *value;

	if (!colindex_dict_value(dictionary, (int32) code, &bytes, &length))
		elog(ERROR, "gputopk: code " INT64_FORMAT " is not in the dictionary of index \"%s\"",
			 code, RelationGetRelationName(dictionary));
	old = MemoryContextSwitchTo(gs->page_cxt);
	value = cstring_to_text_with_len(bytes, length);
	MemoryContextSwitchTo(old);
	return PointerGetDatum(value);
}

void
groups_gpu_adopt(GroupsScanState *gs, char *records, size_t count, uint64 gpu_groups,
				 Relation dictionary)
{
	groups_reset(gs);
	groups_begin(gs);
	for (size_t i = 0; i < count; i++)
	{
		const char *record = records + i * gs->record_bytes;
		int64		code;
		uint64		nulls;

		if ((i & 0xffff) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			MemoryContextReset(gs->page_cxt);
		}
		if (!gs->group_by_text)
		{
			groups_merge_record(gs, record);
			continue;
		}
		memcpy(&code, record, sizeof(int64));
		memcpy(&nulls, record + 2 * sizeof(uint64), sizeof(uint64));
		groups_merge_text_record(gs, nulls != 0 ? (Datum) 0 :
								 text_of_code(gs, dictionary, code), record);
	}
	MemoryContextReset(gs->page_cxt);
	pfree(records);
	/* the groups chosen from are the GPU's; the set holds those it chose */
	gs->scan.counters.counts[GROUPS_COUNT_GROUPS] += gpu_groups - count;
	gs->ran_on_gpu = true;
}

PageSink *
groups_gpu_sink(GroupsScanState *gs)
{
	GpuGroupsSpec spec;

	if (!gs->gpu_planned ||
		!groups_gpu_describe(gs, heap_column, RelationGetDescr(gs->css.ss.ss_currentRelation),
							 &spec))
		return NULL;
	return scan_page_sink_create_groups(&gs->scan.reader, &spec, (uint64) gs->expected_groups);
}

bool
groups_gpu_finish(GroupsScanState *gs, PageSink *sink, PageSinkStats *stats)
{
	char	   *records;
	size_t		count;

	scan_page_sink_groups(sink, &records, &count, &gs->gpu, stats);
	if (scan_page_sink_failed(sink))
		return false;
	groups_gpu_adopt(gs, records, count, stats->groups, NULL);
	return true;
}
