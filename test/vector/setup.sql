--
-- Set-up of test/vector/run: tables of pgvector's types and the check that
-- runs a nearest-neighbour query with gputopk and without.  Needs pgvector
-- (CREATE EXTENSION vector) and the seed in :seed.
--
SELECT setseed(:seed);
-- 20,000 vectors of 16 dimensions, one decimal (so distances tie), NULL
-- vectors, zero vectors (NaN under cosine) and duplicates; halfvec copies;
-- columns of other kinds for the compiled filters
CREATE TABLE items (id int PRIMARY KEY, cat int, emb vector(16), h halfvec(16),
                    tag text, flag boolean, price float8, day date);
INSERT INTO items (id, cat, emb)
SELECT i, i % 100,
       CASE WHEN i % 53 = 0 THEN NULL
            WHEN i % 61 = 0 THEN array_fill(0::real, ARRAY[16])::vector
            WHEN i % 67 = 0 THEN array_fill(0.5::real, ARRAY[16])::vector
            ELSE (SELECT array_agg(round((random() * 2 - 1)::numeric, 1)::real)
                    FROM generate_series(1, 16 + 0 * i))::vector END
  FROM generate_series(1, 20000) i;
UPDATE items SET h = emb::halfvec, tag = chr(97 + id % 10), flag = id % 3 = 0,
                 price = CASE WHEN id % 41 = 0 THEN NULL ELSE (id % 997) / 10.0 END,
                 day = date '2026-01-01' + id % 365;
-- vectors of one dimension (ties by the thousand), of 768 and of 2,000,
-- those stored out of line as pgvector leaves them
CREATE TABLE dim1 (id int PRIMARY KEY, emb vector(1));
INSERT INTO dim1 SELECT i, ARRAY[(i % 97 - 48)::real]::vector FROM generate_series(1, 5000) i;
CREATE TABLE dim768 (id int PRIMARY KEY, emb vector(768));
INSERT INTO dim768
SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 768 + 0 * i))::vector
  FROM generate_series(1, 2000) i;
CREATE TABLE dim2000 (id int PRIMARY KEY, emb vector(2000));
INSERT INTO dim2000
SELECT i, (SELECT array_agg(random()::real) FROM generate_series(1, 2000 + 0 * i))::vector
  FROM generate_series(1, 1000) i;
-- a column without a dimension, a few of its vectors of another one than
-- the queries' (pgvector raises an error for them)
CREATE TABLE mixed (id int PRIMARY KEY, emb vector);
INSERT INTO mixed
SELECT i, (SELECT array_agg(round((random() * 2 - 1)::numeric, 1)::real)
             FROM generate_series(1, CASE WHEN i % 997 = 0 THEN 5 ELSE 4 END + 0 * i))::vector
  FROM generate_series(1, 5000) i;
-- column indexes holding the vectors beside the filters' columns; GpuTopK
-- reads them where they cost less than the table
CREATE INDEX items_ci ON items USING gputopk (emb, h, cat, tag, flag, price, day);
CREATE INDEX dim1_ci ON dim1 USING gputopk (emb);
CREATE INDEX dim768_ci ON dim768 USING gputopk (emb);
CREATE INDEX dim2000_ci ON dim2000 USING gputopk (emb);
VACUUM (FREEZE, ANALYZE) items, dim1, dim768, dim2000, mixed;

CREATE TABLE vector_checks (q text, used boolean, via_index boolean, same boolean);

-- q's rows with gputopk on and off, in order or (sorted, where ties may
-- come in any order) as sets, or the error it raised; whether a gputopk
-- node ran, and whether it read a column index (then the rows it returns
-- reading the table instead must be the same too)
CREATE FUNCTION answer_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  answer text;
BEGIN
  EXECUTE q INTO answer;
  RETURN answer;
EXCEPTION WHEN OTHERS THEN
  RETURN 'ERROR: ' || SQLERRM;
END $$;
CREATE FUNCTION vector_check(q text, ordered boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  agg text := format('SELECT string_agg(t::text, %L%s) FROM (%s) t', E'\n',
                     CASE WHEN ordered THEN '' ELSE ' ORDER BY t::text' END, q);
  ours text;
  heap text;
  plain text;
  used boolean := false;
  via_index boolean := false;
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    used := used OR line LIKE '%GpuTopK%';
    via_index := via_index OR line LIKE '%Column Index:%';
  END LOOP;
  ours := answer_of(agg);
  heap := ours;
  IF via_index THEN
    PERFORM set_config('gputopk.enable_column_index', 'off', true);
    heap := answer_of(agg);
    PERFORM set_config('gputopk.enable_column_index', 'on', true);
  END IF;
  PERFORM set_config('gputopk.enabled', 'off', true);
  plain := answer_of(agg);
  PERFORM set_config('gputopk.enabled', 'on', true);
  INSERT INTO vector_checks
    VALUES (q, used, via_index, ours IS NOT DISTINCT FROM plain AND heap IS NOT DISTINCT FROM plain);
END $$;

-- a random vector of n dimensions, as a literal
CREATE FUNCTION random_vector(n int) RETURNS text LANGUAGE sql AS $$
  SELECT '[' || string_agg(round((random() * 2 - 1)::numeric, 1)::text, ',') || ']'
    FROM generate_series(1, n)
$$;
