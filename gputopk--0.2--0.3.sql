/* gputopk--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gputopk UPDATE TO '0.3'" to load this file. \quit

-- gputopk_index_check reads every row of a table, past its privileges and
-- row-level security, and returns how many the snapshot sees.  As with
-- amcheck's functions, only superusers and the roles granted EXECUTE on it
-- may run it.
REVOKE ALL ON FUNCTION gputopk_index_check(regclass) FROM PUBLIC;

-- gputopk_service gains, per GPU: its page cache and the column index copies
-- (whole, or parts of one partitioned over the GPUs) it holds.  As pg_stat_statements
-- does, the view and its function are made again: a view of yours over
-- gputopk_service must be dropped before the update and made again after.
DROP VIEW gputopk_service;
DROP FUNCTION gputopk_service();

CREATE FUNCTION gputopk_service(
    OUT device int,
    OUT name text,
    OUT state text,
    OUT pid int,
    OUT memory_used_bytes bigint,
    OUT memory_free_bytes bigint,
    OUT jobs_running int,
    OUT jobs_done bigint,
    OUT jobs_failed bigint,
    OUT bytes_received bigint,
    OUT transfer_ms float8,
    OUT kernel_ms float8,
    OUT queue_wait_ms float8,
    OUT page_cache_bytes bigint,
    OUT index_copies int,
    OUT index_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 1;

COMMENT ON FUNCTION gputopk_service() IS
'the GPU service: one row per GPU with its memory, jobs, page cache and index copies';

CREATE VIEW gputopk_service AS SELECT * FROM gputopk_service();
GRANT SELECT ON gputopk_service TO PUBLIC;

COMMENT ON FUNCTION gputopk_service_inject_fault(text, int) IS
'superuser only, for tests: make the GPU service fail once (out_of_memory, device_error on GPU arg, exit, slow_start with arg ms, or none)';

-- pgvector's vector(n) and halfvec(n) columns in the column index.  pgvector
-- may be installed before or after gputopk, or never, so the class is for any
-- type that has no class of its own; the index's build refuses, by name, the
-- types it cannot hold (a vector without its dimensions among them).
CREATE OPERATOR CLASS any_gputopk_ops DEFAULT FOR TYPE anyelement USING gputopk AS STORAGE anyelement;
