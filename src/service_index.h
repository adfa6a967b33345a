/*-------------------------------------------------------------------------
 *
 * service_index.h
 *	  The GPU service's copies of column indexes in device memory
 *	  (service_index.c), for its job threads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_INDEX_H
#define SERVICE_INDEX_H

#include "service_shmem.h"

typedef struct ResidentIndex ResidentIndex;

/* a job thread's room for the candidates of a partitioned copy, grown as needed */
typedef struct IndexCandidates
{
	TopkItem   *items;
	size_t		capacity;
} IndexCandidates;

/*
 * The copy of an index job's index, found or made, held until released,
 * with room for the index's size at the job's start: a whole copy on
 * *device (the GPU with the fewest running jobs) or elsewhere, or one
 * partitioned over every GPU; *device is set to the GPU of its
 * first part.  *epoch says as of when it is current (0: it holds nothing
 * yet).  Failures leave their reason in message (SERVICE_MESSAGE_BYTES).
 */
extern GpuStatus service_index_acquire(const ServiceJobSpec *spec, int *device,
									   ResidentIndex **out, uint64 *epoch, char *message);
extern void service_index_release(ResidentIndex *r);

/* The GPUs of a copy's parts, in order, into devices; their count. */
extern int	service_index_devices(const ResidentIndex *r, int *devices);

/* Store a batch's pages (SERVICE_INDEX_PAGES), from a slot's buffer. */
extern GpuStatus service_index_store(ResidentIndex *r, const char *buffer, uint64 npages,
									 char *message);

/*
 * A round's candidates for the ServiceIndexRequest in request_buffer, by
 * the engine objects of the copy's parts (objects[p] on part p's GPU);
 * a partitioned copy's parts selected at once and merged in merged, which
 * the answer then points to.  A failure may leave its message in message.
 */
extern GpuStatus service_index_select(ResidentIndex *r, const char *request_buffer,
									  GpuTopk *const *objects, IndexCandidates *merged,
									  TopkResult *answer, GpuIndexCounts *counts, double *ms,
									  char *message);

/*
 * The entries grouped for the ServiceIndexGroupsRequest in request_buffer
 * into a new table of groups in *groups (one there before is destroyed).
 */
extern GpuStatus service_index_group(ResidentIndex *r, const char *request_buffer,
									 GpuGroups **groups, GpuIndexCounts *counts, uint64 *passed,
									 double *ms);

#endif							/* SERVICE_INDEX_H */
