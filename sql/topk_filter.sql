--
-- GpuTopK's compiled filter: every clause form it compiles, over every
-- type it compiles, with NULLs, NaN, -0 and infinities, against plain
-- PostgreSQL (needs topk_check and tk from topk_scan)
--
SELECT setseed(0.17);
CREATE TABLE tk_f AS
SELECT *, CASE WHEN random() < 0.1 THEN NULL ELSE i4 % 2 = 0 END AS flag,
       CASE WHEN random() < 0.1 THEN NULL ELSE 'w' || (id % 10) END AS word,
       -- 8 and 9 bytes, empty, NULL, and compressed
       CASE id % 5 WHEN 0 THEN 'eightxxx' WHEN 1 THEN 'ninexxxxx' WHEN 2 THEN ''
                   WHEN 3 THEN repeat('z', 3000) END AS note
FROM tk;
ANALYZE tk_f;

-- which clauses are compiled, which are left to the interpreter
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE tz > now() - interval '1000 days' ORDER BY f8 DESC LIMIT 5;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE i4 % 3 <> 0 AND f4 BETWEEN -40 AND 40 AND word IS NOT NULL
  ORDER BY f8 DESC LIMIT 5;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE word = 'w3' OR i2 > 0 ORDER BY f8 DESC LIMIT 5;
\set ECHO none
\i sql/lib/explain_analyze.sql
\set ECHO all
SELECT pg_temp.explain_analyze($$SELECT id FROM tk_f WHERE g IN (1, 2) AND NOT flag ORDER BY f8 DESC LIMIT 5$$);
RESET gputopk.device;

-- each form over each type; the rows compared exactly (id breaks ties);
-- without sorts, GpuTopK is chosen for selective filters too
SET enable_sort = off;
CREATE TEMP TABLE checks (q text, result text);
DO $$
DECLARE
  c record;
  form text;
  q text;
BEGIN
  FOR c IN SELECT * FROM (VALUES
      ('i2', '0', '-500', '500', '100::int8'),
      ('i4', '0', '-1000000000', '1000000000', '7::int2'),
      ('i8', '0', '-4000000000000000000', '4000000000000000000', '-3::int4'),
      ('f4', '''-0''', '''-Infinity''', '''NaN''', '10.5::float8'),
      ('f8', '0', '-100000', '''NaN''', '''-0''::float4'),
      ('d', '''2010-01-01''', '''-infinity''', '''2020-01-01''', '''infinity'''),
      ('ts', '''2010-01-01''', '''2005-06-01''', '''infinity''', '''2015-01-01'''),
      ('tz', '''2010-01-01 UTC''', '''2005-06-01 12:00+02''', '''infinity''', 'now() - interval ''5000 days''')
    ) v(col, a, lo, hi, other) LOOP
    FOREACH form IN ARRAY ARRAY[
        '%1$s > %2$s', '%1$s >= %2$s', '%1$s < %2$s', '%1$s <= %2$s', '%1$s = %2$s',
        '%1$s <> %2$s', '%2$s < %1$s', '%1$s > %5$s', '%5$s >= %1$s', '%1$s <> %5$s',
        '%1$s BETWEEN %3$s AND %4$s', '%1$s NOT BETWEEN %3$s AND %4$s',
        '%1$s IN (%2$s, %3$s, %4$s)', '%1$s IN (%2$s, NULL)', '%1$s NOT IN (%3$s, %4$s)',
        '%1$s NOT IN (%2$s, NULL)', '%1$s = ANY (''{}'')', '%1$s <> ALL (''{}'')',
        '%1$s = ANY (NULL)', '%1$s IS NULL', '%1$s IS NOT NULL', 'NOT (%1$s > %2$s)',
        '(%1$s > %2$s) IS NOT TRUE', '(%1$s > %2$s) IS UNKNOWN', '(%1$s < %2$s) IS NOT FALSE',
        '%1$s > %2$s OR %1$s IS NULL', 'NOT (%1$s < %3$s OR %1$s > %4$s) AND g <> 3',
        '%1$s > %2$s AND word < ''w5''', '%1$s = %1$s', '%1$s < NULL'] LOOP
      q := format('SELECT %s, id FROM tk_f WHERE %s ORDER BY f8 DESC, id LIMIT 20', c.col,
                  format(form, c.col, c.a, c.lo, c.hi, c.other));
      INSERT INTO checks VALUES (q, topk_check(q));
    END LOOP;
  END LOOP;
END $$;
SELECT result, count(*) FROM checks GROUP BY result ORDER BY result;
SELECT q, result FROM checks WHERE result <> 'gputopk' LIMIT 10;
RESET enable_sort;

-- booleans, columns compared with columns, integers and floats across widths
SELECT topk_check('SELECT id FROM tk_f WHERE flag ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE NOT flag ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id, flag FROM tk_f WHERE flag IS NOT TRUE ORDER BY i8 DESC, id LIMIT 10');
SELECT topk_check('SELECT id, flag FROM tk_f WHERE flag IS UNKNOWN ORDER BY i8 DESC, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE flag = (i2 > 0) OR i4 > 0 ORDER BY ts, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE flag <> true ORDER BY ts, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE i2 < i4 AND i8 > i2 ORDER BY f4 DESC, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE f4 > f8 OR f4 = f8 ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE f8 = ''NaN'' OR f4 = ''-0'' OR i2 > 0 ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE d < ts::date AND tz > ''2001-01-01'' ORDER BY i4, id LIMIT 10');
-- text: = and <> and IN lists compile with constants of at most 8 bytes
-- (a value's key is then its bytes); longer constants and parameters are
-- left to the interpreter
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE word = 'w3' OR note IN ('eightxxx', '') ORDER BY f8 DESC LIMIT 5;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE word = 'w3' OR note = 'ninexxxxx' ORDER BY f8 DESC LIMIT 5;
RESET gputopk.device;
SET enable_sort = off;
SELECT topk_check('SELECT id FROM tk_f WHERE word = ''w3'' ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE word <> ''w3'' AND note <> '''' ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE note IN (''eightxxx'', NULL) ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE note NOT IN (''eightxxx'', '''') ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE note NOT IN (''eightxxx'', NULL) ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE note = ''ninexxxxx'' ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE note = repeat(''z'', 3000) ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE word::varchar(4) IN (''w1'', ''w2'') ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE word = ''w1'' COLLATE "C" OR word IS NULL ORDER BY i4, id LIMIT 10');
-- two text columns are compared by the interpreter: their long values would share a key
SET gputopk.min_table_rows = 1000;
CREATE TABLE tk_tt AS
SELECT g AS id, g::float8 AS score, CASE WHEN g < 50 THEN repeat('y', 3000) ELSE repeat('x', 3000) END AS a,
       repeat('y', 3000) AS b
FROM generate_series(1, 20000) g;
ANALYZE tk_tt;
SELECT topk_check('SELECT id FROM tk_tt WHERE a = b ORDER BY score DESC, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_tt WHERE a <> b ORDER BY score, id LIMIT 10');
DROP TABLE tk_tt;
RESET gputopk.min_table_rows;
RESET enable_sort;
-- casts of columns that cannot fail: wider integers, float4 to float8, integers to float8
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF)
  SELECT id FROM tk_f WHERE i2::int8 < i8 AND i4::float8 > f8 AND f4::float8 <> 0.5 ORDER BY i4 LIMIT 5;
RESET gputopk.device;
SELECT topk_check('SELECT id FROM tk_f WHERE i2::int8 < i8 OR i2::int4 = 0 ORDER BY f8, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE i4::float8 > f8 * 1000 ORDER BY f8, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE i8::float8 >= 9.007199254740992e15 ORDER BY f8, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE f4::float8 = ''NaN'' OR f4::float8 = ''-0'' OR i2::float8 IN (1, 2, 3) ORDER BY f8 DESC, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE i4 NOT IN (SELECT i4 FROM tk_f WHERE id < 100) ORDER BY i4, id LIMIT 10');
SELECT topk_check('SELECT id FROM tk_f WHERE i4 > (SELECT avg(i4) FROM tk_f) ORDER BY f8, id LIMIT 10');

-- parameters: new values on each execution of a generic plan, and a rescan per outer row
SET plan_cache_mode = force_generic_plan;
PREPARE filtered(float8, int4[]) AS
  SELECT id, f8 FROM tk_f WHERE f8 < $1 AND g = ANY ($2) ORDER BY f8 DESC, id LIMIT 3;
SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) EXECUTE filtered(0, '{1}');
RESET gputopk.device;
EXECUTE filtered(0, '{1}');
EXECUTE filtered(100, '{2, 3}');
EXECUTE filtered(NULL, '{2, 3}');
EXECUTE filtered(100, NULL);
DEALLOCATE filtered;
RESET plan_cache_mode;
SELECT s.x, t.id, t.i2
FROM (VALUES (-900::int2), (0::int2), (900::int2)) s(x),
     LATERAL (SELECT id, i2 FROM tk_f WHERE i2 > s.x ORDER BY i2, id LIMIT 2) t
ORDER BY s.x, t.i2;

DROP TABLE tk_f;
