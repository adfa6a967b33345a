/* gputopk--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION gputopk" to load this file. \quit

CREATE FUNCTION gputopk_version()
RETURNS text
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION gputopk_version() IS
'gputopk version and build (CUDA runtime and kernel targets, or CPU only)';

CREATE FUNCTION gputopk_devices(
    OUT device int,
    OUT backend text,
    OUT name text,
    OUT memory_bytes bigint,
    OUT multiprocessors int,
    OUT compute_capability text,
    OUT selected boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED ROWS 2;

COMMENT ON FUNCTION gputopk_devices() IS
'CUDA devices and the CPU backend; selected marks where top-k work runs under gputopk.device';
