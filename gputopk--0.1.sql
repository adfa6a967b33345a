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
    OUT queue_wait_ms float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE ROWS 1;

COMMENT ON FUNCTION gputopk_service() IS
'the GPU service: one row per GPU with its memory and the jobs it ran';

CREATE VIEW gputopk_service AS SELECT * FROM gputopk_service();
GRANT SELECT ON gputopk_service TO PUBLIC;

CREATE FUNCTION gputopk_service_inject_fault(fault text, arg int DEFAULT 0)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION gputopk_service_inject_fault(text, int) FROM PUBLIC;

COMMENT ON FUNCTION gputopk_service_inject_fault(text, int) IS
'superuser only, for tests: make the GPU service fail once (out_of_memory, device_error, exit, slow_start with arg ms, or none)';

-- Top-k aggregates (src/agg_functions.c): gpu_topk(value, k), the k largest values
-- in descending order, gpu_bottomk(value, k), the k smallest in ascending
-- order; gpu_topk_by(result, value, k) and gpu_bottomk_by(result, value, k),
-- the results of those rows in that order.

CREATE FUNCTION gputopk_topk_trans(internal, anyelement, integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(internal, anyelement, integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_trans(internal, anyelement, "any", integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_by_trans(internal, anyelement, "any", integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(internal, anyelement, integer)
RETURNS anyarray
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_final(internal, anyelement, "any", integer)
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE AGGREGATE gpu_topk(value smallint, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(smallint, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value integer, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(integer, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value bigint, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(bigint, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value real, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(real, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value double precision, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(double precision, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value date, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(date, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value timestamp, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(timestamp, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value timestamptz, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(timestamptz, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_bottomk(value smallint, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(smallint, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value integer, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(integer, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value bigint, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(bigint, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value real, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(real, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value double precision, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(double precision, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value date, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(date, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value timestamp, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(timestamp, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value timestamptz, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(timestamptz, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_topk_by(result anyelement, value smallint, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, smallint, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value integer, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, integer, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value bigint, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, bigint, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value real, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, real, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value double precision, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, double precision, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value date, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, date, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value timestamp, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, timestamp, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value timestamptz, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, timestamptz, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value smallint, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, smallint, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value integer, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, integer, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value bigint, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, bigint, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value real, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, real, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value double precision, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, double precision, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value date, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, date, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value timestamp, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, timestamp, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value timestamptz, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_combine,
    SERIALFUNC = gputopk_topk_serialize, DESERIALFUNC = gputopk_topk_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, timestamptz, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';
