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
 * the set that the scan chooses from and returns, as on the CPU.  Only
 * aggregates whose cells add up in any order run there, so the answer is
 * the CPU's to the bit.  A text group is grouped there by its bytes, up to
 * GPU_GROUPS_TEXT_BYTES of them: the GPU leaves out a page with a longer
 * one (or one compressed or out of line, which is longer), and then the
 * scan starts over on the CPU, as it does should the GPU fail the job
 * (under gputopk.device = auto; scan_driver.h).
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

		/* a text column is only counted */
		if (!groups_agg_gpu_kind(&gs->aggs[i], &kind) ||
			(gs->aggs[i].attno != 0 && (!column_of(arg, gs->aggs[i].attno, &agg->column) ||
										(agg->column.kind == VALUE_TEXT &&
										 kind != GPU_GROUPS_COUNT))))
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

/* A text value of length bytes, made in the page's context. */
static Datum
text_in_page_cxt(GroupsScanState *gs, const char *bytes, int length)
{
	MemoryContext old = MemoryContextSwitchTo(gs->page_cxt);
	text	   *value = cstring_to_text_with_len(bytes, length);

	MemoryContextSwitchTo(old);
	return PointerGetDatum(value);
}

/*
 * A text group's value in a record of the GPU's: over a column index, its
 * dictionary code's in the index's dictionary; over heap pages, the bytes
 * in its two grouping values (gpu_groups.h).
 */
static Datum
text_of_record(GroupsScanState *gs, Relation dictionary, const char *record)
{
	uint64		values[2];
	const char *bytes;
	char		packed[GPU_GROUPS_TEXT_BYTES];
	int			length = 0;

	memcpy(values, record, sizeof(values));
	if (dictionary == NULL)
	{
		for (int i = 0; i < GPU_GROUPS_TEXT_BYTES; i++)
		{
			char		byte = (char) (values[i / 8] >> (56 - 8 * (i % 8)));

			if (byte == '\0')
				break;
			packed[length++] = byte;
		}
		return text_in_page_cxt(gs, packed, length);
	}
	if (!colindex_dict_value(dictionary, (int32) values[0], &bytes, &length))
		elog(ERROR, "gputopk: code " INT64_FORMAT " is not in the dictionary of index \"%s\"",
			 (int64) values[0], RelationGetRelationName(dictionary));
	return text_in_page_cxt(gs, bytes, length);
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
		memcpy(&nulls, record + 2 * sizeof(uint64), sizeof(uint64));
		groups_merge_text_record(gs, nulls != 0 ? (Datum) 0 :
								 text_of_record(gs, dictionary, record), record);
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
		!groups_gpu_describe(gs, scan_page_sink_column,
							 RelationGetDescr(gs->css.ss.ss_currentRelation), &spec))
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
	/* the groups lack rows of pages whose text groups the GPU could not hold */
	if (stats->pages_unheld > 0)
	{
		gs->pages_unheld = stats->pages_unheld;
		pfree(records);
		return false;
	}
	groups_gpu_adopt(gs, records, count, stats->groups, NULL);
	return true;
}
