/*-------------------------------------------------------------------------
 *
 * service_client.h
 *	  The GPU service's front door for backends: its state and GPUs, and a
 *	  backend's GPU jobs (start one, fill and post batches, take the answer,
 *	  release it).
 *
 * Only service_* files see the service's shared memory (service_shmem.h); the
 * rest of src/ asks through these functions and service_protocol.h's types.  Everything waits on the
 * backend's latch, so that cancel, termination and statement_timeout act
 * at once; a job whose memory context goes (errors included) is released,
 * and the service drops it at its next order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_CLIENT_H
#define SERVICE_CLIENT_H

#include "gpu_grouped.h"
#include "service_protocol.h"

/* A backend's job; its slot and buffers are service_client.c's. */
typedef struct ServiceJob ServiceJob;

/* what a job took, once its answer is back */
typedef struct ServiceJobStats
{
	int			device;			/* the GPU's CUDA ordinal */
	uint32		gpus;			/* every GPU it used, a bit per CUDA ordinal */
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
	uint64		pages_unpinned; /* of them those not pinned, */
	uint64		pages_wal_vouched;	/* of those, the ones the WAL vouched for, */
	uint64		pages_wal_decided;	/* of those, the ones not all-visible */
	uint64		rows_settled;	/* tuples whose headers settled visibility on the GPU */
	uint64		rows_undecided; /* rows that passed left to the backend */
	uint64		pages_undecided;	/* a page groups job's pages sent back undecided, */
	uint64		pages_unheld;	/* and its pages with text groups it cannot hold */
	uint64		groups;			/* a page groups job's: the groups found */
} ServiceJobStats;

/*
 * The service as a backend sees it.  service_preloaded: whether there is
 * one (the library in shared_preload_libraries).  service_gpu_usable:
 * whether it has, or will soon have, a GPU, waiting for its first answer
 * about GPUs; service_unusable_reason says why not (NULL when ready).
 */
extern bool service_preloaded(void);
extern bool service_ready(void);
extern bool service_gpu_usable(void);
extern const char *service_unusable_reason(void);

/* its GPUs, in memory of the current context; the count */
extern int	service_devices(ServiceDeviceInfo **devices);

/*
 * Its GPUs, its job slots, each slot's staging buffers' bytes, and whether
 * a GPU reads shared_buffers in place (registered with CUDA).
 */
extern int	service_gpu_count(void);
extern int	service_job_slots(void);
extern Size service_buffer_bytes(void);
extern bool service_buffers_mapped(void);

/* Whether a request of this many bytes fits a job slot's buffers. */
extern bool service_request_fits(Size bytes);

/*
 * The device memory for a column index's copy: gputopk.gpu_cache_size, of
 * one GPU for a whole copy, else of every GPU (a copy partitioned over
 * them).  Whether a GPU of the service has a page cache.
 */
extern double service_gpu_cache_bytes(bool whole);
extern bool service_page_cache_on(void);
/* whether every GPU's page cache follows the WAL (service_wal.c), and one does */
extern bool service_page_cache_follows_wal(void);

/*
 * Start a job.  demand: wait for the service to be ready, and throw if the
 * job fails to start; NULL (DEBUG1 says why) when the service has no GPU,
 * and without demand whenever the GPU is not at hand, for the caller to use
 * the CPU.  A job started without demand is soft: if the GPU or the service
 * fails it later, no call below throws for that; the job takes no more
 * orders, its answers are empty, service_job_failed says so (the server
 * log says why), and the caller does the job's work on the CPU.  wait_for_slot: wait
 * for a free slot rather than return NULL; a caller that needs several
 * slots at once takes them without waiting, so that two such callers
 * cannot each hold some and wait for the other's.
 */
extern ServiceJob *service_job_start(const ServiceJobSpec *spec, bool demand,
									 bool wait_for_slot);

/* The buffer to fill (0 or 1, and its memory), and how many rows it holds. */
extern int	service_job_filling(ServiceJob *job);
extern char *service_job_buffer(ServiceJob *job);
extern size_t service_job_batch_rows(ServiceJob *job);

/* A grouped batch's payloads, after its keys in the buffer. */
extern uint64 *service_job_payloads(ServiceJob *job, char *buffer);

/*
 * Hand the filled buffer's *rows rows (if any) to the GPU, and set *rows to
 * 0; returns the buffer to fill next, once it may be filled.
 */
extern char *service_job_post(ServiceJob *job, size_t *rows);

/* The same for a page or index groups job's buffer of *rows groups' records. */
extern char *service_job_post_records(ServiceJob *job, size_t *rows);

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
/* A page or index groups job's: the chosen groups' records (spec.record_bytes each). */
extern void service_job_groups_answer(ServiceJob *job, char **records, size_t *count);

/*
 * An index job's round: its request, with request->nset_values set values
 * and request->ntied tied positions after it, posted; false, with nothing
 * sent, where the request does not fit the slot's buffers.  Then the
 * round's candidates, in memory of the current context, and what the GPU
 * read (a round may be posted to several jobs before their candidates are
 * taken, so that their GPUs select at once).
 */
extern bool service_job_index_round(ServiceJob *job, const ServiceIndexRequest *request,
									const uint64 *set_values, const uint64 *tied);
extern void service_job_index_candidates(ServiceJob *job, TopkResult *result,
										 GpuIndexCounts *counts);

/*
 * An index groups job's entries grouped, for its request with
 * request->nset_values set values and the bitmap of request->heap_blocks
 * vouched blocks after it, once every changed page is sent; what the GPU
 * read in *counts.  The groups' records and the answer follow, as for a
 * page groups job.  False, with nothing sent, where the request does not
 * fit the slot's buffers.
 */
extern bool service_job_index_groups(ServiceJob *job, const ServiceIndexGroupsRequest *request,
									 const uint64 *set_values, const uint64 *vouched,
									 GpuIndexCounts *counts);

/*
 * A pages job's query, with request->nset_values set values after it, sent
 * before the first batch; it must fit the slot's buffers
 * (service_request_fits).
 */
extern void service_job_pages_query(ServiceJob *job, const ServicePagesRequest *request,
									const uint64 *set_values);

/* Whether a soft job failed: its answers were empty. */
extern bool service_job_failed(ServiceJob *job);

/* What the job took; complete once its answer is back. */
extern const ServiceJobStats *service_job_stats(ServiceJob *job);

extern void service_job_release(ServiceJob *job);

#endif							/* SERVICE_CLIENT_H */
