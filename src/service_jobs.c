/*-------------------------------------------------------------------------
 *
 * service_jobs.c
 *	  A GPU's job threads in its process of the GPU service: one per job
 *	  slot of the GPU, each running its slot's jobs on the top-k engine,
 *	  and the engine objects they reuse.
 *
 * A thread sleeps on its slot's semaphore, which the slot's backend posts
 * at each change it makes, until the slot holds a submitted job; it takes
 * an engine object of the job's kind from the GPU's pool (or makes one)
 * and accepts the job.
 * Then it carries out the backend's orders one at a time: a batch is
 * pushed to the engine and waited for until its copy is over, so that the
 * backend may refill the buffer as soon as the batch counts as done; the
 * answer goes back through both buffers in chunks.  When the backend
 * releases the slot, or dies, the thread stops at the next order (a batch
 * boundary), puts the object back and frees the slot.
 *
 * Threads never call PostgreSQL's functions, which are not thread-safe:
 * no elog, no palloc.  They read and write the slots in shared memory with
 * atomics and barriers, set latches (for another process's latch, a store
 * and a kill()), sleep on their slot's semaphore, and call the engine,
 * which reports failures as a GpuStatus and keeps each thread's last CUDA
 * message apart.  A sticky CUDA error leaves the process's CUDA context
 * unusable: the thread says so (service_jobs_fatal), and the main thread
 * exits, to be started again (service_unit.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "utils/memutils.h"

#include "gpu_api.h"
#include "gpu_grouped.h"
#include "gpu_topk.h"
#include "service_index.h"
#include "service_shmem.h"
#include "service_jobs.h"

/* how long a thread sleeps before it looks at its slot again anyway */
#define THREAD_POLL_MS 100

/* how long the main thread waits for the threads to stop when it exits */
#define STOP_WAIT_MS 10000

/*
 * Engine objects made on the GPU, idle between jobs: as many of each kind
 * as jobs can run at once, so that a steady load makes none anew (making
 * one allocates its device memory).  They keep their memory; out of
 * memory, a new job's thread gives the idle ones up.
 */
typedef struct DevicePool
{
	pthread_mutex_t lock;
	GpuTopk   **topk;
	int			ntopk;
	GpuGroupedTopk **grouped;
	int			ngrouped;
	GpuPageCache *page_cache;	/* copies of heap pages, or NULL */
} DevicePool;

/* a thread and the job it runs */
typedef struct JobThread
{
	int			index;			/* its slot's */
	ServiceSlot *slot;
	pthread_t	thread;
	bool		started;

	/* the running job */
	bool		held;			/* counted in the GPU's jobs_running */
	GpuTopk    *topk;
	GpuGroupedTopk *grouped;
	ResidentIndex *resident;	/* an index job's copy of its index (or part) */
	GpuHeapReader *reader;		/* pages jobs', kept */
	GpuHeapCounts pages;		/* a pages job's */
	GpuGroups  *groups;			/* a page groups job's groups */
	const char *group_records;	/* and the records of those chosen */
	bool		faults_checked; /* injected faults looked at, at the first batch */
	bool		answered;		/* the engine gave its answer: the object is reusable */
	TopkResult	answer;			/* a top-k's answer */
	const GroupedKey *group_keys;	/* a grouped top-k's */
	const uint64 *group_payloads;
	uint64		answer_rows;
	uint64		answer_sent;	/* rows handed out in chunks so far */
} JobThread;

static DevicePool pool;
static JobThread *threads;
static int	nthreads;
static pg_atomic_uint32 threads_ready; /* threads that have set up their CUDA state */
static pg_atomic_uint32 threads_parked; /* threads stopped for good */

/* the stop request */
static pg_atomic_uint32 stopping;

/* a fault that ends the service */
static pthread_mutex_t fatal_lock = PTHREAD_MUTEX_INITIALIZER;
static bool fatal;
static char fatal_message[SERVICE_MESSAGE_BYTES];

/* where the GPU's kernels read shared_buffers, once registered (pages jobs) */
static char *buffers_on_device;

/*
 * A fault that ends the process: the main thread, woken, exits (and is
 * started again), and no thread takes another job meanwhile.
 */
static void
set_fatal(const char *message)
{
	pthread_mutex_lock(&fatal_lock);
	if (!fatal)
		strlcpy(fatal_message, message, sizeof(fatal_message));
	fatal = true;
	pthread_mutex_unlock(&fatal_lock);
	pg_atomic_write_u32(&service->devices[service_serving_device].state, SERVICE_RESTARTING);
	service_wake_device(service_serving_device);
}

bool
service_jobs_fatal(char *message, size_t size)
{
	bool		result;

	pthread_mutex_lock(&fatal_lock);
	result = fatal;
	if (result)
		strlcpy(message, fatal_message, size);
	pthread_mutex_unlock(&fatal_lock);
	return result;
}

static bool
should_stop(void)
{
	return pg_atomic_read_u32(&stopping) != 0;
}

/*
 * Sleep until the slot's semaphore is posted (service_wake_job), or
 * THREAD_POLL_MS.  A post while the thread was busy makes it look at its
 * slot once more for nothing.
 */
static void
wait_for_slot(JobThread *jt)
{
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += THREAD_POLL_MS * 1000000L;
	if (deadline.tv_nsec >= 1000000000L)
	{
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(&jt->slot->wake, &deadline) < 0 && errno == EINTR)
		;
}

static SlotState
slot_state(ServiceSlot *slot)
{
	return (SlotState) pg_atomic_read_u32(&slot->state);
}

/* ---------------------------------------------------------- engine objects */

/* Every idle object destroyed, to give its memory back. */
static void
pool_drain(void)
{
	pthread_mutex_lock(&pool.lock);
	while (pool.ntopk > 0)
		gpu_topk_destroy(pool.topk[--pool.ntopk]);
	while (pool.ngrouped > 0)
		gpu_grouped_destroy(pool.grouped[--pool.ngrouped]);
	pthread_mutex_unlock(&pool.lock);
}

/* An idle object of a kind from the pool, or NULL. */
static void *
pool_take(ServiceJobKind kind)
{
	void	   *object = NULL;

	pthread_mutex_lock(&pool.lock);
	if (kind != SERVICE_JOB_GROUPED && pool.ntopk > 0)
		object = pool.topk[--pool.ntopk];
	else if (kind == SERVICE_JOB_GROUPED && pool.ngrouped > 0)
		object = pool.grouped[--pool.ngrouped];
	pthread_mutex_unlock(&pool.lock);
	return object;
}

/* A top-k object for the job: a pooled one reset, or a new one. */
static GpuStatus
take_topk(const ServiceJobSpec *spec, GpuTopk **out)
{
	GpuTopk    *t = pool_take(SERVICE_JOB_TOPK);
	GpuStatus	status = t != NULL ? gpu_topk_reset(t, spec->key_width, spec->k, spec->mode) :
		gpu_topk_create(spec->key_width, spec->k, spec->mode, &t);

	if (status != GPU_OK)
	{
		gpu_topk_destroy(t);
		return status;
	}
	*out = t;
	gpu_topk_set_algorithm(t, spec->algorithm);
	return gpu_topk_set_stream_batch(t, service->buffer_bytes / spec->key_width);
}

/* rows a grouped batch carries: a GroupedKey and a payload word each */
static size_t
grouped_batch_rows(void)
{
	return service->buffer_bytes / (sizeof(GroupedKey) + sizeof(uint64));
}

/* A grouped top-k object for the job: a pooled one reset, or a new one. */
static GpuStatus
take_grouped(JobThread *jt, const ServiceJobSpec *spec)
{
	GpuGroupedTopk *g = pool_take(SERVICE_JOB_GROUPED);
	GpuStatus	status = g != NULL ? gpu_grouped_reset(g, spec->k) :
		gpu_grouped_create(spec->k, grouped_batch_rows(), &g);

	if (status != GPU_OK)
	{
		gpu_grouped_destroy(g);
		return status;
	}
	jt->grouped = g;
	return GPU_OK;
}

/*
 * The engine object of the job.  Out of device memory, the idle objects
 * are given up and the object tried once more.  An injected fault may say
 * there is no memory.
 */
static GpuStatus
take_object(JobThread *jt)
{
	const ServiceJobSpec *spec = &jt->slot->spec;
	GpuStatus	status = GPU_OUT_OF_MEMORY;
	uint32		injected = SERVICE_FAULT_OUT_OF_MEMORY;

	if (pg_atomic_compare_exchange_u32(&service->fault, &injected, SERVICE_FAULT_NONE))
	{
		strlcpy(jt->slot->message,
				"Allocating device memory failed: the fault was injected by gputopk_service_inject_fault.",
				sizeof(jt->slot->message));
		return GPU_OUT_OF_MEMORY;
	}
	for (int attempt = 0; attempt < 2 && status == GPU_OUT_OF_MEMORY; attempt++)
	{
		if (attempt > 0)
			pool_drain();
		status = spec->kind == SERVICE_JOB_GROUPED ? take_grouped(jt, spec) :
			spec->kind == SERVICE_JOB_PAGE_GROUPS ||
			spec->kind == SERVICE_JOB_INDEX_GROUPS ? GPU_OK :
			jt->topk != NULL ? GPU_OK : take_topk(spec, &jt->topk);
	}
	if (status != GPU_OK)
		strlcpy(jt->slot->message, gpu_last_error(), sizeof(jt->slot->message));
	return status;
}

/* Objects back to the pool; destroyed when not reusable (which waits for their work). */
static void
pool_put(GpuTopk *topk, GpuGroupedTopk *grouped, bool reusable)
{
	pthread_mutex_lock(&pool.lock);
	if (topk && reusable && pool.ntopk < service->nslots)
		pool.topk[pool.ntopk++] = topk;
	else if (topk)
		gpu_topk_destroy(topk);
	if (grouped && reusable && pool.ngrouped < service->nslots)
		pool.grouped[pool.ngrouped++] = grouped;
	else if (grouped)
		gpu_grouped_destroy(grouped);
	pthread_mutex_unlock(&pool.lock);
}

/* The job's object back to the pool, if the job ended well; its index let go. */
static void
put_object(JobThread *jt, bool reusable)
{
	pool_put(jt->topk, jt->grouped, reusable);
	jt->topk = NULL;
	jt->grouped = NULL;
	/* a job's groups are its own: their table is sized for its query */
	gpu_groups_destroy(jt->groups);
	jt->groups = NULL;
	service_index_release(jt->resident);
	jt->resident = NULL;
}

/* ------------------------------------------------------------------ orders */

/* Count the job among the GPU's running jobs, once. */
static void
hold_device(JobThread *jt)
{
	if (jt->held)
		return;
	pg_atomic_fetch_add_u32(&service->devices[service_serving_device].jobs_running, 1);
	jt->held = true;
}

static void
let_go_device(JobThread *jt)
{
	if (jt->held)
		pg_atomic_fetch_sub_u32(&service->devices[service_serving_device].jobs_running, 1);
	jt->held = false;
}

/*
 * Faults injected for the job's first batch: a sticky error, when the
 * fault names this GPU, or the process's exit.
 */
static GpuStatus
inject_faults(JobThread *jt)
{
	uint32		device_error = SERVICE_FAULT_DEVICE_ERROR;
	uint32		exit_fault = SERVICE_FAULT_EXIT;

	if (jt->faults_checked)
		return GPU_OK;
	jt->faults_checked = true;
	if (pg_atomic_read_u32(&service->fault_device) ==
		(uint32) service->devices[service_serving_device].info.ordinal &&
		pg_atomic_compare_exchange_u32(&service->fault, &device_error, SERVICE_FAULT_NONE))
		return gpu_inject_device_fault();
	if (pg_atomic_compare_exchange_u32(&service->fault, &exit_fault, SERVICE_FAULT_NONE))
	{
		strlcpy(jt->slot->message,
				"The GPU's process in the GPU service exited: the fault was injected by gputopk_service_inject_fault.",
				sizeof(jt->slot->message));
		set_fatal(jt->slot->message);
		return GPU_FAILED;
	}
	return GPU_OK;
}

/*
 * A pages job's query, from the slot's buffers, for the batches that
 * follow; a page groups job's table of groups made.
 */
static GpuStatus
set_pages_query(JobThread *jt)
{
	const ServicePagesRequest *request =
		(const ServicePagesRequest *) service_buffer(jt->index, 0);

	if (jt->slot->spec.kind == SERVICE_JOB_PAGE_GROUPS && jt->groups == NULL)
		GPU_TRY(gpu_groups_create(&request->groups, request->expected_groups, &jt->groups));
	if (jt->reader == NULL)
		GPU_TRY(gpu_heap_reader_create(&jt->reader));
	return gpu_heap_set_query(jt->reader, &request->query,
							  (const uint64 *) (request + 1), request->nset_values);
}

static GpuStatus
push_batch(JobThread *jt, const SlotOrder *order)
{
	char	   *buffer = service_buffer(jt->index, order->buffer);
	ServiceDevice *dev = &service->devices[service_serving_device];

	GPU_TRY(inject_faults(jt));
	if (order->command == SLOT_RECORDS)
	{
		GPU_TRY(gpu_groups_merge(jt->groups, buffer, order->rows));
		pg_atomic_fetch_add_u64(&dev->bytes_received,
								order->rows * jt->slot->spec.record_bytes);
	}
	else if (jt->slot->spec.kind == SERVICE_JOB_PAGES ||
			 jt->slot->spec.kind == SERVICE_JOB_PAGE_GROUPS)
	{
		uint64		cached = jt->pages.pages_cached;
		size_t		missed;

		/* the blocks of unpinned pages it could not read go back in the buffer */
		if (jt->groups)
			GPU_TRY(gpu_heap_read_groups(jt->reader, pool.page_cache, buffers_on_device,
										 (GpuHeapPage *) buffer,
										 order->rows, jt->groups, (uint32 *) buffer, &missed,
										 &jt->pages));
		else
			GPU_TRY(gpu_heap_read(jt->reader, pool.page_cache, buffers_on_device,
								  (GpuHeapPage *) buffer,
								  order->rows, jt->topk, (uint32 *) buffer, &missed,
								  &jt->pages));
		jt->slot->returned[order->buffer] = missed;
		/* the pages that came over the bus, not from the page cache */
		pg_atomic_fetch_add_u64(&dev->bytes_received,
								(order->rows - missed - (jt->pages.pages_cached - cached)) *
								BLCKSZ);
	}
	else if (jt->resident)
	{
		GPU_TRY(service_index_store(jt->resident, buffer, order->rows, jt->slot->message));
		pg_atomic_fetch_add_u64(&dev->bytes_received, order->rows * BLCKSZ);
	}
	else if (jt->topk)
	{
		GPU_TRY(gpu_topk_push(jt->topk, buffer, order->rows));
		GPU_TRY(gpu_topk_wait_input(jt->topk));
		pg_atomic_fetch_add_u64(&dev->bytes_received, order->rows * jt->slot->spec.key_width);
	}
	else
	{
		const GroupedKey *keys = (const GroupedKey *) buffer;
		const uint64 *payloads = (const uint64 *) (keys + grouped_batch_rows());

		GPU_TRY(gpu_grouped_push(jt->grouped, keys, payloads, order->rows));
		GPU_TRY(gpu_grouped_wait_input(jt->grouped));
		pg_atomic_fetch_add_u64(&dev->bytes_received,
								order->rows * (sizeof(GroupedKey) + sizeof(uint64)));
	}
	return GPU_OK;
}

/* The answer, computed once all batches are in; then its first chunk. */
static GpuStatus
finish_answer(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;
	ServiceDevice *dev = &service->devices[service_serving_device];
	size_t		count;

	if (jt->groups)
	{
		slot->kernel_ms = jt->pages.kernel_ms;
		GPU_TRY(gpu_groups_choose(jt->groups, &jt->group_records, &count, &slot->groups,
								  &slot->kernel_ms));
		slot->rows_read = jt->pages.rows_read;
		slot->rows_keyed = jt->pages.rows_keyed;
		slot->pages_cached = jt->pages.pages_cached;
		slot->pages_unpinned = jt->pages.pages_unpinned;
		jt->answer_rows = count;
	}
	else if (jt->topk)
	{
		GPU_TRY(gpu_topk_result(jt->topk, &jt->answer));
		gpu_topk_stream_times(jt->topk, &slot->copy_ms, &slot->kernel_ms);
		slot->kernel_ms += jt->pages.kernel_ms;
		slot->rows_read = jt->pages.rows_read;
		slot->rows_keyed = jt->pages.rows_keyed;
		slot->pages_cached = jt->pages.pages_cached;
		slot->pages_unpinned = jt->pages.pages_unpinned;
		slot->plan = gpu_topk_last_plan(jt->topk);
		jt->answer_rows = jt->answer.count;
	}
	else
	{
		GPU_TRY(gpu_grouped_result(jt->grouped, &jt->group_keys, &jt->group_payloads,
										  &count));
		gpu_grouped_times(jt->grouped, &slot->copy_ms, &slot->kernel_ms);
		jt->answer_rows = count;
	}
	slot->answer_rows = jt->answer_rows;
	jt->answer_sent = 0;
	jt->answered = true;
	pg_atomic_fetch_add_u64(&dev->copy_us, (uint64) (slot->copy_ms * 1000.0));
	pg_atomic_fetch_add_u64(&dev->kernel_us, (uint64) (slot->kernel_ms * 1000.0));
	return GPU_OK;
}

/* An index job's round: its candidates, then their first chunk. */
static GpuStatus
select_candidates(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;
	ServiceDevice *dev = &service->devices[service_serving_device];

	GPU_TRY(inject_faults(jt));
	GPU_TRY(service_index_select(jt->resident, service_buffer(jt->index, 0), jt->topk,
								 &jt->answer, &slot->index_counts, &slot->kernel_ms));
	slot->copy_ms = 0;
	slot->plan = gpu_topk_last_plan(jt->topk);
	jt->answer_rows = slot->answer_rows = jt->answer.count;
	jt->answer_sent = 0;
	jt->answered = true;
	pg_atomic_fetch_add_u64(&dev->kernel_us, (uint64) (slot->kernel_ms * 1000.0));
	return GPU_OK;
}

/*
 * An index groups job's entries grouped anew, for the groups' records and
 * the answer that follow; the rows read are the entries vouched for.
 */
static GpuStatus
group_entries(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;

	GPU_TRY(inject_faults(jt));
	/* the last grouping's counts and time: SLOT_RESULT reports them */
	GPU_TRY(service_index_group(jt->resident, service_buffer(jt->index, 0), &jt->groups,
								&slot->index_counts, &jt->pages.rows_keyed,
								&jt->pages.kernel_ms));
	jt->pages.rows_read = slot->index_counts.scanned;
	return GPU_OK;
}

/*
 * The answer's next chunk into the slot's two buffers, which lie one after
 * the other: top-k items, groups' records, or a grouped top-k's keys then
 * its payloads.
 */
static void
send_chunk(JobThread *jt)
{
	char	   *to = service_buffer(jt->index, 0);
	uint64		left = jt->answer_rows - jt->answer_sent;
	uint64		n;

	if (jt->groups)
	{
		uint64		bytes = jt->slot->spec.record_bytes;

		n = Min(left, 2 * service->buffer_bytes / bytes);
		memcpy(to, jt->group_records + jt->answer_sent * bytes, n * bytes);
	}
	else if (jt->topk)
	{
		n = Min(left, 2 * service->buffer_bytes / sizeof(TopkItem));
		memcpy(to, jt->answer.items + jt->answer_sent, n * sizeof(TopkItem));
	}
	else
	{
		uint64		cap = 2 * service->buffer_bytes / (sizeof(GroupedKey) + sizeof(uint64));

		n = Min(left, cap);
		memcpy(to, jt->group_keys + jt->answer_sent, n * sizeof(GroupedKey));
		memcpy(to + cap * sizeof(GroupedKey), jt->group_payloads + jt->answer_sent,
			   n * sizeof(uint64));
	}
	jt->answer_sent += n;
	jt->slot->chunk_rows = n;
}

static GpuStatus
execute(JobThread *jt, const SlotOrder *order)
{
	switch (order->command)
	{
		case SLOT_BATCH:
		case SLOT_RECORDS:
			return push_batch(jt, order);
		case SLOT_PAGES_QUERY:
			return set_pages_query(jt);
		case SLOT_RESULT:
			GPU_TRY(finish_answer(jt));
			send_chunk(jt);
			return GPU_OK;
		case SLOT_INDEX_SELECT:
			GPU_TRY(select_candidates(jt));
			send_chunk(jt);
			return GPU_OK;
		case SLOT_INDEX_GROUPS:
			return group_entries(jt);
		case SLOT_NEXT_CHUNK:
			send_chunk(jt);
			return GPU_OK;
	}
	return GPU_FAILED;
}

/* ------------------------------------------------------------------- jobs */

/* A failed job: its status and message for the backend, which is woken. */
static void
fail_job(JobThread *jt, GpuStatus status, SlotState from)
{
	ServiceSlot *slot = jt->slot;
	uint32		expected = from;

	slot->status = status;
	if (slot->message[0] == '\0')
		strlcpy(slot->message, gpu_last_error(), sizeof(slot->message));
	/* backends see the GPU restarting before they see the job failed */
	if (status == GPU_DEVICE_LOST)
		set_fatal(slot->message);
	pg_write_barrier();
	if (pg_atomic_compare_exchange_u32(&slot->state, &expected, SLOT_FAILED))
		service_wake_owner(slot);
}

/* Accept the submitted job: its index copy or engine object, its queue time. */
static bool
accept_job(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;
	ServiceDevice *dev = &service->devices[service_serving_device];
	uint32		expected = SLOT_SUBMITTED;
	instr_time	now;
	GpuStatus	status;

	/* the backend wrote the job before it marked the slot submitted */
	pg_read_barrier();
	jt->faults_checked = false;
	jt->answered = false;
	jt->answer_rows = jt->answer_sent = 0;
	memset(&jt->pages, 0, sizeof(jt->pages));
	slot->generation = pg_atomic_read_u32(&dev->generation);
	slot->status = GPU_OK;
	slot->message[0] = '\0';
	slot->answer_rows = slot->chunk_rows = 0;
	slot->copy_ms = slot->kernel_ms = 0;
	slot->index_epoch = 0;
	memset(&slot->index_counts, 0, sizeof(slot->index_counts));
	slot->rows_read = slot->rows_keyed = slot->pages_cached = slot->pages_unpinned = 0;
	slot->groups = 0;
	slot->returned[0] = slot->returned[1] = 0;
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, slot->submitted_at);
	slot->queue_ms = INSTR_TIME_GET_MILLISEC(now);
	hold_device(jt);

	if (service_jobs_fatal(slot->message, sizeof(slot->message)))
		status = GPU_FAILED;
	else if (slot->spec.kind == SERVICE_JOB_INDEX || slot->spec.kind == SERVICE_JOB_INDEX_GROUPS)
		status = service_index_acquire(&slot->spec, &jt->resident, &slot->index_epoch,
									   slot->message);
	else if ((slot->spec.kind == SERVICE_JOB_PAGES || slot->spec.kind == SERVICE_JOB_PAGE_GROUPS) &&
			 buffers_on_device == NULL)
	{
		strlcpy(slot->message, "shared_buffers are not yet mapped for the GPU.",
				sizeof(slot->message));
		status = GPU_FAILED;
	}
	else
		status = GPU_OK;
	pg_atomic_fetch_add_u64(&dev->queue_us, (uint64) (slot->queue_ms * 1000.0));
	if (status == GPU_OK)
		status = take_object(jt);
	if (status != GPU_OK)
	{
		pg_atomic_fetch_add_u64(&dev->jobs_failed, 1);
		fail_job(jt, status, SLOT_SUBMITTED);
		put_object(jt, false);
		let_go_device(jt);
		return false;
	}
	pg_write_barrier();
	if (!pg_atomic_compare_exchange_u32(&slot->state, &expected, SLOT_RUNNING))
	{
		/* released while waiting for us */
		put_object(jt, true);
		let_go_device(jt);
		return false;
	}
	service_wake_owner(slot);
	return true;
}

/*
 * Run the job in the thread's slot: accept it, carry out its orders until
 * the backend releases the slot, and free the slot.
 */
static void
run_job(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;
	ServiceDevice *dev = &service->devices[service_serving_device];
	GpuStatus	status = GPU_OK;
	uint32		done = 0;

	if (!accept_job(jt))
	{
		while (slot_state(slot) != SLOT_RELEASED && !should_stop())
			wait_for_slot(jt);
		if (slot_state(slot) == SLOT_RELEASED)
			service_free_slot(slot);
		return;
	}
	for (;;)
	{
		SlotOrder	order;

		if (slot_state(slot) != SLOT_RUNNING || should_stop())
			break;
		if (pg_atomic_read_u32(&slot->posted) == done)
		{
			wait_for_slot(jt);
			continue;
		}
		pg_read_barrier();
		order = slot->orders[done % 2];
		status = execute(jt, &order);
		if (status != GPU_OK)
		{
			fail_job(jt, status, SLOT_RUNNING);
			break;
		}
		pg_write_barrier();
		done = pg_atomic_add_fetch_u32(&slot->done, 1);
		service_wake_owner(slot);
	}
	pg_atomic_fetch_add_u64(status == GPU_OK ? &dev->jobs_done : &dev->jobs_failed, 1);
	/* an object left mid-run is not reused: destroying it waits for the GPU */
	put_object(jt, status == GPU_OK && jt->answered);
	let_go_device(jt);
	while (slot_state(slot) != SLOT_RELEASED && !should_stop())
		wait_for_slot(jt);
	if (slot_state(slot) == SLOT_RELEASED)
		service_free_slot(slot);
}

/*
 * Set by the thread registering shared_buffers before it sets
 * buffers_mapped, read by job threads after they see it set.
 */
void
service_jobs_set_buffers(char *on_device)
{
	buffers_on_device = on_device;
}

/*
 * A thread of the service that used CUDA does not exit: a thread's exit
 * runs the CUDA driver's clean-up of its state, which after a sticky error
 * waited forever, and with it the service (on the H200, 2026-11-26).  Done,
 * it waits here, outside CUDA and with every signal blocked, for the
 * process to end.
 */
void
service_thread_park(void)
{
	for (;;)
		pause();
}

static void *
job_thread_main(void *arg)
{
	JobThread  *jt = (JobThread *) arg;

	/*
	 * A thread's first CUDA call sets up the runtime's state for the thread:
	 * done here, before the GPU is ready, not in a first job.
	 */
	(void) gpu_set_device(0);
	pg_atomic_fetch_add_u32(&threads_ready, 1);

	while (!should_stop())
	{
		switch (slot_state(jt->slot))
		{
			case SLOT_SUBMITTED:
				run_job(jt);
				break;
			case SLOT_RELEASED:
				service_free_slot(jt->slot);
				break;
			default:
				wait_for_slot(jt);
				break;
		}
	}
	pg_atomic_fetch_add_u32(&threads_parked, 1);
	service_thread_park();
}

/* --------------------------------------------------------------- threads */

/*
 * A top-k through a pooled object, as large as its first real one would
 * be: enough keys to fill its candidate set (k + 2^22 keys at the most for
 * the service's batches), so that its compactions' memory is allocated.
 */
static GpuStatus
warm_topk(GpuTopk *t, int key_width, TopkMode mode, const char *keys, size_t bytes)
{
	size_t		n = bytes / key_width;
	size_t		pushed = 0;
	TopkResult	result;

	GPU_TRY(gpu_topk_reset(t, key_width, 1024, mode));
	GPU_TRY(gpu_topk_set_stream_batch(t, service->buffer_bytes / key_width));
	for (; pushed < ((size_t) 5 << 20); pushed += n)
	{
		GPU_TRY(gpu_topk_push(t, keys, n));
		GPU_TRY(gpu_topk_wait_input(t));
	}
	return gpu_topk_result(t, &result);
}

/*
 * Warm up the GPU: a top-k object and a grouped top-k, each made and run
 * once, so that the first jobs after a start find them in the pool with
 * their device memory allocated.  One top-k object per process of a
 * parallel query held 3.6 GB of an H100 and did not make the first such
 * query after a start faster (bench/results/service_bench_h100_2026-11-23_
 * warm1.md, _warm17.md).  The keys come from the buffers of the GPU's
 * first slot: no job runs on it yet.
 */
static GpuStatus
warm_up_device(void)
{
	char	   *buffers = service_buffer(service_serving_device, 0);
	size_t		bytes = 2 * service->buffer_bytes;
	uint64	   *words = (uint64 *) buffers;
	size_t		nwords = bytes / sizeof(uint64);
	size_t		rows = grouped_batch_rows();
	GpuTopk    *t = NULL;
	GpuGroupedTopk *g = NULL;
	const GroupedKey *group_keys;
	const uint64 *group_payloads;
	size_t		count;
	GpuStatus	status;

	for (size_t i = 0; i < nwords; i++)
		words[i] = (i + 1) * UINT64CONST(0x9e3779b97f4a7c15);
	GPU_TRY(gpu_topk_create(8, 1024, TOPK_EXACT, &t));
	status = warm_topk(t, 8, TOPK_WITH_TIES, buffers, bytes);
	if (status == GPU_OK)
		status = warm_topk(t, 4, TOPK_EXACT, buffers, bytes);
	pool_put(t, NULL, status == GPU_OK);
	GPU_TRY(status);
	GPU_TRY(gpu_grouped_create(4, rows, &g));
	status = gpu_grouped_push(g, (const GroupedKey *) buffers, words + 2 * rows, rows);
	if (status == GPU_OK)
		status = gpu_grouped_result(g, &group_keys, &group_payloads, &count);
	pool_put(NULL, g, status == GPU_OK);
	return status;
}

/* a page cache sized by the service is left out below this */
#define PAGE_CACHE_MIN_BYTES ((size_t) 64 * 1024 * 1024)

/*
 * The bytes of the GPU's page cache: those of
 * gputopk.gpu_page_cache_size, or for -1 half the device memory free at
 * the start beside gputopk.gpu_cache_size (column index copies); the other
 * half stays for jobs.  The cache may well be larger than shared_buffers:
 * a page it holds is not read again while its LSN stays the same, wherever
 * PostgreSQL keeps it meanwhile.
 */
static size_t
page_cache_bytes(void)
{
	size_t		free_bytes;
	size_t		total_bytes;
	size_t		index_bytes = (size_t) gputopk_gpu_cache_mb * 1024 * 1024;
	size_t		bytes;

	if (gputopk_gpu_page_cache_mb >= 0)
		return (size_t) gputopk_gpu_page_cache_mb * 1024 * 1024;
	if (gpu_device_memory(&free_bytes, &total_bytes) != GPU_OK || free_bytes <= index_bytes)
		return 0;
	bytes = (free_bytes - index_bytes) / 2;
	return bytes < PAGE_CACHE_MIN_BYTES ? 0 : bytes;
}

/*
 * The GPU's page cache; without device memory for it, the GPU reads every
 * page over the bus, and the server log says why.
 */
static void
create_page_cache(void)
{
	size_t		bytes = page_cache_bytes();
	int			ordinal = service->devices[service_serving_device].info.ordinal;

	if (bytes == 0)
		return;
	if (gpu_page_cache_create(bytes, BLCKSZ, &pool.page_cache) != GPU_OK)
	{
		ereport(LOG,
				(errmsg("gputopk GPU service has no page cache on GPU %d", ordinal),
				 errdetail("%s", gpu_last_error()),
				 errhint("Lower gputopk.gpu_page_cache_size.")));
		return;
	}
	pg_atomic_write_u64(&service->devices[service_serving_device].page_cache_bytes, bytes);
	ereport(LOG,
			(errmsg("gputopk GPU service keeps a page cache of %zu MB on GPU %d",
					bytes >> 20, ordinal)));
}

bool
service_jobs_warm_up(void)
{
	pthread_mutex_init(&pool.lock, NULL);
	pool.topk = MemoryContextAllocZero(TopMemoryContext, sizeof(GpuTopk *) * service->nslots);
	pool.grouped = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(GpuGroupedTopk *) * service->nslots);
	if (warm_up_device() != GPU_OK)
		return false;
	create_page_cache();
	return true;
}

void
service_jobs_start(void)
{
	sigset_t	saved;

	pg_atomic_init_u32(&stopping, 0);
	threads = MemoryContextAllocZero(TopMemoryContext, sizeof(JobThread) * service->nslots);
	nthreads = 0;
	pg_atomic_init_u32(&threads_ready, 0);
	pg_atomic_init_u32(&threads_parked, 0);

	/* PostgreSQL's signals are for the main thread: the threads block them all */
	service_block_signals(&saved);
	for (int i = 0; i < service->nslots; i++)
	{
		JobThread  *jt = &threads[nthreads];

		if (service_slot_device(i) != service_serving_device)
			continue;
		nthreads++;
		jt->index = i;
		jt->slot = &service->slots[i];
		jt->started = pthread_create(&jt->thread, NULL, job_thread_main, jt) == 0;
	}
	service_restore_signals(&saved);
	for (int i = 0; i < nthreads; i++)
		if (!threads[i].started)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start the GPU service's job threads")));
	while (pg_atomic_read_u32(&threads_ready) < (uint32) nthreads)
		pg_usleep(1000L);
}

bool
service_jobs_stop(void)
{
	uint32		started = 0;

	pg_atomic_write_u32(&stopping, 1);
	for (int i = 0; i < nthreads; i++)
	{
		service_wake_job(threads[i].slot);
		started += threads[i].started ? 1 : 0;
	}
	for (int waited = 0; pg_atomic_read_u32(&threads_parked) < started; waited++)
	{
		if (waited >= STOP_WAIT_MS)
			return false;
		pg_usleep(1000L);
	}
	return true;
}
