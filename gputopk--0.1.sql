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
--
-- gpu_topk and gpu_bottomk have the transition type bytea (an expanded
-- object in the aggregate's memory), not internal, and transition and final
-- functions per value type, so that Citus can run them as partial
-- aggregates on its workers: it takes no internal state, calls the
-- transition function without the expression that would tell a polymorphic
-- one its argument's type, and checks the final function's declared result
-- type.  The _by forms take a result of any type, which Citus cannot check
-- on its workers; their state stays internal, so Citus gathers their rows
-- unless the query groups by the distribution column.  SSPACE is about a
-- group's state holding a few values.

CREATE FUNCTION gputopk_topk_trans(bytea, smallint, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, integer, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, bigint, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, real, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, double precision, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, date, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, timestamp, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_trans(bytea, timestamptz, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_topk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, smallint, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, integer, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, bigint, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, real, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, double precision, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, date, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, timestamp, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_trans(bytea, timestamptz, integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'gputopk_bottomk_trans'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_trans(internal, anyelement, "any", integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_bottomk_by_trans(internal, anyelement, "any", integer)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_combine(bytea, bytea)
RETURNS bytea
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, smallint, integer)
RETURNS smallint[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, integer, integer)
RETURNS integer[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, bigint, integer)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, real, integer)
RETURNS real[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, double precision, integer)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, date, integer)
RETURNS date[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, timestamp, integer)
RETURNS timestamp[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_final(bytea, timestamptz, integer)
RETURNS timestamptz[]
AS 'MODULE_PATHNAME', 'gputopk_topk_final'
LANGUAGE C PARALLEL SAFE;

CREATE FUNCTION gputopk_topk_by_final(internal, anyelement, "any", integer)
RETURNS anyarray
AS 'MODULE_PATHNAME'
LANGUAGE C PARALLEL SAFE;

CREATE AGGREGATE gpu_topk(value smallint, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(smallint, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value integer, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(integer, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value bigint, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(bigint, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value real, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(real, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value double precision, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(double precision, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value date, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(date, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value timestamp, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(timestamp, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_topk(value timestamptz, k integer) (
    SFUNC = gputopk_topk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk(timestamptz, integer) IS 'the k largest values, in descending order';

CREATE AGGREGATE gpu_bottomk(value smallint, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(smallint, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value integer, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(integer, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value bigint, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(bigint, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value real, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(real, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value double precision, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(double precision, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value date, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(date, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value timestamp, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(timestamp, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_bottomk(value timestamptz, k integer) (
    SFUNC = gputopk_bottomk_trans, STYPE = bytea, SSPACE = 256,
    COMBINEFUNC = gputopk_topk_combine,
    FINALFUNC = gputopk_topk_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk(timestamptz, integer) IS 'the k smallest values, in ascending order';

CREATE AGGREGATE gpu_topk_by(result anyelement, value smallint, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, smallint, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value integer, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, integer, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value bigint, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, bigint, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value real, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, real, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value double precision, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, double precision, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value date, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, date, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value timestamp, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, timestamp, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_topk_by(result anyelement, value timestamptz, k integer) (
    SFUNC = gputopk_topk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_topk_by(anyelement, timestamptz, integer) IS 'the results of the k rows with the largest values, largest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value smallint, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, smallint, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value integer, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, integer, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value bigint, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, bigint, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value real, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, real, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value double precision, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, double precision, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value date, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, date, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value timestamp, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, timestamp, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

CREATE AGGREGATE gpu_bottomk_by(result anyelement, value timestamptz, k integer) (
    SFUNC = gputopk_bottomk_by_trans, STYPE = internal,
    COMBINEFUNC = gputopk_topk_by_combine,
    SERIALFUNC = gputopk_topk_by_serialize, DESERIALFUNC = gputopk_topk_by_deserialize,
    FINALFUNC = gputopk_topk_by_final, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_ONLY,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE gpu_bottomk_by(anyelement, timestamptz, integer) IS 'the results of the k rows with the smallest values, smallest first (ties: results ascending)';

-- The column index: CREATE INDEX ... USING gputopk (c1, c2, ...)

CREATE FUNCTION gputopk_index_handler(internal)
RETURNS index_am_handler
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE ACCESS METHOD gputopk TYPE INDEX HANDLER gputopk_index_handler;
COMMENT ON ACCESS METHOD gputopk IS 'column index read by GpuTopK: ranking and filter columns stored columnar';

CREATE OPERATOR CLASS bool_gputopk_ops DEFAULT FOR TYPE boolean USING gputopk AS STORAGE boolean;
CREATE OPERATOR CLASS int2_gputopk_ops DEFAULT FOR TYPE smallint USING gputopk AS STORAGE smallint;
CREATE OPERATOR CLASS int4_gputopk_ops DEFAULT FOR TYPE integer USING gputopk AS STORAGE integer;
CREATE OPERATOR CLASS int8_gputopk_ops DEFAULT FOR TYPE bigint USING gputopk AS STORAGE bigint;
CREATE OPERATOR CLASS float4_gputopk_ops DEFAULT FOR TYPE real USING gputopk AS STORAGE real;
CREATE OPERATOR CLASS float8_gputopk_ops DEFAULT FOR TYPE double precision USING gputopk AS STORAGE double precision;
CREATE OPERATOR CLASS date_gputopk_ops DEFAULT FOR TYPE date USING gputopk AS STORAGE date;
CREATE OPERATOR CLASS timestamp_gputopk_ops DEFAULT FOR TYPE timestamp USING gputopk AS STORAGE timestamp;
CREATE OPERATOR CLASS timestamptz_gputopk_ops DEFAULT FOR TYPE timestamptz USING gputopk AS STORAGE timestamptz;
-- text and varchar: stored as codes of the index's dictionary
CREATE OPERATOR CLASS text_gputopk_ops DEFAULT FOR TYPE text USING gputopk AS STORAGE text;

CREATE FUNCTION gputopk_index_check(index regclass)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION gputopk_index_check(regclass) IS
'verifies a gputopk index against its table: every row the snapshot sees has one live entry with its values; returns the rows checked';
