/*-------------------------------------------------------------------------
 *
 * gputopk.c
 *	  Module entry point of gputopk.
 *
 * _PG_init runs in the postmaster under shared_preload_libraries and in a
 * backend under session_preload_libraries or LOAD.  It defines settings
 * (settings.c, device.c), installs the planner hooks (topk_path.c,
 * agg_path.c, groups_path.c), registers the column index's storage
 * parameter (colindex_cluster.c) and, when preloaded, asks for the GPU service
 * (service_shmem.c).  It never touches CUDA: only the GPU service does, in
 * its own process, because a process forked from one that touched CUDA
 * cannot use it.  Nothing calls into this file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "agg_path.h"
#include "colindex_cluster.h"
#include "device.h"
#include "groups_path.h"
#include "service_client.h"
#include "settings.h"
#include "topk_path.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	settings_define();
	device_define_setting();
	service_init();
	MarkGUCPrefixReserved("gputopk");
	topk_path_init();
	agg_path_init();
	groups_path_init();
	colindex_cluster_define_option();
}
