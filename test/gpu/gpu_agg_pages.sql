-- pgTAP, GPU machines only, under gputopk.device = gpu: GpuTopKAgg without
-- GROUP BY and with one aggregate has the GPU read the table's pages in
-- place (gputopk.gpu_pages) and answers as the aggregates do without
-- gputopk: every value type, NULLs, NaN, -0, many ties, the _by forms with
-- results passed by reference, compiled filters, k larger than the rows,
-- pages written since VACUUM (their tuples' visibility decided on the
-- CPU), pages vouched for by the visibility map, parallel plans, and the
-- cases that stay on the CPU.
SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
SET gputopk.enable_column_index = off;
SELECT plan(38);

\set pages_table ga
\ir lib/pages.sql

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

-- pages written since the VACUUM go to the GPU too, which settles their
-- tuples' visibility by their headers (the undecided rows of its answer
-- decided on the CPU)
UPDATE ga SET score = score + 1 WHERE id % 1000 = 0;
DELETE FROM ga WHERE id % 1000 = 1;
INSERT INTO ga (id, score, a, b, s) SELECT -i, 2000 + i, i, i, 1 FROM generate_series(1, 50) i;
SELECT is(pg_temp.same_on_gpu('SELECT gpu_topk(score, 100) FROM ga', true), 'same',
          'pages written since the VACUUM read on the GPU, their visibility settled there');
SELECT is(pg_temp.same_on_gpu('SELECT gpu_bottomk_by(id, a, 100) FROM ga WHERE b < 500', true), 'same',
          'a filter over pages that are all-visible and pages that are not');
-- pages read again come from the GPU's page cache on the visibility map's
-- word, or the WAL's (on 18, whose writes moved the map page's LSN)
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT gpu_topk(score, 100) FROM ga',
                                         'Pages Vouched by Visibility Map'), '0')::bigint +
              coalesce(pg_temp.explained('SELECT gpu_topk(score, 100) FROM ga',
                                         'Pages Vouched by WAL'), '0')::bigint, '>', 0::bigint,
              'pages read again are vouched for by the visibility map or the WAL, unread by the scan');
SELECT is(pg_temp.same_on_gpu('SELECT gpu_bottomk_by(id, a, 100) FROM ga WHERE b < 500', true), 'same',
          'and the answer is the aggregate''s');

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
