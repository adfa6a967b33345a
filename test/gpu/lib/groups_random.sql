-- test/gpu/lib/groups_random.sql: what the GPU pgTAP files of the top groups
-- share, included with \set random_table NAME and \ir lib/groups_random.sql
-- after plan(): the seed, printed and set; the table NAME (50,003 rows: every
-- grouping type, text too, with NULLs, skewed groups, and values at the
-- limits of int2, int4 and int8, for sums past int8); and
-- random_groups_queries(tbl, groupings, n): n random top-groups queries over
-- it, grouped by one of groupings, ranked by a random aggregate the GPU
-- computes (others along) or by the first grouping column (not bool or text), in a
-- random direction, with LIMIT, OFFSET and WHERE.
SELECT (extract(epoch FROM clock_timestamp())::int8 % 1000000) / 1e6 AS seed \gset
SELECT diag('random groups queries over ' || :'random_table' || ', seed ' || :seed);
SELECT setseed(:seed);
CREATE TABLE :"random_table" AS
SELECT i AS id,
       CASE WHEN random() < 0.01 THEN NULL ELSE floor(400 * power(random(), 3))::int8 END AS g8,
       CASE WHEN random() < 0.01 THEN NULL ELSE (i % 97)::int4 END AS g4,
       CASE WHEN random() < 0.01 THEN NULL ELSE (floor(random() * 7) - 3)::int2 END AS g2,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() < 0.3 END AS gb,
       CASE WHEN random() < 0.02 THEN NULL ELSE date '2000-01-01' + i % 50 END AS gd,
       CASE WHEN random() < 0.02 THEN NULL
            ELSE timestamptz '2000-01-01 UTC' + i % 61 * interval '1 hour' END AS gtz,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2000-01-01' + random() * interval '10000 days' END AS ts,
       CASE WHEN random() < 0.03 THEN NULL ELSE 'v' || floor(40 * power(random(), 2)) END AS gt
  FROM generate_series(1, 50000) i;
INSERT INTO :"random_table" (id, g8, g4, g2, gb, gd, gtz, i2, i4, i8) VALUES
  (50001, 7, 7, 1, true, '2000-01-08', '2000-01-01 07:00 UTC', 32767, 2147483647, 9223372036854775807),
  (50002, 7, 7, 1, true, '2000-01-08', '2000-01-01 07:00 UTC', 32767, 2147483647, 9223372036854775807),
  (50003, 7, 7, 1, true, '2000-01-08', '2000-01-01 07:00 UTC', -32768, -2147483648, -9223372036854775808);
-- rewritten whole: from 16 on, a table loaded in bulk can hold new, empty
-- pages, which VACUUM leaves not all-visible (the index form would read
-- them on the CPU, and the planner prefers the pages)
VACUUM FULL :"random_table";

CREATE FUNCTION pg_temp.random_groups_queries(tbl text, groupings text[], n int) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT format('SELECT %s, %s AS r, count(i4), max(i8), sum(i8), avg(i2), min(ts) FROM %I%s GROUP BY %s ORDER BY r %s, %s LIMIT %s OFFSET %s',
                g, CASE WHEN by_column AND split_part(g, ', ', 1) NOT IN ('gb', 'gt') THEN split_part(g, ', ', 1)
                        ELSE agg END,
                tbl, filter, g, ord, g, k, m)
    FROM (SELECT groupings[1 + floor(random() * cardinality(groupings))::int] AS g,
                 (ARRAY['count(*)', 'count(i2)', 'sum(i2)', 'sum(i4)', 'min(i4)', 'max(i8)',
                        'min(i8)', 'max(i2)', 'min(ts)', 'max(gd)'])[1 + floor(random() * 10)::int] AS agg,
                 (ARRAY['DESC', 'ASC', 'DESC NULLS LAST', 'ASC NULLS FIRST'])[1 + floor(random() * 4)::int] AS ord,
                 (ARRAY['', ' WHERE i2 > 0', ' WHERE i4 < 0 OR ts IS NULL', ' WHERE i8 IS NOT NULL AND g4 <> 3'])[1 + floor(random() * 4)::int] AS filter,
                 1 + floor(random() * 30)::int AS k,
                 floor(random() * 5)::int AS m,
                 random() < 0.4 AS by_column
            FROM generate_series(1, n)) p
$$;
