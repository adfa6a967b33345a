-- test/gpu/lib/compare.sql: what the GPU pgTAP files compare, included
-- with \ir lib/compare.sql: a query's answer with gputopk on and off, a
-- property of its custom scan in EXPLAIN ANALYZE, whether a query read a
-- column index's copy on the GPU and answered the same, and the service's
-- return after a fault.  Temporary functions, as
-- each file runs in a session of its own.

-- a query's rows with gputopk and without, as text
CREATE FUNCTION pg_temp.answer(q text, enabled boolean) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  result text;
BEGIN
  PERFORM set_config('gputopk.enabled', enabled::text, true);
  EXECUTE format('SELECT string_agg(t::text, '';'') FROM (%s) t', q) INTO result;
  PERFORM set_config('gputopk.enabled', 'on', true);
  RETURN result;
END $$;

-- an EXPLAIN ANALYZE property of the query's first custom scan
CREATE FUNCTION pg_temp.explained(q text, property text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
  RETURN (WITH RECURSIVE nodes(node) AS (
            SELECT plan -> 0 -> 'Plan'
            UNION ALL
            SELECT child FROM nodes, json_array_elements(node -> 'Plans') child)
          SELECT node ->> property FROM nodes WHERE node ->> 'Node Type' = 'Custom Scan' LIMIT 1);
END $$;

-- whether the query read the column index from the GPU's copy and answered
-- as PostgreSQL does
CREATE FUNCTION pg_temp.same_on_index_copy(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  path text := pg_temp.explained(q, 'Data Path');
BEGIN
  IF path IS DISTINCT FROM 'index entries read from the GPU''s copy, candidates'' rows fetched' THEN
    RETURN 'data path: ' || coalesce(path, 'no GpuTopK');
  END IF;
  IF pg_temp.answer(q, true) IS DISTINCT FROM pg_temp.answer(q, false) THEN
    RETURN 'different answers';
  END IF;
  RETURN 'same';
END $$;

-- the service back to ready (after a fault), every GPU of it, or their
-- states after 60 s
CREATE FUNCTION pg_temp.await_service() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..600 LOOP
    IF (SELECT bool_and(state = 'ready') FROM gputopk_service) THEN
      RETURN 'ready';
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN coalesce((SELECT string_agg(DISTINCT state, ',') FROM gputopk_service), 'absent');
END $$;
