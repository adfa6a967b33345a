# bench/bench_lib.sh: what the benchmarks that run a PostgreSQL cluster
# share (sourced after test/cluster.sh): tools, a cluster with the
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
