/* gputopk--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gputopk UPDATE TO '0.3'" to load this file. \quit

-- gputopk_index_check reads every row of a table, past its privileges and
-- row-level security, and returns how many the snapshot sees.  As with
-- amcheck's functions, only superusers and the roles granted EXECUTE on it
-- may run it.
REVOKE ALL ON FUNCTION gputopk_index_check(regclass) FROM PUBLIC;
