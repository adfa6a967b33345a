/*
 * cpu_topk.h
 *	  The CPU backend of the top-k engine: what users without a GPU get, and
 *	  the oracle the GPU backend is tested against.
 *
 * Plain C with no PostgreSQL header, like the rest of the engine in
 * kernels/, so that test and benchmark programs link it too.  Memory comes from malloc; a call that allocates returns false
 * (or NULL) when out of memory, leaving the object valid to destroy.
 */
#ifndef CPU_TOPK_H
#define CPU_TOPK_H

#include <stdbool.h>

#include "topk.h"

typedef struct CpuTopk CpuTopk;

/* key_width is 4 or 8 bytes; NULL when out of memory */
extern CpuTopk *cpu_topk_create(int key_width, uint64_t k, TopkMode mode);

/* Add n keys (uint32_t or uint64_t); their references continue the count. */
extern bool cpu_topk_push(CpuTopk *t, const void *keys, size_t n);

/* Add n keys with the references the caller gives them (not counted as pushed). */
extern bool cpu_topk_push_refs(CpuTopk *t, const void *keys, const uint64_t *refs, size_t n);

/* Whether only keys above *cut can still enter (pushing the others does nothing). */
extern bool cpu_topk_cut(const CpuTopk *t, uint64_t *cut);

/*
 * Bring the cut up to the keys pushed so far now, rather than when the
 * buffer's slack fills (for a scan that stops once no key can enter).
 */
extern void cpu_topk_refresh_cut(CpuTopk *t);
/* The answer so far, sorted; pushing may go on afterwards. */
extern bool cpu_topk_result(CpuTopk *t, TopkResult *result);

extern void cpu_topk_destroy(CpuTopk *t);

#endif							/* CPU_TOPK_H */
