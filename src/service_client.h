/*-------------------------------------------------------------------------
 *
 * service_client.h
 *	  A backend's GPU job in the GPU service: start it, fill and post
 *	  batches, take the answer, release it.
 *
 * Everything waits on the backend's latch, so that cancel, termination and
 * statement_timeout act at once; a job whose memory context goes (errors
 * included) is released, and the service drops it at its next order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_CLIENT_H
#define SERVICE_CLIENT_H

#include "gpu_grouped.h"
#include "service.h"

typedef struct ServiceJob
{
	int			index;			/* the slot's */
	ServiceSlot *slot;
	ServiceJobKind kind;
	uint32		generation;		/* of the service that accepted it */
	uint32		posted;			/* orders posted */
	int			filling;		/* the buffer being filled */
	bool		released;

	/* what the job took, once its answer is back */
	int			device;			/* the GPU's CUDA ordinal */
	uint64		bytes_posted;	/* in batches */
	double		queue_ms;		/* from submitting to being accepted */
	double		wait_ms;		/* waiting for the service after that */
	double		copy_ms;		/* the GPU's copies and kernels */
	double		kernel_ms;
	GpuTopkPlan plan;			/* a top-k's last selection */
	uint64		index_epoch;	/* an index job's: its copy current as of, 0 none */
	uint64		rows_read;		/* a pages job's: tuples the GPU read, */
	uint64		rows_keyed;		/* and rows that passed the filter, */
	uint64		pages_cached;	/* and pages read from the GPU's page cache, */
	uint64		pages_unpinned; /* of them those not pinned */
	MemoryContextCallback callback;
} ServiceJob;

/*
 * Start a job.  demand: wait for the service to be ready, and throw if the
 * job fails to start; NULL (DEBUG1 says why) when the service has no GPU,
 * and without demand whenever the GPU is not at hand, for the caller to use
 * the CPU.  wait_for_slot: wait
 * for a free slot rather than return NULL; a caller that needs several
 * slots at once takes them without waiting, so that two such callers
 * cannot each hold some and wait for the other's.
 */
extern ServiceJob *service_job_start(const ServiceJobSpec *spec, bool demand,
									 bool wait_for_slot);

/* The buffer to fill, and how many rows it holds. */
extern char *service_job_buffer(ServiceJob *job);
extern size_t service_job_batch_rows(ServiceJob *job);

/* A grouped batch's payloads, after its keys in the buffer. */
extern uint64 *service_job_payloads(ServiceJob *job, char *buffer);

/*
 * Hand the filled buffer's *rows rows (if any) to the GPU, and set *rows to
 * 0; returns the buffer to fill next, once it may be filled.
 */
extern char *service_job_post(ServiceJob *job, size_t *rows);

/*
 * What the service wrote back into the last batch posted in a buffer once
 * done with it (a pages job's blocks it did not read), at the buffer's
 * start: its rows, and the buffer.  For the buffer to fill, once
 * service_job_post has returned it; for the other, once
 * service_job_wait_batches has returned.
 */
extern const char *service_job_returned(ServiceJob *job, int buffer, size_t *rows);

/* Wait until the service is done with every batch posted. */
extern void service_job_wait_batches(ServiceJob *job);

/* The answer, in memory of the current context; then release the job. */
extern void service_job_topk_answer(ServiceJob *job, TopkResult *result);
extern void service_job_grouped_answer(ServiceJob *job, GroupedKey **keys,
									   uint64 **payloads, size_t *count);

/*
 * An index job's round: the slot's buffers, once the service is done with
 * them, for its ServiceIndexRequest; then the round's candidates, in memory
 * of the current context, and the entries the GPU read.
 */
extern char *service_job_request_buffer(ServiceJob *job, size_t *bytes);
extern void service_job_index_round(ServiceJob *job, TopkResult *result, uint64 *scanned);

/*
 * A pages job's query: its ServicePagesRequest written into the buffers
 * (service_job_request_buffer), then sent before the first batch.
 */
extern void service_job_pages_query(ServiceJob *job);

extern void service_job_release(ServiceJob *job);

#endif							/* SERVICE_CLIENT_H */
