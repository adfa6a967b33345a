/*-------------------------------------------------------------------------
 *
 * service_buffers.c
 *	  shared_buffers registered with CUDA, mapped, so that kernels read heap
 *	  pages where they are (pages jobs, gpu_heap.h).
 *
 * Registering pins every page.  Pages of shared memory that no process has
 * touched yet must first be allocated and zeroed by the kernel, which is
 * most of the cost (on an H100 machine, 40 GB took 25 s in one
 * cudaHostRegister call), and CUDA holds a lock of its driver throughout
 * the call: every other CUDA call of the process, so every job, waited.
 * Hence, in a thread of its own, once the GPU's process is ready:
 *
 * 1. The pages are populated first, without CUDA, by a few threads at
 *    once (madvise MADV_POPULATE_WRITE, which leaves the contents as they
 *    are, so backends may use the buffers meanwhile).
 * 2. They are registered in chunks of REGISTER_CHUNK_BYTES, with a pause
 *    between chunks in which the job threads' CUDA calls get the driver's
 *    lock: a job waits for one chunk at most (a few ms), not for the whole.
 *    Each chunk's address on the GPU must continue the first's (CUDA's
 *    unified addressing gives the host address itself), as kernels read
 *    shared_buffers as one array.
 *
 * Each GPU's process registers them for its GPU.  Until it is done, the
 * GPU's ServiceDevice.buffers_mapped stays 0 and scans send no pages
 * jobs to it; the main thread then logs the time each step took.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "storage/bufmgr.h"

#include "gpu_api.h"
#include "service_shmem.h"
#include "service_buffers.h"
#include "service_jobs.h"
#include "service_pool.h"

/* Linux 5.14 and later; where the kernel lacks it, registering populates */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* registered in chunks of this, a job's CUDA calls going first between them */
#define REGISTER_CHUNK_BYTES ((Size) 64 * 1024 * 1024)
#define REGISTER_PAUSE_US 100
/*
 * Threads that populate the pages at once: on the H100 machine 40 GB took
 * 15.7 s in one thread, 9.7 s in 8 and 9.0 s in 16 (the kernel's work on
 * shared memory does not scale far); a few leave the cores to queries.
 */
#define POPULATE_THREADS_MAX 4

static bool started;
static pg_atomic_uint32 registered;	/* 0 running, 1 done, 2 failed */
static double populate_ms;
static double register_ms;
static char failure[SERVICE_MESSAGE_BYTES];

typedef struct PopulateRange
{
	char	   *start;
	Size		bytes;
} PopulateRange;

static double
ms_between(const struct timespec *began, const struct timespec *ended)
{
	return (ended->tv_sec - began->tv_sec) * 1000.0 +
		(ended->tv_nsec - began->tv_nsec) / 1e6;
}

static void *
populate_range(void *arg)
{
	PopulateRange *range = (PopulateRange *) arg;

	/* a failure only leaves the work to cudaHostRegister */
	(void) madvise(range->start, range->bytes, MADV_POPULATE_WRITE);
	return NULL;
}

/* Populate the pages of [start, start + bytes) with threads working side by side. */
static void
populate(char *start, Size bytes)
{
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int			nthreads = (int) Max(1, Min(cores, POPULATE_THREADS_MAX));
	pthread_t	threads[POPULATE_THREADS_MAX];
	PopulateRange ranges[POPULATE_THREADS_MAX];
	bool		started[POPULATE_THREADS_MAX];
	Size		share = TYPEALIGN(sysconf(_SC_PAGESIZE), (bytes + nthreads - 1) / nthreads);

	for (int i = 0; i < nthreads; i++)
	{
		Size		offset = Min(share * i, bytes);

		ranges[i].start = start + offset;
		ranges[i].bytes = Min(share, bytes - offset);
		started[i] = pthread_create(&threads[i], NULL, populate_range, &ranges[i]) == 0;
		if (!started[i])
			populate_range(&ranges[i]);
	}
	for (int i = 0; i < nthreads; i++)
		if (started[i])
			pthread_join(threads[i], NULL);
}

/*
 * shared_buffers widened to whole pages of memory (before 16, BufferBlocks
 * is aligned only to 32 bytes): what madvise and the chunks cover.
 */
static char *
region_start(void)
{
	return (char *) TYPEALIGN_DOWN(sysconf(_SC_PAGESIZE), BufferBlocks);
}

static Size
region_bytes(void)
{
	return BufferBlocks + (Size) NBuffers * BLCKSZ - region_start();
}

/* Unregister the region's first `bytes`, registered before a failure. */
static void
unregister(Size bytes)
{
	for (Size offset = 0; offset < bytes; offset += REGISTER_CHUNK_BYTES)
		(void) gpu_host_unregister(region_start() + offset);
}

/*
 * Register shared_buffers chunk by chunk, and hand the GPU's address of
 * them to the job threads; false, with the failure's message, if CUDA
 * fails or a chunk's address on the GPU does not follow the one before.
 */
static bool
register_chunks(void)
{
	char	   *start = region_start();
	Size		total = region_bytes();
	Size		done = 0;
	char	   *on_device = NULL;

	while (done < total)
	{
		char	   *chunk = start + done;
		Size		bytes = Min(REGISTER_CHUNK_BYTES, total - done);
		char	   *address;

		if (gpu_host_register(chunk, bytes) != GPU_OK)
			break;
		done += bytes;
		if (gpu_host_device_pointer(chunk, &address) != GPU_OK)
			break;
		if (chunk == start)
			on_device = address;
		else if (address != on_device + (chunk - start))
		{
			snprintf(failure, sizeof(failure),
					 "shared_buffers are not at consecutive addresses on GPU %d.",
					 service->devices[service_serving_device].info.ordinal);
			unregister(done);
			return false;
		}
		pg_usleep(REGISTER_PAUSE_US);
	}
	if (done == total)
	{
		service_pool_set_buffers(on_device + (BufferBlocks - start));
		return true;
	}
	strlcpy(failure, gpu_last_error(), sizeof(failure));
	unregister(done);
	return false;
}

static void *
register_buffers(void *arg)
{
	struct timespec began;
	struct timespec populated;
	struct timespec ended;
	bool		ok;

	clock_gettime(CLOCK_MONOTONIC, &began);
	populate(region_start(), region_bytes());
	clock_gettime(CLOCK_MONOTONIC, &populated);
	ok = register_chunks();
	clock_gettime(CLOCK_MONOTONIC, &ended);
	populate_ms = ms_between(&began, &populated);
	register_ms = ms_between(&populated, &ended);
	pg_write_barrier();
	pg_atomic_write_u32(&registered, ok ? 1 : 2);
	pg_atomic_write_u32(&service->devices[service_serving_device].buffers_mapped, ok ? 1 : 0);
	service_wake_device(service_serving_device);
	service_thread_park();
}

void
service_buffers_start(void)
{
	pthread_t	thread;
	sigset_t	saved;

	pg_atomic_init_u32(&registered, 0);
	service_block_signals(&saved);
	/* never joined: it parks once done (service_thread_park) */
	started = pthread_create(&thread, NULL, register_buffers, NULL) == 0;
	service_restore_signals(&saved);
}

void
service_buffers_log(void)
{
	uint32		state = pg_atomic_read_u32(&registered);

	if (!started || state == 0)
		return;
	started = false;
	pg_read_barrier();
	if (state == 1)
		ereport(LOG,
				(errmsg("gputopk GPU service registered shared_buffers (%zu MB) with CUDA in %.0f ms",
						((size_t) NBuffers * BLCKSZ) >> 20, populate_ms + register_ms),
				 errdetail("Populating its pages took %.0f ms, registering them %.0f ms.",
						   populate_ms, register_ms)));
	else
		ereport(LOG,
				(errmsg("gputopk GPU service could not register shared_buffers with CUDA"),
				 errdetail("%s", failure)));
}
