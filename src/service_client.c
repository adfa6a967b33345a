/*-------------------------------------------------------------------------
 *
 * service_client.c
 *	  A backend's GPU job in the GPU service: start it, fill and post
 *	  batches, take the answer, release it.
 *
 * Starting a job picks a GPU that is ready (a partitioned index's part's
 * job, the part's GPU; any other, the GPU with the fewest slots taken),
 * claims a free slot of that GPU with a compare-and-swap, describes the
 * job, marks it submitted and posts the slot's semaphore, which wakes the
 * thread for the slot in the GPU's process (service_wake_job); that thread
 * accepts it (or says why it cannot).  Batches
 * alternate between the slot's two buffers: posting one writes an order
 * and bumps the slot's posted count, and the other buffer may be filled
 * once the service's done count says the batch before has been copied to
 * the GPU.  The answer comes back through both buffers in chunks.
 *
 * Every wait is a latch wait of at most WAIT_POLL_MS followed by
 * CHECK_FOR_INTERRUPTS: cancel, termination and statement_timeout act
 * within a poll.  A job failed by the service (a CUDA error, the exit of
 * its GPU's process) raises an error; under gputopk.device = auto, a job
 * the service cannot start returns NULL instead, and the caller runs on
 * the CPU.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "service_shmem.h"
#include "service_client.h"


/* the longest latch wait before the service's health is looked at again */
#define WAIT_POLL_MS 100
/* the wait between looks for a free slot, when all are taken */
#define SLOT_POLL_MS 5

/* a backend's job: its slot, and where it stands */
struct ServiceJob
{
	int			index;			/* the slot's */
	ServiceSlot *slot;
	int			device;			/* the GPU whose process serves the slot */
	ServiceJobKind kind;
	uint32		generation;		/* of that process, which accepted it */
	uint32		posted;			/* orders posted */
	int			filling;		/* the buffer being filled */
	bool		released;
	bool		soft;			/* under auto: a failure is the caller's to handle */
	bool		failed;			/* failed, soft: its answers are empty */
	ServiceJobStats stats;
	MemoryContextCallback callback;
};

/* the longest wait for the service's first answer about GPUs */
#define PROBE_WAIT_MS 10000

static const char *const not_preloaded_reason =
"The GPU service runs only when gputopk is in shared_preload_libraries.";

bool
service_preloaded(void)
{
	return service != NULL;
}

bool
service_ready(void)
{
	return service != NULL && service_state() == SERVICE_READY;
}

/*
 * The service's state once it has looked for GPUs; a service that does not
 * answer within PROBE_WAIT_MS counts as absent.
 */
static ServiceState
probed_state(void)
{
	ServiceState state = service_state();

	for (int waited = 0; state == SERVICE_PROBING && waited < PROBE_WAIT_MS; waited += 100)
	{
		ConditionVariableTimedSleep(&service->state_changed, 100, PG_WAIT_EXTENSION);
		state = service_state();
	}
	ConditionVariableCancelSleep();
	return state == SERVICE_PROBING ? SERVICE_ABSENT : state;
}

bool
service_gpu_usable(void)
{
	return service != NULL && probed_state() != SERVICE_ABSENT;
}

/* Why the GPU is not usable, or not usable yet, as a sentence. */
const char *
service_unusable_reason(void)
{
	ServiceState state;

	if (service == NULL)
		return not_preloaded_reason;
	state = service_state();
	switch (state)
	{
		case SERVICE_ABSENT:
			return service->reason;
		case SERVICE_PROBING:
			return "The GPU service did not report its GPUs in time.";
		case SERVICE_READY:
			break;
		default:
			return psprintf("The GPU service is %s.", service_state_name(state));
	}
	return NULL;
}

int
service_devices(ServiceDeviceInfo **devices)
{
	int			ndevices = service == NULL ? 0 : service->ndevices;

	*devices = palloc0(sizeof(ServiceDeviceInfo) * Max(ndevices, 1));
	for (int d = 0; d < ndevices; d++)
		(*devices)[d] = service->devices[d].info;
	return ndevices;
}

int
service_gpu_count(void)
{
	return service == NULL ? 0 : service->ndevices;
}

int
service_job_slots(void)
{
	return service == NULL ? 0 : service->nslots;
}

Size
service_buffer_bytes(void)
{
	return service == NULL ? 0 : service->buffer_bytes;
}

double
service_gpu_cache_bytes(bool whole)
{
	int			gpus = whole || service == NULL ? 1 : service->ndevices;

	return (double) gputopk_gpu_cache_mb * 1024 * 1024 * Max(gpus, 1);
}

/* Whether a ready GPU reads shared_buffers in place. */
static bool
device_maps_buffers(int device)
{
	return service_device_state(device) == SERVICE_READY &&
		pg_atomic_read_u32(&service->devices[device].buffers_mapped) != 0;
}

/* Whether a ready GPU reads shared_buffers in place through a page cache. */
static bool
device_caches_pages(int device)
{
	return device_maps_buffers(device) &&
		pg_atomic_read_u64(&service->devices[device].page_cache_bytes) != 0;
}

bool
service_page_cache_on(void)
{
	for (int d = 0; service != NULL && d < service->ndevices; d++)
		if (device_caches_pages(d))
			return true;
	return false;
}

bool
service_page_cache_follows_wal(void)
{
	bool		any = false;

	for (int d = 0; service != NULL && d < service->ndevices; d++)
	{
		if (!device_caches_pages(d))
			continue;
		if (pg_atomic_read_u32(&service->devices[d].wal_followed) == 0)
			return false;
		any = true;
	}
	return any;
}

bool
service_buffers_mapped(void)
{
	for (int d = 0; service != NULL && d < service->ndevices; d++)
		if (device_maps_buffers(d))
			return true;
	return false;
}

static SlotState
job_state(ServiceJob *job)
{
	return (SlotState) pg_atomic_read_u32(&job->slot->state);
}

/* Sleep on the latch for at most ms; interrupts are served on waking. */
static void
sleep_on_latch(long ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Release the job: the slot goes back to the service, which stops at its
 * next order and frees it.  Runs on the reset of the job's memory context
 * too (errors included): must not throw.
 */
static void
release_job(void *arg)
{
	ServiceJob *job = (ServiceJob *) arg;
	ServiceSlot *slot = job->slot;

	if (job->released)
		return;
	job->released = true;
	for (;;)
	{
		uint32		state = pg_atomic_read_u32(&slot->state);

		if (state == SLOT_CLAIMED)
		{
			/* never submitted: no thread looks at it */
			service_free_slot(slot);
			return;
		}
		if (state == SLOT_FREE || state == SLOT_RELEASED)
			return;
		if (pg_atomic_compare_exchange_u32(&slot->state, &state, SLOT_RELEASED))
			break;
	}
	service_wake_job(slot);
}

void
service_job_release(ServiceJob *job)
{
	release_job(job);
}

/* what a batch of a job carries, row by row */
typedef enum JobBatchUnit
{
	BATCH_KEYS,					/* keys of the spec's key_width */
	BATCH_GROUPED_ROWS,			/* a GroupedKey and a payload word each */
	BATCH_INDEX_PAGES,			/* a column index's pages, copied */
	BATCH_HEAP_PAGES			/* a table's pages, read in place */
} JobBatchUnit;

/* what a backend knows of each kind of job */
typedef struct JobKindInfo
{
	const char *action;			/* what it does on the GPU: "could not %s" */
	JobBatchUnit unit;
	bool		reads_buffers;	/* it reads shared_buffers where the GPU maps them */
	bool		index_part;		/* a partitioned index's part: on its GPU only */
} JobKindInfo;

static const JobKindInfo job_kinds[] = {
	[SERVICE_JOB_TOPK] = {
		.action = "select the top k on the GPU",
		.unit = BATCH_KEYS,
	},
	[SERVICE_JOB_GROUPED] = {
		.action = "select each group's top k on the GPU",
		.unit = BATCH_GROUPED_ROWS,
	},
	[SERVICE_JOB_INDEX] = {
		.action = "select candidates from a column index on the GPU",
		.unit = BATCH_INDEX_PAGES,
		.index_part = true,
	},
	[SERVICE_JOB_PAGES] = {
		.action = "read table pages on the GPU",
		.unit = BATCH_HEAP_PAGES,
		.reads_buffers = true,
	},
	[SERVICE_JOB_PAGE_GROUPS] = {
		.action = "group table pages on the GPU",
		.unit = BATCH_HEAP_PAGES,
		.reads_buffers = true,
	},
	[SERVICE_JOB_INDEX_GROUPS] = {
		.action = "group a column index's entries on the GPU",
		.unit = BATCH_INDEX_PAGES,
	},
};

static const JobKindInfo *
kind_info(ServiceJobKind kind)
{
	Assert(kind >= 0 && kind < lengthof(job_kinds));
	return &job_kinds[kind];
}

/* The GPU a job of spec must go to (a partitioned index's part's), or -1 for any. */
static int
required_device(const ServiceJobSpec *spec)
{
	return kind_info(spec->kind)->index_part && spec->index_parts > 1 ? spec->index_part : -1;
}

/* Whether a job of spec may go to a GPU: ready, and the job's if it must have one. */
static bool
device_takes(int device, const ServiceJobSpec *spec)
{
	if (kind_info(spec->kind)->reads_buffers)
		return device_maps_buffers(device);
	if (required_device(spec) >= 0 && device != required_device(spec))
		return false;
	return service_device_state(device) == SERVICE_READY;
}

/*
 * A free slot claimed for a job of spec, or -1: of the GPUs that take it,
 * the one with the fewest slots taken first, so that jobs spread over the
 * GPUs.
 */
static int
claim_slot(const ServiceJobSpec *spec)
{
	int			ndevices = service->ndevices;
	int			taken[SERVICE_MAX_DEVICES] = {0};
	bool		tried[SERVICE_MAX_DEVICES] = {0};

	for (int i = 0; i < service->nslots; i++)
		if (pg_atomic_read_u32(&service->slots[i].state) != SLOT_FREE)
			taken[service_slot_device(i)]++;
	for (;;)
	{
		int			best = -1;

		for (int d = 0; d < ndevices; d++)
			if (!tried[d] && device_takes(d, spec) && (best < 0 || taken[d] < taken[best]))
				best = d;
		if (best < 0)
			return -1;
		tried[best] = true;
		for (int i = 0; i < service->nslots; i++)
		{
			uint32		expected = SLOT_FREE;

			if (service_slot_device(i) == best &&
				pg_atomic_compare_exchange_u32(&service->slots[i].state, &expected,
											   SLOT_CLAIMED))
				return i;
		}
	}
}

/* The error of a job the service failed. */
static void
report_failure(ServiceJob *job)
{
	ServiceSlot *slot = job->slot;
	GpuStatus	status;
	char		message[SERVICE_MESSAGE_BYTES];

	pg_read_barrier();
	status = (GpuStatus) slot->status;
	strlcpy(message, slot->message, sizeof(message));
	ereport(ERROR,
			(errcode(status == GPU_OUT_OF_MEMORY ? ERRCODE_OUT_OF_MEMORY : ERRCODE_SYSTEM_ERROR),
			 errmsg("could not %s", kind_info(job->kind)->action),
			 errdetail("%s", message),
			 status == GPU_DEVICE_LOST ?
			 errhint("The GPU's process in the GPU service restarts with a fresh context; later queries can use the GPU again.") : 0));
}

/*
 * Whether the GPU's process that accepted the job is gone (its exit fails
 * its jobs; this also catches an exit that could not).
 */
static bool
service_lost(ServiceJob *job)
{
	ServiceDevice *dev = &service->devices[job->device];

	return dev->pid == 0 || pg_atomic_read_u32(&dev->generation) != job->generation;
}

/*
 * A soft job's failure: from now on it takes no orders and its answers are
 * empty, and the server log says why its caller goes on without the GPU.
 */
static void
fail_softly(ServiceJob *job, const char *why)
{
	job->failed = true;
	ereport(LOG,
			(errmsg("gputopk could not %s; the scan does that work on the CPU",
					kind_info(job->kind)->action),
			 errdetail("%s", why)));
}

/*
 * Wait until the service has done the job's first `orders` orders.  If it
 * failed the job or went away: throw, or for a soft job mark it failed
 * and return false.
 */
static bool
wait_done(ServiceJob *job, uint32 orders)
{
	instr_time	start;
	static const char *const exited = "The GPU's process in the GPU service exited while it ran the job.";

	if (job->failed)
		return false;
	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		if (pg_atomic_read_u32(&job->slot->done) >= orders)
			break;
		if (job_state(job) == SLOT_FAILED)
		{
			if (!job->soft)
				report_failure(job);
			pg_read_barrier();
			fail_softly(job, job->slot->message);
			return false;
		}
		if (service_lost(job))
		{
			if (!job->soft)
				ereport(ERROR,
						(errcode(ERRCODE_SYSTEM_ERROR),
						 errmsg("could not %s", kind_info(job->kind)->action),
						 errdetail("%s", exited)));
			fail_softly(job, exited);
			return false;
		}
		sleep_on_latch(WAIT_POLL_MS);
	}
	pg_read_barrier();
	job->stats.wait_ms += service_ms_since(start);
	return true;
}

bool
service_job_failed(ServiceJob *job)
{
	return job->failed;
}

/*
 * Wait until the service is ready for a job of spec (under auto, without
 * waiting): a part's job, until its GPU is; false and the reason when it
 * is not, or (demand) when it has no GPU.
 */
static bool
await_ready(const ServiceJobSpec *spec, bool demand, const char **why)
{
	int			device = required_device(spec);

	for (;;)
	{
		ServiceState state = device >= 0 ? service_device_state(device) : service_state();

		if (state == SERVICE_READY || state == SERVICE_ABSENT || !demand)
			ConditionVariableCancelSleep();
		if (state == SERVICE_READY)
			return true;
		if (state == SERVICE_ABSENT)
		{
			*why = service->reason;
			return false;
		}
		if (!demand)
		{
			*why = device >= 0 ?
				psprintf("The GPU service's GPU %d is %s.", service->devices[device].info.ordinal,
						 service_state_name(state)) :
				psprintf("The GPU service is %s.", service_state_name(state));
			return false;
		}
		ConditionVariableTimedSleep(&service->state_changed, WAIT_POLL_MS, PG_WAIT_EXTENSION);
	}
}

static void
debug_fallback(const char *why)
{
	ereport(DEBUG1,
			(errmsg_internal("gputopk is using the CPU backend for this scan"),
			 errdetail_internal("%s", why)));
}

ServiceJob *
service_job_start(const ServiceJobSpec *spec, bool demand, bool wait_for_slot)
{
	ServiceJob *job;
	ServiceSlot *slot;
	const char *why = "The GPU service restarted before it took the job.";
	int			index;
	instr_time	submitted;

	Assert(service != NULL);
	if (!await_ready(spec, demand, &why))
	{
		debug_fallback(why);
		return NULL;
	}
	while ((index = claim_slot(spec)) < 0)
	{
		if (!wait_for_slot)
		{
			debug_fallback("Every GPU job slot of the GPU service is taken (gputopk.service_jobs).");
			return NULL;
		}
		sleep_on_latch(SLOT_POLL_MS);
	}

	/* released with the current memory context from here on */
	job = palloc0(sizeof(ServiceJob));
	job->index = index;
	job->slot = slot = &service->slots[index];
	job->device = service_slot_device(index);
	job->kind = spec->kind;
	job->soft = !demand;
	job->callback.func = release_job;
	job->callback.arg = job;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &job->callback);

	slot->owner_procno = compat_proc_number(MyProc);
	slot->owner_pid = MyProcPid;
	slot->spec = *spec;
	INSTR_TIME_SET_CURRENT(submitted);
	slot->submitted_at = submitted;
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, SLOT_SUBMITTED);
	service_wake_job(slot);

	for (;;)
	{
		SlotState	state = job_state(job);

		if (state == SLOT_RUNNING)
			break;
		if (state == SLOT_FAILED)
		{
			if (demand)
				report_failure(job);
			pg_read_barrier();
			debug_fallback(slot->message);
			release_job(job);
			return NULL;
		}
		/* its GPU gone before it took the job: under auto, do not wait for a restart */
		if (service_device_state(job->device) == SERVICE_ABSENT ||
			(!demand && service_device_state(job->device) != SERVICE_READY))
		{
			release_job(job);
			debug_fallback(why);
			return NULL;
		}
		sleep_on_latch(WAIT_POLL_MS);
	}
	pg_read_barrier();
	job->generation = slot->generation;
	job->stats.device = service->devices[job->device].info.ordinal;
	job->stats.gpus = 1u << job->stats.device;
	job->stats.index_epoch = slot->index_epoch;
	job->stats.queue_ms = service_ms_since(submitted);
	return job;
}

int
service_job_filling(ServiceJob *job)
{
	return job->filling;
}

char *
service_job_buffer(ServiceJob *job)
{
	return service_buffer(job->index, job->filling);
}

/* the bytes of one row of a batch */
static size_t
row_bytes(ServiceJob *job)
{
	switch (kind_info(job->kind)->unit)
	{
		case BATCH_KEYS:
			return job->slot->spec.key_width;
		case BATCH_GROUPED_ROWS:
			return sizeof(GroupedKey) + sizeof(uint64);
		case BATCH_INDEX_PAGES:
		case BATCH_HEAP_PAGES:
			break;
	}
	return BLCKSZ;
}

size_t
service_job_batch_rows(ServiceJob *job)
{
	switch (kind_info(job->kind)->unit)
	{
		case BATCH_INDEX_PAGES:
			return SERVICE_INDEX_PAGES(service->buffer_bytes);
		case BATCH_HEAP_PAGES:
			return SERVICE_HEAP_PAGES(service->buffer_bytes);
		case BATCH_KEYS:
		case BATCH_GROUPED_ROWS:
			break;
	}
	return service->buffer_bytes / row_bytes(job);
}

uint64 *
service_job_payloads(ServiceJob *job, char *buffer)
{
	return (uint64 *) (buffer + service_job_batch_rows(job) * sizeof(GroupedKey));
}

/* Post an order; the caller has made sure the slot has room for it. */
static void
post_order(ServiceJob *job, SlotCommand command, uint64 rows)
{
	SlotOrder  *order = &job->slot->orders[job->posted % 2];

	if (job->failed)
		return;
	order->command = command;
	order->buffer = job->filling;
	order->rows = rows;
	pg_write_barrier();
	job->posted = pg_atomic_add_fetch_u32(&job->slot->posted, 1);
	service_wake_job(job->slot);
}

/* Post the filled buffer's rows of row_bytes each; the buffer to fill next, once it may be. */
static char *
post_buffer(ServiceJob *job, SlotCommand command, size_t *rows, size_t bytes)
{
	if (*rows > 0)
	{
		post_order(job, command, *rows);
		job->stats.bytes_posted += *rows * bytes;
		*rows = 0;
		job->filling = 1 - job->filling;
		/* the batch before this one used the buffer to fill next */
		wait_done(job, job->posted - 1);
	}
	return service_job_buffer(job);
}

char *
service_job_post(ServiceJob *job, size_t *rows)
{
	return post_buffer(job, SLOT_BATCH, rows, row_bytes(job));
}

char *
service_job_post_records(ServiceJob *job, size_t *rows)
{
	return post_buffer(job, SLOT_RECORDS, rows, job->slot->spec.record_bytes);
}

const char *
service_job_returned(ServiceJob *job, int buffer, size_t *rows)
{
	*rows = job->failed ? 0 : job->slot->returned[buffer];
	return service_buffer(job->index, buffer);
}

void
service_job_wait_batches(ServiceJob *job)
{
	wait_done(job, job->posted);
}

/* Post a command that computes the answer, once every batch is on the GPU. */
static void
post_answer_command(ServiceJob *job, SlotCommand command)
{
	if (wait_done(job, job->posted))
		post_order(job, command, 0);
}

/*
 * The answer's first chunk, once computed: its rows in *rows, the total
 * in the return value.
 */
static uint64
first_chunk(ServiceJob *job, uint64 *rows)
{
	ServiceSlot *slot = job->slot;

	*rows = 0;
	if (!wait_done(job, job->posted))
		return 0;
	job->stats.copy_ms = slot->copy_ms;
	job->stats.kernel_ms = slot->kernel_ms;
	job->stats.plan = slot->plan;
	job->stats.rows_read = slot->rows_read;
	job->stats.rows_keyed = slot->rows_keyed;
	job->stats.pages_cached = slot->pages_cached;
	job->stats.rows_settled = slot->rows_settled;
	job->stats.rows_undecided = slot->rows_undecided;
	job->stats.pages_undecided = slot->pages_undecided;
	job->stats.pages_unheld = slot->pages_unheld;
	job->stats.pages_unpinned = slot->pages_unpinned;
	job->stats.pages_wal_vouched = slot->pages_wal_vouched;
	job->stats.pages_wal_decided = slot->pages_wal_decided;
	job->stats.groups = slot->groups;
	*rows = slot->chunk_rows;
	return slot->answer_rows;
}

static uint64
next_chunk(ServiceJob *job)
{
	post_order(job, SLOT_NEXT_CHUNK, 0);
	return wait_done(job, job->posted) ? job->slot->chunk_rows : 0;
}

/*
 * Whether the answer goes on after the got rows of total taken so far: its
 * next chunk's rows in *rows; false at its end, or where the job failed.
 */
static bool
more_chunks(ServiceJob *job, uint64 got, uint64 total, uint64 *rows)
{
	if (got >= total)
		return false;
	*rows = next_chunk(job);
	return !job->failed;
}

/* The top-k items the command posted computes, chunk by chunk. */
static void
topk_items(ServiceJob *job, TopkResult *result)
{
	const TopkItem *chunk = (const TopkItem *) service_buffer(job->index, 0);
	uint64		rows;
	uint64		total = first_chunk(job, &rows);
	uint64		got = 0;

	result->count = total;
	result->items = palloc_extended(sizeof(TopkItem) * Max(total, 1), MCXT_ALLOC_HUGE);
	do
	{
		memcpy(result->items + got, chunk, rows * sizeof(TopkItem));
		got += rows;
	} while (more_chunks(job, got, total, &rows));
	if (job->failed)
		result->count = 0;
}

void
service_job_topk_answer(ServiceJob *job, TopkResult *result)
{
	post_answer_command(job, SLOT_RESULT);
	topk_items(job, result);
}

/*
 * A request into the slot's two buffers (they lie one after the other),
 * once the service is done with them: its header, then arrays of uint64.
 */
static void
write_request(ServiceJob *job, const void *header, Size header_bytes,
			  const uint64 *values, Size nvalues, const uint64 *more, Size nmore)
{
	char	   *buffer = service_buffer(job->index, 0);

	wait_done(job, job->posted);
	memcpy(buffer, header, header_bytes);
	buffer += header_bytes;
	if (nvalues > 0)
		memcpy(buffer, values, sizeof(uint64) * nvalues);
	buffer += sizeof(uint64) * nvalues;
	if (nmore > 0)
		memcpy(buffer, more, sizeof(uint64) * nmore);
}

bool
service_request_fits(Size bytes)
{
	return service != NULL && bytes <= 2 * service->buffer_bytes;
}

void
service_job_pages_query(ServiceJob *job, const ServicePagesRequest *request,
						const uint64 *set_values)
{
	Assert(service_request_fits(sizeof(*request) + sizeof(uint64) * request->nset_values));
	write_request(job, request, sizeof(*request), set_values, request->nset_values, NULL, 0);
	post_order(job, SLOT_PAGES_QUERY, 0);
	wait_done(job, job->posted);
}

bool
service_job_index_round(ServiceJob *job, const ServiceIndexRequest *request,
						const uint64 *set_values, const uint64 *tied)
{
	if (!service_request_fits(sizeof(*request) +
							  sizeof(uint64) * (request->nset_values + request->ntied)))
		return false;
	write_request(job, request, sizeof(*request), set_values, request->nset_values,
				  tied, request->ntied);
	post_answer_command(job, SLOT_INDEX_SELECT);
	return true;
}

void
service_job_index_candidates(ServiceJob *job, TopkResult *result, GpuIndexCounts *counts)
{
	topk_items(job, result);
	*counts = job->slot->index_counts;
}

bool
service_job_index_groups(ServiceJob *job, const ServiceIndexGroupsRequest *request,
						 const uint64 *set_values, const uint64 *vouched, GpuIndexCounts *counts)
{
	Size		words = ((Size) request->heap_blocks + 63) / 64;

	memset(counts, 0, sizeof(*counts));
	if (!service_request_fits(sizeof(*request) + sizeof(uint64) * (request->nset_values + words)))
		return false;
	write_request(job, request, sizeof(*request), set_values, request->nset_values,
				  vouched, words);
	post_order(job, SLOT_INDEX_GROUPS, 0);
	if (wait_done(job, job->posted))
		*counts = job->slot->index_counts;
	return true;
}

void
service_job_grouped_answer(ServiceJob *job, GroupedKey **keys, uint64 **payloads,
						   size_t *count)
{
	const char *chunk = service_buffer(job->index, 0);
	uint64		cap = 2 * service->buffer_bytes / (sizeof(GroupedKey) + sizeof(uint64));
	uint64		rows;
	uint64		total;
	uint64		got = 0;

	post_answer_command(job, SLOT_RESULT);
	total = first_chunk(job, &rows);

	*count = total;
	*keys = palloc_extended(sizeof(GroupedKey) * Max(total, 1), MCXT_ALLOC_HUGE);
	*payloads = palloc_extended(sizeof(uint64) * Max(total, 1), MCXT_ALLOC_HUGE);
	do
	{
		memcpy(*keys + got, chunk, rows * sizeof(GroupedKey));
		memcpy(*payloads + got, chunk + cap * sizeof(GroupedKey), rows * sizeof(uint64));
		got += rows;
	} while (more_chunks(job, got, total, &rows));
	if (job->failed)
		*count = 0;
}

void
service_job_groups_answer(ServiceJob *job, char **records, size_t *count)
{
	const char *chunk = service_buffer(job->index, 0);
	size_t		bytes = job->slot->spec.record_bytes;
	uint64		rows;
	uint64		total;
	uint64		got = 0;

	post_answer_command(job, SLOT_RESULT);
	total = first_chunk(job, &rows);

	*count = total;
	*records = palloc_extended(bytes * Max(total, 1), MCXT_ALLOC_HUGE);
	do
	{
		memcpy(*records + got * bytes, chunk, rows * bytes);
		got += rows;
	} while (more_chunks(job, got, total, &rows));
	if (job->failed)
		*count = 0;
}

const ServiceJobStats *
service_job_stats(ServiceJob *job)
{
	return &job->stats;
}
