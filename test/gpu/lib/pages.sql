-- test/gpu/lib/pages.sql: what the pgTAP files of the GPU reading pages
-- share, included with \set pages_table NAME and \ir lib/pages.sql: their
-- table NAME (300,000 rows with NULLs, NaN, -0, ties, text of every storage,
-- a column added after the rows; frozen, so every page is all-visible), the
-- helpers of compare.sql, and same_on_gpu(q, not_all_visible).
CREATE TABLE :"pages_table" AS
SELECT i::int8 AS id,
       repeat('p', i % 37) AS pad,
       CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'NaN'::float4
            WHEN i % 83 = 0 THEN '-0'::float4 ELSE (random() * 1000)::float4 END AS score,
       CASE WHEN i % 101 = 0 THEN NULL ELSE (random() * 2e6 - 1e6)::int4 END AS a,
       (random() * 1000)::int4 AS b,
       (random() * 200)::int2 AS s,
       now() - random() * interval '365 days' AS ts,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i % 3 = 0 END AS flag,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (random() * 1e9)::float8 END AS v,
       date '2020-01-01' + (i % 1000) AS d,
       -- short, 8 and 9 bytes, empty, NULL, compressed, and long enough to be stored out of line
       CASE i % 11 WHEN 0 THEN 'en' WHEN 1 THEN 'ja' WHEN 2 THEN NULL WHEN 3 THEN 'englishx'
            WHEN 4 THEN 'englishxy' WHEN 5 THEN repeat('en', 2000) WHEN 6 THEN ''
            WHEN 7 THEN CASE WHEN i % 100 = 7
                             THEN (SELECT string_agg(md5((i * j)::text), '') FROM generate_series(1, 150) j)
                             ELSE 'pt' END
            ELSE 'es' END AS lang,
       (ARRAY['a', 'bb', 'eight888', NULL])[i % 4 + 1]::varchar(12) AS tag
  FROM generate_series(1, 300000) i;
-- a column added after the rows: NULL in them, read past the tuples' ends
ALTER TABLE :"pages_table" ADD COLUMN late int4;
UPDATE :"pages_table" SET late = (id % 50)::int4 WHERE id % 2 = 0;
VACUUM (FREEZE, ANALYZE) :"pages_table";

\ir compare.sql

-- whether the GPU read every page of the query's table (some not
-- all-visible, their tuples' visibility decided on the CPU, if
-- not_all_visible) and the answer is the one without gputopk
CREATE FUNCTION pg_temp.same_on_gpu(q text, not_all_visible boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  gpu text := pg_temp.explained(q, 'Pages Read on GPU');
  cpu text := pg_temp.explained(q, 'Pages Read on CPU');
  checked text := pg_temp.explained(q, 'Pages Not All-Visible on GPU');
BEGIN
  IF coalesce(gpu, '0') = '0' THEN
    RETURN 'no page read on the GPU: ' || coalesce(pg_temp.explained(q, 'Custom Plan Provider'),
                                                   'no custom scan');
  END IF;
  IF cpu <> '0' THEN
    RETURN cpu || ' pages read on the CPU';
  END IF;
  IF not_all_visible AND coalesce(checked, '0') = '0' THEN
    RETURN 'no page that is not all-visible read on the GPU';
  END IF;
  IF pg_temp.answer(q, true) IS DISTINCT FROM pg_temp.answer(q, false) THEN
    RETURN 'different answers';
  END IF;
  RETURN 'same';
END $$;
