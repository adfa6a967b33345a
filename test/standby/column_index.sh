# test/standby/column_index.sh: gputopk_index_check on a hot standby
# (sourced by test/run, after test/lib/cluster.sh, with the cluster running).
#
# A standby of the throwaway cluster, made with pg_basebackup -R and started
# on the next port as the same user, in the cluster's folder: the index of
# an unlogged table, whose data a standby does not have, is refused with
# PostgreSQL's own error; the index of a logged table passes, also after
# deletes, VACUUM and inserts on the primary have been replayed.  The
# standby is stopped on the way out, failed or not.

STANDBY_PORT=$((${GPUTOPK_TEST_PORT:-54329} + 1))

standby_psql() { psql -X -q -v ON_ERROR_STOP=1 -p "$STANDBY_PORT" -d gputopk_standby "$@"; }
primary_psql() { psql -X -q -v ON_ERROR_STOP=1 -d gputopk_standby "$@"; }

standby_stop() {
	[ -d "$CLUSTER_DIR/standby" ] || return 0
	"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/standby" -m fast stop >/dev/null 2>&1 || true
}

# until the standby has replayed what the primary has written
wait_for_replay() {
	local lsn i
	lsn=$(primary_psql -At -c 'SELECT pg_current_wal_lsn()')
	for ((i = 0; i < 300; i++)); do
		[ "$(standby_psql -At -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
		sleep 0.1
	done
	die "the standby did not replay up to $lsn within 30 s"
}

# the logged table's index matches it on the standby
check_logged_on_standby() {
	[ "$(standby_psql -At -c "SELECT gputopk_index_check('sl_ci') = (SELECT count(*) FROM sl)")" = t ] ||
		die "the logged table's column index does not pass gputopk_index_check on the standby"
}

index_standby_test() {
	local out
	PGOPTIONS='-c client_min_messages=warning' psql_q -c 'DROP DATABASE IF EXISTS gputopk_standby' \
		-c 'CREATE DATABASE gputopk_standby'
	primary_psql <<-'EOF'
		CREATE EXTENSION gputopk;
		CREATE TABLE sl (id int, v float8, g int) WITH (autovacuum_enabled = off);
		INSERT INTO sl SELECT i, (i * 7919 % 100003) / 100.0, i % 7 FROM generate_series(1, 20000) i;
		CREATE INDEX sl_ci ON sl USING gputopk (v, g);
		CREATE UNLOGGED TABLE su (id int, v float8);
		INSERT INTO su SELECT i, i FROM generate_series(1, 1000) i;
		CREATE INDEX su_ci ON su USING gputopk (v);
	EOF

	trap 'status=$?; standby_stop; cluster_stop "$status"' EXIT
	"${RUN_AS[@]}" "$PGBIN/pg_basebackup" -h "$CLUSTER_DIR" -p "$PGPORT" -U postgres \
		-D "$CLUSTER_DIR/standby" -R -c fast >"$CLUSTER_DIR/basebackup.log" 2>&1 ||
		{ cat "$CLUSTER_DIR/basebackup.log"; die "pg_basebackup failed"; }
	echo "port = $STANDBY_PORT" >>"$CLUSTER_DIR/standby/postgresql.conf"
	"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/standby" -l "$CLUSTER_DIR/standby.log" \
		-w start >/dev/null ||
		{ tail -n 30 "$CLUSTER_DIR/standby.log"; die "the standby did not start"; }
	wait_for_service 0 "$CLUSTER_DIR/standby.log"
	wait_for_replay

	out=$(standby_psql -c "SELECT gputopk_index_check('su_ci')" 2>&1) &&
		die "gputopk_index_check of an unlogged table's index passed on the standby"
	[[ "$out" == *"ERROR:  cannot access temporary or unlogged relations during recovery"* ]] ||
		die "gputopk_index_check of an unlogged table's index on the standby: $out"
	check_logged_on_standby
	primary_psql -c 'DELETE FROM sl WHERE id % 10 = 0' -c 'VACUUM sl' \
		-c 'INSERT INTO sl SELECT i, i / 3.0, i % 7 FROM generate_series(20001, 22000) i'
	wait_for_replay
	check_logged_on_standby
	say "column index on a standby: an unlogged table's refused, a logged table's matches it"

	standby_stop
	rm -rf "$CLUSTER_DIR/standby"
	trap cluster_stop EXIT
	psql_q -c 'DROP DATABASE gputopk_standby'
}
