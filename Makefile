# Makefile for gputopk: a PGXS build, plus the CUDA kernels when nvcc is found.
#
#   make [PG_CONFIG=...] [CUDA_HOME=...] [WITH_CUDA=no]
#   make PG_VERSION=16    (or 17, 18) PostgreSQL of that version, fetched and
#                         cached by test/postgres/install (docs/versions.md)
#   make install          install into the PostgreSQL that PG_CONFIG names
#   make test             install dependencies, build, and run every test
#   make test-engine      one kind of test alone (also test-regress, test-pgtap,
#                         test-gpu, test-concurrent, test-vector, test-readme, test-crash,
#                         test-standby,
#                         test-citus):
#                         docs/testing.md says which runs what
#   make check-layout     build, then check the source tree's layout rules
#                         (test/layout/check: no loops between files, ...)
#   make demo             a top-k query on a throwaway cluster
#   make deb              Debian packages, postgresql-N-gputopk_*.deb, here
#                         (debian/; needs debhelper and postgresql-server-dev-all)
#
# nvcc is looked for in $(CUDA_HOME)/bin (default /usr/local/cuda), then on
# PATH.  Without it, or with WITH_CUDA=no, the same SQL surface is built with
# the CPU backend only.

EXTENSION = gputopk
MODULE_big = gputopk
DATA = gputopk--0.1.sql gputopk--0.1--0.2.sql gputopk--0.2--0.3.sql
PGFILEDESC = "gputopk - top-k queries on the GPU"

# src/ by family (docs/architecture.md): module-level files, scan_* what
# the custom scans share, topk_* the GpuTopK scan, agg_* the top-k
# aggregates and GpuTopKAgg, groups_* GpuTopKGroups, colindex_* the column
# index, service_* the GPU service; and the engine's CPU backend (kernels/,
# plain C).  gpu_absent.c
# stands in for the CUDA code in a build without it.
SRC_OBJS = $(patsubst %.c,%.o,$(filter-out src/gpu_absent.c,$(wildcard src/*.c))) \
	kernels/cpu_topk.o

# pg_regress tests in sql/ and expected/; two need a particular server set-up
# and are run by test/run on their own: device_absent (no usable GPU) and
# load_modes (library not preloaded).
REGRESS = install upgrade gucs devices topk_scan topk_filter topk_partition topk_index topk_rank_float topk_index_skip topk_random topk_agg topk_agg_scan topk_groups topk_groups_random
REGRESS_OPTS = --inputdir=. --load-extension=gputopk
# isolation tests in specs/ (with concurrent sessions), also run by installcheck
ISOLATION = topk_snapshot heap_mvcc index_serializable index_check_temp
ISOLATION_OPTS = --load-extension=gputopk

PG_CONFIG ?= pg_config
# PG_VERSION=16, 17 or 18: the pg_config of test/postgres/install VERSION
# (15 is Debian's, the default pg_config); PG_CONFIG given as well wins.
ifneq ($(filter-out 15,$(PG_VERSION)),)
ifneq ($(origin PG_CONFIG),command line)
PG_CONFIG := $(shell test/postgres/install $(PG_VERSION))
ifeq ($(PG_CONFIG),)
$(error test/postgres/install $(PG_VERSION) failed)
endif
endif
endif
CUDA_HOME ?= /usr/local/cuda

ifeq ($(WITH_CUDA),no)
NVCC :=
else
NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
endif

PG_CPPFLAGS = -I$(srcdir)/kernels
# the loops over a page's entries or rows: -O3 lets the compiler vectorize them
src/colindex_page_eval.o src/key_batch.o src/scan_vector_key.o: CFLAGS += -O3

ifneq ($(NVCC),)
VARIANT = cuda
CUDA_ROOT := $(abspath $(dir $(realpath $(NVCC)))..)
CU_OBJS = $(patsubst %.cu,%.o,$(wildcard kernels/*.cu))
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -Wall \
	-gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
OBJS = $(SRC_OBJS)
# CUDA objects stay out of OBJS: PGXS would want LLVM bitcode for them.
# The static runtime's symbols are hidden so that they cannot clash with
# another library's CUDA runtime in the same backend.
SHLIB_LINK_INTERNAL = $(CU_OBJS)
SHLIB_LINK = -L$(CUDA_ROOT)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm \
	-Wl,--exclude-libs,ALL
BUILD_NOTE = gputopk: building with CUDA from $(CUDA_ROOT)
else
VARIANT = cpu
OBJS = $(SRC_OBJS) src/gpu_absent.o
BUILD_NOTE = gputopk: nvcc not found or WITH_CUDA=no, building the CPU-only extension
endif

ifneq ($(filter all,$(or $(MAKECMDGOALS),all)),)
$(info $(BUILD_NOTE))
endif

EXTRA_CLEAN = kernels/*.o .variant .pg_major test/engine/test_cpu test/engine/test_gpu \
	test/engine/test_vector_bounds \
	bench/libgputopk_bench.so bench/cpu_bench

# the major version asked for, where PG_VERSION or a Debian pg_config path says it
PG_WANTED := $(or $(PG_VERSION),$(patsubst /usr/lib/postgresql/%/bin/pg_config,%,$(filter /usr/lib/postgresql/%/bin/pg_config,$(PG_CONFIG))))
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
else ifeq ($(filter test test-% demo deb,$(MAKECMDGOALS)),)
$(error PostgreSQL$(if $(PG_WANTED), $(PG_WANTED)) server development files not found for PG_CONFIG=$(PG_CONFIG): install postgresql-server-dev-$(or $(PG_WANTED),N) (Debian, Ubuntu; PostgreSQL's own apt repository has every version) or postgresql$(or $(PG_WANTED),N)-devel (RHEL, Rocky), or give PG_CONFIG the path of its pg_config; README.md, Installation)
endif

# Relink when switching between the CUDA and the CPU-only build, and rebuild
# the objects of src/ when switching to another PostgreSQL major version.
$(shell echo $(VARIANT) | cmp -s - .variant || echo $(VARIANT) > .variant)
$(shlib): $(CU_OBJS) .variant
$(shell echo $(MAJORVERSION) | cmp -s - .pg_major || echo $(MAJORVERSION) > .pg_major)
$(SRC_OBJS) src/gpu_absent.o: .pg_major

# PGXS tracks no header dependencies unless PostgreSQL was configured with
# --enable-depend: every object is rebuilt when a header changes.
$(SRC_OBJS) src/gpu_absent.o: $(wildcard src/*.h kernels/*.h)

kernels/%.o: kernels/%.cu $(wildcard kernels/*.h kernels/*.cuh)
	$(NVCC) $(NVCC_FLAGS) -Ikernels -c $< -o $@

# Test programs of the top-k engine (no PostgreSQL): test/engine/.
ENGINE_CFLAGS = -O2 -g -Wall -Ikernels -Itest/engine
ENGINE_HEADERS = $(wildcard kernels/*.h test/engine/*.h)
ENGINE_TESTS = test/engine/test_cpu test/engine/test_visibility test/engine/test_vector_bounds
test/engine/test_cpu: test/engine/test_cpu.c test/engine/testlib.c kernels/cpu_topk.c $(ENGINE_HEADERS)
	$(CC) $(ENGINE_CFLAGS) -o $@ $(filter %.c,$^) -lm
test/engine/test_visibility: test/engine/test_visibility.c $(ENGINE_HEADERS)
	$(CC) $(ENGINE_CFLAGS) -o $@ $(filter %.c,$^)
test/engine/test_vector_bounds: test/engine/test_vector_bounds.c test/engine/testlib.c kernels/cpu_topk.c $(ENGINE_HEADERS)
	$(CC) $(ENGINE_CFLAGS) -o $@ $(filter %.c,$^) -lm
# The CPU backend's benchmark (bench/cpu_bench.c).
bench/cpu_bench: bench/cpu_bench.c test/engine/testlib.c kernels/cpu_topk.c $(ENGINE_HEADERS)
	$(CC) $(ENGINE_CFLAGS) -o $@ $(filter %.c,$^) -lm
ifneq ($(NVCC),)
ENGINE_TESTS += test/engine/test_gpu
CUDA_LIBS = -L$(CUDA_ROOT)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm
test/engine/test_gpu: test/engine/test_gpu.c test/engine/testlib.c kernels/cpu_topk.c $(CU_OBJS) $(ENGINE_HEADERS)
	$(CC) $(ENGINE_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CUDA_LIBS)

# The library bench/gpu_bench.py loads: the engine plus bench helpers.
bench/libgputopk_bench.so: bench/bench_lib.cu kernels/cpu_topk.c $(CU_OBJS) $(ENGINE_HEADERS)
	$(NVCC) $(NVCC_FLAGS) -shared -Ikernels -o $@ bench/bench_lib.cu kernels/cpu_topk.c $(CU_OBJS)
endif
.PHONY: engine-tests bench-lib bench-cpu
engine-tests: $(ENGINE_TESTS)
bench-lib: bench/libgputopk_bench.so
bench-cpu: bench/cpu_bench
	bench/cpu_bench

.PHONY: test test-citus check-layout demo deb
test:
	PG_CONFIG=$(PG_CONFIG) WITH_CUDA=$(WITH_CUDA) bash test/run

# one kind of test alone, under the set-ups make test gives it: test/run KIND
TEST_KINDS = engine regress pgtap gpu concurrent vector readme crash standby
.PHONY: $(addprefix test-,$(TEST_KINDS))
$(addprefix test-,$(TEST_KINDS)): test-%:
	PG_CONFIG=$(PG_CONFIG) WITH_CUDA=$(WITH_CUDA) bash test/run $*

# gputopk on a Citus coordinator and two workers (builds Citus if needed; not part of test)
test-citus:
	PG_CONFIG=$(PG_CONFIG) WITH_CUDA=$(WITH_CUDA) bash test/citus/run

# Debian packages (debian/rules): one per PostgreSQL version that
# postgresql-server-dev-all supports here, moved into this directory from
# the parent one that dpkg-buildpackage writes to
DEB_VERSION = $(shell dpkg-parsechangelog -S Version 2>/dev/null)
deb:
	@command -v dpkg-buildpackage >/dev/null && command -v pg_buildext >/dev/null || \
		{ echo "make deb needs dpkg-dev, debhelper and postgresql-server-dev-all: apt install dpkg-dev debhelper postgresql-server-dev-all" >&2; exit 1; }
	pg_buildext updatecontrol
	DEB_BUILD_OPTIONS="noautodbgsym $${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b
	mv ../postgresql-*-gputopk_$(DEB_VERSION)_*.deb .
	rm -f ../gputopk_$(DEB_VERSION)_*.buildinfo ../gputopk_$(DEB_VERSION)_*.changes
	@ls postgresql-*-gputopk_$(DEB_VERSION)_*.deb

# the layout rules of docs/architecture.md, read off the build's objects
check-layout: all
	python3 test/layout/check

demo:
	PG_CONFIG=$(PG_CONFIG) WITH_CUDA=$(WITH_CUDA) bash bench/demo
