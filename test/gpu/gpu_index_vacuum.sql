-- VACUUM compacting a column index whose copy is in the GPU's memory: the
-- copy is forgotten, loaded again, and answers as PostgreSQL does.  Outside
-- a transaction block, as VACUUM must be.
SET client_min_messages = warning;
SELECT plan(4);

CREATE TABLE gv AS
  SELECT i AS id, (i::int8 * 7919 % 100003)::float8 AS v, (i % 5)::int2 AS g
  FROM generate_series(1, 300000) i;
CREATE INDEX gv_ci ON gv USING gputopk (v, g);
ANALYZE gv;
CREATE TEMP TABLE gv_plans (step text, plan json);
CREATE TEMP TABLE gv_answers (step text, gpu boolean, ids int[]);

-- the plan and the answer of the query, on the GPU and from plain PostgreSQL
CREATE PROCEDURE pg_temp.gv_run(step text) LANGUAGE plpgsql AS $$
DECLARE
  q text := 'SELECT id FROM gv WHERE g <> 2 ORDER BY v DESC, id LIMIT 100';
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
  INSERT INTO gv_plans VALUES (step, plan);
  EXECUTE format('INSERT INTO gv_answers SELECT %L, true, array_agg(id) FROM (%s) t', step, q);
  SET gputopk.enabled = off;
  EXECUTE format('INSERT INTO gv_answers SELECT %L, false, array_agg(id) FROM (%s) t', step, q);
  RESET gputopk.enabled;
END $$;

CALL pg_temp.gv_run('loaded');
SELECT pg_relation_size('gv_ci') AS size_before \gset
DELETE FROM gv WHERE id % 3 <> 0;
-- While an autovacuum elsewhere in the database holds a snapshot from before
-- the DELETE, VACUUM cannot remove the rows (the index then keeps their
-- entries and is not compacted): VACUUM again after a wait, twice at most.
VACUUM gv;
SELECT count(*) AS slept FROM (SELECT pg_sleep(2) WHERE pg_relation_size('gv_ci') >= :size_before / 2) s \gset
VACUUM gv;
SELECT count(*) AS slept FROM (SELECT pg_sleep(5) WHERE pg_relation_size('gv_ci') >= :size_before / 2) s \gset
VACUUM gv;
CALL pg_temp.gv_run('compacted');

SELECT ok(pg_relation_size('gv_ci') < :size_before / 2, 'VACUUM compacted the index');
SELECT is((SELECT plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Data Path' FROM gv_plans
           WHERE step = 'compacted'),
          'index entries read from the GPU''s copy, candidates'' rows fetched',
          'after compaction, the GPU reads its copy');
SELECT ok((SELECT (plan -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Index Pages Sent to GPU')::int
            FROM gv_plans WHERE step = 'compacted') >=
           pg_relation_size('gv_ci') / current_setting('block_size')::int - 1,
          'the copy was loaded again: every page of the compacted index sent');
SELECT is((SELECT ids FROM gv_answers WHERE step = 'compacted' AND gpu),
          (SELECT ids FROM gv_answers WHERE step = 'compacted' AND NOT gpu),
          'after compaction, the same answer as PostgreSQL');

SELECT * FROM finish();
DROP TABLE gv;
