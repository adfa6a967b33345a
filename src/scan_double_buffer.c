/*-------------------------------------------------------------------------
 *
 * scan_double_buffer.c
 *	  Two host buffers that carry a sink's batches to the GPU: one is
 *	  filled while the other is copied.
 *
 * The buffers are pinned (page-locked) host memory from the backend's pool
 * (device.h), so that the copies run asynchronously at full speed.  Their
 * memory-context callbacks wait for the device before a buffer goes back
 * to the pool; registered after the sink's own callback, they run before
 * it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"

#include "device.h"
#include "scan_double_buffer.h"

void
scan_double_buffer_init(ScanDoubleBuffer *buffer, size_t capacity, size_t item_bytes,
						const DoubleBufferConsumer *consumer, void *gpu,
						ScanGpuStats *stats)
{
	for (int i = 0; i < 2; i++)
		buffer->buffers[i] = device_pinned_acquire(CurrentMemoryContext,
												   capacity * item_bytes)->ptr;
	buffer->filling = 0;
	buffer->current = buffer->buffers[0];
	buffer->capacity = capacity;
	buffer->item_bytes = item_bytes;
	buffer->copying = false;
	buffer->consumer = consumer;
	buffer->gpu = gpu;
	buffer->stats = stats;
}

void
scan_double_buffer_hand_over(ScanDoubleBuffer *buffer, size_t n)
{
	const DoubleBufferConsumer *consumer = buffer->consumer;
	instr_time	start;

	/*
	 * The other buffer is about to be filled: its copy must be over.  That
	 * is waited for before this one's copy is queued, which the wait would
	 * include.
	 */
	INSTR_TIME_SET_CURRENT(start);
	if (buffer->copying)
		device_check_timed(consumer->wait(buffer->gpu), start, &buffer->stats->wait_ms,
						   consumer->action);
	device_check(consumer->push(buffer->gpu, buffer->current, n), consumer->action);
	buffer->stats->bytes_shipped += n * buffer->item_bytes;
	buffer->copying = true;
	buffer->filling = 1 - buffer->filling;
	buffer->current = buffer->buffers[buffer->filling];
}
