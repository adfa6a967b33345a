-- gputopk_devices(): a row for the CPU backend, one per GPU, and which one
-- top-k work runs on.  Nothing here depends on whether the machine has a GPU.
SELECT count(*) AS cpu_rows FROM gputopk_devices() WHERE backend = 'cpu';
SELECT device IS NULL AS no_ordinal, name <> '' AS named,
       memory_bytes > 0 AS has_memory, multiprocessors > 0 AS has_cores,
       compute_capability IS NULL AS no_cc
  FROM gputopk_devices() WHERE backend = 'cpu';
-- every GPU row is complete and our kernels run on it
SELECT count(*) AS bad_gpu_rows FROM gputopk_devices()
 WHERE backend = 'cuda'
   AND NOT (device >= 0 AND name <> '' AND memory_bytes > 0
            AND multiprocessors > 0 AND compute_capability ~ '^\d+\.\d+$');

SET gputopk.device = cpu;
SELECT backend FROM gputopk_devices() WHERE selected;
-- auto picks exactly one: the GPU when usable, otherwise the CPU
SET gputopk.device = auto;
SELECT count(*) AS selected_rows FROM gputopk_devices() WHERE selected;
SELECT backend = (CASE WHEN EXISTS (SELECT FROM gputopk_devices() WHERE backend = 'cuda'
                                      AND compute_capability::numeric >= 8)
                       THEN 'cuda' ELSE 'cpu' END) AS auto_choice_ok
  FROM gputopk_devices() WHERE selected;
