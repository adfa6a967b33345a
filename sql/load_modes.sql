-- _PG_init outside shared_preload_libraries.  Run by test/run on a server
-- that does not preload the library.

-- LOAD
LOAD 'gputopk';
SHOW gputopk.enabled;
SET gputopk.device = cpu;
SELECT backend FROM gputopk_devices() WHERE selected;

-- session_preload_libraries
\c "dbname=contrib_regression options='-c session_preload_libraries=gputopk'"
SHOW session_preload_libraries;
SHOW gputopk.device;
SELECT gputopk_version() LIKE 'gputopk %' AS loaded;

-- neither: the first call of one of its functions loads the library
\c "dbname=contrib_regression"
SELECT gputopk_version() LIKE 'gputopk %' AS loaded;
SHOW gputopk.device;
-- settings made before the library was loaded are checked when it loads
\c "dbname=contrib_regression"
SET gputopk.device = cpu;
SET gputopk.enabled = maybe;
SELECT backend FROM gputopk_devices() WHERE selected;
SHOW gputopk.enabled;
