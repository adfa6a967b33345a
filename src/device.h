/*-------------------------------------------------------------------------
 *
 * device.h
 *	  Where top-k work runs: the GPU, through the GPU service, or the CPU
 *	  backend, as gputopk.device says.
 *
 *-------------------------------------------------------------------------
 */
#ifndef DEVICE_H
#define DEVICE_H

#include "service_client.h"

/* values of gputopk.device */
typedef enum DeviceSetting
{
	DEVICE_SETTING_AUTO,
	DEVICE_SETTING_GPU,
	DEVICE_SETTING_CPU
} DeviceSetting;

extern int	gputopk_device;		/* a DeviceSetting */

typedef enum TopkBackend
{
	BACKEND_CPU,
	BACKEND_GPU,
	BACKEND_NONE				/* the GPU is demanded but none is usable */
} TopkBackend;

/* The error when the GPU is demanded and none is usable (SET or first use). */
#define DEVICE_NO_GPU_MESSAGE "no GPU is usable for gputopk.device = gpu"
#define DEVICE_NO_GPU_HINT \
	"Set gputopk.device to \"auto\" to use the CPU backend when there is no GPU."

extern void device_define_setting(void);

/* Where top-k work would run now; never throws. */
extern TopkBackend device_selected_backend(void);

/* The same, for work about to start: errors when the GPU is demanded and absent. */
extern TopkBackend device_choose_backend(void);

/*
 * A GPU job for a scan process, or NULL for the CPU backend: under auto
 * whenever the GPU is not at hand (no service, not ready, no free slot,
 * a job it could not start); under gpu it waits, or throws.  Without
 * wait_for_slot, NULL also under gpu when every slot is taken.
 */
extern ServiceJob *device_start_job(const ServiceJobSpec *spec, bool wait_for_slot);

/* Whether gputopk.device demands the GPU. */
extern bool device_gpu_demanded(void);

extern const char *device_backend_name(TopkBackend backend);

#endif							/* DEVICE_H */
