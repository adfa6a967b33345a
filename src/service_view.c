/*-------------------------------------------------------------------------
 *
 * service_view.c
 *	  SQL functions of the GPU service: gputopk_service(), what it does on
 *	  each GPU, and gputopk_service_inject_fault(), for the fault tests.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "service_shmem.h"

PG_FUNCTION_INFO_V1(gputopk_service);
PG_FUNCTION_INFO_V1(gputopk_service_inject_fault);

/* the columns of gputopk_service before 0.3, and since */
#define SERVICE_COLUMNS_0_1 13
#define SERVICE_COLUMNS 16

/*
 * One row per GPU of the service: its name, the state of its process and
 * that process, the GPU's memory, the jobs it ran with their bytes and times,
 * and since 0.3 its page cache and the column index copies it holds.  No row without a service or a GPU.  The
 * library of a newer version serves the function of an older one (before
 * ALTER EXTENSION gputopk UPDATE) with the columns that one has.
 */
Datum
gputopk_service(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ServiceState state;
	int			ncolumns;

	InitMaterializedSRF(fcinfo, 0);
	ncolumns = rsinfo->setDesc->natts;
	if (ncolumns != SERVICE_COLUMNS_0_1 && ncolumns != SERVICE_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gputopk_service() has %d columns, which this library does not know",
						ncolumns),
				 errhint("Run ALTER EXTENSION gputopk UPDATE.")));
	if (service == NULL)
		return (Datum) 0;
	state = service_state();
	if (state == SERVICE_ABSENT)
		return (Datum) 0;
	for (int d = 0; d < service->ndevices; d++)
	{
		ServiceDevice *dev = &service->devices[d];
		Datum		values[SERVICE_COLUMNS];
		bool		nulls[SERVICE_COLUMNS] = {0};
		uint64		memory_free = pg_atomic_read_u64(&dev->memory_free);

		values[0] = Int32GetDatum(dev->info.ordinal);
		values[1] = CStringGetTextDatum(dev->info.name);
		values[2] = CStringGetTextDatum(service_state_name(service_device_state(d)));
		values[3] = Int32GetDatum(dev->pid);
		nulls[3] = dev->pid == 0;
		values[4] = Int64GetDatum((int64) (dev->info.memory_bytes - Min(memory_free, dev->info.memory_bytes)));
		values[5] = Int64GetDatum((int64) memory_free);
		values[6] = Int32GetDatum((int32) pg_atomic_read_u32(&dev->jobs_running));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->jobs_done));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->jobs_failed));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->bytes_received));
		values[10] = Float8GetDatum(pg_atomic_read_u64(&dev->copy_us) / 1000.0);
		values[11] = Float8GetDatum(pg_atomic_read_u64(&dev->kernel_us) / 1000.0);
		values[12] = Float8GetDatum(pg_atomic_read_u64(&dev->queue_us) / 1000.0);
		values[13] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->page_cache_bytes));
		values[14] = Int32GetDatum((int32) pg_atomic_read_u32(&dev->index_copies));
		values[15] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->index_bytes));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * Make the service fail on purpose, once: 'out_of_memory' (the next job
 * gets no device memory), 'device_error' (the next job on GPU arg, by CUDA
 * ordinal, meets a sticky error there, and that GPU's process restarts),
 * 'exit' (the process of the next job's GPU exits at its first batch),
 * 'slow_start' (the next start of a GPU's process waits arg milliseconds
 * before it is ready, whatever else is injected), or 'none' (clears them
 * all).
 * Superusers only (and not granted to PUBLIC).
 */
Datum
gputopk_service_inject_fault(PG_FUNCTION_ARGS)
{
	char	   *fault = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		arg = PG_GETARG_INT32(1);
	ServiceFault value = SERVICE_FAULT_NONE;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to inject faults into the GPU service")));
	if (arg < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the fault's argument must not be negative")));
	if (strcmp(fault, "none") == 0)
		value = SERVICE_FAULT_NONE;
	else if (strcmp(fault, "out_of_memory") == 0)
		value = SERVICE_FAULT_OUT_OF_MEMORY;
	else if (strcmp(fault, "device_error") == 0)
		value = SERVICE_FAULT_DEVICE_ERROR;
	else if (strcmp(fault, "exit") == 0)
		value = SERVICE_FAULT_EXIT;
	else if (strcmp(fault, "slow_start") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown fault \"%s\"", fault),
				 errhint("The faults are none, out_of_memory, device_error, exit and slow_start.")));
	if (service == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the GPU service is not running"),
				 errdetail("It runs only when gputopk is in shared_preload_libraries.")));
	if (strcmp(fault, "slow_start") == 0)
		pg_atomic_write_u32(&service->slow_start_ms, (uint32) arg);
	else
	{
		pg_atomic_write_u32(&service->fault_device, value == SERVICE_FAULT_DEVICE_ERROR ? arg : 0);
		if (value == SERVICE_FAULT_NONE)
			pg_atomic_write_u32(&service->slow_start_ms, 0);
		pg_atomic_write_u32(&service->fault, value);
	}
	PG_RETURN_VOID();
}
