/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The gputopk.* settings that planning and scans read, and their
 *	  definitions.
 *
 * gputopk.device is device.c's, and the GPU service's settings, fixed at
 * server start, are service_shmem.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "postmaster/bgworker_internals.h"
#include "utils/guc.h"

#include "gpu_topk.h"
#include "settings.h"

bool		gputopk_enabled = true;
bool		gputopk_enable_column_index = true;
bool		gputopk_gpu_pages = true;
int			gputopk_min_table_rows = 10000;
int			gputopk_max_parallel_workers = -1;
int			gputopk_algorithm = GPU_TOPK_AUTO;

static const struct config_enum_entry algorithm_options[] = {
	{"auto", GPU_TOPK_AUTO, false},
	{"bitonic", GPU_TOPK_BITONIC, false},
	{"radix", GPU_TOPK_RADIX, false},
	{NULL, 0, false}
};

/* Define the settings (at _PG_init). */
void
settings_define(void)
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
							 "Lets GpuTopK's GPU read a table's pages in place in shared_buffers.",
							 "When off, or where the GPU cannot read a page, the scan's processes read its rows on the CPU.",
							 &gputopk_gpu_pages,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

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
							"up to this; -1 takes max_parallel_workers_per_gather.  No scan is planned in "
							"parallel while max_parallel_workers_per_gather is 0.",
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
}
