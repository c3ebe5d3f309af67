# apply_patch is all or nothing across a crash.  The process is killed (SIGKILL,
# from an LD_PRELOAD shim, support/kill_at.c) right before and right after every
# call that changes a directory entry during a commit -- the journal's rename,
# each mkdir, backup link, rename over a file, unlink, the rename of
# <tx>.journal to <tx>.commit (the commit point) and the clean-up after it --
# and the next start (`toolgate apply-patch`, or a gate opened by `toolgate
# call`) must leave exactly the original tree (killed before the commit point)
# or exactly the patched one (killed after it): same files, bytes, modes,
# symlinks and directories, no .tgpatch-* leftovers, no journal left.  Two
# patches: "mixed" (every kind of operation) and "bulk" (enough files for the
# bulk sync path).  Then: a recovery killed at each of its own steps; a commit
# frozen alive mid-way (SIGSTOP), which others must not undo; the gated tool
# (`toolgate call apply_patch`) killed mid-commit and after its commit point;
# and a journal planted in the workspace, which must not be acted on.
. "$(dirname "$0")/lib.sh"

cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$WS/kill_at.so" \
	"$ROOT/tests/integration/support/kill_at.c" -ldl || { echo "cannot build the kill_at shim" >&2; exit 1; }
SHIM_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

# killed N WHEN DIR OUT CMD...: run CMD in DIR with the shim, dying at call N
# (0: never) WHEN (before|after); stdout+stderr to OUT, calls logged to OUT.log.
# Returns CMD's exit status (137: SIGKILL).
killed() {
	local n=$1 when=$2 dir=$3 out=$4; shift 4
	rm -f "$out.log"
	{ (cd "$dir" && KILL_AT=$n KILL_WHEN=$when KILL_LOG=$out.log LD_PRELOAD=$WS/kill_at.so \
		ASAN_OPTIONS=$SHIM_ASAN exec "$@" > "$out" 2>&1 < "$WS/stdin"); } 2> /dev/null
}

# manifest DIR: every entry below DIR except the gate's state, with its type,
# mode, symlink target and, for files, the SHA-256 of its bytes
manifest() {
	(cd "$1" && find . -mindepth 1 -path ./.toolgate -prune -o -printf '%y %m %P -> %l\n' |
		LC_ALL=C sort &&
		find . -mindepth 1 -path ./.toolgate -prune -o -type f -print0 | LC_ALL=C sort -z |
		xargs -0 -r sha256sum)
}

# ---- scenario "mixed": updates (one CRLF, one executable, one in two places),
# a delete, an add in a new directory, a move into another new directory
mkdir -p "$WS/mixed/orig" && cd "$WS/mixed/orig" || exit 1
mkdir -p src old lib docs
printf 'Title\r\n\r\nversion 1\r\nend\r\n' > README.md
cat > src/main.c <<'C'
#include <stdio.h>

static int helper(void)
{
	return 1;
}

int main(void)
{
	printf("%d\n", helper());
	return 0;
}
C
printf '#!/bin/sh\necho old\n' > src/run.sh && chmod 755 src/run.sh
printf 'obsolete\n' > old/obsolete.txt
printf 'keep\n' > old/keep.txt
printf 'int legacy(void)\n{\n\treturn 0;\n}\n' > lib/legacy.c
printf 'notes\n' > docs/notes.md
printf 'same\n' > untouched.txt
ln -s src/main.c main-link
cat > ../patch.txt <<'PATCH'
*** Begin Patch
*** Update File: README.md
@@
-version 1
+version 2
*** Update File: src/main.c
@@ static int helper(void)
 {
-	return 1;
+	return 42;
 }
@@ int main(void)
 {
-	printf("%d\n", helper());
+	printf("helper: %d\n", helper());
 	return 0;
*** Update File: src/run.sh
@@
-echo old
+echo new
*** Delete File: old/obsolete.txt
*** Add File: new/deep/added.txt
+added
+in a new directory
*** Update File: lib/legacy.c
*** Move to: pkg/core/legacy.c
@@
 int legacy(void)
 {
-	return 0;
+	return 7;
 }
*** End Patch
PATCH

# ---- scenario "bulk": enough files (12) for the commit's bulk sync path
mkdir -p "$WS/bulk/orig" && cd "$WS/bulk/orig" || exit 1
mkdir -p m gone
{
	echo '*** Begin Patch'
	for i in 1 2 3 4 5 6 7 8 9 10; do
		printf 'file %s\nvalue %s\n' "$i" "$i" > "m/f$i.txt"
		printf '*** Update File: m/f%s.txt\n@@\n file %s\n-value %s\n+value %s0\n' "$i" "$i" "$i" "$i"
	done
	printf 'bye\n' > gone/last.txt
	printf '*** Delete File: gone/last.txt\n*** Add File: fresh/one.txt\n+one\n*** End Patch\n'
} > ../patch.txt
printf 'same\n' > untouched.txt
cd "$WS" || exit 1
HARMLESS=$'*** Begin Patch\n*** Update File: untouched.txt\n@@\n-same\n+same\n*** End Patch'

# check_after WHAT DIR WANT: the tree is exactly WANT (orig|patched), nothing left over
check_after() {
	local what=$1 dir=$2 want=$3 got left
	got=$(manifest "$dir")
	CHECKS=$((CHECKS + 1))
	if [ "$got" != "$ORIG" ] && [ "$got" != "$PATCHED" ]; then
		fail "$what: the tree is neither the original nor the patched one (< original, > actual):"
		diff <(printf '%s\n' "$ORIG") <(printf '%s\n' "$got") | grep '^[<>]' | head -n 20 >&2
	elif [ "$want" = orig ]; then
		[ "$got" == "$ORIG" ] || fail "$what: killed before the commit point, but the tree is the patched one"
	else
		[ "$got" == "$PATCHED" ] || fail "$what: killed after the commit point, but the tree is the original"
	fi
	left=$(cd "$dir" && find . -name '.tgpatch-*')
	eq "$left" "" "$what: no .tgpatch-* leftovers"
	if [ -d "$dir/.toolgate/journal" ]; then
		eq "$(ls -A "$dir/.toolgate/journal")" "" "$what: .toolgate/journal is empty"
	fi
}

# reference SC: apply SC's patch uninterrupted with every call counted; sets
# ORIG, PATCHED (manifests), TOTAL (calls) and COMMIT (the commit point's number)
reference() {
	local sc=$WS/$1
	cp "$sc/patch.txt" "$WS/stdin"
	ORIG=$(manifest "$sc/orig")
	rm -rf "$sc/ref" && cp -a "$sc/orig" "$sc/ref"
	killed 0 before "$sc/ref" "$sc/ref.out" "$TG" apply-patch
	eq "$?" 0 "$1: the patch applies"
	[ -e "$sc/ref/.toolgate" ] && fail "$1: apply-patch left .toolgate behind"
	PATCHED=$(manifest "$sc/ref")
	[ "$ORIG" != "$PATCHED" ] || fail "$1: the patch changed nothing"
	mv "$sc/ref.out.log" "$sc/count.log"
	TOTAL=$(wc -l < "$sc/count.log")
	COMMIT=$(awk '$2 == "renameat" && $3 ~ /\.journal$/ && $4 ~ /\.commit$/ { print $1 }' "$sc/count.log")
	[ -n "$COMMIT" ] || { fail "$1: no rename of <tx>.journal to <tx>.commit among the calls"; cat "$sc/count.log" >&2; }
}

# crash_every_step SC [alternate]: kill `toolgate apply-patch` before and after
# each of its calls; recover once with the next apply-patch and once with a
# gate (alternate: one of the two, taking turns, to halve the time)
crash_every_step() {
	local sc=$WS/$1 n when want step via vias what rc turn
	for ((n = 1; n <= TOTAL; n++)); do
		for when in before after; do
			want=orig
			if [ "$n" -gt "$COMMIT" ] || { [ "$n" -eq "$COMMIT" ] && [ "$when" = after ]; }; then
				want=patched
			fi
			step=$(awk -v n="$n" '$1 == n { print $2, $3 }' "$sc/count.log")
			vias="apply-patch call"
			if [ "${2:-}" = alternate ]; then
				turn=$((n % 2))
				[ "$when" = after ] && turn=$((1 - turn))
				vias=$([ $turn = 1 ] && echo apply-patch || echo call)
			fi
			for via in $vias; do
				what="$1: killed $when call $n ($step), recovered by $via"
				rm -rf "$sc/w" && cp -a "$sc/orig" "$sc/w"
				killed "$n" "$when" "$sc/w" "$sc/kill.out" "$TG" apply-patch
				rc=$?
				eq "$rc" 137 "$what: died by SIGKILL"
				[ "$rc" -eq 137 ] || { head -n 5 "$sc/kill.out" >&2; continue; }
				eq "$(tail -n 1 "$sc/kill.out.log" | cut -d' ' -f1,2)" \
					"$(sed -n "${n}p" "$sc/count.log" | cut -d' ' -f1,2)" "$what: the same call as in the count"
				if [ "$via" = apply-patch ]; then
					(cd "$sc/w" && "$TG" apply-patch "$HARMLESS" > "$sc/rec.out" 2> "$sc/rec.err")
					eq "$?" 0 "$what: the next apply-patch runs"
					eq "$(cat "$sc/rec.out")" $'Success. Updated the following files:\nM untouched.txt' \
						"$what: the next apply-patch's summary"
				else
					(cd "$sc/w" && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$sc/rec.out" 2> "$sc/rec.err")
					eq "$(jqv "$sc/rec.out" .status)" persisted "$what: the next call runs"
				fi
				sanitizers "$sc/rec.err" "$what"
				check_after "$what" "$sc/w" "$want"
			done
		done
	done
}

reference bulk
eq "$(grep -c ' renameat \.tgpatch-' bulk/count.log)" 11 "bulk: eleven files written"
crash_every_step bulk alternate

reference mixed
eq "$(cat mixed/ref.out)" "$(printf 'Success. Updated the following files:\nA new/deep/added.txt\nM README.md\nM src/main.c\nM src/run.sh\nM pkg/core/legacy.c\nD old/obsolete.txt')" \
	"mixed: the summary"
eq "$(printf 'Title\r\n\r\nversion 2\r\nend\r\n' | sha256sum)" "$(sha256sum < mixed/ref/README.md)" "CRLF kept"
eq "$(stat -c %a mixed/ref/src/run.sh)" 755 "the executable stays executable"
[ "$TOTAL" -ge 20 ] || fail "only $TOTAL calls counted: the shim does not see the commit"
for step in 'mkdirat deep' 'linkat obsolete.txt' 'unlinkat obsolete.txt' 'renameat .tgpatch-' 'linkat legacy.c'; do
	grep -q " $step" mixed/count.log || fail "the commit has no '$step' call: the scenario misses a step"
done
crash_every_step mixed

# ---- a crash during the recovery itself: the start after it finishes the job
MID=$(awk '$2 == "renameat" && $3 ~ /^\.tgpatch-.*\.new$/ { if (++k == 2) print $1 }' mixed/count.log)
rm -rf mixed/crashed && cp -a mixed/orig mixed/crashed
killed "$MID" after "$WS/mixed/crashed" "$WS/mixed/kill.out" "$TG" apply-patch
eq "$?" 137 "mixed: killed after its second rename"
rm -rf mixed/w && cp -a mixed/crashed mixed/w
killed 0 before "$WS/mixed/w" "$WS/mixed/rcount.out" "$TG" apply-patch "$HARMLESS"
eq "$?" 0 "the recovering apply-patch runs"
check_after "recovered once" "$WS/mixed/w" orig
RTOTAL=$(wc -l < mixed/rcount.out.log)
grep -q ' renameat \.tgpatch-.*\.old' mixed/rcount.out.log || fail "the recovery renamed no backup back"
for ((n = 1; n <= RTOTAL; n++)); do
	for when in before after; do
		step=$(awk -v n="$n" '$1 == n { print $2, $3 }' mixed/rcount.out.log)
		what="recovery killed $when its call $n ($step), recovered again by call"
		rm -rf mixed/w && cp -a mixed/crashed mixed/w
		killed "$n" "$when" "$WS/mixed/w" "$WS/mixed/rkill.out" "$TG" apply-patch "$HARMLESS"
		eq "$?" 137 "$what: died by SIGKILL"
		(cd mixed/w && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/mixed/rec.out" 2> "$WS/mixed/rec.err")
		eq "$(jqv mixed/rec.out .status)" persisted "$what: the next call runs"
		sanitizers mixed/rec.err "$what"
		check_after "$what" "$WS/mixed/w" orig
	done
done

# ---- a live commit is never undone: a commit frozen mid-way (SIGSTOP) keeps
# its journal locked; gates and apply-patch started meanwhile leave it alone
rm -rf mixed/w && cp -a mixed/orig mixed/w
cp mixed/patch.txt stdin
(cd mixed/w && KILL_AT=$MID KILL_WHEN=after KILL_SIG=STOP LD_PRELOAD=$WS/kill_at.so \
	ASAN_OPTIONS=$SHIM_ASAN exec "$TG" apply-patch < "$WS/stdin" > "$WS/mixed/live.out" 2>&1) &
live=$!
for _ in $(seq 200); do
	case "$(ps -o stat= -p "$live")" in T*) break ;; esac
	sleep 0.05
done
case "$(ps -o stat= -p "$live")" in
T*)
	frozen=$(manifest "$WS/mixed/w")
	[ "$frozen" != "$ORIG" ] && [ "$frozen" != "$PATCHED" ] || fail "the commit did not freeze mid-way"
	(cd mixed/w && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/mixed/live1.out" 2> "$WS/mixed/live1.err")
	eq "$(jqv mixed/live1.out .status)" persisted "a call while a commit is live runs"
	(cd mixed/w && "$TG" apply-patch "$HARMLESS" > "$WS/mixed/live2.out" 2> "$WS/mixed/live2.err")
	eq "$?" 0 "an apply-patch while a commit is live runs"
	eq "$(manifest "$WS/mixed/w")" "$frozen" "neither undid the live commit"
	eq "$(ls mixed/w/.toolgate/journal | grep -c '\.journal$')" 1 "its journal is still there"
	kill -CONT "$live"
	wait "$live"
	eq "$?" 0 "the live commit, resumed, finishes"
	check_after "the live commit, resumed" "$WS/mixed/w" patched
	;;
*)
	fail "the commit did not freeze (state '$(ps -o stat= -p "$live")')"
	kill -KILL "$live" 2> /dev/null
	wait "$live" 2> /dev/null
	;;
esac

# ---- the gated tool: toolgate call apply_patch, killed mid-commit
jq -n --rawfile p mixed/patch.txt '{patch: $p}' > patch.json
: > stdin
rm -rf g && cp -a mixed/orig g
killed 0 before "$WS/g" "$WS/gcount.out" "$TG" call --json --mode bypassPermissions apply_patch @"$WS/patch.json"
eq "$(jqv gcount.out .status)" persisted "the gated patch applies"
eq "$(manifest "$WS/g")" "$PATCHED" "the gated patch gives the same tree"
GCOMMIT=$(awk '$2 == "renameat" && $3 ~ /\.journal$/ && $4 ~ /\.commit$/ { print $1 }' gcount.out.log)
GMID=$(awk '$2 == "renameat" && $3 ~ /^\.tgpatch-.*\.new$/ { if (++k == 2) print $1 }' gcount.out.log)
[ -n "$GCOMMIT" ] && [ -n "$GMID" ] || { fail "the gated commit's calls were not seen"; cat gcount.out.log >&2; finish; exit; }

# mid-commit, two files already replaced and the rest not; the call carries an
# idempotency key, so its claim outlives the process
rm -rf g && cp -a mixed/orig g
(cd g && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/g0.out" 2>&1)  # a ledger with history
killed "$GMID" after "$WS/g" "$WS/gkill.out" \
	"$TG" call --json --mode bypassPermissions --key p1 apply_patch @"$WS/patch.json"
eq "$?" 137 "gated apply_patch killed after its second rename: died by SIGKILL"
mid=$(manifest "$WS/g")
[ "$mid" != "$ORIG" ] && [ "$mid" != "$PATCHED" ] || fail "the kill did not land mid-commit"
(cd g && "$TG" log > "$WS/glog.out" 2> "$WS/glog.err")
eq "$?" 0 "toolgate log runs after the crash"
sanitizers glog.err "log after the crash"
contains "$(cat glog.out)" read_file "the log shows the ledger's history"
check_after "gated, killed mid-commit, recovered by toolgate log" "$WS/g" orig
(cd g && "$TG" call --json read_file '{"path":"src/main.c"}' > "$WS/gnext.out" 2> "$WS/gnext.err")
eq "$(jqv gnext.out .status)" persisted "the next call runs"
contains "$(jqv gnext.out .output.content)" "return 1;" "and reads the restored file"
# the interrupted call applied nothing -- its journal, named after the op, was
# rolled back -- so the gate that rolled it back released the call's claim
# (recorded as resolved, applied false): the same call, repeated, runs
hex=$(awk '$2 == "renameat" && $3 ~ /\.journal\.tmp$/ && $4 ~ /\.journal$/ { sub(/\.journal$/, "", $4); print $4; exit }' gkill.out.log)
[ -n "$hex" ] || fail "the interrupted commit wrote no journal"
eq "$(ls -A g/.toolgate/journal)" "" "the interrupted commit's journal is gone"
resolved=$(sqlite3 g/.toolgate/ledger.db "SELECT op_id || ' ' || data FROM events WHERE type = 'tool.call.resolved'")
op=${resolved%% *}
eq "${op//-/}" "$hex" "the op whose journal was rolled back is the one resolved"
eq "${resolved#* }" '{"applied":false}' "resolved as not applied"
(cd g && "$TG" call --json --mode bypassPermissions --key p1 apply_patch @"$WS/patch.json" > "$WS/gagain.out" 2> "$WS/gagain.err")
eq "$(jqv gagain.out .status)" persisted "the interrupted call repeated: it runs (nothing of it was applied)"
sanitizers gagain.err "the patch called again"
check_after "gated, the interrupted call repeated" "$WS/g" patched

# after the commit point, before the clean-up: rolled forward by the next call
rm -rf g && cp -a mixed/orig g
killed $((GCOMMIT + 1)) before "$WS/g" "$WS/gkill2.out" "$TG" call --json --mode bypassPermissions apply_patch @"$WS/patch.json"
eq "$?" 137 "gated apply_patch killed after the commit point: died by SIGKILL"
[ -n "$(cd g && find . -name '.tgpatch-*')" ] || fail "the kill did not land before the clean-up"
(cd g && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/gnext2.out" 2> "$WS/gnext2.err")
eq "$(jqv gnext2.out .status)" persisted "the next call runs"
check_after "gated, killed after the commit point, recovered by the next call" "$WS/g" patched
# ---- a journal the gate did not write is not acted on.  A repository can
# carry a .toolgate/journal/ of its own (git stores it like any directory, its
# files come out owned by the user, mode 644): opening a gate or running
# apply-patch there must not delete or replace files because of it, least of
# all under .git/.
for via in call apply-patch; do
	rm -rf h && mkdir -p h/.toolgate/journal h/.git
	printf 'ref: refs/heads/main\n' > h/.git/HEAD
	printf 'precious\n' > h/notes.txt
	printf 'planted\n' > h/.tgpatch-x.old
	printf 'same\n' > h/untouched.txt
	printf '%s' '{"version":1,"dirs":[],"files":[{"path":".git/HEAD","temp":".tgpatch-y.new"},{"path":"notes.txt","temp":".tgpatch-z.new","backup":".tgpatch-x.old"}]}' \
		> h/.toolgate/journal/0123456789abcdef0123456789abcdef.journal
	chmod 644 h/.toolgate/journal/*.journal
	if [ "$via" = call ]; then
		(cd h && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/h.out" 2> "$WS/h.err")
	else
		(cd h && "$TG" apply-patch "$HARMLESS" > "$WS/h.out" 2> "$WS/h.err")
	fi
	sanitizers h.err "planted journal, $via"
	eq "$(cat h/.git/HEAD 2> /dev/null)" "ref: refs/heads/main" "a planted journal does not make $via delete .git/HEAD"
	eq "$(cat h/notes.txt 2> /dev/null)" precious "a planted journal does not make $via replace notes.txt"
done
finish
