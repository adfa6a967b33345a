-- pgTAP, GPU machines only, under gputopk.device = gpu: the GPU service runs
-- the GPU work of every process, and its faults fail a query cleanly or, under
-- auto, leave it to the CPU; the service comes back after each, and no job or
-- temporary file is left behind.
BEGIN;
SELECT plan(36);

SET LOCAL gputopk.min_table_rows = 1000;
CREATE TABLE svc AS
SELECT i AS id, (random() * 1e6)::float8 AS v, i % 100 AS g
  FROM generate_series(1, 2000000) i;
ANALYZE svc;

-- the jobs the service has finished or failed, on all GPUs
CREATE FUNCTION pg_temp.jobs() RETURNS bigint LANGUAGE sql AS
$$ SELECT coalesce(sum(jobs_done + jobs_failed), 0)::bigint FROM gputopk_service $$;

\ir lib/compare.sql

-- whether the query was cancelled (throws_ok's WHEN OTHERS does not catch that)
CREATE FUNCTION pg_temp.cancelled(q text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN false;
EXCEPTION WHEN query_canceled THEN
  RETURN true;
END $$;

-- the service
SELECT is((SELECT count(*)::int FROM gputopk_service WHERE state = 'ready'),
          (SELECT count(*)::int FROM gputopk_devices() WHERE backend = 'cuda'),
          'every GPU is in the GPU service, which is ready');
SELECT ok((SELECT bool_and(pid > 0 AND memory_free_bytes > 0) FROM gputopk_service),
          'the service has a process and sees free GPU memory');

-- GpuTopK and GpuTopKAgg through the service
CREATE TEMP TABLE before AS SELECT pg_temp.jobs() AS jobs;
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'GpuTopK through the service answers as PostgreSQL does');
SELECT is(pg_temp.answer('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g ORDER BY g', true),
          pg_temp.answer('SELECT g, (array_agg(v ORDER BY v DESC))[1:3] FROM svc GROUP BY g ORDER BY g', false),
          'GpuTopKAgg through the service answers as the array_agg idiom does');
SELECT ok(pg_temp.jobs() >= (SELECT jobs FROM before) + 2, 'the service ran their jobs');
SELECT ok((SELECT sum(bytes_received) FROM gputopk_service) > 0, 'and received their keys');

-- parallel workers use the GPU too
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 4;
SELECT cmp_ok(pg_temp.explained('SELECT id FROM svc ORDER BY v DESC LIMIT 5', 'Scan Processes')::int,
              '>', 1, 'a parallel GpuTopK scans in several processes');
SELECT is(pg_temp.explained('SELECT id FROM svc ORDER BY v DESC LIMIT 5', 'GPU Processes'),
          pg_temp.explained('SELECT id FROM svc ORDER BY v DESC LIMIT 5', 'Scan Processes'),
          'and each of them hands its keys to the GPU');
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'a parallel GpuTopK on the GPU answers as PostgreSQL does');
SELECT is(pg_temp.explained('SELECT gpu_topk(v, 5) FROM svc', 'GPU Processes'),
          pg_temp.explained('SELECT gpu_topk(v, 5) FROM svc', 'Scan Processes'),
          'every process of a parallel GpuTopKAgg uses the GPU');
SELECT ok(pg_temp.explained('SELECT id FROM svc ORDER BY v DESC LIMIT 5', 'GPU Queue Wait') IS NOT NULL,
          'EXPLAIN ANALYZE shows the GPU queue wait');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- device memory running out: an error under gpu, the CPU under auto
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT throws_ok('SELECT id FROM svc ORDER BY v DESC LIMIT 10', '53200', NULL,
                 'out of device memory, a GpuTopK query fails with out_of_memory');
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT throws_ok('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g', '53200', NULL,
                 'and so does a GpuTopKAgg query');
SET LOCAL gputopk.device = auto;
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'under auto, a job without device memory runs on the CPU instead');
SELECT gputopk_service_inject_fault('out_of_memory');
SELECT is(pg_temp.answer('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g ORDER BY g', true),
          pg_temp.answer('SELECT g, (array_agg(v ORDER BY v DESC))[1:3] FROM svc GROUP BY g ORDER BY g', false),
          'and so does a grouped one');
SET LOCAL gputopk.device = gpu;

-- a sticky CUDA error: the query fails, the service restarts with new contexts
SELECT gputopk_service_inject_fault('device_error');
SELECT throws_ok('SELECT id FROM svc ORDER BY v DESC LIMIT 10', '58000', NULL,
                 'a sticky CUDA error fails the query with system_error (58000)');
SELECT is(pg_temp.await_service(), 'ready', 'the service restarts after a sticky error');
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'and the GPU answers again');

-- under auto, a job the GPU fails after it started is done again on the CPU
SET LOCAL gputopk.device = auto;
SELECT gputopk_service_inject_fault('device_error');
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'under auto, a sticky CUDA error during a GpuTopK job leaves its keys to the CPU');
SELECT is(pg_temp.await_service(), 'ready', 'the service restarts');
SELECT gputopk_service_inject_fault('exit');
SELECT is(pg_temp.answer('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g ORDER BY g', true),
          pg_temp.answer('SELECT g, (array_agg(v ORDER BY v DESC))[1:3] FROM svc GROUP BY g ORDER BY g', false),
          'under auto, the service''s exit during a GpuTopKAgg job leaves its rows to the CPU');
SELECT is(pg_temp.await_service(), 'ready', 'the service starts again');
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 3;
SELECT gputopk_service_inject_fault('device_error');
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'and in a parallel GpuTopK, the process whose job failed redoes its share on the CPU');
SELECT is(pg_temp.await_service(), 'ready', 'the service restarts');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
SET LOCAL gputopk.device = gpu;

-- the service exits during a job: the query fails within the poll, not a hang
SELECT gputopk_service_inject_fault('exit');
SELECT throws_ok('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g', '58000', NULL,
                 'a query whose service exits fails with system_error (58000)');
SELECT is(pg_temp.await_service(), 'ready', 'the postmaster restarts the service');
SELECT is(pg_temp.answer('SELECT g, gpu_topk(v, 3) FROM svc GROUP BY g ORDER BY g', true),
          pg_temp.answer('SELECT g, (array_agg(v ORDER BY v DESC))[1:3] FROM svc GROUP BY g ORDER BY g', false),
          'and it answers again');

-- cancel during a job: statement_timeout fires while one process reads the
-- table's rows on the CPU into its GPU job (the GPU reading the pages
-- itself would be done first)
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gputopk.gpu_pages = off;
SET LOCAL statement_timeout = '30ms';
SELECT ok(pg_temp.cancelled('SELECT id FROM svc ORDER BY v DESC LIMIT 10'),
          'statement_timeout cancels a query during its GPU job');
RESET statement_timeout;
RESET gputopk.gpu_pages;
RESET max_parallel_workers_per_gather;
SELECT is(pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', true),
          pg_temp.answer('SELECT id, v FROM svc ORDER BY v DESC LIMIT 20', false),
          'the session goes on on the GPU');

-- a timeout while the service starts: the wait is on the latch.  Every
-- GPU's process exits at a job of its own (a query goes to a GPU that is
-- ready), the first to start again slowly.
CREATE FUNCTION pg_temp.exit_every_gpu() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  failed int := 0;
BEGIN
  FOR i IN 1..(SELECT count(*) FROM gputopk_service) LOOP
    PERFORM gputopk_service_inject_fault('exit');
    BEGIN
      PERFORM id FROM svc ORDER BY v DESC LIMIT 10;
    EXCEPTION WHEN system_error THEN
      failed := failed + 1;
    END;
  END LOOP;
  RETURN failed;
END $$;
SELECT gputopk_service_inject_fault('slow_start', 3000);
SELECT is(pg_temp.exit_every_gpu(), (SELECT count(*)::int FROM gputopk_service),
          'every GPU''s process exits (to start again, slowly)');
SET LOCAL statement_timeout = '100ms';
SELECT ok(pg_temp.cancelled('SELECT id FROM svc ORDER BY v DESC LIMIT 10'),
          'statement_timeout ends the wait for a starting service');
RESET statement_timeout;
SELECT is(pg_temp.await_service(), 'ready', 'the slow start ends');

-- nothing is left behind
SELECT is((SELECT coalesce(sum(jobs_running), 0)::int FROM gputopk_service), 0,
          'no job is left running in the service');
SELECT is((SELECT count(*)::int FROM pg_ls_tmpdir()), 0, 'no temporary file is left behind');
SELECT throws_ok('SELECT gputopk_service_inject_fault(''meltdown'')', '22023', NULL,
                 'an unknown fault is refused');
SELECT lives_ok('SELECT gputopk_service_inject_fault(''none'')', 'none clears the faults');

SELECT * FROM finish();
ROLLBACK;
