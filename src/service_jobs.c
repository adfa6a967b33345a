/*-------------------------------------------------------------------------
 *
 * service_jobs.c
 *	  A GPU's job threads in its process of the GPU service: one per job
 *	  slot of the GPU, each running its slot's jobs on the top-k engine.
 *
 * A thread sleeps on its slot's semaphore, which the slot's backend posts
 * at each change it makes, until the slot holds a submitted job; it takes
 * an engine object of the job's kind from the GPU's pool (or makes one,
 * service_pool.h) and accepts the job.  What a job does at each order is
 * its kind's operation (service_job_kinds.h); the thread does not look at
 * the kind.
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
#include "service_job_kinds.h"
#include "service_jobs.h"
#include "service_pool.h"

/* how long a thread sleeps before it looks at its slot again anyway */
#define THREAD_POLL_MS 100

/* how long the main thread waits for the threads to stop when it exits */
#define STOP_WAIT_MS 10000

/* a thread and the job it runs */
typedef struct JobThread
{
	int			index;			/* its slot's */
	ServiceSlot *slot;
	pthread_t	thread;
	bool		started;

	/* the running job */
	bool		held;			/* counted in the GPU's jobs_running */
	const JobKindOps *ops;		/* what its kind does */
	JobRun		run;			/* what the engine holds for it */
	bool		faults_checked; /* injected faults looked at, at the first batch */
	bool		answered;		/* the engine gave its answer: the object is reusable */
} JobThread;

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

/*
 * The engine object of the job's kind, if it takes one.  Out of device
 * memory, the idle objects are given up and the object tried once more.
 * An injected fault may say there is no memory.
 */
static GpuStatus
take_object(JobThread *jt)
{
	GpuStatus	status = GPU_OUT_OF_MEMORY;
	uint32		injected = SERVICE_FAULT_OUT_OF_MEMORY;

	if (pg_atomic_compare_exchange_u32(&service->fault, &injected, SERVICE_FAULT_NONE))
	{
		strlcpy(jt->slot->message,
				"Allocating device memory failed: the fault was injected by gputopk_service_inject_fault.",
				sizeof(jt->slot->message));
		return GPU_OUT_OF_MEMORY;
	}
	if (jt->ops->take == NULL)
		return GPU_OK;
	for (int attempt = 0; attempt < 2 && status == GPU_OUT_OF_MEMORY; attempt++)
	{
		if (attempt > 0)
			service_pool_drain();
		status = jt->ops->take(&jt->run);
	}
	if (status != GPU_OK)
		strlcpy(jt->slot->message, gpu_last_error(), sizeof(jt->slot->message));
	return status;
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

/* The answer's next chunk into the slot's buffers. */
static void
send_chunk(JobThread *jt)
{
	JobRun	   *run = &jt->run;
	uint64		n = jt->ops->chunk(run, service_buffer(jt->index, 0),
								   run->answer_rows - run->answer_sent);

	run->answer_sent += n;
	jt->slot->chunk_rows = n;
}

/* The answer, computed once the job's rows are in; then its first chunk. */
static GpuStatus
answer(JobThread *jt)
{
	ServiceSlot *slot = jt->slot;
	ServiceDevice *dev = &service->devices[service_serving_device];

	GPU_TRY(jt->ops->answer(&jt->run));
	slot->answer_rows = jt->run.answer_rows;
	jt->run.answer_sent = 0;
	jt->answered = true;
	pg_atomic_fetch_add_u64(&dev->copy_us, (uint64) (slot->copy_ms * 1000.0));
	pg_atomic_fetch_add_u64(&dev->kernel_us, (uint64) (slot->kernel_ms * 1000.0));
	send_chunk(jt);
	return GPU_OK;
}

/*
 * An order of the backend, through the operation of the job's kind; one
 * the kind has none for fails the job.  The orders that bring data to the
 * GPU look at injected faults first.
 */
static GpuStatus
execute(JobThread *jt, const SlotOrder *order)
{
	const JobKindOps *ops = jt->ops;
	JobRun	   *run = &jt->run;

	switch (order->command)
	{
		case SLOT_BATCH:
		case SLOT_RECORDS:
		case SLOT_INDEX_SELECT:
		case SLOT_INDEX_GROUPS:
			GPU_TRY(inject_faults(jt));
			break;
		case SLOT_PAGES_QUERY:
		case SLOT_RESULT:
		case SLOT_NEXT_CHUNK:
			break;
	}
	switch (order->command)
	{
		case SLOT_BATCH:
			if (ops->push)
				return ops->push(run, order);
			break;
		case SLOT_RECORDS:
			if (ops->records)
				return ops->records(run, order);
			break;
		case SLOT_PAGES_QUERY:
			if (ops->query)
				return ops->query(run);
			break;
		case SLOT_INDEX_GROUPS:
			if (ops->group)
				return ops->group(run);
			break;
		case SLOT_RESULT:
		case SLOT_INDEX_SELECT:
			return answer(jt);
		case SLOT_NEXT_CHUNK:
			send_chunk(jt);
			return GPU_OK;
	}
	strlcpy(jt->slot->message, "The GPU service got an order that the job's kind does not take.",
			sizeof(jt->slot->message));
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
	jt->ops = service_job_kind_ops(slot->spec.kind);
	jt->faults_checked = false;
	jt->answered = false;
	jt->run.answer_rows = jt->run.answer_sent = 0;
	memset(&jt->run.pages, 0, sizeof(jt->run.pages));
	slot->generation = pg_atomic_read_u32(&dev->generation);
	slot->status = GPU_OK;
	slot->message[0] = '\0';
	slot->answer_rows = slot->chunk_rows = 0;
	slot->copy_ms = slot->kernel_ms = 0;
	slot->index_epoch = 0;
	memset(&slot->index_counts, 0, sizeof(slot->index_counts));
	slot->rows_read = slot->rows_keyed = slot->pages_cached = slot->pages_unpinned = 0;
	slot->pages_wal_vouched = slot->pages_wal_decided = 0;
	slot->rows_settled = slot->rows_undecided = slot->pages_undecided = slot->pages_unheld = 0;
	slot->groups = 0;
	slot->returned[0] = slot->returned[1] = 0;
	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, slot->submitted_at);
	slot->queue_ms = INSTR_TIME_GET_MILLISEC(now);
	hold_device(jt);

	if (service_jobs_fatal(slot->message, sizeof(slot->message)))
		status = GPU_FAILED;
	else
		status = jt->ops->ready ? jt->ops->ready(&jt->run) : GPU_OK;
	pg_atomic_fetch_add_u64(&dev->queue_us, (uint64) (slot->queue_ms * 1000.0));
	if (status == GPU_OK)
		status = take_object(jt);
	if (status != GPU_OK)
	{
		pg_atomic_fetch_add_u64(&dev->jobs_failed, 1);
		fail_job(jt, status, SLOT_SUBMITTED);
		service_job_kinds_put_back(&jt->run, false);
		let_go_device(jt);
		return false;
	}
	pg_write_barrier();
	if (!pg_atomic_compare_exchange_u32(&slot->state, &expected, SLOT_RUNNING))
	{
		/* released while waiting for us */
		service_job_kinds_put_back(&jt->run, true);
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
	service_job_kinds_put_back(&jt->run, status == GPU_OK && jt->answered);
	let_go_device(jt);
	while (slot_state(slot) != SLOT_RELEASED && !should_stop())
		wait_for_slot(jt);
	if (slot_state(slot) == SLOT_RELEASED)
		service_free_slot(slot);
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
		jt->index = jt->run.index = i;
		jt->slot = jt->run.slot = &service->slots[i];
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
