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

/*
 * The copy of an index job's index (or of its part, spec->index_part of
 * spec->index_parts), found or made on the GPU, held until released, with
 * room for the index's size at the job's start.  *epoch says as of when
 * it is current (0: it holds nothing yet).  Failures leave their reason
 * in message (SERVICE_MESSAGE_BYTES).
 */
extern GpuStatus service_index_acquire(const ServiceJobSpec *spec, ResidentIndex **out,
									   uint64 *epoch, char *message);
extern void service_index_release(ResidentIndex *r);

/*
 * Store a batch's pages (SERVICE_INDEX_PAGES), from a slot's buffer: those
 * of the copy's part, under the index's block numbers.
 */
extern GpuStatus service_index_store(ResidentIndex *r, const char *buffer, uint64 npages,
									 char *message);

/*
 * A round's candidates for the ServiceIndexRequest in request_buffer,
 * selected by topk; a part's at their positions in the index.
 */
extern GpuStatus service_index_select(ResidentIndex *r, const char *request_buffer,
									  GpuTopk *topk, TopkResult *answer, GpuIndexCounts *counts,
									  double *ms);

/*
 * The entries grouped for the ServiceIndexGroupsRequest in request_buffer
 * into a new table of groups in *groups (one there before is destroyed).
 */
extern GpuStatus service_index_group(ResidentIndex *r, const char *request_buffer,
									 GpuGroups **groups, GpuIndexCounts *counts, uint64 *passed,
									 double *ms);

#endif							/* SERVICE_INDEX_H */
