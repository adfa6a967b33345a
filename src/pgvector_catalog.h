/*-------------------------------------------------------------------------
 *
 * pgvector_catalog.h
 *	  pgvector's functions and types, known by the C symbols of pgvector's
 *	  library in the catalog: gputopk neither links with pgvector nor
 *	  needs it installed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGVECTOR_CATALOG_H
#define PGVECTOR_CATALOG_H

#include "vector_bounds.h"

/* pgvector's varlena: dim and an unused int16, then the elements */
#define PGVECTOR_HEADER_BYTES 4

/* The C symbol a C function of pgvector's library calls (palloc'd), or NULL. */
extern char *pgvector_symbol(Oid funcid);

/* Whether type is pgvector's vector or halfvec; *element then says which. */
extern bool pgvector_type_element(Oid type, VectorElement *element);

/* The bytes of a value of dims elements, its 4-byte varlena header included. */
extern int	pgvector_value_bytes(VectorElement element, int dims);

#endif							/* PGVECTOR_CATALOG_H */
