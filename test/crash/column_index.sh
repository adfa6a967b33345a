# test/crash/column_index.sh: the column index after crashes (sourced by
# test/run, after test/lib/cluster.sh, with the cluster running).
#
# A backend killed with SIGKILL in the middle of a bulk insert (the server
# restarts every backend and replays WAL), then an immediate shutdown while
# a session commits inserts one after the other: after each, the restarted
# server's index must match its table (gputopk_index_check) and top-k
# queries over the index must answer as plain PostgreSQL does.

crash_psql() { psql -X -q -v ON_ERROR_STOP=1 -d gputopk_crash "$@"; }

# until the server accepts connections again, after a crash
wait_for_server() {
	local i
	for ((i = 0; i < 300; i++)); do
		psql -X -q -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "the server did not come back after the crash"
}

# the index matches the table, and queries over it answer as without gputopk
check_after_crash() {
	local what=$1 result
	result=$(crash_psql -At <<-'EOF'
		SELECT gputopk_index_check('cr_ci') = (SELECT count(*) FROM cr);
		CREATE TEMP TABLE answers (same bool, indexed bool);
		DO $$
		DECLARE
		  q text;
		  line text;
		  indexed bool;
		  ours text;
		  plain text;
		BEGIN
		  FOREACH q IN ARRAY ARRAY[
		    'SELECT id, v FROM cr ORDER BY v DESC, id LIMIT 20',
		    'SELECT id, v FROM cr WHERE g = 3 ORDER BY v, id LIMIT 50',
		    'SELECT id, g FROM cr WHERE v > 100 ORDER BY g DESC, id LIMIT 5'] LOOP
		    indexed := false;
		    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		      indexed := indexed OR line LIKE '%Column Index:%';
		    END LOOP;
		    EXECUTE format('SELECT array_agg(r::text)::text FROM (%s) r', q) INTO ours;
		    SET LOCAL gputopk.enabled = off;
		    EXECUTE format('SELECT array_agg(r::text)::text FROM (%s) r', q) INTO plain;
		    SET LOCAL gputopk.enabled = on;
		    INSERT INTO answers VALUES (ours IS NOT DISTINCT FROM plain, indexed);
		  END LOOP;
		END $$;
		SELECT bool_and(same) AND bool_and(indexed) FROM answers;
	EOF
	)
	[ "$result" = "$(printf 't\nt')" ] ||
		die "column index after $what: index check and answers: $result"
	say "column index after $what: matches its table, queries answer as PostgreSQL"
}

index_crash_test() {
	local pid
	PGOPTIONS='-c client_min_messages=warning' psql_q -c 'DROP DATABASE IF EXISTS gputopk_crash' \
		-c 'CREATE DATABASE gputopk_crash'
	crash_psql <<-'EOF'
		CREATE EXTENSION gputopk;
		CREATE TABLE cr (id int, v float8, g int) WITH (autovacuum_enabled = off);
		INSERT INTO cr SELECT i, (i * 7919 % 100003) / 100.0, i % 7 FROM generate_series(1, 50000) i;
		CREATE INDEX cr_ci ON cr USING gputopk (v, g);
		ANALYZE cr;
		ALTER DATABASE gputopk_crash SET gputopk.device = cpu;
		ALTER DATABASE gputopk_crash SET gputopk.min_table_rows = 1000;
		CHECKPOINT;
	EOF

	# a bulk insert killed half-way: its rows are aborted, their entries dead
	crash_psql -c "SET application_name = 'crash_victim'" \
		-c 'INSERT INTO cr SELECT i, random() * 2000, i % 7 FROM generate_series(50001, 3000000) i' \
		>/dev/null 2>&1 &
	for ((i = 0; i < 100; i++)); do
		pid=$(psql -X -At -d postgres -c \
			"SELECT pid FROM pg_stat_activity WHERE application_name = 'crash_victim' AND state = 'active'")
		[ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ] || die "the bulk insert did not start"
	sleep 1
	kill -KILL "$pid"
	wait || true
	wait_for_server
	check_after_crash "a backend killed during a bulk insert"

	# committed inserts, one after the other, cut by an immediate shutdown
	(
		for ((i = 0; i < 100000; i++)); do
			echo "INSERT INTO cr SELECT i, random() * 2000, i % 7 FROM generate_series($((100000 + i * 500)), $((100499 + i * 500))) i;"
		done
	) | crash_psql >/dev/null 2>&1 &
	sleep 2
	"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m immediate stop >/dev/null
	wait || true
	cluster_restart preload
	check_after_crash "an immediate shutdown during committed inserts"
	psql_q -c 'DROP DATABASE gputopk_crash'
}
