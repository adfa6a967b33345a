-- Where no GPU is usable (no driver, no device, or a CPU-only build).
-- Run by test/run on such a set-up only; the expected files differ in the
-- reason given in DETAIL.
SET gputopk.device = auto;
SET client_min_messages = debug1;
-- auto uses the CPU backend, and DEBUG1 says why
SELECT backend, selected FROM gputopk_devices() ORDER BY backend;
RESET client_min_messages;

-- demanding the GPU is refused with a clear error ...
SET gputopk.device = gpu;
-- ... and the session goes on, with the setting unchanged
SHOW gputopk.device;
SELECT backend FROM gputopk_devices() WHERE selected;
-- also inside a transaction, which stays usable after a savepoint rollback
BEGIN;
SAVEPOINT s;
SET LOCAL gputopk.device = gpu;
ROLLBACK TO SAVEPOINT s;
SET LOCAL gputopk.device = cpu;
SHOW gputopk.device;
COMMIT;
