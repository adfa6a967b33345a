# test/citus/nodes.sh: a Citus coordinator and two workers on one machine,
# for test/citus/run and bench/citus_bench (sourced after test/lib/cluster.sh).
#
# Inputs: PG_CONFIG, CITUS_ARCHIVE (Citus's source, built when PostgreSQL
# has no Citus), NODE_CONF (settings added to every node's postgresql.conf).

CITUS_VERSION=13.2.2
CITUS_ARCHIVE=${CITUS_ARCHIVE:-../shared/citus/citus-$CITUS_VERSION.tar.gz}
NODES=(coordinator worker1 worker2)
FIRST_PORT=54340

# Citus, built and installed into PG_CONFIG's PostgreSQL unless it is there.
ensure_citus() {
	local have
	have=$(sed -n "s/^default_version = '\(.*\)'/\1/p" \
		"$("$PG_CONFIG" --sharedir)/extension/citus.control" 2>/dev/null || true)
	if [ -n "$have" ] && [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]; then
		say "Citus $have is installed"
		return
	fi
	[ -f "$CITUS_ARCHIVE" ] ||
		die "no Citus installed and no source archive at $CITUS_ARCHIVE (set CITUS_ARCHIVE)"
	local build
	# Debian's PostgreSQL is built with lz4, zstd and GSSAPI: Citus includes their headers
	install_debian_packages liblz4-dev libzstd-dev libkrb5-dev
	build=$(mktemp -d "${TMPDIR:-/tmp}/gputopk-citus-build.XXXXXX")
	say "building Citus $CITUS_VERSION in $build (a few minutes)"
	tar xzf "$CITUS_ARCHIVE" -C "$build"
	(
		cd "$build/citus-$CITUS_VERSION"
		# PostgreSQL 15.19 and later export have_createdb_privilege, which
		# Citus 13.2.2 defines itself for 15: its own gets another name
		if grep -q 'have_createdb_privilege' \
			"$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h" &&
			[ "$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')" = 15 ]; then
			sed -i 's/^have_createdb_privilege(void)$/citus_have_createdb_privilege(void)/' \
				src/include/pg_version_compat.h
			sed -i 's/!have_createdb_privilege()/!citus_have_createdb_privilege()/' \
				src/backend/distributed/commands/serialize_distributed_ddls.c
		fi
		./configure PG_CONFIG="$PG_CONFIG" --without-libcurl \
			>"$build/configure.log" 2>&1 || { tail -n 20 "$build/configure.log"; exit 1; }
		make -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -n 20 "$build/make.log"; exit 1; }
		if [ -w "$("$PG_CONFIG" --pkglibdir)" ]; then
			make install >"$build/install.log" 2>&1
		else
			as_root make install >"$build/install.log" 2>&1
		fi
	) || die "building Citus failed (logs in $build)"
	rm -rf "$build"
}

node_port() { echo $((FIRST_PORT + $1)); }

# The three nodes: initdb, citus and gputopk preloaded, started.
nodes_start() {
	ensure_cluster_user
	CITUS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gputopk-citus.XXXXXX")
	[ "$(id -u)" = 0 ] && chown "$CLUSTER_USER:" "$CITUS_DIR"
	trap nodes_stop EXIT
	local i data
	for i in "${!NODES[@]}"; do
		data=$CITUS_DIR/${NODES[$i]}
		"${RUN_AS[@]}" "$PGBIN/initdb" -D "$data" -U postgres --auth=trust --no-sync \
			-E UTF8 --locale=C >"$CITUS_DIR/initdb.log" 2>&1 ||
			{ cat "$CITUS_DIR/initdb.log"; die "initdb failed"; }
		cat >>"$data/postgresql.conf" <<-EOF
			listen_addresses = ''
			unix_socket_directories = '$CITUS_DIR'
			port = $(node_port "$i")
			fsync = off
			max_connections = 60
			shared_preload_libraries = 'citus,gputopk'
		EOF
		printf '%s\n' "${NODE_CONF:-}" >>"$data/postgresql.conf"
		"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$CITUS_DIR/${NODES[$i]}.log" -w start \
			>/dev/null || { tail -n 30 "$CITUS_DIR/${NODES[$i]}.log"; die "${NODES[$i]} did not start"; }
		wait_for_service 0 "$CITUS_DIR/${NODES[$i]}.log"
	done
}

nodes_stop() {
	local status=$? i
	[ -n "${CITUS_DIR:-}" ] || return 0
	for i in "${!NODES[@]}"; do
		"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CITUS_DIR/${NODES[$i]}" -m fast stop \
			>/dev/null 2>&1 || true
	done
	if [ "$status" != 0 ]; then
		for i in "${!NODES[@]}"; do
			say "${NODES[$i]}'s log (last lines):"
			tail -n 15 "$CITUS_DIR/${NODES[$i]}.log" 2>/dev/null || true
		done
	else
		rm -rf "$CITUS_DIR"
	fi
	CITUS_DIR=
}

# on NODE SQL...: psql on node number NODE (0 is the coordinator).
on() {
	local node=$1
	shift
	psql -X -q -At -v ON_ERROR_STOP=1 -h "$CITUS_DIR" -p "$(node_port "$node")" \
		-U postgres -d postgres "$@"
}

set_gputopk_everywhere() {
	local i
	for i in "${!NODES[@]}"; do
		on "$i" -c "ALTER SYSTEM SET gputopk.enabled = $1" -c 'SELECT pg_reload_conf()' >/dev/null
	done
	# what every node's sessions (Citus's cached connections included) now see
	local seen
	seen=$(on 0 -c "SELECT string_agg(DISTINCT result, ',') FROM
	                run_command_on_all_nodes('SHOW gputopk.enabled')")
	[ "$seen" = "$1" ] || die "gputopk.enabled is '$seen' on the nodes, not '$1'"
}

# nodes_join: Citus on every node, the workers added, gputopk created (Citus creates it on the workers).
nodes_join() {
	local i
	for i in "${!NODES[@]}"; do on "$i" -c 'CREATE EXTENSION citus'; done
	on 0 -c "SELECT citus_set_coordinator_host('$CITUS_DIR', $(node_port 0))" >/dev/null
	on 0 -c "SELECT citus_add_node('$CITUS_DIR', $(node_port 1))" \
		-c "SELECT citus_add_node('$CITUS_DIR', $(node_port 2))" >/dev/null
	on 0 -c 'CREATE EXTENSION gputopk'
}
