--
-- GpuTopK custom scan: plans, and answers against plain PostgreSQL
--
\set ECHO none
\i sql/lib/explain_analyze.sql
\set ECHO all
SET gputopk.min_table_rows = 1000;
SELECT setseed(0.42);
CREATE TABLE tk AS
SELECT i AS id,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 2000 - 1000)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 100 - 50)::float4 END AS f4,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() * 1e6 - 5e5 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2000-01-01' + (random() * 10000)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2000-01-01' + random() * interval '10000 days' END AS ts,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamptz '2000-01-01 UTC' + random() * interval '10000 days' END AS tz,
       (i % 7)::int4 AS g,
       repeat('x', (i % 5) * 1000) AS wide
FROM generate_series(1, 20000) i;
-- extremes, NaN, infinities, -0 and NULL-only rows
INSERT INTO tk (id, i2, i4, i8, f4, f8, d, ts, tz, g) VALUES
  (20001, 32767, 2147483647, 9223372036854775807, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity', 7),
  (20002, -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity', '-infinity', '-infinity', '-infinity', 7),
  (20003, 0, 0, 0, '-0', '-0', '2000-01-01', '2000-01-01', '2000-01-01 UTC', 7),
  (20004, 0, 0, 0, '0', '0', '2000-01-01', '2000-01-01', '2000-01-01 UTC', 7),
  (20005, NULL, NULL, NULL, 'Infinity', 'Infinity', NULL, NULL, NULL, NULL),
  (20006, NULL, NULL, NULL, 'NaN', 'NaN', NULL, NULL, NULL, NULL);
ANALYZE tk;
CREATE TABLE tk_small AS SELECT * FROM tk WHERE id <= 1000;
ANALYZE tk_small;
CREATE TABLE tk_empty (id int, v float8);
ALTER TABLE tk_empty SET (autovacuum_enabled = off);
CREATE TABLE tk_nulls AS SELECT i AS id, NULL::int4 AS v FROM generate_series(1, 5000) i;
ANALYZE tk_nulls;

-- Plans: GpuTopK on a large table, not on a small one, not where an index gives the order
-- (on the CPU backend, so that the output is the same on every machine)
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC LIMIT 10;
-- a 1,000-row table under the default gputopk.min_table_rows
RESET gputopk.min_table_rows;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk_small ORDER BY f8 DESC LIMIT 10;
SET gputopk.min_table_rows = 1000;
CREATE INDEX tk_i4 ON tk (i4);
EXPLAIN (COSTS OFF) SELECT id, i4 FROM tk ORDER BY i4 LIMIT 10;
DROP INDEX tk_i4;
EXPLAIN (COSTS OFF) SELECT id FROM tk ORDER BY f8 DESC, id LIMIT 5 OFFSET 5;
EXPLAIN (COSTS OFF) SELECT g, count(*) FILTER (WHERE id > 0) FROM tk GROUP BY g ORDER BY g LIMIT 3;
SET gputopk.enabled = off;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk ORDER BY f8 DESC LIMIT 10;
RESET gputopk.enabled;
SELECT pg_temp.explain_analyze($$SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC LIMIT 10$$);
RESET gputopk.device;

-- The answer of a query with gputopk off and on, and whether GpuTopK ran.
CREATE FUNCTION topk_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plain text[];
  ours text[];
  plain_error text;
  our_error text;
  used boolean;
  indexed boolean;
  line text;
BEGIN
  -- an error (a ranking expression that overflows, say) must be the same
  SET LOCAL gputopk.enabled = off;
  BEGIN
    EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO plain;
  EXCEPTION WHEN OTHERS THEN
    plain_error := SQLERRM;
  END;
  SET LOCAL gputopk.enabled = on;
  BEGIN
    EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO ours;
  EXCEPTION WHEN OTHERS THEN
    our_error := SQLERRM;
  END;
  IF plain_error IS DISTINCT FROM our_error THEN
    RETURN 'MISMATCH: ' || coalesce(plain_error, 'no error') || ' against ' ||
      coalesce(our_error, 'no error') || ': ' || q;
  END IF;
  used := false;
  indexed := false;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    used := used OR line LIKE '%GpuTopK%';
    indexed := indexed OR line LIKE '%Column Index:%';
  END LOOP;
  IF plain IS DISTINCT FROM ours THEN
    RETURN 'MISMATCH: ' || q;
  END IF;
  RETURN CASE WHEN indexed THEN 'gputopk index' WHEN used THEN 'gputopk' ELSE 'native' END;
END $$;

-- Every key type and order, with and without a filter, OFFSET and WITH TIES.
-- The answers are compared exactly: either only the ordering column is
-- returned, or id breaks the ties.
CREATE TEMP TABLE checks (q text, result text);
DO $$
DECLARE
  col text;
  ord text;
  tail text;
  q text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz', 'g'] LOOP
    FOREACH ord IN ARRAY ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'] LOOP
      FOREACH tail IN ARRAY ARRAY['LIMIT 1', 'LIMIT 25', 'LIMIT 25 OFFSET 30', 'LIMIT 0',
                                  'LIMIT 30000', 'FETCH FIRST 7 ROWS WITH TIES'] LOOP
        q := format('SELECT %s FROM tk ORDER BY %s%s %s', col, col, ord, tail);
        INSERT INTO checks VALUES (q, topk_check(q));
        q := format('SELECT %s, id FROM tk WHERE id %% 3 <> 1 ORDER BY %s%s, id %s', col, col, ord, tail);
        INSERT INTO checks VALUES (q, topk_check(q));
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT result, count(*) FROM checks GROUP BY result ORDER BY result;
SELECT q, result FROM checks WHERE result LIKE 'MISMATCH%' OR q NOT LIKE '%LIMIT 0%' AND result = 'native' LIMIT 10;

-- multi-key orders, wide rows in the target list, filters of several forms
SELECT topk_check('SELECT g, f4, id FROM tk ORDER BY g DESC, f4 NULLS FIRST, id LIMIT 40');
SELECT topk_check('SELECT id, length(wide) FROM tk WHERE wide <> '''' ORDER BY i8 DESC, id LIMIT 12');
SELECT topk_check('SELECT id, f8 FROM tk WHERE f8 BETWEEN -1000 AND 1000 AND (g IN (1, 2) OR i2 IS NULL) ORDER BY f8, id LIMIT 20');
SELECT topk_check('SELECT id FROM tk WHERE f8 > 1e9 ORDER BY f8 LIMIT 5');
SELECT topk_check('SELECT * FROM tk_nulls ORDER BY v DESC, id LIMIT 5');
SELECT topk_check('SELECT * FROM tk_nulls ORDER BY v LIMIT 5');
SET gputopk.min_table_rows = 0;
SELECT topk_check('SELECT * FROM tk_empty ORDER BY v LIMIT 5');
RESET gputopk.min_table_rows;

-- computed ranking keys: numeric arithmetic (exact in float8, or rounded
-- with ties kept), other expressions, a table with a dropped column
CREATE TABLE tk_expr AS
SELECT id, i2, i4 % 1000 AS a, (i4 / 7) % 1000 AS b, f8, (f8 / 1000)::numeric AS n,
       g, 'k' || (id % 13) AS s
FROM tk;
ALTER TABLE tk_expr DROP COLUMN f8;
ANALYZE tk_expr;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id FROM tk_expr ORDER BY a + 0.5 * b DESC, id LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM tk_expr ORDER BY a + 0.1 * b DESC, id LIMIT 10;
RESET gputopk.device;
SELECT topk_check('SELECT id, a + 0.5 * b AS r FROM tk_expr ORDER BY a + 0.5 * b DESC, id LIMIT 20');
SELECT topk_check('SELECT id FROM tk_expr ORDER BY a + 0.1 * b, id LIMIT 20');
SELECT topk_check('SELECT id, n FROM tk_expr ORDER BY n * 3 DESC NULLS LAST, id LIMIT 15');
SELECT topk_check('SELECT id FROM tk_expr ORDER BY -n, id LIMIT 15 OFFSET 5');
SELECT topk_check('SELECT * FROM tk_expr WHERE g < 4 ORDER BY a * b - i2 DESC, lower(s), id LIMIT 12');
SELECT topk_check('SELECT a FROM tk_expr ORDER BY abs(a - 500) FETCH FIRST 5 ROWS WITH TIES');
SELECT topk_check('SELECT s, id FROM tk_expr ORDER BY i2::float8 / 3 DESC NULLS FIRST, s DESC, id LIMIT 9');
SELECT topk_check('SELECT id, 2 * a - 0.25 * b + 1.5 AS r FROM tk_expr WHERE n > 0 ORDER BY 2 * a - 0.25 * b + 1.5, id LIMIT 30');
SELECT topk_check('SELECT id FROM tk_expr ORDER BY a * 1e400 DESC, id LIMIT 5');
-- compiled exact keys: int2 and int4 columns, NULLs, negation, both NULL orders
SELECT topk_check('SELECT id, -(a + 0.5 * i2) AS r FROM tk_expr ORDER BY -(a + 0.5 * i2), id LIMIT 15');
SELECT topk_check('SELECT id FROM tk_expr ORDER BY i2 * 0.5 - a * 0.25 DESC NULLS LAST, id LIMIT 15');
SELECT topk_check('SELECT id FROM tk_expr WHERE g <> 2 ORDER BY (a - b) * 0.125 + i2 NULLS FIRST, id LIMIT 15');
SELECT topk_check('SELECT (a - b) * 0.125 + i2 FROM tk_expr ORDER BY (a - b) * 0.125 + i2 DESC FETCH FIRST 9 ROWS WITH TIES');

-- parameters: prepared statements with a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE top(int8, int8) AS SELECT id, f8 FROM tk WHERE g <> 3 ORDER BY f8 DESC, id LIMIT $1 OFFSET $2;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) EXECUTE top(3, 0);
RESET gputopk.device;
EXECUTE top(3, 0);
EXECUTE top(2, 3);
EXECUTE top(NULL, 20003) ;
EXECUTE top(0, 0);
DEALLOCATE top;
RESET plan_cache_mode;

-- rescans: a LATERAL subquery run once per outer row
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT s.x, t.id, t.i4
FROM (VALUES (0), (1), (2)) s(x),
     LATERAL (SELECT id, i4 FROM tk WHERE g = s.x ORDER BY i4 DESC NULLS LAST, id LIMIT 2) t
ORDER BY s.x, t.i4 DESC;
RESET gputopk.device;
SELECT s.x, t.id, t.i4
FROM (VALUES (0), (1), (2)) s(x),
     LATERAL (SELECT id, i4 FROM tk WHERE g = s.x ORDER BY i4 DESC NULLS LAST, id LIMIT 2) t
ORDER BY s.x, t.i4 DESC;

-- a cursor, fetched in steps
BEGIN;
DECLARE c CURSOR FOR SELECT id, ts FROM tk ORDER BY ts, id LIMIT 6;
FETCH 2 FROM c;
FETCH 4 FROM c;
FETCH 1 FROM c;
COMMIT;

-- the snapshot decides: rows deleted later in the transaction are still seen by the cursor
BEGIN;
DECLARE c2 CURSOR FOR SELECT id, f8 FROM tk WHERE f8 < 1e300 ORDER BY f8 DESC, id LIMIT 3;
DELETE FROM tk WHERE id IN (SELECT id FROM tk WHERE f8 < 1e300 ORDER BY f8 DESC LIMIT 1);
FETCH ALL FROM c2;
SELECT id, f8 FROM tk WHERE f8 < 1e300 ORDER BY f8 DESC, id LIMIT 3;
ROLLBACK;

-- parallel plans: each process returns its own top k + m under a Gather Merge
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET max_parallel_workers = 8;
SET gputopk.device = cpu;
-- the workers GpuTopK asks for: one per 4 * min_parallel_table_scan_size of
-- table (here any), up to gputopk.max_parallel_workers (by default
-- max_parallel_workers_per_gather, 2)
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC, id LIMIT 10;
SET gputopk.max_parallel_workers = 5;	-- an administrator's raise above the per-query cap
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC, id LIMIT 10;
SET max_parallel_workers_per_gather = 0;	-- no parallel plans at all
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC, id LIMIT 10;
SET max_parallel_workers_per_gather = 4;
ALTER TABLE tk SET (parallel_workers = 3);	-- the table's own setting, up to the cap
RESET gputopk.max_parallel_workers;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC, id LIMIT 10;
ALTER TABLE tk RESET (parallel_workers);
SET max_parallel_workers_per_gather = 2;
SET min_parallel_table_scan_size = '8MB';	-- tk is smaller: in one process
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g < 3 ORDER BY f8 DESC, id LIMIT 10;
SET min_parallel_table_scan_size = 0;
-- a key over values stored out of line (TOAST), which PostgreSQL's plans
-- read as well: GpuTopK where it reads them in as many processes as
-- PostgreSQL's parallel scan would, not where in fewer
CREATE TABLE tk_toast (id int, body text);
ALTER TABLE tk_toast ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO tk_toast SELECT i, repeat(chr(65 + i % 26), 2500 + i % 1000) FROM generate_series(1, 5000) i;
ANALYZE tk_toast;
SET gputopk.min_table_rows = 1000;
EXPLAIN (COSTS OFF) SELECT id FROM tk_toast ORDER BY hashtext(body) DESC, id LIMIT 5;
SET gputopk.max_parallel_workers = 0;
EXPLAIN (COSTS OFF) SELECT id FROM tk_toast ORDER BY hashtext(body) DESC, id LIMIT 5;
RESET gputopk.max_parallel_workers;
SELECT topk_check('SELECT id, hashtext(body) FROM tk_toast ORDER BY hashtext(body) DESC, id LIMIT 5');
RESET gputopk.min_table_rows;
DROP TABLE tk_toast;
RESET gputopk.device;
TRUNCATE checks;
DO $$
DECLARE
  col text;
  tail text;
  q text;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i8', 'f4', 'f8', 'tz'] LOOP
    FOREACH tail IN ARRAY ARRAY['LIMIT 1', 'LIMIT 25 OFFSET 30', 'FETCH FIRST 7 ROWS WITH TIES'] LOOP
      q := format('SELECT %s, id FROM tk ORDER BY %s DESC, id %s', col, col, tail);
      INSERT INTO checks VALUES (q, topk_check(q));
      q := format('SELECT %s FROM tk WHERE g <> 2 ORDER BY %s NULLS FIRST %s', col, col, tail);
      INSERT INTO checks VALUES (q, topk_check(q));
    END LOOP;
  END LOOP;
END $$;
SELECT result, count(*) FROM checks GROUP BY result ORDER BY result;
-- a plain Gather under a Sort reads each process's rows to the end
SELECT topk_check('SELECT ts + interval ''1 hour'', i2 FROM tk WHERE ts IS NULL ORDER BY ts + interval ''1 hour'' DESC, i2 LIMIT 1');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET max_parallel_workers;

-- A page's buffer, remembered from the scan before, is pinned without the
-- buffer mapping table: its usage count still rises by one a read, so that
-- after a first read and four more every page is at the maximum (5)
CREATE EXTENSION pg_buffercache;
CREATE TABLE tk_use AS SELECT i AS id, i::float8 AS v FROM generate_series(1, 20000) i;
ANALYZE tk_use;
SET max_parallel_workers_per_gather = 0;
SET gputopk.max_parallel_workers = 0;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id FROM tk_use ORDER BY v DESC LIMIT 1;
DO $$
BEGIN
  FOR i IN 1..5 LOOP
    PERFORM id FROM tk_use ORDER BY v DESC LIMIT 1;
  END LOOP;
END $$;
-- at least 4: a clock sweep passing meanwhile lowers each count by one
SELECT count(*) > 0 AS read, min(usagecount) >= 4 AS counted
FROM pg_buffercache
WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND relfilenode = pg_relation_filenode('tk_use') AND relforknumber = 0;
RESET gputopk.device;
RESET gputopk.max_parallel_workers;
RESET max_parallel_workers_per_gather;
DROP TABLE tk_use;
DROP EXTENSION pg_buffercache;

-- topk_filter and topk_random go on with topk_check and tk
