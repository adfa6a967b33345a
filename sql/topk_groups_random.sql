--
-- Random top-groups queries, each compared with the same query under
-- gputopk.enabled = off, in three set-ups: as planned; planned with the
-- default work_mem and run with 64kB, so that the scan in one process spills
-- its groups to files and makes them again; and a parallel plan priced to
-- win, planned and run with 64kB, so that the partitioned form's processes
-- write their groups several times.  The groups are ranked by a grouping
-- column (of one or two) as often as by an aggregate, ASC or DESC, NULLs
-- first or last, with LIMIT, OFFSET or WITH TIES.  Under gputopk.device = gpu
-- the GPU form runs them, its pages after writes grouped on the CPU.
-- gputopk_test.seed and gputopk_test.groups_queries give the seed and the
-- number of queries, each run in the three set-ups; test/run sets them,
-- prints the seed and reports the counts from groups_random_checks, which
-- stays behind for that.
--
-- A query ranked with WITH TIES orders by its first key alone: its rows are
-- compared as a set.  Every other query orders by every grouping column
-- after its first key, and its rows are compared in order.
--
SELECT setseed((coalesce(current_setting('gputopk_test.seed', true), '1')::int8 % 1000000)
               / 1000000.0);
SET gputopk.min_table_rows = 1000;

-- grouping columns of every type the scan groups by, from 2 to 9,000 groups
-- and NULL groups; the rows of ids 10,000 to 12,000 written after the VACUUM,
-- so that their pages are not all-visible
CREATE TABLE grt AS
SELECT i AS id,
       CASE WHEN random() < 0.01 THEN NULL ELSE floor(9000 * power(random(), 2))::int4 END AS gh,
       CASE WHEN random() < 0.01 THEN NULL ELSE (i * 7919 % 1500)::int8 END AS gm,
       CASE WHEN random() < 0.02 THEN NULL ELSE (floor(random() * 300) - 150)::int2 END AS gs,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() < 0.3 END AS gb,
       CASE WHEN random() < 0.02 THEN NULL ELSE date '2000-01-01' + (i * 31 % 3000) END AS gd,
       CASE WHEN random() < 0.02 THEN NULL
            ELSE timestamptz '2000-01-01 UTC' + floor(random() * 5000) * interval '1 hour' END AS gts,
       CASE WHEN random() < 0.03 THEN NULL ELSE 'v' || floor(400 * power(random(), 2)) END AS gt,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2000-01-01' + random() * interval '10000 days' END AS ts
  FROM generate_series(1, 40000) i;
ALTER TABLE grt SET (autovacuum_enabled = off);
VACUUM (FREEZE, ANALYZE) grt;
UPDATE grt SET i4 = i4 / 2, gh = gh + 1 WHERE id BETWEEN 10000 AND 12000;

CREATE FUNCTION groups_pick(VARIADIC choices text[]) RETURNS text LANGUAGE sql AS
$$ SELECT choices[1 + floor(random() * array_length(choices, 1))::int] $$;

CREATE FUNCTION groups_random_query() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  choice int := 1 + floor(random() * 12)::int;
  groups text[] := (ARRAY[ARRAY['gh', NULL], ARRAY['gm', NULL], ARRAY['gs', NULL],
                          ARRAY['gd', NULL], ARRAY['gts', NULL], ARRAY['gt', NULL],
                          ARRAY['gh', 'gs'], ARRAY['gs', 'gh'], ARRAY['gd', 'gb'],
                          ARRAY['gb', 'gm'], ARRAY['gm', 'gd'], ARRAY['gts', 'gh']])[choice:choice];
  columns text[];
  rankable text[];
  rank text;
  dir text := groups_pick('', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST');
  ties boolean := random() < 0.2;
  q text;
BEGIN
  -- the grouping's columns, a NULL second one dropped
  SELECT array_agg(c ORDER BY n) INTO columns
    FROM unnest(groups) WITH ORDINALITY AS u(c, n) WHERE c IS NOT NULL;
  -- a grouping column ranks unless it is bool or text
  SELECT array_agg(c) INTO rankable FROM unnest(columns) c WHERE c NOT IN ('gb', 'gt');
  IF rankable IS NOT NULL AND random() < 0.5 THEN
    rank := rankable[1 + floor(random() * cardinality(rankable))::int];
  ELSE
    rank := groups_pick('count(*)', 'count(i4)', 'sum(i2)', 'sum(i4)', 'sum(i8)', 'min(i4)',
                        'max(i8)', 'min(ts)', 'max(i2)');
  END IF;
  q := format('SELECT %s, %s AS r, count(i4), sum(i8), min(ts), avg(i2), max(gm) FROM grt%s GROUP BY %s ORDER BY %s%s',
              array_to_string(columns, ', '), rank,
              groups_pick('', ' WHERE i2 > 0', ' WHERE i4 < 0 OR ts IS NULL', ' WHERE id % 3 = 0',
                          ' WHERE gh < 500'),
              array_to_string(columns, ', '), rank, dir);
  IF ties THEN
    RETURN q || format(' FETCH FIRST %s ROWS WITH TIES', groups_pick('1', '3', '10', '100', '1000'));
  END IF;
  -- the other grouping columns make the order total
  SELECT q || coalesce(string_agg(', ' || c, ''), '') INTO q FROM unnest(columns) c WHERE c <> rank;
  RETURN q || format(groups_pick(' LIMIT %s', ' LIMIT %s OFFSET %s', ' LIMIT %s OFFSET %s'),
                     groups_pick('1', '3', '10', '100', '1000', '20000'),
                     groups_pick('1', '5', '50', '2000'));
END $$;

\i sql/lib/explain_analyze.sql
\i sql/lib/groups_compare.sql
-- What q returns under the set-up: 'same', or 'MISMATCH', then the form that
-- ran it, as EXPLAIN ANALYZE says.  It is prepared, planned under the set-up
-- and then run, so that 'spill' runs a plan made with more memory.
CREATE FUNCTION groups_random_check(q text, setup text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  form text;
  on_rows text[];
  off_rows text[];
BEGIN
  PERFORM set_config('work_mem', CASE setup WHEN 'parallel' THEN '64kB' ELSE '4MB' END, true);
  PERFORM set_config('parallel_setup_cost', CASE setup WHEN 'parallel' THEN '0' ELSE '1000' END, true);
  PERFORM set_config('parallel_tuple_cost', CASE setup WHEN 'parallel' THEN '0' ELSE '0.1' END, true);
  PERFORM set_config('min_parallel_table_scan_size', CASE setup WHEN 'parallel' THEN '0' ELSE '8MB' END, true);
  PERFORM set_config('max_parallel_workers_per_gather', '2', true);
  EXECUTE 'PREPARE groups_random_q AS ' || q;
  -- its plan, made now and kept (it has no parameters)
  EXECUTE 'EXPLAIN (COSTS OFF) EXECUTE groups_random_q';
  IF setup = 'spill' THEN
    PERFORM set_config('work_mem', '64kB', true);
  END IF;
  form := pg_temp.groups_form('EXECUTE groups_random_q');
  on_rows := pg_temp.groups_rows('EXECUTE groups_random_q', true);
  DEALLOCATE groups_random_q;
  PERFORM set_config('work_mem', '4MB', true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  off_rows := pg_temp.groups_rows(q, false);
  IF q LIKE '%WITH TIES' THEN
    on_rows := ARRAY(SELECT unnest(on_rows) ORDER BY 1);
    off_rows := ARRAY(SELECT unnest(off_rows) ORDER BY 1);
  END IF;
  RETURN CASE WHEN on_rows = off_rows THEN 'same: ' ELSE 'MISMATCH: ' END || form;
END $$;

CREATE TABLE groups_random_checks (n int, q text, setup text, result text);
DO $$
DECLARE
  q text;
  setup text;
BEGIN
  FOR n IN 1 .. coalesce(current_setting('gputopk_test.groups_queries', true)::int, 100) LOOP
    q := groups_random_query();
    FOREACH setup IN ARRAY ARRAY['planned', 'spill', 'parallel'] LOOP
      BEGIN
        INSERT INTO groups_random_checks VALUES (n, q, setup, groups_random_check(q, setup));
      EXCEPTION WHEN OTHERS THEN
        INSERT INTO groups_random_checks VALUES (n, q, setup, 'ERROR: ' || SQLERRM);
      END;
    END LOOP;
  END LOOP;
END $$;

-- every query ran, GpuTopKGroups ran most of them, ranked by a grouping
-- column too; where the GPU groups none (no GPU), it spilled and ran
-- partitioned (the GPU form does neither, and wins where there is one);
-- under gputopk.device = gpu the GPU grouped the pages
SELECT count(*) = 3 * coalesce(current_setting('gputopk_test.groups_queries', true)::int, 100) AS all_ran,
       count(*) FILTER (WHERE result LIKE 'same: GpuTopKGroups%') > count(*) / 2 AS mostly_gputopk,
       count(*) FILTER (WHERE result LIKE 'same: GpuTopKGroups%' AND
                        q LIKE '%ORDER BY g%') > 0 AS ranked_by_a_grouping_column,
       count(*) FILTER (WHERE result LIKE '%spilled%') > 0 OR
         count(*) FILTER (WHERE result LIKE '%on the GPU%') > 0 AS spilled_unless_on_the_gpu,
       count(*) FILTER (WHERE result LIKE '%partitioned%') > 0 OR
         count(*) FILTER (WHERE result LIKE '%on the GPU%') > 0 AS partitioned_unless_on_the_gpu,
       count(*) FILTER (WHERE result LIKE '%on the GPU%') > 0 OR
         current_setting('gputopk.device') <> 'gpu' AS on_the_gpu_if_demanded
FROM groups_random_checks;
SELECT n, q, setup, result FROM groups_random_checks WHERE result NOT LIKE 'same: %' LIMIT 20;

DROP FUNCTION groups_random_check(text, text), groups_random_query(), groups_pick(text[]);
DROP TABLE grt;
