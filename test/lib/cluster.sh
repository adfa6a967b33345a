# test/lib/cluster.sh: shared by test/run, test/citus/run, bench/demo, the
# benchmarks that start a cluster, and test/postgres/install (its package
# helpers) (sourced, not run).
#
# Installs what the tests need on Debian when it is missing, builds and
# installs the extension, and runs a throwaway PostgreSQL cluster as an
# unprivileged user (PostgreSQL refuses to run as root).
#
# Inputs: PG_CONFIG (default pg_config, Debian's PostgreSQL 15; for 16, 17
# and 18 see test/postgres/install), WITH_CUDA, GPUTOPK_PAGE_CACHE_SIZE
# (gputopk.gpu_page_cache_size of a preloaded cluster; unset, its default),
# GPUTOPK_TEST_PORT (the cluster's port, default 54329).

PG_CONFIG=${PG_CONFIG:-pg_config}
[ -n "${WITH_CUDA:-}" ] || unset WITH_CUDA
CLUSTER_USER=gputopk
DEBIAN_PACKAGES="postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl build-essential"

say() { printf '== %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly, or through sudo for a normal user.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "this step needs root: $* (run as root, install sudo, or set PG_CONFIG to a PostgreSQL you own)"
	fi
}

pg_is_debian_default() { [ "$PG_CONFIG" = pg_config ]; }

# What building and testing need, as Debian package names: with another
# PostgreSQL, only those whose commands are missing.
needed_packages() {
	if pg_is_debian_default; then
		echo "$DEBIAN_PACKAGES"
		return
	fi
	local needed=""
	command -v pg_prove >/dev/null || needed="$needed libtap-parser-sourcehandler-pgtap-perl"
	command -v make >/dev/null && command -v gcc >/dev/null || needed="$needed build-essential"
	echo "$needed"
}

# install_debian_packages PACKAGE...: apt-get install those not installed.
install_debian_packages() {
	local missing="" pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
			missing="$missing $pkg"
	done
	[ -n "$missing" ] || return 0
	command -v apt-get >/dev/null || die "missing:$missing, and no apt-get to install it"
	say "installing Debian packages:$missing"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	# shellcheck disable=SC2086
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

ensure_packages() {
	# shellcheck disable=SC2046
	install_debian_packages $(needed_packages)
	# Debian's postgresql-15 package starts a cluster of its own; we use ours.
	PGXS=$("$PG_CONFIG" --pgxs 2>/dev/null) && [ -f "$PGXS" ] ||
		die "PostgreSQL server development files not found for PG_CONFIG=$PG_CONFIG"
	PGBIN=$("$PG_CONFIG" --bindir)
	[ -f "$("$PG_CONFIG" --sharedir)/extension/pgtap.control" ] ||
		die "pgTAP is not installed for the PostgreSQL of PG_CONFIG=$PG_CONFIG (test/postgres/install adds it to the PostgreSQL it fetches)"
	[ -f "$("$PG_CONFIG" --sharedir)/extension/pg_buffercache.control" ] ||
		die "pg_buffercache (contrib) is not installed for the PostgreSQL of PG_CONFIG=$PG_CONFIG"
	export PATH="$PGBIN:$PATH"
}

# as_installer COMMAND...: COMMAND as this user where it may write this
# PostgreSQL's library and extension directories, else as root.
as_installer() {
	if [ -w "$("$PG_CONFIG" --pkglibdir)" ] && [ -w "$("$PG_CONFIG" --sharedir)/extension" ]; then
		"$@"
	else
		as_root "$@"
	fi
}

build_and_install() {
	say "building gputopk"
	make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" ${WITH_CUDA:+WITH_CUDA=$WITH_CUDA}
	say "installing into $("$PG_CONFIG" --pkglibdir)"
	as_installer make -s install PG_CONFIG="$PG_CONFIG" ${WITH_CUDA:+WITH_CUDA=$WITH_CUDA}
	BUILD_VARIANT=$(cat .variant)
}

# As root, the server runs as $CLUSTER_USER, created when missing.
ensure_cluster_user() {
	RUN_AS=()
	[ "$(id -u)" = 0 ] || return 0
	id "$CLUSTER_USER" >/dev/null 2>&1 ||
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$CLUSTER_USER"
	RUN_AS=(runuser -u "$CLUSTER_USER" --)
}

# cluster_start [preload]: a fresh cluster, with the library preloaded or not.
cluster_start() {
	ensure_cluster_user
	"${RUN_AS[@]}" test -x "$PGBIN/postgres" ||
		die "$CLUSTER_USER, the cluster's user, cannot run $PGBIN/postgres: put that PostgreSQL where every user can read it"
	CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gputopk-cluster.XXXXXX")
	[ "$(id -u)" = 0 ] && chown "$CLUSTER_USER:" "$CLUSTER_DIR"
	"${RUN_AS[@]}" "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -U postgres --auth=trust \
		--no-sync -E UTF8 --locale=C ${GPUTOPK_INITDB_OPTIONS:-} >"$CLUSTER_DIR/initdb.log" 2>&1 ||
		{ cat "$CLUSTER_DIR/initdb.log"; die "initdb failed"; }
	cat >>"$CLUSTER_DIR/data/postgresql.conf" <<-EOF
		listen_addresses = ''
		unix_socket_directories = '$CLUSTER_DIR'
		port = ${GPUTOPK_TEST_PORT:-54329}
		fsync = off
		max_connections = 20
	EOF
	export PGHOST=$CLUSTER_DIR PGPORT=${GPUTOPK_TEST_PORT:-54329} PGUSER=postgres PGDATABASE=postgres
	trap cluster_stop EXIT
	cluster_restart "${1:-}"
}

# cluster_restart [preload] [ENV=VALUE...]: restart with another set-up.
cluster_restart() {
	local preload=${1:-}
	shift || true
	"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast stop >/dev/null 2>&1 || true
	if [ "$preload" = preload ]; then
		# the GPU tests read pages through the GPU's page cache (on by default)
		{
			echo "shared_preload_libraries = 'gputopk'"
			if [ -n "${GPUTOPK_PAGE_CACHE_SIZE:-}" ]; then
				echo "gputopk.gpu_page_cache_size = '$GPUTOPK_PAGE_CACHE_SIZE'"
			fi
		} >"$CLUSTER_DIR/data/preload.conf"
	else
		: >"$CLUSTER_DIR/data/preload.conf"
	fi
	grep -q "^include 'preload.conf'" "$CLUSTER_DIR/data/postgresql.conf" ||
		echo "include 'preload.conf'" >>"$CLUSTER_DIR/data/postgresql.conf"
	local logged
	logged=$(stat -c %s "$CLUSTER_DIR/server.log" 2>/dev/null || echo 0)
	"${RUN_AS[@]}" env "$@" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
		-w start >/dev/null ||
		{ tail -n 30 "$CLUSTER_DIR/server.log"; die "the server did not start"; }
	[ "$preload" != preload ] || wait_for_service "$logged"
}

# wait_for_service OFFSET [LOG]: until the GPU service, started with the server,
# has said in the server log (after byte OFFSET) whether it has a GPU and,
# with some, whether each can read shared_buffers (or cannot be used), so
# that what runs next sees the service ready (pages jobs included) or absent,
# not starting.
wait_for_service() {
	local i text gpus reported log=${2:-$CLUSTER_DIR/server.log}
	for ((i = 0; i < 600; i++)); do
		text=$(tail -c +"$(($1 + 1))" "$log")
		grep -q 'gputopk GPU service found no usable GPU' <<<"$text" && return 0
		gpus=$(grep -oE 'gputopk GPU service found [0-9]+ GPU' <<<"$text" | grep -oE '[0-9]+' | tail -n 1 || true)
		reported=$(grep -cE 'gputopk GPU service (cannot use GPU|registered shared_buffers|could not register shared_buffers)' <<<"$text" || true)
		[ -n "$gpus" ] && [ "$reported" -ge "$gpus" ] && return 0
		sleep 0.1
	done
	tail -n 30 "$log"
	die "the GPU service did not report within 60 s"
}

# cluster_stop [STATUS]: stop the cluster; on a STATUS (default: that of the
# last command, as in an EXIT trap) other than 0 keep it and show its log.
cluster_stop() {
	local status=${1:-$?}
	[ -n "${CLUSTER_DIR:-}" ] || return 0
	"${RUN_AS[@]}" "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast stop >/dev/null 2>&1 || true
	if [ "$status" != 0 ]; then
		say "server log (last lines) of $CLUSTER_DIR:"
		tail -n 30 "$CLUSTER_DIR/server.log" 2>/dev/null || true
	else
		rm -rf "$CLUSTER_DIR"
	fi
	CLUSTER_DIR=
}

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
