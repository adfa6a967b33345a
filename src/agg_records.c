/*-------------------------------------------------------------------------
 *
 * agg_records.c
 *	  GpuTopKAgg's rows as records, for a partitioned plan's exchange and
 *	  for the spills: their encoding, and the rows written to either (the
 *	  runs that group a partition of them are agg_exec.c's).
 *
 * A record (agg_scan.h) packs the row being grouped (ts->row): its group,
 * then each aggregate's key and result and whether they are present.  The
 * exchange partitions records by the hash of their group that the group
 * table uses (agg_groups.c), a spill by the same hash seeded with its
 * depth, so that each level spreads a partition's groups anew.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "portability/instr_time.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "agg_records.h"

/*
 * A record's words are Datums: the key types are passed by value, and so
 * are the results of a record's fixed part.  A spill's record is followed
 * by the results passed by reference (each present one's bytes, MAXALIGNed
 * from the record's start); the exchange's records have none.
 */
StaticAssertDecl(SIZEOF_DATUM == sizeof(uint64), "the exchange's records need 64-bit Datums");

/* Whether a record carries the bytes of aggregate i's result (of ts->row). */
static inline bool
carries_result_bytes(AggScanState *ts, int i)
{
	return !ts->planned.aggs[i].result_byval && ts->row[i].present &&
		!ts->row[i].result_isnull;
}

/* The row's record, without the results passed by reference, into ts->record. */
static void
encode_row(AggScanState *ts, Datum group, bool group_isnull)
{
	char	   *record;
	char	   *at;

	resetStringInfo(&ts->record);
	enlargeStringInfo(&ts->record, TOPK_AGG_RECORD_BYTES(ts->planned.naggs));
	ts->record.len = TOPK_AGG_RECORD_BYTES(ts->planned.naggs);
	record = ts->record.data;
	at = record + TOPK_AGG_RECORD_AGG_OFFSET;
	memcpy(record, &group, sizeof(uint64));
	record[sizeof(uint64)] = group_isnull;
	for (int i = 0; i < ts->planned.naggs; i++, at += TOPK_AGG_RECORD_AGG_BYTES)
	{
		memcpy(at, &ts->row[i].key, sizeof(uint64));
		memcpy(at + sizeof(uint64), &ts->row[i].result, sizeof(uint64));
		at[2 * sizeof(uint64)] = ts->row[i].present;
		at[2 * sizeof(uint64) + 1] = ts->row[i].result_isnull;
	}
}

void
agg_records_decode(AggScanState *ts, const char *record, Datum *group, bool *group_isnull)
{
	const char *at = record + TOPK_AGG_RECORD_AGG_OFFSET;

	memcpy(group, record, sizeof(uint64));
	*group_isnull = record[sizeof(uint64)] != 0;
	for (int i = 0; i < ts->planned.naggs; i++, at += TOPK_AGG_RECORD_AGG_BYTES)
	{
		memcpy(&ts->row[i].key, at, sizeof(uint64));
		memcpy(&ts->row[i].result, at + sizeof(uint64), sizeof(uint64));
		ts->row[i].present = at[2 * sizeof(uint64)] != 0;
		ts->row[i].result_isnull = at[2 * sizeof(uint64) + 1] != 0;
	}
	if (ts->planned.results_byval)
		return;
	/* the results passed by reference: in the record, which lasts while the row is grouped */
	at = record + TOPK_AGG_RECORD_BYTES(ts->planned.naggs);
	for (int i = 0; i < ts->planned.naggs; i++)
	{
		if (!carries_result_bytes(ts, i))
			continue;
		at = record + MAXALIGN(at - record);
		ts->row[i].result = PointerGetDatum(at);
		at += datumGetSize(ts->row[i].result, false, ts->planned.aggs[i].result_typlen);
	}
}

/* The row (ts->row) to the exchange, into the partition of its group. */
void
agg_records_exchange_row(AggScanState *ts, Datum group, bool group_isnull)
{
	encode_row(ts, group, group_isnull);
	/* the NULL group goes with the first partition */
	agg_exchange_put(ts->exchange, group_isnull ? 0 : agg_hash_group(group, 0),
					 ts->record.data);
}

/*
 * The row, of a group that is not in memory, to the run's spill: its
 * record, then the results passed by reference.
 */
void
agg_records_spill_row(AggScanState *ts, Datum group)
{
	StringInfo	record = &ts->record;

	encode_row(ts, group, false);
	for (int i = 0; i < ts->planned.naggs; i++)
	{
		if (!carries_result_bytes(ts, i))
			continue;
		while (record->len != MAXALIGN(record->len))
			appendStringInfoCharMacro(record, '\0');
		appendBinaryStringInfo(record, DatumGetPointer(ts->row[i].result),
							   datumGetSize(ts->row[i].result, false,
											ts->planned.aggs[i].result_typlen));
	}
	agg_spill_put(ts->run.spill, agg_hash_group(group, ts->run.spill->depth), record->data,
				  record->len);
}

/* Aggregate agg's candidates of a group that is not in memory, to the run's spill. */
void
agg_records_spill_candidates(AggScanState *ts, int agg, const GroupedKey *keys,
							 const uint64 *payloads, size_t count)
{
	for (int i = 0; i < ts->planned.naggs; i++)
		ts->row[i].present = i == agg;
	ts->row[agg].result_isnull = false;
	for (size_t j = 0; j < count; j++)
	{
		ts->row[agg].key = keys[j].key;
		ts->row[agg].result = (Datum) payloads[j];
		agg_records_spill_row(ts, (Datum) keys[j].group);
	}
}

