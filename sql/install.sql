-- The extension installs, uninstalls and reinstalls; its objects and version.
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk;
\dx+ gputopk
SELECT extversion FROM pg_extension WHERE extname = 'gputopk';
-- gputopk_version() names the same version as the catalog
SELECT gputopk_version() LIKE 'gputopk ' || extversion || ' (%)' AS version_matches
  FROM pg_extension WHERE extname = 'gputopk';
