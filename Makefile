# libdat.so.1: DAT 1.2 (uDAPL) drop-in, built from Rust.
#
#   make              release library build/lib/libdat.so.1 (+ libdat.so link)
#   make header       regenerate include/dat/udat.h with cbindgen
#   make check-header fail if the checked-in header differs from a fresh one
#   make check        every test layer: cargo tests, loom model, exports, C tests, siw interop, valgrind
#   make demo         build and run the demo program
#   make examples     build the example programs into build/examples/
#   make bench        time the local hot paths (ns per operation), then qp-bench, bench-ep and bench-progress
#   make qp-bench     queue pairs (iWARP over loopback TCP) beside raw TCP
#   make bench-ep     endpoints through the C API beside raw TCP and the queue pairs
#   make bench-progress  asynchronous progress targets with dat-perf (memory polling, computing peer, CNO, streams, idle CPU)
#   make tools        dat-info and dat-perf into build/bin/ (they load build/lib/libdat.so.1)
#   make install PREFIX=/usr/local   library (stripped, debug info in LIBDIR/.debug), headers, dat.pc, dat.conf.example, dat-info, dat-perf
#   make stub-verbs   the stub rdma-core libraries of the verbs tests (build/stub-verbs/)
#   make valgrind     run the C tests once under valgrind
#   make helgrind     the threaded C tests under helgrind and drd
#   make fuzz         each fuzz target (fuzz/, cargo-fuzz, nightly) for FUZZ_SECONDS (60) seconds
#   make guest        build (or reuse) the kernel-RDMA test guest (tests/guest/build.sh)
#   make guest-check  rping_dat against rdma-core's rping over the kernel's siw in that guest
#   make verbs-check  the endpoint, consumer and example programs over verbs IAs on rxe and siw in that guest, and interop
#   make verbs-bench  dat-perf over a verbs IA beside perftest's ib_*_lat/ib_write_bw in that guest, then verbs-calls
#   make verbs-calls  the DAT layer's cost over raw verbs call by call, paired in one process, in that guest

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
BINDIR     ?= $(PREFIX)/bin
INCDIR     ?= $(PREFIX)/include
SYSCONFDIR ?= $(PREFIX)/etc
CC         ?= cc
CARGO      ?= cargo
CBINDGEN   ?= cbindgen

BUILD   := build
LIBOUT  := $(BUILD)/lib
CTOUT   := $(BUILD)/ctests
ABSLIB  := $(abspath $(LIBOUT))

CSTD    ?= -std=gnu11
CWARN   := -Wall -Wextra -Werror
CFLAGS_T = $(CSTD) $(CWARN) -g -O1 -Iinclude -Ictests/common \
           -DCTEST_BUILD_DIR=\"$(abspath $(CTOUT))\"
LDFLAGS_T = -L$(LIBOUT) -Wl,-rpath,$(ABSLIB) -ldat -lpthread

RUST_SRC := $(shell find src abi/src ffi/src -name '*.rs') Cargo.toml abi/Cargo.toml ffi/Cargo.toml ffi/build.rs

UNIT_SRC  := $(wildcard ctests/unit/*.c)
ABI_SRC   := $(wildcard ctests/abi/*.c)
EP_SRC    := $(wildcard ctests/ep/*.c)
EXT_SRC   := $(wildcard ctests/examples/*.c)
CONS_SRC  := $(wildcard ctests/consumer/*.c)
VERBS_SRC := $(wildcard ctests/verbs/*.c)
REG_SRC   := $(filter-out %_provider.c,$(wildcard ctests/registry/*.c))
PROV_SRC  := $(wildcard ctests/registry/*_provider.c)
UNIT_BIN  := $(patsubst ctests/%.c,$(CTOUT)/%,$(UNIT_SRC))
ABI_BIN   := $(patsubst ctests/%.c,$(CTOUT)/%,$(ABI_SRC))
EP_BIN    := $(patsubst ctests/%.c,$(CTOUT)/%,$(EP_SRC))
EXT_BIN   := $(patsubst ctests/%.c,$(CTOUT)/%,$(EXT_SRC))
CONS_BIN  := $(patsubst ctests/%.c,$(CTOUT)/%,$(CONS_SRC))
VERBS_BIN := $(patsubst ctests/%.c,$(CTOUT)/%,$(VERBS_SRC))
REG_BIN   := $(patsubst ctests/%.c,$(CTOUT)/%,$(REG_SRC))
PROV_LIB  := $(patsubst ctests/registry/%.c,$(CTOUT)/registry/lib%.so,$(PROV_SRC))
CTEST_BIN := $(ABI_BIN) $(UNIT_BIN) $(REG_BIN) $(EP_BIN) $(EXT_BIN) $(CONS_BIN) $(VERBS_BIN)
# Under valgrind: every local-object program, the example, and of the
# two-process endpoint programs the end-to-end ones (the rest repeat the
# same paths with many timed waits, and EPC-17 creates 65536 EPs). Not the
# consumer patterns (ctests/consumer/): thousands of iterations each, time
# bounds on progress, and memory polled while the library writes it.
VALGRIND_BIN := $(ABI_BIN) $(UNIT_BIN) $(REG_BIN) $(EXT_BIN) \
                $(filter %/e2e_smoke %/dto_e2e %/e2e_threads %/e2e_race,$(EP_BIN))
# Under helgrind and drd: the threaded end-to-end programs.
HELGRIND_BIN := $(filter %/e2e_threads %/e2e_race,$(EP_BIN))

.PHONY: all lib header check-header check cargo-test loom exports ctests run-ctests stub-verbs \
        demo examples tools bench qp-bench bench-ep bench-progress install install-check fuzz valgrind helgrind clippy fmt lint verbs-check-all \
        header-modes dropin clean

all: lib

lib: $(LIBOUT)/libdat.so.1

$(LIBOUT)/libdat.so.1: $(RUST_SRC)
	$(CARGO) build --release -p dat
	mkdir -p $(LIBOUT)
	cp target/release/libdat.so $(LIBOUT)/libdat.so.1.tmp
	mv -f $(LIBOUT)/libdat.so.1.tmp $(LIBOUT)/libdat.so.1
	ln -sf libdat.so.1 $(LIBOUT)/libdat.so

header:
	$(CBINDGEN) --config cbindgen.toml --crate dat --output include/dat/udat.h ffi

check-header:
	$(CBINDGEN) --config cbindgen.toml --crate dat --output $(BUILD)/udat.h.fresh ffi
	diff -u include/dat/udat.h $(BUILD)/udat.h.fresh

# The examples first: tests/netns_dat.rs runs them across two namespaces.
cargo-test: examples
	$(CARGO) test --workspace

# Model checks with loom: the wait/wake protocol (src/wait/notify.rs) and the
# completion queue notification protocol (tests/loom_cq_notify.rs), in
# its own target directory so the main build is not invalidated.
loom:
	RUSTFLAGS="--cfg udapl_loom" CARGO_TARGET_DIR=target/loom $(CARGO) test --release -p udapl --test loom_notify --test loom_cq_notify

exports: lib
	nm -D --defined-only $(LIBOUT)/libdat.so.1 | awk '$$2 == "T" {print $$3}' | sort > $(BUILD)/exports.txt
	diff -u ffi/exports.txt $(BUILD)/exports.txt
	readelf -d $(LIBOUT)/libdat.so.1 | grep -q 'Library soname: \[libdat.so.1\]'
	@echo "exports: exactly the $$(wc -l < ffi/exports.txt) DAT 1.2 symbols, SONAME libdat.so.1"

$(CTOUT)/%: ctests/%.c ctests/common/ctest.h ctests/common/waiter.h ctests/common/builtin_ias.h ctests/common/pair.h $(wildcard ctests/ep/*.h) include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_T) -o $@ $< $(LDFLAGS_T)

# The connection tests share a helper header.
$(filter $(CTOUT)/ep/conn_%,$(EP_BIN)): ctests/ep/conn_util.h

# The consumer patterns share theirs.
$(CONS_BIN): ctests/consumer/consumer.h

$(CTOUT)/registry/lib%.so: ctests/registry/%.c include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -g -fPIC -shared -Iinclude -o $@ $< -L$(LIBOUT) -ldat

# The registry tests and the no-init provider include the stub provider source.
$(CTOUT)/registry/unit_registry $(CTOUT)/registry/func_foreign_dispatch \
    $(CTOUT)/registry/libnoinit_provider.so: ctests/registry/stub_provider.c

# The stub rdma-core libraries (tests/stub-verbs/): SONAMEs and symbol
# versions of rdma-core's, for the verbs tests that run on any machine
# (ctests/verbs/). stub_symbols.h lists the transport's dlvsym table
# (src/transport/verbs/lib.rs) for the check that the stubs resolve it.
STUBOUT    := $(BUILD)/stub-verbs
STUB_VERBS := $(STUBOUT)/libibverbs.so.1 $(STUBOUT)/librdmacm.so.1
STUB_CFLAGS = $(CSTD) $(CWARN) -g -O1 -fPIC -shared -Itests/stub-verbs

$(STUBOUT)/libibverbs.so.1: tests/stub-verbs/ibverbs.c tests/stub-verbs/stub.h tests/stub-verbs/ibverbs.map
	@mkdir -p $(dir $@)
	$(CC) $(STUB_CFLAGS) -Wl,-soname,libibverbs.so.1 -Wl,--version-script=tests/stub-verbs/ibverbs.map \
		-o $@ $< -lpthread

$(STUBOUT)/librdmacm.so.1: tests/stub-verbs/rdmacm.c tests/stub-verbs/stub.h tests/stub-verbs/rdmacm.map $(STUBOUT)/libibverbs.so.1
	$(CC) $(STUB_CFLAGS) -Wl,-soname,librdmacm.so.1 -Wl,--version-script=tests/stub-verbs/rdmacm.map \
		-Wl,-rpath,'$$ORIGIN' -o $@ $< $(STUBOUT)/libibverbs.so.1 -lpthread

$(STUBOUT)/stub_symbols.h: src/transport/verbs/lib.rs tests/stub-verbs/symbols.sh
	@mkdir -p $(dir $@)
	tests/stub-verbs/symbols.sh $< > $@.tmp
	mv -f $@.tmp $@

stub-verbs: $(STUB_VERBS)

$(VERBS_BIN): $(STUB_VERBS) $(STUBOUT)/stub_symbols.h tests/stub-verbs/stub.h
$(VERBS_BIN): CFLAGS_T += -Itests/stub-verbs -I$(STUBOUT) -DSTUB_VERBS_DIR=\"$(abspath $(STUBOUT))\"
# The stubs' own test is linked against them; the DAT tests load them
# through libdat (DAT_VERBS_LIBDIR).
$(CTOUT)/verbs/stub_verbs: LDFLAGS_T += $(STUB_VERBS) -Wl,-rpath,$(abspath $(STUBOUT))

ctests: $(CTEST_BIN) $(PROV_LIB)

run-ctests: ctests
	@echo "== C conformance tests"
	@LD_LIBRARY_PATH=$(ABSLIB) ./ctests/run.sh $(CTEST_BIN)

lint: clippy fmt

header-modes:
	./ctests/abi/header_modes.sh

dropin: lib
	@echo "== drop-in test (binary linked against another libdat.so.1)"
	./ctests/dropin/run.sh

# Fuzzing what a peer or dat.conf controls (src/fuzz.rs; fuzz/ with
# cargo-fuzz on the nightly toolchain): each target FUZZ_SECONDS seconds,
# new inputs in build/fuzz/<target>, the committed seeds read from
# fuzz/corpus/<target>; crashes land in fuzz/artifacts/<target>/. make check
# replays the committed corpus on stable (tests/fuzz_corpus.rs).
FUZZ_TARGETS := mpa setup fpdu ddp terminate conf
FUZZ_SECONDS ?= 60

fuzz:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/$$t; \
		if ! $(CARGO) +nightly fuzz run -O $$t $(BUILD)/fuzz/$$t fuzz/corpus/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 > $(BUILD)/fuzz/$$t.log 2>&1; then \
			tail -40 $(BUILD)/fuzz/$$t.log; echo "fuzz: $$t failed (input in fuzz/artifacts/$$t/)"; exit 1; \
		fi; \
		echo "fuzz: $$t: $$(sed -n 's/^stat::number_of_executed_units: *//p' $(BUILD)/fuzz/$$t.log) executions in $(FUZZ_SECONDS) s, no failure"; \
	done

install-check: lib tools
	@echo "== install check (make install into a scratch DESTDIR)"
	./ctests/install/run.sh

check: lint cargo-test loom exports check-header header-modes dropin install-check run-ctests guest-check verbs-check valgrind helgrind

valgrind: ctests
	@echo "== C conformance tests under valgrind"
	@LD_LIBRARY_PATH=$(ABSLIB) CTEST_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --suppressions=$(abspath ctests/valgrind.supp)" \
		./ctests/run.sh $(VALGRIND_BIN)

# The thread checkers over the threaded programs (a minute or two): any
# report fails. libdat's own accesses are suppressed (its Rust std locks
# and atomics are invisible to both tools: ctests/valgrind/rust-std.supp
# says why); the C side is checked, with ctest_handover() marking memory
# that DAT hands to the consumer.
THREADCHECK = -q --error-exitcode=99 --suppressions=$(abspath ctests/valgrind/rust-std.supp)

helgrind: $(HELGRIND_BIN)
	@echo "== threaded C tests under helgrind"
	@LD_LIBRARY_PATH=$(ABSLIB) CTEST_WRAPPER="valgrind --tool=helgrind $(THREADCHECK)" \
		./ctests/run.sh $(HELGRIND_BIN)
	@echo "== threaded C tests under drd"
	@LD_LIBRARY_PATH=$(ABSLIB) CTEST_WRAPPER="valgrind --tool=drd $(THREADCHECK)" \
		./ctests/run.sh $(HELGRIND_BIN)

BENCH_SRC := $(filter-out ctests/bench/bench_ep.c ctests/bench/verbs_calls.c,$(wildcard ctests/bench/*.c))
BENCH_BIN := $(BUILD)/bench/bench_local
BENCH_EP  := $(BUILD)/bench/bench_ep
STUB_LIB  := $(CTOUT)/registry/libstub_provider.so
QP_OUT    := $(BUILD)/bench/qp_bench.txt

$(BENCH_BIN): $(BENCH_SRC) ctests/bench/bench.h include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -O2 -Iinclude -o $@ $(BENCH_SRC) $(LDFLAGS_T) -lm

$(BENCH_EP): ctests/bench/bench_ep.c ctests/bench/bench_util.c ctests/bench/bench.h include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -O2 -Iinclude -o $@ ctests/bench/bench_ep.c ctests/bench/bench_util.c $(LDFLAGS_T) -lm

# The stub provider (third-party dispatch) is named in a dat.conf by path.
# Then the queue pairs (qp-bench, its table kept in $(QP_OUT)), the
# endpoint layer through the C API beside them (bench-ep) and the
# asynchronous-progress targets (bench-progress).
bench: lib $(BENCH_BIN) $(STUB_LIB)
	$(BENCH_BIN) $(abspath $(STUB_LIB))
	$(MAKE) qp-bench
	$(MAKE) bench-ep
	$(MAKE) bench-progress

# Latency, bandwidth, message and connection rates of the iWARP queue pairs
# next to the same patterns over raw TCP sockets (src/bin/qp_bench/).
qp-bench:
	$(CARGO) build --release --bin qp_bench
	@mkdir -p $(dir $(QP_OUT))
	target/release/qp_bench > $(QP_OUT).tmp || { cat $(QP_OUT).tmp; rm -f $(QP_OUT).tmp; exit 1; }
	mv -f $(QP_OUT).tmp $(QP_OUT)
	@cat $(QP_OUT)

# The endpoint layer through the DAT C API (two processes over loopback)
# beside raw TCP, and beside the queue-pair figures of the last qp-bench
# ($(QP_OUT)) when there are any (ctests/bench/bench_ep.c).
bench-ep: lib $(BENCH_EP)
	$(BENCH_EP) $(if $(wildcard $(QP_OUT)),--qp $(QP_OUT))

# Asynchronous progress: dat-perf server and client over loopback (tcp0)
# for each target (memory polling against dequeue polling, an RDMA Read
# from a computing peer against a polling one, dat_cno_wait against
# dat_evd_wait, one-message-in-flight streams against TCP's stream, an idle
# pair's CPU), one table with the ratios (tools/src/bin/bench_progress.rs;
# about a minute).
bench-progress: tools
	target/release/bench_progress --dat-perf $(BUILD)/bin/dat-perf

# Example programs (examples/<name>/*.c, one program per file), linked
# with -ldat like any application; the C tests in ctests/examples/ run them.
EX_OUT  := $(BUILD)/examples
EX_DIRS := $(wildcard examples/*/)
EX_BIN  := $(foreach d,$(EX_DIRS),$(patsubst examples/%.c,$(EX_OUT)/%,$(wildcard $(d)*.c)))

examples: $(EX_BIN)

$(EX_OUT)/%: examples/%.c $(wildcard examples/*/*.h) include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -O2 -g -Iinclude -o $@ $< $(LDFLAGS_T)

$(EXT_BIN): $(EX_BIN)

# The demo: local objects (dat_demo), then two processes moving data over
# loopback with RDMA Write and Read (examples/rdma_pingpong).
DEMO_QUAL ?= 4797
demo: lib $(EX_BIN)
	@mkdir -p $(BUILD)/demo
	$(CC) $(CSTD) $(CWARN) -Iinclude -o $(BUILD)/demo/dat_demo examples/dat_demo.c $(LDFLAGS_T)
	$(BUILD)/demo/dat_demo
	@echo
	@echo "== two processes over loopback (examples/rdma_pingpong, qualifier $(DEMO_QUAL))"
	@$(EX_OUT)/rdma_pingpong/server -q $(DEMO_QUAL) -t 20 & srv=$$!; \
	  sleep 0.5; \
	  $(EX_OUT)/rdma_pingpong/client -q $(DEMO_QUAL) 127.0.0.1; rc=$$?; \
	  wait $$srv || rc=1; exit $$rc

# The tools find libdat.so.1 through their run path $ORIGIN/../lib: in the
# build tree build/bin/../lib, installed PREFIX/bin/../lib (set
# DAT_TOOLS_RPATH at build time for another LIBDIR; DAT_LIBRARY at run time).
TOOLS := dat-info dat-perf

tools: lib
	$(CARGO) build --release -p dat-tools
	mkdir -p $(BUILD)/bin
	for t in $(TOOLS); do cp target/release/$$t $(BUILD)/bin/$$t; done

# The library and tools are installed stripped; the library's debug
# information goes beside it in LIBDIR/.debug/libdat.so.1.debug (found by gdb
# through the library's .gnu_debuglink), unless INSTALL_DEBUG=0.
INSTALL_DEBUG ?= 1

install: lib tools
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)/dat $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(SYSCONFDIR)/dat $(DESTDIR)$(BINDIR)
	for t in $(TOOLS); do install -s -m 0755 target/release/$$t $(DESTDIR)$(BINDIR)/$$t; done
	objcopy --only-keep-debug $(LIBOUT)/libdat.so.1 $(BUILD)/libdat.so.1.debug
	objcopy --strip-debug --strip-unneeded --add-gnu-debuglink=$(BUILD)/libdat.so.1.debug \
		$(LIBOUT)/libdat.so.1 $(BUILD)/libdat.so.1.stripped
	install -m 0755 $(BUILD)/libdat.so.1.stripped $(DESTDIR)$(LIBDIR)/libdat.so.1
	if [ "$(INSTALL_DEBUG)" != 0 ]; then \
		install -d $(DESTDIR)$(LIBDIR)/.debug && \
		install -m 0644 $(BUILD)/libdat.so.1.debug $(DESTDIR)$(LIBDIR)/.debug/libdat.so.1.debug; \
	fi
	ln -sf libdat.so.1 $(DESTDIR)$(LIBDIR)/libdat.so
	install -m 0644 include/dat/*.h $(DESTDIR)$(INCDIR)/dat/
	install -m 0644 dat.conf.example $(DESTDIR)$(SYSCONFDIR)/dat/dat.conf.example
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCDIR@|$(INCDIR)|' dat.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/dat.pc

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all -- --check

clean:
	rm -rf $(BUILD)
	$(CARGO) clean

# The kernel-RDMA test guest (tests/guest/, QEMU TCG, built from Debian
# packages into ~/.cache/udapl-guest) and the interoperability test with the
# kernel's siw and rdma-core's rping (tests/guest/interop.sh; subsets:
# tests/guest/interop.sh --help).
INTEROP_BIN := $(CTOUT)/interop/rping_dat

.PHONY: interop guest guest-check

interop: $(INTEROP_BIN)

guest:
	tests/guest/build.sh

# Builds the guest first when ./setup.sh has not (a no-op when it is current;
# from nothing, the guest's packages and two module builds: 40 s here).
guest-check: lib $(INTEROP_BIN)
	@echo "== interoperability with the kernel's siw (QEMU guest)"
	tests/guest/build.sh >/dev/null
	tests/guest/interop.sh

# The DAT programs over verbs IAs on the kernel's rxe and siw in the guest
# (tests/guest/verbs.sh: the endpoint and consumer-pattern programs (the
# subset docs/testing.md names), the examples, rping against rping_dat, and
# rping_dat on siw in the guest against rping_dat over TCP on the host, CRC
# off and on). VERBS_TRANSPORT=tcp runs the same over our TCP transport in
# the guest (the harness without verbs).
VERBS_TRANSPORT ?= verbs
DEMO_BIN := $(BUILD)/demo/dat_demo
VERBS_CALLS := $(BUILD)/bench/verbs_calls

.PHONY: verbs-check verbs-bench verbs-calls

$(DEMO_BIN): examples/dat_demo.c include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -Iinclude -o $@ $< $(LDFLAGS_T)

# In check: the programs that pass over verbs today on each device, the
# examples and rping both ways; docs/testing.md lists what does not pass
# yet, and verbs-check-all runs the rest (interop with our TCP transport on
# the host included).
VERBS_SMOKE_RXE = ep/ep_lifecycle:!EPC_17 ep/ep_modify ep/ep_status ep/conn_connect ep/dto_e2e ep/e2e_smoke ep/notify_stress ep/conn_cr:!BADH_ ep/conn_e2e:!E2E_CONN_16 ep/conn_sp:!BADH_ \
                  ep/dto_send ep/dto_recv ep/dto_flags ep/dto_rmr ep/srq ep/e2e_threads consumer/teardown consumer/fork_servers \
                  consumer/polled_memory consumer/conn_patterns unit/unit_pz unit/unit_mem unit/unit_misc
VERBS_SMOKE_SIW = ep/ep_lifecycle:!EPC_17 ep/ep_modify ep/ep_status ep/conn_connect ep/dto_e2e ep/dto_rmr ep/e2e_smoke ep/conn_cr:!BADH_ ep/conn_e2e ep/conn_sp:!BADH_ ep/dto_send:!PSD_15 \
                  ep/dto_recv ep/dto_flags ep/srq:!SQP_11 ep/e2e_threads consumer/teardown consumer/fork_servers \
                  consumer/polled_memory
verbs-check: lib ctests examples $(INTEROP_BIN) $(DEMO_BIN)
	@echo "== DAT programs over verbs on rxe and siw (QEMU guest, transport=$(VERBS_TRANSPORT))"
	tests/guest/build.sh >/dev/null
	tests/guest/verbs.sh --transport $(VERBS_TRANSPORT) --device rxe --no-interop --programs "$(VERBS_SMOKE_RXE)"
	tests/guest/verbs.sh --transport $(VERBS_TRANSPORT) --device siw --no-interop --programs "$(VERBS_SMOKE_SIW)"

# Every program of the subset docs/testing.md describes, on both devices
# (not in check: not all of them pass over verbs yet).
verbs-check-all: lib ctests examples $(INTEROP_BIN) $(DEMO_BIN)
	tests/guest/build.sh >/dev/null
	tests/guest/verbs.sh --transport $(VERBS_TRANSPORT)

# dat-perf over a verbs IA beside perftest (ib_send_lat, ib_write_lat,
# ib_read_lat, ib_write_bw) on the same device in the same guest, with the
# ratios (tests/guest/verbs-perf.sh). Not in check.
verbs-bench: lib tools $(VERBS_CALLS)
	@echo "== dat-perf over verbs beside perftest (QEMU guest, transport=$(VERBS_TRANSPORT))"
	tests/guest/build.sh >/dev/null
	tests/guest/verbs-perf.sh --transport $(VERBS_TRANSPORT)
	$(MAKE) verbs-calls

# The DAT layer's cost over raw verbs call by call: one process per device
# alternates chunks of a lock-step ping-pong over raw verbs and over DAT on
# the same device in the guest and prints the paired ratio
# (ctests/bench/verbs_calls.c, tests/guest/verbs-calls.sh). Needs
# rdma-core's headers and libraries on the host (setup.sh installs them).
$(VERBS_CALLS): ctests/bench/verbs_calls.c include/dat/udat.h $(LIBOUT)/libdat.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(CWARN) -O2 -g -Iinclude -o $@ $< $(LDFLAGS_T) -libverbs -lrdmacm

verbs-calls: lib $(VERBS_CALLS)
	@echo "== the DAT layer over raw verbs, call by call (QEMU guest)"
	tests/guest/build.sh >/dev/null
	tests/guest/verbs-calls.sh
