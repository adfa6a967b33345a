--
-- Random top-k queries over tk and a partitioned copy, each run with
-- gputopk off and on and compared (needs topk_check and tk from
-- topk_scan).  Both tables have a column index on every key column (the
-- copy's built with layout = clustered), which
-- GpuTopK reads where its cost wins, except under the 'no index' setting
-- and under gputopk.device = gpu where the GPU cannot read the index.
-- gputopk_test.seed and gputopk_test.queries give the seed
-- and the number of queries; test/run sets them, prints the seed and
-- reports the counts from random_checks, which stays behind for that.
--
-- The answers are compared row by row: either the ORDER BY ends with the
-- unique id, or the query returns only its ORDER BY items (floats plus 0,
-- since -0 and 0 tie), so that every correct plan returns the same rows in
-- the same order.  A query that raises an error (a float ranking expression
-- that overflows or divides by zero on a row) must raise the same one.
--
SELECT setseed((coalesce(current_setting('gputopk_test.seed', true), '1')::int8 % 1000000)
               / 1000000.0);

-- tk, and a copy partitioned by g
SET gputopk.min_table_rows = 1000;
CREATE TABLE tk_rp (LIKE tk) PARTITION BY RANGE (g);
CREATE TABLE tk_rp0 PARTITION OF tk_rp FOR VALUES FROM (MINVALUE) TO (3);
CREATE TABLE tk_rp1 PARTITION OF tk_rp FOR VALUES FROM (3) TO (6);
CREATE TABLE tk_rp2 PARTITION OF tk_rp DEFAULT;
INSERT INTO tk_rp SELECT * FROM tk;
ANALYZE tk_rp;
CREATE INDEX tk_random_ci ON tk USING gputopk (i2, i4, i8, f4, f8, d, ts, tz, g);
-- the partitioned copy's index built clustered, its entries in the order of their values
CREATE INDEX tk_rp_ci ON tk_rp USING gputopk (i2, i4, i8, f4, f8, d, ts, tz, g)
  WITH (layout = clustered);
-- all-visible pages, which the GPU reads in place (gputopk.gpu_pages)
VACUUM (FREEZE) tk, tk_rp;

CREATE FUNCTION pick(VARIADIC choices text[]) RETURNS text LANGUAGE sql AS
$$ SELECT choices[1 + floor(random() * array_length(choices, 1))::int] $$;

-- a value for comparing with a column: from its range, or an edge
CREATE FUNCTION random_value(col text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN CASE col
    WHEN 'i2' THEN pick((random() * 2000 - 1000)::int::text, '0', '32767', '-32768')
    WHEN 'i4' THEN pick((random() * 4e9 - 2e9)::int8::text, '0', '-2147483648')
    WHEN 'i8' THEN pick((random() * 9e18 - 4.5e18)::numeric(20, 0)::text, '0')
    WHEN 'f4' THEN pick(round((random() * 100 - 50)::numeric, 2)::text, '''-0''', '''NaN''',
                        '''-Infinity''')
    WHEN 'f8' THEN pick(round((random() * 1e6 - 5e5)::numeric, 3)::text, '0', '''NaN''',
                        '''Infinity''', '1e300')
    WHEN 'd' THEN pick(quote_literal(date '2000-01-01' + (random() * 10000)::int), '''infinity''')
    WHEN 'ts' THEN quote_literal(timestamp '2000-01-01' + random() * interval '10000 days')
    WHEN 'tz' THEN pick(quote_literal(timestamptz '2000-01-01 UTC' + random() * interval '10000 days'),
                        format('now() - interval %L', (random() * 10000)::int || ' days'))
    ELSE (random() * 8)::int::text
  END;
END $$;

-- a WHERE clause: compiled forms (text with short constants against empty and
-- compressed values), forms left to the interpreter, and their combinations
CREATE FUNCTION random_clause(depth int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  col text := pick('i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz', 'g');
  r float8 := random();
BEGIN
  IF depth > 0 AND r < 0.15 THEN
    RETURN '(' || random_clause(depth - 1) || pick(' AND ', ' OR ') || random_clause(depth - 1) || ')';
  ELSIF depth > 0 AND r < 0.2 THEN
    RETURN 'NOT (' || random_clause(depth - 1) || ')';
  END IF;
  RETURN CASE pick('cmp', 'cmp', 'between', 'in', 'notin', 'null', 'columns', 'test', 'text', 'other')
    WHEN 'cmp' THEN col || pick(' < ', ' <= ', ' = ', ' <> ', ' >= ', ' > ') || random_value(col)
    WHEN 'between' THEN format('%s BETWEEN %s AND %s', col, random_value(col), random_value(col))
    WHEN 'in' THEN format('%s IN (%s, %s%s)', col, random_value(col), random_value(col),
                          pick('', ', NULL'))
    WHEN 'notin' THEN format('%s NOT IN (%s%s)', col, random_value(col), pick('', ', NULL'))
    WHEN 'null' THEN col || pick(' IS NULL', ' IS NOT NULL')
    WHEN 'columns' THEN pick('i2 < i4', 'i8 >= i4', 'f4 <> f8', 'f4 > f8', 'g = i2', 'ts > d::timestamp',
                             'i2::int8 < i8', 'i4::float8 > f8', 'f4::float8 <= f8 / 3', 'i8::float8 < f8')
    WHEN 'test' THEN format('(%s < %s) IS %s', col, random_value(col),
                            pick('TRUE', 'NOT TRUE', 'FALSE', 'NOT FALSE', 'UNKNOWN', 'NOT UNKNOWN'))
    WHEN 'text' THEN pick('wide = ''''', 'wide <> ''''', 'wide IN (''x'', '''')', 'wide NOT IN (''xx'', NULL)',
                          'wide = ''xxxxxxxx''', 'wide <> ''xxxxxxxxx''', 'wide IN (''xxxxxxxx'', NULL)')
    ELSE pick('i4 % 3 = 1', 'length(wide) > 1000', 'wide ~ ''^x''', 'i2::int4 * 2 > 100',
              'tz::date > d')
  END;
END $$;

CREATE FUNCTION random_query() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  items text[] := ARRAY[pick('i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz', 'g',
                             'i4::int8 + i2', 'f8 * 2', 'i2 + 0.5 * g', 'g * 1.25 - i2',
                             'abs(f4)', 'i8 / 2', 'd - 1', 'ts + interval ''1 hour''',
                             'f4::float8 / 3', 'i4 * 0.001', 'f4 * f4', 'f8 + f4', 'f8 / f4',
                             '-f8 * 0.5 + f4', 'i8::float8 / 7', 'f4 * ''1e37''::float4')];
  dirs text[] := ARRAY[pick('', ' DESC') || pick('', '', ' NULLS FIRST', ' NULLS LAST')];
  total boolean := random() < 0.5;
  target text;
  q text;
BEGIN
  FOR i IN 1 .. pick('0', '0', '1', '2')::int LOOP
    items := items || pick('g', 'i2', 'f4', 'd', 'tz');
    dirs := dirs || (pick('', ' DESC') || pick('', ' NULLS FIRST'));
  END LOOP;
  IF total THEN
    target := pick('*', 'id', 'id, ' || items[1], items[1] || ', length(wide), id');
    items := items || 'id'::text;
    dirs := dirs || ''::text;
  ELSE
    -- -0 and 0 tie but print differently: float items are returned plus 0
    SELECT string_agg(CASE WHEN item IN ('f4', 'f8', 'f8 * 2', 'abs(f4)', 'f4::float8 / 3', 'f4 * f4',
                                         'f8 + f4', 'f8 / f4', '-f8 * 0.5 + f4', 'i8::float8 / 7',
                                         'f4 * ''1e37''::float4')
                           THEN '(' || item || ') + 0' ELSE item END, ', ')
      INTO target FROM unnest(items) item;
  END IF;
  q := 'SELECT ' || target || ' FROM ' || pick('tk', 'tk', 'tk_rp');
  FOR i IN 1 .. pick('0', '1', '1', '2', '3')::int LOOP
    q := q || CASE WHEN i = 1 THEN ' WHERE ' ELSE ' AND ' END || random_clause(2);
  END LOOP;
  q := q || ' ORDER BY ' ||
    (SELECT string_agg(items[j] || dirs[j], ', ' ORDER BY j) FROM generate_subscripts(items, 1) j);
  RETURN q || ' ' || format(pick('LIMIT %s', 'LIMIT %s OFFSET %s', 'FETCH FIRST %s ROWS WITH TIES'),
                            pick('0', '1', '3', '10', '50', '500', '25000'), pick('3', '50'));
END $$;

CREATE TABLE random_checks (n int, q text, settings text, result text);
DO $$
DECLARE
  settings text;
  q text;
BEGIN
  FOR n IN 1 .. coalesce(current_setting('gputopk_test.queries', true)::int, 300) LOOP
    q := random_query();
    -- forced parallel plans, no sorts (GpuTopK even for selective filters),
    -- and the table's rows read even where the column index holds the key
    settings := pick('', '', 'parallel', 'no sort', 'no index');
    PERFORM set_config('parallel_setup_cost', CASE settings WHEN 'parallel' THEN '0' ELSE '1000' END, false);
    PERFORM set_config('parallel_tuple_cost', CASE settings WHEN 'parallel' THEN '0' ELSE '0.1' END, false);
    PERFORM set_config('min_parallel_table_scan_size', CASE settings WHEN 'parallel' THEN '0' ELSE '8MB' END, false);
    PERFORM set_config('enable_sort', CASE settings WHEN 'no sort' THEN 'off' ELSE 'on' END, false);
    PERFORM set_config('gputopk.enable_column_index', CASE settings WHEN 'no index' THEN 'off' ELSE 'on' END, false);
    BEGIN
      INSERT INTO random_checks VALUES (n, q, settings, topk_check(q));
    EXCEPTION WHEN OTHERS THEN
      INSERT INTO random_checks VALUES (n, q, settings, 'ERROR: ' || SQLERRM);
    END;
  END LOOP;
END $$;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET enable_sort;
RESET gputopk.enable_column_index;

SELECT count(*) = coalesce(current_setting('gputopk_test.queries', true)::int, 300) AS all_ran,
       count(*) FILTER (WHERE result LIKE 'gputopk%') > count(*) / 2 AS mostly_gputopk,
       count(*) FILTER (WHERE result = 'gputopk index') > 0 OR
         current_setting('gputopk.device') = 'gpu' AS index_used_unless_gpu_demanded
FROM random_checks;
SELECT n, q, settings, result FROM random_checks
WHERE result NOT IN ('gputopk', 'gputopk index', 'native') LIMIT 20;

DROP FUNCTION random_query(), random_clause(int), random_value(text), pick(text[]);
DROP FUNCTION topk_check(text);
DROP TABLE tk, tk_small, tk_empty, tk_nulls, tk_expr, tk_rp;
