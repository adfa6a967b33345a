--
-- ALTER EXTENSION gputopk UPDATE, from 0.1 to the current version, with
-- objects that depend on the extension: a column index, a view, a
-- materialized view and functions over the top-k aggregates; then from 0.2
-- to 0.3, which takes gputopk_index_check from PUBLIC.  Each path of
-- update scripts gets a part here (docs/versions.md).  The answers are
-- compared as booleans, so that the output is the same under every
-- gputopk.device; the plans are looked at under gputopk.device = cpu only.
-- Ends with the extension as a fresh CREATE EXTENSION gputopk installs it,
-- for the tests after this one.
--
-- the versions installable, and the paths of update scripts between them
SELECT version, installed FROM pg_available_extension_versions
  WHERE name = 'gputopk' ORDER BY version;
SELECT source, target, path FROM pg_extension_update_paths('gputopk')
  WHERE path IS NOT NULL ORDER BY source, target;

-- the SQL surface of the installed extension: its objects, what defines the
-- functions, aggregates and the view, their privileges and comments
CREATE TEMP VIEW up_surface AS
SELECT pg_describe_object(d.classid, d.objid, 0) AS object,
       concat_ws(' | ', p.prorettype::regtype, p.prokind, p.provolatile, p.proparallel,
                 p.proisstrict, p.prosrc, p.probin, p.proacl,
                 a.aggtransfn, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
                 a.aggdeserialfn, a.aggtranstype::regtype, a.aggfinalextra,
                 a.aggfinalmodify, a.aggtransspace,
                 CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END, c.relacl,
                 obj_description(d.objid, d.classid::regclass::name)) AS definition
FROM pg_depend d
LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gputopk');
-- what depends on the extension's objects from outside it: relations, their
-- rules (a view's query), functions
CREATE TEMP VIEW up_uses AS
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS dependent,
       pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) AS uses
FROM pg_depend d
JOIN pg_depend e ON e.classid = d.refclassid AND e.objid = d.refobjid
  AND e.refclassid = 'pg_extension'::regclass AND e.deptype = 'e'
  AND e.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gputopk')
LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
WHERE d.deptype = 'n' AND d.classid IN ('pg_class'::regclass, 'pg_rewrite'::regclass, 'pg_proc'::regclass)
  AND NOT EXISTS (SELECT FROM pg_depend x
                  WHERE (x.classid, x.objid) IN ((d.classid, d.objid), ('pg_class'::regclass, r.ev_class))
                    AND x.deptype = 'e');

-- a query's answer with gputopk off and on
CREATE FUNCTION up_same(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  plain text[];
  ours text[];
BEGIN
  SET LOCAL gputopk.enabled = off;
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO plain;
  SET LOCAL gputopk.enabled = on;
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO ours;
  RETURN plain IS NOT DISTINCT FROM ours AND plain IS NOT NULL;
END $$;
-- a query's answer
CREATE FUNCTION up_answer(q text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  answer text[];
BEGIN
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO answer;
  RETURN answer;
END $$;
-- how a query runs under gputopk.device = cpu: 'column index', 'gputopk' or 'native'
CREATE FUNCTION up_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  used boolean := false;
  indexed boolean := false;
  line text;
BEGIN
  SET LOCAL gputopk.device = cpu;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    used := used OR line LIKE '%GpuTopK%';
    indexed := indexed OR line LIKE '%Column Index:%';
  END LOOP;
  RETURN CASE WHEN indexed THEN 'column index' WHEN used THEN 'gputopk' ELSE 'native' END;
END $$;
CREATE TEMP TABLE up_queries (n int, q text);
INSERT INTO up_queries VALUES
  (1, 'SELECT id, score FROM up_t ORDER BY score DESC, id LIMIT 20'),
  (2, 'SELECT id, qty FROM up_t WHERE name IN (''n3'', ''n7'') ORDER BY qty, id LIMIT 15'),
  (3, 'SELECT id, day FROM up_t WHERE score > 100 ORDER BY day DESC NULLS LAST, id LIMIT 25'),
  (4, 'SELECT id, score FROM up_t ORDER BY score NULLS FIRST, id LIMIT 10 OFFSET 195');

--
-- 0.1, and objects that depend on it
--
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'gputopk';
-- the library is one for all versions: it names the default version
SELECT gputopk_version() LIKE 'gputopk ' || default_version || ' (%)' AS library_is_default
  FROM pg_available_extensions WHERE name = 'gputopk';

SET gputopk.min_table_rows = 1000;
CREATE TABLE up_t (id int, score float8, qty int4, day date, g int, name text)
  WITH (autovacuum_enabled = off);
-- score is unique (7919 is a unit modulo the prime 20011) or NULL
INSERT INTO up_t
SELECT i, CASE WHEN i % 101 = 0 THEN NULL ELSE (i::int8 * 7919 % 20011) / 10.0 END,
       i * 31 % 1009 - 500, date '2020-01-01' + i * 13 % 2000, i % 7, 'n' || i % 50
FROM generate_series(1, 20000) i;
CREATE INDEX up_t_idx ON up_t USING gputopk (score, qty, day, name);
ANALYZE up_t;
CREATE VIEW up_v AS
  SELECT g, gpu_topk(score, 5) AS top_score, gpu_bottomk(qty, 5) AS bottom_qty,
         gpu_topk_by(id, score, 3) AS top_ids, gpu_bottomk_by(id, score, 3) AS bottom_ids,
         gpu_topk(day, 4) AS top_day
  FROM up_t GROUP BY g;
CREATE MATERIALIZED VIEW up_mv AS
  SELECT gpu_bottomk(day, 4) AS first_days, gpu_topk_by(name, score, 4) AS top_names FROM up_t;
CREATE FUNCTION up_top_ids(k int) RETURNS int[] LANGUAGE sql STABLE
  AS $$ SELECT gpu_topk_by(id, score, k) FROM up_t $$;
CREATE FUNCTION up_bottom_scores(k int) RETURNS float8[] LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT gpu_bottomk(score, k) FROM up_t;
END;
SELECT * FROM up_uses ORDER BY dependent, uses;
CREATE TEMP TABLE up_uses_before AS SELECT * FROM up_uses;

-- the aggregates against PostgreSQL's own answer
CREATE TEMP VIEW up_v_ref AS
  SELECT g, (array_agg(score ORDER BY score DESC) FILTER (WHERE score IS NOT NULL))[1:5] AS top_score,
         (array_agg(qty ORDER BY qty) FILTER (WHERE qty IS NOT NULL))[1:5] AS bottom_qty,
         (array_agg(id ORDER BY score DESC) FILTER (WHERE score IS NOT NULL))[1:3] AS top_ids,
         (array_agg(id ORDER BY score) FILTER (WHERE score IS NOT NULL))[1:3] AS bottom_ids,
         (array_agg(day ORDER BY day DESC) FILTER (WHERE day IS NOT NULL))[1:4] AS top_day
  FROM up_t GROUP BY g;
CREATE TEMP VIEW up_aggs AS
SELECT (SELECT count(*) FROM up_v) AS groups,
       (SELECT array_agg(v::text ORDER BY g) FROM up_v v) =
         (SELECT array_agg(r::text ORDER BY g) FROM up_v_ref r) AS view_right,
       (SELECT first_days FROM up_mv) =
         (SELECT (array_agg(day ORDER BY day) FILTER (WHERE day IS NOT NULL))[1:4] FROM up_t)
         AS matview_right,
       up_top_ids(6) = (SELECT (array_agg(id ORDER BY score DESC) FILTER (WHERE score IS NOT NULL))[1:6]
                        FROM up_t) AS top_ids_right,
       up_bottom_scores(6) = (SELECT (array_agg(score ORDER BY score) FILTER (WHERE score IS NOT NULL))[1:6]
                              FROM up_t) AS bottom_scores_right;
SELECT * FROM up_aggs;
CREATE TEMP TABLE up_results_before AS
SELECT (SELECT array_agg(v::text ORDER BY g) FROM up_v v) AS view_rows,
       (SELECT m::text FROM up_mv m) AS matview_row,
       up_top_ids(10) AS top_ids, up_bottom_scores(10) AS bottom_scores;
-- GpuTopK over the column index answers as plain PostgreSQL does
SELECT gputopk_index_check('up_t_idx') = (SELECT count(*) FROM up_t) AS index_matches;
SELECT n, up_same(q) AS same, up_plan(q) AS plan FROM up_queries ORDER BY n;
-- before 0.3 every role may run gputopk_index_check
SELECT has_function_privilege('public', 'gputopk_index_check(regclass)', 'EXECUTE')
  AS public_may_check;
CREATE TEMP TABLE up_answers_before AS SELECT n, up_answer(q) AS answer FROM up_queries;

--
-- the update
--
ALTER EXTENSION gputopk UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'gputopk';
SELECT extversion = default_version AS at_default_version
  FROM pg_extension, pg_available_extensions WHERE extname = 'gputopk' AND name = extname;
-- gputopk_version() names the same version as the catalog
SELECT gputopk_version() LIKE 'gputopk ' || extversion || ' (%)' AS version_matches
  FROM pg_extension WHERE extname = 'gputopk';
-- from 0.3 only superusers and the roles granted it (gputopk--0.2--0.3.sql)
SELECT has_function_privilege('public', 'gputopk_index_check(regclass)', 'EXECUTE')
  AS public_may_check;
-- once more: nothing to do
ALTER EXTENSION gputopk UPDATE;
SELECT version, installed FROM pg_available_extension_versions
  WHERE name = 'gputopk' ORDER BY version;

-- the objects that use the extension still do, and answer as before
SELECT count(*) = (SELECT count(*) FROM up_uses_before) AS uses_count_same,
       NOT EXISTS (SELECT * FROM up_uses EXCEPT SELECT * FROM up_uses_before) AS uses_same
  FROM up_uses;
SELECT * FROM up_aggs;
REFRESH MATERIALIZED VIEW up_mv;
SELECT * FROM up_aggs;
SELECT (SELECT array_agg(v::text ORDER BY g) FROM up_v v) = view_rows AS view_same,
       (SELECT m::text FROM up_mv m) = matview_row AS matview_same,
       up_top_ids(10) = top_ids AS top_ids_same,
       up_bottom_scores(10) = bottom_scores AS bottom_scores_same
  FROM up_results_before;
-- the column index: its entries, GpuTopK over it
SELECT gputopk_index_check('up_t_idx') = (SELECT count(*) FROM up_t) AS index_matches;
SELECT n, up_same(q) AS same, up_answer(q) = answer AS same_as_before, up_plan(q) AS plan
  FROM up_queries JOIN up_answers_before USING (n) ORDER BY n;
-- writes into it, VACUUM, REINDEX, and a new index
UPDATE up_t SET score = score + 5000 WHERE id % 500 = 0;
DELETE FROM up_t WHERE id % 9 = 0;
INSERT INTO up_t SELECT i, i % 3000 + 0.5, i % 77, date '2024-01-01', i % 7, 'new'
  FROM generate_series(20001, 21000) i;
SELECT gputopk_index_check('up_t_idx') = (SELECT count(*) FROM up_t) AS index_matches;
SELECT n, up_same(q) AS same, up_plan(q) AS plan FROM up_queries ORDER BY n;
VACUUM up_t;
SELECT gputopk_index_check('up_t_idx') = (SELECT count(*) FROM up_t) AS index_matches;
REINDEX INDEX up_t_idx;
SELECT gputopk_index_check('up_t_idx') = (SELECT count(*) FROM up_t) AS index_matches;
CREATE INDEX up_t_idx2 ON up_t USING gputopk (qty, g);
SELECT gputopk_index_check('up_t_idx2') = (SELECT count(*) FROM up_t) AS index_matches;
SELECT up_same('SELECT id, qty FROM up_t WHERE g = 2 ORDER BY qty DESC, id LIMIT 40') AS same;
SELECT * FROM up_aggs;

-- the updated extension's SQL surface, against a fresh install's
CREATE TEMP TABLE up_surface_updated AS SELECT * FROM up_surface;
DROP VIEW up_aggs, up_v_ref;
DROP MATERIALIZED VIEW up_mv;
DROP VIEW up_v;
DROP FUNCTION up_top_ids(int), up_bottom_scores(int);
DROP TABLE up_t;
SELECT count(*) AS uses_left FROM up_uses;
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk;
SELECT extversion FROM pg_extension WHERE extname = 'gputopk';
SELECT NOT EXISTS (SELECT * FROM up_surface EXCEPT SELECT * FROM up_surface_updated) AND
       NOT EXISTS (SELECT * FROM up_surface_updated EXCEPT SELECT * FROM up_surface)
       AS same_as_fresh_install,
       (SELECT count(*) FROM up_surface) = (SELECT count(*) FROM up_surface_updated) AS same_count;
SELECT object FROM (SELECT * FROM up_surface EXCEPT SELECT * FROM up_surface_updated) s
UNION ALL
SELECT object FROM (SELECT * FROM up_surface_updated EXCEPT SELECT * FROM up_surface) s
ORDER BY 1;

--
-- from 0.2 to 0.3: gputopk_index_check is no longer PUBLIC's to run
--
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk VERSION '0.2';
SELECT has_function_privilege('public', 'gputopk_index_check(regclass)', 'EXECUTE')
  AS public_may_check;
ALTER EXTENSION gputopk UPDATE TO '0.3';
SELECT has_function_privilege('public', 'gputopk_index_check(regclass)', 'EXECUTE')
  AS public_may_check;
SELECT gputopk_version() LIKE 'gputopk ' || extversion || ' (%)' AS version_matches
  FROM pg_extension WHERE extname = 'gputopk';
CREATE TEMP TABLE up_surface_from_02 AS SELECT * FROM up_surface;
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk;
SELECT NOT EXISTS (SELECT * FROM up_surface EXCEPT SELECT * FROM up_surface_from_02) AND
       NOT EXISTS (SELECT * FROM up_surface_from_02 EXCEPT SELECT * FROM up_surface)
       AS same_as_fresh_install;
DROP FUNCTION up_same(text), up_answer(text), up_plan(text);
