/*-------------------------------------------------------------------------
 *
 * colindex_cluster.h
 *	  The column index's storage parameter layout, and a clustered index's
 *	  entries ordered by their values at build (colindex_cluster.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef COLINDEX_CLUSTER_H
#define COLINDEX_CLUSTER_H

#include "colindex.h"

typedef struct ColIndexCluster ColIndexCluster;

extern void colindex_cluster_define_option(void);
extern bytea *colindex_cluster_options(Datum reloptions, bool validate);
extern bool colindex_cluster_enabled(Relation index);

extern ColIndexCluster *colindex_cluster_begin(const ColIndexLayout *layout);
extern void colindex_cluster_add(ColIndexCluster *cluster, ItemPointer tid, const Datum *stored,
								 const bool *isnull);
extern void colindex_cluster_sort(ColIndexCluster *cluster);
extern bool colindex_cluster_next(ColIndexCluster *cluster, ItemPointer tid, Datum *stored,
								  bool *isnull);
extern void colindex_cluster_end(ColIndexCluster *cluster);

#endif							/* COLINDEX_CLUSTER_H */
