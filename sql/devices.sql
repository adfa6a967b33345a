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
-- auto picks one backend: the GPUs when usable, otherwise the CPU
SET gputopk.device = auto;
SELECT count(DISTINCT backend) AS selected_backends FROM gputopk_devices() WHERE selected;
SELECT DISTINCT backend = (CASE WHEN EXISTS (SELECT FROM gputopk_devices() WHERE backend = 'cuda'
                                      AND compute_capability::numeric >= 8)
                       THEN 'cuda' ELSE 'cpu' END) AS auto_choice_ok
  FROM gputopk_devices() WHERE selected;

-- gputopk_service: a row per GPU of the GPU service, the same GPUs as
-- gputopk_devices() lists (none without a GPU or without preloading)
SELECT (SELECT count(*) FROM gputopk_service) =
       (SELECT count(*) FROM gputopk_devices() WHERE backend = 'cuda') AS same_gpus;
SELECT count(*) AS bad_service_rows FROM gputopk_service
 WHERE NOT (device >= 0 AND name <> '' AND state IN ('starting', 'ready', 'restarting')
            AND memory_used_bytes >= 0 AND jobs_done >= 0 AND bytes_received >= 0);
-- its fault injection is for superusers, and knows its faults
SELECT gputopk_service_inject_fault('meltdown');
CREATE ROLE regress_gputopk_user;
SET ROLE regress_gputopk_user;
SELECT gputopk_service_inject_fault('none');
SELECT count(*) >= 0 AS anyone_may_look FROM gputopk_service;
RESET ROLE;
DROP ROLE regress_gputopk_user;
