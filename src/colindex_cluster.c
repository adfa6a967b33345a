/*-------------------------------------------------------------------------
 *
 * colindex_cluster.c
 *	  The column index's storage parameter layout, and the entries of an
 *	  index built with layout = clustered, put in the order of their values
 *	  before the build writes them, so that each data page holds entries
 *	  close in every column and its summary is narrow.
 *
 * A page's summary bounds what its entries can hold (kernels/page_bounds.h).
 * In the table's order a page holds rows of every kind, and the bound of a
 * ranking function over several columns (the sum of each column's greatest
 * value) is near the top for almost every page, so that no page is skipped.
 * Grouped by their values, a page's entries span a small box of the
 * columns' space, its bound is close to its best entry's key, and a scan
 * that reads the pages in the order of their bounds stops after the few
 * boxes at the top of the ranking, whatever its weights or columns (the
 * early-stopping paper's preordering, ../shared/papers).
 *
 * The order is a Z-order curve over the columns' ranks.  Each entry's
 * columns are read as the summary reads them (register keys, which compare
 * as the values do), each is mapped to its rank among a sample of the
 * column's values, quantized to as many bits as the columns share in 64,
 * and the bits are interleaved, the most significant first, the index's
 * first column first.  Ranks rather than values spread a skewed column over
 * its bits; NULL takes the top cell (it ranks above every value, as in
 * descending order by default).  The sample is taken as the entries come
 * (a reservoir of SAMPLE_ROWS, its generator seeded with a constant, so
 * that the same table gives the same index), which is why the entries are
 * spooled first (a tuplestore), then keyed and sorted (a tuplesort): both
 * within maintenance_work_mem, spilling to temporary files beyond it.
 *
 * Any order of the entries is a correct index: the order only decides how
 * narrow the summaries are.  Later inserts fill free slots and new pages,
 * and VACUUM's compaction moves entries, each widening the summaries of the
 * pages they land on; REINDEX puts them in order again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/tupdesc.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "common/pg_prng.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"

#include "colindex.h"
#include "colindex_cluster.h"
#include "scan_filter_program.h"

/* entries sampled for each column's ranks */
#define SAMPLE_ROWS 4096

/* the most bits of a column in an entry's key */
#define MAX_COLUMN_BITS 16

/* the spool's and the sort's attributes: the key, the TID, then the columns */
#define KEY_ATTNO 1
#define TID_ATTNO 2
#define FIRST_COLUMN_ATTNO 3

/* layout: the order of the entries when the index is built */
typedef enum LayoutOption
{
	LAYOUT_TABLE,				/* the order the build reads the rows in */
	LAYOUT_CLUSTERED			/* the order of their values */
} LayoutOption;

typedef struct ColIndexOptions
{
	int32		vl_len_;		/* varlena header */
	int			layout;			/* a LayoutOption */
} ColIndexOptions;

static relopt_kind layout_relopt_kind;

static relopt_enum_elt_def layout_values[] = {
	{"table", LAYOUT_TABLE},
	{"clustered", LAYOUT_CLUSTERED},
	{NULL}
};

static const relopt_parse_elt layout_parse[] = {
	{"layout", RELOPT_TYPE_ENUM, offsetof(ColIndexOptions, layout)}
};

struct ColIndexCluster
{
	const ColIndexLayout *layout;
	TupleDesc	desc;
	TupleTableSlot *slot;		/* read from the spool and the sort */
	TupleTableSlot *keyed;		/* an entry with its key, into the sort */
	Tuplestorestate *spool;
	Tuplesortstate *sort;
	/* the reservoir: SAMPLE_ROWS entries' register keys, NULL as PG_UINT64_MAX */
	uint64	   *sample[INDEX_MAX_KEYS];
	int			nsampled;
	double		seen;
	pg_prng_state prng;
	int			bits;			/* of each column in a key */
};

/* Define the storage parameter (at _PG_init). */
void
colindex_cluster_define_option(void)
{
	layout_relopt_kind = add_reloption_kind();
	add_enum_reloption(layout_relopt_kind, "layout",
					   "Order of a gputopk index's entries when it is built",
					   layout_values, LAYOUT_TABLE,
					   "Valid values are \"table\" and \"clustered\".",
					   ShareUpdateExclusiveLock);
}

/* The index's amoptions. */
bytea *
colindex_cluster_options(Datum reloptions, bool validate)
{
	return (bytea *) build_reloptions(reloptions, validate, layout_relopt_kind,
									  sizeof(ColIndexOptions), layout_parse,
									  lengthof(layout_parse));
}

/* Whether the index is built, or was, with layout = clustered. */
bool
colindex_cluster_enabled(Relation index)
{
	return index->rd_options != NULL &&
		((ColIndexOptions *) index->rd_options)->layout == LAYOUT_CLUSTERED;
}

static int
compare_keys(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * A stored value's register key, as the page's summary keeps it; a vector
 * column's is 0, so that it leaves the entries' order to the others.
 */
static uint64
register_key(const ColIndexLayout *layout, int column, Datum value)
{
	union
	{
		char		bytes[8];
		int64		align;
	}			stored;

	if (layout->vectors[column])
		return 0;
	store_att_byval(stored.bytes, value, layout->widths[column]);
	return filter_value_key(scan_filter_value_kind(layout->types[column]), stored.bytes, false);
}

ColIndexCluster *
colindex_cluster_begin(const ColIndexLayout *layout)
{
	ColIndexCluster *cluster = palloc0(sizeof(ColIndexCluster));
	int			half_work_mem = Max(maintenance_work_mem / 2, 64);

	cluster->layout = layout;
	cluster->desc = CreateTemplateTupleDesc(FIRST_COLUMN_ATTNO - 1 + layout->ncolumns);
	TupleDescInitEntry(cluster->desc, KEY_ATTNO, "key", INT8OID, -1, 0);
	TupleDescInitEntry(cluster->desc, TID_ATTNO, "tid", INT8OID, -1, 0);
	for (int i = 0; i < layout->ncolumns; i++)
		TupleDescInitEntry(cluster->desc, FIRST_COLUMN_ATTNO + i, NULL,
						   colindex_type_is_text(layout->types[i]) ? INT4OID : layout->types[i],
						   -1, 0);
	cluster->slot = MakeSingleTupleTableSlot(cluster->desc, &TTSOpsMinimalTuple);
	cluster->keyed = MakeSingleTupleTableSlot(cluster->desc, &TTSOpsVirtual);
	cluster->spool = tuplestore_begin_heap(false, false, half_work_mem);
	for (int i = 0; i < layout->ncolumns; i++)
		cluster->sample[i] = palloc(sizeof(uint64) * SAMPLE_ROWS);
	pg_prng_seed(&cluster->prng, UINT64CONST(0x6770757470706b));
	cluster->bits = Min(64 / layout->ncolumns, MAX_COLUMN_BITS);
	return cluster;
}

/* Keep an entry in the sample's row, or not (a reservoir). */
static void
sample_entry(ColIndexCluster *cluster, const Datum *stored, const bool *isnull)
{
	int			row;

	cluster->seen++;
	if (cluster->nsampled < SAMPLE_ROWS)
		row = cluster->nsampled++;
	else
	{
		uint64		pick = pg_prng_uint64_range(&cluster->prng, 0, (uint64) cluster->seen - 1);

		if (pick >= SAMPLE_ROWS)
			return;
		row = (int) pick;
	}
	for (int i = 0; i < cluster->layout->ncolumns; i++)
		cluster->sample[i][row] = isnull[i] ? PG_UINT64_MAX :
			register_key(cluster->layout, i, stored[i]);
}

void
colindex_cluster_add(ColIndexCluster *cluster, ItemPointer tid, const Datum *stored,
					 const bool *isnull)
{
	Datum		values[FIRST_COLUMN_ATTNO - 1 + INDEX_MAX_KEYS];
	bool		nulls[FIRST_COLUMN_ATTNO - 1 + INDEX_MAX_KEYS];
	int			ncolumns = cluster->layout->ncolumns;

	values[KEY_ATTNO - 1] = Int64GetDatum(0);
	nulls[KEY_ATTNO - 1] = false;
	values[TID_ATTNO - 1] = Int64GetDatum(((int64) ItemPointerGetBlockNumber(tid) << 16) |
										  ItemPointerGetOffsetNumber(tid));
	nulls[TID_ATTNO - 1] = false;
	memcpy(values + FIRST_COLUMN_ATTNO - 1, stored, sizeof(Datum) * ncolumns);
	memcpy(nulls + FIRST_COLUMN_ATTNO - 1, isnull, sizeof(bool) * ncolumns);
	tuplestore_putvalues(cluster->spool, cluster->desc, values, nulls);
	sample_entry(cluster, stored, isnull);
}

/* A column's cell: its rank among the sample's keys, in cluster->bits bits. */
static uint64
column_cell(const ColIndexCluster *cluster, int column, uint64 key)
{
	const uint64 *sample = cluster->sample[column];
	int			lo = 0;
	int			hi = cluster->nsampled;

	if (key == PG_UINT64_MAX)	/* NULL */
		return (UINT64CONST(1) << cluster->bits) - 1;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (sample[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ((uint64) lo << cluster->bits) / (cluster->nsampled + 1);
}

/* An entry's place on the Z-order curve, as an int8 that sorts as the place does. */
static int64
entry_key(const ColIndexCluster *cluster, const Datum *stored, const bool *isnull)
{
	int			ncolumns = cluster->layout->ncolumns;
	uint64		cells[INDEX_MAX_KEYS];
	uint64		key = 0;

	for (int i = 0; i < ncolumns; i++)
		cells[i] = column_cell(cluster, i, isnull[i] ? PG_UINT64_MAX :
							   register_key(cluster->layout, i, stored[i]));
	for (int bit = cluster->bits - 1; bit >= 0; bit--)
		for (int i = 0; i < ncolumns; i++)
			key = (key << 1) | ((cells[i] >> bit) & 1);
	/* the unused low bits stay 0; flipping the sign bit keeps the order */
	return (int64) (key ^ (UINT64CONST(1) << 63));
}

void
colindex_cluster_sort(ColIndexCluster *cluster)
{
	AttrNumber	key_attno = KEY_ATTNO;
	Oid			less = Int8LessOperator;
	Oid			collation = InvalidOid;
	bool		nulls_first = false;
	int			ncolumns = cluster->layout->ncolumns;
	int			natts = cluster->desc->natts;

	for (int i = 0; i < ncolumns; i++)
		qsort(cluster->sample[i], cluster->nsampled, sizeof(uint64), compare_keys);
	cluster->sort = tuplesort_begin_heap(cluster->desc, 1, &key_attno, &less, &collation,
										 &nulls_first, Max(maintenance_work_mem / 2, 64),
										 NULL, TUPLESORT_NONE);
	while (tuplestore_gettupleslot(cluster->spool, true, false, cluster->slot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(cluster->slot);
		ExecClearTuple(cluster->keyed);
		memcpy(cluster->keyed->tts_values, cluster->slot->tts_values, sizeof(Datum) * natts);
		memcpy(cluster->keyed->tts_isnull, cluster->slot->tts_isnull, sizeof(bool) * natts);
		cluster->keyed->tts_values[KEY_ATTNO - 1] =
			Int64GetDatum(entry_key(cluster, cluster->slot->tts_values + FIRST_COLUMN_ATTNO - 1,
									cluster->slot->tts_isnull + FIRST_COLUMN_ATTNO - 1));
		ExecStoreVirtualTuple(cluster->keyed);
		tuplesort_puttupleslot(cluster->sort, cluster->keyed);
	}
	tuplestore_end(cluster->spool);
	cluster->spool = NULL;
	tuplesort_performsort(cluster->sort);
}

bool
colindex_cluster_next(ColIndexCluster *cluster, ItemPointer tid, Datum *stored, bool *isnull)
{
	int64		packed;

	if (!tuplesort_gettupleslot(cluster->sort, true, false, cluster->slot, NULL))
		return false;
	slot_getallattrs(cluster->slot);
	packed = DatumGetInt64(cluster->slot->tts_values[TID_ATTNO - 1]);
	ItemPointerSet(tid, (BlockNumber) (packed >> 16), (OffsetNumber) (packed & 0xFFFF));
	memcpy(stored, cluster->slot->tts_values + FIRST_COLUMN_ATTNO - 1,
		   sizeof(Datum) * cluster->layout->ncolumns);
	memcpy(isnull, cluster->slot->tts_isnull + FIRST_COLUMN_ATTNO - 1,
		   sizeof(bool) * cluster->layout->ncolumns);
	return true;
}

void
colindex_cluster_end(ColIndexCluster *cluster)
{
	tuplesort_end(cluster->sort);
	ExecDropSingleTupleTableSlot(cluster->slot);
	ExecDropSingleTupleTableSlot(cluster->keyed);
}
