# test/lib/pgvector.sh: pgvector, an optional companion, for the suites and
# benchmarks that use it (sourced after test/lib/cluster.sh, with PG_CONFIG
# set).  Where this PostgreSQL lacks it, it is built from its source archive
# (PGVECTOR_ARCHIVE, default ../shared/pgvector/pgvector-0.8.6.tar.gz) and
# installed.

# ensure_pgvector WHAT: pgvector installed into this PostgreSQL; false,
# saying "WHAT: skipped, ..." and why, where it cannot be
ensure_pgvector() {
	local what=$1 build archive=${PGVECTOR_ARCHIVE:-../shared/pgvector/pgvector-0.8.6.tar.gz}
	[ -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ] && return 0
	if [ ! -f "$archive" ]; then
		echo "$what: skipped, no pgvector and no source archive at $archive (PGVECTOR_ARCHIVE)"
		return 1
	fi
	build=$(mktemp -d "${TMPDIR:-/tmp}/gputopk-pgvector-build.XXXXXX")
	tar xzf "$archive" -C "$build"
	# OPTFLAGS="": no -march=native, so that one build runs on any x86-64
	if ! (cd "$build"/pgvector-* && make -s OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >"$build/make.log" 2>&1 &&
		as_installer make -s OPTFLAGS="" PG_CONFIG="$PG_CONFIG" install >>"$build/make.log" 2>&1); then
		echo "$what: skipped, pgvector did not build (log: $build/make.log)"
		return 1
	fi
	rm -rf "$build"
}
