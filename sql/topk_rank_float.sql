--
-- Ranking expressions over real and double precision columns, compiled into
-- key programs (scan_key_program.c): the values of PostgreSQL's own
-- functions, over NaN, infinities, -0, subnormals, values near the types'
-- limits, NULLs and ties; and PostgreSQL's errors (overflow, underflow,
-- division by zero) exactly for the rows that pass the WHERE clause and are
-- visible, on the table and over a column index, in one process and in
-- parallel.  Each query runs with gputopk off and on.
--
SET gputopk.min_table_rows = 1000;
CREATE TABLE rf AS
SELECT i AS id,
       CASE WHEN i % 50 = 0 THEN NULL ELSE (((i * 7919) % 20011 - 10005) / 100.0)::float4 END AS a,
       (((i * 104729) % 30011 - 15005) / 1000.0)::float4 AS b,
       (i::int8 * 2654435761 % 1000003)::float8 / 7 - 70000 AS c,
       (i % 1000)::int4 AS n,
       i::int8 * 1000003 AS big
FROM generate_series(1, 20000) i;
-- NaN, infinities, -0, subnormals, ties; rows 20008 and 20009 have values
-- near the limits (sums overflow), outside the range of the checks below
INSERT INTO rf VALUES
  (20001, 'NaN', 1, 'NaN', 1, 1),
  (20002, 'Infinity', '-Infinity', '-Infinity', 2, 2),
  (20003, '-0', '0', '-0', 0, 0),
  (20004, '1e-45', '1.4e-45', '5e-324', 3, 3),
  (20005, 1.5, 1.5, 1.5, 5, 5),
  (20006, 1.5, 1.5, 1.5, 5, 5),
  (20007, NULL, NULL, NULL, NULL, NULL),
  (20008, '3.4e38', '3.4e38', '1e308', 4, 9223372036854775807),
  (20009, '3.4e38', NULL, NULL, NULL, NULL);
VACUUM ANALYZE rf;

-- the query's rows, or its error, with gputopk on or off
CREATE FUNCTION rf_answer(q text, enabled boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  PERFORM set_config('gputopk.enabled', enabled::text, true);
  BEGIN
    EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', q) INTO result;
  EXCEPTION WHEN OTHERS THEN
    result := 'ERROR: ' || SQLERRM;
  END;
  PERFORM set_config('gputopk.enabled', 'on', true);
  RETURN result;
END $$;

-- the same answer (or error) both ways, and whether a key program ranked
CREATE FUNCTION rf_check(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  compiled boolean := false;
BEGIN
  IF rf_answer(q, false) IS DISTINCT FROM rf_answer(q, true) THEN
    RETURN 'MISMATCH: ' || q;
  END IF;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    compiled := compiled OR line LIKE '%Ranking Key: compiled%';
  END LOOP;
  RETURN CASE WHEN compiled THEN 'compiled' ELSE 'not compiled' END;
END $$;

-- plans (on the CPU backend, the same output on every machine)
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id FROM rf ORDER BY a + b DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM rf ORDER BY 0.25 * a + 0.75 * c DESC LIMIT 5;
-- a float4 sum may overflow: rows that raise must all be candidates
EXPLAIN (COSTS OFF) SELECT id FROM rf WHERE id < 20008 ORDER BY a + b DESC LIMIT 5;
-- not compiled: a function the programs do not have
EXPLAIN (COSTS OFF) SELECT id FROM rf ORDER BY sqrt(abs(a)) DESC LIMIT 5;
RESET gputopk.device;

-- every expression form, order and limit, without the row near the limits
-- (-0 and 0 tie but print differently: the value plus 0; id breaks ties)
CREATE TEMP TABLE rf_checks AS
SELECT q, rf_check(q) AS result
FROM (SELECT format('SELECT id, (%s) + 0 FROM rf WHERE id < 20008 ORDER BY %s%s, id %s',
                    expr, expr, ord, tail) AS q
      FROM unnest(ARRAY['a + b', 'a - b', 'a * b', 'a / 4', '-a', 'abs(b)', 'a + b + a',
                        'a::float8 + c', '0.25 * a + 0.75 * c', 'c * 0.5 + b * 2 - a',
                        'c / 3', 'n::float8 * c', 'n::float4 + a', 'c::float4', 'big::float8 / 3',
                        '(a + b) * (a - b)', 'a::float8 * b::float8', 'a / 4 * c']) expr,
           unnest(ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST']) ord,
           unnest(ARRAY['LIMIT 1', 'LIMIT 25', 'LIMIT 25 OFFSET 7',
                        'FETCH FIRST 3 ROWS WITH TIES']) tail) queries;
SELECT result, count(*) FROM rf_checks GROUP BY result ORDER BY result;

-- PostgreSQL's errors where a visible row that passes the WHERE clause
-- raises, and none where every such row is filtered out
SELECT rf_answer('SELECT id FROM rf ORDER BY a + a DESC, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf ORDER BY a + a DESC, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE id < 20008 ORDER BY a + a DESC, id LIMIT 3');
SELECT rf_answer('SELECT id FROM rf WHERE id > 20000 ORDER BY c / b, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf WHERE id > 20000 ORDER BY c / b, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE b <> 0 ORDER BY c / b, id LIMIT 3');
SELECT rf_answer('SELECT id FROM rf WHERE id = 20004 ORDER BY a * ''1e-40''::float4, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf WHERE id = 20004 ORDER BY a * ''1e-40''::float4, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE id <> 20004 ORDER BY a * ''1e-40''::float4, id LIMIT 3');
SELECT rf_answer('SELECT id FROM rf ORDER BY c::float4 DESC, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf ORDER BY c::float4 DESC, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE abs(a) < 3 ORDER BY a * ''1e38''::float4, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf ORDER BY a * ''1e38''::float4, id LIMIT 3');
-- an error in a row whose other operand is NULL is still PostgreSQL's error
SELECT rf_answer('SELECT id FROM rf WHERE id = 20009 ORDER BY c + (a + a), id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf WHERE id = 20009 ORDER BY c + (a + a), id LIMIT 3');
-- a difference can be far smaller than its operands: down to the unit of a
-- constant's last bit, or of a quotient's, and a product of it underflows
-- (n = 1, and n = 5: 5 / 3 and 5 * 0.333... differ in their last bit)
SELECT rf_answer('SELECT id FROM rf ORDER BY (n - 1.0000000000000002::float8) * 1e-310::float8, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf ORDER BY (n - 1.0000000000000002::float8) * 1e-310::float8, id LIMIT 3');
SELECT rf_answer('SELECT id FROM rf ORDER BY (n / 3::float8 - n * 0.3333333333333333::float8) * 1e-310::float8, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf ORDER BY (n / 3::float8 - n * 0.3333333333333333::float8) * 1e-310::float8, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE n < 5 ORDER BY (n / 3::float8 - n * 0.3333333333333333::float8) * 1e-310::float8, id LIMIT 3');

-- in parallel, and over a column index (a deleted row's entry stays until
-- VACUUM: it raises nothing)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT rf_check('SELECT id, (0.25 * a + 0.75 * c) + 0 FROM rf WHERE id < 20008 ORDER BY 0.25 * a + 0.75 * c DESC, id LIMIT 10');
SELECT rf_check('SELECT id FROM rf ORDER BY a + a DESC, id LIMIT 3');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
CREATE INDEX rf_ci ON rf USING gputopk (a, b, c, n);
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id FROM rf ORDER BY a + b DESC LIMIT 5;
RESET gputopk.device;
SELECT rf_check('SELECT id, (a + b) + 0 FROM rf WHERE id < 20008 ORDER BY a + b DESC, id LIMIT 10');
SELECT rf_check('SELECT id, (0.25 * a + 0.75 * c) + 0 FROM rf WHERE n < 500 AND id < 20008 ORDER BY 0.25 * a + 0.75 * c, id LIMIT 10');
SELECT rf_check('SELECT id FROM rf ORDER BY a + a DESC, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf ORDER BY (n / 3::float8 - n * 0.3333333333333333::float8) * 1e-310::float8, id LIMIT 3');
-- the same over the index built clustered: pages of rows that raise are
-- still read, wherever the order put them
DROP INDEX rf_ci;
CREATE INDEX rf_ci ON rf USING gputopk (a, b, c, n) WITH (layout = clustered);
SELECT rf_check('SELECT id, (a + b) + 0 FROM rf WHERE id < 20008 ORDER BY a + b DESC, id LIMIT 10');
SELECT rf_check('SELECT id, (0.25 * a + 0.75 * c) + 0 FROM rf WHERE n < 500 AND id < 20008 ORDER BY 0.25 * a + 0.75 * c, id LIMIT 10');
SELECT rf_check('SELECT id FROM rf ORDER BY a + a DESC, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf ORDER BY (n / 3::float8 - n * 0.3333333333333333::float8) * 1e-310::float8, id LIMIT 3');
-- two rows that raise different errors: the first in the table's order
-- raises, as in PostgreSQL's sequential scan (in one process, from the
-- first block: a table smaller than a quarter of shared_buffers), whatever
-- the order of the entries (the clustered one puts the smaller values first)
CREATE TABLE rf_two AS
SELECT i AS id, CASE i WHEN 3 THEN 1e200 WHEN 15000 THEN 1e-200 ELSE 1 + i % 1000 / 1000.0 END::float8 AS x
FROM generate_series(1, 20000) i;
CREATE INDEX rf_two_ci ON rf_two USING gputopk (x, id) WITH (layout = clustered);
VACUUM ANALYZE rf_two;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id FROM rf_two ORDER BY x * x DESC, id LIMIT 3;
RESET gputopk.device;
SELECT rf_answer('SELECT id FROM rf_two ORDER BY x * x DESC, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf_two ORDER BY x * x DESC, id LIMIT 3');
UPDATE rf_two SET x = CASE id WHEN 3 THEN 1e-200 ELSE 1e200 END WHERE id IN (3, 15000);
REINDEX INDEX rf_two_ci;
SELECT rf_answer('SELECT id FROM rf_two ORDER BY x * x DESC, id LIMIT 3', true);
SELECT rf_check('SELECT id FROM rf_two ORDER BY x * x DESC, id LIMIT 3');
DROP TABLE rf_two;
DELETE FROM rf WHERE id >= 20008;
SELECT rf_check('SELECT id, (a + a) + 0 FROM rf ORDER BY a + a DESC, id LIMIT 3');
SELECT rf_check('SELECT id FROM rf WHERE id > 20000 ORDER BY c / b, id LIMIT 3');


-- a page's rows keyed at once, their columns read in place where the
-- offset is known (fixed-width columns before them, a row without NULLs);
-- through heap_getattr in rows with NULLs, rows older than an added
-- column, and after a text column
CREATE TABLE rf_layout AS
SELECT i AS id, (i % 101)::float4 AS a,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i % 37)::float8 END AS b,
       repeat('x', i % 7) AS t, (i % 5)::float4 AS d
FROM generate_series(1, 5000) i;
ALTER TABLE rf_layout ADD COLUMN c float4 DEFAULT 2.5;
INSERT INTO rf_layout SELECT i, (i % 101)::float4, (i % 37)::float8, 'y', 1, (i % 11)::float4
FROM generate_series(5001, 6000) i;
ANALYZE rf_layout;
SELECT rf_check('SELECT id, (a * c + b) + 0 FROM rf_layout ORDER BY a * c + b DESC, id LIMIT 10');
SELECT rf_check('SELECT id, (a - c) + 0 FROM rf_layout ORDER BY a - c, id LIMIT 10');
SELECT rf_check('SELECT id, (0.5 * b + a) + 0 FROM rf_layout ORDER BY 0.5 * b + a DESC NULLS LAST, id LIMIT 10');
SELECT rf_check('SELECT id, (a + d) + 0 FROM rf_layout ORDER BY a + d DESC, id LIMIT 10');
-- run again for each outer row (its key program's memory outlives each run)
SELECT rf_check('SELECT g, (SELECT id FROM rf_layout WHERE a > g ORDER BY a * c + b DESC, id LIMIT 1) FROM generate_series(1, 4) g');
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF)
SELECT g, (SELECT id FROM rf_layout WHERE a > g ORDER BY a * c + b DESC, id LIMIT 1) FROM generate_series(1, 4) g;
RESET gputopk.device;
DROP TABLE rf_layout;

DROP TABLE rf;
DROP FUNCTION rf_check(text), rf_answer(text, boolean);
RESET gputopk.min_table_rows;
