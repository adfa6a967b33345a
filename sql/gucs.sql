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

SET gputopk.pinned_pool_size = '1GB';
SHOW gputopk.pinned_pool_size;
SET gputopk.pinned_pool_size = -1;
RESET gputopk.pinned_pool_size;

-- the prefix is reserved: a misspelt setting is an error, not a placeholder
SET gputopk.enable = on;

-- pinning host memory is for superusers to allow
CREATE ROLE regress_gputopk_user;
SET ROLE regress_gputopk_user;
SET gputopk.pinned_pool_size = '16MB';
SET gputopk.device = cpu;
RESET ROLE;
DROP ROLE regress_gputopk_user;
