/*-------------------------------------------------------------------------
 *
 * service_protocol.h
 *	  What backends and the GPU service tell each other: the service's
 *	  state and GPUs, a job's kind and description, and the requests an
 *	  index or a pages job writes into its slot's buffers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_PROTOCOL_H
#define SERVICE_PROTOCOL_H


#include "compat.h"
#include "gpu_groups.h"
#include "gpu_heap.h"
#include "gpu_index.h"
#include "gpu_topk.h"

/* the most GPUs the service opens */
#define SERVICE_MAX_DEVICES 16

/* the service, or a GPU's process, as backends see it */
typedef enum ServiceState
{
	SERVICE_PROBING,			/* looking for GPUs (the state at server start) */
	SERVICE_STARTING,			/* GPUs found: contexts, registration, calibration */
	SERVICE_READY,				/* taking jobs */
	SERVICE_RESTARTING,			/* exited after a fault; it is started again */
	SERVICE_ABSENT				/* no usable GPU: reason says why */
} ServiceState;

/* what a job does: its kind and, for a top-k, its keys */
typedef enum ServiceJobKind
{
	SERVICE_JOB_TOPK,			/* keys in, the k largest with ordinals out */
	SERVICE_JOB_GROUPED,		/* (group, key) and payload rows in, each
								 * group's top k out (gpu_grouped.h) */
	SERVICE_JOB_INDEX,			/* a column index's changed pages in, each
								 * round's candidates out (gpu_index.h) */
	SERVICE_JOB_PAGES,			/* pinned heap pages of shared_buffers in, the
								 * k best rows' keys and TIDs out (gpu_heap.h) */
	SERVICE_JOB_PAGE_GROUPS,	/* the same pages in, and groups' records (the
								 * backend's own), the best groups' records out
								 * (gpu_groups.h) */
	SERVICE_JOB_INDEX_GROUPS	/* a column index's changed pages in, its
								 * entries grouped (gpu_index.h), then as a
								 * page groups job */
} ServiceJobKind;

typedef struct ServiceJobSpec
{
	ServiceJobKind kind;
	int			key_width;		/* top-k and pages: 4 or 8 */
	uint64		k;
	TopkMode	mode;			/* top-k and pages */
	GpuTopkAlgorithm algorithm; /* top-k and pages */
	RelFileLocator index_node; /* index: the index's relfilenode, */
	uint32		index_generation;	/* its entry in colindex_changes.c, */
	uint32		index_blocks;	/* and its size when the job starts */
	int			index_parts;	/* index: 1 for a whole copy, or the parts */
	int			index_part;		/* of a partitioned one, and this job's */
	uint32		record_bytes;	/* page groups: a group's record */
} ServiceJobSpec;

/*
 * A column index larger than one GPU's gputopk.gpu_cache_size is
 * partitioned over the GPUs, a part on each, each part's GPU serving a job
 * of its own: block b (b >= 1; block 0 is the metapage) lies in part
 * (b - 1) % nparts, at local block (b - 1) / nparts + 1, so that each part
 * looks to the kernels like an index of its own.  A part's job takes the
 * index's block numbers and positions (entries' TIDs in the index: block
 * << slot_bits | slot) and gives back candidates at their positions in
 * the index.
 */
static inline bool
index_part_holds(uint32 block, int part, int nparts)
{
	return nparts == 1 || (block != 0 && (int) ((block - 1) % nparts) == part);
}

static inline uint32
index_part_block(uint32 block, int nparts)
{
	return nparts == 1 ? block : (block - 1) / nparts + 1;
}

/* A part's local blocks below the index's nblocks (its local block 0 unused). */
static inline uint32
index_part_nblocks(uint32 nblocks, int part, int nparts)
{
	if (nparts == 1)
		return nblocks;
	if (nblocks <= 1 + (uint32) part)
		return 1;
	return (nblocks - 2 - part) / nparts + 2;
}

/* An entry's position in the index, from its position in a part. */
static inline uint64
index_part_global_position(uint64 position, int part, int nparts, int slot_bits)
{
	uint64		local = position >> slot_bits;

	if (nparts == 1)
		return position;
	return (((local - 1) * nparts + part + 1) << slot_bits) |
		(position & ((UINT64CONST(1) << slot_bits) - 1));
}

/*
 * An index job's pages in a buffer: pages, then their block numbers.  Its
 * SLOT_INDEX_SELECT request, at the start of the slot's two buffers (which
 * lie one after the other): this header, then the filter's set values,
 * then the positions tied at the threshold that earlier rounds fetched.
 */
#define SERVICE_INDEX_PAGES(buffer_bytes) ((buffer_bytes) / (BLCKSZ + sizeof(uint32)))

typedef struct ServiceIndexRequest
{
	uint64		epoch;			/* the copy is current as of this epoch */
	uint64		nset_values;
	uint64		ntied;
	GpuIndexQuery query;
} ServiceIndexRequest;

/*
 * An index groups job's SLOT_INDEX_GROUPS request, at the start of the
 * slot's two buffers: this header, then the filter's set values, then the
 * bitmap of the table's blocks whose rows are all visible (64 a word).
 * Each such request groups the entries anew.
 */
typedef struct ServiceIndexGroupsRequest
{
	uint64		epoch;			/* the copy is current as of this epoch */
	uint64		nset_values;
	uint32		heap_blocks;	/* the bitmap's blocks */
	GpuIndexQuery query;		/* the pages and the filter */
	GpuGroupsSpec groups;		/* over the index's columns */
	uint64		expected_groups;	/* the planner's estimate */
} ServiceIndexGroupsRequest;

/*
 * A pages job's SLOT_PAGES_QUERY request, at the start of the slot's two
 * buffers: this header, then the filter's set values.  Its batches are
 * GpuHeapPages, each page pinned by the backend until the batch is done,
 * or unpinned, vouched for by the visibility map: the blocks of those the
 * GPU's page cache has no current copy of come back at the buffer's start
 * (returned).  A page groups job's request has its groups too (its
 * program's key is unused); its SLOT_RECORDS batches are groups' records.
 */
#define SERVICE_HEAP_PAGES(buffer_bytes) ((buffer_bytes) / sizeof(GpuHeapPage))

typedef struct ServicePagesRequest
{
	uint64		nset_values;
	GpuHeapQuery query;
	GpuGroupsSpec groups;		/* page groups: */
	uint64		expected_groups;	/* and the planner's estimate of them */
} ServicePagesRequest;

/* a GPU the service opened, as it tells backends (gputopk_devices()) */
typedef struct ServiceDeviceInfo
{
	int			ordinal;		/* CUDA's */
	char		name[256];
	uint64		memory_bytes;
	int			multiprocessors;
	int			cc_major;
	int			cc_minor;
} ServiceDeviceInfo;

/*
 * How the service comes to be: _PG_init asks for its settings, shared
 * memory and worker (service_shmem.c).
 */
extern void service_init(void);

#endif							/* SERVICE_PROTOCOL_H */
