/*-------------------------------------------------------------------------
 *
 * groups_scan.h
 *	  The GpuTopKGroups custom scan: what the planner (groups_path.c)
 *	  hands the executor (groups_exec.c).
 *
 * The plan's custom_private is the fields below in order, then the WHERE
 * clause's expressions.  Its custom_scan_tlist is the grouping column and
 * then the aggregates; the scan returns one tuple of those per group kept.
 * In the rows form, custom_private ends with those expressions instead, and
 * the scan returns the table's rows (agg_path_plan_scan).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GROUPS_SCAN_H
#define GROUPS_SCAN_H

typedef enum GroupsField
{
	GROUPS_FIELD_RELID,			/* IntList of one: the table's range table index
								 * as planned (the WHERE clause's Vars') */
	GROUPS_FIELD_RANK,			/* IntList: what the groups are chosen by (an
								 * aggregate's place among the aggregates, or -1
								 * minus a grouping column's place), whether
								 * descending, whether NULLs first */
	GROUPS_FIELD_KEEP,			/* Const of int8: the groups to keep, LIMIT plus
								 * OFFSET, before those tied with the last */
	GROUPS_FIELD_PARTITIONS,	/* IntList: the partitioned form's partitions, or
								 * 0 for the form in one process; whether that
								 * one is the GPU form (groups_gpu.h); the OID
								 * of the column index it reads there
								 * (groups_index.h), or 0; and whether it is the
								 * rows form, which returns the table's rows of
								 * the groups kept */
	GROUPS_FIELD_ESTIMATE,		/* Const of float8: the groups the planner
								 * expects */
	GROUPS_FIELDS
} GroupsField;

#define GROUPS_SCAN_NAME "GpuTopKGroups"

/* grouping columns at most */
#define GROUPS_MAX_COLUMNS 2

/*
 * A group's record, as the partitioned form's processes exchange it: its
 * grouping value, a second column's (or 0), a word of NULL flags, then its
 * aggregates' cells (groups_table.c).
 */
#define GROUPS_RECORD_HEADER_BYTES (3 * sizeof(uint64))

#endif							/* GROUPS_SCAN_H */
