/*-------------------------------------------------------------------------
 *
 * service_job_kinds.h
 *	  What each kind of GPU job does in a job thread of the GPU service
 *	  (service_job_kinds.c): a table of operations, an entry per kind, that
 *	  the thread machinery (service_jobs.c) calls for a job's orders.
 *
 * A new kind of job adds an entry to the table (and its kind to
 * service_protocol.h, its description to the backends' table in
 * service_client.c), not a branch to the threads.  Like the threads, the
 * operations never call PostgreSQL's functions: they report failures as a
 * GpuStatus, with a message in the slot where the engine gives none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_JOB_KINDS_H
#define SERVICE_JOB_KINDS_H

#include "gpu_grouped.h"
#include "gpu_groups.h"
#include "gpu_heap.h"
#include "gpu_topk.h"
#include "service_index.h"
#include "service_shmem.h"

/* a job being run: its slot and what the engine holds for it */
typedef struct JobRun
{
	int			index;			/* its slot's number (for its buffers) */
	ServiceSlot *slot;
	GpuTopk    *topk;
	GpuGroupedTopk *grouped;
	ResidentIndex *resident;	/* an index job's copy of its index (or part) */
	GpuHeapReader *reader;		/* pages jobs', kept between jobs */
	GpuHeapCounts pages;		/* a pages job's */
	uint64		wal_lsn;		/* and its query's wal_lsn, until its first batch */
	GpuGroups  *groups;			/* a groups job's groups */
	const char *group_records;	/* and the records of those chosen */
	TopkResult	answer;			/* a top-k's answer */
	const GroupedKey *group_keys;	/* a grouped top-k's */
	const uint64 *group_payloads;
	uint64		answer_rows;
	uint64		answer_sent;	/* rows handed out in chunks so far */
} JobRun;

/*
 * A kind's operations; NULL where the kind has none (a command it is sent
 * that it has none for fails the job).
 */
typedef struct JobKindOps
{
	/* at the job's acceptance, what it needs here: its index copy, mapped buffers */
	GpuStatus	(*ready) (JobRun *run);
	/* then its engine object, from the pool or made (tried again once it is drained) */
	GpuStatus	(*take) (JobRun *run);
	/* SLOT_PAGES_QUERY: the query of the batches that follow, from the buffers */
	GpuStatus	(*query) (JobRun *run);
	/* SLOT_BATCH: a batch of rows or pages, in the order's buffer */
	GpuStatus	(*push) (JobRun *run, const SlotOrder *order);
	/* SLOT_RECORDS: groups' records, in the order's buffer */
	GpuStatus	(*records) (JobRun *run, const SlotOrder *order);
	/* SLOT_INDEX_GROUPS: the index's entries grouped anew, for what follows */
	GpuStatus	(*group) (JobRun *run);
	/* SLOT_RESULT, or an index's SLOT_INDEX_SELECT: the answer, in answer_rows */
	GpuStatus	(*answer) (JobRun *run);
	/* the answer's next rows from answer_sent, at most left, into to; how many */
	uint64		(*chunk) (JobRun *run, char *to, uint64 left);
} JobKindOps;

extern const JobKindOps *service_job_kind_ops(ServiceJobKind kind);

/* The job's engine objects back to the pool (reusable) or destroyed; its index let go. */
extern void service_job_kinds_put_back(JobRun *run, bool reusable);

#endif							/* SERVICE_JOB_KINDS_H */
