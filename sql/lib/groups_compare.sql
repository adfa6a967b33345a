-- For the top-groups tests to include, after sql/lib/explain_analyze.sql:
-- pg_temp.groups_form(q), how q ran as EXPLAIN ANALYZE says ('PostgreSQL',
-- or 'GpuTopKGroups' and whether it spilled, ran partitioned or on the
-- GPU); and pg_temp.groups_rows(q, enabled), q's rows as text, in order,
-- with gputopk on or off.  Neither makes a table, which would make the
-- session's prepared statements' plans again.
CREATE FUNCTION pg_temp.groups_form(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  form text := 'PostgreSQL';
BEGIN
  FOR line IN SELECT * FROM pg_temp.explain_analyze(q) LOOP
    IF line LIKE '%GpuTopKGroups%' THEN
      form := 'GpuTopKGroups';
    ELSIF line ~ '^ *Spill Partitions:' THEN
      form := form || ' spilled';
    ELSIF line ~ '^ *Partitions:' THEN
      form := form || ' partitioned';
    ELSIF line ~ '^ *Backend: gpu' THEN
      form := form || ' on the GPU';
    END IF;
  END LOOP;
  RETURN form;
END $$;

CREATE FUNCTION pg_temp.groups_rows(q text, enabled boolean) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  answer text[] := '{}';
BEGIN
  PERFORM set_config('gputopk.enabled', enabled::text, true);
  FOR r IN EXECUTE q LOOP
    answer := answer || r::text;
  END LOOP;
  PERFORM set_config('gputopk.enabled', 'on', true);
  RETURN answer;
END $$;
