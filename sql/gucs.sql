-- The gputopk.* settings.
SELECT name, boot_val, vartype, context, enumvals, unit, short_desc
  FROM pg_settings WHERE name LIKE 'gputopk.%' ORDER BY name;

SET gputopk.enabled = off;
SHOW gputopk.enabled;
RESET gputopk.enabled;
SHOW gputopk.enabled;

SET gputopk.device = cpu;
SHOW gputopk.device;
SET gputopk.device = 'AUTO';
SHOW gputopk.device;
SET gputopk.device = tpu;

-- the GPU service's settings are the server's, fixed at its start
SHOW gputopk.service_jobs;
SHOW gputopk.service_buffer_size;
SET gputopk.service_jobs = 8;
SET gputopk.service_buffer_size = '4MB';

-- the prefix is reserved: a misspelt setting is an error, not a placeholder
SET gputopk.enable = on;

-- any user may choose the device
CREATE ROLE regress_gputopk_user;
SET ROLE regress_gputopk_user;
SET gputopk.device = cpu;
RESET ROLE;
DROP ROLE regress_gputopk_user;
