--
-- Set-up of test/concurrent/run: the table the writer changes while the reader
-- queries it, and the reader's check.  Each check runs in a REPEATABLE READ
-- transaction, so that its two runs of a query, with gputopk on and off,
-- share one snapshot while the writer commits around them.
--
CREATE TABLE tc (id int PRIMARY KEY, v float8, g int, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO tc SELECT i, (i * 7919 % 100003)::float8 / 100, i % 7, repeat('x', i % 40)
  FROM generate_series(1, 200000) i;
-- a column index, which GpuTopK reads where the reader does not turn it off
CREATE INDEX tc_ci ON tc USING gputopk (v, g);
-- all-visible pages, which the page reader takes without a check per tuple
VACUUM (FREEZE, ANALYZE) tc;
CREATE TABLE concurrent_checks (q text, used boolean, parallel boolean, indexed boolean,
                                gpu_pages boolean, vouched boolean, index_groups boolean,
                                index_declined boolean, same boolean);

-- q's rows with gputopk on and off, in order, as text; whether a gputopk
-- node ran, in parallel, over the column index, reading pages on the GPU,
-- some of them vouched for by the visibility map or the WAL, or grouping the column
-- index's entries on the GPU, or declining them for the pages where many
-- are not all-visible (in a run of its own); recorded in concurrent_checks
CREATE FUNCTION concurrent_check(q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  ours text[];
  plain text[];
  used boolean := false;
  parallel boolean := false;
  indexed boolean := false;
  gpu_pages boolean := false;
  vouched boolean := false;
  index_groups boolean := false;
  index_declined boolean := false;
  line text;
BEGIN
  IF current_setting('transaction_isolation') <> 'repeatable read' THEN
    RAISE EXCEPTION 'concurrent_check needs a REPEATABLE READ transaction';
  END IF;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    used := used OR line LIKE '%GpuTopK%';
    parallel := parallel OR line LIKE '%Parallel Custom Scan (GpuTopK%';
    indexed := indexed OR line LIKE '%Column Index:%';
  END LOOP;
  IF current_setting('gputopk.device') = 'gpu' THEN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
      gpu_pages := gpu_pages OR line LIKE '%Pages Read on GPU:%';
      vouched := vouched OR line LIKE '%Pages Vouched by %';
      index_groups := index_groups OR line LIKE '%Groupings on GPU:%';
      index_declined := index_declined OR line LIKE '%Column Index Declined:%';
    END LOOP;
  END IF;
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO ours;
  SET LOCAL gputopk.enabled = off;
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO plain;
  SET LOCAL gputopk.enabled = on;
  INSERT INTO concurrent_checks VALUES (q, used, parallel, indexed, gpu_pages, vouched,
                                        index_groups, index_declined,
                                        ours IS NOT DISTINCT FROM plain);
END $$;
