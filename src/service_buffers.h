/*-------------------------------------------------------------------------
 *
 * service_buffers.h
 *	  shared_buffers registered with CUDA by a thread of the GPU service
 *	  (service_buffers.c), so that kernels read heap pages in place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_BUFFERS_H
#define SERVICE_BUFFERS_H

/* Start the thread that registers them, once the service is ready. */
extern void service_buffers_start(void);

/* Whether the thread is done (or never started): registered, or failed. */
extern bool service_buffers_settled(void);

/*
 * After a GPU's reset, its address of shared_buffers found again, the GPU
 * current (the main thread); false, and pages jobs go to the other GPUs,
 * where CUDA no longer maps them there (gpu_last_error says why).
 */
extern bool service_buffers_remap(int device);

/* Once, in the main thread: the registration's outcome in the server log. */
extern void service_buffers_log(void);

#endif							/* SERVICE_BUFFERS_H */
