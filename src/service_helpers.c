/*-------------------------------------------------------------------------
 *
 * service_helpers.c
 *	  Threads of the GPU service that run pieces of one job at once: the
 *	  parts of a column index partitioned over the GPUs, each selected on
 *	  its own GPU while the job's thread selects the first
 *	  (service_index.c).
 *
 * A job queues its other pieces for the helpers and runs the first itself;
 * then, piece by piece, it takes back one that no helper has started and
 * runs it too, or waits for the helper that runs it.  So a job never waits
 * for a helper to be free: with every helper busy, it runs its pieces one
 * after the other, as it would alone.  Like the job threads (service_jobs.c),
 * a helper sets up CUDA's state on every GPU before the service is ready
 * and blocks every signal; it never exits (service_thread_park), waiting
 * for pieces until the process ends.
 *
 * Called by the job threads: no elog, no palloc.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>

#include "port/atomics.h"

#include "service_helpers.h"
#include "service_shmem.h"

typedef enum PieceState
{
	PIECE_QUEUED,				/* for a helper to take */
	PIECE_TAKEN,				/* run by a helper, or taken back */
	PIECE_DONE					/* by a helper */
} PieceState;

typedef struct Piece
{
	ServicePiece run;
	void	   *arg;
	PieceState	state;			/* under lock */
	struct Piece *next;			/* in the queue */
	GpuStatus	status;
	char		message[SERVICE_MESSAGE_BYTES];
} Piece;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;	/* a piece queued */
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;	/* a helper's piece done */
static Piece *queue;			/* the pieces no helper has taken */
static int	nhelpers;
static pg_atomic_uint32 helpers_ready;

/* Run a piece here, keeping its failure's message. */
static void
run_piece(Piece *p)
{
	p->message[0] = '\0';
	p->status = p->run(p->arg, p->message);
	if (p->status != GPU_OK && p->message[0] == '\0')
		strlcpy(p->message, gpu_last_error(), sizeof(p->message));
}

static void *
helper_main(void *arg)
{
	/* CUDA's state for this thread on every GPU, before the service is ready */
	for (int d = 0; d < service->ndevices; d++)
		(void) gpu_set_device(service->devices[d].info.ordinal);
	pg_atomic_fetch_add_u32(&helpers_ready, 1);
	pthread_mutex_lock(&lock);
	for (;;)
	{
		Piece	   *p;

		while (queue == NULL)
			pthread_cond_wait(&queued, &lock);
		p = queue;
		queue = p->next;
		p->state = PIECE_TAKEN;
		pthread_mutex_unlock(&lock);
		run_piece(p);
		pthread_mutex_lock(&lock);
		p->state = PIECE_DONE;
		pthread_cond_broadcast(&finished);
	}
	return NULL;
}

int
service_helpers_start(int n)
{
	sigset_t	saved;
	int			started = 0;

	pg_atomic_init_u32(&helpers_ready, 0);
	/* PostgreSQL's signals are for the main thread */
	service_block_signals(&saved);
	for (int i = 0; i < n; i++)
	{
		pthread_t	thread;

		if (pthread_create(&thread, NULL, helper_main, NULL) == 0)
			started++;
	}
	service_restore_signals(&saved);
	while (pg_atomic_read_u32(&helpers_ready) < (uint32) started)
		pg_usleep(1000L);
	pthread_mutex_lock(&lock);
	nhelpers = started;
	pthread_mutex_unlock(&lock);
	return started;
}

/* Take a queued piece back from the queue; false where a helper took it.  Under lock. */
static bool
take_back(Piece *p)
{
	for (Piece **at = &queue; *at != NULL; at = &(*at)->next)
		if (*at == p)
		{
			*at = p->next;
			p->state = PIECE_TAKEN;
			return true;
		}
	return false;
}

GpuStatus
service_helpers_run(ServicePiece piece, void **args, int n, char *message)
{
	Piece		pieces[SERVICE_MAX_DEVICES];
	bool		helped;

	Assert(n >= 1 && n <= SERVICE_MAX_DEVICES);
	pthread_mutex_lock(&lock);
	helped = nhelpers > 0;
	for (int i = 0; i < n; i++)
	{
		pieces[i].run = piece;
		pieces[i].arg = args[i];
		pieces[i].state = PIECE_TAKEN;
		if (i > 0 && helped)
		{
			pieces[i].state = PIECE_QUEUED;
			pieces[i].next = queue;
			queue = &pieces[i];
		}
	}
	if (helped && n > 1)
		pthread_cond_broadcast(&queued);
	pthread_mutex_unlock(&lock);

	run_piece(&pieces[0]);
	for (int i = 1; i < n; i++)
	{
		bool		mine;

		pthread_mutex_lock(&lock);
		mine = !helped || take_back(&pieces[i]);
		if (!mine)
			while (pieces[i].state != PIECE_DONE)
				pthread_cond_wait(&finished, &lock);
		pthread_mutex_unlock(&lock);
		if (mine)
			run_piece(&pieces[i]);
	}

	for (int i = 0; i < n; i++)
		if (pieces[i].status != GPU_OK)
		{
			strlcpy(message, pieces[i].message, SERVICE_MESSAGE_BYTES);
			return pieces[i].status;
		}
	return GPU_OK;
}
