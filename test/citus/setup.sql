-- test/citus/setup.sql: the distributed tables of make test-citus, made on
-- the coordinator.  Values with NULLs, NaN, -0, infinities and many ties;
-- 32 shards of about 6,000 rows (the workers set gputopk.min_table_rows = 0).
SELECT setseed(0.20);
CREATE TABLE tweets (
    id bigint,
    author int,
    g int,
    f8 double precision,
    f4 real,
    i4 int,
    i8 bigint,
    d date,
    ts timestamp,
    tz timestamptz,
    lang text,
    likes int,
    retweets int
);
SELECT create_distributed_table('tweets', 'id');
INSERT INTO tweets
SELECT i,
       (random() * 1000)::int,
       i % 10,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 1000)::int / 4.0 END,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 100 - 50)::int END,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int END,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::bigint END,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2026-01-01' + (random() * 300)::int END,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2026-01-01' + random() * interval '300 days' END,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamptz '2026-01-01 UTC' + random() * interval '300 days' END,
       (ARRAY['en', 'ja', 'ko', 'es', 'pt', NULL])[1 + (random() * 5)::int],
       (random() * 5000)::int,
       (random() * 800)::int
FROM generate_series(1, 200000) i;
INSERT INTO tweets (id, author, g, f8, f4, i4, i8, d, ts, tz, lang, likes, retweets) VALUES
  (200001, 1, 1, 'NaN', 'NaN', 2147483647, 9223372036854775807,
   'infinity', 'infinity', 'infinity', 'en', 5000, 800),
  (200002, 2, 2, '-Infinity', '-Infinity', -2147483648, -9223372036854775808,
   '-infinity', '-infinity', '-infinity', 'ja', 0, 0),
  (200003, 3, 3, '-0', '-0', 0, 0, NULL, NULL, NULL, 'ko', 5000, 800),
  (200004, 4, 4, 'Infinity', 'Infinity', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL),
  (200005, 5, 5, 'NaN', '-0', NULL, NULL, NULL, NULL, NULL, 'en', NULL, 800);
ANALYZE tweets;
-- an empty table, and one with a single row
CREATE TABLE empty_t (id bigint, v double precision);
SELECT create_distributed_table('empty_t', 'id');
CREATE TABLE one_t (id bigint, v double precision);
SELECT create_distributed_table('one_t', 'id');
INSERT INTO one_t VALUES (1, 2.5);
