-- pgTAP, GPU machines only, under gputopk.device = gpu: GpuTopK's GPU reads
-- a table's all-visible pages in place in shared_buffers (gputopk.gpu_pages)
-- and answers as PostgreSQL does: every key type, NULLs, NaN, -0, ties,
-- compiled filters and computed keys, text equality and IN lists, columns
-- after text and after NULLs, rows older than a column, pages written
-- since VACUUM (their tuples' visibility settled on the GPU by their
-- headers, the rest decided on the CPU), parallel
-- plans, the GPU's page cache and the pages the visibility map vouches
-- for, the pages the WAL vouches for, and the cases that stay on the CPU.
SET gputopk.min_table_rows = 1000;
SET gputopk.device = gpu;
SET gputopk.enable_column_index = off;
-- GpuTopK also where a sort of few rows would cost less
SET enable_sort = off;
SELECT plan(65);

\set pages_table gp
\ir lib/pages.sql

CREATE TABLE queries (n serial, q text);
INSERT INTO queries (q) VALUES
  ('SELECT score FROM gp ORDER BY score DESC LIMIT 100'),
  ('SELECT id, score FROM gp ORDER BY score DESC NULLS LAST, id LIMIT 50'),
  ('SELECT score + 0 FROM gp ORDER BY score LIMIT 500'),
  ('SELECT id, a FROM gp ORDER BY a DESC, id LIMIT 20 OFFSET 30'),
  ('SELECT a FROM gp ORDER BY a DESC FETCH FIRST 10 ROWS WITH TIES'),
  ('SELECT s FROM gp ORDER BY s LIMIT 300'),
  ('SELECT id, ts FROM gp ORDER BY ts, id LIMIT 25'),
  ('SELECT v FROM gp ORDER BY v DESC NULLS FIRST LIMIT 1000'),
  ('SELECT id, d FROM gp ORDER BY d DESC, id LIMIT 40'),
  ('SELECT id, late FROM gp ORDER BY late DESC NULLS LAST, id LIMIT 60'),
  ('SELECT * FROM gp ORDER BY id DESC LIMIT 7'),
  ('SELECT id, score FROM gp WHERE ts > now() - interval ''36.5 days'' ORDER BY score DESC, id LIMIT 50'),
  ('SELECT id, score FROM gp WHERE a IN (1, 2, 3) OR flag IS NOT TRUE AND b < 10 ORDER BY score DESC, id LIMIT 40'),
  ('SELECT id FROM gp WHERE NOT flag AND a > 0 ORDER BY a + 0.5 * b DESC, id LIMIT 1000'),
  ('SELECT a + 0.5 * b AS k FROM gp ORDER BY a + 0.5 * b LIMIT 70'),
  ('SELECT id, score FROM gp WHERE score IS NULL ORDER BY score DESC, id LIMIT 5'),
  ('SELECT id, v FROM gp WHERE late IS NULL AND v > 5e8 ORDER BY v, id LIMIT 30'),
  ('SELECT id FROM gp WHERE b BETWEEN 10 AND 20 ORDER BY s DESC, id LIMIT 100000'),
  ('SELECT id FROM gp WHERE b = -1 ORDER BY score DESC LIMIT 10'),
  ('SELECT id, score FROM gp WHERE lang IN (''en'', ''ja'') ORDER BY score DESC, id LIMIT 100'),
  ('SELECT id FROM gp WHERE lang = ''englishx'' AND ts > now() - interval ''100 days'' ORDER BY a + 0.5 * b DESC, id LIMIT 50'),
  ('SELECT id, lang FROM gp WHERE lang NOT IN (''en'', ''es'', ''pt'', ''englishx'') ORDER BY score, id LIMIT 300'),
  ('SELECT id FROM gp WHERE lang <> ''ja'' AND lang IN (''ja'', '''', NULL) ORDER BY score DESC, id LIMIT 20'),
  ('SELECT id, tag FROM gp WHERE tag = ''eight888'' OR lang IS NULL ORDER BY v DESC, id LIMIT 80'),
  ('SELECT id FROM gp WHERE tag IN (''a'', ''bb'') AND lang = ''es'' ORDER BY s, id LIMIT 5000');

SELECT is(pg_temp.same_on_gpu(q), 'same', 'GPU pages: ' || q) FROM queries ORDER BY n;

-- a parallel plan: each process's GPU reads its share of the pages
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET gputopk.max_parallel_workers = 2;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp ORDER BY score DESC, id LIMIT 200'), 'same',
          'GPU pages in a parallel plan');
SELECT cmp_ok(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'GPU Processes')::int,
              '>', 1, 'several processes of a parallel plan read pages on the GPU');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET gputopk.max_parallel_workers;

-- k larger than the table, k = 0, an empty table
SELECT is(pg_temp.same_on_gpu('SELECT id, b FROM gp WHERE b < 3 ORDER BY b, id LIMIT 400000'), 'same',
          'k larger than the rows');
SELECT is(pg_temp.answer('SELECT id FROM gp ORDER BY score LIMIT 0', true), NULL, 'k = 0');
CREATE TABLE gp_empty (LIKE gp);
VACUUM gp_empty;
SELECT is(pg_temp.answer('SELECT * FROM gp_empty ORDER BY score LIMIT 5', true), NULL, 'an empty table');

-- pages written since the VACUUM go to the GPU too, which decides their
-- tuples' visibility where their headers settle it (the CPU the others)
UPDATE gp SET score = score + 1 WHERE id % 1000 = 0;
DELETE FROM gp WHERE id % 1000 = 1;
INSERT INTO gp (id, score, a, b, s) SELECT -i, 2000 + i, i, i, 1 FROM generate_series(1, 50) i;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp ORDER BY score DESC, id LIMIT 100', true), 'same',
          'pages written since the VACUUM read on the GPU, their visibility decided there');
SELECT is(pg_temp.same_on_gpu('SELECT id, a FROM gp WHERE b < 500 ORDER BY a, id LIMIT 1000', true), 'same',
          'a filter over pages that are all-visible and pages that are not');
-- VACUUM leaves the deleted rows' line pointers unused and the pages
-- all-visible again: the GPU reads only their normal line pointers; rows
-- inserted into such pages later reuse them, and those pages are checked
VACUUM gp;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp ORDER BY score DESC, id LIMIT 100'), 'same',
          'pages with unused line pointers, all-visible after VACUUM');
INSERT INTO gp (id, score, a, b, s) SELECT -1000 - i, 3000 + i, i, i, 1 FROM generate_series(1, 40) i;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp ORDER BY score DESC, id LIMIT 100', true), 'same',
          'rows inserted into line pointers VACUUM freed');

-- the GPU's page cache (gputopk.gpu_page_cache_size, 1GB in the test
-- cluster): the pages read before come from their copies while their LSNs
-- are the same; pages changed since are read over the bus and copied again,
-- and so are copies that left tuples undecided (the rows inserted last,
-- read before their hint bits were set), once
SELECT isnt(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'Pages Read on GPU'),
            NULL, 'copies that left tuples undecided filled again');
-- (but pages never initialized, whose LSN is 0: from 16 on, a table loaded
-- in bulk can hold new, empty pages, and those are read over the bus)
CREATE EXTENSION IF NOT EXISTS pageinspect;
SELECT is(coalesce(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10',
                                     'Pages from GPU Cache'), '0')::bigint,
          pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'Pages Read on GPU')::bigint -
          (SELECT count(*) FROM generate_series(0, pg_relation_size('gp') / 8192 - 1) b
            WHERE (page_header(get_raw_page('gp', b::int))).lsn = '0/0'),
          'pages read again come from the GPU page cache');
-- pages the visibility map vouches for are not read by the scan: the GPU
-- reads their copies while the map page's LSN is the one read when the
-- copies were filled or last found current
CREATE TABLE gp_fresh AS SELECT * FROM gp;
VACUUM (FREEZE, ANALYZE) gp_fresh;
SELECT is(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                            'Pages Vouched by Visibility Map'), NULL,
          'pages the cache has no copy of are sent back and read by the scan');
-- (every all-visible page the GPU reads: from 16 on, a table loaded in bulk
-- can end in new, empty pages that are not all-visible, which are pinned)
SELECT is(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                            'Pages Vouched by Visibility Map')::bigint,
          pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10', 'Pages Read on GPU')::bigint -
          coalesce(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                     'Pages Not All-Visible on GPU'), '0')::bigint,
          'read again, every all-visible page is vouched for by the visibility map, unread by the scan');
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_fresh ORDER BY score DESC, id LIMIT 100'), 'same',
          'and answers are PostgreSQL''s');
-- a write clears its pages' bits: those pages are pinned, the others stay
-- vouched, where clearing a bit leaves the map page's LSN as it was (15);
-- where it moves the LSN too (18), no page is vouched for until a scan has
-- found the copies current again
CREATE TEMP TABLE vm_lsn AS SELECT lsn FROM page_header(get_raw_page('gp_fresh', 'vm', 0));
UPDATE gp_fresh SET score = score + 5000 WHERE id % 1000 = 7;
DELETE FROM gp_fresh WHERE id % 1000 = 8;
SELECT CASE WHEN (SELECT lsn FROM vm_lsn) = (SELECT lsn FROM page_header(get_raw_page('gp_fresh', 'vm', 0)))
            THEN cmp_ok(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                          'Pages Vouched by Visibility Map')::bigint, '>', 0::bigint,
                        'after writes, the pages not written stay vouched for')
            ELSE is(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                      'Pages Vouched by Visibility Map'), NULL,
                    'after writes that moved the map page''s LSN, no page is vouched for') END;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_fresh ORDER BY score DESC, id LIMIT 100', true),
          'same', 'and answers are PostgreSQL''s, the written pages pinned and checked');
-- once their hint bits are set and a scan has found their copies current,
-- every page is vouched for: the written ones by the WAL, the others by the
-- map, or on 18, whose writes moved the map page's LSN, by the WAL too
DO $$ BEGIN
  PERFORM count(*) FROM gp_fresh;
  PERFORM pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10', 'Pages Read');
END $$;
SELECT is(coalesce(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                     'Pages Vouched by Visibility Map'), '0')::bigint +
          coalesce(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                     'Pages Vouched by WAL'), '0')::bigint,
          pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10', 'Pages Read on GPU')::bigint -
          (SELECT count(*) FROM generate_series(0, pg_relation_size('gp_fresh') / 8192 - 1) b
            WHERE (page_header(get_raw_page('gp_fresh', b::int))).lsn = '0/0'),
          'after writes, every page but those never initialized is vouched for, by the map or the WAL');
-- VACUUM sets the bits again under a new map page LSN: no copy is vouched
-- for until a scan has found it current by its page LSN
VACUUM gp_fresh;
SELECT is(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                            'Pages Vouched by Visibility Map'), NULL,
          'after VACUUM, no copy is vouched for by the old map page LSN');
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_fresh ORDER BY score DESC, id LIMIT 100'), 'same',
          'and answers are PostgreSQL''s, vouched for again');
SELECT cmp_ok(pg_temp.explained('SELECT id FROM gp_fresh ORDER BY score DESC LIMIT 10',
                                'Pages Vouched by Visibility Map')::bigint, '>', 0::bigint,
              'once found current, the copies are vouched for by the new LSN');
SET gputopk.max_parallel_workers = 2;
SET parallel_setup_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_fresh ORDER BY score DESC, id LIMIT 200'), 'same',
          'vouched pages in a parallel plan');
RESET gputopk.max_parallel_workers;
RESET parallel_setup_cost;
RESET min_parallel_table_scan_size;

-- the WAL vouches for copies of pages that are not all-visible: once a
-- scan has read a page with its copy's LSN, later scans leave it unread
-- until a WAL record changes its block (src/service_wal.c)
CREATE TABLE gp_wal AS SELECT * FROM gp_fresh;
VACUUM (FREEZE, ANALYZE) gp_wal;
UPDATE gp_wal SET score = score + 1 WHERE id % 50 = 1;
DO $$ BEGIN PERFORM count(*) FROM gp_wal; END $$;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_wal ORDER BY score DESC, id LIMIT 100', true),
          'same', 'pages not all-visible read on the GPU and their copies found current');
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT id FROM gp_wal ORDER BY score DESC LIMIT 10',
                                         'Pages Vouched by WAL'), '0')::bigint, '>', 0::bigint,
              'read again, pages not all-visible are vouched for by the WAL, unread by the scan');
-- rows moved into the top k on a few pages: those blocks are read again
UPDATE gp_wal SET score = 1e9 + id WHERE id % 1000 = 3;
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_wal ORDER BY score DESC, id LIMIT 100'), 'same',
          'after writes, the blocks they changed are read, the others vouched for');
SELECT cmp_ok(coalesce(pg_temp.explained('SELECT id FROM gp_wal ORDER BY score DESC LIMIT 10',
                                         'Pages Vouched by WAL'), '0')::bigint, '>', 0::bigint,
              'after writes, the pages they did not change stay vouched for by the WAL');
-- a subtransaction's writes, read by itself, then rolled back and read
-- before their hint bits are set
CREATE FUNCTION pg_temp.rolled_back_writes() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  UPDATE gp_wal SET score = 2e9 + id WHERE id % 1000 = 5;
  RAISE EXCEPTION '%', pg_temp.same_on_gpu('SELECT id, score FROM gp_wal ORDER BY score DESC, id LIMIT 100');
EXCEPTION WHEN raise_exception THEN
  RETURN SQLERRM;
END $$;
SELECT is(pg_temp.rolled_back_writes(), 'same', 'a transaction''s own writes');
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp_wal ORDER BY score DESC, id LIMIT 100'), 'same',
          'writes rolled back, read before and after their hint bits are set');

UPDATE gp SET score = score + 1 WHERE id % 500 = 3;
VACUUM gp;
CREATE TEMP TABLE after_update AS
SELECT coalesce(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10',
                                  'Pages from GPU Cache'), '0')::bigint AS cached;
SELECT cmp_ok((SELECT cached FROM after_update), '<',
              pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10',
                                'Pages Read on GPU')::bigint,
              'pages changed since they were copied are read over the bus');
SELECT is(pg_temp.same_on_gpu('SELECT id, score FROM gp ORDER BY score DESC, id LIMIT 100'), 'same',
          'and answers are PostgreSQL''s with pages from the cache and over the bus');
CREATE UNLOGGED TABLE gp_unlogged AS SELECT * FROM gp;
VACUUM (FREEZE, ANALYZE) gp_unlogged;
SELECT cmp_ok(pg_temp.explained('SELECT id FROM gp_unlogged ORDER BY score DESC LIMIT 10',
                                'Pages Read on GPU')::bigint, '>', 0::bigint,
              'an unlogged table''s pages are read on the GPU');
SELECT is(pg_temp.explained('SELECT id FROM gp_unlogged ORDER BY score DESC LIMIT 10',
                            'Pages from GPU Cache'), NULL,
          'pages of an unlogged table, whose changes set no LSN, are never kept');

-- what stays on the CPU, with the same answers
SELECT is(pg_temp.explained('SELECT id FROM gp WHERE length(pad) > 3 ORDER BY score DESC LIMIT 10',
                    'Pages Read on GPU'), NULL, 'a clause the GPU cannot run keeps the rows on the CPU');
SELECT is(pg_temp.answer('SELECT id FROM gp WHERE length(pad) > 3 ORDER BY score DESC, id LIMIT 10', true),
          pg_temp.answer('SELECT id FROM gp WHERE length(pad) > 3 ORDER BY score DESC, id LIMIT 10', false),
          'and answers as PostgreSQL does');
SELECT is(pg_temp.explained('SELECT id FROM gp WHERE lang = ''englishxy'' ORDER BY score DESC LIMIT 10',
                    'Pages Read on GPU'), NULL,
          'text compared with a constant of more than 8 bytes keeps the rows on the CPU');
SELECT is(pg_temp.answer('SELECT id FROM gp WHERE lang = ''englishxy'' ORDER BY score DESC, id LIMIT 10', true),
          pg_temp.answer('SELECT id FROM gp WHERE lang = ''englishxy'' ORDER BY score DESC, id LIMIT 10', false),
          'and answers as PostgreSQL does');
ALTER TABLE gp ADD COLUMN later int4 DEFAULT 7;
SELECT is(pg_temp.explained('SELECT id FROM gp ORDER BY later, id LIMIT 10', 'Pages Read on GPU'), NULL,
          'a column with a default for older rows keeps the rows on the CPU');
SELECT is(pg_temp.answer('SELECT id, later FROM gp ORDER BY later, id LIMIT 10', true),
          pg_temp.answer('SELECT id, later FROM gp ORDER BY later, id LIMIT 10', false),
          'and answers as PostgreSQL does');
SET gputopk.gpu_pages = off;
SELECT is(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'Pages Read on GPU'), NULL,
          'gputopk.gpu_pages = off reads every page on the CPU');
RESET gputopk.gpu_pages;
SET default_transaction_isolation = serializable;
SELECT is(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'Pages Read on GPU'), NULL,
          'a serializable transaction reads every page on the CPU');
RESET default_transaction_isolation;
SELECT is(pg_temp.explained('SELECT id FROM gp ORDER BY score DESC LIMIT 10', 'Data Path'),
          'heap pages read on the GPU in place', 'EXPLAIN names the data path');

SELECT * FROM finish();
DROP TABLE gp, gp_empty, gp_unlogged, gp_fresh, queries;
