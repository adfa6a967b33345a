/*-------------------------------------------------------------------------
 *
 * visibility_bits.h
 *	  A table's visibility map read a map page at a time
 *	  (visibility_bits.c): a page's bits copied, or the all-visible bits
 *	  of every block as a bitmap.
 *
 *-------------------------------------------------------------------------
 */
#ifndef VISIBILITY_BITS_H
#define VISIBILITY_BITS_H

#include "access/visibilitymapdefs.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

/* the visibility map's layout (visibilitymap.c) */
#define VM_MAP_BYTES (BLCKSZ - MAXALIGN(SizeOfPageHeaderData))
#define VM_BLOCKS_PER_BYTE (BITS_PER_BYTE / BITS_PER_HEAPBLOCK)
#define VM_BLOCKS_PER_PAGE (VM_MAP_BYTES * VM_BLOCKS_PER_BYTE)

/*
 * The bits of the map page that covers block, copied into bits
 * (VM_MAP_BYTES) under the page's share lock, with its LSN; false, with
 * nothing copied, where the map has no such page.  *vm_buffer is the map
 * page pinned, kept for the next call, as visibilitymap_get_status keeps it.
 */
extern bool visibility_map_copy_page(Relation rel, BlockNumber block, Buffer *vm_buffer,
									 uint8 *bits, XLogRecPtr *lsn);

/*
 * The all-visible bits of blocks 0 to nblocks - 1 into bits, 64 a word
 * (block b at bit b % 64 of word b / 64), the words zeroed first; how many
 * are set.
 */
extern uint64 visibility_bits_read(Relation rel, BlockNumber nblocks, uint64 *bits);

/* The words of a bitmap of nblocks blocks. */
#define VISIBILITY_BITS_WORDS(nblocks) (((Size) (nblocks) + 63) / 64)

#endif							/* VISIBILITY_BITS_H */
