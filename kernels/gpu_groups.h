/*
 * gpu_groups.h
 *	  GpuTopKGroups's groups in device memory: a hash table that heap page
 *	  kernels (gpu_heap.h) add rows to and that takes other groups' records,
 *	  and the best groups by one ranking value chosen from it.
 *
 * A group is known by one or two grouping values passed by value, as
 * PostgreSQL's Datums hold them (sign-extended), and which of them are
 * NULL; a text group read in heap pages (a column of kind VALUE_TEXT), by
 * its bytes, at most GPU_GROUPS_TEXT_BYTES, zero-padded in the two values,
 * first byte highest.  Its cells are those of src/groups_aggs.c, byte for byte, for the
 * aggregates whose cells add up in any order: count(*), count(col), sum of
 * int2/int4 (a 64-bit sum), sum or avg of the integers (a 128-bit sum),
 * and min/max of the integer types, date and timestamps (the value; the
 * key is written when a group goes out).  A record is the group's values,
 * its NULL flags and its cells, as src/groups_scan.h describes records, so
 * the backend's groups and the GPU's pass between them unchanged.
 *
 * The table is sized before each batch for every row the batch could
 * add as a new group, at most half full, so no insert finds it full.
 *
 * Like the rest of kernels/: no PostgreSQL headers, GpuStatus results.  A
 * table is used by one thread at a time, with its device current.
 */
#ifndef GPU_GROUPS_H
#define GPU_GROUPS_H

#include "gpu_api.h"
#include "gpu_program.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* the most aggregates a query has on the GPU; a query beyond stays on the CPU */
#define GPU_GROUPS_MAX_AGGS 16

/* a record's header: the grouping values, then the NULL flags, 8 bytes each */
#define GPU_GROUPS_HEADER_BYTES 24

/* the longest text group the GPU holds, in bytes: its two grouping values' */
#define GPU_GROUPS_TEXT_BYTES 16

typedef enum GpuGroupsAggKind
{
	GPU_GROUPS_COUNT_STAR,		/* cell: int64 rows */
	GPU_GROUPS_COUNT,			/* cell: int64 rows with a value */
	GPU_GROUPS_SUM,				/* cell: int64 sum, int64 rows */
	GPU_GROUPS_WIDE_SUM,		/* cell: 128-bit sum (low word first), int64 rows */
	GPU_GROUPS_MIN,				/* cell: key, value, int64 rows */
	GPU_GROUPS_MAX
} GpuGroupsAggKind;

typedef struct GpuGroupsAgg
{
	int32_t		kind;			/* a GpuGroupsAggKind */
	int32_t		offset;			/* of its cell among a group's cells */
	int32_t		key_type;		/* min and max: the column's KeyType */
	GpuColumn	column;			/* the column it reads (not count(*)) */
} GpuGroupsAgg;

typedef struct GpuGroupsSpec
{
	int32_t		ncolumns;		/* grouping columns: 1 or 2 */
	GpuColumn	columns[2];
	int32_t		naggs;
	GpuGroupsAgg aggs[GPU_GROUPS_MAX_AGGS];
	int32_t		cell_bytes;		/* a group's cells: a multiple of 8 */
	/* the groups chosen: by aggregate rank, or (rank < 0) grouping column -1 - rank */
	int32_t		rank;
	bool		desc;
	bool		nulls_first;
	uint64_t	keep;			/* the best keep groups, and every group tied with the last */
} GpuGroupsSpec;

typedef struct GpuGroups GpuGroups;

/* An empty table for about expected groups, on the current device. */
extern GpuStatus gpu_groups_create(const GpuGroupsSpec *spec, uint64_t expected,
								   GpuGroups **out);
/* NULL is fine; waits for queued work. */
extern void gpu_groups_destroy(GpuGroups *g);

/* The table made large enough for rows more new groups. */
extern GpuStatus gpu_groups_reserve(GpuGroups *g, uint64_t rows);

/* n records in host memory (GPU_GROUPS_HEADER_BYTES + cell_bytes each) added. */
extern GpuStatus gpu_groups_merge(GpuGroups *g, const char *records, size_t n);

/*
 * The groups chosen by the spec's rank, as records in host memory owned
 * by g until its next use; their count.  The table's groups in *groups.
 */
extern GpuStatus gpu_groups_choose(GpuGroups *g, const char **records, size_t *count,
								   uint64_t *groups, double *kernel_ms);

#ifdef __cplusplus
}
#endif

#endif							/* GPU_GROUPS_H */
