-- pgTAP, GPU machines only: GpuTopKGroups over a column index's copy on the
-- GPU (groups_index.c) answers as PostgreSQL does: the entries of
-- all-visible pages grouped there, the rows of pages written since the
-- VACUUM on the CPU (where many are, the page form instead), every
-- aggregate the GPU computes, one and two grouping
-- columns, a text column by its dictionary codes, NULL groups, WHERE
-- clauses checked on the entries, random
-- queries (seed printed), under gpu and auto, injected faults, and the
-- queries the index cannot serve.
SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
SELECT plan(40);

\set pages_table gx
\ir lib/pages.sql
CREATE INDEX gx_ci ON gx USING gputopk (b, s, a, ts, d, flag, late, id, tag);

-- whether the GPU grouped the index's entries (and the CPU read some of
-- the table's pages, if cpu_pages) and the answer is the one without gputopk
CREATE FUNCTION pg_temp.same_on_index(q text, cpu_pages boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  path text := pg_temp.explained(q, 'Data Path');
  cpu text := pg_temp.explained(q, 'Heap Pages Read on CPU');
BEGIN
  IF path IS DISTINCT FROM 'column index entries grouped on the GPU, other pages'' rows on the CPU' THEN
    RETURN 'not grouped over the index: ' || coalesce(path, pg_temp.explained(q, 'Custom Plan Provider'),
                                                      'no custom scan');
  END IF;
  IF cpu_pages AND cpu = '0' THEN
    RETURN 'no page read on the CPU';
  END IF;
  IF pg_temp.answer(q, true) IS DISTINCT FROM pg_temp.answer(q, false) THEN
    RETURN 'different answers';
  END IF;
  RETURN 'same';
END $$;

CREATE TEMP TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT b, count(*) AS n FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10'),
  ('SELECT s, count(*) AS n, sum(a), min(a), max(ts) FROM gx GROUP BY s ORDER BY sum(a) DESC NULLS LAST, s LIMIT 20'),
  ('SELECT a, count(*) AS n FROM gx GROUP BY a ORDER BY n DESC, a NULLS FIRST LIMIT 50'),
  ('SELECT d, min(ts) AS first, sum(id), avg(b) FROM gx GROUP BY d ORDER BY first, d LIMIT 15'),
  ('SELECT s, flag, count(*) AS n, max(a) FROM gx GROUP BY s, flag ORDER BY n DESC, s, flag NULLS FIRST LIMIT 25'),
  ('SELECT b, count(*) FROM gx GROUP BY b ORDER BY b DESC LIMIT 5'),
  ('SELECT s, count(*) AS n FROM gx WHERE ts > now() - interval ''100 days'' AND b < 500 GROUP BY s ORDER BY n DESC, s LIMIT 10'),
  ('SELECT s, count(*) AS n FROM gx GROUP BY s ORDER BY n DESC, s OFFSET 5 FETCH FIRST 3 ROWS WITH TIES'),
  ('SELECT late, count(*) AS n, sum(s) FROM gx GROUP BY late ORDER BY sum(s) NULLS FIRST, late LIMIT 7'),
  ('SELECT b, count(a) AS n FROM gx GROUP BY b ORDER BY n, b LIMIT 10'),
  ('SELECT s, sum(id), avg(a), avg(id), count(*) AS n FROM gx GROUP BY s ORDER BY n DESC, s LIMIT 10'),
  ('SELECT a, count(*) FROM gx GROUP BY a ORDER BY a DESC NULLS FIRST LIMIT 4'),
  ('SELECT late, b, min(d), max(s) AS m FROM gx WHERE flag GROUP BY late, b ORDER BY m DESC, late NULLS FIRST, b LIMIT 30'),
  ('SELECT b, max(late) AS m FROM gx GROUP BY b ORDER BY m NULLS FIRST, b LIMIT 12'),
  ('SELECT s, count(*) AS n FROM gx WHERE b = -1 GROUP BY s ORDER BY n DESC LIMIT 10'),
  ('SELECT d, count(*) AS n FROM gx WHERE d BETWEEN ''2020-03-01'' AND ''2020-06-30'' OR late IS NULL GROUP BY d ORDER BY n DESC, d LIMIT 10'),
  ('SELECT tag, count(*) AS n, sum(b), max(ts) FROM gx GROUP BY tag ORDER BY n DESC, tag NULLS FIRST LIMIT 3'),
  ('SELECT tag, sum(a) AS t FROM gx WHERE b < 300 GROUP BY tag ORDER BY t NULLS FIRST, tag LIMIT 2');
SELECT is(pg_temp.same_on_index(q), 'same', 'index groups: ' || q) FROM queries ORDER BY n;

SELECT is(pg_temp.explained('SELECT b, count(*) FROM gx GROUP BY b ORDER BY 2 DESC LIMIT 5', 'Column Index'),
          'gx_ci', 'EXPLAIN names the column index');
SELECT is(pg_temp.explained('SELECT b, count(*) FROM gx GROUP BY b ORDER BY 2 DESC LIMIT 5', 'Index Entries Scanned')::bigint,
          (SELECT count(*) FROM gx), 'every entry of the index is grouped');
SELECT is(pg_temp.explained('SELECT b, count(*) FROM gx GROUP BY b ORDER BY 2 DESC LIMIT 5', 'Groups')::bigint,
          (SELECT count(DISTINCT b) FROM gx), 'every group of the table');

-- what the index cannot serve goes to the pages: a column it does not
-- hold, a clause over text (its entries hold codes)
SELECT is(pg_temp.explained('SELECT b, count(*), sum(late) FROM gx WHERE lang = ''en'' GROUP BY b ORDER BY 2 DESC LIMIT 5',
                            'Column Index'), NULL, 'a clause over text: not over the index');
SELECT is(pg_temp.explained('SELECT s, count(*), max(late) FROM gx GROUP BY s ORDER BY 2 DESC LIMIT 5', 'Column Index'),
          'gx_ci', 'a column the index holds: over the index');
SELECT is(pg_temp.explained('SELECT lang, count(*) FROM gx GROUP BY lang ORDER BY 2 DESC LIMIT 5', 'Column Index'),
          NULL, 'a column the index does not hold: not over the index');
SELECT is(pg_temp.explained('SELECT b, count(*) FROM gx WHERE tag = ''bb'' GROUP BY b ORDER BY 2 DESC LIMIT 5',
                            'Column Index'), NULL, 'a clause over a text column of the index: not over the index');

-- a few pages written since the VACUUM are read on the CPU; their groups
-- join the GPU's
UPDATE gx SET b = b + 1, s = s + 1 WHERE id % 100000 = 0;
DELETE FROM gx WHERE id % 99991 = 0;
INSERT INTO gx (id, b, s, a, late) SELECT 400000 + i, i % 10, i % 5, i, NULL FROM generate_series(1, 30) i;
SELECT is(pg_temp.same_on_index('SELECT b, count(*) AS n, sum(s), max(a) FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10', true),
          'same', 'pages after writes: the CPU''s groups merged into the GPU''s');
SELECT is(pg_temp.same_on_index('SELECT s, flag, count(*) AS n FROM gx GROUP BY s, flag ORDER BY n, s, flag LIMIT 10', true),
          'same', 'pages after writes: two grouping columns');
SELECT is(pg_temp.same_on_index('SELECT late, count(*) AS n, min(id) FROM gx WHERE a > 0 GROUP BY late ORDER BY n DESC, late NULLS FIRST LIMIT 10', true),
          'same', 'pages after writes: a filter');
UPDATE gx SET tag = 'new ' || (id % 3) WHERE id % 100000 = 1;
SELECT is(pg_temp.same_on_index('SELECT tag, count(*) AS n, min(b) FROM gx GROUP BY tag ORDER BY n, tag LIMIT 4', true),
          'same', 'pages after writes: text groups by code, new values among them');
-- many pages written: the page form reads them all on the GPU instead,
-- cheaper than their rows on the CPU; a text group keeps to the index
UPDATE gx SET b = b + 1, s = s + 1 WHERE id % 1000 = 0;
DELETE FROM gx WHERE id % 997 = 0;
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT b, count(*) AS n FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10',
                                         'Column Index Declined'), '0')::bigint, '>', 64::bigint,
              'many pages written: the column index declined for the pages');
SELECT is(pg_temp.same_on_gpu('SELECT b, count(*) AS n, sum(s), max(a) FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10', true),
          'same', 'many pages written: grouped over the pages on the GPU');
SELECT is(pg_temp.same_on_index('SELECT tag, count(*) AS n, min(b) FROM gx GROUP BY tag ORDER BY n, tag LIMIT 4', true),
          'same', 'many pages written: a text group still over the index');
VACUUM gx;
SELECT is(pg_temp.same_on_index('SELECT b, count(*) AS n, sum(s), max(a) FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10'),
          'same', 'after VACUUM: the freed entries are not counted');

-- random queries over an index of every grouping type (the seed is printed)
\set random_table gxr
\ir lib/groups_random.sql
CREATE INDEX gxr_ci ON gxr USING gputopk (g8, g4, g2, gb, gd, gtz, i2, i4, i8, ts, gt);
VACUUM (FREEZE, ANALYZE) gxr;
-- a few pages written since, for the CPU
UPDATE gxr SET i2 = i2 + 1 WHERE id % 5000 = 0;
CREATE TEMP TABLE groups_random AS
SELECT q, pg_temp.same_on_index(q) AS result
  FROM pg_temp.random_groups_queries('gxr', ARRAY['g8', 'g4', 'g2', 'gb', 'gd', 'gtz', 'g2, gb', 'g8, gd', 'gtz, g4', 'gt'], 200) q;
SELECT diag(result || ': ' || q) FROM groups_random WHERE result <> 'same' LIMIT 5;
SELECT is((SELECT count(*) FROM groups_random WHERE result <> 'same'), 0::bigint,
          '200 random queries grouped over the index give PostgreSQL''s answers');
SELECT cmp_ok((SELECT count(*) FROM groups_random WHERE q LIKE '%GROUP BY gt %'), '>', 0::bigint,
              'some of them group by a text column');

-- under auto too
SET gputopk.device = auto;
SELECT is(pg_temp.same_on_index('SELECT b, count(*) AS n FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10'),
          'same', 'index groups under auto');

-- device memory running out: an error under gpu, the CPU under auto; a
-- sticky error under auto: every page grouped on the CPU
SET gputopk.device = gpu;
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT throws_ok('SELECT b, count(*) FROM gx GROUP BY b ORDER BY 2 DESC LIMIT 5', '53200', NULL,
                 'out of device memory, an index groups query fails with out_of_memory');
SET gputopk.device = auto;
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT is(pg_temp.answer('SELECT b, count(*) AS n, max(a) FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10', true),
          pg_temp.answer('SELECT b, count(*) AS n, max(a) FROM gx GROUP BY b ORDER BY n DESC, b LIMIT 10', false),
          'under auto, an index groups job without device memory runs on the CPU instead');
SELECT gputopk_service_inject_fault('device_error');
SELECT is(pg_temp.answer('SELECT s, flag, sum(a) AS t FROM gx GROUP BY s, flag ORDER BY t DESC, s, flag LIMIT 10', true),
          pg_temp.answer('SELECT s, flag, sum(a) AS t FROM gx GROUP BY s, flag ORDER BY t DESC, s, flag LIMIT 10', false),
          'under auto, a sticky CUDA error in the grouping leaves every page to the CPU');
SELECT is(pg_temp.await_service(), 'ready', 'the service restarts');
RESET gputopk.device;

SELECT * FROM finish();
DROP TABLE gx, gxr;
