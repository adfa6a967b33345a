/*-------------------------------------------------------------------------
 *
 * service_main.c
 *	  The GPU service's main thread: it opens the GPUs, registers shared
 *	  memory with CUDA, calibrates, starts the job threads, and then passes
 *	  wake-ups on to them until it exits.
 *
 * Start: the service looks for GPUs (SERVICE_PROBING).  Without a usable
 * one it records why (SERVICE_ABSENT) and exits with code 0, which the
 * postmaster takes as final: no service process is left, and backends use
 * the CPU backend.  Otherwise it opens every GPU of compute capability 8.0
 * or newer (each must pass a self-test), registers the staging buffers
 * with CUDA (so that copies from them are single DMAs), calibrates the
 * engine's cost model on each GPU and warms up a pool of engine objects
 * (SERVICE_STARTING), starts one job thread per slot and takes jobs
 * (SERVICE_READY).  Then a thread registers shared_buffers with CUDA
 * too, for later work that reads pages in place (service_buffers.c): the
 * two together are PostgreSQL's main shared memory segment as the GPUs
 * need it.
 *
 * Then it sleeps on its latch (backends wake the job threads themselves,
 * service_wake_job), set when a job thread meets a fault that ends the
 * service.  Every second it frees the slots of backends that died without
 * releasing them, and reads each GPU's free memory for gputopk_service().
 *
 * Exit: on SIGTERM, or when a job thread met a sticky CUDA error (the
 * process's contexts are then unusable), the service stops its threads
 * (they stay, idle, until the process ends: see service_jobs.c), fails
 * every job still running with the reason, sets SERVICE_RESTARTING and
 * exits with code 1, skipping CUDA's own teardown: the postmaster starts it
 * again a second later, with fresh CUDA contexts.
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
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "gpu_api.h"
#include "gpu_topk.h"
#include "service_shmem.h"
#include "service_buffers.h"
#include "service_jobs.h"


/* the background worker's entry point (service_shmem.c registers it by name) */
extern PGDLLEXPORT void gputopk_service_main(Datum arg);

/* how often the main thread looks for dead owners and free memory */
#define HOUSEKEEPING_MS 1000

/* why the service exits, for the jobs it fails */
static char exit_reason[SERVICE_MESSAGE_BYTES] = "The GPU service stopped.";

static void
set_reason(const char *fmt,...) pg_attribute_printf(1, 2);

static void
set_reason(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(service->reason, sizeof(service->reason), fmt, args);
	va_end(args);
}

/*
 * Open every GPU our kernels run on; false (and the reason) if none.  A GPU
 * that cannot be used is skipped, its reason kept in case no other is.
 */
static bool
open_devices(void)
{
	int			count = 0;
	GpuStatus	status;
	sigset_t	saved;

	service->ndevices = 0;
	service_block_signals(&saved);
	status = gpu_device_count(&count);
	service_restore_signals(&saved);
	if (status != GPU_OK)
	{
		set_reason("%s", gpu_last_error());
		return false;
	}
	if (count == 0)
		set_reason("The CUDA driver reports no device.");
	for (int d = 0; d < count && service->ndevices < SERVICE_MAX_DEVICES; d++)
	{
		GpuDeviceInfo info;
		ServiceDevice *dev = &service->devices[service->ndevices];

		if (gpu_device_info(d, &info) != GPU_OK)
		{
			set_reason("%s", gpu_last_error());
			continue;
		}
		if (info.cc_major < GPU_MIN_CC_MAJOR)
		{
			set_reason("Device %d (%s) has compute capability %d.%d; gputopk's kernels need %d.0 or newer.",
					   d, info.name, info.cc_major, info.cc_minor, GPU_MIN_CC_MAJOR);
			continue;
		}
		service_block_signals(&saved);
		status = gpu_device_open(d);
		service_restore_signals(&saved);
		if (status != GPU_OK)
		{
			set_reason("Device %d (%s) failed its self-test: %s", d, info.name,
					   gpu_last_error());
			continue;
		}
		memset(dev, 0, sizeof(*dev));
		dev->info.ordinal = d;
		strlcpy(dev->info.name, info.name, sizeof(dev->info.name));
		dev->info.memory_bytes = info.memory_bytes;
		dev->info.multiprocessors = info.multiprocessors;
		dev->info.cc_major = info.cc_major;
		dev->info.cc_minor = info.cc_minor;
		pg_atomic_init_u64(&dev->memory_free, info.memory_bytes);
		pg_atomic_init_u64(&dev->page_cache_bytes, 0);
		pg_atomic_init_u64(&dev->index_bytes, 0);
		pg_atomic_init_u32(&dev->index_copies, 0);
		pg_atomic_init_u32(&dev->jobs_running, 0);
		pg_atomic_init_u64(&dev->jobs_done, 0);
		pg_atomic_init_u64(&dev->jobs_failed, 0);
		pg_atomic_init_u64(&dev->bytes_received, 0);
		pg_atomic_init_u64(&dev->copy_us, 0);
		pg_atomic_init_u64(&dev->kernel_us, 0);
		pg_atomic_init_u64(&dev->queue_us, 0);
		service->ndevices++;
	}
	return service->ndevices > 0;
}

/*
 * Register the staging buffers with CUDA, for every GPU, so that copies
 * from them are single DMAs.  Copies from memory CUDA does not know still
 * work, through the driver's own bounce buffers, only slower: a failure is
 * logged, not fatal.
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

/* The cost model of every GPU, measured once per start of the service. */
static bool
calibrate_devices(void)
{
	for (int d = 0; d < service->ndevices; d++)
	{
		ServiceDevice *dev = &service->devices[d];
		GpuTopkCalibration calibration;
		instr_time	began;
		instr_time	took;
		GpuStatus	status;
		sigset_t	saved;

		INSTR_TIME_SET_CURRENT(began);
		service_block_signals(&saved);
		status = gpu_set_device(dev->info.ordinal);
		if (status == GPU_OK)
			status = gpu_topk_calibration(&calibration);
		service_restore_signals(&saved);
		if (status != GPU_OK)
		{
			set_reason("Calibrating device %d (%s) failed: %s", dev->info.ordinal, dev->info.name,
					   gpu_last_error());
			return false;
		}
		INSTR_TIME_SET_CURRENT(took);
		INSTR_TIME_SUBTRACT(took, began);
		ereport(LOG,
				(errmsg("gputopk GPU service calibrated device %d (%s) in %.0f ms",
						dev->info.ordinal, dev->info.name, INSTR_TIME_GET_MILLISEC(took))));
	}
	return true;
}

/* One object of each kind per GPU, made and run once (service_jobs.h). */
static bool
warm_up_devices(void)
{
	sigset_t	saved;
	bool		ok;

	service_block_signals(&saved);
	ok = service_jobs_warm_up();
	service_restore_signals(&saved);
	if (!ok)
		set_reason("Preparing the GPUs' first jobs failed: %s", gpu_last_error());
	return ok;
}

/* Sleep for ms, or until shutdown is asked for. */
static void
sleep_ms(long ms)
{
	instr_time	began;
	instr_time	now;

	INSTR_TIME_SET_CURRENT(began);
	while (!ShutdownRequestPending)
	{
		long		left;

		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, began);
		left = ms - (long) INSTR_TIME_GET_MILLISEC(now);
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
		ereport(LOG, (errmsg("gputopk GPU service waits %u ms before it starts (injected)", ms)));
		sleep_ms(ms);
	}
}

/* Free the slots of backends that exited without releasing them. */
static void
release_orphans(void)
{
	for (int i = 0; i < service->nslots; i++)
	{
		ServiceSlot *slot = &service->slots[i];
		uint32		state = pg_atomic_read_u32(&slot->state);

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
	for (int d = 0; d < service->ndevices; d++)
	{
		size_t		free_bytes;
		size_t		total_bytes;

		if (gpu_set_device(service->devices[d].info.ordinal) == GPU_OK &&
			gpu_device_memory(&free_bytes, &total_bytes) == GPU_OK)
			pg_atomic_write_u64(&service->devices[d].memory_free, free_bytes);
	}
}

/*
 * On exit, with the job threads stopped: every job still in the service
 * fails with exit_reason, its backend woken; released slots are freed.
 */
static void
fail_jobs(void)
{
	for (int i = 0; i < service->nslots; i++)
	{
		ServiceSlot *slot = &service->slots[i];
		uint32		state = pg_atomic_read_u32(&slot->state);

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
service_exit(int code, Datum arg)
{
	/*
	 * No job thread may touch a slot once the jobs are failed.  The thread
	 * registering shared_buffers may go on: the process ends without CUDA's
	 * teardown, and the next service maps them again.
	 */
	if (!service_jobs_stop())
		ereport(LOG,
				(errmsg("gputopk GPU service exits while a job thread is still busy"),
				 errdetail("A job thread did not finish its GPU call within 10 seconds.")));
	fail_jobs();
	service->pid = 0;
	service->procno = -1;
	if (service_state() != SERVICE_ABSENT)
		service_set_state(SERVICE_RESTARTING);
}

/*
 * The service's last step, once PostgreSQL's own clean-up has run: it
 * leaves without the CUDA runtime's teardown at exit, which after a sticky
 * error may wait forever, as a thread's teardown did; the driver frees what
 * the process held on the GPUs when it ends.  Proc-exit callbacks run last
 * registered first: PostgreSQL's own, skipped, only close files.
 */
static void
leave_without_cuda_teardown(int code, Datum arg)
{
	_exit(code);
}

void
gputopk_service_main(Datum arg)
{
	instr_time	housekept;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/*
	 * Load every kernel when a GPU is opened, not at its first launch (CUDA's
	 * lazy loading): the first jobs after a start would pay for it.
	 */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	on_proc_exit(leave_without_cuda_teardown, 0);
	before_shmem_exit(service_exit, 0);
	service->pid = MyProcPid;
	service->procno = compat_proc_number(MyProc);
	pg_atomic_fetch_add_u32(&service->generation, 1);
	/* an earlier service's mapping, which it may have set as it ended, is gone */
	pg_atomic_write_u32(&service->buffers_mapped, 0);
	pg_atomic_write_u32(&service->page_cache_on, 0);
	service_set_state(SERVICE_PROBING);

	if (!open_devices())
	{
		ereport(LOG,
				(errmsg("gputopk GPU service found no usable GPU; top-k work runs on the CPU"),
				 errdetail("%s", service->reason)));
		service_set_state(SERVICE_ABSENT);
		proc_exit(0);
	}
	service_set_state(SERVICE_STARTING);
	injected_slow_start();
	register_staging();
	if (!calibrate_devices() || !warm_up_devices())
	{
		ereport(LOG, (errmsg("gputopk GPU service cannot use its GPUs"),
					  errdetail("%s", service->reason)));
		service_set_state(SERVICE_ABSENT);
		proc_exit(0);
	}
	service_jobs_start();
	service_set_state(SERVICE_READY);
	service_buffers_start();
	ereport(LOG, (errmsg("gputopk GPU service ready: %d GPU%s, %d job slots",
						 service->ndevices, service->ndevices == 1 ? "" : "s",
						 service->nslots)));

	INSTR_TIME_SET_CURRENT(housekept);
	for (;;)
	{
		instr_time	now;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 HOUSEKEEPING_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ShutdownRequestPending)
			proc_exit(1);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (service_jobs_fatal(exit_reason, sizeof(exit_reason)))
		{
			ereport(LOG, (errmsg("gputopk GPU service restarts after a fault"),
						  errdetail("%s", exit_reason)));
			proc_exit(1);
		}
		service_buffers_log();
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, housekept);
		if (INSTR_TIME_GET_MILLISEC(now) >= HOUSEKEEPING_MS)
		{
			release_orphans();
			refresh_memory();
			INSTR_TIME_SET_CURRENT(housekept);
		}
	}
}
