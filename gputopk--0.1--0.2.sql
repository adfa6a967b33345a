/* gputopk--0.1--0.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION gputopk UPDATE TO '0.2'" to load this file. \quit

-- 0.2 builds on PostgreSQL 15, 16, 17 and 18.  Its SQL surface is that of
-- 0.1: no object is added, changed or dropped, so this script runs nothing.
-- The library (gputopk.so) is one for every version of the SQL surface; what
-- changed is in it.
--
-- There is no gputopk--0.2.sql: CREATE EXTENSION gputopk installs 0.2 by
-- running gputopk--0.1.sql and then this script (PostgreSQL 10 and later
-- follow update scripts when the version asked for has no script of its
-- own).  gputopk--0.1.sql is never edited; each later change of the SQL
-- surface comes in a script gputopk--OLD--NEW.sql (docs/versions.md).
