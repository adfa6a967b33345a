/*-------------------------------------------------------------------------
 *
 * device.c
 *	  Where top-k work runs: the GPU, through the GPU service, or the CPU
 *	  backend, as gputopk.device says.
 *
 * Backends never touch CUDA: the GPU service owns the GPUs (service_client.h).
 * Without it (the library not in shared_preload_libraries, or no usable
 * GPU), auto uses the CPU backend and gpu is an error that says why.
 * While the service is still looking for GPUs, the question "is there a
 * GPU?" waits for its answer; under auto, a job waits for nothing and runs
 * on the CPU when the service is not ready.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "device.h"

int			gputopk_device = DEVICE_SETTING_AUTO;

static const struct config_enum_entry device_options[] = {
	{"auto", DEVICE_SETTING_AUTO, false},
	{"gpu", DEVICE_SETTING_GPU, false},
	{"cpu", DEVICE_SETTING_CPU, false},
	{NULL, 0, false}
};

/*
 * An interactive "SET gputopk.device = gpu" fails at once where no GPU is
 * usable.  Settings from configuration files, ALTER ROLE/DATABASE checks and
 * parallel workers restoring the leader's settings are not probed (the
 * postmaster must never touch CUDA); they fail at first use instead.
 */
static bool
check_device(int *newval, void **extra, GucSource source)
{
	if (*newval != DEVICE_SETTING_GPU ||
		source < PGC_S_INTERACTIVE || source == PGC_S_TEST ||
		!IsUnderPostmaster || MyBackendType != B_BACKEND ||
		IsParallelWorker())
		return true;

	if (service_gpu_usable())
		return true;

	GUC_check_errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
	GUC_check_errmsg(DEVICE_NO_GPU_MESSAGE);
	GUC_check_errdetail("%s", service_unusable_reason());
	GUC_check_errhint(DEVICE_NO_GPU_HINT);
	return false;
}

/* Define gputopk.device (at _PG_init). */
void
device_define_setting(void)
{
	DefineCustomEnumVariable("gputopk.device",
							 "Where gputopk runs top-k work.",
							 "auto uses the GPU when one is usable and the CPU backend otherwise; "
							 "gpu demands a GPU; cpu always uses the CPU backend.",
							 &gputopk_device,
							 DEVICE_SETTING_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 check_device, NULL, NULL);
}

/*
 * Where top-k work runs under gputopk.device.  auto uses the GPU when the
 * service is ready, and says why not at DEBUG1 otherwise.
 */
TopkBackend
device_selected_backend(void)
{
	switch ((DeviceSetting) gputopk_device)
	{
		case DEVICE_SETTING_CPU:
			return BACKEND_CPU;
		case DEVICE_SETTING_GPU:
			return service_gpu_usable() ? BACKEND_GPU : BACKEND_NONE;
		case DEVICE_SETTING_AUTO:
			break;
	}
	if (service_ready())
		return BACKEND_GPU;
	ereport(DEBUG1,
			(errmsg_internal("gputopk is using the CPU backend: no usable GPU"),
			 errdetail_internal("%s", service_unusable_reason())));
	return BACKEND_CPU;
}

TopkBackend
device_choose_backend(void)
{
	TopkBackend backend = device_selected_backend();

	if (backend == BACKEND_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg(DEVICE_NO_GPU_MESSAGE),
				 errdetail("%s", service_unusable_reason()),
				 errhint(DEVICE_NO_GPU_HINT)));
	return backend;
}

ServiceJob *
device_start_job(const ServiceJobSpec *spec, bool wait_for_slot)
{
	ServiceJob *job;

	if (device_choose_backend() != BACKEND_GPU)
		return NULL;
	job = service_job_start(spec, device_gpu_demanded(),
							wait_for_slot && device_gpu_demanded());
	/* the service found no GPU meanwhile (after a restart): gpu's error */
	if (job == NULL)
		(void) device_choose_backend();
	return job;
}

bool
device_gpu_demanded(void)
{
	return gputopk_device == DEVICE_SETTING_GPU;
}

/* A backend as EXPLAIN names it. */
const char *
device_backend_name(TopkBackend backend)
{
	switch (backend)
	{
		case BACKEND_CPU:
			return "cpu";
		case BACKEND_GPU:
			return "gpu";
		case BACKEND_NONE:
			break;
	}
	return "none usable";
}
