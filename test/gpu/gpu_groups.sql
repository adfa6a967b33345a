-- pgTAP, GPU machines only, under gputopk.device = gpu: GpuTopKGroups groups
-- a table's pages on the GPU (groups_gpu.c) and answers as PostgreSQL
-- does: every aggregate the GPU computes, one and two grouping columns,
-- NULL groups, ranking by an aggregate or a grouping column in either
-- direction, OFFSET and WITH TIES, compiled filters, ties by the hundred
-- thousand, pages written since VACUUM, text groups, random queries,
-- injected faults, and the queries that stay with PostgreSQL.
SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
SELECT plan(42);

\set pages_table gg
\ir lib/pages.sql

CREATE TEMP TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT b, count(*) AS n FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10'),
  ('SELECT s, count(*) AS n, sum(a), min(a), max(ts) FROM gg GROUP BY s ORDER BY sum(a) DESC NULLS LAST, s LIMIT 20'),
  ('SELECT a, count(*) AS n FROM gg GROUP BY a ORDER BY n DESC, a NULLS FIRST LIMIT 50'),
  ('SELECT d, min(ts) AS first, sum(id), avg(b) FROM gg GROUP BY d ORDER BY first, d LIMIT 15'),
  ('SELECT s, flag, count(*) AS n, max(a) FROM gg GROUP BY s, flag ORDER BY n DESC, s, flag NULLS FIRST LIMIT 25'),
  ('SELECT b, count(*) FROM gg GROUP BY b ORDER BY b DESC LIMIT 5'),
  ('SELECT s, count(*) AS n FROM gg WHERE ts > now() - interval ''100 days'' AND b < 500 GROUP BY s ORDER BY n DESC, s LIMIT 10'),
  ('SELECT s, count(*) AS n FROM gg GROUP BY s ORDER BY n DESC, s OFFSET 5 FETCH FIRST 3 ROWS WITH TIES'),
  ('SELECT late, count(*) AS n, sum(s) FROM gg GROUP BY late ORDER BY sum(s) NULLS FIRST, late LIMIT 7'),
  ('SELECT b, count(a) AS n FROM gg GROUP BY b ORDER BY n, b LIMIT 10'),
  ('SELECT s, sum(id), avg(a), avg(id), count(*) AS n FROM gg GROUP BY s ORDER BY n DESC, s LIMIT 10'),
  ('SELECT ts, count(*) AS n FROM gg GROUP BY ts ORDER BY n DESC, ts LIMIT 3'),
  ('SELECT a, count(*) FROM gg GROUP BY a ORDER BY a DESC NULLS FIRST LIMIT 4'),
  ('SELECT a, count(*) FROM gg GROUP BY a ORDER BY a NULLS FIRST LIMIT 4'),
  ('SELECT late, b, min(d), max(s) AS m FROM gg WHERE flag GROUP BY late, b ORDER BY m DESC, late NULLS FIRST, b LIMIT 30'),
  ('SELECT b, max(late) AS m FROM gg GROUP BY b ORDER BY m NULLS FIRST, b LIMIT 12'),
  ('SELECT s, count(*) AS n FROM gg WHERE b = -1 GROUP BY s ORDER BY n DESC LIMIT 10'),
  ('SELECT b % 7 AS g, count(*) FROM gg GROUP BY b % 7 ORDER BY 2 DESC LIMIT 3');

SELECT is(pg_temp.same_on_gpu(q), 'same', 'GPU groups: ' || q) FROM queries WHERE n <> 18 ORDER BY n;

-- an expression to group by stays with PostgreSQL
SELECT is(pg_temp.explained(q, 'Custom Plan Provider'), NULL, 'not grouped on the GPU: ' || q)
  FROM queries WHERE n = 18;

-- every group is counted, and the GPU's page cache or the pages themselves read
SELECT is(pg_temp.explained('SELECT a, count(*) FROM gg GROUP BY a ORDER BY 2 DESC LIMIT 5', 'Groups')::bigint,
          (SELECT count(DISTINCT a) + 1 FROM gg), 'every group of the table, the NULL one too');
SELECT is(pg_temp.explained('SELECT b, count(*) FROM gg GROUP BY b ORDER BY 2 DESC LIMIT 5', 'Backend'),
          'gpu', 'EXPLAIN says the GPU grouped the pages');

-- aggregates the GPU does not compute stay with PostgreSQL under gpu
SELECT is(pg_temp.explained('SELECT s, sum(score) FROM gg GROUP BY s ORDER BY 2 DESC LIMIT 5',
                            'Custom Plan Provider'), NULL, 'a float sum stays with PostgreSQL');
SELECT is(pg_temp.explained('SELECT s, max(v) FROM gg GROUP BY s ORDER BY 2 DESC LIMIT 5',
                            'Custom Plan Provider'), NULL, 'max of a float stays with PostgreSQL');

-- pages written since the VACUUM are grouped on the GPU too, their tuples'
-- visibility decided there by their headers; before a reader sets the
-- writes' hint bits, a page whose header leaves a tuple undecided goes back
-- to the CPU whole, which decides them (and sets the bits)
UPDATE gg SET b = b + 1, s = s + 1 WHERE id % 1000 = 0;
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT b, count(*) AS n FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10',
                                         'Pages Sent Back Undecided'), '0')::bigint, '>', 0::bigint,
              'pages after writes, before their hint bits: sent back to the CPU whole');
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT b, count(*) AS n FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10',
                                         'Tuples Settled on GPU'), '0')::bigint, '>', 0::bigint,
              'pages after writes, hint bits set: tuples settled on the GPU');
SELECT is(pg_temp.same_on_gpu('SELECT b, count(*) AS n, sum(s), max(a) FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10', true),
          'same', 'pages after writes: grouped on the GPU');
SELECT is(pg_temp.same_on_gpu('SELECT s, flag, count(*) AS n FROM gg GROUP BY s, flag ORDER BY n, s, flag LIMIT 10', true),
          'same', 'pages after writes: two grouping columns');

-- random queries: every aggregate the GPU computes, ranked or along, over
-- every grouping type, one or two columns, NULL groups, sums past int8,
-- random direction, LIMIT, OFFSET and WHERE (the seed is printed)
\set random_table gr
\ir lib/groups_random.sql
VACUUM (FREEZE, ANALYZE) gr;
CREATE TEMP TABLE groups_random AS
SELECT q, pg_temp.same_on_gpu(q) AS result
  FROM pg_temp.random_groups_queries('gr', ARRAY['g8', 'g4', 'g2', 'gb', 'gd', 'gtz', 'g2, gb', 'g8, gd', 'gtz, g4'], 200) q;
SELECT diag(result || ': ' || q) FROM groups_random WHERE result <> 'same' LIMIT 5;
SELECT is((SELECT count(*) FROM groups_random WHERE result <> 'same'), 0::bigint,
          '200 random queries grouped on the GPU give PostgreSQL''s answers');

-- text and varchar groups by their bytes, up to 16 on the GPU: empty, NULL,
-- 8, 9 and 16 bytes, multibyte; a longer value (or one compressed or out of
-- line) sends the scan back to the CPU, which groups the table again
CREATE TABLE gt AS
SELECT i AS id, (i * 7919) % 1000 AS x,
       (ARRAY['en', 'ja', '', 'englishx', 'englishxy', 'sixteen-bytes-16', 'fünf', '日本語', 'pt',
              NULL])[least(i % 13, 9) + 1] AS w,
       (ARRAY['a', 'bb', 'eight888'])[i % 3 + 1]::varchar(12) AS tag
  FROM generate_series(1, 50000) i;
VACUUM (FREEZE, ANALYZE) gt;
CREATE TEMP TABLE text_queries (n serial, q text);
INSERT INTO text_queries (q) VALUES
  ('SELECT w, count(*) AS n FROM gt GROUP BY w ORDER BY n DESC, w LIMIT 4'),
  ('SELECT w, count(*) AS n, sum(x), min(id), count(tag) FROM gt WHERE x < 700 GROUP BY w ORDER BY sum(x) DESC, w LIMIT 5'),
  ('SELECT tag, count(*) AS n FROM gt GROUP BY tag ORDER BY n, tag LIMIT 2'),
  ('SELECT w, max(id) AS m FROM gt GROUP BY w ORDER BY m DESC, w OFFSET 2 FETCH FIRST 2 ROWS WITH TIES'),
  ('SELECT w, count(w) AS n FROM gt GROUP BY w ORDER BY n, w LIMIT 3');
SELECT is(pg_temp.same_on_gpu(q), 'same', 'GPU text groups: ' || q) FROM text_queries ORDER BY n;
SELECT is(pg_temp.explained('SELECT w, count(*) FROM gt GROUP BY w ORDER BY 2 DESC LIMIT 3', 'Backend'),
          'gpu', 'EXPLAIN says the GPU grouped the text');
SELECT is(pg_temp.explained('SELECT w, count(*) FROM gt GROUP BY w ORDER BY w LIMIT 3', 'Custom Plan Provider'),
          NULL, 'ranked by a text group: stays with PostgreSQL');
-- whether the GPU left out pages for their text groups, the CPU grouped the
-- table again, and the answer is PostgreSQL's
CREATE FUNCTION pg_temp.regrouped_on_cpu(q text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN coalesce(pg_temp.explained(q, 'Regrouped on CPU'), '0') = '0'
              THEN 'not regrouped on the CPU'
              WHEN pg_temp.answer(q, true) IS DISTINCT FROM pg_temp.answer(q, false)
              THEN 'different answers'
              ELSE 'same' END
$$;
INSERT INTO gt VALUES (50001, 1, 'seventeen-bytes-x', 'a'), (50002, 2, repeat('long', 1000), 'a');
SELECT is(pg_temp.regrouped_on_cpu('SELECT w, count(*) AS n FROM gt GROUP BY w ORDER BY n, w LIMIT 4'),
          'same', 'a text group of 17 bytes on a page written since: grouped again on the CPU');
VACUUM (FREEZE) gt;
SELECT is(pg_temp.regrouped_on_cpu('SELECT w, count(*) AS n, count(tag) FROM gt GROUP BY w ORDER BY n, w LIMIT 4'),
          'same', 'a text group of 17 bytes on an all-visible page: grouped again on the CPU');
-- compressed and out-of-line values, whichever form the planner takes
SELECT is(pg_temp.answer('SELECT lang, count(*) AS n FROM gg GROUP BY lang ORDER BY n, lang LIMIT 5', true),
          pg_temp.answer('SELECT lang, count(*) AS n FROM gg GROUP BY lang ORDER BY n, lang LIMIT 5', false),
          'text groups compressed and out of line: PostgreSQL''s answer');

-- under auto too
SET gputopk.device = auto;
SELECT is(pg_temp.same_on_gpu('SELECT b, count(*) AS n FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10'),
          'same', 'GPU groups under auto');

-- device memory running out: an error under gpu, the CPU under auto; a
-- sticky error during the scan under auto: every page grouped again on the CPU
SET gputopk.device = gpu;
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT throws_ok('SELECT b, count(*) FROM gg GROUP BY b ORDER BY 2 DESC LIMIT 5', '53200', NULL,
                 'out of device memory, a GpuTopKGroups query fails with out_of_memory');
SET gputopk.device = auto;
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT is(pg_temp.answer('SELECT b, count(*) AS n, max(a) FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10', true),
          pg_temp.answer('SELECT b, count(*) AS n, max(a) FROM gg GROUP BY b ORDER BY n DESC, b LIMIT 10', false),
          'under auto, a groups job without device memory runs on the CPU instead');
SELECT gputopk_service_inject_fault('device_error');
SELECT is(pg_temp.answer('SELECT s, flag, sum(a) AS t FROM gg GROUP BY s, flag ORDER BY t DESC, s, flag LIMIT 10', true),
          pg_temp.answer('SELECT s, flag, sum(a) AS t FROM gg GROUP BY s, flag ORDER BY t DESC, s, flag LIMIT 10', false),
          'under auto, a sticky CUDA error during the scan leaves every page to the CPU');
SELECT is(pg_temp.await_service(), 'ready', 'the service restarts');
RESET gputopk.device;

SELECT * FROM finish();
DROP TABLE gg, gr, gt;
