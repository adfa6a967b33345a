/*-------------------------------------------------------------------------
 *
 * service_wal.h
 *	  A GPU's process follows the WAL for its page cache (service_wal.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_WAL_H
#define SERVICE_WAL_H

#include "access/xlogdefs.h"

/* In the main thread, before the job threads start. */
extern void service_wal_init(void);

/* how long the main thread may sleep between reads of the WAL */
#define SERVICE_WAL_FOLLOW_MS 100

/*
 * In the main thread at each wake-up: the WAL flushed since the last call
 * read into the page cache (following starts at the first call, where the
 * GPU has a page cache, and stops in recovery).  How long it may sleep
 * before the next call: 0 where more is left, SERVICE_WAL_FOLLOW_MS, or
 * -1 where it does not follow the WAL.
 */
extern long service_wal_follow(void);

/*
 * In a job thread: wait (20 ms at most) until the WAL has been followed up
 * to lsn, a scan's wal_lsn, the main thread woken to flush and read it; not
 * where the reading is far behind.
 */
extern void service_wal_await(XLogRecPtr lsn);

#endif							/* SERVICE_WAL_H */
