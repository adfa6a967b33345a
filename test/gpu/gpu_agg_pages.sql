-- pgTAP, GPU machines only, under gputopk.device = gpu: GpuTopKAgg without
-- GROUP BY and with one aggregate has the GPU read the table's all-visible
-- pages in place (gputopk.gpu_pages) and answers as the aggregates do
-- without gputopk: every value type, NULLs, NaN, -0, many ties, the _by
-- forms with results passed by reference, compiled filters, k larger than
-- the rows, pages left to the CPU after writes, parallel plans, and the
-- cases that stay on the CPU.
SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
SET gputopk.enable_column_index = off;
SELECT plan(36);

CREATE TABLE ga AS
SELECT i::int8 AS id,
       repeat('p', i % 37) AS pad,
       CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'NaN'::float4
            WHEN i % 83 = 0 THEN '-0'::float4 ELSE (random() * 1000)::float4 END AS score,
       CASE WHEN i % 101 = 0 THEN NULL ELSE (random() * 2e6 - 1e6)::int4 END AS a,
       (random() * 1000)::int4 AS b,
       (random() * 200)::int2 AS s,
       now() - random() * interval '365 days' AS ts,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (random() * 1e9)::float8 END AS v,
       date '2020-01-01' + (i % 1000) AS d,
       CASE i % 5 WHEN 0 THEN 'en' WHEN 1 THEN 'ja' WHEN 2 THEN NULL WHEN 3 THEN repeat('es', 1000)
            ELSE 'pt' END AS lang
  FROM generate_series(1, 300000) i;
-- a column added after the rows: NULL in them, read past the tuples' ends
ALTER TABLE ga ADD COLUMN late int4;
UPDATE ga SET late = (id % 50)::int4 WHERE id % 2 = 0;
VACUUM (FREEZE, ANALYZE) ga;

\ir lib/compare.sql

-- whether GpuTopKAgg's GPU read pages of the table (and the CPU some, if
-- cpu_pages) and the answer is that of the aggregates without gputopk
CREATE FUNCTION pg_temp.same_on_gpu(q text, cpu_pages boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  gpu text := pg_temp.explained(q, 'Pages Read on GPU');
  cpu text := pg_temp.explained(q, 'Pages Read on CPU');
BEGIN
  IF coalesce(gpu, '0') = '0' THEN
    RETURN 'no page read on the GPU: ' || coalesce(pg_temp.explained(q, 'Custom Plan Provider'),
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

CREATE TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT gpu_topk(score, 100) FROM ga'),
  ('SELECT gpu_bottomk(score, 50) FROM ga'),
  ('SELECT gpu_topk(a, 1000) FROM ga'),
  ('SELECT gpu_bottomk(a, 7) FROM ga'),
  ('SELECT gpu_bottomk(s, 500) FROM ga'),
  ('SELECT gpu_topk(b, 3) FROM ga'),
  ('SELECT gpu_topk(ts, 25) FROM ga'),
  ('SELECT gpu_bottomk(v, 10) FROM ga'),
  ('SELECT gpu_topk(d, 40) FROM ga'),
  ('SELECT gpu_topk(id, 10) FROM ga'),
  ('SELECT gpu_topk(late, 60) FROM ga'),
  ('SELECT gpu_bottomk(late, 60) FROM ga'),
  ('SELECT gpu_topk(v, 10) FROM ga WHERE ts > now() - interval ''36.5 days'''),
  ('SELECT gpu_bottomk(d, 40) FROM ga WHERE lang IN (''en'', ''ja'')'),
  ('SELECT gpu_topk(score, 30) FROM ga WHERE a > 0 AND b < 500'),
  ('SELECT gpu_topk(a, 5) FROM ga WHERE b = -1'),
  ('SELECT gpu_topk(score, 5) FROM ga WHERE score IS NULL'),
  ('SELECT gpu_topk(b, 400000) FROM ga WHERE b < 3'),
  ('SELECT gpu_topk_by(id, score, 20) FROM ga'),
  ('SELECT gpu_bottomk_by(id, s, 300) FROM ga'),
  ('SELECT gpu_bottomk_by(lang, a, 30) FROM ga'),
  ('SELECT gpu_topk_by(lang, s, 10) FROM ga WHERE lang IS NOT NULL'),
  ('SELECT gpu_topk_by(ts, v, 15) FROM ga WHERE lang = ''pt''');

SELECT is(pg_temp.same_on_gpu(q), 'same', 'GPU pages: ' || q) FROM queries ORDER BY n;

SELECT is(pg_temp.explained('SELECT gpu_topk(score, 10) FROM ga', 'Backend'), 'gpu',
          'EXPLAIN names the GPU backend');
SELECT cmp_ok(pg_temp.explained('SELECT gpu_topk(v, 10) FROM ga', 'Candidates')::int,
              '<', 1000, 'the GPU returns the best rows only');

-- a parallel plan: each process's GPU reads its share of the pages, the states are combined
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET gputopk.max_parallel_workers = 2;
SELECT is(pg_temp.same_on_gpu('SELECT gpu_topk(score, 200) FROM ga'), 'same',
          'GPU pages in a parallel plan');
SELECT is(pg_temp.same_on_gpu('SELECT gpu_bottomk_by(lang, a, 30) FROM ga'), 'same',
          'GPU pages in a parallel plan of a _by form');
SELECT cmp_ok(pg_temp.explained('SELECT gpu_topk(a, 10) FROM ga', 'GPU Processes')::int,
              '>', 1, 'several processes of a parallel plan read pages on the GPU');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET gputopk.max_parallel_workers;

-- pages written since the VACUUM go to the CPU, the others still to the GPU
UPDATE ga SET score = score + 1 WHERE id % 1000 = 0;
DELETE FROM ga WHERE id % 1000 = 1;
INSERT INTO ga (id, score, a, b, s) SELECT -i, 2000 + i, i, i, 1 FROM generate_series(1, 50) i;
SELECT is(pg_temp.same_on_gpu('SELECT gpu_topk(score, 100) FROM ga', true), 'same',
          'pages written since the VACUUM read on the CPU, in the same scan');
SELECT is(pg_temp.same_on_gpu('SELECT gpu_bottomk_by(id, a, 100) FROM ga WHERE b < 500', true), 'same',
          'a filter over pages read on both');

-- what stays on the CPU, with the same answers
SELECT is(pg_temp.explained('SELECT gpu_topk(score, 10), gpu_topk(a, 10) FROM ga',
                            'Pages Read on GPU'), NULL, 'two aggregates read their rows on the CPU');
SELECT is(pg_temp.answer('SELECT gpu_topk(score, 10), gpu_topk(a, 10) FROM ga', true),
          pg_temp.answer('SELECT gpu_topk(score, 10), gpu_topk(a, 10) FROM ga', false),
          'and answer as without gputopk');
SELECT is(pg_temp.explained('SELECT gpu_topk(score, 10) FROM ga WHERE length(pad) > 3',
                            'Pages Read on GPU'), NULL, 'a clause the GPU cannot run keeps the rows on the CPU');
SELECT is(pg_temp.answer('SELECT gpu_topk(score, 10) FROM ga WHERE length(pad) > 3', true),
          pg_temp.answer('SELECT gpu_topk(score, 10) FROM ga WHERE length(pad) > 3', false),
          'and answers as without gputopk');
SET gputopk.gpu_pages = off;
SELECT is(pg_temp.explained('SELECT gpu_topk(score, 10) FROM ga', 'Pages Read on GPU'), NULL,
          'gputopk.gpu_pages = off reads every page on the CPU');
RESET gputopk.gpu_pages;
SET default_transaction_isolation = serializable;
SELECT is(pg_temp.explained('SELECT gpu_topk(score, 10) FROM ga', 'Pages Read on GPU'), NULL,
          'a serializable transaction reads every page on the CPU');
RESET default_transaction_isolation;

SELECT * FROM finish();
DROP TABLE ga, queries;
