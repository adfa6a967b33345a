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

/* Once, in the main thread: the registration's outcome in the server log. */
extern void service_buffers_log(void);

#endif							/* SERVICE_BUFFERS_H */
