/*-------------------------------------------------------------------------
 *
 * colindex_changes.c
 *	  Which pages of each column index changed, and when, in shared memory:
 *	  the GPU service's copy of an index is brought up to date with only
 *	  those pages.
 *
 * An index gets an entry here when a query first wants it on the GPU
 * (colindex_changes_track).  From then on each change of one of its pages
 * (an entry added, a slot freed by VACUUM) bumps the entry's epoch and
 * records the block with it, while the page is still locked exclusively
 * (colindex_changes_note).  A query that finds the service's copy current
 * as of epoch e reads the current epoch n and the blocks recorded after e
 * (colindex_changes_since), then sends those pages, each read under a
 * share lock: every change up to n was made before that lock was taken,
 * so the copy is then current as of n.  Marks of dead entries are hints
 * and are not recorded; a copy without them only fetches more candidates.
 *
 * The records of an entry form a ring: a change of the block recorded
 * last only moves that record's epoch, and a copy older than the records
 * the ring has lost is sent whole (CHANGES_ALL).  An entry belongs to a
 * relfilenode and carries a generation, unique for the life of the shared
 * memory: building an index forgets its relfilenode's entry, a full table
 * of entries gives up the one used longest ago, and the service drops a
 * copy of an older generation.  Changes are recorded by the processes that
 * make them, so a standby (where replay changes pages) reads its indexes
 * on the CPU.  The entries exist only when gputopk is preloaded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/qunique.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/rel.h"

#include "colindex_changes.h"
#include "compat.h"


#define CHANGES_SHMEM_NAME "gputopk column index changes"
#define CHANGES_ENTRIES 64
#define CHANGES_RING 1024

typedef struct ChangeRecord
{
	BlockNumber block;
	uint64		epoch;
} ChangeRecord;

typedef struct ChangeEntry
{
	bool		in_use;
	RelFileLocator node;
	uint32		generation;
	uint64		last_used;		/* the table's clock when last tracked */
	slock_t		mutex;			/* the fields below */
	uint64		epoch;			/* of the last change */
	uint64		lost_epoch;		/* the newest epoch the ring has lost */
	uint64		nrecords;		/* ever written; record i is ring[i % CHANGES_RING] */
	ChangeRecord ring[CHANGES_RING];
} ChangeEntry;

typedef struct ChangeTable
{
	LWLock	   *lock;			/* the entries' identities: exclusive to change them */
	uint32		next_generation;
	pg_atomic_uint64 clock;
	ChangeEntry entries[CHANGES_ENTRIES];
} ChangeTable;

static ChangeTable *changes = NULL;

static int
block_compare(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

Size
colindex_changes_shmem_size(void)
{
	return sizeof(ChangeTable);
}

void
colindex_changes_shmem_request(void)
{
	RequestNamedLWLockTranche(CHANGES_SHMEM_NAME, 1);
}

/* In the shared memory startup hook, under AddinShmemInitLock. */
void
colindex_changes_shmem_init(void)
{
	bool		found;

	changes = ShmemInitStruct(CHANGES_SHMEM_NAME, sizeof(ChangeTable), &found);
	if (found)
		return;
	memset(changes, 0, sizeof(ChangeTable));
	changes->lock = &(GetNamedLWLockTranche(CHANGES_SHMEM_NAME))->lock;
	changes->next_generation = 1;
	pg_atomic_init_u64(&changes->clock, 0);
	for (int i = 0; i < CHANGES_ENTRIES; i++)
		SpinLockInit(&changes->entries[i].mutex);
}

/* The index's entry, or NULL; under the table's lock. */
static ChangeEntry *
find_entry(Relation index)
{
	for (int i = 0; i < CHANGES_ENTRIES; i++)
	{
		ChangeEntry *e = &changes->entries[i];

		if (e->in_use && RelFileLocatorEquals(e->node, compat_rel_locator(index)))
			return e;
	}
	return NULL;
}

/*
 * Record a change of a block of an index, made under the lock still held:
 * exclusive for an entry added or freed, share for entries marked dead (a
 * hint, which the copy may miss without harm).
 */
void
colindex_changes_note(Relation index, BlockNumber block)
{
	ChangeEntry *e;

	if (changes == NULL)
		return;
	LWLockAcquire(changes->lock, LW_SHARED);
	e = find_entry(index);
	if (e != NULL)
	{
		ChangeRecord *last = &e->ring[(e->nrecords + CHANGES_RING - 1) % CHANGES_RING];

		SpinLockAcquire(&e->mutex);
		e->epoch++;
		if (e->nrecords > 0 && last->block == block)
			last->epoch = e->epoch;
		else
		{
			ChangeRecord *next = &e->ring[e->nrecords % CHANGES_RING];

			if (e->nrecords >= CHANGES_RING)
				e->lost_epoch = next->epoch;
			next->block = block;
			next->epoch = e->epoch;
			e->nrecords++;
		}
		SpinLockRelease(&e->mutex);
	}
	LWLockRelease(changes->lock);
}

/* Forget the index's relfilenode: it is being built anew. */
void
colindex_changes_forget(Relation index)
{
	ChangeEntry *e;

	if (changes == NULL)
		return;
	LWLockAcquire(changes->lock, LW_EXCLUSIVE);
	e = find_entry(index);
	if (e != NULL)
		e->in_use = false;
	LWLockRelease(changes->lock);
}

/*
 * Record the index's changes from now on, if they are not yet: its entry's
 * generation in *generation.  False where there is no table (gputopk not
 * preloaded).
 */
bool
colindex_changes_track(Relation index, uint32 *generation)
{
	ChangeEntry *e;

	if (changes == NULL)
		return false;
	LWLockAcquire(changes->lock, LW_SHARED);
	e = find_entry(index);
	if (e != NULL)
	{
		e->last_used = pg_atomic_add_fetch_u64(&changes->clock, 1);
		*generation = e->generation;
		LWLockRelease(changes->lock);
		return true;
	}
	LWLockRelease(changes->lock);

	LWLockAcquire(changes->lock, LW_EXCLUSIVE);
	e = find_entry(index);
	if (e == NULL)
	{
		/* a free entry, or the one used longest ago */
		for (int i = 0; i < CHANGES_ENTRIES; i++)
		{
			ChangeEntry *c = &changes->entries[i];

			if (!c->in_use)
			{
				e = c;
				break;
			}
			if (e == NULL || c->last_used < e->last_used)
				e = c;
		}
		e->node = compat_rel_locator(index);
		e->generation = changes->next_generation++;
		SpinLockAcquire(&e->mutex);
		e->epoch = 1;
		e->lost_epoch = 0;
		e->nrecords = 0;
		SpinLockRelease(&e->mutex);
		e->in_use = true;
	}
	e->last_used = pg_atomic_add_fetch_u64(&changes->clock, 1);
	*generation = e->generation;
	LWLockRelease(changes->lock);
	return true;
}

/*
 * The index's epoch now (*now), and the blocks changed after epoch since
 * (palloc'd, sorted, distinct), unless the ring has lost some of them or
 * since is 0 (nothing is known): then every block is needed.
 */
ChangesSince
colindex_changes_since(Relation index, uint32 generation, uint64 since, uint64 *now,
					   BlockNumber **blocks, int *nblocks)
{
	ChangesSince result = CHANGES_LISTED;
	ChangeEntry *e;
	uint64		first;

	*blocks = NULL;
	*nblocks = 0;
	LWLockAcquire(changes->lock, LW_SHARED);
	e = find_entry(index);
	if (e == NULL || e->generation != generation)
	{
		LWLockRelease(changes->lock);
		return CHANGES_UNTRACKED;
	}
	*blocks = palloc(sizeof(BlockNumber) * CHANGES_RING);
	SpinLockAcquire(&e->mutex);
	*now = e->epoch;
	if (since == 0 || since < e->lost_epoch)
		result = CHANGES_ALL;
	else
	{
		first = e->nrecords > CHANGES_RING ? e->nrecords - CHANGES_RING : 0;
		for (uint64 i = first; i < e->nrecords; i++)
			if (e->ring[i % CHANGES_RING].epoch > since)
				(*blocks)[(*nblocks)++] = e->ring[i % CHANGES_RING].block;
	}
	SpinLockRelease(&e->mutex);
	LWLockRelease(changes->lock);
	qsort(*blocks, *nblocks, sizeof(BlockNumber), block_compare);
	*nblocks = qunique(*blocks, *nblocks, sizeof(BlockNumber), block_compare);
	return result;
}
