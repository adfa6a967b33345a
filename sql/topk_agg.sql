--
-- Top-k aggregates: gpu_topk and gpu_bottomk against PostgreSQL's own
-- answer, (array_agg(v ORDER BY v DESC) FILTER (WHERE v IS NOT NULL))[1:k],
-- compared with the type's equality (so -0 = 0 and NaN = NaN), and
-- gpu_topk_by and gpu_bottomk_by against
-- (array_agg(r ORDER BY v DESC, r) FILTER (WHERE v IS NOT NULL))[1:k]
--
SELECT setseed(0.23);
CREATE TABLE ta AS
SELECT i AS id,
       -- skewed groups: group n has about 1/n^2 of the rows
       floor(1 / sqrt(random()))::int AS g,
       i % 1000 AS g1000,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 200 - 100)::int2 END AS i2,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END AS i4,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 9e18 - 4.5e18)::int8 END AS i8,
       CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 10 - 5)::int::float4 END AS f4,
       CASE WHEN random() < 0.05 THEN NULL ELSE random() * 1e6 - 5e5 END AS f8,
       CASE WHEN random() < 0.05 THEN NULL ELSE date '2000-01-01' + (random() * 100)::int END AS d,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamp '2000-01-01' + random() * interval '10000 days' END AS ts,
       CASE WHEN random() < 0.05 THEN NULL
            ELSE timestamptz '2000-01-01 UTC' + random() * interval '10000 days' END AS tz
FROM generate_series(1, 100000) i;
INSERT INTO ta (id, g, g1000, i2, i4, i8, f4, f8, d, ts, tz) VALUES
  (100001, 1, 1, 32767, 2147483647, 9223372036854775807, 'NaN', 'NaN', 'infinity', 'infinity', 'infinity'),
  (100002, 1, 1, -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity', '-infinity', '-infinity', '-infinity'),
  (100003, 1, 1, 0, 0, 0, '-0', '-0', NULL, NULL, NULL),
  (100004, 1, 1, 0, 0, 0, 'Infinity', 'NaN', NULL, NULL, NULL),
  -- a group of NULLs only, and a group of one row
  (100005, -1, -1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (100006, -2, -2, 5, 5, 5, 5, 5, '2000-01-05', '2000-01-05', '2000-01-05 UTC');
ANALYZE ta;

-- every type and k, one group, per skewed group and per 1,000 groups
CREATE TEMP TABLE agg_checks (q text, same boolean);
DO $$
DECLARE
  col text;
  k int;
  grp text;
  q text;
  mismatches int;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz'] LOOP
    FOREACH k IN ARRAY ARRAY[1, 3, 100, 200000] LOOP
      FOREACH grp IN ARRAY ARRAY['()', 'g', 'g1000'] LOOP
        q := format($q$
          SELECT count(*) FILTER (WHERE top IS DISTINCT FROM ref_top OR bottom IS DISTINCT FROM ref_bottom)
          FROM (SELECT gpu_topk(%1$s, %2$s) AS top, gpu_bottomk(%1$s, %2$s) AS bottom,
                       (array_agg(%1$s ORDER BY %1$s DESC) FILTER (WHERE %1$s IS NOT NULL))[1:%2$s] AS ref_top,
                       (array_agg(%1$s ORDER BY %1$s) FILTER (WHERE %1$s IS NOT NULL))[1:%2$s] AS ref_bottom
                FROM ta GROUP BY %3$s) s$q$, col, k, grp);
        EXECUTE q INTO mismatches;
        INSERT INTO agg_checks VALUES (format('%s, k = %s, GROUP BY %s', col, k, grp), mismatches = 0);
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT same, count(*) FROM agg_checks GROUP BY same;
SELECT q FROM agg_checks WHERE NOT same;

-- the _by forms: the results of the top rows, ties ordered by the result
-- (f4 and d have many ties; s has NULLs and a collation)
TRUNCATE agg_checks;
DO $$
DECLARE
  col text;
  k int;
  grp text;
  res text;
  mismatches int;
BEGIN
  FOREACH col IN ARRAY ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'd', 'ts', 'tz'] LOOP
    FOREACH res IN ARRAY ARRAY['id', 's'] LOOP
      FOREACH k IN ARRAY ARRAY[1, 7, 1000] LOOP
        FOREACH grp IN ARRAY ARRAY['()', 'g'] LOOP
          EXECUTE format($q$
            SELECT count(*) FILTER (WHERE top IS DISTINCT FROM ref_top OR bottom IS DISTINCT FROM ref_bottom)
            FROM (SELECT gpu_topk_by(%4$s, %1$s, %2$s) AS top, gpu_bottomk_by(%4$s, %1$s, %2$s) AS bottom,
                         (array_agg(%4$s ORDER BY %1$s DESC, %4$s) FILTER (WHERE %1$s IS NOT NULL))[1:%2$s] AS ref_top,
                         (array_agg(%4$s ORDER BY %1$s, %4$s) FILTER (WHERE %1$s IS NOT NULL))[1:%2$s] AS ref_bottom
                  FROM (SELECT *, CASE WHEN id %% 10 = 0 THEN NULL ELSE 'r' || (id %% 997) END AS s FROM ta) t
                  GROUP BY %3$s) s$q$, col, k, grp, res) INTO mismatches;
          INSERT INTO agg_checks VALUES (format('%s by %s, k = %s, GROUP BY %s', res, col, k, grp), mismatches = 0);
        END LOOP;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
SELECT same, count(*) FROM agg_checks GROUP BY same;
SELECT q FROM agg_checks WHERE NOT same;
SELECT gpu_topk_by(name, v, 3), gpu_bottomk_by(name, v, 3)
FROM (VALUES ('a', 1.5::float8), ('b', 'NaN'), ('c', '-0'), (NULL, 0), ('e', NULL), ('f', 2), ('g', 0)) s(name, v);
SELECT gpu_topk_by(x, v, 2) FROM (VALUES ('{"a": 1}'::json, 1)) s(x, v);

-- a million groups of two rows
SELECT count(*) FILTER (WHERE top IS DISTINCT FROM ref) AS mismatches, count(*) AS groups
FROM (SELECT gpu_topk((i::int8 * 7919 % 100003), 1) AS top,
             (array_agg((i::int8 * 7919 % 100003) ORDER BY (i::int8 * 7919 % 100003) DESC))[1:1] AS ref
      FROM generate_series(1, 2000000) i GROUP BY i % 1000000) s;

-- NULLs skipped; NaN above all numbers; no rows or only NULLs give NULL
SELECT gpu_topk(v, 3), gpu_bottomk(v, 3)
FROM (VALUES (1.5::float8), ('NaN'), ('-0'), (0), (NULL), ('-Infinity'), (2)) s(v);
SELECT gpu_topk(v, 2), gpu_bottomk(v, 2) FROM (VALUES (NULL::int4), (NULL)) s(v);
SELECT gpu_topk(v, 2) FROM (SELECT 1 AS v WHERE false) s;
SELECT g, gpu_topk(i4, 2) FROM ta WHERE g < 0 GROUP BY g ORDER BY g;
-- -0 and 0 tie; which one is kept depends on the values only, not on the row order
SELECT gpu_topk(v, 1)::text, gpu_bottomk(v, 1)::text
FROM (VALUES ('-0'::float8), (0)) s(v);
SELECT gpu_topk(v, 1)::text, gpu_bottomk(v, 1)::text
FROM (VALUES (0::float8), ('-0')) s(v);

-- bad k
SELECT gpu_topk(i4, 0) FROM ta;
SELECT gpu_topk(i4, -1) FROM ta;
SELECT gpu_topk(i4, NULL) FROM ta;
SELECT gpu_topk(i4, 100000000) FROM ta;
SELECT gpu_topk(i4, (id % 2)::int + 1) FROM ta;
SELECT gpu_topk(v, 2) FROM (VALUES ('a'::text)) s(v);

-- parallel aggregation: partial states are serialized and combined (by
-- PostgreSQL's Agg: GpuTopKAgg, tested in topk_agg_scan, would take these)
SET gputopk.enabled = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT g1000, gpu_topk(f8, 5) FROM ta GROUP BY g1000;
SELECT count(*) FILTER (WHERE gpu_topk IS NOT DISTINCT FROM ref) AS same, count(*)
FROM (SELECT g1000, gpu_topk(f8, 5),
             (array_agg(f8 ORDER BY f8 DESC) FILTER (WHERE f8 IS NOT NULL))[1:5] AS ref
      FROM ta GROUP BY g1000) s;
EXPLAIN (COSTS OFF) SELECT gpu_bottomk(tz, 10) FROM ta;
SELECT gpu_bottomk(tz, 10) = (SELECT array_agg(tz ORDER BY tz) FROM
                              (SELECT tz FROM ta WHERE tz IS NOT NULL ORDER BY tz LIMIT 10) s)
FROM ta;
SELECT count(*) FILTER (WHERE top IS NOT DISTINCT FROM ref) AS same, count(*)
FROM (SELECT g1000, gpu_topk_by('r' || id, i2, 3) AS top,
             (array_agg('r' || id ORDER BY i2 DESC, 'r' || id) FILTER (WHERE i2 IS NOT NULL))[1:3] AS ref
      FROM ta GROUP BY g1000) s;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET gputopk.enabled;

-- gpu_topk's and gpu_bottomk's transition type is bytea: a state leaves its
-- process flat (Citus's workers send it as text) and is read back, every
-- field checked.  Here states of parts of the table are flattened by
-- aggregates without a final function, merged with the combine function and
-- finished: the same answers as in one piece.
SET gputopk.enabled = off;
CREATE AGGREGATE pg_temp.topk_state(float8, integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea);
CREATE AGGREGATE pg_temp.topk_state(real, integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea);
CREATE AGGREGATE pg_temp.bottomk_state(timestamptz, integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea);
CREATE AGGREGATE pg_temp.merge_states(bytea) (
    SFUNC = gputopk_topk_combine, STYPE = bytea);
CREATE TEMP TABLE parts AS SELECT id % 3 AS part, f8, f4, tz FROM ta;
SELECT gputopk_topk_final(pg_temp.merge_states(state), NULL::float8, 7) =
       (SELECT gpu_topk(f8, 7) FROM parts) AS f8_same,
       gputopk_topk_final(pg_temp.merge_states(state), NULL::float8, 7)
FROM (SELECT pg_temp.topk_state(f8, 7) AS state FROM parts GROUP BY part) p;
SELECT gputopk_topk_final(pg_temp.merge_states(state), NULL::float4, 5) =
       (SELECT gpu_topk(f4, 5) FROM parts) AS f4_same
FROM (SELECT pg_temp.topk_state(f4, 5) AS state FROM parts GROUP BY part) p;
SELECT gputopk_topk_final(pg_temp.merge_states(state), NULL::timestamptz, 20) =
       (SELECT gpu_bottomk(tz, 20) FROM parts) AS tz_same
FROM (SELECT pg_temp.bottomk_state(tz, 20) AS state FROM parts GROUP BY part) p;
-- what is not a state is refused, as are states of different aggregates
SELECT gputopk_topk_final('\x'::bytea, NULL::float8, 3);
SELECT gputopk_topk_final('\x09'::bytea, NULL::float8, 3);
SELECT gputopk_topk_final(substr(pg_temp.topk_state(f8, 3), 1, 30), NULL::float8, 3) FROM parts;
SELECT gputopk_topk_final(pg_temp.topk_state(f8, 3) || '\x00'::bytea, NULL::float8, 3) FROM parts;
SELECT gputopk_topk_final(overlay(pg_temp.topk_state(f8, 3) placing '\x00000000'::bytea from 2),
                          NULL::float8, 3) FROM parts;
SELECT gputopk_topk_final(overlay(pg_temp.topk_state(f8, 3) placing '\x00000005'::bytea from 17),
                          NULL::float8, 3) FROM parts;
SELECT gputopk_topk_final(overlay(pg_temp.topk_state(f8, 3) placing '\x02'::bytea from 14),
                          NULL::float8, 3) FROM parts;
SELECT pg_temp.merge_states(state) FROM
  (SELECT pg_temp.topk_state(f8, 3) AS state FROM parts
   UNION ALL SELECT pg_temp.topk_state(f4, 3) FROM parts) p;
SELECT pg_temp.merge_states(state) FROM
  (SELECT pg_temp.topk_state(f8, 3) AS state FROM parts
   UNION ALL SELECT pg_temp.topk_state(f8, 4) FROM parts) p;
SELECT gputopk_topk_combine(NULL, NULL);
DROP TABLE parts;
-- the _by forms' states cross processes in the same form: results as
-- their bytes (text, long text), in their type's binary form (numeric,
-- int4range) and NULL
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
CREATE TABLE by_results AS
SELECT id % 10 AS g10, f8, i4,
       CASE WHEN id % 7 = 0 THEN NULL WHEN id % 11 = 0 THEN repeat('é', 3000 + id % 5)
            ELSE 'r' || id END AS s,
       (i4 / 7.0)::numeric(20, 6) AS n,
       int4range(i4 / 2, i4 / 2 + id % 3 + 1) AS r
FROM ta;
ANALYZE by_results;
EXPLAIN (COSTS OFF) SELECT g10, gpu_topk_by(s, f8, 20) FROM by_results GROUP BY g10;
SELECT count(*) FILTER (WHERE top IS NOT DISTINCT FROM ref) AS same, count(*)
FROM (SELECT g10, gpu_topk_by(s, f8, 20) AS top,
             (array_agg(s ORDER BY f8 DESC, s) FILTER (WHERE f8 IS NOT NULL))[1:20] AS ref
      FROM by_results GROUP BY g10) q;
SELECT count(*) FILTER (WHERE top IS NOT DISTINCT FROM ref) AS same, count(*)
FROM (SELECT g10, gpu_bottomk_by(n, f8, 20) AS top,
             (array_agg(n ORDER BY f8, n) FILTER (WHERE f8 IS NOT NULL))[1:20] AS ref
      FROM by_results GROUP BY g10) q;
SELECT count(*) FILTER (WHERE top IS NOT DISTINCT FROM ref) AS same, count(*)
FROM (SELECT g10, gpu_topk_by(r, i4, 20) AS top,
             (array_agg(r ORDER BY i4 DESC, r) FILTER (WHERE i4 IS NOT NULL))[1:20] AS ref
      FROM by_results GROUP BY g10) q;
DROP TABLE by_results;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET gputopk.enabled;

-- as a window aggregate over a frame
SELECT v, gpu_topk(v, 2) OVER w, gpu_bottomk(v, 2) OVER w
FROM generate_series(1, 6) v
WINDOW w AS (ORDER BY v ROWS BETWEEN 2 PRECEDING AND CURRENT ROW);

DROP TABLE ta;
