--
-- The column index (CREATE INDEX ... USING gputopk) and GpuTopK over it:
-- its definition, its entries through inserts, updates, deletes and
-- VACUUM (gputopk_index_check), and queries compared with plain
-- PostgreSQL (needs topk_check and tk from topk_scan).
--
SET gputopk.min_table_rows = 1000;
-- the index read on the CPU (test/gpu/gpu_index.sql reads it on the GPU)
SET gputopk.device = cpu;

-- what the index can hold
CREATE TABLE ci_bad (a int, t text, p point);
CREATE INDEX ON ci_bad USING gputopk (p);
CREATE INDEX ON ci_bad USING gputopk ((a + 1));
CREATE INDEX ON ci_bad USING gputopk (a) WHERE a > 0;
CREATE INDEX ON ci_bad USING gputopk (a) WITH (fillfactor = 50);
CREATE INDEX ON ci_bad USING gputopk (a) WITH (layout = sorted);
CREATE UNIQUE INDEX ON ci_bad USING gputopk (a);
CREATE INDEX ci_bad_a ON ci_bad USING gputopk (a);
SELECT gputopk_index_check('ci_bad_a');
SELECT gputopk_index_check('ci_bad');
CREATE INDEX ci_bad_b ON ci_bad (a);
SELECT gputopk_index_check('ci_bad_b');
-- no relation of that OID
SELECT gputopk_index_check(0);
-- an invalid index is not checked: one a failed CREATE INDEX CONCURRENTLY
-- left, and one marked invalid, until REINDEX makes it valid again
CREATE INDEX CONCURRENTLY ci_bad_c ON ci_bad USING gputopk ((a + 1));
SELECT gputopk_index_check('ci_bad_c');
DROP INDEX ci_bad_c;
UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ci_bad_a'::regclass;
SELECT gputopk_index_check('ci_bad_a');
REINDEX INDEX ci_bad_a;
SELECT gputopk_index_check('ci_bad_a');
-- no index scans of it
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM ci_bad WHERE a = 1;
RESET enable_seqscan;
DROP TABLE ci_bad;

-- every key type, with the index on all of them
CREATE INDEX tk_ci ON tk USING gputopk (i2, i4, i8, f4, f8, d, ts, tz, g);
SELECT gputopk_index_check('tk_ci') = (SELECT count(*) FROM tk) AS index_matches;
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
      FOREACH tail IN ARRAY ARRAY['LIMIT 1', 'LIMIT 25 OFFSET 30', 'LIMIT 30000',
                                  'FETCH FIRST 7 ROWS WITH TIES'] LOOP
        q := format('SELECT %s FROM tk ORDER BY %s%s %s', col, col, ord, tail);
        INSERT INTO checks VALUES (q, topk_check(q));
        q := format('SELECT %s, id FROM tk WHERE g <> 3 AND id %% 3 <> 1 ORDER BY %s%s, id %s',
                    col, col, ord, tail);
        INSERT INTO checks VALUES (q, topk_check(q));
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT result, count(*) FROM checks GROUP BY result ORDER BY result;
SELECT q, result FROM checks WHERE result <> 'gputopk index' LIMIT 10;

-- clauses the index checks and clauses it leaves to the rows, computed keys
EXPLAIN (COSTS OFF)
  SELECT id, f8 FROM tk WHERE g IN (1, 2) AND f4 > 0 AND length(wide) > 10 ORDER BY f8 DESC LIMIT 10;
SELECT topk_check('SELECT id, f8 FROM tk WHERE g IN (1, 2) AND f4 > 0 AND length(wide) > 10 ORDER BY f8 DESC, id LIMIT 10');
SELECT topk_check('SELECT id, i2 + 0.5 * g FROM tk WHERE ts > ''2010-01-01'' ORDER BY i2 + 0.5 * g DESC, id LIMIT 20');
SELECT topk_check('SELECT id, i2 + 0.5 * g FROM tk ORDER BY i2 + 0.5 * g NULLS FIRST, id LIMIT 20');
SELECT topk_check('SELECT id FROM tk WHERE f8 > 1e9 ORDER BY f8 LIMIT 5');
SELECT topk_check('SELECT id FROM tk WHERE id % 100 = 7 ORDER BY d DESC, id LIMIT 50');
-- float arithmetic over its columns compiles into a key program (topk_rank_float)
EXPLAIN (COSTS OFF) SELECT id FROM tk ORDER BY f4::float8 * 2 LIMIT 5;
-- a key the index does not hold (a function the programs lack): the table is read
EXPLAIN (COSTS OFF) SELECT id FROM tk ORDER BY sqrt(abs(f8)) LIMIT 5;
-- off, the table is read
SET gputopk.enable_column_index = off;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk ORDER BY f8 DESC LIMIT 10;
RESET gputopk.enable_column_index;
-- a btree that gives the order still wins
CREATE INDEX tk_f8 ON tk (f8);
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk ORDER BY f8 DESC LIMIT 10;
DROP INDEX tk_f8;
-- parameters
PREPARE ci_q(int, float8) AS SELECT id, f8 FROM tk WHERE f4 > $2 ORDER BY f8, id LIMIT $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ci_q(5, 0);
CREATE TEMP TABLE ci_executed AS EXECUTE ci_q(7, 10);
SET gputopk.enabled = off;
SELECT array_agg(id) = (SELECT array_agg(id) FROM ci_executed) AS same
  FROM (SELECT id FROM tk WHERE f4 > 10 ORDER BY f8, id LIMIT 7) s;
RESET gputopk.enabled;
RESET plan_cache_mode;
DEALLOCATE ci_q;

-- entries through writes: rows updated into and out of the top, deleted
-- (candidates dead), inserted, then VACUUM; a table with its own data
CREATE TABLE ci (id int, score float4, day date, flag bool, note text)
  WITH (autovacuum_enabled = off);
INSERT INTO ci SELECT i, (i * 7919 % 10007) / 100.0, date '2020-01-01' + i % 1000, i % 2 = 0, 'r' || i
  FROM generate_series(1, 20000) i;
CREATE INDEX ci_idx ON ci USING gputopk (score, day, flag);
ANALYZE ci;
SELECT gputopk_index_check('ci_idx');
UPDATE ci SET score = score + 200 WHERE id % 1000 = 0;
UPDATE ci SET score = -1 WHERE score > 99 AND score < 100;
UPDATE ci SET note = note || 'x' WHERE id % 3 = 0;
SELECT gputopk_index_check('ci_idx');
SELECT topk_check('SELECT id, score FROM ci ORDER BY score DESC, id LIMIT 30');
SELECT topk_check('SELECT id, score FROM ci WHERE flag AND day < ''2021-06-01'' ORDER BY score DESC, id LIMIT 30');
-- the top rows deleted: their entries stay until VACUUM, and take more rounds
DELETE FROM ci WHERE score > 50;
\set ECHO none
\i sql/lib/explain_analyze.sql
\set ECHO all
SELECT pg_temp.explain_analyze($$SELECT id, score FROM ci ORDER BY score DESC LIMIT 10$$);
SELECT topk_check('SELECT id, score FROM ci ORDER BY score DESC, id LIMIT 10');
-- entries found dead to everyone are skipped from then on
SELECT pg_temp.explain_analyze($$SELECT id, score FROM ci ORDER BY score DESC LIMIT 10$$);
VACUUM ci;
SELECT gputopk_index_check('ci_idx');
INSERT INTO ci SELECT i, i % 97, date '2022-01-01', true, 'new' FROM generate_series(20001, 30000) i;
SELECT gputopk_index_check('ci_idx');
SELECT topk_check('SELECT id, score FROM ci ORDER BY score DESC, id LIMIT 100');
SELECT pg_relation_size('ci_idx') < pg_relation_size('ci') / 2 AS index_is_small;
-- the same in a transaction that wrote the rows itself, and after a rollback
BEGIN;
INSERT INTO ci VALUES (0, 1000, '2030-01-01', false, 'mine');
SELECT topk_check('SELECT id, score FROM ci ORDER BY score DESC, id LIMIT 3');
ROLLBACK;
SELECT topk_check('SELECT id, score FROM ci ORDER BY score DESC, id LIMIT 3');
REINDEX INDEX ci_idx;
SELECT gputopk_index_check('ci_idx');
-- gputopk_index_check reads every row, past privileges and row-level
-- security: only superusers and roles granted EXECUTE may run it
CREATE ROLE regress_ci_checker;
GRANT SELECT ON ci TO regress_ci_checker;
SET ROLE regress_ci_checker;
SELECT gputopk_index_check('ci_idx');
RESET ROLE;
GRANT EXECUTE ON FUNCTION gputopk_index_check(regclass) TO regress_ci_checker;
SET ROLE regress_ci_checker;
SELECT gputopk_index_check('ci_idx');
RESET ROLE;
REVOKE ALL ON ci FROM regress_ci_checker;
REVOKE ALL ON FUNCTION gputopk_index_check(regclass) FROM regress_ci_checker;
DROP ROLE regress_ci_checker;
DROP TABLE ci;

-- unlogged and temporary tables, a partitioned table
CREATE UNLOGGED TABLE ci_u AS SELECT i AS id, (i * 31 % 1009)::int4 AS v FROM generate_series(1, 5000) i;
CREATE INDEX ci_u_idx ON ci_u USING gputopk (v);
ANALYZE ci_u;
SELECT topk_check('SELECT id, v FROM ci_u ORDER BY v DESC, id LIMIT 10');
CREATE TEMP TABLE ci_t AS SELECT i AS id, (i * 31 % 1009)::int8 AS v FROM generate_series(1, 5000) i;
CREATE INDEX ci_t_idx ON ci_t USING gputopk (v);
ANALYZE ci_t;
SELECT topk_check('SELECT id, v FROM ci_t ORDER BY v, id LIMIT 10');
SELECT gputopk_index_check('ci_u_idx'), gputopk_index_check('ci_t_idx');
DROP TABLE ci_u, ci_t;
CREATE TABLE ci_p (id int, v float8) PARTITION BY RANGE (id);
CREATE TABLE ci_p1 PARTITION OF ci_p FOR VALUES FROM (MINVALUE) TO (5000);
CREATE TABLE ci_p2 PARTITION OF ci_p FOR VALUES FROM (5000) TO (MAXVALUE);
INSERT INTO ci_p SELECT i, (i * 7919 % 10007) FROM generate_series(1, 10000) i;
CREATE INDEX ci_p_idx ON ci_p USING gputopk (v);
ANALYZE ci_p;
EXPLAIN (COSTS OFF) SELECT id, v FROM ci_p ORDER BY v DESC LIMIT 5;
SELECT topk_check('SELECT id, v FROM ci_p ORDER BY v DESC, id LIMIT 5');
-- a partitioned index holds no entries: its partitions' indexes are checked
SELECT gputopk_index_check('ci_p_idx');
SELECT gputopk_index_check(relid) FROM pg_partition_tree('public.ci_p_idx') WHERE isleaf;
DROP TABLE ci_p;

-- VACUUM compacts: the entries of the last pages move into free slots of
-- earlier ones, and the empty pages at the end are cut off
CREATE TABLE ci_c AS
  SELECT i AS id, (i * 7919 % 10007)::float8 AS v, (i % 7)::int2 AS g, 'w' || (i % 50) AS w
  FROM generate_series(1, 60000) i;
CREATE INDEX ci_c_idx ON ci_c USING gputopk (v, g, w);
SELECT pg_relation_size('ci_c_idx') AS size_before \gset
DELETE FROM ci_c WHERE id % 3 <> 0;
VACUUM ci_c;
SELECT pg_relation_size('ci_c_idx') < :size_before / 2 AS shrunk;
SELECT gputopk_index_check('ci_c_idx');
ANALYZE ci_c;
SELECT topk_check('SELECT id, v FROM ci_c WHERE g <> 2 ORDER BY v DESC, id LIMIT 50');
SELECT topk_check('SELECT id, v FROM ci_c WHERE w IN (''w3'', ''w33'') ORDER BY v DESC, id LIMIT 50');
INSERT INTO ci_c SELECT i, i, 1 FROM generate_series(60001, 61000) i;
SELECT gputopk_index_check('ci_c_idx');
SELECT topk_check('SELECT id, v FROM ci_c ORDER BY v DESC, id LIMIT 50');
-- a few entries freed: nothing moves
SELECT pg_relation_size('ci_c_idx') AS size_before \gset
DELETE FROM ci_c WHERE id % 100 = 3;
VACUUM ci_c;
SELECT pg_relation_size('ci_c_idx') = :size_before AS kept;
SELECT gputopk_index_check('ci_c_idx');
-- a VACUUM whose index vacuuming runs in parallel workers does not compact
CREATE INDEX ci_c_id ON ci_c (id);
CREATE INDEX ci_c_v ON ci_c (v);
SET min_parallel_index_scan_size = 0;
SELECT pg_relation_size('ci_c_idx') AS size_before \gset
DELETE FROM ci_c WHERE id % 2 = 0;
VACUUM (PARALLEL 2) ci_c;
SELECT pg_relation_size('ci_c_idx') = :size_before AS kept;
RESET min_parallel_index_scan_size;
SELECT gputopk_index_check('ci_c_idx');
DROP TABLE ci_c;

-- parallel plans: each process reads its share of the index's pages and
-- fetches its own candidates, under a Gather Merge (a key program: one
-- process, which reads pages by bound, is costed as reading them all)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET gputopk.max_parallel_workers = 2;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g <> 3 ORDER BY f8 + 0 DESC NULLS LAST LIMIT 10;
SELECT topk_check('SELECT id, f8 FROM tk WHERE g <> 3 ORDER BY f8 + 0 DESC NULLS LAST, id LIMIT 10');
-- a column key: one process, reading pages by bound
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk WHERE g <> 3 ORDER BY f8 DESC NULLS LAST LIMIT 10;
-- NULLs first, and enough of them to stop a round early: one process
EXPLAIN (COSTS OFF) SELECT f8 FROM tk WHERE g <> 3 ORDER BY f8 DESC LIMIT 10;
SELECT topk_check('SELECT i4 FROM tk ORDER BY i4 NULLS FIRST LIMIT 40');
SELECT topk_check('SELECT id, i2 + 0.5 * g FROM tk WHERE f4 < 0 ORDER BY i2 + 0.5 * g DESC, id LIMIT 30');
-- deleted top rows: the later rounds of each process read the same pages
BEGIN;
DELETE FROM tk WHERE id IN (SELECT id FROM tk ORDER BY f8 DESC NULLS LAST LIMIT 200);
SELECT topk_check('SELECT id, f8 FROM tk ORDER BY f8 + 0 DESC NULLS LAST, id LIMIT 20');
ROLLBACK;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET gputopk.max_parallel_workers;

-- NULLs first: once a round holds enough NULL keys, no other key can enter
-- and it stops reading; ties kept, it reads only the null bitmaps
CREATE TABLE ci_n AS
  SELECT i AS id, CASE WHEN i % 10 = 0 THEN NULL ELSE (i * 7919 % 10007)::float4 END AS v,
         i % 5 AS g
  FROM generate_series(1, 50000) i;
CREATE INDEX ci_n_idx ON ci_n USING gputopk (v, g);
ANALYZE ci_n;
CREATE FUNCTION entries_scanned(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
  RETURN (plan->0->'Plan'->'Plans'->0->>'Index Entries Scanned')::bigint;
END $$;
SELECT topk_check('SELECT v FROM ci_n ORDER BY v DESC LIMIT 100');
SELECT entries_scanned('SELECT v FROM ci_n ORDER BY v DESC LIMIT 100') < 50000 AS stopped_early;
SELECT topk_check('SELECT v FROM ci_n WHERE g = 2 ORDER BY v DESC LIMIT 100');
SELECT topk_check('SELECT id, v FROM ci_n WHERE g = 2 ORDER BY v DESC, id LIMIT 100');
SELECT entries_scanned('SELECT id, v FROM ci_n WHERE g = 2 ORDER BY v DESC, id LIMIT 100') AS all_read;
SELECT topk_check('SELECT id, v FROM ci_n ORDER BY v DESC NULLS LAST, id LIMIT 100');
DROP FUNCTION entries_scanned(text);
DROP TABLE ci_n;

-- text columns: the index stores codes of its dictionary, which decide
-- =, <> and IN under a deterministic collation
CREATE TABLE ci_txt (id int, lang text, tag varchar(20), score float8);
INSERT INTO ci_txt
  SELECT i, (ARRAY['en', 'fr', 'de', 'ja', NULL])[1 + i % 5],
         CASE WHEN i % 11 = 0 THEN NULL ELSE 't' || (i % 23) END, i * 7919 % 10007
  FROM generate_series(1, 20000) i;
CREATE INDEX ci_txt_idx ON ci_txt USING gputopk (score, lang, tag);
ANALYZE ci_txt;
SELECT gputopk_index_check('ci_txt_idx');
EXPLAIN (COSTS OFF)
  SELECT id FROM ci_txt WHERE lang = 'fr' AND tag IN ('t1', 't2') ORDER BY score DESC LIMIT 5;
SELECT q, topk_check(q) FROM (VALUES
  ('SELECT id, score FROM ci_txt WHERE lang = ''fr'' ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id, score FROM ci_txt WHERE lang <> ''fr'' AND tag = ''t3'' ORDER BY score, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE lang IN (''de'', ''xx'', NULL) ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE lang NOT IN (''de'', ''xx'') ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE lang NOT IN (''de'', NULL) ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE lang = ''xx'' ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE lang IS NULL OR NOT tag = ''t1'' ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE tag = lang ORDER BY score DESC, id LIMIT 10'),
  ('SELECT id FROM ci_txt WHERE tag::text = ''t5'' ORDER BY score DESC, id LIMIT 10')) t(q);
-- run constants: a parameter's code is looked up when the run starts
PREPARE by_lang(text) AS SELECT id FROM ci_txt WHERE lang = $1 ORDER BY score DESC, id LIMIT 3;
SET plan_cache_mode = force_generic_plan;
EXECUTE by_lang('ja');
EXECUTE by_lang('eo');
-- values the dictionary meets after the build
INSERT INTO ci_txt VALUES (20001, 'eo', 'new', 10008);
UPDATE ci_txt SET lang = 'pt' WHERE id % 1000 = 0;
EXECUTE by_lang('eo');
EXECUTE by_lang('pt');
RESET plan_cache_mode;
DEALLOCATE by_lang;
SELECT topk_check('SELECT id FROM ci_txt WHERE lang = ''pt'' ORDER BY score DESC, id LIMIT 5');
SELECT gputopk_index_check('ci_txt_idx');
-- a value longer than 256 bytes fills the dictionary: clauses on text are
-- then checked on the rows only, until REINDEX makes a new dictionary
INSERT INTO ci_txt VALUES (20002, repeat('x', 300), 't1', 1);
SELECT gputopk_index_check('ci_txt_idx');
EXPLAIN (COSTS OFF) SELECT id FROM ci_txt WHERE lang = 'fr' AND score > 0 ORDER BY score DESC LIMIT 5;
SELECT topk_check('SELECT id, score FROM ci_txt WHERE lang = ''fr'' ORDER BY score DESC, id LIMIT 10');
DELETE FROM ci_txt WHERE id = 20002;
REINDEX INDEX ci_txt_idx;
EXPLAIN (COSTS OFF) SELECT id FROM ci_txt WHERE lang = 'fr' AND score > 0 ORDER BY score DESC LIMIT 5;
-- many values: a dictionary over many pages
CREATE TABLE ci_many AS SELECT i AS id, md5(i::text) AS h, i::float8 AS v FROM generate_series(1, 30000) i;
CREATE INDEX ci_many_idx ON ci_many USING gputopk (v, h);
ANALYZE ci_many;
SELECT gputopk_index_check('ci_many_idx');
SELECT topk_check('SELECT id FROM ci_many WHERE h IN (md5(''777''), md5(''29999''), ''x'') ORDER BY v DESC LIMIT 5');
DROP TABLE ci_txt, ci_many;

DROP INDEX tk_ci;
RESET gputopk.device;
RESET gputopk.min_table_rows;
