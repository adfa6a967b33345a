-- pgTAP, GPU machines only: the GPUs are found, opened by the GPU service
-- and selected.
BEGIN;
SELECT plan(7);

SELECT cmp_ok((SELECT count(*)::int FROM gputopk_devices() WHERE backend = 'cuda'),
              '>=', 1, 'a GPU is listed');
SELECT matches(gputopk_version(), '\(CUDA \d+\.\d+', 'the build has CUDA');
SELECT lives_ok('SET gputopk.device = gpu', 'gputopk.device = gpu is accepted');
SELECT is((SELECT DISTINCT backend FROM gputopk_devices() WHERE selected), 'cuda',
          'gpu selects the GPU');
SELECT ok((SELECT bool_and(compute_capability::numeric >= 8.0) FROM gputopk_devices() WHERE selected),
          'the selected GPUs have compute capability 8.0 or newer');
SELECT lives_ok('SET gputopk.device = auto', 'back to auto');
SELECT is((SELECT DISTINCT backend FROM gputopk_devices() WHERE selected), 'cuda',
          'auto selects the GPU');

SELECT * FROM finish();
ROLLBACK;
