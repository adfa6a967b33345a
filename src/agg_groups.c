/*-------------------------------------------------------------------------
 *
 * agg_groups.c
 *	  A GpuTopKAgg run's groups: the hash table, each row offered to its
 *	  group's states on the CPU or shipped to the GPU, the GPU's candidates
 *	  merged into the states, and the groups' tuples.
 *
 * Groups live in a hash table keyed by the grouping column's Datum (every
 * grouping type the planner accepts is passed by value, and its equality
 * is equality of that word); the NULL group, and the single group of a
 * query without GROUP BY, have their own entry.  Each group keeps one state
 * per aggregate (agg_functions.c), so the answers and their order of ties
 * are the aggregates' own.
 *
 * On the CPU backend every row is offered to its group's states.  On the
 * GPU, each aggregate streams (group, key, payload) rows to a grouped top-k
 * (agg_sink.h, gpu_grouped.h), the payload being the value or the
 * _by form's result, both passed by value; the GPU is a filter that
 * returns each group's k best rows and those tied with the k-th, and only
 * these are offered to the states, which decide the final order exactly.
 * Rows the GPU cannot carry (a NULL group, a NULL result) are offered on
 * the CPU, and a row that gives the GPU nothing still makes its group
 * exist.  Once the groups outgrow hash_mem, the rows of groups not in
 * memory go to the run's spill (agg_records.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "agg_groups.h"
#include "agg_records.h"

#define SH_PREFIX agg_groups
#define SH_ELEMENT_TYPE GroupEntry
#define SH_KEY_TYPE uint64
#define SH_KEY group
#define SH_HASH_KEY(tb, key) agg_hash_group(key, 0)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE extern
#define SH_DEFINE
#include "lib/simplehash.h"

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
check_memory(AggScanState *ts)
{
	MemoryContext old;

	if (ts->run.depth >= GROUP_SPILL_MAX_DEPTH ||
		(ts->run.groups->members * ts->group_bytes <= ts->hash_mem &&
		 MemoryContextMemAllocated(ts->run.cxt, true) <= ts->hash_mem))
		return;
	old = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);
	ts->run.spill = agg_spill_create(ts->run.depth + 1, ts->hash_mem);
	MemoryContextSwitchTo(old);
}

/*
 * The group's entry, made if it is new; NULL for a group that is not in
 * memory once the run spills.  The NULL group, or the only one, is always
 * in memory.
 */
static GroupEntry *
group_entry(AggScanState *ts, uint64 group, bool isnull)
{
	GroupEntry *entry;
	bool		found;

	if (isnull || ts->planned.group_attno == 0)
	{
		entry = ts->run.single;
		found = entry->states != NULL;
	}
	else if (ts->run.spill)
		return agg_groups_lookup(ts->run.groups, group);
	else
		entry = agg_groups_insert(ts->run.groups, group, &found);
	/* a new entry of the hash table holds what a moved one left there */
	if (!found)
	{
		entry->states = MemoryContextAllocZero(ts->run.cxt,
											   sizeof(TopkAggState *) * ts->planned.naggs);
		entry->has_floor = false;
		if (entry != ts->run.single)
			check_memory(ts);
	}
	return entry;
}

/* Aggregate i's state of a group, made at the group's first value. */
static TopkAggState *
state_of(AggScanState *ts, GroupEntry *entry, int i)
{
	if (entry->states[i] == NULL)
		entry->states[i] = agg_trans_like(ts->planned.aggs[i].model, ts->run.cxt);
	return entry->states[i];
}

/*
 * The rows of a run of the table or the exchange to grouped top-ks on the
 * GPU, where this process's backend is the GPU: a GPU job per aggregate,
 * taken all at once.  If one cannot start, those taken go back, and under
 * gputopk.device = gpu the run waits for free slots and tries again (a
 * process that held some slots while it waited for more could wait for
 * another that does the same); under auto the run is on the CPU.  The GPU
 * carries results passed by value only.  (A spill's partitions are small
 * and many: they stay on the CPU.)
 */
void
agg_run_start_gpu_jobs(AggScanState *ts)
{
	MemoryContext old;
	GroupSink **sinks;
	int			started = 0;

	if (!ts->planned.results_byval || device_choose_backend() != BACKEND_GPU)
		return;
	old = MemoryContextSwitchTo(ts->run.cxt);
	sinks = palloc0(sizeof(GroupSink *) * ts->planned.naggs);

	if (device_gpu_demanded() && ts->planned.naggs > service_job_slots())
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too few GPU job slots for this GpuTopKAgg scan"),
				 errdetail("Its %d aggregates need a job each; gputopk.service_jobs is %d.",
						   ts->planned.naggs, service_job_slots())));
	for (;;)
	{
		for (started = 0; started < ts->planned.naggs; started++)
			if ((sinks[started] = agg_sink_create(ts->planned.aggs[started].k)) == NULL)
				break;
		if (started == ts->planned.naggs || !device_gpu_demanded())
			break;
		while (started-- > 0)
			agg_sink_release(sinks[started]);
		pg_usleep(5000L);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(old);
	if (started < ts->planned.naggs)
	{
		while (started-- > 0)
			agg_sink_release(sinks[started]);
		return;
	}
	ts->run.sinks = sinks;
	agg_run_on_gpu(ts);
}

/* The run's work is the GPU's, and this process one of those using it. */
void
agg_run_on_gpu(AggScanState *ts)
{
	ts->run.backend = BACKEND_GPU;
	if (!ts->stats.gpu_counted)
	{
		scan_counters_count_process(&ts->scan.counters, true);
		ts->stats.gpu_counted = true;
	}
}

/*
 * Start a run, of the table's rows or the exchange's (depth 0) or of a
 * spill's: no groups yet, its rows offered on the CPU until
 * agg_run_start_gpu_jobs.
 */
void
agg_run_begin(AggScanState *ts, int depth)
{
	/*
	 * Blocks of at most a sixteenth of hash_mem (PostgreSQL caps the blocks
	 * of its hash aggregation at a sixteenth of work_mem), so that the
	 * memory counted is near the memory used when it reaches hash_mem.
	 */
	Size		max_block = Max(Min(pg_prevpower2_size_t(Max(ts->hash_mem / 16, 1)),
									ALLOCSET_DEFAULT_MAXSIZE),
								ALLOCSET_DEFAULT_INITSIZE);

	ts->run.cxt = AllocSetContextCreate(ts->css.ss.ps.state->es_query_cxt, "GpuTopKAgg groups",
										ALLOCSET_DEFAULT_MINSIZE, ALLOCSET_DEFAULT_INITSIZE,
										max_block);
	ts->run.groups = agg_groups_create(ts->run.cxt, 256, NULL);
	ts->run.single = MemoryContextAllocZero(ts->run.cxt, sizeof(GroupEntry));
	ts->run.depth = depth;

	ts->run.backend = BACKEND_CPU;
	ts->run.sinks = NULL;
	if (ts->planned.group_attno == 0)
		group_entry(ts, 0, true);
}

/*
 * The row into its group's states.  The first aggregate's floor, kept in
 * the group's entry, turns away most rows of a large group without reading
 * its state: with many groups, that read is a cache miss.
 */
static void
offer_row(AggScanState *ts, GroupEntry *entry)
{
	for (int i = 0; i < ts->planned.naggs; i++)
	{
		AggValue   *value = &ts->row[i];
		TopkAggState *state;

		if (!value->present || (i == 0 && entry->has_floor && value->key < entry->floor))
			continue;
		state = state_of(ts, entry, i);
		agg_trans_offer(state, value->key, value->result, value->result_isnull, ts->run.cxt);
		if (i == 0)
			entry->has_floor = agg_trans_floor(state, &entry->floor);
	}
}

/* The row into its group's states, or to the spill if the group is not in memory. */
static void
keep_row(AggScanState *ts, Datum group, bool group_isnull)
{
	GroupEntry *entry = group_entry(ts, group, group_isnull);

	if (entry)
		offer_row(ts, entry);
	else
		agg_records_spill_row(ts, group);
}

/*
 * The row to the GPU, aggregate by aggregate; what the GPU cannot carry (a
 * NULL result) is kept here, and a row that gives the GPU nothing still
 * makes its group exist.
 */
static void
ship_row(AggScanState *ts, Datum group)
{
	bool		shipped = false;
	bool		left = false;

	for (int i = 0; i < ts->planned.naggs; i++)
	{
		AggValue   *value = &ts->row[i];

		if (!value->present)
			continue;
		if (value->result_isnull)
		{
			left = true;
			continue;
		}
		agg_sink_add(ts->run.sinks[i], group, value->key, value->result);
		value->present = false; /* not kept here too */
		shipped = true;
	}
	if (left || !shipped)
		keep_row(ts, group, false);
}

/* The row (ts->row) to this run's groups, on its backend. */
void
agg_group_row(AggScanState *ts, Datum group, bool group_isnull)
{
	if (ts->run.sinks != NULL && !group_isnull)
		ship_row(ts, group);
	else
		keep_row(ts, group, group_isnull);
}

/*
 * The GPU's candidates of every aggregate into the groups' states; false,
 * offering none, where the GPU failed a job of the run (under auto).  A
 * group's candidates are adjacent, best first: they are offered worst
 * first, so that each one entering a state's heap stays where it lands.
 */
static bool
offer_candidates(AggScanState *ts)
{
	int			naggs = ts->planned.naggs;
	GroupedKey **all_keys = palloc(sizeof(GroupedKey *) * naggs);
	uint64	  **all_payloads = palloc(sizeof(uint64 *) * naggs);
	size_t	   *counts = palloc(sizeof(size_t) * naggs);
	bool		failed = false;

	for (int i = 0; i < naggs; i++)
	{
		agg_sink_result(ts->run.sinks[i], &all_keys[i], &all_payloads[i], &counts[i],
						&ts->scan.counters.gpu);
		failed |= agg_sink_failed(ts->run.sinks[i]);
	}
	for (int i = 0; i < naggs && !failed; i++)
	{
		GroupedKey *keys = all_keys[i];
		uint64	   *payloads = all_payloads[i];
		size_t		count = counts[i];
		size_t		end;

		ts->scan.counters.counts[COUNT_GPU_CANDIDATES] += count;
		for (size_t start = 0; start < count; start = end)
		{
			GroupEntry *entry = group_entry(ts, keys[start].group, false);
			TopkAggState *state;

			CHECK_FOR_INTERRUPTS();
			for (end = start + 1; end < count && keys[end].group == keys[start].group; end++)
				;
			if (entry == NULL)
			{
				agg_records_spill_candidates(ts, i, keys + start, payloads + start, end - start);
				continue;
			}
			state = state_of(ts, entry, i);
			agg_trans_reserve(state, (int32) Min(end - start, (size_t) PG_INT32_MAX), ts->run.cxt);
			for (size_t j = end; j-- > start;)
				agg_trans_offer(state, keys[j].key, (Datum) payloads[j], false, ts->run.cxt);
		}
	}
	for (int i = 0; i < naggs; i++)
	{
		pfree(all_keys[i]);
		pfree(all_payloads[i]);
	}
	pfree(all_keys);
	pfree(all_payloads);
	pfree(counts);
	return !failed;
}

void
agg_run_again_on_cpu(AggScanState *ts)
{
	int			depth = ts->run.depth;

	if (ts->run.spill)
		agg_spill_free(ts->run.spill);
	ts->run.spill = NULL;
	agg_run_free(ts);
	agg_run_begin(ts, depth);
}

bool
agg_run_take_gpu(AggScanState *ts)
{
	instr_time	start;
	instr_time	end;

	if (ts->run.sinks == NULL)
		return true;
	INSTR_TIME_SET_CURRENT(start);
	if (!offer_candidates(ts))
		return false;
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	ts->stats.merge_ms += INSTR_TIME_GET_MILLISEC(end);
	return true;
}

bool
agg_run_rows_job_failed(AggScanState *ts)
{
	if (ts->run.sinks == NULL)
		return false;
	for (int i = 0; i < ts->planned.naggs; i++)
		if (agg_sink_failed(ts->run.sinks[i]))
			return true;
	return false;
}

/*
 * End a run: the groups ready to return, and its spill, if any, to be
 * grouped after them.
 */
void
agg_run_end(AggScanState *ts)
{
	uint64		groups;
	Size		allocated;

	groups = ts->run.groups->members + (ts->run.single->states != NULL);
	ts->stats.ngroups += groups;
	if (ts->scan.shared || ts->planned.mode == AGG_MODE_PARTITIONED)
		ts->scan.counters.counts[COUNT_PARTIAL_GROUPS] += groups;
	allocated = MemoryContextMemAllocated(ts->run.cxt, true);
	ts->stats.memory_used = Max(ts->stats.memory_used, allocated);
	/* the groups' measured size, where the planner's estimate was larger, for the runs after */
	if (ts->run.groups->members > 0)
		ts->group_bytes = Min(ts->group_bytes, allocated / ts->run.groups->members);
	if (ts->run.spill)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->css.ss.ps.state->es_query_cxt);

		ts->scan.counters.counts[COUNT_ROWS_SPILLED] += ts->run.spill->rows_written;
		ts->scan.counters.counts[COUNT_BYTES_SPILLED] += ts->run.spill->bytes_written;
		ts->spills = lappend(ts->spills, ts->run.spill);
		ts->run.spill = NULL;
		MemoryContextSwitchTo(old);
	}
	scan_counters_publish(&ts->scan.counters);
	agg_groups_start_iterate(ts->run.groups, &ts->run.iter);
	ts->run.single_returned = false;
	ts->run.done = true;
}

/*
 * A group's tuple: its grouping value and each aggregate's array, or in a
 * partial aggregation its state serialized, or for Citus's
 * worker_partial_agg the text of that (bytea's output function); a state
 * is NULL where no value came, as a transition state that never started.
 */
static TupleTableSlot *
group_tuple(AggScanState *ts, GroupEntry *entry, bool group_isnull)
{
	TupleTableSlot *slot = ts->css.ss.ss_ScanTupleSlot;
	int			col = 0;

	ExecClearTuple(slot);
	if (ts->planned.group_attno)
	{
		slot->tts_values[col] = (Datum) entry->group;
		slot->tts_isnull[col++] = group_isnull;
	}
	/* the arrays are made in the per-tuple memory, reset for each tuple */
	for (int i = 0; i < ts->planned.naggs; i++, col++)
	{
		bool		state_text = ts->planned.aggs[i].state_text;

		if (ts->planned.mode != AGG_MODE_PARTIAL && !state_text)
			slot->tts_values[col] = agg_trans_result(entry->states[i], &slot->tts_isnull[col]);
		else if ((slot->tts_isnull[col] = entry->states[i] == NULL) == false)
		{
			bytea	   *state = agg_trans_serialize(entry->states[i]);

			slot->tts_values[col] = state_text ?
				DirectFunctionCall1(byteaout, PointerGetDatum(state)) : PointerGetDatum(state);
		}
	}
	return ExecStoreVirtualTuple(slot);
}

/*
 * The run's next group as a tuple, made in the per-tuple memory; NULL once
 * every group is out.
 */
TupleTableSlot *
agg_run_next_tuple(AggScanState *ts)
{
	ExprContext *econtext = ts->css.ss.ps.ps_ExprContext;
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	GroupEntry *entry;
	TupleTableSlot *slot = NULL;

	if ((entry = agg_groups_iterate(ts->run.groups, &ts->run.iter)) != NULL)
		slot = group_tuple(ts, entry, false);
	else if (!ts->run.single_returned && ts->run.single->states != NULL)
	{
		ts->run.single_returned = true;
		slot = group_tuple(ts, ts->run.single, ts->planned.group_attno != 0);
	}
	MemoryContextSwitchTo(old);
	return slot;
}

/* Free a run's groups (and the GPU's resources, the sinks' reset callbacks). */
void
agg_run_free(AggScanState *ts)
{
	if (ts->run.cxt)
		MemoryContextDelete(ts->run.cxt);
	ts->run.cxt = NULL;
	ts->run.groups = NULL;
	ts->run.sinks = NULL;
	ts->run.done = false;
}
