# bench/bench_lib.sh: what the benchmarks that run a PostgreSQL cluster
# share (sourced after test/lib/cluster.sh): tools, a cluster with the
# benchmark's settings, timing and report helpers, and the exit handler.
# The caller sets LOG (the log file), SHARED_BUFFERS, LOADERS (sessions that
# load data concurrently) and WORK (a scratch directory).

now_s() { date +%s.%N; }

since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }

# log: stdin appended to the log
log() { cat >>"$LOG"; }

# What is needed: the server, its build files, make and a compiler.  Like
# ensure_packages, but pg_prove (only for the tests) is not demanded where
# the PostgreSQL is not Debian's: the GPU machine has no network to get it.
prepare_tools() {
	if pg_is_debian_default || command -v pg_prove >/dev/null; then
		ensure_packages
		return
	fi
	PGXS=$("$PG_CONFIG" --pgxs 2>/dev/null) && [ -f "$PGXS" ] ||
		die "PostgreSQL server development files not found for PG_CONFIG=$PG_CONFIG"
	command -v make >/dev/null && command -v gcc >/dev/null || die "make and gcc are needed"
	PGBIN=$("$PG_CONFIG" --bindir)
	export PATH="$PGBIN:$PATH"
}

# A cluster with gputopk preloaded and the benchmark's settings (restart:
# shared_buffers, wal_level and the worker limits need one).
start_bench_cluster() {
	cluster_start preload
	# cluster_start's trap stops the cluster; on_exit also reports a failure
	trap on_exit EXIT
	local max_connections=$((LOADERS + 10))
	[ "$max_connections" -ge 20 ] || max_connections=20
	psql_q <<-EOF
		ALTER SYSTEM SET shared_buffers = '$SHARED_BUFFERS';
		ALTER SYSTEM SET max_parallel_workers = 16;
		ALTER SYSTEM SET max_worker_processes = 20;
		ALTER SYSTEM SET jit = off;
		ALTER SYSTEM SET max_connections = $max_connections;
		ALTER SYSTEM SET wal_level = ${BENCH_WAL_LEVEL:-minimal};
		ALTER SYSTEM SET max_wal_senders = 0;
		ALTER SYSTEM SET max_wal_size = '16GB';
	EOF
	cluster_restart preload
	psql_q -c 'CREATE EXTENSION gputopk' -c 'CREATE EXTENSION pg_prewarm' \
		-c 'CREATE EXTENSION pg_buffercache'
}

# load_table TABLE ROWS: the benchmark table (id int8 1..ROWS in ascending
# physical order, a and b random int4, score random float4 with 1% NULL, ts
# within the last 365 days, pad text of 20 characters, lang a tweet's
# language code: en 40%, ja 20%, es, pt, ko and fr 10% each; about 87 bytes
# a row, 88 aligned as before lang),
# frozen, analyzed and warm in shared_buffers.  LOADERS sessions write binary
# COPY files of consecutive id ranges concurrently, then one session COPYs
# them in order, FREEZE, into the table created in the same transaction.
# Sets LOAD_GENERATE_S, LOAD_COPY_S, LOAD_VACUUM_S and LOAD_PREWARM_S.
load_table() {
	local table=$1 rows=$2 dir=$CLUSTER_DIR/load started pids=() i lo hi copies=""
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown "$CLUSTER_USER:" "$dir"

	started=$(now_s)
	for ((i = 0; i < LOADERS; i++)); do
		lo=$((rows * i / LOADERS + 1))
		hi=$((rows * (i + 1) / LOADERS))
		psql_q -c "COPY (
			SELECT g AS id,
			       (random() * 2e9 - 1e9)::int4 AS a,
			       (random() * 2e9 - 1e9)::int4 AS b,
			       CASE WHEN random() < 0.01 THEN NULL ELSE random()::float4 END AS score,
			       now() - random() * interval '365 days' AS ts,
			       lpad(g::text, 20, '*') AS pad,
			       (ARRAY['en', 'en', 'en', 'en', 'ja', 'ja', 'es', 'pt', 'ko', 'fr'])[floor(random() * 10)::int + 1] AS lang
			  FROM generate_series(${lo}::int8, ${hi}::int8) g
			) TO '$dir/chunk_$i' (FORMAT binary)" &
		pids+=($!)
		copies+="COPY $table FROM '$dir/chunk_$i' (FORMAT binary, FREEZE);"$'\n'
	done
	for i in "${pids[@]}"; do
		wait "$i" || die "a data generator failed"
	done
	LOAD_GENERATE_S=$(since "$started")

	started=$(now_s)
	psql_q <<-EOF
		BEGIN;
		CREATE TABLE $table (id int8, a int4, b int4, score float4, ts timestamptz, pad text, lang text);
		$copies
		COMMIT;
	EOF
	rm -rf "$dir"
	LOAD_COPY_S=$(since "$started")

	started=$(now_s)
	psql_q -c "VACUUM (FREEZE, ANALYZE) $table"
	LOAD_VACUUM_S=$(since "$started")

	started=$(now_s)
	psql_q -c "SELECT pg_prewarm('$table')" >/dev/null
	LOAD_PREWARM_S=$(since "$started")
}

# pgbench_tps QUERY PGOPTIONS CLIENTS SECONDS: "TPS LATENCY_MS" of QUERY run
# by CLIENTS pgbench clients for SECONDS with PGOPTIONS; its output to the log.
pgbench_tps() {
	local script=$WORK/pgbench.sql out
	echo "$1;" >"$script"
	echo "== pgbench, $3 clients, PGOPTIONS='$2'" | log
	out=$(PGOPTIONS="$2" pgbench -n -f "$script" -c "$3" -j "$3" -T "$4" 2>&1) ||
		say "pgbench failed (PGOPTIONS='$2'; see $LOG)" >&2
	echo "$out" | log
	echo "$out" | awk '/^latency average/ { l = $4 } /^tps = / { t = $3 }
		END { if (t == "") print "- -"; else printf "%.1f %.2f\n", t, l }'
}

# sql VALUE_QUERY: one value, unaligned.
sql() { psql_q -At -c "$1"; }

# stats: median and best of the numbers on stdin, "MEDIAN BEST".
stats() {
	sort -g | awk '{ v[NR] = $1 }
		END {
			if (NR == 0) { print "- -"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f %.1f\n", m, v[1]
		}'
}

# machine: the GPUs, cores, memory, and the huge pages the kernel has for
# shared memory (PostgreSQL's huge_pages = try takes them when there are
# enough for its shared memory: processes that start, as parallel workers
# do, then map shared_buffers in 2 MB pages instead of faulting in 4 kB ones)
machine() {
	local gpu cpu mem huge
	gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
		awk '{ $1 = $1 "x"; print }' | paste -sd, -) || true
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
	huge=$(awk '/^HugePages_Total/ { n = $2 } /^Hugepagesize/ { s = $2 }
		END { printf "%d huge pages of %d kB", n, s }' /proc/meminfo)
	echo "${gpu:-no GPU (nvidia-smi absent or silent)}; $(nproc) cores ($cpu); $mem memory; $huge"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1fx", a / b; else print "-" }'; }

# On exit: on failure say where to look; stop the cluster (cluster_stop keeps
# its directory and shows the server log when the status is not 0).
on_exit() {
	local status=$?
	if [ "$status" != 0 ]; then
		tail -n 20 "$LOG" 2>/dev/null || true
		say "failed (status $status); log: $LOG; work files: ${WORK:-}"
	fi
	(exit "$status")
	cluster_stop
}

# DuckDB on the same data shape (bench/duckdb_queries.py), timing a
# benchmark's DUCKDB_QUERIES (DuckDB's spelling of its QUERIES; QUERY_NAMES
# name both).  DUCKDB_WHEELS: the directory of DuckDB's wheel (bench/
# fetch_duckdb), "" for .gpu/wheels where it has one, none for no DuckDB.

# time_config INDEX: configuration INDEX (CONFIG_SETTINGS, named in
# CONFIG_NAMES) over each of QUERIES (named in QUERY_NAMES): once untimed,
# its rows kept in $WORK/answer_INDEX_QUERY (unaligned, |-separated), REPS
# times timed (psql's \timing), then under EXPLAIN ANALYZE, marked "==
# CONFIG QUERY" in $LOG, where psql's output goes; prints "QUERY MEDIAN
# BEST" lines.
time_config() {
	local c=$1 q r
	{
		echo "${CONFIG_SETTINGS[$c]}"
		for q in "${!QUERIES[@]}"; do
			echo '\pset format unaligned'
			echo '\pset tuples_only on'
			echo "\\o $WORK/answer_${c}_$q"
			echo '\timing on'
			echo "\\echo @@ $q"
			echo "${QUERIES[$q]};"
			echo '\o /dev/null'
			for ((r = 1; r <= REPS; r++)); do
				echo "${QUERIES[$q]};"
			done
			echo '\pset format aligned'
			echo '\pset tuples_only off'
			echo '\timing off'
			echo '\o'
			echo "\\echo == ${CONFIG_NAMES[$c]} ${QUERY_NAMES[$q]}"
			echo "EXPLAIN (ANALYZE) ${QUERIES[$q]};"
		done
	} | psql_q -f - 2>&1 | tee -a "$LOG" | awk '
		$1 == "@@" { query = $2; n = 0; next }
		$1 == "Time:" { if (n++ > 0) print query, $2 }' >"$WORK/times_$c"
	for q in "${!QUERIES[@]}"; do
		echo "$q $(awk -v q="$q" '$1 == q { print $2 }' "$WORK/times_$c" | stats)"
	done
}

# duckdb_available VARIABLE: whether bench/duckdb_queries.py has a duckdb to
# run (sets DUCKDB_WHEELS, and DUCKDB_WHY when not); dies where VARIABLE, the
# caller's setting, named a directory without a wheel for this python3,
# before the long load.
duckdb_available() {
	local variable=$1 explicit=yes
	if [ "$DUCKDB_WHEELS" = none ]; then
		DUCKDB_WHY="$variable=none"
		return 1
	fi
	[ -n "$DUCKDB_WHEELS" ] || { DUCKDB_WHEELS=$PWD/.gpu/wheels; explicit=no; }
	if ! command -v python3 >/dev/null; then
		DUCKDB_WHY="no python3"
	elif DUCKDB_WHEELS=$DUCKDB_WHEELS python3 bench/duckdb_queries.py --probe >/dev/null; then
		return 0
	else
		DUCKDB_WHY="no DuckDB wheel for $(python3 --version 2>&1) in $DUCKDB_WHEELS (bench/fetch_duckdb)"
	fi
	[ "$explicit" = no ] || die "$variable: $DUCKDB_WHY"
	return 1
}

# duckdb_run ROWS REPS SETTINGS CHECK_ROWS: DuckDB's answers on the first
# CHECK_ROWS rows of t next to PostgreSQL's under SETTINGS (DUCKDB_CHECKS:
# "CHECK Q<n> same|DIFFERENT DETAIL" lines), then its timings on ROWS rows
# ($WORK/duckdb: "VERSION v", "THREADS n", "GENERATE s", "Q<n> MEDIAN BEST");
# false, with DUCKDB_WHY, when it gave none.
duckdb_run() {
	local rows=$1 reps=$2 settings=$3 check_rows=$4 dir=$WORK/check q
	say "DuckDB: checking its answers on $check_rows rows of t"
	mkdir -p "$dir"
	psql_q -c 'SET client_min_messages = warning' \
		-c 'DROP SCHEMA IF EXISTS duckdb_check CASCADE' -c 'CREATE SCHEMA duckdb_check' \
		-c "CREATE TABLE duckdb_check.t AS SELECT * FROM public.t WHERE id <= $check_rows" \
		-c "\\copy duckdb_check.t TO '$dir/t.csv' (FORMAT csv, HEADER)" >/dev/null
	for q in "${!QUERIES[@]}"; do
		psql_q -c "$settings SET search_path = duckdb_check;" \
			-c "\\copy (${QUERIES[$q]}) TO '$dir/q$((q + 1)).csv' (FORMAT csv, HEADER)" >/dev/null
	done
	psql_q -c 'SET client_min_messages = warning' -c 'DROP SCHEMA duckdb_check CASCADE' >/dev/null
	DUCKDB_CHECKS=$(DUCKDB_WHEELS=$DUCKDB_WHEELS python3 bench/duckdb_queries.py --check "$dir" \
		"${DUCKDB_QUERIES[@]}" 2> >(log) | tee -a "$LOG" | grep '^CHECK ') ||
		say "DuckDB's check failed (see $LOG)" >&2
	! grep -q DIFFERENT <<<"$DUCKDB_CHECKS" ||
		say "note: DuckDB's answers differ from PostgreSQL's: $(grep DIFFERENT <<<"$DUCKDB_CHECKS" | tr '\n' ' ')"
	say "DuckDB: $rows rows, timing"
	DUCKDB_WHEELS=$DUCKDB_WHEELS DUCKDB_REPS=$reps python3 bench/duckdb_queries.py "$rows" \
		"${DUCKDB_QUERIES[@]}" 2> >(log) | tee -a "$LOG" >"$WORK/duckdb" ||
		{ say "DuckDB failed (see $LOG)"; DUCKDB_WHY="failed (see the log)"; }
	grep -q '^Q1 ' "$WORK/duckdb" && return 0
	DUCKDB_WHY=${DUCKDB_WHY:-"no timings from bench/duckdb_queries.py (see the log)"}
	return 1
}

# duckdb_label: "DuckDB VERSION, N threads", from $WORK/duckdb.
duckdb_label() {
	echo "DuckDB $(awk '$1 == "VERSION" { print $2 }' "$WORK/duckdb"), $(awk '$1 == "THREADS" { print $2 }' "$WORK/duckdb") threads"
}

# duckdb_ms QUERYINDEX: "MEDIAN BEST" ms of DUCKDB_QUERIES[QUERYINDEX], or nothing.
duckdb_ms() { awk -v q="Q$(($1 + 1))" '$1 == q { print $2, $3 }' "$WORK/duckdb" 2>/dev/null; }

# duckdb_notes ROWS REPS CHECK_ROWS: the report's paragraph on DuckDB: how it
# ran, its SQL and its answers' check; or why it did not run.
duckdb_notes() {
	local rows=$1 reps=$2 check_rows=$3 q
	if [ -z "${DUCKDB_WHY:-}" ]; then
		echo "DuckDB: bench/duckdb_queries.py, in memory, $(awk '$1 == "THREADS" { print $2 }' "$WORK/duckdb") threads, a table t of the same shape and $rows rows generated in DuckDB (its own random values) in $(awk '$1 == "GENERATE" { print $2 }' "$WORK/duckdb") s; each query once untimed, then the median of $reps runs of execute and fetchall() (all rows into Python). Its SQL:"
		echo
		for q in "${!DUCKDB_QUERIES[@]}"; do
			echo "- ${QUERY_NAMES[$q]}: \`${DUCKDB_QUERIES[$q]}\`"
		done
		echo
		echo "DuckDB's answers next to PostgreSQL's (gputopk.enabled = off) on the first $check_rows rows of t (row counts; with a score column the scores in order and the ids outside the ties at the cut, else the ids in order):"
		echo
		if [ -n "${DUCKDB_CHECKS:-}" ]; then
			# "CHECK Q<n> ..." of the n-th query, by its name
			while read -r _ n rest; do
				echo "- ${QUERY_NAMES[$((${n#Q} - 1))]} $rest"
			done <<<"$DUCKDB_CHECKS"
		else
			echo "- the check did not run (see the log)"
		fi
		! grep -q DIFFERENT <<<"${DUCKDB_CHECKS:-}" || { echo; echo "**Note: DuckDB's answers differ from PostgreSQL's.**"; }
	else
		echo "DuckDB: not run: $DUCKDB_WHY."
	fi
}
