/*-------------------------------------------------------------------------
 *
 * device.c
 *	  The GPU as seen by a backend: lazy probing, the choice between GPU and
 *	  CPU backends, errors, and resources released with memory contexts.
 *
 * CUDA is touched only here (through kernels/gpu_api.h) and only in the
 * backend that needs it, never in the postmaster.  The first use probes the
 * devices once per backend: the first one our kernels can run on is opened
 * and must pass a self-test, or the reason it cannot be used is kept for
 * DEBUG1 messages and errors.  Device memory and pinned host buffers belong
 * to a memory context and are released by its reset callback, because a
 * failing or cancelled query never reaches its executor's end routine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "device.h"
#include "gputopk.h"

typedef enum GpuState
{
	GPU_UNPROBED,
	GPU_READY,
	GPU_ABSENT,					/* never usable in this backend */
	GPU_LOST					/* was usable until a sticky CUDA error */
} GpuState;

static GpuState gpu_state = GPU_UNPROBED;
static int	gpu_ordinal = -1;
static char gpu_absent_reason[1024];

/* Pinned host buffers kept between queries, up to gputopk.pinned_pool_size. */
#define PINNED_POOL_SLOTS 32
#define PINNED_ROUNDING (2 * 1024 * 1024)

typedef struct PinnedSlot
{
	void	   *ptr;			/* NULL when the slot is empty */
	size_t		size;
	bool		in_use;
} PinnedSlot;

static PinnedSlot pinned_pool[PINNED_POOL_SLOTS];

static void
set_absent(GpuState state, const char *fmt,...) pg_attribute_printf(2, 3);

static void
set_absent(GpuState state, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(gpu_absent_reason, sizeof(gpu_absent_reason), fmt, args);
	va_end(args);
	gpu_state = state;
}

/*
 * Threads that the CUDA driver starts inherit the signal mask of the thread
 * that starts them; block everything meanwhile so that PostgreSQL's signals
 * (cancel, terminate, latches) always reach the backend's own thread.
 */
static void
block_signals(sigset_t *saved)
{
	sigset_t	all;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, saved);
}

static void
restore_signals(const sigset_t *saved)
{
	sigprocmask(SIG_SETMASK, saved, NULL);
}

static void
probe(void)
{
	int			count = 0;
	GpuStatus	status;
	GpuDeviceInfo info;
	sigset_t	saved;

	block_signals(&saved);
	status = gpu_device_count(&count);
	restore_signals(&saved);
	if (status != GPU_OK)
	{
		set_absent(GPU_ABSENT, "%s", gpu_last_error());
		return;
	}
	if (count == 0)
	{
		set_absent(GPU_ABSENT, "The CUDA driver reports no device.");
		return;
	}

	for (int d = 0; d < count; d++)
	{
		if (gpu_device_info(d, &info) != GPU_OK)
		{
			set_absent(GPU_ABSENT, "%s", gpu_last_error());
			return;
		}
		if (info.cc_major < GPU_MIN_CC_MAJOR)
		{
			set_absent(GPU_ABSENT,
					   "Device %d (%s) has compute capability %d.%d; gputopk's kernels need %d.0 or newer.",
					   d, info.name, info.cc_major, info.cc_minor,
					   GPU_MIN_CC_MAJOR);
			continue;
		}
		block_signals(&saved);
		status = gpu_device_open(d);
		restore_signals(&saved);
		if (status != GPU_OK)
		{
			set_absent(GPU_ABSENT, "Device %d (%s) failed its self-test: %s",
					   d, info.name, gpu_last_error());
			return;
		}
		gpu_ordinal = d;
		gpu_state = GPU_READY;
		return;
	}
}

bool
device_gpu_usable(void)
{
	if (gpu_state == GPU_UNPROBED)
		probe();
	return gpu_state == GPU_READY;
}

int
device_gpu_ordinal(void)
{
	return device_gpu_usable() ? gpu_ordinal : -1;
}

const char *
device_gpu_absent_reason(void)
{
	return device_gpu_usable() ? NULL : gpu_absent_reason;
}

/*
 * Where top-k work runs under gputopk.device.  When auto falls back to the
 * CPU backend, DEBUG1 says why.
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
	if (device_gpu_usable())
		return BACKEND_GPU;
	ereport(DEBUG1,
			(errmsg_internal("gputopk is using the CPU backend: no usable GPU"),
			 errdetail_internal("%s", gpu_absent_reason)));
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
				 errdetail("%s", gpu_absent_reason),
				 errhint(DEVICE_NO_GPU_HINT)));
	return backend;
}

/*
 * Report a failed GPU call.  A sticky error leaves the CUDA context unusable
 * for the rest of this process, so the GPU is given up for the session and
 * later work under gputopk.device = auto runs on the CPU.
 */
void
device_check(GpuStatus status, const char *action)
{
	int			code;

	if (status == GPU_OK)
		return;

	switch (status)
	{
		case GPU_OUT_OF_MEMORY:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case GPU_NOT_BUILT:
		case GPU_NO_DRIVER:
		case GPU_NO_DEVICE:
		case GPU_UNSUPPORTED_DEVICE:
			code = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
			break;
		default:
			code = ERRCODE_SYSTEM_ERROR;
			break;
	}
	if (status == GPU_DEVICE_LOST)
	{
		set_absent(GPU_LOST, "The GPU failed earlier in this session: %s",
				   gpu_last_error());
		ereport(ERROR,
				(errcode(code),
				 errmsg("could not %s", action),
				 errdetail("%s", gpu_last_error()),
				 errhint("The GPU stays unused for the rest of this session; new sessions try it again.")));
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("could not %s", action),
			 errdetail("%s", gpu_last_error())));
}

static void
pinned_pool_trim(void)
{
	size_t		limit = (size_t) gputopk_pinned_pool_mb * 1024 * 1024;
	size_t		idle = 0;

	for (int i = 0; i < PINNED_POOL_SLOTS; i++)
		if (pinned_pool[i].ptr != NULL && !pinned_pool[i].in_use)
			idle += pinned_pool[i].size;

	for (int i = 0; i < PINNED_POOL_SLOTS && idle > limit; i++)
	{
		PinnedSlot *slot = &pinned_pool[i];

		if (slot->ptr == NULL || slot->in_use)
			continue;
		if (gpu_host_free(slot->ptr) != GPU_OK)
			elog(WARNING, "could not free pinned host memory: %s",
				 gpu_last_error());
		idle -= slot->size;
		slot->ptr = NULL;
		slot->size = 0;
	}
}

/* Runs on reset or deletion of the owning context; must not throw. */
static void
buffer_release_callback(void *arg)
{
	DeviceBuffer *buf = (DeviceBuffer *) arg;
	GpuStatus	status;

	if (buf->ptr == NULL)
		return;
	if (gpu_state != GPU_READY)
	{
		/* the context died with a sticky error: nothing can be freed */
		buf->ptr = NULL;
		return;
	}
	if (buf->pool_slot < 0)
		status = gpu_device_free(buf->ptr);
	else
	{
		/* copies still queued on a cancelled query may use the buffer */
		status = gpu_synchronize();
		pinned_pool[buf->pool_slot].in_use = false;
	}
	buf->ptr = NULL;
	if (status == GPU_DEVICE_LOST)
		set_absent(GPU_LOST, "The GPU failed earlier in this session: %s",
				   gpu_last_error());
	else if (status != GPU_OK)
		elog(WARNING, "could not release GPU memory: %s", gpu_last_error());
	if (buf->pool_slot >= 0)
		pinned_pool_trim();
}

void
device_buffer_release(DeviceBuffer *buf)
{
	buffer_release_callback(buf);
}

static DeviceBuffer *
buffer_register(MemoryContext owner, void *ptr, size_t size, int pool_slot)
{
	DeviceBuffer *buf = MemoryContextAlloc(owner, sizeof(DeviceBuffer));

	buf->ptr = ptr;
	buf->size = size;
	buf->pool_slot = pool_slot;
	buf->callback.func = buffer_release_callback;
	buf->callback.arg = buf;
	MemoryContextRegisterResetCallback(owner, &buf->callback);
	return buf;
}

DeviceBuffer *
device_alloc(MemoryContext owner, size_t size)
{
	void	   *ptr;
	DeviceBuffer *buf;

	Assert(gpu_state == GPU_READY);
	/* allocate the handle first, so that nothing leaks if that fails */
	buf = buffer_register(owner, NULL, size, -1);
	device_check(gpu_device_alloc(size, &ptr), "allocate GPU memory");
	buf->ptr = ptr;
	return buf;
}

DeviceBuffer *
device_pinned_acquire(MemoryContext owner, size_t size)
{
	int			best = -1;
	int			empty = -1;
	DeviceBuffer *buf;
	GpuStatus	status;
	void	   *ptr;

	Assert(gpu_state == GPU_READY);
	for (int i = 0; i < PINNED_POOL_SLOTS; i++)
	{
		PinnedSlot *slot = &pinned_pool[i];

		if (slot->ptr == NULL)
		{
			if (empty < 0)
				empty = i;
		}
		else if (!slot->in_use && slot->size >= size &&
				 (best < 0 || slot->size < pinned_pool[best].size))
			best = i;
	}

	buf = buffer_register(owner, NULL, size, -1);
	if (best < 0)
	{
		if (empty < 0)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many pinned host buffers in use"),
					 errdetail("A backend holds at most %d pinned buffers at once.",
							   PINNED_POOL_SLOTS)));
		size = TYPEALIGN(PINNED_ROUNDING, size);
		status = gpu_host_alloc(size, &ptr);
		if (status == GPU_OUT_OF_MEMORY)
		{
			/* give idle pooled buffers back and try once more */
			int			saved = gputopk_pinned_pool_mb;

			gputopk_pinned_pool_mb = 0;
			pinned_pool_trim();
			gputopk_pinned_pool_mb = saved;
			status = gpu_host_alloc(size, &ptr);
		}
		device_check(status, "allocate pinned host memory");
		pinned_pool[empty].ptr = ptr;
		pinned_pool[empty].size = size;
		best = empty;
	}
	pinned_pool[best].in_use = true;
	buf->ptr = pinned_pool[best].ptr;
	buf->size = pinned_pool[best].size;
	buf->pool_slot = best;
	return buf;
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

/* Check a GPU call that may have waited for the device; the time since start is added to *wait_ms. */
void
device_check_timed(GpuStatus status, instr_time start, double *wait_ms, const char *action)
{
	instr_time	end;

	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	*wait_ms += INSTR_TIME_GET_MILLISEC(end);
	device_check(status, action);
}
