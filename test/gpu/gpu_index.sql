-- pgTAP, GPU machines only, under gputopk.device = gpu: GpuTopK reads a column
-- index from the GPU service's copy in device memory, answers as PostgreSQL
-- does for every key type, filter and computed key, and after inserts,
-- updates, deletes and REINDEX sends only the pages that changed.
BEGIN;
SELECT plan(25);

SET LOCAL gputopk.min_table_rows = 1000;
SET LOCAL gputopk.device = gpu;
-- the GPU reading the table's pages, which may cost less, is gpu_pages.sql's
SET LOCAL gputopk.gpu_pages = off;
CREATE TABLE gi AS
SELECT i::int8 AS id,
       CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'NaN'::float4
            WHEN i % 83 = 0 THEN '-0'::float4 ELSE (random() * 1000)::float4 END AS score,
       CASE WHEN i % 101 = 0 THEN NULL ELSE (random() * 2e6 - 1e6)::int4 END AS a,
       (random() * 1000)::int4 AS b,
       (random() * 200)::int2 AS s,
       now() - random() * interval '365 days' AS ts,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i % 3 = 0 END AS flag,
       (random() * 1e9)::float8 AS v
  FROM generate_series(1, 300000) i;
CREATE INDEX gi_ci ON gi USING gputopk (score, a, b, s, ts, flag, v);
ANALYZE gi;

\ir lib/compare.sql

CREATE TEMP TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT score FROM gi ORDER BY score DESC LIMIT 100'),
  ('SELECT id, score FROM gi ORDER BY score DESC NULLS LAST, id LIMIT 50'),
  ('SELECT score FROM gi ORDER BY score LIMIT 500'),
  ('SELECT id, a FROM gi ORDER BY a DESC, id LIMIT 20 OFFSET 30'),
  ('SELECT a FROM gi ORDER BY a DESC FETCH FIRST 10 ROWS WITH TIES'),
  ('SELECT s FROM gi ORDER BY s LIMIT 300'),
  ('SELECT id, ts FROM gi ORDER BY ts, id LIMIT 25'),
  ('SELECT v FROM gi ORDER BY v DESC LIMIT 1000'),
  ('SELECT id, score FROM gi WHERE ts > now() - interval ''36.5 days'' ORDER BY score DESC, id LIMIT 50'),
  ('SELECT id, score FROM gi WHERE a IN (1, 2, 3) OR flag IS NOT TRUE AND b < 10 ORDER BY score DESC, id LIMIT 40'),
  ('SELECT id FROM gi WHERE NOT flag AND a > 0 ORDER BY a + 0.5 * b DESC, id LIMIT 1000'),
  ('SELECT a + 0.5 * b AS k FROM gi ORDER BY a + 0.5 * b LIMIT 70'),
  ('SELECT id, score FROM gi WHERE score IS NULL ORDER BY score DESC, id LIMIT 5'),
  ('SELECT id, score FROM gi WHERE b = 17 AND id % 2 = 0 ORDER BY score DESC, id LIMIT 30');

SELECT is(pg_temp.same_on_index_copy(q), 'same', 'GPU copy: ' || q) FROM queries ORDER BY n;

-- a copy current for the query: nothing to send
SELECT is(pg_temp.explained('SELECT score FROM gi ORDER BY score DESC LIMIT 10', 'Index Pages Sent to GPU'),
          '0', 'an unchanged index sends no pages');

-- rows moved into and out of the top, deleted, inserted
UPDATE gi SET score = 5000 + id WHERE id % 10007 = 0;
DELETE FROM gi WHERE id IN (SELECT id FROM gi ORDER BY score DESC NULLS LAST LIMIT 5);
UPDATE gi SET score = 0 WHERE id IN (SELECT id FROM gi ORDER BY score DESC NULLS LAST LIMIT 3);
INSERT INTO gi SELECT 1000000 + i, 4000 + i, i, i, 1, now(), true, i FROM generate_series(1, 50) i;
SELECT ok(pg_temp.explained('SELECT score FROM gi ORDER BY score DESC LIMIT 10', 'Index Pages Sent to GPU')::int
            BETWEEN 1 AND (SELECT relpages FROM pg_class WHERE relname = 'gi_ci') / 2,
          'after changes, only the changed pages are sent');
SELECT is(pg_temp.same_on_index_copy('SELECT id, score FROM gi ORDER BY score DESC NULLS LAST, id LIMIT 100'),
          'same', 'after updates, deletes and inserts');
SELECT is(pg_temp.same_on_index_copy('SELECT id, score FROM gi WHERE flag ORDER BY score DESC NULLS LAST, id LIMIT 60'),
          'same', 'after updates, deletes and inserts, filtered');

-- a new relfilenode: a new copy
REINDEX INDEX gi_ci;
SELECT is(pg_temp.same_on_index_copy('SELECT id, score FROM gi ORDER BY score DESC NULLS LAST, id LIMIT 100'),
          'same', 'after REINDEX');
SELECT ok(pg_temp.explained('SELECT score FROM gi ORDER BY score DESC LIMIT 10', 'Index Pages Sent to GPU')::int = 0,
          'after REINDEX, the new copy is current');

-- an empty result and k beyond the table
SELECT is(pg_temp.same_on_index_copy('SELECT id FROM gi WHERE b > 5000 ORDER BY score DESC LIMIT 10'),
          'same', 'no row passes');
SELECT is(pg_temp.answer('SELECT count(*) FROM (SELECT id FROM gi ORDER BY score DESC, id LIMIT 1000000) t', true),
          (SELECT '(' || count(*) || ')' FROM gi), 'k beyond the table');

-- text columns: their dictionary codes compared on the GPU
CREATE TABLE gt AS
  SELECT i AS id, (ARRAY['en', 'fr', 'de', 'ja', NULL])[1 + i % 5] AS lang,
         ('t' || (i % 23))::varchar(8) AS tag, (i * 7919 % 100003)::float8 AS score
  FROM generate_series(1, 200000) i;
CREATE INDEX gt_ci ON gt USING gputopk (score, lang, tag);
ANALYZE gt;
SELECT is(pg_temp.same_on_index_copy('SELECT id, score FROM gt WHERE lang = ''fr'' ORDER BY score DESC, id LIMIT 50'),
          'same', 'text equality');
SELECT is(pg_temp.same_on_index_copy('SELECT id FROM gt WHERE lang IN (''de'', ''xx'') AND tag <> ''t7'' ORDER BY score, id LIMIT 40'),
          'same', 'text IN and <>');
SELECT is(pg_temp.same_on_index_copy('SELECT id FROM gt WHERE lang NOT IN (''en'', ''ja'') OR lang IS NULL ORDER BY score DESC, id LIMIT 30'),
          'same', 'text NOT IN and IS NULL');

SELECT * FROM finish();
ROLLBACK;
