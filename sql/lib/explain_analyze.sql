-- pg_temp.explain_analyze(query), for tests to include: EXPLAIN ANALYZE's lines, as every
-- supported PostgreSQL version prints them: no timings, costs, buffers or
-- summary; rows as whole numbers (18 prints rows=10.00); and a count of
-- pages read as "N", since 16 and later extend a table by several pages at
-- once while it is loaded, so that its size differs between versions.
CREATE FUNCTION pg_temp.explain_analyze(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q
  LOOP
    line := regexp_replace(line, '(rows=[0-9]+)\.[0-9]+', '\1', 'g');
    RETURN NEXT regexp_replace(line, '(Pages Read: )[0-9]+', '\1N');
  END LOOP;
END $$;
