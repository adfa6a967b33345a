/*-------------------------------------------------------------------------
 *
 * service_main.c
 *	  The GPU service's first process: it looks for GPUs and keeps a
 *	  process running for each (service_unit.c).
 *
 * Start: the process looks for GPUs (SERVICE_PROBING) through CUDA's
 * device queries, which open no GPU.  Without one of compute capability
 * 8.0 or newer it records why (SERVICE_ABSENT) and exits with code 0,
 * which the postmaster takes as final: no service process is left, and
 * backends use the CPU backend.  Otherwise it describes each GPU in
 * shared memory (as many as there are job slots), starts a dynamic
 * background worker for each (SERVICE_READY: from then on the GPUs'
 * processes say how the service stands, service_state()) and watches them.
 *
 * A GPU's process that exits after a fault (SERVICE_RESTARTING) is started
 * again a second later; the others go on serving meanwhile.  One that
 * found its GPU unusable (SERVICE_ABSENT) is not; when every GPU is, this
 * process exits with code 0 too.  The GPUs' processes are started never to
 * be restarted by the postmaster: after a crash of the server it forgets
 * them, and this process, restarted, starts them anew.  On SIGTERM it
 * stops them before it exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"

#include "compat.h"
#include "gpu_api.h"
#include "service_shmem.h"


/* the background worker's entry point (service_shmem.c registers it by name) */
extern PGDLLEXPORT void gputopk_service_main(Datum arg);

/* how often the process looks at the GPUs' processes */
#define WATCH_MS 100

/* the wait before a GPU's process is started again */
#define RESTART_MS 1000

/* the longest wait for the GPUs' processes to stop when this one exits */
#define STOP_WAIT_MS 15000

/* a GPU's process, as this one knows it */
typedef struct GpuProcess
{
	BackgroundWorkerHandle *handle; /* NULL while none runs */
	instr_time	stopped_at;
	bool		ever_started;
	bool		no_worker_logged;	/* no background worker slot was free */
} GpuProcess;

static GpuProcess processes[SERVICE_MAX_DEVICES];

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
 * Describe every GPU our kernels run on, at most one per job slot; false
 * (and the reason) if none.  A GPU that cannot be used is skipped, its
 * reason kept in case no other is.
 */
static bool
find_devices(void)
{
	int			count = 0;
	int			found = 0;
	GpuStatus	status;
	sigset_t	saved;

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
	for (int d = 0; d < count && found < Min(SERVICE_MAX_DEVICES, service->nslots); d++)
	{
		GpuDeviceInfo info;
		ServiceDeviceInfo *dev = &service->devices[found].info;

		service_block_signals(&saved);
		status = gpu_device_info(d, &info);
		service_restore_signals(&saved);
		if (status != GPU_OK)
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
		dev->ordinal = d;
		strlcpy(dev->name, info.name, sizeof(dev->name));
		dev->memory_bytes = info.memory_bytes;
		dev->multiprocessors = info.multiprocessors;
		dev->cc_major = info.cc_major;
		dev->cc_minor = info.cc_minor;
		pg_atomic_write_u64(&service->devices[found].memory_free, info.memory_bytes);
		service_set_device_state(found, SERVICE_STARTING);
		found++;
	}
	service->ndevices = found;
	return found > 0;
}

/* Start GPU d's process; where no worker slot is free, it is tried again later. */
static void
start_process(int d)
{
	BackgroundWorker worker;
	GpuProcess *p = &processes[d];

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "gputopk", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, "gputopk_gpu_main", sizeof(worker.bgw_function_name));
	snprintf(worker.bgw_name, sizeof(worker.bgw_name), "gputopk GPU service: GPU %d",
			 service->devices[d].info.ordinal);
	strlcpy(worker.bgw_type, "gputopk GPU service", sizeof(worker.bgw_type));
	worker.bgw_main_arg = Int32GetDatum(d);
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &p->handle))
	{
		p->handle = NULL;
		INSTR_TIME_SET_CURRENT(p->stopped_at);
		if (!p->no_worker_logged)
			ereport(LOG,
					(errmsg("gputopk GPU service could not start the process of GPU %d",
							service->devices[d].info.ordinal),
					 errdetail("No background worker slot is free."),
					 errhint("Raise max_worker_processes: the GPU service takes one for itself and one per GPU.")));
		p->no_worker_logged = true;
		return;
	}
	p->no_worker_logged = false;
	p->ever_started = true;
}

/*
 * Look at GPU d's process: note that it stopped, or start it (again) if
 * its GPU is usable and it has been stopped long enough.  False when its
 * GPU is not usable.
 */
static bool
watch_process(int d)
{
	GpuProcess *p = &processes[d];
	pid_t		pid;

	if (p->handle != NULL)
	{
		if (GetBackgroundWorkerPid(p->handle, &pid) != BGWH_STOPPED)
			return true;
		pfree(p->handle);
		p->handle = NULL;
		INSTR_TIME_SET_CURRENT(p->stopped_at);
	}
	if (service_device_state(d) == SERVICE_ABSENT)
		return false;
	if (!p->ever_started || service_ms_since(p->stopped_at) >= RESTART_MS)
		start_process(d);
	return true;
}

/* Stop every GPU's process and wait for it, so that none outlives this one. */
static void
stop_processes(int code, Datum arg)
{
	instr_time	began;

	for (int d = 0; d < service->ndevices; d++)
		if (processes[d].handle != NULL)
			TerminateBackgroundWorker(processes[d].handle);
	INSTR_TIME_SET_CURRENT(began);
	for (int d = 0; d < service->ndevices; d++)
	{
		pid_t		pid;

		while (processes[d].handle != NULL &&
			   GetBackgroundWorkerPid(processes[d].handle, &pid) == BGWH_STARTED &&
			   service_ms_since(began) < STOP_WAIT_MS)
			pg_usleep(10000L);
	}
}

void
gputopk_service_main(Datum arg)
{
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	service_set_state(SERVICE_PROBING);
	if (!find_devices())
	{
		ereport(LOG,
				(errmsg("gputopk GPU service found no usable GPU; top-k work runs on the CPU"),
				 errdetail("%s", service->reason)));
		service_set_state(SERVICE_ABSENT);
		proc_exit(0);
	}
	before_shmem_exit(stop_processes, 0);
	service_set_state(SERVICE_READY);
	ereport(LOG, (errmsg("gputopk GPU service found %d GPU%s; each gets a process and a share of the %d job slots",
						 service->ndevices, service->ndevices == 1 ? "" : "s", service->nslots)));

	for (;;)
	{
		bool		usable = false;

		for (int d = 0; d < service->ndevices; d++)
			usable |= watch_process(d);
		if (!usable)
		{
			ereport(LOG,
					(errmsg("gputopk GPU service found no usable GPU; top-k work runs on the CPU"),
					 errdetail("%s", service->reason)));
			service_set_state(SERVICE_ABSENT);
			proc_exit(0);
		}
		service_process_wait(WATCH_MS);
	}
}
