--
-- A column index's pages skipped by their summaries (kernels/page_bounds.h):
-- pages whose entries cannot pass the index's filter, or whose largest
-- possible key cannot enter the top k, also in an index built clustered
-- (layout = clustered).  Answers and errors are PostgreSQL's
-- (topk_check runs each query with gputopk off and on), over NaN,
-- infinities, -0, NULLs and ties, and pages are skipped where they can be.
--
SET gputopk.min_table_rows = 1000;
-- ts rises with id, as rows inserted over time; score, a and b look random
CREATE TABLE sk AS
SELECT i AS id,
       timestamptz '2026-01-01' + i * interval '1 minute' AS ts,
       CASE WHEN i % 997 = 0 THEN NULL ELSE (((i::int8 * 7919) % 30011) / 300.0)::float4 END AS score,
       (((i::int8 * 104729) % 20011) / 200.0)::float4 AS a,
       (((i::int8 * 15485863) % 10007) / 100.0)::float4 AS b,
       (i % 100)::int4 AS w
FROM generate_series(1, 40000) i;
CREATE INDEX sk_ci ON sk USING gputopk (score, ts, a, b, w);
VACUUM ANALYZE sk;

-- a property of the GpuTopK node under the Limit, from EXPLAIN ANALYZE
CREATE FUNCTION analyzed(q text, property text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  RETURN (SELECT node->>property
          FROM json_array_elements(plan->0->'Plan'->'Plans') node
          WHERE node->>property IS NOT NULL);
END $$;
-- the index's pages a query skipped
CREATE FUNCTION pages_skipped(q text) RETURNS bigint LANGUAGE sql
AS $$ SELECT analyzed(q, 'Index Pages Skipped')::bigint $$;

\set ECHO none
\i sql/lib/explain_analyze.sql
\set ECHO all
SET gputopk.device = cpu;
SELECT pg_temp.explain_analyze($$SELECT id FROM sk ORDER BY score DESC LIMIT 10$$);
RESET gputopk.device;

-- a column, both ways, NULLs first and last, ties and OFFSET
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, score FROM sk ORDER BY score DESC, id LIMIT 10',
  'SELECT id, score FROM sk ORDER BY score DESC NULLS LAST, id LIMIT 10',
  'SELECT id, score FROM sk ORDER BY score, id LIMIT 10',
  'SELECT id, score FROM sk ORDER BY score NULLS FIRST, id LIMIT 60',
  'SELECT id, score FROM sk ORDER BY score DESC NULLS LAST, id LIMIT 20 OFFSET 500',
  'SELECT id, w FROM sk ORDER BY w DESC, id LIMIT 30',
  'SELECT id, ts FROM sk ORDER BY ts DESC LIMIT 5',
  'SELECT * FROM (SELECT id, score FROM sk ORDER BY score DESC NULLS LAST FETCH FIRST 5 ROWS WITH TIES) t ORDER BY id'
]) q;
-- a time range: the pages outside it are skipped whatever the key
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, score FROM sk WHERE ts >= ''2026-01-10'' AND ts < ''2026-01-12'' ORDER BY score DESC NULLS LAST, id LIMIT 50',
  'SELECT id, w FROM sk WHERE ts BETWEEN ''2026-01-20'' AND ''2026-01-21'' ORDER BY w DESC, id LIMIT 50',
  'SELECT id FROM sk WHERE ts < ''2026-01-01'' ORDER BY score DESC LIMIT 5',
  'SELECT id, score FROM sk WHERE w IN (3, 5) AND NOT ts > ''2026-01-05'' ORDER BY score DESC NULLS LAST, id LIMIT 5',
  'SELECT id, score FROM sk WHERE score IS NULL OR ts > ''2026-01-27'' ORDER BY score DESC, id LIMIT 5'
]) q;
-- ranking functions: sums, weighted sums, differences, products, quotients
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, a + b FROM sk ORDER BY a + b DESC, id LIMIT 10',
  'SELECT id FROM sk ORDER BY 0.7 * a + 0.3 * b DESC, id LIMIT 10',
  'SELECT id FROM sk ORDER BY 2 * a - b, id LIMIT 10',
  'SELECT id FROM sk ORDER BY a * b DESC, id LIMIT 10',
  'SELECT id FROM sk ORDER BY -a + abs(b - 50) DESC, id LIMIT 10',
  'SELECT id FROM sk ORDER BY a / (b + 1) DESC, id LIMIT 10',
  'SELECT id FROM sk ORDER BY score + w DESC, id LIMIT 10',
  'SELECT id FROM sk WHERE ts > ''2026-01-25'' ORDER BY a + b + score DESC, id LIMIT 10'
]) q;
-- each of those skips pages (in one process the pages are read by bound,
-- so the latest rows are found first)
SET gputopk.device = cpu;
SELECT pages_skipped(q) > 0 AS skipped, q
FROM unnest(ARRAY[
  'SELECT id FROM sk ORDER BY score DESC LIMIT 10',
  'SELECT id FROM sk ORDER BY score LIMIT 10',
  'SELECT id FROM sk ORDER BY ts DESC LIMIT 10',
  'SELECT id FROM sk WHERE ts >= ''2026-01-10'' AND ts < ''2026-01-12'' ORDER BY w DESC LIMIT 50',
  'SELECT id FROM sk ORDER BY score * 2 - 1 DESC LIMIT 10'
]) q;
RESET gputopk.device;

-- values the bounds must not be fooled by, in pages of their own: NaN,
-- infinities, -0, NULLs; rows that raise errors are never skipped
INSERT INTO sk SELECT 40000 + i, '2027-01-01', 'NaN', -1, -1, -1 FROM generate_series(1, 3) i;
INSERT INTO sk SELECT 40010 + i, '2027-01-02', '-Infinity', '-0', '-Infinity', 0 FROM generate_series(1, 3) i;
INSERT INTO sk SELECT 40020 + i, '2027-01-03', NULL, NULL, 'Infinity', NULL FROM generate_series(1, 3) i;
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, score FROM sk ORDER BY score DESC, id LIMIT 5',
  'SELECT id, score FROM sk ORDER BY score, id LIMIT 5',
  'SELECT id FROM sk ORDER BY a + b DESC, id LIMIT 5',
  'SELECT id FROM sk ORDER BY a + b, id LIMIT 5',
  'SELECT id FROM sk ORDER BY a * b DESC NULLS LAST, id LIMIT 5',
  'SELECT id FROM sk ORDER BY b - a DESC NULLS LAST, id LIMIT 5'
]) q;
-- a page of rows whose sum overflows to -Infinity, a page whose products
-- underflow, a page that divides by zero: each far from the top by its
-- values, each read, and PostgreSQL's error raised
CREATE TABLE sk_err AS
SELECT i AS id, (((i::int8 * 7919) % 30011) / 300.0)::float4 AS a,
       (((i::int8 * 104729) % 20011) / 200.0)::float4 AS b
FROM generate_series(1, 20000) i;
CREATE INDEX sk_err_ci ON sk_err USING gputopk (a, b);
ANALYZE sk_err;
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id FROM sk_err ORDER BY a + b DESC, id LIMIT 5',
  'SELECT id FROM sk_err ORDER BY a * b DESC, id LIMIT 5',
  'SELECT id FROM sk_err ORDER BY a / b DESC, id LIMIT 5'
]) q;
INSERT INTO sk_err SELECT 20000 + i, '-3e38', '-3e38' FROM generate_series(1, 500) i;
SELECT topk_check('SELECT id FROM sk_err ORDER BY a + b DESC, id LIMIT 5');
SELECT id FROM sk_err ORDER BY a + b DESC, id LIMIT 5;
DELETE FROM sk_err WHERE id > 20000;
INSERT INTO sk_err SELECT 21000 + i, '1e-30', '1e-30' FROM generate_series(1, 500) i;
SELECT topk_check('SELECT id FROM sk_err ORDER BY a * b DESC, id LIMIT 5');
SELECT id FROM sk_err ORDER BY a * b DESC, id LIMIT 5;
DELETE FROM sk_err WHERE id > 20000;
INSERT INTO sk_err SELECT 22000 + i, -1, 0 FROM generate_series(1, 500) i;
SELECT topk_check('SELECT id FROM sk_err ORDER BY a / b DESC, id LIMIT 5');

-- a sum that may raise asks for the rows tied at the bound, so that every
-- row that raises is a candidate; where the summaries show that none can,
-- any tied row will do (here 3,333 rows tie at the top)
CREATE TABLE sk_tie AS
SELECT i AS id, (i % 3)::float4 AS a, (i % 2)::float4 AS b FROM generate_series(1, 20000) i;
CREATE INDEX sk_tie_ci ON sk_tie USING gputopk (a, b);
ANALYZE sk_tie;
SELECT topk_check('SELECT a + b FROM sk_tie ORDER BY a + b DESC LIMIT 5');
SELECT analyzed(q, 'Ranking Key') AS key, analyzed(q, 'Candidates Fetched')::int < 100 AS few
FROM (VALUES ('SELECT id FROM sk_tie ORDER BY a + b DESC LIMIT 5')) v(q);
-- later ORDER BY items still need the ties
SELECT topk_check('SELECT id, a + b FROM sk_tie ORDER BY a + b DESC, id DESC LIMIT 5');
-- a weighted sum of float4 columns holding 0 on every page: its terms
-- cannot underflow (a float4's nonzero values are at least its smallest
-- subnormal), so its pages have bounds and are skipped
SET gputopk.device = cpu;
SELECT pages_skipped('SELECT id FROM sk_tie ORDER BY 0.7 * a + 0.3 * b DESC LIMIT 5') > 0 AS skipped;
RESET gputopk.device;
SELECT topk_check('SELECT 0.7 * a + 0.3 * b FROM sk_tie ORDER BY 0.7 * a + 0.3 * b DESC LIMIT 5');
-- a row whose sum overflows: its page's bound is the top key, the ties are kept, and it raises
INSERT INTO sk_tie VALUES (30000, '3e38', '3e38');
SELECT topk_check('SELECT a + b FROM sk_tie ORDER BY a + b DESC LIMIT 5');
SELECT a + b FROM sk_tie ORDER BY a + b DESC LIMIT 5;
-- unless a WHERE clause leaves it out
SELECT analyzed('SELECT id FROM sk_tie WHERE id < 30000 ORDER BY a + b DESC LIMIT 5', 'Ranking Key');
SELECT a + b FROM sk_tie WHERE id < 30000 ORDER BY a + b DESC LIMIT 5;

-- a candidate's ORDER BY value comes from its key, except -0 (the key
-- keeps no sign of zero) and NULL: the values are PostgreSQL's
CREATE TABLE sk_val AS
SELECT i AS id, ((i % 7) - 3)::float4 AS a, ((i % 5) - 2)::float8 AS b FROM generate_series(1, 5000) i;
INSERT INTO sk_val VALUES (0, '-0', 1), (-1, 'NaN', 1), (-2, NULL, 1), (-3, '-Infinity', 0.5);
CREATE INDEX sk_val_ci ON sk_val USING gputopk (a, b);
ANALYZE sk_val;
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, a * b, a + b FROM sk_val ORDER BY a * b, id LIMIT 8',
  'SELECT id, a * b FROM sk_val ORDER BY a * b DESC NULLS LAST, id LIMIT 8',
  'SELECT id, a - b FROM sk_val ORDER BY a - b DESC, id LIMIT 8',
  'SELECT a / 3 FROM sk_val ORDER BY a / 3 LIMIT 8',
  'SELECT id, a * b FROM sk_val WHERE a = 0 ORDER BY a * b DESC, id LIMIT 6'
]) q;
SELECT id, a * b FROM sk_val WHERE a = 0 ORDER BY a * b DESC, id LIMIT 6;
-- a float8 column's subnormal times 0.5 underflows: the page is read, and raises
INSERT INTO sk_val VALUES (-4, 1, '5e-324');
SELECT topk_check('SELECT id FROM sk_val ORDER BY 0.5 * b DESC, id LIMIT 5');
SELECT id FROM sk_val ORDER BY 0.5 * b DESC, id LIMIT 5;
SELECT id FROM sk_err ORDER BY a / b DESC, id LIMIT 5;
-- VACUUM computes the summaries again from the entries left: no error now
DELETE FROM sk_err WHERE id > 20000;
VACUUM sk_err;
SELECT gputopk_index_check('sk_err_ci') > 0 AS checked;
SELECT topk_check('SELECT id FROM sk_err ORDER BY a / b DESC, id LIMIT 5');

-- updates move rows' values to the top; the summaries widen with them
UPDATE sk SET score = 1000 + id, a = 1000 WHERE id % 5000 = 1;
SELECT topk_check('SELECT id, score FROM sk ORDER BY score DESC NULLS LAST, id LIMIT 12');
SELECT topk_check('SELECT id FROM sk ORDER BY a + b DESC, id LIMIT 12');
DELETE FROM sk WHERE id % 5000 = 1;
VACUUM sk;
SELECT gputopk_index_check('sk_ci') > 0 AS checked;
SELECT topk_check('SELECT id, score FROM sk ORDER BY score DESC NULLS LAST, id LIMIT 12');

-- an index built WITH (layout = clustered): its entries in the order of
-- their values, so that each page's summary is narrow and a ranking
-- function of several columns skips most pages, where the table's order
-- skips none; then inserts after the build, updates, deletes, VACUUM and
-- REINDEX
SELECT setseed(0.25);
CREATE TABLE sk_cl AS
SELECT i AS id, CASE WHEN i % 1009 = 0 THEN NULL ELSE random()::float4 END AS a,
       random()::float4 AS b, random() AS c, (i % 100)::int4 AS w
FROM generate_series(1, 40000) i;
INSERT INTO sk_cl VALUES (40001, 'NaN', 0.5, 0.5, 1), (40002, 'Infinity', '-Infinity', 1, 2),
  (40003, '-0', '0', '-0', 3), (40004, '1e-45', 1, '5e-324', 4), (40005, 0.5, 0.5, 0.5, 5),
  (40006, 0.5, 0.5, 0.5, 5);
CREATE INDEX sk_cl_ci ON sk_cl USING gputopk (a, b, c, w);
ANALYZE sk_cl;
SET gputopk.device = cpu;
SELECT pages_skipped('SELECT id FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC NULLS LAST LIMIT 10') AS skipped_in_table_order;
DROP INDEX sk_cl_ci;
CREATE INDEX sk_cl_ci ON sk_cl USING gputopk (a, b, c, w) WITH (layout = clustered);
SELECT gputopk_index_check('sk_cl_ci') = (SELECT count(*) FROM sk_cl) AS index_matches;
SELECT pages_skipped(q) AS skipped, q
FROM unnest(ARRAY[
  'SELECT id FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC NULLS LAST LIMIT 10',
  'SELECT id FROM sk_cl ORDER BY b + c DESC LIMIT 10',
  'SELECT id FROM sk_cl ORDER BY w LIMIT 10'
]) q;
-- one process: it stops at the first page whose bound is below the cut
EXPLAIN (COSTS OFF) SELECT id FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC NULLS LAST LIMIT 10;
RESET gputopk.device;
SELECT q, topk_check(q)
FROM unnest(ARRAY[
  'SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 10',
  'SELECT id FROM sk_cl ORDER BY a + b DESC NULLS LAST, id LIMIT 10',
  'SELECT id FROM sk_cl ORDER BY a - c, id LIMIT 10',
  'SELECT id, a FROM sk_cl ORDER BY a DESC, id LIMIT 10',
  'SELECT id, w FROM sk_cl ORDER BY w DESC, id LIMIT 30',
  'SELECT id FROM sk_cl WHERE w < 10 ORDER BY b + c DESC, id LIMIT 10',
  'SELECT * FROM (SELECT id, b FROM sk_cl ORDER BY b DESC FETCH FIRST 5 ROWS WITH TIES) t ORDER BY id'
]) q;
INSERT INTO sk_cl SELECT 50000 + i, 2, 2, 2, i FROM generate_series(1, 20) i;
UPDATE sk_cl SET b = 3 WHERE id % 4000 = 7;
SELECT topk_check('SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 30');
SELECT topk_check('SELECT id, b FROM sk_cl ORDER BY b DESC, id LIMIT 15');
DELETE FROM sk_cl WHERE id > 50000 OR id % 4000 = 7;
VACUUM sk_cl;
SELECT gputopk_index_check('sk_cl_ci') = (SELECT count(*) FROM sk_cl) AS index_matches;
SELECT topk_check('SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 30');
-- inserts take the slots VACUUM freed only in pages it emptied: the new
-- versions of rows updated and new rows go to new pages, and the pages the
-- build ordered are still skipped
UPDATE sk_cl SET b = random() WHERE id % 10 = 3;
VACUUM sk_cl;
INSERT INTO sk_cl SELECT 60000 + i, random(), random(), random(), i % 100 FROM generate_series(1, 4000) i;
SET gputopk.device = cpu;
SELECT pages_skipped('SELECT id FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC NULLS LAST LIMIT 10') AS skipped_after_writes;
RESET gputopk.device;
SELECT gputopk_index_check('sk_cl_ci') = (SELECT count(*) FROM sk_cl) AS index_matches;
SELECT topk_check('SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 30');
REINDEX INDEX sk_cl_ci;
SELECT gputopk_index_check('sk_cl_ci') = (SELECT count(*) FROM sk_cl) AS index_matches;
SELECT topk_check('SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 30');
-- the storage parameter applies when the index is built
SELECT reloptions FROM pg_class WHERE relname = 'sk_cl_ci';
ALTER INDEX sk_cl_ci SET (layout = table);
REINDEX INDEX sk_cl_ci;
SET gputopk.device = cpu;
SELECT pages_skipped('SELECT id FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC NULLS LAST LIMIT 10') AS skipped_in_table_order;
RESET gputopk.device;
ALTER INDEX sk_cl_ci SET (layout = clustered);
REINDEX INDEX sk_cl_ci;

-- in parallel: each process skips pages of its own share
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_index_scan_size = 0;
SET gputopk.max_parallel_workers = 2;
SELECT topk_check('SELECT id, score FROM sk ORDER BY score DESC NULLS LAST, id LIMIT 10');
SELECT topk_check('SELECT id, w FROM sk WHERE ts BETWEEN ''2026-01-20'' AND ''2026-01-21'' ORDER BY w DESC, id LIMIT 50');
SELECT topk_check('SELECT id, 0.7 * a + 0.3 * b + c FROM sk_cl ORDER BY 0.7 * a + 0.3 * b + c DESC, id LIMIT 10');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_index_scan_size;
RESET gputopk.max_parallel_workers;

DROP TABLE sk, sk_err, sk_tie, sk_val, sk_cl;
DROP FUNCTION pages_skipped(text);
DROP FUNCTION analyzed(text, text);
RESET gputopk.min_table_rows;
