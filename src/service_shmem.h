/*-------------------------------------------------------------------------
 *
 * service_shmem.h
 *	  The GPU service: a process per GPU of the server, and the shared
 *	  memory through which backends hand them work.
 *
 * The service exists when the library is in shared_preload_libraries
 * (service_shmem.c registers it).  Its first process (service_main.c)
 * looks for usable GPUs and starts a process for each, restarting one that
 * exits after a fault.  Each of those alone initialises CUDA for its GPU,
 * calibrates the engine's cost model there and registers PostgreSQL's main
 * shared memory segment with CUDA, so that its GPU copies from it by DMA
 * (service_unit.c).  It runs one thread per job slot of its own
 * (service_jobs.c): slot i belongs to the GPU i % ndevices.  A fault on
 * one GPU ends only that GPU's process; the others go on serving.
 *
 * A backend or parallel worker that has top-k work claims a job slot of a
 * GPU that is ready, describes the job and waits on its latch until that
 * GPU's process accepts it (service_client.c).  Each slot owns two staging
 * buffers in shared memory: the backend fills one while the GPU copies the
 * other.  Commands go one way (posted), completions the other (done): each
 * side bumps its counter and wakes the other, the backend by posting the
 * slot's semaphore, on which its job thread sleeps, the job thread by
 * setting the backend's latch.  Answers come back through the same
 * buffers, in chunks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_SHMEM_H
#define SERVICE_SHMEM_H

#include <semaphore.h>
#include <signal.h>

#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/condition_variable.h"

#include "gpu_heap.h"
#include "gpu_index.h"
#include "gpu_topk.h"
#include "service_protocol.h"

#define SERVICE_REASON_BYTES 512
#define SERVICE_MESSAGE_BYTES 512

/*
 * Faults a superuser can inject into the next job (gputopk_service_inject_fault);
 * a slow start is injected apart (ServiceShared.slow_start_ms).
 */
typedef enum ServiceFault
{
	SERVICE_FAULT_NONE,
	SERVICE_FAULT_OUT_OF_MEMORY,	/* the next job cannot get device memory */
	SERVICE_FAULT_DEVICE_ERROR, /* the next job on a GPU hits a sticky error */
	SERVICE_FAULT_EXIT			/* the next job's GPU process exits at its
								 * first batch */
} ServiceFault;

/*
 * A job slot's life.  The backend claims a free slot (FREE -> CLAIMED),
 * describes the job and submits it (SUBMITTED); the service's thread
 * accepts it (RUNNING) or cannot (FAILED).  The backend releases the slot
 * whenever it is done or gives up (RELEASED), and the service's thread,
 * once the GPU no longer reads its buffers, frees it (FREE).
 */
typedef enum SlotState
{
	SLOT_FREE,
	SLOT_CLAIMED,
	SLOT_SUBMITTED,
	SLOT_RUNNING,
	SLOT_FAILED,
	SLOT_RELEASED
} SlotState;

typedef enum SlotCommand
{
	SLOT_BATCH,					/* rows in a buffer (index: pages; pages:
								 * GpuHeapPages) */
	SLOT_PAGES_QUERY,			/* pages: the ServicePagesRequest in the buffers */
	SLOT_RECORDS,				/* page and index groups: groups' records in a
								 * buffer */
	SLOT_INDEX_SELECT,			/* index: a round's ServiceIndexRequest in the
								 * buffers; the answer's first chunk back */
	SLOT_INDEX_GROUPS,			/* index groups: a ServiceIndexGroupsRequest
								 * in the buffers */
	SLOT_RESULT,				/* the answer's first chunk into the buffers */
	SLOT_NEXT_CHUNK				/* its next chunk */
} SlotCommand;

typedef struct SlotOrder
{
	SlotCommand command;
	int			buffer;			/* SLOT_BATCH: 0 or 1 */
	uint64		rows;			/* SLOT_BATCH */
} SlotOrder;

typedef struct ServiceSlot
{
	pg_atomic_uint32 state;		/* a SlotState */
	sem_t		wake;			/* posted for the slot's job thread: its state changed */

	/* written by the backend before SUBMITTED */
	int			owner_procno;
	int			owner_pid;
	ServiceJobSpec spec;
	instr_time	submitted_at;

	/* written by the service before RUNNING or FAILED */
	uint32		generation;		/* of the GPU's process that accepted */
	double		queue_ms;		/* from SUBMITTED to accepted */
	uint64		index_epoch;	/* index: the epoch its copy is current as of, 0 none */

	/* orders: the backend writes orders[posted % 2], then bumps posted */
	SlotOrder	orders[2];
	pg_atomic_uint32 posted;
	pg_atomic_uint32 done;		/* bumped by the service as each completes */

	/* written by the service before it bumps done (or sets FAILED) */
	int			status;			/* a GpuStatus; GPU_OK while all is well */
	char		message[SERVICE_MESSAGE_BYTES];
	uint64		answer_rows;	/* the answer's rows, from SLOT_RESULT */
	uint64		chunk_rows;		/* rows in the buffers now */
	double		copy_ms;		/* the run's copies and kernels, from SLOT_RESULT */
	double		kernel_ms;
	GpuTopkPlan plan;			/* top-k: the last selection's */
	GpuIndexCounts index_counts;	/* index: what the last round read */
	uint64		rows_read;		/* pages: the tuples read, from SLOT_RESULT */
	uint64		rows_keyed;		/* and the rows that passed the filter */
	uint64		pages_cached;	/* and the pages read from the GPU's page cache, */
	uint64		pages_unpinned; /* of them those the backend did not pin, */
	uint64		pages_wal_vouched;	/* of those, the ones the WAL vouched for, */
	uint64		pages_wal_decided;	/* of those, the ones not all-visible */
	uint64		rows_settled;	/* the tuples whose headers settled visibility */
	uint64		rows_undecided; /* and the rows that passed left to the backend, */
	uint64		pages_undecided;	/* and the pages sent back undecided, */
	uint64		pages_unheld;	/* and those with text groups it cannot hold */
	uint64		groups;			/* page groups: the groups found, from SLOT_RESULT */
	uint64		returned[2];	/* pages: rows written back into each buffer by
								 * its last batch, the blocks it did not read
								 * (unpinned pages without a copy, pages sent
								 * back undecided) */
} ServiceSlot;

/* a GPU the service opened, its process, and what it did */
typedef struct ServiceDevice
{
	ServiceDeviceInfo info;
	pg_atomic_uint32 state;		/* its process's ServiceState */
	pg_atomic_uint32 generation;	/* bumped at each start of its process */
	int			pid;			/* its process's, 0 when none runs */
	int			procno;			/* its PGPROC, whose latch wakes it */
	pg_atomic_uint32 buffers_mapped;	/* shared_buffers readable by the GPU */
	pg_atomic_uint64 memory_free;	/* refreshed by its process */
	pg_atomic_uint64 page_cache_bytes;	/* its page cache's size, 0 for none */
	pg_atomic_uint32 wal_followed;	/* whether its process follows the WAL for
									 * the page cache (service_wal.c) */
	pg_atomic_uint64 index_bytes;	/* column index copies on it, and their count */
	pg_atomic_uint32 index_copies;
	pg_atomic_uint32 jobs_running;
	pg_atomic_uint64 jobs_done;
	pg_atomic_uint64 jobs_failed;
	pg_atomic_uint64 bytes_received;
	pg_atomic_uint64 copy_us;
	pg_atomic_uint64 kernel_us;
	pg_atomic_uint64 queue_us;
} ServiceDevice;

typedef struct ServiceShared
{
	pg_atomic_uint32 state;		/* the first process's: SERVICE_PROBING, then
								 * SERVICE_ABSENT or SERVICE_READY (the GPUs'
								 * processes run; service_state() says more) */
	char		reason[SERVICE_REASON_BYTES];	/* why SERVICE_ABSENT */
	ConditionVariable state_changed;	/* of the service or of a GPU */

	pg_atomic_uint32 fault;		/* a ServiceFault to inject into the next job */
	pg_atomic_uint32 fault_device;	/* a device error's GPU, by CUDA ordinal */
	pg_atomic_uint32 slow_start_ms; /* injected: the next start waits this long */

	int			ndevices;		/* set once, before SERVICE_READY */
	ServiceDevice devices[SERVICE_MAX_DEVICES];

	int			nslots;
	Size		buffer_bytes;	/* each of a slot's two staging buffers */
	Size		staging_offset; /* from this struct to the first buffer */
	ServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ServiceShared;

/* service_shmem.c */
extern ServiceShared *service;	/* NULL unless preloaded */
extern int	gputopk_service_jobs;
extern int	gputopk_service_buffer_kb;
extern int	gputopk_gpu_cache_mb;
extern int	gputopk_gpu_page_cache_mb;

/* in a GPU's process: its GPU, an index into service->devices */
extern int	service_serving_device;

extern char *service_buffer(int slot, int buffer);

/*
 * Every signal blocked in the calling thread, the mask before in *saved:
 * around starting a thread (CUDA's driver starts threads of its own too),
 * which inherits the mask, so that PostgreSQL's signals reach the main
 * thread only.
 */
extern void service_block_signals(sigset_t *saved);
extern void service_restore_signals(const sigset_t *saved);
extern ServiceState service_state(void);
extern ServiceState service_device_state(int device);
extern const char *service_state_name(ServiceState state);
extern void service_set_state(ServiceState state);
extern void service_set_device_state(int device, ServiceState state);
extern void service_wake_device(int device);
extern int	service_slot_device(int slot);
extern void service_wake_owner(ServiceSlot *slot);
extern void service_wake_job(ServiceSlot *slot);
extern void service_free_slot(ServiceSlot *slot);

/*
 * A service process's sleep on its latch, ms at most (it exits on SIGTERM
 * and reloads the configuration on SIGHUP), and the time since start.
 */
extern void service_process_wait(long ms);
extern double service_ms_since(instr_time start);

#endif							/* SERVICE_SHMEM_H */
