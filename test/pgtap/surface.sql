-- pgTAP: the SQL surface of gputopk and the error codes of its settings.
BEGIN;
SELECT plan(26);

SELECT has_extension('gputopk');
SELECT has_function('gputopk_version', '{}'::name[]);
SELECT function_returns('gputopk_version', '{}'::name[], 'text');
SELECT has_function('gputopk_devices', '{}'::name[]);
SELECT function_returns('gputopk_devices', '{}'::name[], 'setof record');
SELECT volatility_is('gputopk_devices', '{}'::name[], 'volatile');
SELECT has_view('gputopk_service');
SELECT has_function('gputopk_service_inject_fault', ARRAY['text', 'integer']);
SELECT ok(NOT has_function_privilege('public', 'gputopk_service_inject_fault(text, int)', 'EXECUTE'),
          'fault injection is not granted to PUBLIC');

SELECT results_eq(
    $$SELECT name FROM pg_settings WHERE name LIKE 'gputopk.%' ORDER BY name$$,
    ARRAY['gputopk.algorithm', 'gputopk.device', 'gputopk.enable_column_index', 'gputopk.enabled',
          'gputopk.gpu_cache_size', 'gputopk.gpu_page_cache_size', 'gputopk.gpu_pages',
          'gputopk.max_parallel_workers',
          'gputopk.min_table_rows', 'gputopk.service_buffer_size',
          'gputopk.service_jobs']::text[],
    'the settings are defined');
SELECT throws_ok('SET gputopk.device = tpu', '22023', NULL,
                 'an unknown device is invalid_parameter_value');
SELECT throws_ok('SET gputopk.enabled = maybe', '22023', NULL,
                 'a non-boolean is invalid_parameter_value');
SELECT throws_ok('SET gputopk.service_jobs = 8', '55P02', NULL,
                 'the GPU service''s settings need a restart: cant_change_runtime_param');
SELECT throws_ok('SET gputopk.no_such_setting = 1', '42602', NULL,
                 'the gputopk prefix is reserved');
SELECT lives_ok('SET gputopk.device = cpu', 'cpu is always accepted');
SELECT is((SELECT backend FROM gputopk_devices() WHERE selected), 'cpu',
          'cpu selects the CPU backend');
SELECT is((SELECT count(*)::int FROM gputopk_devices() WHERE backend = 'cpu'), 1,
          'exactly one CPU row');

SELECT has_function('gputopk_index_check', ARRAY['regclass']);
SELECT function_returns('gputopk_index_check', ARRAY['regclass'], 'bigint');
SELECT is((SELECT amtype::text FROM pg_am WHERE amname = 'gputopk'), 'i',
          'gputopk is an index access method');
SELECT is((SELECT count(*)::int FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
           WHERE a.amname = 'gputopk' AND c.opcdefault), 11,
          'the column index has a default operator class for each of its 10 types (varchar uses text''s) and one for any other (pgvector''s)');

SELECT has_function('gpu_topk', ARRAY['double precision', 'integer'], 'gpu_topk(float8, int) exists');
SELECT has_function('gpu_bottomk', ARRAY['timestamp with time zone', 'integer'],
                    'gpu_bottomk(timestamptz, int) exists');
SELECT is((SELECT count(*)::int FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
           WHERE p.proname IN ('gpu_topk', 'gpu_bottomk', 'gpu_topk_by', 'gpu_bottomk_by')
             AND p.proparallel = 's'
             AND a.aggcombinefn <> 0
             AND (a.aggtranstype <> 'internal'::regtype OR (a.aggserialfn <> 0 AND a.aggdeserialfn <> 0))),
          32, 'the 32 top-k aggregates are parallel safe and combine');
SELECT is((SELECT count(*)::int FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
           WHERE p.proname IN ('gpu_topk', 'gpu_bottomk') AND a.aggtranstype = 'bytea'::regtype),
          16, 'gpu_topk and gpu_bottomk have bytea states, which Citus can combine on its coordinator');
SELECT throws_ok('SELECT gpu_topk(1, 0)', '22023', 'k must be positive',
                 'k = 0 is invalid_parameter_value');

SELECT * FROM finish();
ROLLBACK;
