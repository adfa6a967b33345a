--
-- GpuTopKGroups: GROUP BY g ORDER BY <aggregate> LIMIT k planned as one scan
-- that groups the table and keeps only the groups that can be among the
-- first k + m, against the same queries with gputopk.enabled = off.  Rows
-- are compared as text, in order; min and max of floats print with + 0, as
-- PostgreSQL's own answer for -0 and 0 depends on the plan.
--
SET gputopk.min_table_rows = 0;
SET work_mem = '64MB';
-- the scan runs on the CPU backend, and is not offered under gpu: the same
-- plans whatever device the suite runs under
SET gputopk.device = cpu;
SELECT setseed(0.31);
CREATE TABLE gt WITH (autovacuum_enabled = off) AS
SELECT i AS id,
       CASE WHEN random() < 0.01 THEN NULL ELSE floor(400 * power(random(), 3))::int8 END AS g8,
       CASE WHEN random() < 0.01 THEN NULL ELSE (i % 97)::int4 END AS g4,
       CASE WHEN random() < 0.01 THEN NULL ELSE (floor(random() * 7) - 3)::int2 END AS g2,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() < 0.3 END AS gb,
       date '2024-01-01' + (i % 31) AS gd,
       timestamp '2024-01-01' + (i % 13) * interval '1 hour' AS gts,
       timestamptz '2024-01-01 UTC' + (i % 11) * interval '1 day' AS gtz,
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
       md5(i::text) AS name,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() * 2e6 - 1e6 END AS x8,
       CASE WHEN random() < 0.05 THEN NULL ELSE random()::float4 END AS x4,
       CASE WHEN random() < 0.02 THEN NULL
            ELSE 'user ' || floor(300 * power(random(), 2)) END AS gname,
       (CASE WHEN random() < 0.02 THEN NULL ELSE 'v' || i % 23 END)::varchar(8) AS gv,
       -- compressed in line, and short
       CASE WHEN i % 4 = 0 THEN repeat('long', 1000) || i % 3 ELSE 'short ' || i % 5 END AS glong
FROM generate_series(1, 20000) i;
-- extremes: sums past int8 (sum(int8) is numeric), NaN, infinities, -0 and 0,
-- a group of NULL values only
INSERT INTO gt (id, g8, g4, g2, gb, gd, gts, gtz, i2, i4, i8, f4, f8, d, ts, tz) VALUES
  (20001, 7, 7, 1, true, '2024-01-01', '2024-01-01', '2024-01-01 UTC', 32767, 2147483647,
   9223372036854775807, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity'),
  (20002, 7, 7, 1, true, '2024-01-01', '2024-01-01', '2024-01-01 UTC', 32767, 2147483647,
   9223372036854775807, '-Infinity', '-Infinity', '-infinity', '-infinity', '-infinity'),
  (20003, 7, 7, 1, true, '2024-01-01', '2024-01-01', '2024-01-01 UTC', -32768, -2147483648,
   -9223372036854775808, '-0', '-0', NULL, NULL, NULL),
  (20004, 7, 7, 1, true, '2024-01-01', '2024-01-01', '2024-01-01 UTC', 0, 0, 0, '0', '0',
   NULL, NULL, NULL),
  (20005, 100000, 100000, 100, false, '1999-01-01', '1999-01-01', '1999-01-01 UTC',
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
ANALYZE gt;

-- whether q gives the same rows, in the same order, with gputopk on and off,
-- and whether GpuTopKGroups ran it.  Off, PostgreSQL hashes the groups in
-- one process, which adds a group's floats in the table's order, as the scan
-- does: a sort's order would give sums that differ in the last bits (as
-- PostgreSQL's own plans differ from each other).  (Sorts priced out would
-- bring JIT in.)
CREATE FUNCTION groups_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  on_rows text;
  off_rows text;
  line text;
  planned boolean := false;
  partitioned boolean := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    planned := planned OR line LIKE '%GpuTopKGroups%';
    partitioned := partitioned OR line LIKE '%Partitions:%';
  END LOOP;
  EXECUTE format('SELECT string_agg(r::text, '' '' ORDER BY n) FROM (SELECT r, row_number() OVER () AS n FROM (%s) r) s', q)
    INTO on_rows;
  SET LOCAL gputopk.enabled = off;
  SET LOCAL enable_sort = off;
  SET LOCAL jit = off;
  SET LOCAL max_parallel_workers_per_gather = 0;
  EXECUTE format('SELECT string_agg(r::text, '' '' ORDER BY n) FROM (SELECT r, row_number() OVER () AS n FROM (%s) r) s', q)
    INTO off_rows;
  SET LOCAL gputopk.enabled = on;
  RESET enable_sort;
  RESET jit;
  RESET max_parallel_workers_per_gather;
  IF on_rows IS DISTINCT FROM off_rows THEN
    RETURN 'MISMATCH';
  END IF;
  RETURN CASE WHEN partitioned THEN 'GpuTopKGroups, partitioned'
              WHEN planned THEN 'GpuTopKGroups' ELSE 'PostgreSQL' END;
END $$;

-- the plan, and what EXPLAIN ANALYZE shows
EXPLAIN (COSTS OFF)
SELECT g8, count(*) AS n FROM gt GROUP BY g8 ORDER BY n DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT g4, sum(i4), max(f8) FROM gt WHERE i2 > 0 AND name <> 'x' GROUP BY g4
ORDER BY max(f8) NULLS LAST, g4 LIMIT 3 OFFSET 2;
\i sql/lib/explain_analyze.sql
SELECT line
FROM pg_temp.explain_analyze($$SELECT g8, count(*) AS n FROM gt GROUP BY g8 ORDER BY n DESC LIMIT 5$$) line
WHERE line !~ 'Memory';
SELECT g8, count(*) AS n FROM gt GROUP BY g8 ORDER BY n DESC, g8 LIMIT 5;

-- not offered: HAVING, avg of integers first, a grouping
-- it does not take (char(n): its equality ignores trailing spaces; text with
-- another column; three columns), LIMIT not a constant, no LIMIT, DISTINCT
EXPLAIN (COSTS OFF)
SELECT g8, count(*) FROM gt GROUP BY g8 HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT g8, avg(i4) FROM gt GROUP BY g8 ORDER BY avg(i4) DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT name::char(40), count(*) FROM gt GROUP BY 1 ORDER BY count(*) DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT gname, g2, count(*) FROM gt GROUP BY gname, g2 ORDER BY count(*) DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT g2, gb, gd, count(*) FROM gt GROUP BY g2, gb, gd ORDER BY count(*) DESC LIMIT 5;
PREPARE groups_param(int8) AS
SELECT g8, count(*) FROM gt GROUP BY g8 ORDER BY count(*) DESC LIMIT $1;
EXPLAIN (COSTS OFF) EXECUTE groups_param(5);
DEALLOCATE groups_param;
EXPLAIN (COSTS OFF)
SELECT g8, count(*) FROM gt GROUP BY g8 ORDER BY count(*) DESC;
EXPLAIN (COSTS OFF)
SELECT DISTINCT count(*) FROM gt GROUP BY g8 ORDER BY count(*) DESC LIMIT 5;
EXPLAIN (COSTS OFF)
SELECT g8, count(*) FROM gt WHERE i4 > 0 GROUP BY g8 ORDER BY count(*) LIMIT 1;

-- other aggregates along (string_agg, ...): the rows form returns the rows
-- of the groups kept to PostgreSQL's HashAggregate, which computes every
-- aggregate over them; not where an aggregate sorts its rows (DISTINCT,
-- ORDER BY) or the groups are ranked by a grouping column.  Over this small
-- table PostgreSQL's plan costs less than two reads of it: its sequential
-- scan priced out, the rows form shows.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT g8, string_agg(name, ',') FROM gt GROUP BY g8 ORDER BY count(*) DESC LIMIT 5;
SELECT groups_check(q), q FROM (VALUES
  ('SELECT g8, string_agg(name, '','') AS s, count(*) AS n FROM gt GROUP BY g8 ORDER BY n DESC, g8 LIMIT 5'),
  ('SELECT g4, bool_and(i2 > 0), bit_or(i4), variance(i4), count(*) FROM gt WHERE i2 < 50 GROUP BY g4 ORDER BY count(*), g4 LIMIT 7 OFFSET 2'),
  ('SELECT gname, array_agg(i4), sum(i4) AS t FROM gt GROUP BY gname ORDER BY t DESC NULLS LAST, gname LIMIT 3'),
  ('SELECT g2, gb, json_agg(name), max(i8) AS m FROM gt GROUP BY g2, gb ORDER BY m DESC NULLS FIRST, g2, gb FETCH FIRST 4 ROWS WITH TIES'),
  ('SELECT glong, string_agg(gv, '';''), min(d) AS m FROM gt GROUP BY glong ORDER BY m, glong LIMIT 2'),
  ('SELECT g8, stddev(f8), count(*) FROM gt WHERE g8 > 10 GROUP BY g8 ORDER BY count(*) DESC, g8 LIMIT 4'),
  ('SELECT g4, string_agg(gv, '',''), count(*) AS n FROM gt WHERE name LIKE ''a%'' GROUP BY g4 ORDER BY n DESC, g4 LIMIT 3'),
  ('SELECT gd, length(string_agg(name, '''')), sum(i2) AS t FROM gt GROUP BY gd ORDER BY t, gd LIMIT 3 OFFSET 1'),
  ('SELECT g8, count(DISTINCT i2), count(*) FROM gt GROUP BY g8 ORDER BY count(*) DESC, g8 LIMIT 5'),
  ('SELECT g8, string_agg(name, '','' ORDER BY name) FROM gt GROUP BY g8 ORDER BY count(*) DESC, g8 LIMIT 5'),
  ('SELECT g8, bool_or(i2 > 0), count(*) FROM gt GROUP BY g8 ORDER BY g8 DESC LIMIT 5')
) v(q);
RESET enable_seqscan;

-- every aggregate as the rank, each direction and NULLS placement, with the
-- grouping column breaking ties (a total order), an OFFSET, other aggregates
-- along, over every grouping type
-- (an aggregate ranked, as shown: min and max of floats + 0)
CREATE FUNCTION groups_queries(groups text[], aggs text[], shown text[], ords text[])
RETURNS SETOF text LANGUAGE sql AS $$
SELECT format('SELECT %s, %s, count(*), min(i4), max(f4) + 0, avg(i2) FROM gt%s GROUP BY %s ORDER BY %s %s, %s LIMIT %s%s',
              g, a.shown, filter, g, a.agg, ord, g, k, offset_clause)
FROM unnest(groups) g,
     unnest(aggs, shown) a(agg, shown),
     unnest(ords) ord,
     unnest(ARRAY['', ' WHERE i4 > 0']) filter,
     unnest(ARRAY[1, 1000], ARRAY['', ' OFFSET 3']) l(k, offset_clause)
$$;
CREATE TEMP TABLE groups_checks AS
SELECT q, groups_check(q) AS result
FROM groups_queries(ARRAY['g8', 'g4', 'g2', 'gb', 'gd', 'gts', 'gtz', 'gname', 'gv', 'glong',
                          'g2, gb', 'gd, g8'],
                    ARRAY['count(*)', 'count(i8)', 'sum(i2)', 'sum(i4)', 'sum(i8)', 'min(i2)',
                          'max(i4)', 'min(i8)', 'max(f4)', 'min(f8)', 'max(d)', 'min(ts)',
                          'max(tz)', 'sum(x8)', 'sum(x4)', 'avg(x8)', 'avg(f4)'],
                    ARRAY['count(*)', 'count(i8)', 'sum(i2)', 'sum(i4)', 'sum(i8)', 'min(i2)',
                          'max(i4)', 'min(i8)', 'max(f4) + 0', 'min(f8) + 0', 'max(d)', 'min(ts)',
                          'max(tz)', 'sum(x8)', 'sum(x4)', 'avg(x8)', 'avg(f4)'],
                    ARRAY['DESC', 'ASC', 'DESC NULLS LAST', 'ASC NULLS FIRST']) q;
SELECT result, count(*) FROM groups_checks GROUP BY result ORDER BY result;
SELECT q FROM groups_checks WHERE result = 'MISMATCH' LIMIT 5;

-- ranked by a grouping column (of a type with keys: not bool); of two
-- columns, the other orders the groups tied on the first
EXPLAIN (COSTS OFF)
SELECT gd, count(*) FROM gt GROUP BY gd ORDER BY gd DESC LIMIT 3;
CREATE TEMP TABLE groups_by_key AS
SELECT q, groups_check(q) AS result
FROM (SELECT format('SELECT %s, count(*), sum(i4) FROM gt%s GROUP BY %s ORDER BY %s %s%s LIMIT %s',
                    g, filter, g, r, ord, rest, k) AS q
      FROM unnest(ARRAY['g8', 'g4', 'g2', 'gd', 'gts', 'gtz', 'gb', 'g2, gb', 'gd, g8'],
                  ARRAY['g8', 'g4', 'g2', 'gd', 'gts', 'gtz', 'gb', 'g2', 'g8'],
                  ARRAY['', '', '', '', '', '', '', ', gb', ', gd']) p(g, r, rest),
           unnest(ARRAY['DESC', 'ASC', 'DESC NULLS LAST', 'ASC NULLS FIRST']) ord,
           unnest(ARRAY['', ' WHERE i4 > 0']) filter,
           unnest(ARRAY[1, 5, 1000]) k) queries;
SELECT result, count(*) FROM groups_by_key GROUP BY result ORDER BY result;
SELECT q FROM groups_by_key WHERE result = 'MISMATCH' LIMIT 5;

-- ties at the boundary: only the ranked values are determined, and WITH TIES
-- takes them all
SELECT groups_check('SELECT n FROM (SELECT g2, count(*) AS n FROM gt GROUP BY g2 ORDER BY n DESC LIMIT 3) s');
SELECT groups_check('SELECT * FROM (SELECT gd, count(*) AS n FROM gt GROUP BY gd ORDER BY n DESC FETCH FIRST 2 ROWS WITH TIES) s ORDER BY gd');
SELECT groups_check('SELECT * FROM (SELECT gd, max(i2) AS m FROM gt GROUP BY gd ORDER BY m DESC OFFSET 1 FETCH FIRST 1 ROW WITH TIES) s ORDER BY gd');
-- two grouping columns, NULLs in either
EXPLAIN (COSTS OFF)
SELECT g2, gb, count(*) AS n FROM gt GROUP BY g2, gb ORDER BY n DESC LIMIT 3;
SELECT g2, gb, count(*) AS n FROM gt GROUP BY gb, g2 ORDER BY n, g2, gb LIMIT 4;
-- text groups: the plan, and values compressed in the table
EXPLAIN (COSTS OFF)
SELECT gname, count(*) AS n FROM gt GROUP BY gname ORDER BY n DESC LIMIT 3;
SELECT length(glong), right(glong, 5), count(*) AS n FROM gt GROUP BY glong ORDER BY n, glong LIMIT 4;
-- the answers themselves: sums past int8, NaN on top, the NULL-only group
SELECT g8, sum(i8), sum(i4), count(i8), max(f8), min(f4) + 0 FROM gt
GROUP BY g8 ORDER BY sum(i8) DESC NULLS LAST, g8 LIMIT 3;
SELECT g8, max(f4), count(*) FROM gt GROUP BY g8 ORDER BY max(f4) DESC, g8 LIMIT 2;
SELECT g8, sum(i8), max(tz), avg(i8) FROM gt GROUP BY g8 ORDER BY sum(i8) NULLS FIRST, g8 LIMIT 2;
-- a float sum that overflows, and an avg whose sum of squares does: the
-- error, as from PostgreSQL's own transition functions
CREATE TABLE go AS
SELECT * FROM (VALUES (1, 1e308::float8), (1, 1e308), (2, 1e200), (2, -1e200), (3, 1)) v(g, x);
ANALYZE go;
SELECT g, sum(x) FROM go GROUP BY g ORDER BY sum(x) DESC LIMIT 1;
SELECT g, avg(x) FROM go WHERE g > 1 GROUP BY g ORDER BY avg(x) DESC LIMIT 1;
SET gputopk.enabled = off;
SELECT g, sum(x) FROM go GROUP BY g ORDER BY sum(x) DESC LIMIT 1;
SELECT g, avg(x) FROM go WHERE g > 1 GROUP BY g ORDER BY avg(x) DESC LIMIT 1;
RESET gputopk.enabled;
EXPLAIN (COSTS OFF) SELECT g, avg(x) FROM go WHERE g > 1 GROUP BY g ORDER BY avg(x) DESC LIMIT 1;
DROP TABLE go;
-- more groups kept than there are; a WHERE clause that no row passes
SELECT groups_check('SELECT g2, count(*) FROM gt GROUP BY g2 ORDER BY count(*), g2 LIMIT 100');
SELECT groups_check('SELECT g2, count(*) FROM gt WHERE id < 0 GROUP BY g2 ORDER BY count(*) LIMIT 5');
-- in a subquery under a join; not offered where WHERE refers outside the query
SELECT groups_check('SELECT s.g4, s.n, t.id FROM (SELECT g4, count(*) AS n FROM gt GROUP BY g4 ORDER BY n DESC, g4 LIMIT 2) s JOIN gt t ON t.g4 = s.g4 AND t.id < 300 ORDER BY 1, 3');
SELECT groups_check('SELECT x, (SELECT n FROM (SELECT g2, count(*) AS n FROM gt WHERE i2 < x GROUP BY g2 ORDER BY n DESC, g2 LIMIT 1) s) FROM generate_series(-50, 50, 25) x');

-- groups that outgrow hash_mem as the query runs (planned with more memory):
-- in one process they spill to files and are read back by partition; with a
-- float sum, whose cells do not combine, or text groups, they grow in memory
PREPARE groups_many AS
SELECT id, count(*), sum(i8), max(f4) + 0 FROM gt GROUP BY id ORDER BY sum(i8) DESC NULLS LAST, id LIMIT 4;
PREPARE groups_many_float AS
SELECT id, sum(x8), count(*) FROM gt GROUP BY id ORDER BY sum(x8) DESC NULLS LAST, id LIMIT 2;
PREPARE groups_many_text AS
SELECT name, count(*), max(i4) FROM gt GROUP BY name ORDER BY max(i4) DESC NULLS LAST, name LIMIT 2;
SET gputopk.enabled = off;
PREPARE groups_many_plain AS
SELECT id, count(*), sum(i8), max(f4) + 0 FROM gt GROUP BY id ORDER BY sum(i8) DESC NULLS LAST, id LIMIT 4;
RESET gputopk.enabled;
-- the plans are made at the first EXECUTE, with this memory
SELECT bool_and(true) FROM (SELECT pg_temp.explain_analyze('EXECUTE ' || p)
                            FROM unnest(ARRAY['groups_many', 'groups_many_float',
                                              'groups_many_text', 'groups_many_plain']) p) e;
SET work_mem = '64kB';
-- (the partitions, and so the groups kept in all, depend on the memory taken)
SELECT regexp_replace(line, '(Spill Partitions|Groups Returned): [0-9]+', '\1: N')
FROM pg_temp.explain_analyze('EXECUTE groups_many') line
WHERE line ~ '^ *(Spill Partitions|Groups|Groups Returned):';
SELECT line FROM pg_temp.explain_analyze('EXECUTE groups_many_float') line
WHERE line ~ '^ *(Spill Partitions|Groups|Groups Returned):';
EXECUTE groups_many;
EXECUTE groups_many_plain;
EXECUTE groups_many_float;
EXECUTE groups_many_text;
SET work_mem = '64MB';
DEALLOCATE groups_many;
DEALLOCATE groups_many_float;
DEALLOCATE groups_many_text;
DEALLOCATE groups_many_plain;

-- the partitioned form, in parallel plans priced so that they win: its
-- processes exchange their groups' cells by partition and each keeps its
-- partitions' first groups (float sums, whose cells do not combine, stay in
-- one process)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET gputopk.max_parallel_workers = 3;
EXPLAIN (COSTS OFF)
SELECT g8, count(*) AS n, max(i4) FROM gt WHERE i2 > 0 GROUP BY g8 ORDER BY n DESC, g8 LIMIT 5;
SELECT line
FROM pg_temp.explain_analyze($$SELECT g8, count(*) AS n FROM gt GROUP BY g8 ORDER BY n DESC, g8 LIMIT 5$$) line
WHERE line ~ '^ *(Partitions|Rows Scanned|Groups|Groups Returned):';
EXPLAIN (COSTS OFF)
SELECT g8, sum(x8) FROM gt GROUP BY g8 ORDER BY sum(x8) DESC LIMIT 5;
CREATE TEMP TABLE groups_parallel AS
SELECT q, groups_check(q) AS result
FROM groups_queries(ARRAY['g8', 'g4', 'g2', 'gb', 'gd', 'gts', 'gtz', 'gname', 'g2, gb'],
                    ARRAY['count(*)', 'count(i8)', 'sum(i4)', 'sum(i8)', 'min(i2)', 'max(f4)',
                          'max(tz)'],
                    ARRAY['count(*)', 'count(i8)', 'sum(i4)', 'sum(i8)', 'min(i2)', 'max(f4) + 0',
                          'max(tz)'],
                    ARRAY['DESC', 'ASC NULLS FIRST']) q;
SELECT result, count(*) FROM groups_parallel GROUP BY result ORDER BY result;
SELECT q FROM groups_parallel WHERE result = 'MISMATCH' LIMIT 5;
-- the partitioned form in one process, through the same files: outside
-- parallel mode (a set-returning SQL function run row by row)
CREATE FUNCTION groups_outside() RETURNS TABLE (g4 int4, n int8, s numeric) LANGUAGE sql
AS 'SELECT g4, count(*) AS n, sum(i8) FROM gt GROUP BY g4 ORDER BY n DESC, g4 LIMIT 3';
SELECT (r).* FROM (SELECT groups_outside() AS r OFFSET 0) s;
SET gputopk.enabled = off;
SELECT (r).* FROM (SELECT groups_outside() AS r OFFSET 0) s;
RESET gputopk.enabled;
DROP FUNCTION groups_outside();
-- an error in a process: no temporary file is left behind (the leader or a
-- worker may raise it, so its CONTEXT line is not shown)
\set SHOW_CONTEXT never
SELECT g8, count(*) FROM gt WHERE 1 / (id - 20000) <> 7 GROUP BY g8 ORDER BY count(*) DESC LIMIT 2;
\set SHOW_CONTEXT errors
SELECT count(*) AS temporary_files FROM pg_ls_tmpdir();
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET gputopk.max_parallel_workers;

-- random queries over the same shapes, with random LIMIT, OFFSET and WHERE
SELECT setseed(0.77);
SELECT 'random queries, seed 0.77' AS suite;
CREATE TEMP TABLE groups_random AS
SELECT q, groups_check(q) AS result
FROM (SELECT format('SELECT %s, %s + 0, count(i4), max(i8), sum(x8), avg(x4) FROM gt%s GROUP BY %s ORDER BY %s %s, %s LIMIT %s OFFSET %s',
                    g, agg, filter, g, agg, ord, g, k, m) AS q
      FROM (SELECT (ARRAY['g8', 'g4', 'g2', 'gb', 'gd', 'gts', 'gtz'])[1 + floor(random() * 7)::int] AS g,
                   (ARRAY['count(*)', 'count(f4)', 'sum(i2)', 'sum(i4)', 'sum(i8)', 'min(i4)',
                          'max(i8)', 'max(f8)', 'min(f4)', 'max(i2)', 'sum(f8)', 'sum(x4)',
                          'avg(x4)', 'avg(f8)'])[1 + floor(random() * 14)::int] AS agg,
                   (ARRAY['DESC', 'ASC', 'DESC NULLS LAST', 'ASC NULLS FIRST'])[1 + floor(random() * 4)::int] AS ord,
                   (ARRAY['', ' WHERE i2 > 0', ' WHERE f8 < 0 OR ts IS NULL', ' WHERE id % 3 = 0'])[1 + floor(random() * 4)::int] AS filter,
                   1 + floor(random() * 20)::int AS k,
                   floor(random() * 5)::int AS m
            FROM generate_series(1, 200)) p) queries;
SELECT result, count(*) FROM groups_random GROUP BY result ORDER BY result;
SELECT q FROM groups_random WHERE result = 'MISMATCH' LIMIT 5;

-- numeric: sum, avg, min and max over NaN, infinities, NULLs, and scales
-- that compare equal (1.0 and 1.00: min and max keep the later one); min
-- and max of other ordered types: text and varchar (long ones compressed,
-- another collation), interval
CREATE TABLE gn AS
SELECT id, g8, g4, gts, gname, gv, glong,
       CASE WHEN id % 53 = 0 THEN NULL
            WHEN id % 997 = 0 THEN 'NaN'::numeric
            WHEN id % 1999 = 0 THEN 'Infinity'::numeric
            WHEN id % 2999 = 0 THEN '-Infinity'::numeric
            ELSE round(i4::numeric / 1e8, (id % 4)::int) END AS nm,
       CASE WHEN id % 41 = 0 THEN NULL ELSE make_interval(days => id % 37, secs => id % 1009) END AS iv
  FROM gt;
ANALYZE gn;
SELECT q, groups_check(q) FROM (VALUES
  ('SELECT g8, max(gname) AS m, min(gv), count(*) FROM gn GROUP BY g8 ORDER BY m DESC, g8 LIMIT 6'),
  ('SELECT g4, min(glong) AS m, max(glong) FROM gn GROUP BY g4 ORDER BY m, g4 LIMIT 5'),
  ('SELECT g8, max(gname COLLATE "C") AS m FROM gn GROUP BY g8 ORDER BY m NULLS FIRST, g8 LIMIT 9'),
  ('SELECT gts, max(iv) AS m, min(iv) FROM gn GROUP BY gts ORDER BY m DESC NULLS LAST, gts LIMIT 7')) v(q);
SELECT q, groups_check(q) FROM (VALUES
  ('SELECT g8, sum(nm) AS s, avg(nm), count(nm) FROM gn GROUP BY g8 ORDER BY s DESC, g8 LIMIT 7'),
  ('SELECT g4, max(nm) AS m, min(nm) FROM gn GROUP BY g4 ORDER BY m, g4 LIMIT 5 OFFSET 3'),
  ('SELECT gts, min(nm) AS m FROM gn GROUP BY gts ORDER BY m DESC NULLS LAST, gts LIMIT 10'),
  ('SELECT g8, g4, sum(nm) AS s FROM gn GROUP BY g8, g4 ORDER BY s NULLS FIRST, g8, g4 LIMIT 10'),
  ('SELECT g4, max(nm) AS m, count(*) FROM gn WHERE g8 < 20 GROUP BY g4 ORDER BY m DESC, g4 LIMIT 8')) v(q);
-- avg of numerics does not rank
EXPLAIN (COSTS OFF)
SELECT g8, avg(nm) FROM gn GROUP BY g8 ORDER BY 2 DESC LIMIT 5;
DROP TABLE gn;
DROP TABLE gt;

-- ranked by a grouping column while the set of groups is written out
-- (spilled, or the partitioned form's records) and its groups made again:
-- each counts once among the best groups seen (counted twice, it dropped
-- rows of groups in the answer, whose counts came out too low).  Planned
-- with 4MB (16MB for 300,000 groups) and run with 4MB or 64kB in one
-- process; in parallel plans with 4MB and 64kB.
-- (autovacuum off: its VACUUM would replan the statements prepared below under another work_mem)
CREATE TABLE tg WITH (autovacuum_enabled = off) AS
  SELECT ((g::int8 * 7919) % 100000)::int AS a, (g / 100000) % 5 AS b
  FROM generate_series(1, 1000000) g;
ANALYZE tg;
CREATE TABLE tg1 WITH (autovacuum_enabled = off) AS
  SELECT ((g::int8 * 7919) % 300000)::int AS a FROM generate_series(1, 1000000) g;
ANALYZE tg1;
-- how GpuTopKGroups ran q (or run, EXECUTE of q prepared), and how many of
-- its rows PostgreSQL's answer lacks
\i sql/lib/groups_compare.sql
CREATE FUNCTION groups_differ(q text, run text DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  on_rows text[] := pg_temp.groups_rows(coalesce(run, q), true);
  off_rows text[] := pg_temp.groups_rows(q, false);
BEGIN
  RETURN pg_temp.groups_form(coalesce(run, q)) || ': ' || cardinality(on_rows) || ' rows, ' ||
    (SELECT count(*) FROM (SELECT unnest(on_rows) EXCEPT ALL SELECT unnest(off_rows)) d) ||
    ' not PostgreSQL''s';
END $$;
SET max_parallel_workers_per_gather = 0;
SET work_mem = '4MB';
PREPARE tg_pairs AS SELECT a, b, count(*) FROM tg GROUP BY a, b ORDER BY a, b LIMIT 3 OFFSET 60000;
EXPLAIN (COSTS OFF) EXECUTE tg_pairs;
SET work_mem = '16MB';
PREPARE tg_one AS SELECT a, count(*) FROM tg1 GROUP BY a ORDER BY a LIMIT 1000;
EXPLAIN (COSTS OFF) EXECUTE tg_one;
SET work_mem = '4MB';
SELECT groups_differ('SELECT a, b, count(*) FROM tg GROUP BY a, b ORDER BY a, b LIMIT 3 OFFSET 60000', 'EXECUTE tg_pairs');
EXECUTE tg_pairs;
SET work_mem = '64kB';
SELECT groups_differ('SELECT a, count(*) FROM tg1 GROUP BY a ORDER BY a LIMIT 1000', 'EXECUTE tg_one');
DEALLOCATE tg_pairs;
DEALLOCATE tg_one;
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT groups_differ('SELECT a, b, count(*) FROM tg GROUP BY a, b ORDER BY a, b LIMIT 3 OFFSET 60000');
SELECT groups_differ('SELECT a, count(*) FROM tg1 GROUP BY a ORDER BY a LIMIT 1000');
SELECT groups_differ('SELECT a, b, count(*) FROM tg GROUP BY a, b ORDER BY b DESC, a LIMIT 300 OFFSET 60000');
SET work_mem = '64kB';
SELECT groups_differ('SELECT a, count(*) FROM tg1 GROUP BY a ORDER BY a DESC LIMIT 1000');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP FUNCTION groups_differ(text, text);
DROP TABLE tg, tg1;
