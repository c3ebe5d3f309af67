# scripts/deps (issue 23) on tiny trees made here, each with its own layer
# model (base: src/util, gate: src/gate) and objects compiled here:
#  - a clean tree (gate calls and includes util) passes --check silently;
#  - an upward include (util/a.c includes gate/g.h) and a cycle (util calls
#    gate, gate calls util) are each found, named and make --check fail, and
#    --report still exits 0;
#  - the allow-list excuses an arrow or a cycle only where it names every
#    file, each line with a reason (a line without one is refused);
#  - a cycle inside one layer fails too until the allow-list names it;
#  - a file no layer places fails --check and is only a warning in --report;
#  - an include resolves as cc -Iinclude -Isrc does, the including file's
#    own directory first: "a.h" in src/gate/g.c is src/gate/a.h.
. "$(dirname "$0")/lib.sh"
DEPS=$ROOT/scripts/deps
CC=${CC:-cc}

# tree DIR: the layer model and an empty allow-list
tree() {
	mkdir -p "$1/src/util" "$1/src/gate" "$1/scripts"
	printf '# lowest first\nbase: src/util/*\ngate: src/gate/*\n' > "$1/scripts/layers.txt"
	: > "$1/scripts/deps-allow.txt"
}
# objects DIR: every src/**.c compiled to DIR/build/obj/src/**.o as the Makefile does
objects() {
	local f
	(cd "$1" && for f in $(find src -name '*.c'); do
		mkdir -p "build/obj/$(dirname "$f")"
		$CC -std=c11 -Iinclude -Isrc -c "$f" -o "build/obj/${f%.c}.o" || exit 1
	done)
}
deps() { # DIR ARGS...: the script on DIR's tree; output to $OUT, status to $RC
	local dir=$1; shift
	OUT=$("$DEPS" --root "$dir" "$@" "$dir/build/obj" 2>&1); RC=$?
}

# --- clean: gate -> util only
C=$WS/clean
tree "$C"
printf 'int a(void);\n' > "$C/src/util/a.h"
printf '#include "util/a.h"\nint a(void) { return 1; }\n' > "$C/src/util/a.c"
printf 'int g(void);\n' > "$C/src/gate/g.h"
printf '#include "gate/g.h"\n#include "util/a.h"\nint g(void) { return a(); }\n' > "$C/src/gate/g.c"
objects "$C" || fail "the clean tree does not compile"
deps "$C" --check
eq "$RC" 0 "the clean tree passes --check"
eq "$OUT" "" "--check is quiet on a clean tree"
deps "$C" --report --all
eq "$RC" 0 "--report on the clean tree"
contains "$OUT" "src/gate/g.c -> src/util/a.c" "--report lists a downward call when asked with --all"
contains "$OUT" "upward includes: 0" "no upward include in the clean tree"
contains "$OUT" "upward calls: 0" "no upward call in the clean tree"

# --- planted: util/a.c includes gate/g.h and calls g(); g() calls a()
P=$WS/planted
tree "$P"
printf 'int a(void);\n' > "$P/src/util/a.h"
printf '#include "util/a.h"\n#include "gate/g.h"\nint a(void) { return g() - 1; }\n' > "$P/src/util/a.c"
printf 'int g(void);\n' > "$P/src/gate/g.h"
printf '#include "gate/g.h"\n#include "util/a.h"\nint g(void) { return a() + 2; }\n' > "$P/src/gate/g.c"
objects "$P" || fail "the planted tree does not compile"
deps "$P" --check
[ "$RC" -ne 0 ] || fail "--check passes a tree with an upward include and a cycle"
contains "$OUT" "src/util/a.c -> src/gate/g.h (layer base < layer gate)" "the upward include named"
contains "$OUT" "src/util/a.c -> src/gate/g.c (layer base < layer gate): g" "the upward call named, with its symbol"
contains "$OUT" "cycle (2 files): src/gate/g.c src/util/a.c" "the cycle in the symbol graph named"
contains "$OUT" "scripts/deps-allow.txt" "--check says what to do"
deps "$P" --report
eq "$RC" 0 "--report exits 0 whatever it finds"
contains "$OUT" "upward includes: 1" "--report counts the upward include"
contains "$OUT" "upward calls: 1" "--report counts the upward call"
deps "$P"
[ "$RC" -ne 0 ] || fail "without an option the script fails as --check does"

# an allow-list line does not excuse a cycle through files it does not name
printf 'cycle src/gate/*: not the util side\n' > "$P/scripts/deps-allow.txt"
deps "$P" --check
[ "$RC" -ne 0 ] || fail "a cycle half-named by the allow-list passes"
contains "$OUT" "src/util/a.c" "the file the allow-list does not name is shown"
# arrow lines excuse the upward include and call, a cycle line the cycle
printf '%s\n' 'arrow src/util/a.c -> src/gate/*: util/a.c is allowed to reach up here' \
	'cycle src/util/* src/gate/*: and so is the circle' > "$P/scripts/deps-allow.txt"
deps "$P" --check
eq "$RC" 0 "every finding excused by the allow-list"
deps "$P" --report
contains "$OUT" "upward includes: 1 (1 allowed)" "--report still counts the excused arrow"
contains "$OUT" "[allowed: util/a.c is allowed to reach up here]" "with its reason"

# --- a cycle inside one layer: fails until allowed, with a reason
T=$WS/table
tree "$T"
printf 'int r(void);\nint h(void);\n' > "$T/src/gate/t.h"
printf '#include "t.h"\nint r(void) { return h(); }\nint main(void) { return r(); }\n' > "$T/src/gate/t.c"
printf '#include "t.h"\nint h(void) { return 0; }\nint k(void) { return r(); }\n' > "$T/src/gate/row.c"
objects "$T" || fail "the table tree does not compile"
deps "$T" --check
[ "$RC" -ne 0 ] || fail "an unlisted cycle inside one layer passes"
contains "$OUT" "cycle (2 files): src/gate/row.c src/gate/t.c" "the same-layer cycle named"
printf '# kind globs: reason\ncycle src/gate/t.c src/gate/row.c: t.c calls its rows, a row calls back r()\n' > "$T/scripts/deps-allow.txt"
deps "$T" --check
eq "$RC" 0 "a cycle the allow-list names passes"
eq "$OUT" "" "and --check stays quiet"
deps "$T" --report
contains "$OUT" "allowed: t.c calls its rows" "--report shows the allowed cycle with its reason"
printf 'cycle src/gate/t.c src/gate/row.c\n' > "$T/scripts/deps-allow.txt"
deps "$T" --check
eq "$RC" 2 "an allow-list line without a reason is refused"
contains "$OUT" "reason" "the refusal says a reason is missing"

# --- own directory first, and a file no layer places
U=$WS/unplaced
tree "$U"
printf 'int a(void);\n' > "$U/src/util/a.h"
printf 'int ga(void);\n' > "$U/src/gate/a.h"
printf 'int sa(void);\n' > "$U/src/a.h"   # what -Isrc alone would find
printf '#include "a.h"\nint ga(void) { return 0; }\n' > "$U/src/gate/g.c"
mkdir -p "$U/src/extra"
printf 'int x(void) { return 0; }\n' > "$U/src/extra/x.c"
objects "$U" || fail "the unplaced tree does not compile"
deps "$U" --report --all
eq "$RC" 0 "--report with an unplaced file exits 0"
contains "$OUT" "unplaced: src/extra/x.c" "the unplaced file named"
contains "$OUT" "src/gate/g.c -> src/gate/a.h" "\"a.h\" from src/gate/ is src/gate/a.h"
case "$OUT" in *"src/gate/g.c -> src/a.h"*) fail "\"a.h\" from src/gate/ resolved to src/a.h" ;; esac
deps "$U" --check
[ "$RC" -ne 0 ] || fail "--check passes an unplaced file"
contains "$OUT" "src/extra/x.c" "--check names the unplaced file"

finish
