/*-------------------------------------------------------------------------
 *
 * colindex_buffers.h
 *	  Reading a column index's pages through the shared buffers they were
 *	  last found in.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_BUFFERS_H
#define COLINDEX_BUFFERS_H

#include "storage/bufmgr.h"
#include "utils/relcache.h"

extern Buffer colindex_read_buffer(Relation index, BlockNumber block,
								   BufferAccessStrategy strategy);

#endif							/* COLINDEX_BUFFERS_H */
