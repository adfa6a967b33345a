-- pgTAP, GPU machines with two GPUs or more (a skip on one): the GPU
-- service over every GPU.  A column index larger than one GPU's
-- gputopk.gpu_cache_size is partitioned over the GPUs, each holding a part
-- that gputopk_service shows; a query selects on every part and answers as
-- PostgreSQL does, under gpu and auto, before and after writes (fixed
-- queries, then random ones whose seed is printed).  A sticky fault on GPU
-- 1 restarts GPU 1's process alone: the query under auto answers on the
-- CPU, and GPU 0 serves on meanwhile.  Within the budget, the index has a
-- whole copy on one GPU.  Not in a transaction:
-- the budget is set with ALTER SYSTEM, and everything made is dropped at the
-- end.
SELECT count(*) AS gpus, count(*) >= 2 AS several FROM gputopk_service \gset
\if :several
SELECT plan(14);

SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
\set pages_table gm
\ir lib/pages.sql
CREATE INDEX gm_ci ON gm USING gputopk (score, a, b, s, ts, v);

-- every GPU of the service, as EXPLAIN lists them
CREATE FUNCTION pg_temp.every_gpu() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(device::text, ', ' ORDER BY device) FROM gputopk_service
$$;

-- random queries over gm: keys, directions, NULLS, filters, LIMIT and
-- OFFSET drawn from seed; how many answered otherwise than PostgreSQL (or
-- failed), of how many, and how many of them read the GPU's copy
CREATE FUNCTION pg_temp.random_queries(seed float8, n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  keys text[] := ARRAY['score', 'a', 'b', 's', 'ts', 'v', 'a + 0.5 * b'];
  filters text[] := ARRAY['', 'WHERE b < %s', 'WHERE a > %s * 1000', 'WHERE s = %s %% 200',
                          'WHERE score IS NULL OR b = %s', 'WHERE ts > now() - interval ''%s hours'''];
  q text;
  bad int := 0;
  on_gpu int := 0;
  outcome text;
BEGIN
  PERFORM setseed(seed);
  FOR i IN 1..n LOOP
    q := format('SELECT id, %1$s AS k FROM gm %2$s ORDER BY %1$s %3$s %4$s, id LIMIT %5$s%6$s',
                keys[1 + floor(random() * array_length(keys, 1))::int],
                format(filters[1 + floor(random() * array_length(filters, 1))::int],
                       floor(random() * 1000)::int),
                (ARRAY['DESC', 'ASC'])[1 + floor(random() * 2)::int],
                (ARRAY['', 'NULLS FIRST', 'NULLS LAST'])[1 + floor(random() * 3)::int],
                (ARRAY[1, 10, 50, 100, 1000])[1 + floor(random() * 5)::int],
                CASE WHEN random() < 0.2 THEN ' OFFSET ' || floor(random() * 100)::int ELSE '' END);
    BEGIN
      outcome := pg_temp.same_on_index_copy(q);
    EXCEPTION WHEN others THEN
      outcome := 'error: ' || SQLERRM;
    END;
    IF outcome = 'same' THEN
      on_gpu := on_gpu + 1;
    ELSIF outcome NOT LIKE 'data path: %' THEN
      bad := bad + 1;
      RAISE NOTICE 'seed %: %: %', seed, outcome, q;
    ELSIF pg_temp.answer(q, true) IS DISTINCT FROM pg_temp.answer(q, false) THEN
      bad := bad + 1;
      RAISE NOTICE 'seed %: different answers: %', seed, q;
    END IF;
  END LOOP;
  RETURN format('%s different of %s, %s over the GPU''s copy', bad, n, on_gpu);
END $$;

CREATE TEMP TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT score FROM gm ORDER BY score DESC LIMIT 100'),
  ('SELECT id, score FROM gm ORDER BY score DESC NULLS LAST, id LIMIT 50'),
  ('SELECT score FROM gm ORDER BY score LIMIT 500'),
  ('SELECT id, a FROM gm ORDER BY a DESC, id LIMIT 20 OFFSET 30'),
  ('SELECT a FROM gm ORDER BY a DESC FETCH FIRST 10 ROWS WITH TIES'),
  ('SELECT s FROM gm ORDER BY s LIMIT 300'),
  ('SELECT id, score FROM gm WHERE ts > now() - interval ''36.5 days'' ORDER BY score DESC, id LIMIT 50'),
  ('SELECT id FROM gm WHERE a > 0 ORDER BY a + 0.5 * b DESC, id LIMIT 1000');

-- gputopk.gpu_cache_size below the index's size, above its half
SELECT (pg_relation_size('gm_ci') / 1048576 * 0.6 + 1)::int AS budget_mb \gset
ALTER SYSTEM SET gputopk.gpu_cache_size = :'budget_mb';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);

SELECT is(count(*)::int, :gpus, 'every GPU ready') FROM gputopk_service WHERE state = 'ready';
SELECT is(string_agg(outcome, ', '), NULL, 'partitioned over the GPUs: fixed queries as PostgreSQL')
  FROM (SELECT q || ': ' || pg_temp.same_on_index_copy(q) AS outcome FROM queries ORDER BY n) t
  WHERE outcome NOT LIKE '%: same';
SELECT is(pg_temp.explained('SELECT score FROM gm ORDER BY score DESC LIMIT 10', 'GPUs'),
          pg_temp.every_gpu(), 'EXPLAIN names every GPU');
SELECT ok(bool_and(index_copies >= 1 AND index_bytes > 0 AND index_bytes <= :budget_mb * 1048576::int8),
          'each GPU holds a part within its budget') FROM gputopk_service;

-- writes: their pages go to the parts that hold them
UPDATE gm SET score = 5000 + id WHERE id % 5000 = 0;
DELETE FROM gm WHERE id % 7000 = 1;
INSERT INTO gm (id, score, a, b, s, ts, v)
  SELECT 300000 + i, (random() * 2000)::float4, i, i % 1000, i % 200, now(), i
  FROM generate_series(1, 20000) i;
SELECT is(string_agg(outcome, ', '), NULL, 'after writes: fixed queries as PostgreSQL')
  FROM (SELECT q || ': ' || pg_temp.same_on_index_copy(q) AS outcome FROM queries ORDER BY n) t
  WHERE outcome NOT LIKE '%: same';

SELECT (extract(epoch FROM now())::int8 % 100000) / 100000.0 AS seed \gset
\echo random queries, seed :seed
SELECT pg_temp.random_queries(:seed, 150) AS under_gpu \gset
SELECT ok(:'under_gpu' LIKE '0 different of 150, %' AND split_part(split_part(:'under_gpu', ', ', 2), ' ', 1)::int >= 75,
          'random queries under gpu, seed ' || :seed || ': ' || :'under_gpu');
SET gputopk.device = auto;
SELECT pg_temp.random_queries(:seed / 2, 100) AS under_auto \gset
SELECT ok(:'under_auto' LIKE '0 different of 100, %' AND split_part(split_part(:'under_auto', ', ', 2), ' ', 1)::int >= 50,
          'random queries under auto, seed ' || :seed / 2 || ': ' || :'under_auto');

-- a sticky fault on GPU 1 ends GPU 1's process alone (CUDA would fail
-- every GPU of a process that met one): the query under auto, whose part on
-- GPU 1 fails, answers on the CPU, and GPU 0 serves on while GPU 1 restarts
-- (slowed down here)
SELECT gputopk_service_inject_fault('slow_start', 4000);
SELECT gputopk_service_inject_fault('device_error', 1);
SELECT is(pg_temp.answer('SELECT id, score FROM gm ORDER BY score DESC, id LIMIT 100', true),
          pg_temp.answer('SELECT id, score FROM gm ORDER BY score DESC, id LIMIT 100', false),
          'a fault on GPU 1 under auto: PostgreSQL''s answer');
SELECT is((SELECT state FROM gputopk_service WHERE device = 0), 'ready', 'GPU 0 serves on');
SELECT isnt((SELECT state FROM gputopk_service WHERE device = 1), 'ready', 'while GPU 1 restarts');

-- within the budget: a whole copy, on a GPU that is ready (GPU 0 meanwhile)
ALTER SYSTEM RESET gputopk.gpu_cache_size;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT is(pg_temp.explained('SELECT score FROM gm ORDER BY score DESC LIMIT 10', 'GPUs'), '0',
          'within the budget: a whole copy, on GPU 0 while GPU 1 restarts');
SELECT is(pg_temp.await_service(), 'ready', 'GPU 1 is back after its restart');

-- below the budget again: partitioned over every GPU again
ALTER SYSTEM SET gputopk.gpu_cache_size = :'budget_mb';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT is(pg_temp.same_on_index_copy('SELECT id, score FROM gm ORDER BY score DESC, id LIMIT 100'), 'same',
          'and the index is partitioned over every GPU again');
SELECT is(pg_temp.explained('SELECT score FROM gm ORDER BY score DESC LIMIT 10', 'GPUs'),
          pg_temp.every_gpu(), 'on every GPU');
ALTER SYSTEM RESET gputopk.gpu_cache_size;
SELECT pg_reload_conf();

DROP TABLE gm;
\else
SELECT plan(1);
SELECT skip('the service has fewer than two GPUs', 1);
\endif
SELECT * FROM finish();
