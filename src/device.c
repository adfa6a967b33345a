/*-------------------------------------------------------------------------
 *
 * device.c
 *	  Where top-k work runs: the GPU, through the GPU service, or the CPU
 *	  backend, as gputopk.device says.
 *
 * Backends never touch CUDA: the GPU service (service.h) owns the GPUs.
 * Without it (the library not in shared_preload_libraries, or no usable
 * GPU), auto uses the CPU backend and gpu is an error that says why.
 * While the service is still looking for GPUs, the question "is there a
 * GPU?" waits for its answer; under auto, a job waits for nothing and runs
 * on the CPU when the service is not ready.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/wait_event.h"

#include "device.h"
#include "gputopk.h"

/* the longest wait for the service's first answer about GPUs */
#define PROBE_WAIT_MS 10000

static const char *const not_preloaded_reason =
"The GPU service runs only when gputopk is in shared_preload_libraries.";

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
device_gpu_usable(void)
{
	return service != NULL && probed_state() != SERVICE_ABSENT;
}

/* Why the GPU is not usable, or not usable yet, as a sentence. */
const char *
device_gpu_absent_reason(void)
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
			return device_gpu_usable() ? BACKEND_GPU : BACKEND_NONE;
		case DEVICE_SETTING_AUTO:
			break;
	}
	if (service != NULL && service_state() == SERVICE_READY)
		return BACKEND_GPU;
	ereport(DEBUG1,
			(errmsg_internal("gputopk is using the CPU backend: no usable GPU"),
			 errdetail_internal("%s", device_gpu_absent_reason())));
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
				 errdetail("%s", device_gpu_absent_reason()),
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
