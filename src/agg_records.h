/*-------------------------------------------------------------------------
 *
 * agg_records.h
 *	  GpuTopKAgg's rows as records, for the exchange and the spills
 *	  (agg_records.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AGG_RECORDS_H
#define AGG_RECORDS_H

#include "agg_state.h"

extern void agg_records_exchange_row(AggScanState *ts, Datum group, bool group_isnull);
extern void agg_records_spill_row(AggScanState *ts, Datum group);
extern void agg_records_spill_candidates(AggScanState *ts, int agg, const GroupedKey *keys,
										 const uint64 *payloads, size_t count);

/* A record back into the row (ts->row), and its group. */
extern void agg_records_decode(AggScanState *ts, const char *record, Datum *group,
							   bool *group_isnull);

#endif							/* AGG_RECORDS_H */
