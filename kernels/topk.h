/*
 * topk.h
 *	  Types shared by both top-k backends (kernels/cpu_topk.c, kernels/gpu_topk*.cu).
 *
 * Both take keys (see keys.h) in batches and give back the k largest with
 * their row references.  A key's reference is its ordinal among all keys
 * pushed to the same top-k (0, 1, 2, ...); callers map ordinals to rows.
 * Plain C: no PostgreSQL or CUDA headers.
 */
#ifndef TOPK_H
#define TOPK_H

#include <stddef.h>
#include <stdint.h>

typedef enum TopkMode
{
	TOPK_EXACT,					/* exactly k: any k of the keys tied at the
								 * boundary */
	TOPK_WITH_TIES				/* k plus every key equal to the k-th */
} TopkMode;

typedef struct TopkItem
{
	uint64_t	key;			/* a 32-bit key zero-extended */
	uint64_t	ref;
} TopkItem;

/*
 * The answer: min(k, keys pushed) items, or more with TOPK_WITH_TIES, in
 * descending key order.  The items belong to the top-k object and stay
 * valid until it is used again or destroyed.
 */
typedef struct TopkResult
{
	TopkItem   *items;
	size_t		count;
} TopkResult;

#endif							/* TOPK_H */
