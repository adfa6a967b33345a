/*-------------------------------------------------------------------------
 *
 * recent_buffers.h
 *	  Reading a relation's pages through the shared buffers they were last
 *	  found in.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RECENT_BUFFERS_H
#define RECENT_BUFFERS_H

#include "storage/bufmgr.h"
#include "utils/relcache.h"

extern Buffer recent_buffers_read(Relation rel, BlockNumber block,
								  BufferAccessStrategy strategy);
extern const char *recent_buffers_prefetch(Relation rel, BlockNumber block);

#endif							/* RECENT_BUFFERS_H */
