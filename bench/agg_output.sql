--
-- bench/agg_output.sql: how much of a per-group top-k with a large answer
-- is sending that answer to the client.
--
-- 10M rows in 100,000 groups of 100, k = 100: the answer is 10M float8
-- values in 100,000 arrays.  Times, with psql's rows to /dev/null: the
-- query; the same query with its arrays counted in the server (nothing
-- sent); sending the same rows from a table; and the array_agg idiom both
-- ways.  PostgreSQL's default parallel settings.  Run with psql on a
-- database where gputopk is installed (a throwaway one: it makes tables
-- agg_output and agg_answer):
--   psql -X -f bench/agg_output.sql
--
\timing off
DROP TABLE IF EXISTS agg_output, agg_answer;
CREATE UNLOGGED TABLE agg_output (id int8, v float8, g int4);
INSERT INTO agg_output SELECT id, random(), id % 100000 FROM generate_series(1, 10000000) id;
VACUUM ANALYZE agg_output;
SET work_mem = '1GB';
\pset format unaligned
EXPLAIN (COSTS OFF) SELECT g, gpu_topk(v, 100) FROM agg_output GROUP BY g;
CREATE UNLOGGED TABLE agg_answer AS SELECT g, gpu_topk(v, 100) AS t FROM agg_output GROUP BY g;
SELECT count(*) FROM agg_answer;
\timing on
\echo == gpu_topk, sent to the client
SELECT g, gpu_topk(v, 100) FROM agg_output GROUP BY g \g /dev/null
SELECT g, gpu_topk(v, 100) FROM agg_output GROUP BY g \g /dev/null
\echo == gpu_topk, counted in the server
SELECT count(t) FROM (SELECT g, gpu_topk(v, 100) AS t FROM agg_output GROUP BY g) s;
SELECT count(t) FROM (SELECT g, gpu_topk(v, 100) AS t FROM agg_output GROUP BY g) s;
\echo == the same answer sent from a table
SELECT * FROM agg_answer \g /dev/null
SELECT * FROM agg_answer \g /dev/null
\echo == the array_agg idiom, sent to the client, then counted in the server
SELECT g, (array_agg(v ORDER BY v DESC))[1:100] FROM agg_output GROUP BY g \g /dev/null
SELECT count(t) FROM (SELECT g, (array_agg(v ORDER BY v DESC))[1:100] AS t FROM agg_output GROUP BY g) s;
\timing off
DROP TABLE agg_output, agg_answer;
