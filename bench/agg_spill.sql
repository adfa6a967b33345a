--
-- bench/agg_spill.sql: GpuTopKAgg when its groups' states outgrow hash_mem
-- as it runs, next to PostgreSQL's own spilling HashAggregate.
--
-- 10M rows in 1,000,000 groups of 10, k = 10, in one process.  The plan is
-- made with work_mem 4GB (where the states fit) and run with 4GB, 64MB and
-- 4MB, as a plan whose estimate of the groups was too low would run; each
-- query counts its arrays, so that the time is not the client's.  Run with
-- psql on a database where gputopk is installed (a throwaway one: it makes
-- table agg_spill):
--   psql -X -f bench/agg_spill.sql
--
\timing off
DROP TABLE IF EXISTS agg_spill;
CREATE UNLOGGED TABLE agg_spill (id int8, v float8, g int4);
INSERT INTO agg_spill SELECT id, random(), id % 1000000 FROM generate_series(1, 10000000) id;
VACUUM ANALYZE agg_spill;
SET max_parallel_workers_per_gather = 0;
SET plan_cache_mode = force_generic_plan;

\echo == PostgreSQL (gputopk.enabled = off), work_mem 4MB
SET gputopk.enabled = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
SELECT count(t) FROM (SELECT g, gpu_topk(v, 10) AS t FROM agg_spill GROUP BY g) s;
\timing on
SELECT count(t) FROM (SELECT g, gpu_topk(v, 10) AS t FROM agg_spill GROUP BY g) s;
\timing off
RESET gputopk.enabled;

SET work_mem = '4GB';
PREPARE q AS SELECT count(t) FROM (SELECT g, gpu_topk(v, 10) AS t FROM agg_spill GROUP BY g) s;
EXPLAIN (COSTS OFF) EXECUTE q;
\echo == GpuTopKAgg planned with work_mem 4GB, run with 4GB, 64MB and 4MB
\timing on
EXECUTE q;
EXECUTE q;
SET work_mem = '64MB';
EXECUTE q;
EXECUTE q;
SET work_mem = '4MB';
EXECUTE q;
EXECUTE q;
\timing off
SET work_mem = '64MB';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;
SET work_mem = '4MB';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q;
DEALLOCATE q;
DROP TABLE agg_spill;
