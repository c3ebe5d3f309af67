# toolgate — GNU Make + pkg-config.  See README.md.
#
#   make            build/toolgate and build/libtoolgate.a (optimised)
#   make demo       the agent demo (toolgate agent, scripted model) on a fresh temporary workspace
#   make check      build with ASan+UBSan, run every test
#   make bench      pipeline, validator, apply_patch, shell, dispatch and MCP benchmarks
#   make fuzz       libFuzzer targets (clang), each run briefly
#   make tsan       the threaded tests under ThreadSanitizer
#   make deps       no include or call points from a lower layer to a higher one
#                   (scripts/deps --check; scripts/deps --report shows the whole graph)
#   make soak       gates under kills, stops, a full disk and a PostgreSQL restart, then
#                   exactly-once and the rest checked (10 min; SOAK_SECONDS; docs/RELIABILITY.md)
#   make install    PREFIX=/usr/local
#
# Each of these first installs what it needs and is missing (scripts/install-deps:
# the build's packages for make, demo and install; the tests' too for check, fuzz
# and tsan; node packages for check and bench), then does its work in a make of
# its own: pkg-config's flags are read when a make starts, so they must be read
# after the packages are there.

PREFIX  ?= /usr/local
.DEFAULT_GOAL := all
comma   := ,
CC      ?= cc
PKGS    := jansson yaml-0.1 sqlite3 libpcre2-8 libseccomp libutf8proc
# headers only: loaded with dlopen() when first needed (HTTP, a PostgreSQL ledger: src/util/dl.c)
PKGS_DL := libmicrohttpd libcurl libpq
VERSION := 0.1.0

# A make asked to build (not through an entry point below) finds the packages
# there, or says what to do: pkg-config with one module missing prints no flags at all.
ifneq ($(filter-out all demo install check bench fuzz tsan soak clean,$(MAKECMDGOALS)),)
ifneq ($(shell pkg-config --exists $(PKGS) $(PKGS_DL) 2>/dev/null && echo ok),ok)
$(error pkg-config does not find every package the build needs ($(PKGS) $(PKGS_DL)): run `make`, which installs them, or scripts/install-deps build)
endif
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(PKGS_DL) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wformat=2 -Wstrict-prototypes
BASE    := -std=c11 -D_GNU_SOURCE -DTG_VERSION_STRING='"$(VERSION)"' -Iinclude -Isrc $(WARN) $(PKG_CFLAGS)
OPT     ?= -O2 -g
SAN     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
TSAN    := -O1 -g -fsanitize=thread

LIB_SRC := $(sort $(shell find src -name '*.c'))
CLI_SRC := $(sort $(wildcard cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
# the public headers: toolgate.h and the two it includes
PUB_H    := include/toolgate.h $(wildcard include/toolgate/*.h)

# $(1) = build dir, $(2) = flags, $(3) = compiler (default $(CC))
define variant
$(1)/obj/%.o: %.c $$(PUB_H) $$(shell find src cli -name '*.h')
	@mkdir -p $$(dir $$@)
	$$(or $(3),$$(CC)) $(2) $$(BASE) -c $$< -o $$@
# the program is built against the public headers only, like any other user
$(1)/obj/cli/%.o: cli/%.c $$(PUB_H) cli/cli.h
	@mkdir -p $$(dir $$@)
	$$(or $(3),$$(CC)) $(2) $$(filter-out -Isrc,$$(BASE)) -c $$< -o $$@
$(1)/libtoolgate.a: $$(LIB_SRC:%.c=$(1)/obj/%.o) $(1)/obj/build/gen/eval_builtin.o
	@rm -f $$@
	ar rcs $$@ $$^
$(1)/toolgate: $$(CLI_SRC:%.c=$(1)/obj/%.o) $(1)/libtoolgate.a
	$$(CC) $(2) -o $$@ $$^ $$(PKG_LIBS) -lpthread
$(1)/tests/%: tests/unit/%.c $(1)/libtoolgate.a $$(wildcard tests/unit/*.h)
	@mkdir -p $$(dir $$@)
	$$(CC) $(2) $$(BASE) -Itests/unit -o $$@ $$< $(1)/libtoolgate.a $$(CMOCKA_LIBS) $$(PKG_LIBS) -lpthread
endef

# the built-in eval suite: the files of evals/ as C strings (src/eval/eval.h)
build/gen/eval_builtin.c: $(wildcard evals/*.yaml) scripts/embed-evals
	@mkdir -p $(dir $@)
	scripts/embed-evals $@ $(wildcard evals/*.yaml)

$(eval $(call variant,build,$(OPT)))
$(eval $(call variant,build/asan,$(SAN)))
$(eval $(call variant,build/tsan,$(TSAN)))
$(eval $(call variant,build/fuzzlib,-O1 -g -fsanitize=fuzzer-no-link$(comma)address$(comma)undefined,clang))

UNIT_BIN_ASAN := $(UNIT_SRC:tests/unit/%.c=build/asan/tests/%)
UNIT_BIN      := $(UNIT_SRC:tests/unit/%.c=build/tests/%)
# tests that use threads (theirs or the library's, waited on with pthread_*) also run under ThreadSanitizer
TSAN_TESTS    := $(patsubst %,build/tsan/tests/%,$(basename $(notdir $(shell grep -l pthread_ $(UNIT_SRC) 2>/dev/null))))
FUZZ_BIN      := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)

.PHONY: all check demo bench fuzz tsan soak install clean \
	build-all test deps demo-run bench-run fuzz-run tsan-run soak-run install-files

# The entry points: what they need (scripts/install-deps SET; node: also
# scripts/install-node-deps), then the work in a make of its own, on every
# core unless -j was given.
define entry # target, package set, node, the work
$(1):
	@scripts/install-deps $(2)
	$(if $(3),@scripts/install-node-deps)
	@$$(MAKE) --no-print-directory $$(if $$(findstring -j,$$(MAKEFLAGS)),,-j$$(NPROC)) $(4)
endef
NPROC := $(shell nproc 2>/dev/null || echo 2)
$(eval $(call entry,all,build,,build-all))
$(eval $(call entry,demo,build,,demo-run))
$(eval $(call entry,install,build,,install-files))
$(eval $(call entry,check,test,node,test))
$(eval $(call entry,bench,bench,node,bench-run))
$(eval $(call entry,fuzz,test,,fuzz-run))
$(eval $(call entry,tsan,test,,tsan-run))
$(eval $(call entry,soak,bench,,soak-run))

build-all: build/toolgate build/libtoolgate.a

# the optimised build too: -O2 finds warnings -O1 does not; each fuzzer 3 s from its
# corpus (make fuzz runs them longer)
test: build/toolgate build/asan/toolgate build/asan/fake_provider $(UNIT_BIN_ASAN) $(TSAN_TESTS) $(FUZZ_BIN)
	@TSAN_TESTS="$(TSAN_TESTS)" FUZZ_SMOKE="$(FUZZ_BIN)" FUZZ_SMOKE_SECONDS=$${FUZZ_SMOKE_SECONDS:-3} tests/run build/asan

# make check fails on a new dependency that points the wrong way
test: deps

# which way the dependencies point (issue 23): an upward include or call, a cycle
# scripts/deps-allow.txt does not name, or a file scripts/layers.txt does not place
# fails it; scripts/deps --report shows all of it
deps: build/toolgate
	@scripts/deps --check --no-build build/obj

# the threaded tests alone, under ThreadSanitizer (make check runs them too)
tsan-run: $(TSAN_TESTS)
	@for t in $(TSAN_TESTS); do echo "== $$t"; TSAN_OPTIONS=halt_on_error=1 $$t || exit 1; done

# not part of make check: SOAK_SECONDS (default 600) split between SQLite and PostgreSQL
soak-run: build/toolgate
	@python3 tests/soak/soak.py build/toolgate

demo-run: build/toolgate
	@scripts/demo build/toolgate

bench-run: build-all build/bench/pipeline build/bench/shared build/bench/redact build/bench/agent build/fake_provider build/bench/store build/bench/group build/bench/validate build/bench/jv build/bench/patch build/bench/shell build/bench/sandboxed build/bench/readmask build/bench/dispatch build/bench/mcp_pipe build/bench/netproxy
	@scripts/bench

build/bench/%: bench/%.c build/libtoolgate.a
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(BASE) -o $@ $< build/libtoolgate.a $(PKG_LIBS) -lpthread

# the fake model API that test_agent_http (and the bench) talk to: tests/fake_provider.c
build/fake_provider: tests/fake_provider.c
	@mkdir -p $(dir $@)
	$(CC) $(OPT) $(BASE) -o $@ $< $(PKG_LIBS)
build/asan/fake_provider: tests/fake_provider.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(BASE) -o $@ $< $(PKG_LIBS)
build/tests/test_agent_http: build/fake_provider
build/asan/tests/test_agent_http: build/asan/fake_provider
# test_eval_run too (its ThreadSanitizer build uses the ASan one)
build/tests/test_eval_run: build/fake_provider
build/asan/tests/test_eval_run build/tsan/tests/test_eval_run: build/asan/fake_provider

FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer,address,undefined
fuzz-run: $(FUZZ_BIN)
	@scripts/fuzz build/fuzz
build/fuzz/%: fuzz/%.c $(wildcard fuzz/*.h) build/fuzzlib/libtoolgate.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) $(BASE) -o $@ $< build/fuzzlib/libtoolgate.a $(PKG_LIBS) -lpthread

install-files: build-all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/toolgate
	install -m 755 build/toolgate $(DESTDIR)$(PREFIX)/bin/toolgate
	install -m 644 build/libtoolgate.a $(DESTDIR)$(PREFIX)/lib/libtoolgate.a
	install -m 644 include/toolgate.h $(DESTDIR)$(PREFIX)/include/toolgate.h
	install -m 644 $(wildcard include/toolgate/*.h) $(DESTDIR)$(PREFIX)/include/toolgate/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@PKGS@|$(PKGS)|' \
		toolgate.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/toolgate.pc

clean:
	rm -rf build
