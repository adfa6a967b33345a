#!/usr/bin/env python3
"""bench/duckdb_queries.py: the DuckDB column of bench/index_bench and bench/scan_bench.

DuckDB (in memory, as many threads as os.cpu_count()) on the data shape of
bench/bench_lib.sh's load_table, timing the queries that a benchmark
passes (its DUCKDB_QUERIES, the DuckDB spelling of its QUERIES: the one
source of each dialect's text is the benchmark).  Installs nothing: duckdb is
imported from a wheel (a zip, unpacked into a temporary directory) in the
directory DUCKDB_WHEELS (fetched by bench/fetch_duckdb), the one
for this python's CPython version and machine; without that variable, an
installed duckdb.  Python's standard library and duckdb only.

Usage:
  duckdb_queries.py --probe
      the wheel that would be used (stdout), status 1 when none
  duckdb_queries.py ROWS QUERY...
      table t of ROWS rows generated in DuckDB (or the tables of
      DUCKDB_GENERATE, SQL with {rows} for ROWS), then each QUERY once
      untimed and DUCKDB_REPS times (default 3), fetchall() of all its
      rows; stdout: "VERSION v", "THREADS n", "GENERATE seconds" and
      "Q<n> MEDIAN_MS BEST_MS" (n from 1, in the order of the arguments)
  duckdb_queries.py --check DIR QUERY...
      table t from DIR/t.csv (PostgreSQL's COPY ... CSV HEADER of a small
      table of the same shape), each QUERY against it compared with
      PostgreSQL's answer DIR/q<n>.csv (CSV HEADER, n from 1); stdout:
      "CHECK Q<n> same|DIFFERENT <detail>"
Progress and notes go to stderr.
"""

import csv
import os
import platform
import re
import shutil
import statistics
import struct
import sys
import tempfile
import time
import zipfile

WHEEL_RE = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)


def note(*args):
    print("duckdb_queries:", *args, file=sys.stderr, flush=True)


def version_key(v):
    return [int(p) if p.isdigit() else -1 for p in re.split(r"[.+-]", v)]


def wheels(directory, project):
    """(name match, path) of each wheel of project in directory."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = WHEEL_RE.match(name)
        if m and m.group("name").lower() == project:
            yield m, os.path.join(directory, name)


def find_pure_wheel(directory, project):
    """The newest pure-Python (py3-none-any) wheel of project in directory, or None."""
    best = None
    for m, path in wheels(directory, project):
        if m.group("plat") != "any" or "py3" not in m.group("py").split(".") or m.group("abi") != "none":
            continue
        key = version_key(m.group("version"))
        if best is None or key > best[0]:
            best = (key, path)
    return best[1] if best else None


def find_wheel(directory):
    """The duckdb wheel in directory for this python and machine, or None:
    an exact cpXY build before an abi3 one for cpXY or older, the newest
    version first."""
    here = (sys.version_info.major, sys.version_info.minor)
    cp = "cp%d%d" % here
    arch = platform.machine()
    best = None
    for m, path in wheels(directory, "duckdb"):
        plats = m.group("plat").split(".")
        if not any(p.endswith(arch) and "linux" in p for p in plats):
            continue
        pys = m.group("py").split(".")
        abis = m.group("abi").split(".")
        if cp in pys and cp in abis:
            rank = 2
        elif "abi3" in abis and any(
            p.startswith("cp3") and p[3:].isdigit() and (3, int(p[3:])) <= here for p in pys
        ):
            rank = 1
        else:
            continue
        key = (version_key(m.group("version")), rank)
        if best is None or key > best[0]:
            best = (key, path)
    return best[1] if best else None


def import_duckdb():
    directory = os.environ.get("DUCKDB_WHEELS")
    if not directory:
        import duckdb  # an installed one

        return duckdb
    wheel = find_wheel(directory)
    if wheel is None:
        sys.exit(
            "duckdb_queries: no duckdb wheel for CPython %d.%d on %s in %s (bench/fetch_duckdb)"
            % (sys.version_info.major, sys.version_info.minor, platform.machine(), directory)
        )
    unpacked = tempfile.mkdtemp(prefix="duckdb_queries.")
    # the extension module stays mapped once loaded: the files may go at exit
    import atexit

    atexit.register(shutil.rmtree, unpacked, True)
    # pytz: duckdb imports it to return TIMESTAMPTZ values (Q1 and Q2's ts)
    pytz = find_pure_wheel(directory, "pytz")
    for w in [wheel] + ([pytz] if pytz else []):
        with zipfile.ZipFile(w) as z:
            z.extractall(unpacked)
    sys.path.insert(0, unpacked)
    import duckdb

    note("duckdb %s from %s%s" % (duckdb.__version__, os.path.basename(wheel),
                                   ", " + os.path.basename(pytz) if pytz else
                                   " (no pytz wheel: TIMESTAMPTZ results need an installed pytz)"))
    return duckdb


# bench_lib.sh's load_table in DuckDB: id 1..ROWS in order, a and b random
# int4 in [-1e9, 1e9], score random float4 in [0, 1) with 1% NULL, ts within
# the last 365 days, pad the id left-padded with '*' to 20 characters, lang
# en 40%, ja 20%, es, pt, ko and fr 10% each.
GENERATE = """
CREATE TABLE t AS
SELECT id,
       (random() * 2e9 - 1e9)::INTEGER AS a,
       (random() * 2e9 - 1e9)::INTEGER AS b,
       CASE WHEN random() < 0.01 THEN NULL ELSE random()::REAL END AS score,
       now() - to_microseconds((random() * 365 * 86400e6)::BIGINT) AS ts,
       lpad(id::VARCHAR, 20, '*') AS pad,
       (['en', 'en', 'en', 'en', 'ja', 'ja', 'es', 'pt', 'ko', 'fr'])[floor(random() * 10)::INTEGER + 1] AS lang
  FROM range(1, {rows} + 1) r(id)
"""

COLUMNS = "{'id': 'BIGINT', 'a': 'INTEGER', 'b': 'INTEGER', 'score': 'REAL', 'ts': 'TIMESTAMPTZ', 'pad': 'VARCHAR', 'lang': 'VARCHAR'}"


def connect(duckdb):
    threads = os.cpu_count() or 1
    con = duckdb.connect(":memory:", config={"threads": threads})
    print("VERSION", duckdb.__version__)
    print("THREADS", threads, flush=True)
    return con


def bench(rows, queries):
    duckdb = import_duckdb()
    reps = int(os.environ.get("DUCKDB_REPS", "3"))
    con = connect(duckdb)
    note("generating %d rows" % rows)
    started = time.perf_counter()
    con.execute(os.environ.get("DUCKDB_GENERATE", GENERATE).format(rows=rows))
    generate_s = time.perf_counter() - started
    print("GENERATE %.1f" % generate_s, flush=True)
    note("generated in %.1f s" % generate_s)
    for n, query in enumerate(queries, 1):
        con.execute(query).fetchall()  # untimed
        times = []
        for _ in range(reps):
            started = time.perf_counter()
            result = con.execute(query).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        note("Q%d: %d rows, ms %s: %s" % (n, len(result), " ".join("%.1f" % t for t in times), query))
        print("Q%d %.1f %.1f" % (n, statistics.median(times), min(times)), flush=True)


def float4(text):
    """A float4 as PostgreSQL's text gives it, as DuckDB's REAL does in Python."""
    return None if text in ("", None) else struct.unpack("f", struct.pack("f", float(text)))[0]


def show(scores, k=3):
    nulls = 0
    while nulls < len(scores) and scores[nulls] is None:
        nulls += 1
    shown = ["%.7g" % s if s is not None else "NULL" for s in scores[nulls:nulls + k]]
    return ", then ".join(([("NULL x%d" % nulls)] if nulls else []) + ([", ".join(shown)] if shown else []))


def compare(pg_header, pg_rows, dk_columns, dk_rows):
    """(same, detail): row counts; with a score column, the score sequence
    (the ORDER BY key: DESC, NULLs first) and the ids outside the ties at
    the cut; without one, the id sequence."""
    if len(pg_rows) != len(dk_rows):
        return False, "%d rows in PostgreSQL, %d in DuckDB" % (len(pg_rows), len(dk_rows))
    pg_ids = [int(r[pg_header.index("id")]) for r in pg_rows]
    dk_ids = [r[dk_columns.index("id")] for r in dk_rows]
    if "score" not in pg_header:
        same = pg_ids == dk_ids
        return same, "%d rows, ids %s" % (len(pg_rows), "in the same order" if same else "differ")
    pg_scores = [float4(r[pg_header.index("score")]) for r in pg_rows]
    dk_scores = [r[dk_columns.index("score")] for r in dk_rows]
    detail = "%d rows, scores %s" % (len(pg_rows), show(pg_scores))
    if pg_scores != dk_scores:
        return False, detail + " in PostgreSQL, %s in DuckDB" % show(dk_scores)
    cut = pg_scores[-1] if pg_scores else None
    if {i for i, s in zip(pg_ids, pg_scores) if s != cut} != {i for i, s in zip(dk_ids, dk_scores) if s != cut}:
        return False, detail + "; the same scores, other rows"
    return True, detail


def check(directory, queries):
    duckdb = import_duckdb()
    con = connect(duckdb)
    con.execute(
        "CREATE TABLE t AS SELECT * FROM read_csv(?, header = true, nullstr = '', columns = %s)" % COLUMNS,
        [os.path.join(directory, "t.csv")],
    )
    different = 0
    for n, query in enumerate(queries, 1):
        with open(os.path.join(directory, "q%d.csv" % n), newline="") as f:
            pg = list(csv.reader(f))
        cur = con.execute(query)
        dk_columns = [d[0] for d in cur.description]
        dk_rows = cur.fetchall()
        same, detail = compare(pg[0], pg[1:], dk_columns, dk_rows)
        different += not same
        print("CHECK Q%d %s %s" % (n, "same" if same else "DIFFERENT", detail), flush=True)
        if not same:
            note("Q%d: DuckDB's answer differs from PostgreSQL's: %s (%s)" % (n, detail, query))
    if different:
        note("%d of %d queries differ from PostgreSQL's answers" % (different, len(queries)))


def main(argv):
    if argv[:1] == ["--probe"]:
        wheel = find_wheel(os.environ.get("DUCKDB_WHEELS", ""))
        if wheel:
            print(wheel)
        return 0 if wheel else 1
    if argv[:1] == ["--check"] and len(argv) >= 3:
        check(argv[1], argv[2:])
        return 0
    if len(argv) >= 2 and argv[0].isdigit():
        bench(int(argv[0]), argv[1:])
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
