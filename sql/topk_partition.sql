--
-- GpuTopK over partitioned and inheritance tables: a GpuTopK scan per
-- partition (or child) under a Merge Append, compared with plain PostgreSQL
-- (needs topk_check and tk from topk_scan)
--
SET gputopk.min_table_rows = 1000;
CREATE TABLE tk_p (id int, g int4, i8 int8, f8 float8, tz timestamptz, wide text)
  PARTITION BY RANGE (g);
CREATE TABLE tk_p0 PARTITION OF tk_p FOR VALUES FROM (0) TO (3);
-- a partition that is itself partitioned, one of its leaves with its columns in another order
CREATE TABLE tk_p1 PARTITION OF tk_p FOR VALUES FROM (3) TO (6) PARTITION BY LIST ((id % 2));
CREATE TABLE tk_p1a PARTITION OF tk_p1 FOR VALUES IN (0);
CREATE TABLE tk_p1b (wide text, tz timestamptz, f8 float8, i8 int8, g int4, id int);
ALTER TABLE tk_p1 ATTACH PARTITION tk_p1b FOR VALUES IN (1);
-- a small partition, which keeps its native plan
CREATE TABLE tk_p2 PARTITION OF tk_p FOR VALUES FROM (6) TO (7);
CREATE TABLE tk_p3 PARTITION OF tk_p DEFAULT;
INSERT INTO tk_p SELECT id, g, i8, f8, tz, wide FROM tk WHERE g <> 6 OR id % 50 = 0;
ANALYZE tk_p;
-- inheritance: the parent's own rows and a child's with an extra column
CREATE TABLE tk_i (id int, f4 float4, d date);
CREATE TABLE tk_ic (extra text) INHERITS (tk_i);
INSERT INTO tk_i SELECT id, f4, d FROM tk WHERE id % 2 = 0;
INSERT INTO tk_ic SELECT id, f4, d, 'x' FROM tk WHERE id % 2 = 1;
ANALYZE tk_i;
ANALYZE tk_ic;

SET gputopk.device = cpu;
EXPLAIN (COSTS OFF) SELECT id, f8 FROM tk_p WHERE g > 1 ORDER BY f8 DESC LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM tk_p WHERE g >= 3 ORDER BY i8 / 2, id LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM tk_i ORDER BY f4 NULLS FIRST, id LIMIT 5 OFFSET 3;
RESET gputopk.device;

CREATE TEMP TABLE checks (q text, result text);
DO $$
DECLARE
  q text;
BEGIN
  FOREACH q IN ARRAY ARRAY[
      'SELECT id, f8 FROM tk_p ORDER BY f8 DESC, id LIMIT 10',
      'SELECT f8 FROM tk_p ORDER BY f8 NULLS FIRST LIMIT 25 OFFSET 40',
      'SELECT * FROM tk_p WHERE g BETWEEN 2 AND 5 ORDER BY tz DESC NULLS LAST, id LIMIT 7',
      'SELECT id, length(wide) FROM tk_p WHERE id % 3 = 0 ORDER BY i8, id LIMIT 12',
      'SELECT i8 / 2 FROM tk_p ORDER BY i8 / 2 DESC FETCH FIRST 4 ROWS WITH TIES',
      'SELECT g, f8 FROM tk_p ORDER BY g DESC, f8 LIMIT 30000',
      'SELECT id FROM tk_p WHERE g = 4 ORDER BY f8, id LIMIT 3',
      'SELECT id, f4 FROM tk_i ORDER BY f4 DESC, id LIMIT 10',
      'SELECT f4 FROM tk_i WHERE d > ''2010-01-01'' ORDER BY f4 LIMIT 20 OFFSET 5',
      'SELECT d, id FROM tk_i ORDER BY d NULLS FIRST, id FETCH FIRST 3 ROWS WITH TIES',
      'SELECT * FROM tk_ic ORDER BY f4, id LIMIT 5'] LOOP
    INSERT INTO checks VALUES (q, topk_check(q));
  END LOOP;
END $$;
SELECT result, q FROM checks ORDER BY q;

-- a parameter for the bound, in a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE ptop(int8) AS SELECT id, f8 FROM tk_p WHERE g <> 1 ORDER BY f8 DESC, id LIMIT $1;
EXECUTE ptop(3);
EXECUTE ptop(0);
DEALLOCATE ptop;
RESET plan_cache_mode;

DROP TABLE tk_p, tk_i, tk_ic;
RESET gputopk.min_table_rows;
