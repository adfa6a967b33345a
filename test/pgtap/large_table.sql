-- pgTAP: a table larger than shared_buffers (128MB in the test cluster),
-- read by GpuTopK's CPU backend, which on PostgreSQL 17 and later reads it
-- through a read stream (scan_row_reader_next_read_block): the same answers
-- as without gputopk, in one process and in parallel, with a filter.
BEGIN;
SELECT plan(6);
SET LOCAL gputopk.device = cpu;
SET LOCAL gputopk.min_table_rows = 1000;
CREATE TEMP TABLE big_expected (q int, answer text[]);
CREATE TABLE big AS
SELECT i AS id, ((i::int8 * 7919) % 1000003)::float8 AS score, i % 10 AS g, repeat('x', 64) AS pad
  FROM generate_series(1, 1500000) i;
ANALYZE big;
SELECT cmp_ok(pg_relation_size('big'), '>',
              (SELECT setting::int8 * 8192 FROM pg_settings WHERE name = 'shared_buffers'),
              'the table is larger than shared_buffers');

CREATE FUNCTION pg_temp.answer(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  result text[];
BEGIN
  EXECUTE 'SELECT array_agg(r::text) FROM (' || q || ') r' INTO result;
  RETURN result;
END $$;
CREATE FUNCTION pg_temp.plan_has(q text, node text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%' || node || '%' THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END $$;

SET LOCAL gputopk.enabled = off;
INSERT INTO big_expected VALUES
  (1, pg_temp.answer('SELECT id, score FROM big ORDER BY score DESC, id LIMIT 20')),
  (2, pg_temp.answer('SELECT id, score FROM big WHERE g = 3 ORDER BY score, id LIMIT 20'));
SET LOCAL gputopk.enabled = on;
SELECT ok(pg_temp.plan_has('SELECT id, score FROM big ORDER BY score DESC, id LIMIT 20', 'GpuTopK'),
          'GpuTopK plans the query');
SELECT is(pg_temp.answer('SELECT id, score FROM big ORDER BY score DESC, id LIMIT 20'),
          (SELECT answer FROM big_expected WHERE q = 1), 'the top 20, in one process');
SELECT is(pg_temp.answer('SELECT id, score FROM big WHERE g = 3 ORDER BY score, id LIMIT 20'),
          (SELECT answer FROM big_expected WHERE q = 2), 'the bottom 20 of a filter');
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL gputopk.max_parallel_workers = 2;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT ok(pg_temp.plan_has('SELECT id, score FROM big ORDER BY score DESC, id LIMIT 20', 'Gather Merge'),
          'in parallel');
SELECT is(pg_temp.answer('SELECT id, score FROM big ORDER BY score DESC, id LIMIT 20'),
          (SELECT answer FROM big_expected WHERE q = 1), 'the top 20, in parallel');
SELECT * FROM finish();
ROLLBACK;
