/*-------------------------------------------------------------------------
 *
 * colindex_dict.h
 *	  The column index's dictionary: the codes its text columns store.
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_DICT_H
#define COLINDEX_DICT_H

#include "colindex.h"

/* the longest value and the most values a dictionary takes */
#define COLINDEX_DICT_MAX_VALUE 256
#define COLINDEX_DICT_MAX_CODES 32768

/* the code of a value the dictionary does not hold */
#define COLINDEX_DICT_ABSENT (-1)

/* the code stored once the dictionary is full, for a value it does not hold */
#define COLINDEX_DICT_OTHER 0

extern int32 colindex_dict_add(Relation index, const char *bytes, int length);
extern int32 colindex_dict_code(Relation index, const char *bytes, int length);
extern bool colindex_dict_value(Relation index, int32 code, const char **bytes, int *length);
extern bool colindex_dict_full(Relation index);

#endif							/* COLINDEX_DICT_H */
