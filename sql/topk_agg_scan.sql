--
-- GpuTopKAgg: the top-k aggregates computed by the node that scans and
-- groups itself, against the same queries with gputopk.enabled = off (the
-- aggregates through PostgreSQL's Agg).  Rows are compared as text, so -0
-- and 0 differ; groups in any order.
--
SET gputopk.min_table_rows = 0;
SELECT setseed(0.57);
-- no autovacuum: its update of pg_class would replan the prepared plans
CREATE TABLE tg WITH (autovacuum_enabled = off) AS
SELECT i AS id,
       floor(1 / sqrt(random()))::int AS g,
       (i % 1000)::int8 AS g1000,
       CASE WHEN random() < 0.02 THEN NULL ELSE i % 37 END::int2 AS g37,
       CASE WHEN random() < 0.02 THEN NULL ELSE random() < 0.5 END AS b,
       date '2020-01-01' + i % 50 AS gd,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 10 - 5)::int::float4 END AS f4,
       CASE WHEN random() < 0.05 THEN NULL ELSE round(random() * 20 - 10)::float8 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2000-01-01' + (random() * 100)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2000-01-01' + random() * interval '10000 days' END AS ts,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamptz '2000-01-01 UTC' + random() * interval '10000 days' END AS tz,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1000)::int END AS r,
       CASE WHEN random() < 0.1 THEN NULL ELSE md5(i::text) END AS name,
       (i % 7919)::int4 AS g7919
FROM generate_series(1, 30000) i;
INSERT INTO tg (id, g, g1000, g37, b, gd, i2, i4, i8, f4, f8, d, ts, tz, r, name) VALUES
  (30001, 1, 1, 1, true, '2020-01-01', 32767, 2147483647, 9223372036854775807, 'NaN', 'NaN',
   'infinity', 'infinity', 'infinity', 1, 'a'),
  (30002, 1, 1, 1, true, '2020-01-01', -32768, -2147483648, -9223372036854775808, '-Infinity',
   '-Infinity', '-infinity', '-infinity', '-infinity', 2, 'b'),
  (30003, 1, 1, 1, true, '2020-01-01', 0, 0, 0, '-0', '-0', NULL, NULL, NULL, 3, 'c'),
  (30004, 1, 1, 1, true, '2020-01-01', 0, 0, 0, '0', '0', NULL, NULL, NULL, 4, 'd'),
  (30005, 1, 1, 1, true, '2020-01-01', 0, 0, 0, 'Infinity', 'NaN', NULL, NULL, NULL, NULL, NULL),
  -- groups of NULL values only, in every grouping column
  (30006, -1, -1, -1, NULL, '1999-01-01', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 5, 'e'),
  (30007, -2, -2, -2, false, '1999-01-02', 5, 5, 5, 5, 5, '2000-01-05', '2000-01-05',
   '2000-01-05 UTC', NULL, 'f');
ANALYZE tg;
CREATE TABLE tg_empty (LIKE tg);
ANALYZE tg_empty;

-- q's rows with GpuTopKAgg and without, as text; whether the plan has the node
-- whether the rows of temporary table agg_on, as text, are those of q with
-- gputopk.enabled = off; drops agg_on
CREATE FUNCTION agg_on_matches(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  same boolean;
BEGIN
  SET LOCAL gputopk.enabled = off;
  EXECUTE format('CREATE TEMP TABLE agg_off AS SELECT s::text AS row FROM (%s) s', q);
  SET LOCAL gputopk.enabled = on;
  EXECUTE 'SELECT NOT EXISTS (SELECT * FROM agg_on EXCEPT ALL SELECT * FROM agg_off)
              AND NOT EXISTS (SELECT * FROM agg_off EXCEPT ALL SELECT * FROM agg_on)
              AND (SELECT count(*) FROM agg_on) = (SELECT count(*) FROM agg_off)'
    INTO same;
  DROP TABLE agg_on;
  DROP TABLE agg_off;
  RETURN same;
END $$;
CREATE FUNCTION agg_scan_check(q text, OUT used boolean, OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  used := false;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    used := used OR line LIKE '%GpuTopKAgg%';
  END LOOP;
  EXECUTE format('CREATE TEMP TABLE agg_on AS SELECT s::text AS row FROM (%s) s', q);
  same := agg_on_matches(q);
END $$;
CREATE TEMP TABLE scan_checks (q text, used boolean, same boolean);
-- how many of the checks' plans have a line like pattern
CREATE FUNCTION plans_with(pattern text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  q text;
  line text;
  n int := 0;
BEGIN
  FOR q IN SELECT s.q FROM scan_checks s LOOP
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
      IF line LIKE pattern THEN
        n := n + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN n;
END $$;

-- every value type, every grouping column and none, k from 1 to beyond every group
DO $$
DECLARE
  col text;
  k int;
  grp text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz'] LOOP
    FOREACH k IN ARRAY ARRAY[1, 3, 100, 40000] LOOP
      FOREACH grp IN ARRAY ARRAY['', 'g', 'g1000', 'g37', 'b', 'gd'] LOOP
        INSERT INTO scan_checks
        SELECT q, c.* FROM (SELECT format(
          'SELECT %3$s gpu_topk(%1$s, %2$s), gpu_bottomk(%1$s, %2$s) FROM tg %4$s',
          col, k, CASE WHEN grp = '' THEN '' ELSE grp || ',' END,
          CASE WHEN grp = '' THEN '' ELSE 'GROUP BY ' || grp END) AS q) s,
          agg_scan_check(q) c;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT used, same, count(*) FROM scan_checks GROUP BY used, same;

-- the _by forms: results passed by value (NULLs among them) and by reference
TRUNCATE scan_checks;
DO $$
DECLARE
  col text;
  res text;
  k int;
  grp text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i4', 'f4', 'f8', 'ts'] LOOP
    FOREACH res IN ARRAY ARRAY['id', 'r', 'name', 'f8'] LOOP
      FOREACH k IN ARRAY ARRAY[1, 5, 40000] LOOP
        FOREACH grp IN ARRAY ARRAY['', 'g', 'g37'] LOOP
          INSERT INTO scan_checks
          SELECT q, c.* FROM (SELECT format(
            'SELECT %4$s gpu_topk_by(%2$s, %1$s, %3$s), gpu_bottomk_by(%2$s, %1$s, %3$s) FROM tg %5$s',
            col, res, k, CASE WHEN grp = '' THEN '' ELSE grp || ',' END,
            CASE WHEN grp = '' THEN '' ELSE 'GROUP BY ' || grp END) AS q) s,
            agg_scan_check(q) c;
        END LOOP;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT used, same, count(*) FROM scan_checks GROUP BY used, same;

-- WHERE clauses (compiled, interpreted, matching nothing), empty tables (the
-- one grouped is left to PostgreSQL: its column has no statistics),
-- expressions over the aggregates, several aggregates, ORDER BY and LIMIT above
TRUNCATE scan_checks;
INSERT INTO scan_checks
SELECT q, c.* FROM unnest(ARRAY[
  'SELECT g, gpu_topk(f8, 4) FROM tg WHERE i4 > 0 GROUP BY g',
  'SELECT g37, gpu_topk(i8, 4) FROM tg WHERE i2 BETWEEN -10 AND 10 OR f4 IS NULL GROUP BY g37',
  'SELECT g37, gpu_bottomk_by(name, ts, 2) FROM tg WHERE id % 7 = 3 GROUP BY g37',
  'SELECT g37, gpu_topk(i4, 3) FROM tg WHERE length(name) > 31 AND i2 < 0 GROUP BY g37',
  'SELECT gd, gpu_topk(i4, 3) FROM tg WHERE id < 0 GROUP BY gd',
  'SELECT gpu_topk(i4, 3) FROM tg WHERE id < 0',
  'SELECT g, gpu_topk(i4, 3) FROM tg WHERE now() < ''2000-01-01''::timestamptz GROUP BY g',
  'SELECT gpu_topk(i4, 3) FROM tg WHERE now() > ''2000-01-01''::timestamptz AND i2 > 0',
  'SELECT g, gpu_topk(i4, 3) FROM tg WHERE tableoid = ''tg''::regclass GROUP BY g',
  'SELECT g, gpu_topk(i4, 3) FROM tg_empty GROUP BY g',
  'SELECT gpu_topk(i4, 3), gpu_bottomk_by(name, f8, 2) FROM tg_empty',
  'SELECT g1000 + 1 AS g, (gpu_topk(f8, 5))[2], cardinality(gpu_bottomk(d, 3)) FROM tg GROUP BY g1000',
  'SELECT b, gpu_topk(i2, 2), gpu_topk(i2, 7), gpu_bottomk_by(r, tz, 3), gpu_topk_by(id, f4, 2) FROM tg GROUP BY b',
  'SELECT g, gpu_topk(i8, 2) AS top FROM tg GROUP BY g ORDER BY top DESC NULLS LAST, g LIMIT 5',
  'SELECT x.g, x.top FROM (SELECT g, gpu_topk(f4, 3) AS top FROM tg GROUP BY g) x JOIN generate_series(1, 5) s ON s = x.g'
]) AS q, agg_scan_check(q) c;
SELECT q, used, same FROM scan_checks WHERE NOT (used AND same);
SELECT used, same, count(*) FROM scan_checks GROUP BY used, same;

-- in parallel: each process groups its share of the table's blocks and
-- returns its groups' states serialized, and a Finalize Aggregate combines
-- them (the leader on the GPU where there is one, the workers on the CPU)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gputopk.max_parallel_workers = 3;
TRUNCATE scan_checks;
DO $$
DECLARE
  col text;
  k int;
  grp text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz'] LOOP
    FOREACH k IN ARRAY ARRAY[1, 5, 40000] LOOP
      FOREACH grp IN ARRAY ARRAY['', 'g', 'g37', 'b'] LOOP
        INSERT INTO scan_checks
        SELECT q, c.* FROM (SELECT format(
          'SELECT %3$s gpu_topk(%1$s, %2$s), gpu_bottomk_by(id, %1$s, %2$s), gpu_topk_by(name, %1$s, %2$s) FROM tg %4$s',
          col, k, CASE WHEN grp = '' THEN '' ELSE grp || ',' END,
          CASE WHEN grp = '' THEN '' ELSE 'GROUP BY ' || grp END) AS q) s,
          agg_scan_check(q) c;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
INSERT INTO scan_checks
SELECT q, c.* FROM unnest(ARRAY[
  'SELECT g, gpu_topk(f8, 4) FROM tg WHERE i4 > 0 GROUP BY g',
  'SELECT g37, gpu_bottomk_by(name, ts, 2) FROM tg WHERE id % 7 = 3 GROUP BY g37',
  'SELECT gd, gpu_topk(i4, 3) FROM tg WHERE id < 0 GROUP BY gd',
  'SELECT gpu_topk(i4, 3) FROM tg WHERE id < 0',
  'SELECT g, gpu_topk(i4, 3) FROM tg WHERE now() < ''2000-01-01''::timestamptz GROUP BY g',
  'SELECT g1000 + 1 AS g, (gpu_topk(f8, 5))[2], cardinality(gpu_bottomk(d, 3)) FROM tg GROUP BY g1000',
  'SELECT g, gpu_topk(i8, 2) AS top FROM tg GROUP BY g ORDER BY top DESC NULLS LAST, g LIMIT 5'
]) AS q, agg_scan_check(q) c;
SELECT q, used, same FROM scan_checks WHERE NOT (used AND same);
SELECT used, same, count(*) FROM scan_checks GROUP BY used, same;
-- how many of them ran in parallel
SELECT plans_with('%Parallel Custom Scan (GpuTopKAgg)%') AS parallel, count(*) AS checks
FROM scan_checks;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT g37, gpu_topk(f8, 10) FROM tg WHERE i4 > 0 GROUP BY g37;
EXPLAIN (COSTS OFF) SELECT gpu_topk(f8, 10), gpu_bottomk_by(name, ts, 2) FROM tg;
RESET gputopk.device;

-- in parallel for many groups: the processes exchange their rows by group
-- through temporary files, and each group is grouped whole by one process;
-- gathering costs a little, so that the plan depends on the groups
SET parallel_tuple_cost = 0.001;
TRUNCATE scan_checks;
DO $$
DECLARE
  col text;
  k int;
  grp text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz'] LOOP
    FOREACH k IN ARRAY ARRAY[1, 5, 40000] LOOP
      FOREACH grp IN ARRAY ARRAY['g7919', 'id', 'g1000'] LOOP
        INSERT INTO scan_checks
        SELECT q, c.* FROM (SELECT format(
          'SELECT %3$s, gpu_topk(%1$s, %2$s), gpu_bottomk_by(id, %1$s, %2$s), gpu_topk_by(r, %1$s, %2$s) FROM tg GROUP BY %3$s',
          col, k, grp) AS q) s,
          agg_scan_check(q) c;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
INSERT INTO scan_checks
SELECT q, c.* FROM unnest(ARRAY[
  'SELECT g7919, gpu_topk(f8, 4) FROM tg WHERE i4 > 0 GROUP BY g7919',
  'SELECT g7919, gpu_bottomk(ts, 2) FROM tg WHERE id % 7 = 3 GROUP BY g7919',
  'SELECT g7919, gpu_topk(i4, 3) FROM tg WHERE id < 0 GROUP BY g7919',
  'SELECT g7919 + 1 AS g, (gpu_topk(f8, 5))[2], cardinality(gpu_bottomk(d, 3)) FROM tg GROUP BY g7919',
  'SELECT g7919, gpu_topk(i8, 2) AS top FROM tg GROUP BY g7919 ORDER BY top DESC NULLS LAST, g7919 LIMIT 5',
  'SELECT g7919, gpu_topk_by(name, f8, 2) FROM tg GROUP BY g7919',
  'SELECT g37, gpu_topk(f8, 4) FROM tg GROUP BY g37'
]) AS q, agg_scan_check(q) c;
SELECT q, used, same FROM scan_checks WHERE NOT (used AND same);
SELECT used, same, count(*) FROM scan_checks GROUP BY used, same;
-- which form each took (a result passed by reference is not exchanged; few
-- groups are gathered as states)
SELECT plans_with('%Partitions:%') AS partitioned, plans_with('%Finalize%') AS partial,
       count(*) AS checks
FROM scan_checks;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT g7919, gpu_topk(f8, 10) FROM tg WHERE i4 > 0 GROUP BY g7919;
-- not when the rows might not fit in temp_file_limit
SET temp_file_limit = '64kB';
EXPLAIN (COSTS OFF) SELECT g7919, gpu_topk(f8, 10) FROM tg WHERE i4 > 0 GROUP BY g7919;
RESET temp_file_limit;
-- EXPLAIN ANALYZE's counts over all processes (the others depend on the
-- workers that started and the partitions each claimed)
DO $$
DECLARE
  line text;
BEGIN
  FOR line IN EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
      SELECT g7919, gpu_topk(f8, 10) FROM tg GROUP BY g7919 LOOP
    IF line ~ '(Rows Scanned|Groups|Rows Exchanged):' THEN
      RAISE NOTICE '%', btrim(line);
    END IF;
  END LOOP;
END $$;
RESET gputopk.device;
CREATE TEMP TABLE agg_expected AS SELECT g7919, gpu_topk(f8, 3) AS top FROM tg GROUP BY g7919;
-- rescanned, as a subplan
SELECT x, (SELECT top FROM (SELECT g7919, gpu_topk(f8, 3) AS top FROM tg GROUP BY g7919 OFFSET 0) s
           WHERE s.g7919 = x) IS NOT DISTINCT FROM (SELECT top FROM agg_expected WHERE g7919 = x)
FROM generate_series(1, 3) x;
-- rescanned after stopping early (EXISTS), with and without workers: the
-- leader leaves the last run's exchange before it starts over
PREPARE stop_early AS
SELECT x, EXISTS (SELECT FROM (SELECT g7919, gpu_topk(f8, 3) AS top FROM tg GROUP BY g7919 OFFSET 0) s
                  WHERE s.g7919 >= x AND s.g7919 < x + 1 AND s.top IS NOT NULL)
FROM generate_series(7917, 7920) x;
SET plan_cache_mode = force_generic_plan;
SET statement_timeout = '5min';
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) EXECUTE stop_early;
RESET gputopk.device;
EXECUTE stop_early;
SET max_parallel_workers = 0;
EXECUTE stop_early;
RESET max_parallel_workers;
RESET statement_timeout;
RESET plan_cache_mode;
DEALLOCATE stop_early;
-- without the leader
SET parallel_leader_participation = off;
SELECT count(*) FROM (SELECT g7919, gpu_topk(f8, 3) FROM tg GROUP BY g7919
                      EXCEPT ALL SELECT * FROM agg_expected) d;
RESET parallel_leader_participation;
-- without workers: planned with them, run where none can start
PREPARE many_groups AS SELECT g7919, gpu_topk(f8, 3) FROM tg GROUP BY g7919;
SET plan_cache_mode = force_generic_plan;
EXECUTE many_groups \g /dev/null
SET max_parallel_workers = 0;
CREATE TEMP TABLE agg_prepared AS EXECUTE many_groups;
SELECT count(*) FROM (SELECT * FROM agg_prepared EXCEPT ALL SELECT * FROM agg_expected) d;
RESET max_parallel_workers;
RESET plan_cache_mode;
DEALLOCATE many_groups;
-- outside parallel mode (a set-returning SQL function run row by row): the
-- files in one process
CREATE FUNCTION many_groups() RETURNS SETOF agg_expected LANGUAGE sql
AS 'SELECT g7919, gpu_topk(f8, 3) FROM tg GROUP BY g7919';
SELECT count(*) FROM (SELECT (r).* FROM (SELECT many_groups() AS r OFFSET 0) s
                      EXCEPT ALL SELECT * FROM agg_expected) d;
DROP FUNCTION many_groups();
-- an error in a process: no temporary file is left behind (the leader or a
-- worker may raise it, so its CONTEXT line is not shown)
\set SHOW_CONTEXT never
SELECT g7919, gpu_topk(f8, 3) FROM tg WHERE 1 / (id - 20000) <> 7 GROUP BY g7919;
\set SHOW_CONTEXT errors
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();
DROP TABLE agg_expected, agg_prepared;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- states that outgrow hash_mem as the query runs (as when the planner's
-- estimate of the groups is too low; here, plans made with work_mem 64MB
-- run with 64kB): the rows of the groups not in memory spill to temporary
-- files, partitioned by group, and are grouped after them, as deep as it
-- takes (results passed by reference too)
CREATE FUNCTION spill_check(q text, OUT plan text, OUT spilled boolean, OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  plan_lines text := '';
BEGIN
  spilled := false;
  PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
  PERFORM set_config('hash_mem_multiplier', '2', true);
  PERFORM set_config('work_mem', '64MB', true);
  EXECUTE 'PREPARE spill_q AS ' || q;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE spill_q' LOOP
    plan_lines := plan_lines || line;
  END LOOP;
  plan := CASE WHEN plan_lines NOT LIKE '%GpuTopKAgg%' THEN 'no GpuTopKAgg'
               WHEN plan_lines LIKE '%Finalize%' THEN 'partial'
               WHEN plan_lines LIKE '%Partitions:%' THEN 'partitioned'
               ELSE 'one process' END;
  PERFORM set_config('work_mem', '64kB', true);
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, BUFFERS OFF) EXECUTE spill_q' LOOP
    spilled := spilled OR line LIKE '%Rows Spilled:%';
  END LOOP;
  CREATE TEMP TABLE spill_rows AS EXECUTE spill_q;
  CREATE TEMP TABLE agg_on AS SELECT s::text AS row FROM spill_rows s;
  DROP TABLE spill_rows;
  DEALLOCATE spill_q;
  same := agg_on_matches(q);
END $$;
CREATE TEMP TABLE spill_queries (form text, q text);
INSERT INTO spill_queries VALUES
  ('one process', 'SELECT g7919, gpu_topk(f8, 3), gpu_bottomk_by(id, ts, 2), gpu_topk_by(r, i2, 4) FROM tg GROUP BY g7919'),
  ('one process', 'SELECT id, gpu_bottomk(tz, 2) FROM tg GROUP BY id'),
  ('one process', 'SELECT g1000, gpu_topk(i4, 50) FROM tg WHERE i4 > 0 GROUP BY g1000'),
  ('one process', 'SELECT g37, gpu_topk(f4, 2000), gpu_bottomk(d, 10) FROM tg GROUP BY g37'),
  ('one process', 'SELECT g7919, gpu_topk_by(name, f8, 2), gpu_bottomk(i4, 3), gpu_bottomk_by(name, ts, 1) FROM tg GROUP BY g7919'),
  ('partial', 'SELECT g37, gpu_topk(f4, 2000) AS a, gpu_bottomk(d, 2000) AS b, gpu_topk(i8, 2000) AS c FROM tg GROUP BY g37'),
  ('partial', 'SELECT g37, gpu_topk_by(name, f4, 2000) AS a, gpu_bottomk(d, 2000) AS b FROM tg GROUP BY g37'),
  ('partitioned', 'SELECT g7919, gpu_topk(f8, 3), gpu_bottomk_by(id, ts, 2) FROM tg GROUP BY g7919'),
  ('partitioned', 'SELECT id, gpu_topk(i8, 1) FROM tg GROUP BY id');
SET max_parallel_workers_per_gather = 0;
SELECT q, c.* FROM spill_queries, spill_check(q) c WHERE form = 'one process';
-- rescanned after stopping early (EXISTS), spills and all; and an error
-- while spilling, which leaves no temporary file
SET plan_cache_mode = force_generic_plan;
SET work_mem = '64MB';
PREPARE spill_stop_early AS
SELECT x, EXISTS (SELECT FROM (SELECT id, gpu_bottomk(tz, 2) AS top FROM tg GROUP BY id OFFSET 0) s
                  WHERE s.id >= x AND s.top IS NOT NULL)
FROM generate_series(30004, 30008) x;
PREPARE spill_error AS
SELECT id, gpu_bottomk(tz, 2) FROM tg WHERE 1 / (id - 29000) <> 7 GROUP BY id;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) EXECUTE spill_stop_early;
EXPLAIN (COSTS OFF) EXECUTE spill_error;
RESET gputopk.device;
SET work_mem = '64kB';
EXECUTE spill_stop_early;
EXECUTE spill_error;
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();
DEALLOCATE spill_stop_early;
DEALLOCATE spill_error;
RESET work_mem;
RESET plan_cache_mode;
RESET max_parallel_workers_per_gather;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT q, c.* FROM spill_queries, spill_check(q) c WHERE form = 'partial';
SET parallel_tuple_cost = 0.001;
SELECT q, c.* FROM spill_queries, spill_check(q) c WHERE form = 'partitioned';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET gputopk.max_parallel_workers;

-- the plans (on the CPU backend, so that the output is the same on every machine)
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10) FROM tg WHERE i4 > 0 AND id % 2 = 0 GROUP BY g;
EXPLAIN (COSTS OFF) SELECT gpu_bottomk_by(name, ts, 2), gpu_topk(i8, 3) FROM tg;
\set ECHO none
\i sql/lib/explain_analyze.sql
\set ECHO all
SELECT pg_temp.explain_analyze($$SELECT g37, gpu_topk(f8, 10) FROM tg GROUP BY g37$$);

-- in a subquery, its WHERE clause shown with the table's columns
EXPLAIN (COSTS OFF)
SELECT * FROM tg_empty e, (SELECT g, gpu_topk(f8, 3) FROM tg WHERE id % 2 = 0 AND i4 > 0 GROUP BY g) s
WHERE e.g = s.g;
-- the rows' tableoid (also for the GpuTopK scan, which reads rows the same
-- way); the scan is not planned for other system columns
DO $$
DECLARE
  line text;
  scan boolean := false;
BEGIN
  FOR line IN EXPLAIN (COSTS OFF)
      SELECT id FROM tg WHERE tableoid = 'tg'::regclass ORDER BY f8 DESC LIMIT 3 LOOP
    scan := scan OR line LIKE '%(GpuTopK)%';
  END LOOP;
  RAISE NOTICE 'planned as GpuTopK: %', scan;
END $$;
SELECT count(*) FROM (SELECT id FROM tg WHERE tableoid = 'tg'::regclass ORDER BY f8 DESC LIMIT 3) s;
SELECT tableoid::regclass, id FROM tg ORDER BY f8 DESC NULLS LAST, id LIMIT 2;
EXPLAIN (COSTS OFF) SELECT ctid, id FROM tg ORDER BY f8 DESC LIMIT 2;

-- what the node does not take: PostgreSQL's Agg answers
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10) FROM tg GROUP BY g HAVING count(*) > 1;
EXPLAIN (COSTS OFF) SELECT name, gpu_topk(f8, 10) FROM tg GROUP BY name;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10), count(*) FROM tg GROUP BY g;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8 + 1, 10) FROM tg GROUP BY g;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 0) FROM tg GROUP BY g;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10) FROM tg GROUP BY g, b;
-- (as PostgreSQL 15 plans it: 16 and later sort by the aggregate's ORDER BY too)
DO $$ BEGIN
  IF current_setting('server_version_num')::int >= 160000 THEN
    PERFORM set_config('enable_presorted_aggregate', 'off', false);
  END IF;
END $$;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10 ORDER BY f8) FROM tg GROUP BY g;
DO $$ BEGIN
  IF current_setting('server_version_num')::int >= 160000 THEN
    PERFORM set_config('enable_presorted_aggregate', 'on', false);
  END IF;
END $$;
-- nor groups whose states would not fit in hash_mem
SET work_mem = '64kB';
EXPLAIN (COSTS OFF) SELECT id, gpu_topk(f8, 10) FROM tg GROUP BY id;
RESET work_mem;
-- nor a grouping column without statistics (its groups could be any number)
CREATE TABLE tg_fresh WITH (autovacuum_enabled = off) AS SELECT * FROM tg;
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(f8, 10) FROM tg_fresh GROUP BY g;
-- nor a table with row-level security, for a role it applies to: its
-- policies' clauses must run first
CREATE TABLE tg_rls AS SELECT * FROM tg;
ALTER TABLE tg_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY even ON tg_rls USING (id % 2 = 0);
ANALYZE tg_rls;
CREATE ROLE regress_gputopk_reader;
GRANT SELECT ON tg_rls TO regress_gputopk_reader;
GRANT EXECUTE ON FUNCTION agg_scan_check(text) TO regress_gputopk_reader;
SET ROLE regress_gputopk_reader;
SELECT * FROM agg_scan_check('SELECT g, gpu_topk(f8, 3) FROM tg_rls GROUP BY g');
RESET ROLE;
REVOKE ALL ON tg_rls FROM regress_gputopk_reader;
REVOKE ALL ON FUNCTION agg_scan_check(text) FROM regress_gputopk_reader;
DROP ROLE regress_gputopk_reader;
RESET gputopk.device;
-- bad k still gets the aggregates' own errors
SELECT g, gpu_topk(f8, 0) FROM tg GROUP BY g;

DROP FUNCTION agg_scan_check(text);
DROP FUNCTION plans_with(text);
DROP TABLE tg, tg_empty, tg_fresh, tg_rls;
RESET gputopk.min_table_rows;
