/*-------------------------------------------------------------------------
 *
 * service_unit.c
 *	  A GPU's process in the GPU service: it opens its GPU, registers
 *	  shared memory with CUDA, calibrates, starts the job threads of its
 *	  slots, and then passes wake-ups on to them until it exits.
 *
 * The service's first process (service_main.c) starts one such process
 * per GPU, as a dynamic background worker, whose argument is the GPU's
 * index in ServiceShared.devices.  Before its first CUDA call it makes
 * CUDA see that GPU alone (CUDA_VISIBLE_DEVICES), so that nothing it does
 * touches another: a sticky CUDA error fails every GPU of the process that
 * meets it (bench/fault_isolation.cu), and CUDA's runtime holds locks of
 * the whole process (bench/alloc_lock.cu), which the GPUs' jobs would
 * otherwise wait on together.
 *
 * Start: the GPU must pass a self-test (SERVICE_STARTING); the process
 * registers the staging buffers with CUDA (so that copies from them are
 * single DMAs), calibrates the engine's cost model on its GPU and warms up
 * a pool of engine objects, starts one job thread per slot of its GPU and
 * takes jobs (SERVICE_READY).  Then a thread registers shared_buffers with
 * CUDA too, for later work that reads pages in place (service_buffers.c).
 * A GPU that cannot be used is SERVICE_ABSENT, and its process exits.
 *
 * Then it sleeps on its latch (backends wake the job threads themselves,
 * service_wake_job), set when a job thread meets a fault that ends the
 * process or waits for the WAL to be read.  Each time it wakes, and at
 * least every 100 ms, it reads the WAL flushed since for the page cache
 * (service_wal.c).  Every second it frees the slots of backends that died
 * without releasing them, and reads its GPU's free memory for
 * gputopk_service().
 *
 * Exit: on SIGTERM, or when a job thread met a sticky CUDA error (the
 * process's CUDA context is then unusable), the process stops its threads
 * (they stay, idle, until the process ends: see service_jobs.c), fails
 * every job of its slots still running with the reason, sets
 * SERVICE_RESTARTING and exits, skipping CUDA's own teardown: the first
 * process starts it again a second later, with a fresh CUDA context, while
 * the other GPUs go on serving.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "gpu_api.h"
#include "gpu_topk.h"
#include "service_shmem.h"
#include "service_buffers.h"
#include "service_jobs.h"
#include "service_pool.h"
#include "service_wal.h"


/* the background worker's entry point (service_main.c starts it by name) */
extern PGDLLEXPORT void gputopk_gpu_main(Datum arg);

/* how often the main thread looks for dead owners and free memory */
#define HOUSEKEEPING_MS 1000

/* why the process exits, for the jobs it fails */
static char exit_reason[SERVICE_MESSAGE_BYTES] = "The GPU's process in the GPU service stopped.";

static ServiceDevice *
serving(void)
{
	return &service->devices[service_serving_device];
}

/*
 * Make CUDA see this process's GPU alone: its ordinal among those the
 * server's environment lets CUDA see (CUDA_VISIBLE_DEVICES, if set, lists
 * them), which is the ordinal the first process found it at.
 */
static void
see_only_its_gpu(void)
{
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");
	int			ordinal = serving()->info.ordinal;
	char		entry[256];

	if (visible == NULL)
		snprintf(entry, sizeof(entry), "%d", ordinal);
	else
	{
		const char *start = visible;
		size_t		length;

		for (int i = 0; i < ordinal && start != NULL; i++)
		{
			start = strchr(start, ',');
			if (start != NULL)
				start++;
		}
		if (start == NULL)
			start = "";
		length = strcspn(start, ",");
		snprintf(entry, sizeof(entry), "%.*s", (int) Min(length, sizeof(entry) - 1), start);
	}
	setenv("CUDA_VISIBLE_DEVICES", entry, 1);
}

/* Why the GPU cannot be used, in the server log and for backends. */
static void
give_up(const char *what)
{
	ereport(LOG,
			(errmsg("gputopk GPU service cannot use GPU %d (%s)", serving()->info.ordinal,
					serving()->info.name),
			 errdetail("%s: %s", what, gpu_last_error())));
	snprintf(service->reason, sizeof(service->reason), "%s on GPU %d: %s", what,
			 serving()->info.ordinal, gpu_last_error());
	service_set_device_state(service_serving_device, SERVICE_ABSENT);
	proc_exit(0);
}

/* The GPU opened (it must pass a self-test), its cost model measured. */
static void
open_device(void)
{
	GpuTopkCalibration calibration;
	instr_time	began;
	instr_time	took;
	GpuStatus	status;
	sigset_t	saved;

	INSTR_TIME_SET_CURRENT(began);
	service_block_signals(&saved);
	status = gpu_device_open(0);
	service_restore_signals(&saved);
	if (status != GPU_OK)
		give_up("The self-test failed");
	service_block_signals(&saved);
	status = gpu_topk_calibration(&calibration);
	service_restore_signals(&saved);
	if (status != GPU_OK)
		give_up("Calibrating failed");
	INSTR_TIME_SET_CURRENT(took);
	INSTR_TIME_SUBTRACT(took, began);
	ereport(LOG,
			(errmsg("gputopk GPU service calibrated GPU %d (%s) in %.0f ms",
					serving()->info.ordinal, serving()->info.name,
					INSTR_TIME_GET_MILLISEC(took))));
}

/*
 * Register the staging buffers with CUDA, so that copies from them are
 * single DMAs.  Copies from memory CUDA does not know still work, through
 * the driver's own bounce buffers, only slower: a failure is logged, not
 * fatal.
 */
static void
register_staging(void)
{
	Size		bytes = (Size) service->nslots * 2 * service->buffer_bytes;
	GpuStatus	status;
	sigset_t	saved;

	service_block_signals(&saved);
	status = gpu_host_register(service_buffer(0, 0), bytes);
	service_restore_signals(&saved);
	if (status != GPU_OK)
		ereport(LOG,
				(errmsg("gputopk GPU service could not register its staging buffers with CUDA; copies from them will be slower"),
				 errdetail("%s", gpu_last_error())));
}

/* One object of each kind made and run once (service_jobs.h). */
static void
warm_up_device(void)
{
	sigset_t	saved;
	bool		ok;

	service_block_signals(&saved);
	ok = service_pool_warm_up();
	service_restore_signals(&saved);
	if (!ok)
		give_up("Preparing its first jobs failed");
}

/* Sleep for ms, or until shutdown is asked for. */
static void
sleep_ms(long ms)
{
	instr_time	began;

	INSTR_TIME_SET_CURRENT(began);
	while (!ShutdownRequestPending)
	{
		long		left = ms - (long) service_ms_since(began);

		if (left <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, left,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* An injected slow start: this start waits, as a long calibration would. */
static void
injected_slow_start(void)
{
	uint32		ms = pg_atomic_exchange_u32(&service->slow_start_ms, 0);

	if (ms > 0)
	{
		ereport(LOG, (errmsg("gputopk GPU service waits %u ms before GPU %d starts (injected)",
							 ms, serving()->info.ordinal)));
		sleep_ms(ms);
	}
}

/* Free the slots of this GPU whose backends exited without releasing them. */
static void
release_orphans(void)
{
	for (int i = 0; i < service->nslots; i++)
	{
		ServiceSlot *slot = &service->slots[i];
		uint32		state = pg_atomic_read_u32(&slot->state);

		if (service_slot_device(i) != service_serving_device)
			continue;
		if (state == SLOT_FREE || state == SLOT_RELEASED)
			continue;
		pg_read_barrier();
		if (kill(slot->owner_pid, 0) < 0 && errno == ESRCH &&
			pg_atomic_compare_exchange_u32(&slot->state, &state, SLOT_RELEASED))
		{
			service_wake_job(slot);
			ereport(DEBUG1,
					(errmsg_internal("gputopk GPU service released the job of exited process %d",
									 slot->owner_pid)));
		}
	}
}

static void
refresh_memory(void)
{
	size_t		free_bytes;
	size_t		total_bytes;

	if (gpu_device_memory(&free_bytes, &total_bytes) == GPU_OK)
		pg_atomic_write_u64(&serving()->memory_free, free_bytes);
}

/*
 * On exit, with the job threads stopped: every job of this GPU's slots
 * still running fails with exit_reason, its backend woken; released slots
 * are freed.
 */
static void
fail_jobs(void)
{
	for (int i = 0; i < service->nslots; i++)
	{
		ServiceSlot *slot = &service->slots[i];
		uint32		state = pg_atomic_read_u32(&slot->state);

		if (service_slot_device(i) != service_serving_device)
			continue;
		if (state == SLOT_RELEASED)
			service_free_slot(slot);
		else if (state == SLOT_SUBMITTED || state == SLOT_RUNNING)
		{
			slot->status = GPU_FAILED;
			strlcpy(slot->message, exit_reason, sizeof(slot->message));
			pg_write_barrier();
			if (pg_atomic_compare_exchange_u32(&slot->state, &state, SLOT_FAILED))
				service_wake_owner(slot);
			else if (state == SLOT_RELEASED)
				service_free_slot(slot);
		}
	}
}

static void
gpu_process_exit(int code, Datum arg)
{
	/*
	 * No job thread may touch a slot once the jobs are failed.  The thread
	 * registering shared_buffers may go on: the process ends without CUDA's
	 * teardown, and the next process maps them again.
	 */
	if (!service_jobs_stop())
		ereport(LOG,
				(errmsg("gputopk GPU service: GPU %d's process exits while a job thread is still busy",
						serving()->info.ordinal),
				 errdetail("A job thread did not finish its GPU call within 10 seconds.")));
	fail_jobs();
	serving()->pid = 0;
	serving()->procno = -1;
	if (service_device_state(service_serving_device) != SERVICE_ABSENT)
		service_set_device_state(service_serving_device, SERVICE_RESTARTING);
}

/*
 * The process's last step, once PostgreSQL's own clean-up has run: it
 * leaves without the CUDA runtime's teardown at exit, which after a sticky
 * error may wait forever, as a thread's teardown did; the driver frees what
 * the process held on the GPU when it ends.  Proc-exit callbacks run last
 * registered first: PostgreSQL's own, skipped, only close files.
 */
static void
leave_without_cuda_teardown(int code, Datum arg)
{
	_exit(code);
}

void
gputopk_gpu_main(Datum arg)
{
	instr_time	housekept;

	service_serving_device = DatumGetInt32(arg);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/*
	 * Load every kernel when the GPU is opened, not at its first launch
	 * (CUDA's lazy loading): the first jobs after a start would pay for it.
	 */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	see_only_its_gpu();
	on_proc_exit(leave_without_cuda_teardown, 0);
	before_shmem_exit(gpu_process_exit, 0);
	serving()->pid = MyProcPid;
	serving()->procno = compat_proc_number(MyProc);
	pg_atomic_fetch_add_u32(&serving()->generation, 1);
	/* an earlier process's mapping and page cache are gone */
	pg_atomic_write_u32(&serving()->buffers_mapped, 0);
	pg_atomic_write_u64(&serving()->page_cache_bytes, 0);
	pg_atomic_write_u32(&serving()->wal_followed, 0);
	service_set_device_state(service_serving_device, SERVICE_STARTING);

	injected_slow_start();
	open_device();
	register_staging();
	warm_up_device();
	service_wal_init();
	service_jobs_start();
	service_set_device_state(service_serving_device, SERVICE_READY);
	service_buffers_start();
	ereport(LOG, (errmsg("gputopk GPU service ready on GPU %d (%s), %d job slots",
						 serving()->info.ordinal, serving()->info.name,
						 (service->nslots - service_serving_device + service->ndevices - 1) /
						 service->ndevices)));

	INSTR_TIME_SET_CURRENT(housekept);
	for (;;)
	{
		long		wal_ms = service_wal_follow();

		service_process_wait(wal_ms < 0 ? HOUSEKEEPING_MS : wal_ms);
		if (service_jobs_fatal(exit_reason, sizeof(exit_reason)))
		{
			ereport(LOG, (errmsg("gputopk GPU service restarts GPU %d after a fault",
								 serving()->info.ordinal),
						  errdetail("%s", exit_reason)));
			proc_exit(1);
		}
		service_buffers_log();
		if (service_ms_since(housekept) >= HOUSEKEEPING_MS)
		{
			release_orphans();
			refresh_memory();
			INSTR_TIME_SET_CURRENT(housekept);
		}
	}
}
