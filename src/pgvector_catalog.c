/*-------------------------------------------------------------------------
 *
 * pgvector_catalog.c
 *	  pgvector's functions and types, known by the C symbols of pgvector's
 *	  library: a function by its pg_proc probin (the library "vector") and
 *	  prosrc, a type by its input function's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/pg_language_d.h"
#include "catalog/pg_proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "pgvector_catalog.h"

char *
pgvector_symbol(Oid funcid)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	char	   *symbol = NULL;
	Datum		d;
	bool		isnull;
	char	   *library;
	char	   *base;

	if (!HeapTupleIsValid(tuple))
		return NULL;
	if (((Form_pg_proc) GETSTRUCT(tuple))->prolang == ClanguageId)
	{
		d = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &isnull);
		library = isnull ? "" : TextDatumGetCString(d);
		base = strrchr(library, '/');
		base = base ? base + 1 : library;
		if (strcmp(base, "vector") == 0 || strcmp(base, "vector.so") == 0)
			symbol = TextDatumGetCString(SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc,
														 &isnull));
	}
	ReleaseSysCache(tuple);
	return symbol;
}

bool
pgvector_type_element(Oid type, VectorElement *element)
{
	Oid			input;
	Oid			ioparam;
	char	   *symbol;
	bool		found = false;

	if (type < FirstNormalObjectId)
		return false;
	getTypeInputInfo(type, &input, &ioparam);
	symbol = pgvector_symbol(input);
	if (symbol && strcmp(symbol, "vector_in") == 0)
	{
		*element = VECTOR_ELEMENT_FLOAT4;
		found = true;
	}
	else if (symbol && strcmp(symbol, "halfvec_in") == 0)
	{
		*element = VECTOR_ELEMENT_HALF;
		found = true;
	}
	return found;
}

int
pgvector_value_bytes(VectorElement element, int dims)
{
	return VARHDRSZ + PGVECTOR_HEADER_BYTES +
		dims * (element == VECTOR_ELEMENT_HALF ? 2 : (int) sizeof(float));
}
