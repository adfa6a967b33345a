/*-------------------------------------------------------------------------
 *
 * scan_datum_key.h
 *	  The top-k engine's keys (keys.h) of PostgreSQL values: which types
 *	  have them, and the key of a Datum.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SCAN_DATUM_KEY_H
#define SCAN_DATUM_KEY_H

#include "catalog/pg_type_d.h"
#include "utils/date.h"
#include "utils/timestamp.h"

#include "keys.h"

/* The key type of a value type, or false if it has none. */
static inline bool
key_type_of(Oid type, KeyType *key_type)
{
	switch (type)
	{
		case INT2OID:
			*key_type = KEY_INT2;
			return true;
		case INT4OID:
			*key_type = KEY_INT4;
			return true;
		case INT8OID:
			*key_type = KEY_INT8;
			return true;
		case FLOAT4OID:
			*key_type = KEY_FLOAT4;
			return true;
		case FLOAT8OID:
			*key_type = KEY_FLOAT8;
			return true;
		case DATEOID:
			*key_type = KEY_DATE;
			return true;
		case TIMESTAMPOID:
			*key_type = KEY_TIMESTAMP;
			return true;
		case TIMESTAMPTZOID:
			*key_type = KEY_TIMESTAMPTZ;
			return true;
		default:
			return false;
	}
}

/* The key of a (non-NULL) value of a key type: larger for larger values when desc. */
static inline uint64
key_of_datum(KeyType type, Datum d, bool desc)
{
	switch (type)
	{
		case KEY_INT2:
			return key_from_int32(DatumGetInt16(d), desc);
		case KEY_INT4:
			return key_from_int32(DatumGetInt32(d), desc);
		case KEY_DATE:
			return key_from_int32(DatumGetDateADT(d), desc);
		case KEY_INT8:
			return key_from_int64(DatumGetInt64(d), desc);
		case KEY_TIMESTAMP:
		case KEY_TIMESTAMPTZ:
			return key_from_int64(DatumGetTimestamp(d), desc);
		case KEY_FLOAT4:
			return key_from_float4(DatumGetFloat4(d), desc);
		case KEY_FLOAT8:
			return key_from_float8(DatumGetFloat8(d), desc);
	}
	pg_unreachable();
}

#endif							/* SCAN_DATUM_KEY_H */
