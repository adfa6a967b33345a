/*-------------------------------------------------------------------------
 *
 * agg_exec.c
 *	  Executing GpuTopKAgg: scan the table once under the query's snapshot,
 *	  keep the top k of each group, and return one tuple per group: the
 *	  grouping column's value and each aggregate's array.
 *
 * Groups live in a hash table keyed by the grouping column's Datum (every
 * grouping type the planner accepts is passed by value, and its equality
 * is equality of that word); the NULL group, and the single group of a
 * query without GROUP BY, have their own entry.  Each group keeps one state
 * per aggregate (agg_functions.c), so the answers and their order of ties are
 * the aggregates' own.
 *
 * On the CPU backend every row is offered to its group's states.  On the
 * GPU, each aggregate streams (group, key, payload) rows to a grouped top-k
 * (gpu_grouped.h), the payload being the value or the _by form's result,
 * both passed by value; the GPU is a filter that returns each group's k
 * best rows and those tied with the k-th, and only these are offered to
 * the states, which decide the final order exactly.  Rows the GPU cannot
 * carry (a NULL group, a NULL result) are offered on the CPU, and a row
 * that gives the GPU nothing still makes its group exist.
 *
 * A run whose groups' states outgrow hash_mem keeps the groups it has and
 * spills the rows of every other group to temporary files, partitioned by
 * group (agg_group_spill.h); once its groups are returned, each spilled
 * partition is grouped in a run of its own, which may spill in turn (the
 * deeper spills are read first, each level hashing the groups differently).
 *
 * A parallel plan takes one of two forms (parallel workers on the CPU
 * backend, the leader as gputopk.device says).  In a partial aggregation
 * each process groups its share of the table's blocks and returns its
 * groups' states serialized, for PostgreSQL's Finalize Aggregate to
 * combine: for few groups.  In a partitioned one, for many groups, each
 * process writes the rows of its share to the files of their groups'
 * partitions (agg_group_exchange.h); then the processes claim partitions one
 * at a time, group each one's rows and return its groups' answers, each
 * group whole in one process.  A partitioned plan run outside parallel
 * mode (a set-returning SQL function called row by row, say) goes through
 * the same files in one process.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "lib/stringinfo.h"
#include "rewrite/rewriteManip.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "agg_functions.h"
#include "agg_group_exchange.h"
#include "agg_group_sink.h"
#include "agg_group_spill.h"
#include "agg_scan.h"
#include "device.h"
#include "scan_counters.h"
#include "scan_datum_key.h"
#include "scan_filter_program.h"
#include "scan_gpu_stats.h"
#include "scan_row_reader.h"

/* one aggregate of the node */
typedef struct AggSpec
{
	AttrNumber	value_attno;
	AttrNumber	result_attno;	/* the _by forms' result, or 0: the value */
	int32		k;
	bool		largest;
	KeyType		key_type;		/* the value's */
	bool		result_byval;
	int16		result_typlen;
	TopkAggState *model;		/* an empty state, copied for each group */
	GroupSink  *gpu;			/* during a run on the GPU */
} AggSpec;

/* an aggregate's part of the table row being grouped */
typedef struct AggValue
{
	bool		present;		/* false: the value is NULL, which the aggregates skip */
	bool		result_isnull;
	uint64		key;			/* the value's */
	Datum		result;			/* the value itself but for the _by forms */
} AggValue;

typedef struct GroupEntry
{
	uint64		group;			/* the grouping column's Datum */
	char		status;			/* simplehash's */
	bool		has_floor;		/* the first aggregate's state is full: */
	uint64		floor;			/* keys below this cannot enter it (topk_agg_floor) */
	TopkAggState **states;		/* one per aggregate, NULL before its first value */
} GroupEntry;

/*
 * A 64-bit finalizer (MurmurHash3's): the Datums of integers are not
 * random.  Each spill level seeds it differently, so that the groups of
 * one partition spread over the next level's.
 */
static inline uint32
hash_group_seeded(uint64 group, int level)
{
	group += (uint64) level * UINT64CONST(0x9e3779b97f4a7c15);
	group ^= group >> 33;
	group *= UINT64CONST(0xff51afd7ed558ccd);
	group ^= group >> 33;
	group *= UINT64CONST(0xc4ceb9fe1a85ec53);
	group ^= group >> 33;
	return (uint32) group;
}

static inline uint32
hash_group(uint64 group)
{
	return hash_group_seeded(group, 0);
}

#define SH_PREFIX groups
#define SH_ELEMENT_TYPE GroupEntry
#define SH_KEY_TYPE uint64
#define SH_KEY group
#define SH_HASH_KEY(tb, key) hash_group(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* counts for EXPLAIN ANALYZE, summed over runs and processes (scan_counters.h) */
typedef enum SummedCount
{
	COUNT_ROWS_SCANNED,
	COUNT_PARTIAL_GROUPS,		/* a parallel scan's, returned by all processes */
	COUNT_ROWS_EXCHANGED,		/* a partitioned plan's, written by all processes */
	COUNT_BYTES_EXCHANGED,
	COUNT_ROWS_SPILLED,
	COUNT_BYTES_SPILLED,
	COUNT_SPILL_BATCHES,		/* runs over spilled rows */
	SUMMED_COUNTS
} SummedCount;

StaticAssertDecl(SUMMED_COUNTS <= SCAN_COUNTERS_MAX, "too many counts for scan_counters.h");

/*
 * Shared by the processes of a parallel scan: the counts, which the
 * workers add to, a partitioned plan's exchange, and the table scan that
 * hands out blocks (at AGG_SHARED_SCAN_OFFSET).
 */
typedef struct TopkAggShared
{
	ScanSharedCounters counters;
	GroupExchangeShared exchange;
} TopkAggShared;

#define AGG_SHARED_SCAN_OFFSET MAXALIGN(sizeof(TopkAggShared))

typedef struct TopkAggScanState
{
	CustomScanState css;

	/* from the plan */
	TopkAggMode mode;
	int			partitions;		/* of a partitioned plan */
	AttrNumber	group_attno;	/* 0: one group */
	int			naggs;
	AggSpec    *aggs;
	bool		results_byval;	/* every result by value: the GPU and spills need it */
	RowReader	reader;
	List	   *interpreted;	/* the WHERE clauses table_qual evaluates */
	TopkAggShared *shared;		/* of a parallel scan, or NULL */
	AggValue   *row;			/* the row being grouped, an entry per aggregate */
	StringInfoData record;		/* a row encoded for the exchange or a spill */
	StringInfoData spilled_record;	/* one read back from a spill, aligned */
	Size		hash_mem;		/* a run's groups' memory before it spills */
	Size		group_bytes;	/* a group's states: as planned, or as measured if less */

	/* a partitioned plan's, per scan */
	GroupExchangeShared *exchange_shared;	/* in shared memory, or NULL */
	GroupExchangeShared *local_exchange;	/* without shared memory: this process's */
	GroupExchange *exchange;	/* this process's part */
	bool		exhausted;		/* no partition is left to claim, or the table is read */
	List	   *spills;			/* spilled rows to group, the deepest last */

	/* per run (a partitioned plan's runs: its partitions) */
	bool		ran;			/* this process has run the node */
	bool		done;			/* the groups are ready */
	MemoryContext run_cxt;		/* the groups and their states */
	int			run_depth;		/* 0, or the depth of the spill the run reads */
	GroupSpill *spill;			/* the run's, once its groups outgrow hash_mem */
	groups_hash *groups;
	GroupEntry *single;			/* the NULL group, or the only one */
	groups_iterator iter;
	bool		single_returned;

	/* for EXPLAIN ANALYZE: the last run's */
	TopkBackend backend;
	uint64		ngroups;
	uint64		candidates;
	ScanGpuStats gpu_stats;		/* summed over the aggregates' sinks */
	Size		memory_used;
	/* summed over runs */
	ScanCounters counters;		/* SummedCount's, and the processes */
	int			leader_partitions;	/* grouped by the leader */
	double		scan_ms;		/* reading the table (into the exchange) */
	double		group_ms;		/* grouping a partitioned plan's partitions */
	double		merge_ms;		/* the GPU's candidates into the states */
} TopkAggScanState;

static void begin_topk_agg_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_topk_agg_scan(CustomScanState *node);
static void end_topk_agg_scan(CustomScanState *node);
static void rescan_topk_agg_scan(CustomScanState *node);
static void explain_topk_agg_scan(CustomScanState *node, List *ancestors, ExplainState *es);
static Size estimate_shared(CustomScanState *node, ParallelContext *pcxt);
static void initialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void reinitialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate);
static void attach_shared(CustomScanState *node, shm_toc *toc, void *coordinate);
static void shutdown_topk_agg_scan(CustomScanState *node);

static const CustomExecMethods topk_agg_exec_methods = {
	.CustomName = TOPK_AGG_SCAN_NAME,
	.BeginCustomScan = begin_topk_agg_scan,
	.ExecCustomScan = exec_topk_agg_scan,
	.EndCustomScan = end_topk_agg_scan,
	.ReScanCustomScan = rescan_topk_agg_scan,
	.ExplainCustomScan = explain_topk_agg_scan,
	.EstimateDSMCustomScan = estimate_shared,
	.InitializeDSMCustomScan = initialize_shared,
	.ReInitializeDSMCustomScan = reinitialize_shared,
	.InitializeWorkerCustomScan = attach_shared,
	.ShutdownCustomScan = shutdown_topk_agg_scan,
};

Node *
topk_agg_create_scan_state(CustomScan *cscan)
{
	TopkAggScanState *ts = (TopkAggScanState *) newNode(sizeof(TopkAggScanState),
														T_CustomScanState);

	ts->css.methods = &topk_agg_exec_methods;
	return (Node *) ts;
}

static void
begin_topk_agg_scan(CustomScanState *node, EState *estate, int eflags)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *private = cscan->custom_private;
	TupleDesc	table_desc = RelationGetDescr(node->ss.ss_currentRelation);
	List	   *where;
	bool		fixed = node->ss.ps.scanopsfixed;

	ts->mode = (TopkAggMode) linitial_int(list_nth(private, AGG_FIELD_MODE));
	ts->partitions = linitial_int(list_nth(private, AGG_FIELD_PARTITIONS));
	ts->group_attno = linitial_int(list_nth(private, AGG_FIELD_GROUP_ATTNO));
	ts->naggs = list_length(list_nth(private, AGG_FIELD_KS));
	ts->aggs = palloc0(sizeof(AggSpec) * ts->naggs);
	ts->row = palloc0(sizeof(AggValue) * ts->naggs);
	initStringInfo(&ts->record);
	initStringInfo(&ts->spilled_record);
	ts->hash_mem = get_hash_memory_limit();
	ts->group_bytes = linitial_int(list_nth(private, AGG_FIELD_GROUP_BYTES));
	ts->results_byval = true;
	for (int i = 0; i < ts->naggs; i++)
	{
		AggSpec    *agg = &ts->aggs[i];
		Oid			value_type;
		Form_pg_attribute result;

		agg->value_attno = list_nth_int(list_nth(private, AGG_FIELD_VALUE_ATTNOS), i);
		agg->result_attno = list_nth_int(list_nth(private, AGG_FIELD_RESULT_ATTNOS), i);
		agg->k = list_nth_int(list_nth(private, AGG_FIELD_KS), i);
		agg->largest = list_nth_int(list_nth(private, AGG_FIELD_LARGEST), i) != 0;
		value_type = TupleDescAttr(table_desc, agg->value_attno - 1)->atttypid;
		if (!key_type_of(value_type, &agg->key_type))
			elog(ERROR, "gputopk: no keys for type %s", format_type_be(value_type));
		result = TupleDescAttr(table_desc,
							   (agg->result_attno ? agg->result_attno : agg->value_attno) - 1);
		agg->result_byval = result->attbyval;
		agg->result_typlen = result->attlen;
		agg->model = topk_agg_state_create(CurrentMemoryContext, value_type, agg->largest,
										   agg->k, agg->result_attno != 0, result->atttypid,
										   list_nth_oid(list_nth(private, AGG_FIELD_COLLATIONS), i));
		ts->results_byval &= agg->result_byval;
	}

	ts->reader.rel = node->ss.ss_currentRelation;
	ts->reader.econtext = node->ss.ps.ps_ExprContext;
	ts->reader.table_slot = table_slot_create(node->ss.ss_currentRelation,
											  &estate->es_tupleTable);
	/* the WHERE clause is over the table's slots, of any type */
	node->ss.ps.scanopsfixed = false;
	/* the WHERE clause's Vars as planned, renumbered as the scan's (in a subquery they differ) */
	where = copyObject(list_nth(private, AGG_FIELDS));
	ChangeVarNodes((Node *) where, linitial_int(list_nth(private, AGG_FIELD_RELID)),
				   cscan->scan.scanrelid, 0);
	ts->reader.filter = filter_program_compile(where, cscan->scan.scanrelid, &node->ss.ps,
											   &ts->interpreted);
	ts->reader.table_qual = ExecInitQual(ts->interpreted, &node->ss.ps);
	node->ss.ps.scanopsfixed = fixed;
}

/*
 * Once the run's groups outgrow hash_mem, the rows of groups not among
 * them go to a spill.  The groups kept go on growing to their rows or k,
 * so each counts as the planner's estimate of a group when that is more
 * than what it holds yet (the estimate of the rows per group is too high
 * when that of the groups is too low, as when the run spills), or as a
 * group of the runs before measured if that is less.  At
 * GROUP_SPILL_MAX_DEPTH a run keeps every group, as PostgreSQL's hash
 * aggregation did before version 13.
 */
static void
check_memory(TopkAggScanState *ts)
{
	MemoryContext old;

	if (ts->run_depth >= GROUP_SPILL_MAX_DEPTH ||
		(ts->groups->members * ts->group_bytes <= ts->hash_mem &&
		 MemoryContextMemAllocated(ts->run_cxt, true) <= ts->hash_mem))
		return;
	old = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);
	ts->spill = group_spill_create(ts->run_depth + 1, ts->hash_mem);
	MemoryContextSwitchTo(old);
}

/*
 * The group's entry, made if it is new; NULL for a group that is not in
 * memory once the run spills.  The NULL group, or the only one, is always
 * in memory.
 */
static GroupEntry *
group_entry(TopkAggScanState *ts, uint64 group, bool isnull)
{
	GroupEntry *entry;
	bool		found;

	if (isnull || ts->group_attno == 0)
	{
		entry = ts->single;
		found = entry->states != NULL;
	}
	else if (ts->spill)
		return groups_lookup(ts->groups, group);
	else
		entry = groups_insert(ts->groups, group, &found);
	/* a new entry of the hash table holds what a moved one left there */
	if (!found)
	{
		entry->states = MemoryContextAllocZero(ts->run_cxt,
											   sizeof(TopkAggState *) * ts->naggs);
		entry->has_floor = false;
		if (entry != ts->single)
			check_memory(ts);
	}
	return entry;
}

/* Aggregate i's state of a group, made at the group's first value. */
static TopkAggState *
state_of(TopkAggScanState *ts, GroupEntry *entry, int i)
{
	if (entry->states[i] == NULL)
		entry->states[i] = topk_agg_state_like(ts->aggs[i].model, ts->run_cxt);
	return entry->states[i];
}

/*
 * The current table row's group and each aggregate's value, key and result
 * into ts->row.
 */
static void
read_row(TopkAggScanState *ts, Datum *group, bool *group_isnull)
{
	TupleDesc	desc = RelationGetDescr(ts->css.ss.ss_currentRelation);

	*group = 0;
	*group_isnull = false;
	if (ts->group_attno)
		*group = row_reader_column(&ts->reader, ts->group_attno, desc, group_isnull);
	for (int i = 0; i < ts->naggs; i++)
	{
		AggSpec    *agg = &ts->aggs[i];
		AggValue   *value = &ts->row[i];
		bool		isnull;
		Datum		datum = row_reader_column(&ts->reader, agg->value_attno, desc, &isnull);

		value->present = !isnull;
		value->key = isnull ? 0 : key_of_datum(agg->key_type, datum, agg->largest);
		value->result = isnull ? 0 : datum;
		value->result_isnull = false;
		if (agg->result_attno && !isnull)
			value->result = row_reader_column(&ts->reader, agg->result_attno, desc,
											  &value->result_isnull);
	}
}

/*
 * A record's words are Datums: the key types are passed by value, and so
 * are the results of a record's fixed part.  A spill's record is followed
 * by the results passed by reference (each present one's bytes, MAXALIGNed
 * from the record's start); the exchange's records have none.
 */
StaticAssertDecl(SIZEOF_DATUM == sizeof(uint64), "the exchange's records need 64-bit Datums");

/* Whether a record carries the bytes of aggregate i's result (of ts->row). */
static inline bool
carries_result_bytes(TopkAggScanState *ts, int i)
{
	return !ts->aggs[i].result_byval && ts->row[i].present && !ts->row[i].result_isnull;
}

/* The row's record, without the results passed by reference, into ts->record. */
static void
encode_row(TopkAggScanState *ts, Datum group, bool group_isnull)
{
	char	   *record;
	char	   *at;

	resetStringInfo(&ts->record);
	enlargeStringInfo(&ts->record, TOPK_AGG_RECORD_BYTES(ts->naggs));
	ts->record.len = TOPK_AGG_RECORD_BYTES(ts->naggs);
	record = ts->record.data;
	at = record + TOPK_AGG_RECORD_AGG_OFFSET;
	memcpy(record, &group, sizeof(uint64));
	record[sizeof(uint64)] = group_isnull;
	for (int i = 0; i < ts->naggs; i++, at += TOPK_AGG_RECORD_AGG_BYTES)
	{
		memcpy(at, &ts->row[i].key, sizeof(uint64));
		memcpy(at + sizeof(uint64), &ts->row[i].result, sizeof(uint64));
		at[2 * sizeof(uint64)] = ts->row[i].present;
		at[2 * sizeof(uint64) + 1] = ts->row[i].result_isnull;
	}
}

static void
decode_row(TopkAggScanState *ts, const char *record, Datum *group, bool *group_isnull)
{
	const char *at = record + TOPK_AGG_RECORD_AGG_OFFSET;

	memcpy(group, record, sizeof(uint64));
	*group_isnull = record[sizeof(uint64)] != 0;
	for (int i = 0; i < ts->naggs; i++, at += TOPK_AGG_RECORD_AGG_BYTES)
	{
		memcpy(&ts->row[i].key, at, sizeof(uint64));
		memcpy(&ts->row[i].result, at + sizeof(uint64), sizeof(uint64));
		ts->row[i].present = at[2 * sizeof(uint64)] != 0;
		ts->row[i].result_isnull = at[2 * sizeof(uint64) + 1] != 0;
	}
	if (ts->results_byval)
		return;
	/* the results passed by reference: in the record, which lasts while the row is grouped */
	at = record + TOPK_AGG_RECORD_BYTES(ts->naggs);
	for (int i = 0; i < ts->naggs; i++)
	{
		if (!carries_result_bytes(ts, i))
			continue;
		at = record + MAXALIGN(at - record);
		ts->row[i].result = PointerGetDatum(at);
		at += datumGetSize(ts->row[i].result, false, ts->aggs[i].result_typlen);
	}
}

/*
 * The row into its group's states.  The first aggregate's floor, kept in
 * the group's entry, turns away most rows of a large group without reading
 * its state: with many groups, that read is a cache miss.
 */
static void
offer_row(TopkAggScanState *ts, GroupEntry *entry)
{
	for (int i = 0; i < ts->naggs; i++)
	{
		AggValue   *value = &ts->row[i];
		TopkAggState *state;

		if (!value->present || (i == 0 && entry->has_floor && value->key < entry->floor))
			continue;
		state = state_of(ts, entry, i);
		topk_agg_offer(state, value->key, value->result, value->result_isnull, ts->run_cxt);
		if (i == 0)
			entry->has_floor = topk_agg_floor(state, &entry->floor);
	}
}

/*
 * The row, of a group that is not in memory, to the run's spill: its
 * record, then the results passed by reference.
 */
static void
spill_row(TopkAggScanState *ts, Datum group)
{
	StringInfo	record = &ts->record;

	encode_row(ts, group, false);
	for (int i = 0; i < ts->naggs; i++)
	{
		if (!carries_result_bytes(ts, i))
			continue;
		while (record->len != MAXALIGN(record->len))
			appendStringInfoCharMacro(record, '\0');
		appendBinaryStringInfo(record, DatumGetPointer(ts->row[i].result),
							   datumGetSize(ts->row[i].result, false, ts->aggs[i].result_typlen));
	}
	group_spill_put(ts->spill, hash_group_seeded(group, ts->spill->depth), record->data,
					record->len);
}

/* The row into its group's states, or to the spill if the group is not in memory. */
static void
keep_row(TopkAggScanState *ts, Datum group, bool group_isnull)
{
	GroupEntry *entry = group_entry(ts, group, group_isnull);

	if (entry)
		offer_row(ts, entry);
	else
		spill_row(ts, group);
}

/*
 * The row to the GPU, aggregate by aggregate; what the GPU cannot carry (a
 * NULL result) is kept here, and a row that gives the GPU nothing still
 * makes its group exist.
 */
static void
ship_row(TopkAggScanState *ts, Datum group)
{
	bool		shipped = false;
	bool		left = false;

	for (int i = 0; i < ts->naggs; i++)
	{
		AggValue   *value = &ts->row[i];

		if (!value->present)
			continue;
		if (value->result_isnull)
		{
			left = true;
			continue;
		}
		group_sink_add(ts->aggs[i].gpu, group, value->key, value->result);
		value->present = false; /* not kept here too */
		shipped = true;
	}
	if (left || !shipped)
		keep_row(ts, group, false);
}

/* The row (ts->row) to this run's groups, on its backend. */
static void
group_row(TopkAggScanState *ts, Datum group, bool group_isnull)
{
	if (ts->backend == BACKEND_GPU && !group_isnull)
		ship_row(ts, group);
	else
		keep_row(ts, group, group_isnull);
}

/* A record of the exchange or a spill to this run's groups. */
static void
group_record(TopkAggScanState *ts, const char *record)
{
	Datum		group;
	bool		group_isnull;

	decode_row(ts, record, &group, &group_isnull);
	group_row(ts, group, group_isnull);
}

/* Aggregate agg's candidates of a group that is not in memory, to the run's spill. */
static void
spill_candidates(TopkAggScanState *ts, int agg, const GroupedKey *keys,
				 const uint64 *payloads, size_t count)
{
	for (int i = 0; i < ts->naggs; i++)
		ts->row[i].present = i == agg;
	ts->row[agg].result_isnull = false;
	for (size_t j = 0; j < count; j++)
	{
		ts->row[agg].key = keys[j].key;
		ts->row[agg].result = (Datum) payloads[j];
		spill_row(ts, (Datum) keys[j].group);
	}
}

/*
 * The GPU's candidates of every aggregate into the groups' states.  A
 * group's candidates are adjacent, best first: they are offered worst
 * first, so that each one entering a state's heap stays where it lands.
 */
static void
offer_candidates(TopkAggScanState *ts)
{
	for (int i = 0; i < ts->naggs; i++)
	{
		const GroupedKey *keys;
		const uint64 *payloads;
		size_t		count;
		size_t		end;
		GroupSink  *sink = ts->aggs[i].gpu;

		group_sink_result(sink, &keys, &payloads, &count);
		ts->candidates += count;
		scan_gpu_stats_add(&ts->gpu_stats, &sink->gpu_stats);
		for (size_t start = 0; start < count; start = end)
		{
			GroupEntry *entry = group_entry(ts, keys[start].group, false);
			TopkAggState *state;

			CHECK_FOR_INTERRUPTS();
			for (end = start + 1; end < count && keys[end].group == keys[start].group; end++)
				;
			if (entry == NULL)
			{
				spill_candidates(ts, i, keys + start, payloads + start, end - start);
				continue;
			}
			state = state_of(ts, entry, i);
			topk_agg_reserve(state, (int32) Min(end - start, (size_t) PG_INT32_MAX), ts->run_cxt);
			for (size_t j = end; j-- > start;)
				topk_agg_offer(state, keys[j].key, (Datum) payloads[j], false, ts->run_cxt);
		}
	}
}

/*
 * Start a run, of the table's rows or the exchange's (depth 0) or of a
 * spill's: no groups yet, the backend this process uses.
 */
static void
begin_run(TopkAggScanState *ts, int depth)
{
	/*
	 * Blocks of at most a sixteenth of hash_mem (PostgreSQL caps the blocks
	 * of its hash aggregation at a sixteenth of work_mem), so that the
	 * memory counted is near the memory used when it reaches hash_mem.
	 */
	Size		max_block = Max(Min(pg_prevpower2_size_t(Max(ts->hash_mem / 16, 1)),
									ALLOCSET_DEFAULT_MAXSIZE),
								ALLOCSET_DEFAULT_INITSIZE);

	ts->run_cxt = AllocSetContextCreate(ts->css.ss.ps.state->es_query_cxt, "GpuTopKAgg groups",
										ALLOCSET_DEFAULT_MINSIZE, ALLOCSET_DEFAULT_INITSIZE,
										max_block);
	ts->groups = groups_create(ts->run_cxt, 256, NULL);
	ts->single = MemoryContextAllocZero(ts->run_cxt, sizeof(GroupEntry));
	ts->run_depth = depth;

	/*
	 * A CUDA context per parallel worker would cost more than it saves, and
	 * so would the GPU's set-up for each of a spill's partitions.
	 */
	ts->backend = ts->results_byval && !IsParallelWorker() && depth == 0 ?
		device_choose_backend() : BACKEND_CPU;
	if (ts->backend == BACKEND_GPU)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->run_cxt);

		for (int i = 0; i < ts->naggs; i++)
			ts->aggs[i].gpu = group_sink_create(ts->aggs[i].k);
		MemoryContextSwitchTo(old);
	}
	if (ts->group_attno == 0)
		group_entry(ts, 0, true);
}

/*
 * End a run: the GPU's candidates into the states, the groups ready to
 * return, and its spill, if any, to be grouped after them.
 */
static void
end_run(TopkAggScanState *ts)
{
	instr_time	start;
	instr_time	end;
	uint64		groups;
	Size		allocated;

	INSTR_TIME_SET_CURRENT(start);
	if (ts->backend == BACKEND_GPU)
		offer_candidates(ts);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->merge_ms += INSTR_TIME_GET_MILLISEC(end);
	groups = ts->groups->members + (ts->single->states != NULL);
	ts->ngroups += groups;
	if (ts->shared || ts->mode == AGG_MODE_PARTITIONED)
		ts->counters.counts[COUNT_PARTIAL_GROUPS] += groups;
	allocated = MemoryContextMemAllocated(ts->run_cxt, true);
	ts->memory_used = Max(ts->memory_used, allocated);
	/* the groups' measured size, where the planner's estimate was larger, for the runs after */
	if (ts->groups->members > 0)
		ts->group_bytes = Min(ts->group_bytes, allocated / ts->groups->members);
	if (ts->spill)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);

		ts->counters.counts[COUNT_ROWS_SPILLED] += ts->spill->rows_written;
		ts->counters.counts[COUNT_BYTES_SPILLED] += ts->spill->bytes_written;
		ts->spills = lappend(ts->spills, ts->spill);
		ts->spill = NULL;
		MemoryContextSwitchTo(old);
	}
	scan_counters_publish(&ts->counters);
	groups_start_iterate(ts->groups, &ts->iter);
	ts->single_returned = false;
	ts->done = true;
}

/* This process is one of those scanning the table, or the only one. */
static void
count_process(TopkAggScanState *ts)
{
	scan_counters_count_process(&ts->counters);
	ts->ngroups = 0;
	ts->candidates = 0;
	memset(&ts->gpu_stats, 0, sizeof(ts->gpu_stats));
	ts->memory_used = 0;
	ts->backend = BACKEND_CPU;
	ts->ran = true;
}

/*
 * Read this process's share of the table: each row to its group, or in a
 * partitioned plan to the exchange.
 */
static void
scan_table(TopkAggScanState *ts)
{
	BlockNumber block;
	bool		to_exchange = ts->exchange != NULL;
	instr_time	start;
	instr_time	end;

	INSTR_TIME_SET_CURRENT(start);
	if (ts->reader.filter)
		filter_program_bind(ts->reader.filter, ts->css.ss.ps.ps_ExprContext);
	ts->reader.parallel = ts->shared ?
		(ParallelTableScanDesc) ((char *) ts->shared + AGG_SHARED_SCAN_OFFSET) : NULL;
	row_reader_begin(&ts->reader, ts->css.ss.ps.state->es_snapshot);
	while ((block = row_reader_next_block(&ts->reader)) != InvalidBlockNumber)
	{
		row_reader_read_page(&ts->reader, block);
		while (row_reader_next_row(&ts->reader))
		{
			Datum		group;
			bool		group_isnull;

			read_row(ts, &group, &group_isnull);
			if (!to_exchange)
				group_row(ts, group, group_isnull);
			else
			{
				encode_row(ts, group, group_isnull);
				/* the NULL group goes with the first partition */
				group_exchange_put(ts->exchange, group_isnull ? 0 : hash_group(group),
								   ts->record.data);
			}
		}
		ts->counters.counts[COUNT_ROWS_SCANNED] += ts->reader.scan->rs_ntuples;
	}
	row_reader_end(&ts->reader);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->scan_ms += INSTR_TIME_GET_MILLISEC(end);
}

/*
 * Join a partitioned plan's exchange, and write this process's share of
 * the table to it unless the writing is over; then wait for the other
 * writers.
 */
static void
start_exchange(TopkAggScanState *ts)
{
	MemoryContext query_cxt = ts->css.ss.ps.state->es_query_cxt;
	MemoryContext scan_cxt;
	MemoryContext old = MemoryContextSwitchTo(query_cxt);

	/* the planner's rule: the exchange's fixed-size records carry results by value */
	Assert(ts->results_byval);
	if (ts->exchange_shared == NULL && ts->local_exchange == NULL)
	{
		/* no parallel scan: the same files, in this process alone */
		ts->local_exchange = palloc0(sizeof(GroupExchangeShared));
		group_exchange_init(ts->local_exchange, NULL, 1, ts->partitions);
	}
	ts->exchange = group_exchange_begin(ts->exchange_shared ? ts->exchange_shared :
										ts->local_exchange, TOPK_AGG_RECORD_BYTES(ts->naggs));
	count_process(ts);
	if (ts->exchange->writing)
	{
		scan_cxt = AllocSetContextCreate(query_cxt, "GpuTopKAgg exchange",
										 ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(scan_cxt);
		scan_table(ts);
		MemoryContextSwitchTo(query_cxt);
		group_exchange_finish_writing(ts->exchange);
		MemoryContextDelete(scan_cxt);
		ts->counters.counts[COUNT_ROWS_EXCHANGED] += ts->exchange->rows_written;
		ts->counters.counts[COUNT_BYTES_EXCHANGED] += ts->exchange->bytes_written;
		scan_counters_publish(&ts->counters);
	}
	MemoryContextSwitchTo(old);
}

/* Group a spill's next partition; false when none is left. */
static bool
group_spilled(TopkAggScanState *ts, GroupSpill *spill)
{
	MemoryContext old;
	const char *record;
	Size		size;

	if (!group_spill_next_partition(spill))
		return false;
	begin_run(ts, spill->depth);
	old = MemoryContextSwitchTo(ts->run_cxt);
	while ((record = group_spill_next_row(spill, &size)) != NULL)
	{
		Assert(size >= TOPK_AGG_RECORD_BYTES(ts->naggs));
		/* results passed by reference are used where they are: aligned */
		if (!ts->results_byval)
		{
			resetStringInfo(&ts->spilled_record);
			appendBinaryStringInfo(&ts->spilled_record, record, size);
			record = ts->spilled_record.data;
		}
		group_record(ts, record);
	}
	MemoryContextSwitchTo(old);
	ts->counters.counts[COUNT_SPILL_BATCHES]++;
	end_run(ts);
	return true;
}

/*
 * The next run's groups, ready to return: a spilled partition's, the whole
 * table's (or this process's share's), or a partitioned plan's next
 * partition's; false when nothing is left.
 */
static bool
next_run(TopkAggScanState *ts)
{
	MemoryContext old;
	instr_time	start;
	instr_time	end;
	const char *record;

	/* the spills of the runs before, the deepest first */
	while (ts->spills != NIL)
	{
		GroupSpill *spill = llast(ts->spills);

		if (group_spilled(ts, spill))
			return true;
		ts->spills = list_delete_last(ts->spills);
		group_spill_free(spill);
	}
	if (ts->exhausted)
		return false;
	if (ts->mode != AGG_MODE_PARTITIONED)
	{
		count_process(ts);
		begin_run(ts, 0);
		old = MemoryContextSwitchTo(ts->run_cxt);
		scan_table(ts);
		MemoryContextSwitchTo(old);
		end_run(ts);
		ts->exhausted = true;
		return true;
	}
	if (ts->exchange == NULL)
		start_exchange(ts);
	/*
	 * The leader returns every process's groups: while workers still group
	 * partitions, it leaves the rest to them and gathers.
	 */
	if (!group_exchange_next_partition(ts->exchange, !IsParallelWorker()))
	{
		ts->exhausted = true;
		return false;
	}
	INSTR_TIME_SET_CURRENT(start);
	begin_run(ts, 0);
	old = MemoryContextSwitchTo(ts->run_cxt);
	while ((record = group_exchange_next_row(ts->exchange)) != NULL)
		group_record(ts, record);
	MemoryContextSwitchTo(old);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->group_ms += INSTR_TIME_GET_MILLISEC(end);
	ts->leader_partitions += !IsParallelWorker();
	end_run(ts);
	return true;
}

/* Free a run's groups (and the GPU's resources, the sinks' reset callbacks). */
static void
free_run(TopkAggScanState *ts)
{
	if (ts->run_cxt)
		MemoryContextDelete(ts->run_cxt);
	ts->run_cxt = NULL;
	ts->groups = NULL;
	for (int i = 0; i < ts->naggs; i++)
		ts->aggs[i].gpu = NULL;
	ts->done = false;
}

/*
 * A group's tuple: its grouping value and each aggregate's array, or in a
 * partial aggregation its state serialized (NULL where no value came, as
 * for a transition state that never started).
 */
static TupleTableSlot *
group_tuple(TopkAggScanState *ts, GroupEntry *entry, bool group_isnull)
{
	TupleTableSlot *slot = ts->css.ss.ss_ScanTupleSlot;
	int			col = 0;

	ExecClearTuple(slot);
	if (ts->group_attno)
	{
		slot->tts_values[col] = (Datum) entry->group;
		slot->tts_isnull[col++] = group_isnull;
	}
	/* the arrays are made in the per-tuple memory, reset for each tuple */
	for (int i = 0; i < ts->naggs; i++, col++)
	{
		if (ts->mode != AGG_MODE_PARTIAL)
			slot->tts_values[col] = topk_agg_result(entry->states[i], &slot->tts_isnull[col]);
		else if ((slot->tts_isnull[col] = entry->states[i] == NULL) == false)
			slot->tts_values[col] = PointerGetDatum(topk_agg_serialize(entry->states[i]));
	}
	return ExecStoreVirtualTuple(slot);
}

static TupleTableSlot *
next_group(ScanState *ss)
{
	TopkAggScanState *ts = (TopkAggScanState *) ss;
	MemoryContext old;
	GroupEntry *entry;
	TupleTableSlot *slot = NULL;

	for (;;)
	{
		if (!ts->done && !next_run(ts))
			return ExecClearTuple(ss->ss_ScanTupleSlot);
		old = MemoryContextSwitchTo(ss->ps.ps_ExprContext->ecxt_per_tuple_memory);
		if ((entry = groups_iterate(ts->groups, &ts->iter)) != NULL)
			slot = group_tuple(ts, entry, false);
		else if (!ts->single_returned && ts->single->states != NULL)
		{
			ts->single_returned = true;
			slot = group_tuple(ts, ts->single, ts->group_attno != 0);
		}
		MemoryContextSwitchTo(old);
		if (slot)
			return slot;
		/* the run's groups are all out: on to the next run */
		free_run(ts);
	}
}

static bool
recheck_group(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_topk_agg_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, next_group, recheck_group);
}

/* Leave the scan: its groups and spills freed, this process out of the exchange. */
static void
reset_scan(TopkAggScanState *ts)
{
	ListCell   *lc;

	free_run(ts);
	if (ts->spill)
		group_spill_free(ts->spill);
	ts->spill = NULL;
	foreach(lc, ts->spills)
		group_spill_free(lfirst(lc));
	list_free(ts->spills);
	ts->spills = NIL;
	group_exchange_end(ts->exchange);
	ts->exchange = NULL;
	ts->exhausted = false;
}

static void
end_topk_agg_scan(CustomScanState *node)
{
	reset_scan((TopkAggScanState *) node);
}

static void
rescan_topk_agg_scan(CustomScanState *node)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;

	reset_scan(ts);
	/* the exchange in this process alone starts over (a parallel one: reinitialize_shared) */
	if (ts->local_exchange)
		group_exchange_reinit(ts->local_exchange);
}

static Size
estimate_shared(CustomScanState *node, ParallelContext *pcxt)
{
	return add_size(AGG_SHARED_SCAN_OFFSET,
					table_parallelscan_estimate(node->ss.ss_currentRelation,
												node->ss.ps.state->es_snapshot));
}

static void
initialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;

	ts->shared = (TopkAggShared *) coordinate;
	scan_counters_init_shared(&ts->counters, &ts->shared->counters);
	/* without a segment (none could be made, so no workers) the exchange is local */
	if (ts->mode == AGG_MODE_PARTITIONED && pcxt->seg != NULL)
	{
		group_exchange_init(&ts->shared->exchange, pcxt->seg, pcxt->nworkers + 1,
							ts->partitions);
		ts->exchange_shared = &ts->shared->exchange;
	}
	table_parallelscan_initialize(node->ss.ss_currentRelation,
								  (ParallelTableScanDesc) ((char *) coordinate + AGG_SHARED_SCAN_OFFSET),
								  node->ss.ps.state->es_snapshot);
}

/* Before a rescan's workers start: the last run's counts are complete. */
static void
reinitialize_shared(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;

	scan_counters_collect(&ts->counters);
	/*
	 * The rescan reaches this node only at its next ExecProcNode, after this:
	 * a leader still in the last run's exchange (its reader stopped early)
	 * leaves it before the barrier starts over.
	 */
	reset_scan(ts);
	if (ts->exchange_shared)
		group_exchange_reinit(ts->exchange_shared);
	table_parallelscan_reinitialize(node->ss.ss_currentRelation,
									(ParallelTableScanDesc) ((char *) coordinate + AGG_SHARED_SCAN_OFFSET));
}

static void
attach_shared(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;

	ts->shared = (TopkAggShared *) coordinate;
	scan_counters_attach(&ts->counters, &ts->shared->counters);
	/* the leader's segment made, the exchange is in it */
	if (ts->mode == AGG_MODE_PARTITIONED)
	{
		ts->exchange_shared = &ts->shared->exchange;
		group_exchange_attach(ts->exchange_shared);
	}
}

/*
 * Before the parallel scan's memory goes: the workers' counts, and the
 * leader leaves the exchange there.
 */
static void
shutdown_topk_agg_scan(CustomScanState *node)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;

	if (ts->shared == NULL || IsParallelWorker())
		return;
	if (ts->exchange_shared)
	{
		group_exchange_end(ts->exchange);
		ts->exchange = NULL;
		ts->exchange_shared = NULL;
	}
	scan_counters_detach(&ts->counters);
	ts->shared = NULL;
}

static void
explain_topk_agg_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	TopkAggScanState *ts = (TopkAggScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt, &cscan->scan.plan,
												   ancestors);
	bool		prefix = es->verbose || list_length(es->rtable) > 1;
	const uint64 *count = ts->counters.counts;
	List	   *aggs = NIL;
	ListCell   *lc;

	foreach(lc, cscan->custom_scan_tlist)
	{
		Node	   *expr = (Node *) lfirst_node(TargetEntry, lc)->expr;

		if (IsA(expr, Aggref))
			aggs = lappend(aggs, deparse_expression(expr, context, prefix, false));
		else
			ExplainPropertyText("Group Key", deparse_expression(expr, context, prefix, false),
								es);
	}
	ExplainPropertyList("Aggregates", aggs, es);
	if (ts->reader.filter)
		filter_program_explain(ts->reader.filter, context, es);
	if (ts->interpreted != NIL)
		ExplainPropertyText("Filter",
							deparse_expression((Node *) make_ands_explicit(ts->interpreted),
											   context, es->verbose, false),
							es);
	if (ts->mode == AGG_MODE_PARTITIONED)
		ExplainPropertyInteger("Partitions", NULL, ts->partitions, es);
	/* the backend the leader used, or would use (it may not have run) */
	ExplainPropertyText("Backend", device_backend_name(ts->ran ? ts->backend :
													   ts->results_byval ?
													   device_selected_backend() :
													   BACKEND_CPU), es);
	if (!(es->analyze && ts->counters.processes > 0))
		return;
	if (node->ss.ps.plan->parallel_aware)
	{
		ExplainPropertyText("Worker Backend", "cpu", es);
		ExplainPropertyInteger("Scan Processes", NULL, ts->counters.processes, es);
	}
	ExplainPropertyUInteger("Rows Scanned", NULL, count[COUNT_ROWS_SCANNED], es);
	ExplainPropertyUInteger("Groups", NULL, node->ss.ps.plan->parallel_aware ?
							count[COUNT_PARTIAL_GROUPS] : ts->ngroups, es);
	/* the leader's groups: none if it grouped none */
	if (ts->memory_used > 0)
		ExplainPropertyInteger("Memory Used", "kB", (int64) ((ts->memory_used + 1023) / 1024),
							   es);
	if (ts->mode == AGG_MODE_PARTITIONED)
	{
		ExplainPropertyUInteger("Rows Exchanged", NULL, count[COUNT_ROWS_EXCHANGED], es);
		ExplainPropertyInteger("Exchange Disk", "kB",
							   (int64) ((count[COUNT_BYTES_EXCHANGED] + 1023) / 1024), es);
		ExplainPropertyInteger("Leader Partitions", NULL, ts->leader_partitions, es);
	}
	if (count[COUNT_ROWS_SPILLED] > 0)
	{
		ExplainPropertyUInteger("Rows Spilled", NULL, count[COUNT_ROWS_SPILLED], es);
		ExplainPropertyUInteger("Spill Batches", NULL, count[COUNT_SPILL_BATCHES], es);
		ExplainPropertyInteger("Spill Disk", "kB",
							   (int64) ((count[COUNT_BYTES_SPILLED] + 1023) / 1024), es);
	}
	if (ts->backend == BACKEND_GPU)
	{
		scan_gpu_stats_explain_shipped(&ts->gpu_stats, es);
		ExplainPropertyUInteger("Candidates", NULL, ts->candidates, es);
	}
	if (es->timing)
	{
		ExplainPropertyFloat("Scan Time", "ms", ts->scan_ms, 3, es);
		if (ts->mode == AGG_MODE_PARTITIONED)
			ExplainPropertyFloat("Group Time", "ms", ts->group_ms, 3, es);
		if (ts->backend == BACKEND_GPU)
		{
			scan_gpu_stats_explain_times(&ts->gpu_stats, es);
			ExplainPropertyFloat("Merge Time", "ms", ts->merge_ms, 3, es);
		}
	}
}
