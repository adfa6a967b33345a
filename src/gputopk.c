/*-------------------------------------------------------------------------
 *
 * gputopk.c
 *	  Module entry point of gputopk: the gputopk.* settings.
 *
 * _PG_init runs in the postmaster under shared_preload_libraries and in a
 * backend under session_preload_libraries or LOAD.  It defines settings,
 * installs the planner hooks and, when preloaded, asks for the GPU service
 * (service_shmem.c).  It never touches CUDA: only the GPU service does, in
 * its own process, because a process forked from one that touched CUDA
 * cannot use it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker_internals.h"
#include "utils/guc.h"

#include "agg_scan.h"
#include "device.h"
#include "gpu_topk.h"
#include "gputopk.h"
#include "service.h"
#include "topk_scan.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

bool		gputopk_enabled = true;
bool		gputopk_enable_column_index = true;
bool		gputopk_gpu_pages = true;
int			gputopk_device = DEVICE_SETTING_AUTO;
int			gputopk_min_table_rows = 10000;
int			gputopk_max_parallel_workers = -1;
int			gputopk_algorithm = GPU_TOPK_AUTO;

static const struct config_enum_entry device_options[] = {
	{"auto", DEVICE_SETTING_AUTO, false},
	{"gpu", DEVICE_SETTING_GPU, false},
	{"cpu", DEVICE_SETTING_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry algorithm_options[] = {
	{"auto", GPU_TOPK_AUTO, false},
	{"bitonic", GPU_TOPK_BITONIC, false},
	{"radix", GPU_TOPK_RADIX, false},
	{NULL, 0, false}
};

/*
 * An interactive "SET gputopk.device = gpu" fails at once where no GPU is
 * usable.  Settings from configuration files, ALTER ROLE/DATABASE checks and
 * parallel workers restoring the leader's settings are not probed (the
 * postmaster must never touch CUDA); they fail at first use instead.
 */
static bool
check_device(int *newval, void **extra, GucSource source)
{
	if (*newval != DEVICE_SETTING_GPU ||
		source < PGC_S_INTERACTIVE || source == PGC_S_TEST ||
		!IsUnderPostmaster || MyBackendType != B_BACKEND ||
		IsParallelWorker())
		return true;

	if (device_gpu_usable())
		return true;

	GUC_check_errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
	GUC_check_errmsg(DEVICE_NO_GPU_MESSAGE);
	GUC_check_errdetail("%s", device_gpu_absent_reason());
	GUC_check_errhint(DEVICE_NO_GPU_HINT);
	return false;
}

void
_PG_init(void)
{
	DefineCustomBoolVariable("gputopk.enabled",
							 "Enables gputopk's top-k plans and aggregates.",
							 "When off, queries run exactly as in plain PostgreSQL.",
							 &gputopk_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gputopk.enable_column_index",
							 "Lets GpuTopK read a gputopk column index instead of the table.",
							 "When off, GpuTopK reads the table's rows even where a column index holds the ranking key.",
							 &gputopk_enable_column_index,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gputopk.gpu_pages",
							 "Lets GpuTopK's GPU read a table's all-visible pages in place in shared_buffers.",
							 "When off, or where the GPU cannot read a page, the scan's processes read its rows on the CPU.",
							 &gputopk_gpu_pages,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gputopk.device",
							 "Where gputopk runs top-k work.",
							 "auto uses the GPU when one is usable and the CPU backend otherwise; "
							 "gpu demands a GPU; cpu always uses the CPU backend.",
							 &gputopk_device,
							 DEVICE_SETTING_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 check_device, NULL, NULL);

	DefineCustomIntVariable("gputopk.min_table_rows",
							"Tables with fewer rows than this keep PostgreSQL's own plans (top-k and GROUP BY).",
							"The planner's estimate of the table's rows is compared.",
							&gputopk_min_table_rows,
							10000,
							0,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gputopk.max_parallel_workers",
							"The most parallel workers a GpuTopK or GpuTopKAgg scan asks for.",
							"A scan asks for one worker per four times min_parallel_table_scan_size of table, "
							"up to this; -1 takes max_parallel_workers.  No scan is planned in parallel "
							"while max_parallel_workers_per_gather is 0.",
							&gputopk_max_parallel_workers,
							-1,
							-1,
							MAX_PARALLEL_WORKER_LIMIT,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gputopk.algorithm",
							 "The GPU top-k algorithm of GpuTopK scans.",
							 "auto lets the cost model choose by the number of keys, k and the key width; "
							 "bitonic is used up to k = 256 and radix above.",
							 &gputopk_algorithm,
							 GPU_TOPK_AUTO,
							 algorithm_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	service_init();
	MarkGUCPrefixReserved("gputopk");
	topk_path_init();
	topk_agg_path_init();
}
