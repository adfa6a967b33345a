/*-------------------------------------------------------------------------
 *
 * service_shmem.c
 *	  The GPU service's settings, shared memory and registration, and the
 *	  small helpers both of its sides use.
 *
 * Under shared_preload_libraries, _PG_init (in the postmaster) asks for
 * the service's shared memory: its state, one slot per concurrent job and
 * two staging buffers per slot, in PostgreSQL's main segment so that the
 * service registers them with CUDA together with shared_buffers.  It also
 * registers the service as a background worker started with the
 * postmaster and restarted a second after it exits with code 1 (after a
 * fault).  Without preloading there is neither: `service` stays NULL and
 * top-k work runs on the CPU backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "colindex_changes.h"
#include "compat.h"
#include "service_shmem.h"


#define SERVICE_SHMEM_NAME "gputopk GPU service"
#define SERVICE_FUNCTION "gputopk_service_main"
#define STAGING_ALIGN 4096

ServiceShared *service = NULL;
int			gputopk_service_jobs = 32;
int			gputopk_service_buffer_kb = 2048;
int			gputopk_gpu_cache_mb = 8192;
int			gputopk_gpu_page_cache_mb = -1;
int			service_serving_device = -1;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
slots_bytes(void)
{
	return add_size(offsetof(ServiceShared, slots),
					mul_size(gputopk_service_jobs, sizeof(ServiceSlot)));
}

static Size
service_shmem_size(void)
{
	Size		staging = mul_size(mul_size(gputopk_service_jobs, 2),
								   (Size) gputopk_service_buffer_kb * 1024);

	return add_size(add_size(slots_bytes(), STAGING_ALIGN), staging);
}

static void
service_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(add_size(service_shmem_size(), colindex_changes_shmem_size()));
	colindex_changes_shmem_request();
}

/*
 * Whether the postmaster still knows the service.  It forgets a worker that
 * exited with code 0, as the service does where it finds no GPU: after a
 * crash and restart of the server, the new shared memory must say so
 * rather than wait for a probe that never comes.
 */
static bool
service_registered(void)
{
	compat_bgworker_iter iter;

	compat_bgworker_foreach(iter)
	{
		RegisteredBgWorker *rw = compat_bgworker_of(iter);

		if (strcmp(rw->rw_worker.bgw_function_name, SERVICE_FUNCTION) == 0 &&
			strcmp(rw->rw_worker.bgw_library_name, "gputopk") == 0)
			return !rw->rw_terminate;
	}
	return false;
}

static void
service_shmem_startup(void)
{
	bool		found;
	char	   *base;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	service = ShmemInitStruct(SERVICE_SHMEM_NAME, service_shmem_size(), &found);
	if (!found)
	{
		memset(service, 0, slots_bytes());
		pg_atomic_init_u32(&service->state, SERVICE_PROBING);
		pg_atomic_init_u32(&service->fault, SERVICE_FAULT_NONE);
		pg_atomic_init_u32(&service->fault_device, 0);
		pg_atomic_init_u32(&service->slow_start_ms, 0);
		ConditionVariableInit(&service->state_changed);
		for (int d = 0; d < SERVICE_MAX_DEVICES; d++)
		{
			ServiceDevice *dev = &service->devices[d];

			pg_atomic_init_u32(&dev->state, SERVICE_PROBING);
			pg_atomic_init_u32(&dev->generation, 0);
			dev->procno = -1;
			pg_atomic_init_u32(&dev->buffers_mapped, 0);
			pg_atomic_init_u64(&dev->memory_free, 0);
			pg_atomic_init_u64(&dev->page_cache_bytes, 0);
			pg_atomic_init_u32(&dev->wal_followed, 0);
			pg_atomic_init_u64(&dev->index_bytes, 0);
			pg_atomic_init_u32(&dev->index_copies, 0);
			pg_atomic_init_u32(&dev->jobs_running, 0);
			pg_atomic_init_u64(&dev->jobs_done, 0);
			pg_atomic_init_u64(&dev->jobs_failed, 0);
			pg_atomic_init_u64(&dev->bytes_received, 0);
			pg_atomic_init_u64(&dev->copy_us, 0);
			pg_atomic_init_u64(&dev->kernel_us, 0);
			pg_atomic_init_u64(&dev->queue_us, 0);
		}
		service->nslots = gputopk_service_jobs;
		service->buffer_bytes = (Size) gputopk_service_buffer_kb * 1024;
		base = (char *) service;
		service->staging_offset = TYPEALIGN(STAGING_ALIGN, (uintptr_t) base + slots_bytes()) - (uintptr_t) base;
		for (int i = 0; i < service->nslots; i++)
		{
			pg_atomic_init_u32(&service->slots[i].state, SLOT_FREE);
			pg_atomic_init_u32(&service->slots[i].posted, 0);
			pg_atomic_init_u32(&service->slots[i].done, 0);
			if (sem_init(&service->slots[i].wake, 1, 0) < 0)
				ereport(FATAL,
						(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
						 errmsg("could not create a semaphore for the GPU service: %m")));
		}
		if (!service_registered())
		{
			strlcpy(service->reason,
					"The GPU service found no usable GPU when the server started.",
					sizeof(service->reason));
			pg_atomic_write_u32(&service->state, SERVICE_ABSENT);
		}
	}
	colindex_changes_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

static void
register_service(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	/* after it exits with code 1; code 0, where there is no GPU, is final */
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "gputopk", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, SERVICE_FUNCTION, sizeof(worker.bgw_function_name));
	strlcpy(worker.bgw_name, "gputopk GPU service", sizeof(worker.bgw_name));
	strlcpy(worker.bgw_type, "gputopk GPU service", sizeof(worker.bgw_type));
	RegisterBackgroundWorker(&worker);
}

/*
 * Under shared_preload_libraries: the service's settings (fixed at server
 * start, so they exist only then), its shared memory and its worker.  Runs
 * in the postmaster: nothing here touches CUDA.
 */
void
service_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("gputopk.service_jobs",
							"GPU jobs the GPU service runs at once.",
							"Each scan process with top-k work for the GPU takes one; a process that "
							"finds none free waits for one under gputopk.device = gpu and uses the "
							"CPU backend under auto. The slots are shared out among the GPUs.",
							&gputopk_service_jobs,
							32,
							1,
							1024,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gputopk.service_buffer_size",
							"Each GPU job's two staging buffers in shared memory, each this size.",
							"Scan processes write keys or rows into one while the GPU copies the other; "
							"the service's shared memory is gputopk.service_jobs times two buffers.",
							&gputopk_service_buffer_kb,
							2048,
							64,
							1024 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gputopk.gpu_cache_size",
							"Device memory the GPU service gives to copies of column indexes.",
							"A budget for each GPU. A query that reads a column index on the GPU "
							"keeps a copy of the index in the memory of the GPU it runs on; when "
							"copies need more, those used longest ago go. An index larger than one "
							"GPU's budget is partitioned over the GPUs, one larger than all their "
							"budgets together is read on the CPU.",
							&gputopk_gpu_cache_mb,
							8192,
							0,
							INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gputopk.gpu_page_cache_size",
							"Device memory the GPU service keeps copies of heap pages in.",
							"A page the GPU reads in place is also copied into this cache; later "
							"scans read the copy instead of the page while the page's LSN is the "
							"same. Pages of unlogged and temporary tables are never kept. -1 takes half "
							"of each GPU's memory free at the start of the service beside "
							"gputopk.gpu_cache_size. 0 turns the cache off.",
							&gputopk_gpu_page_cache_mb,
							-1,
							-1,
							INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = service_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = service_shmem_startup;
	register_service();
}

/* Buffer 0 or 1 of a slot. */
char *
service_buffer(int slot, int buffer)
{
	Assert(slot >= 0 && slot < service->nslots && (buffer == 0 || buffer == 1));
	return (char *) service + service->staging_offset +
		((Size) slot * 2 + buffer) * service->buffer_bytes;
}

/*
 * The service's state: the first process's while it probes or where it
 * found no GPU; then the best of its GPUs' processes' (ready if one is,
 * else starting if one is, else restarting), or absent where every GPU
 * failed to start.
 */
ServiceState
service_state(void)
{
	ServiceState state = (ServiceState) pg_atomic_read_u32(&service->state);
	ServiceState best = SERVICE_ABSENT;

	if (state != SERVICE_READY)
		return state;
	for (int d = 0; d < service->ndevices; d++)
	{
		ServiceState s = service_device_state(d);

		if (s == SERVICE_READY)
			return s;
		if (s == SERVICE_STARTING || s == SERVICE_PROBING)
			best = SERVICE_STARTING;
		else if (s == SERVICE_RESTARTING && best == SERVICE_ABSENT)
			best = SERVICE_RESTARTING;
	}
	return best;
}

ServiceState
service_device_state(int device)
{
	return (ServiceState) pg_atomic_read_u32(&service->devices[device].state);
}

const char *
service_state_name(ServiceState state)
{
	switch (state)
	{
		case SERVICE_PROBING:
			return "probing";
		case SERVICE_STARTING:
			return "starting";
		case SERVICE_READY:
			return "ready";
		case SERVICE_RESTARTING:
			return "restarting";
		case SERVICE_ABSENT:
			break;
	}
	return "absent";
}

/* The first process's new state, and every waiter told. */
void
service_set_state(ServiceState state)
{
	pg_atomic_write_u32(&service->state, state);
	ConditionVariableBroadcast(&service->state_changed);
}

/* A GPU's process's new state, and every waiter told. */
void
service_set_device_state(int device, ServiceState state)
{
	pg_atomic_write_u32(&service->devices[device].state, state);
	ConditionVariableBroadcast(&service->state_changed);
}

/*
 * Set the latch of a GPU's process.  Its PGPROC may have gone with it:
 * setting a stale latch only wakes another process, which checks its own
 * condition.
 */
void
service_wake_device(int device)
{
	int			procno = service->devices[device].procno;

	if (procno >= 0)
		SetLatch(&GetPGProcByNumber(procno)->procLatch);
}

/* The GPU whose process serves a slot (an index into devices). */
int
service_slot_device(int slot)
{
	Assert(service->ndevices > 0);
	return slot % service->ndevices;
}

/*
 * Set the latch of a slot's owner.  Called by the service's job threads:
 * SetLatch of another process's latch is a store and a kill(), safe on
 * any thread.
 */
void
service_wake_owner(ServiceSlot *slot)
{
	SetLatch(&GetPGProcByNumber(slot->owner_procno)->procLatch);
}

/*
 * Wake a slot's job thread, which sleeps on the slot's semaphore until its
 * state or its orders change: a semaphore in shared memory, posted from
 * any process, wakes that thread alone.
 */
void
service_wake_job(ServiceSlot *slot)
{
	sem_post(&slot->wake);
}

/*
 * Free a slot its owner has let go of (SLOT_RELEASED): by the job thread
 * once the GPU no longer reads its buffers, or by the exiting service.
 */
void
service_free_slot(ServiceSlot *slot)
{
	pg_atomic_write_u32(&slot->posted, 0);
	pg_atomic_write_u32(&slot->done, 0);
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, SLOT_FREE);
}

/*
 * A service process's sleep on its latch, ms at most: on SIGTERM it exits
 * (code 1), on SIGHUP it reloads the configuration.
 */
void
service_process_wait(long ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	if (ShutdownRequestPending)
		proc_exit(1);
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

double
service_ms_since(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

void
service_block_signals(sigset_t *saved)
{
	sigset_t	all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
}

void
service_restore_signals(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}
