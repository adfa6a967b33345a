/*-------------------------------------------------------------------------
 *
 * colindex_changes.h
 *	  Which pages of a column index changed, and when: what the GPU
 *	  service's copy of the index needs to be brought up to date.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_CHANGES_H
#define COLINDEX_CHANGES_H

#include "storage/block.h"
#include "utils/relcache.h"

typedef enum ChangesSince
{
	CHANGES_LISTED,				/* the blocks changed since then */
	CHANGES_ALL,				/* too long ago to list: every block */
	CHANGES_UNTRACKED			/* the index's changes are no longer recorded */
} ChangesSince;

extern Size colindex_changes_shmem_size(void);
extern void colindex_changes_shmem_request(void);
extern void colindex_changes_shmem_init(void);

extern void colindex_changes_note(Relation index, BlockNumber block);
extern void colindex_changes_forget(Relation index);
extern bool colindex_changes_track(Relation index, uint32 *generation);
extern ChangesSince colindex_changes_since(Relation index, uint32 generation, uint64 since,
										   uint64 *now, BlockNumber **blocks, int *nblocks);

#endif							/* COLINDEX_CHANGES_H */
