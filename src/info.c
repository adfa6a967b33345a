/*-------------------------------------------------------------------------
 *
 * info.c
 *	  SQL functions that describe the build and the devices:
 *	  gputopk_version() and gputopk_devices().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "device.h"

/* keep in step with default_version in gputopk.control */
#define GPUTOPK_VERSION "0.3"

PG_FUNCTION_INFO_V1(gputopk_version);
PG_FUNCTION_INFO_V1(gputopk_devices);

#define DEVICES_COLUMNS 7

Datum
gputopk_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("gputopk %s (%s)",
											  GPUTOPK_VERSION,
											  gpu_build_description())));
}

/* The processor's model name from /proc/cpuinfo, or "CPU". */
static char *
cpu_model_name(void)
{
	FILE	   *f = fopen("/proc/cpuinfo", "r");
	char		line[512];
	char	   *name = NULL;

	if (f == NULL)
		return pstrdup("CPU");
	while (name == NULL && fgets(line, sizeof(line), f) != NULL)
	{
		char	   *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && colon != NULL)
			name = pstrdup(colon + 1);
	}
	fclose(f);
	if (name == NULL)
		return pstrdup("CPU");
	return pchomp(name + strspn(name, " \t"));
}

static void
put_cpu_row(Tuplestorestate *store, TupleDesc desc, bool selected)
{
	Datum		values[DEVICES_COLUMNS];
	bool		nulls[DEVICES_COLUMNS] = {true, false, false, false, false, true, false};
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);

	values[1] = CStringGetTextDatum("cpu");
	values[2] = CStringGetTextDatum(cpu_model_name());
	values[3] = Int64GetDatum((int64) pages * page_size);
	values[4] = Int32GetDatum((int32) sysconf(_SC_NPROCESSORS_ONLN));
	values[6] = BoolGetDatum(selected);
	nulls[3] = (pages <= 0 || page_size <= 0);
	tuplestore_putvalues(store, desc, values, nulls);
}

/* The GPUs of the GPU service; none without it. */
static void
put_gpu_rows(Tuplestorestate *store, TupleDesc desc, bool selected)
{
	ServiceDeviceInfo *devices;
	int			ndevices;

	if (!service_gpu_usable())
		return;
	ndevices = service_devices(&devices);
	for (int d = 0; d < ndevices; d++)
	{
		const ServiceDeviceInfo *dev = &devices[d];
		Datum		values[DEVICES_COLUMNS];
		bool		nulls[DEVICES_COLUMNS] = {0};

		values[0] = Int32GetDatum(dev->ordinal);
		values[1] = CStringGetTextDatum("cuda");
		values[2] = CStringGetTextDatum(dev->name);
		values[3] = Int64GetDatum((int64) dev->memory_bytes);
		values[4] = Int32GetDatum(dev->multiprocessors);
		values[5] = CStringGetTextDatum(psprintf("%d.%d", dev->cc_major, dev->cc_minor));
		values[6] = BoolGetDatum(selected);
		tuplestore_putvalues(store, desc, values, nulls);
	}
}

/*
 * One row per GPU of the GPU service and one for the CPU backend;
 * "selected" marks where top-k work runs under the current gputopk.device:
 * the service's GPUs, which share the work, or the CPU (no row when the
 * GPU is demanded but none is usable).
 */
Datum
gputopk_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TopkBackend backend;

	InitMaterializedSRF(fcinfo, 0);
	backend = device_selected_backend();
	put_gpu_rows(rsinfo->setResult, rsinfo->setDesc, backend == BACKEND_GPU);
	put_cpu_row(rsinfo->setResult, rsinfo->setDesc, backend == BACKEND_CPU);
	return (Datum) 0;
}
