/*-------------------------------------------------------------------------
 *
 * visibility_bits.c
 *	  A table's visibility map read a map page at a time: a page's bits
 *	  copied under its lock (scan_page_sink.c), or the all-visible bits of
 *	  every block turned into a bitmap, 32 blocks a word of the map
 *	  (groups_index.c), instead of a visibilitymap_get_status call a block.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/visibilitymap.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/bufmgr.h"

#include "visibility_bits.h"

bool
visibility_map_copy_page(Relation rel, BlockNumber block, Buffer *vm_buffer, uint8 *bits,
						 XLogRecPtr *lsn)
{
	Page		page;

	/* pins the map page, where it exists */
	(void) visibilitymap_get_status(rel, block, vm_buffer);
	if (!BufferIsValid(*vm_buffer) ||
		BufferGetBlockNumber(*vm_buffer) != block / VM_BLOCKS_PER_PAGE)
		return false;
	LockBuffer(*vm_buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(*vm_buffer);
	*lsn = PageGetLSN(page);
	memcpy(bits, PageGetContents(page), VM_MAP_BYTES);
	LockBuffer(*vm_buffer, BUFFER_LOCK_UNLOCK);
	return true;
}

/*
 * The all-visible bits of a word of the map (32 blocks, two bits each, the
 * all-visible one the lower), one a block, in the blocks' order.
 */
static inline uint32
all_visible_of(uint64 word)
{
	word &= UINT64CONST(0x5555555555555555);
	word = (word | (word >> 1)) & UINT64CONST(0x3333333333333333);
	word = (word | (word >> 2)) & UINT64CONST(0x0F0F0F0F0F0F0F0F);
	word = (word | (word >> 4)) & UINT64CONST(0x00FF00FF00FF00FF);
	word = (word | (word >> 8)) & UINT64CONST(0x0000FFFF0000FFFF);
	return (uint32) (word | (word >> 16));
}

uint64
visibility_bits_read(Relation rel, BlockNumber nblocks, uint64 *bits)
{
	Buffer		vm_buffer = InvalidBuffer;
	uint8		map[VM_MAP_BYTES];
	XLogRecPtr	lsn;
	uint64		count = 0;

	StaticAssertStmt(VM_MAP_BYTES % sizeof(uint64) == 0 && VM_BLOCKS_PER_PAGE % 32 == 0,
					 "a map page is of whole words of 32 blocks");
	memset(bits, 0, sizeof(uint64) * VISIBILITY_BITS_WORDS(nblocks));
	for (BlockNumber first = 0; first < nblocks; first += VM_BLOCKS_PER_PAGE)
	{
		CHECK_FOR_INTERRUPTS();
		if (!visibility_map_copy_page(rel, first, &vm_buffer, map, &lsn))
			break;
		for (Size w = 0; w < VM_MAP_BYTES / sizeof(uint64); w++)
		{
			uint64		word;
			uint64		block = (uint64) first + w * 32;
			uint64		found;

			if (block >= nblocks)
				break;
			/* the map's bytes in order, whatever the host's byte order */
			word = 0;
			for (int b = 0; b < 8; b++)
				word |= (uint64) map[w * 8 + b] << (8 * b);
			found = all_visible_of(word);
			/* blocks past the table's end have no bits */
			if (nblocks - block < 32)
				found &= (UINT64CONST(1) << (nblocks - block)) - 1;
			bits[block / 64] |= found << (block % 64);
			count += pg_popcount64(found);
		}
	}
	if (BufferIsValid(vm_buffer))
		ReleaseBuffer(vm_buffer);
	return count;
}
