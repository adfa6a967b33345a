/*-------------------------------------------------------------------------
 *
 * scan_double_buffer.h
 *	  Two host buffers that carry a sink's batches to the GPU: one is
 *	  filled while the other is copied.
 *
 * The sink fills the current buffer, up to its capacity in items, and
 * hands it over when it is full (and at the end).  Handing over queues the
 * buffer's copy (the consumer's push) and makes the other buffer current,
 * first waiting for the copy of that one (the consumer's wait): so the scan
 * overlaps the copies and kernels, and a buffer is never refilled while the
 * GPU may still read it.  The buffers belong to the memory context that is
 * current at scan_double_buffer_init and go with it, errors included, once
 * the device is done with them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_DOUBLE_BUFFER_H
#define SCAN_DOUBLE_BUFFER_H

#include "gpu_api.h"
#include "scan_gpu_stats.h"

/* Where a double buffer's full buffers go: a sink's GPU top-k. */
typedef struct DoubleBufferConsumer
{
	/* Queue the copy of a buffer's first n items, which stay unchanged until wait returns. */
	GpuStatus	(*push) (void *gpu, const void *buffer, size_t n);
	/* Wait until the copies queued so far are done. */
	GpuStatus	(*wait) (void *gpu);
	const char *action;			/* what failed, for errors: "copy keys to the GPU" */
} DoubleBufferConsumer;

typedef struct ScanDoubleBuffer
{
	void	   *current;		/* the buffer being filled */
	size_t		capacity;		/* its size in items */

	/* private to scan_double_buffer.c */
	void	   *buffers[2];
	size_t		item_bytes;
	int			filling;		/* which of buffers is current */
	bool		copying;		/* the other buffer may still be copied */
	const DoubleBufferConsumer *consumer;
	void	   *gpu;
	ScanGpuStats *stats;		/* the bytes handed over and the waits go here */
} ScanDoubleBuffer;

extern void scan_double_buffer_init(ScanDoubleBuffer *buffer, size_t capacity,
									size_t item_bytes,
									const DoubleBufferConsumer *consumer, void *gpu,
									ScanGpuStats *stats);

/* Hand over the current buffer, holding n items; the other one is current after. */
extern void scan_double_buffer_hand_over(ScanDoubleBuffer *buffer, size_t n);

#endif							/* SCAN_DOUBLE_BUFFER_H */
