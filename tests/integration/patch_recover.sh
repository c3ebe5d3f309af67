# Recovering a crashed patch: one way, whoever does it.  (patch_crash.sh
# kills every step; this case checks what the recovery settles and leaves.)
#
# 1. A gated apply_patch with an idempotency key is killed mid-commit; the
#    next start is `toolgate apply-patch` (no gate): it rolls the files back
#    AND settles the call's claim in the ledger as a gate's start would
#    (released, recorded as resolved, applied false): no claim stays open,
#    `ops list --unknown` is empty and the same call, repeated, runs.
# 2. A patch that adds a file is killed after its journal is written but
#    before the file's temp exists; another process then creates that path.
#    Recovery (by apply-patch, and by a gate) must leave the other's file and
#    say so.  The same once the patch's file was in place and was replaced
#    by another since.  A file the patch did create is still removed.
# 3. A journal of the earlier format (version 1) is still read: its backups
#    go back; a file it created cannot be told from another's and is left,
#    with a sentence.
# The crashes come from the kill_at shim (support/kill_at.c), as in
# patch_crash.sh: killed right after a given call, never by timing.
. "$(dirname "$0")/lib.sh"

cc -shared -fPIC -O2 -Wall -Wextra -Werror -o "$WS/kill_at.so" \
	"$ROOT/tests/integration/support/kill_at.c" -ldl || { echo "cannot build the kill_at shim" >&2; exit 1; }
SHIM_ASAN=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
: > "$WS/stdin"

# killed N DIR OUT CMD...: run CMD in DIR, dying (SIGKILL) right after call N
# (0: never); output to OUT, the calls to OUT.log.  CMD's exit status.
killed() {
	local n=$1 dir=$2 out=$3; shift 3
	rm -f "$out.log"
	{ (cd "$dir" && KILL_AT=$n KILL_WHEN=after KILL_LOG=$out.log LD_PRELOAD=$WS/kill_at.so \
		ASAN_OPTIONS=$SHIM_ASAN exec "$@" > "$out" 2>&1 < "$WS/stdin"); } 2> /dev/null
}
leftovers() { (cd "$1" && find . -name '.tgpatch-*'; ls -A .toolgate/journal 2> /dev/null); }
HARMLESS=$'*** Begin Patch\n*** Update File: untouched.txt\n@@\n-same\n+same\n*** End Patch'

# ---- 1. the claim of a gated call, settled by apply-patch
mkdir -p "$WS/orig" && cd "$WS/orig" || exit 1
printf 'one\n' > a.txt
printf 'two\n' > b.txt
printf 'same\n' > untouched.txt
cd "$WS" || exit 1
PATCH=$'*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-two\n+TWO\n*** Add File: c.txt\n+three\n*** End Patch'
jq -n --arg p "$PATCH" '{patch: $p}' > patch.json

rm -rf ref && cp -a orig ref
(cd ref && "$TG" call --json read_file '{"path":"untouched.txt"}' > /dev/null 2>&1)  # a ledger, as below
killed 0 "$WS/ref" "$WS/ref.out" "$TG" call --json --mode bypassPermissions apply_patch @"$WS/patch.json"
eq "$(jqv ref.out .status)" persisted "the gated patch applies"
MID=$(awk '$2 == "renameat" && $3 ~ /^\.tgpatch-.*\.new$/ { if (++k == 2) print $1 }' ref.out.log)
[ -n "$MID" ] || { fail "the gated commit's renames were not seen"; cat ref.out.log >&2; }

rm -rf g && cp -a orig g
(cd g && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/g0.out" 2>&1)
killed "$MID" "$WS/g" "$WS/gkill.out" \
	"$TG" call --json --mode bypassPermissions --key p1 apply_patch @"$WS/patch.json"
eq "$?" 137 "gated apply_patch killed after its second rename"
eq "$(cat g/a.txt)" ONE "the kill landed mid-commit (a.txt replaced)"
eq "$(sqlite3 g/.toolgate/ledger.db "SELECT state FROM idem")" in_flight "the killed call's claim is open"
hex=$(awk '$2 == "renameat" && $3 ~ /\.journal\.tmp$/ && $4 ~ /\.journal$/ { sub(/\.journal$/, "", $4); print $4; exit }' gkill.out.log)

(cd g && "$TG" apply-patch "$HARMLESS" > "$WS/ap.out" 2> "$WS/ap.err")
eq "$?" 0 "apply-patch runs after the crash"
sanitizers ap.err "apply-patch after the crash"
eq "$(cat ap.out)" $'Success. Updated the following files:\nM untouched.txt' "apply-patch's summary"
eq "$(cat g/a.txt) $(cat g/b.txt) $([ -e g/c.txt ] && echo c)" "one two " "apply-patch rolled the files back"
eq "$(leftovers g)" "" "no leftovers, no journal"
eq "$(sqlite3 g/.toolgate/ledger.db "SELECT count(*) FROM idem")" 0 \
	"apply-patch released the rolled-back call's claim (no claim left open)"
resolved=$(sqlite3 g/.toolgate/ledger.db "SELECT op_id || ' ' || data FROM events WHERE type = 'tool.call.resolved'")
op=${resolved%% *}
eq "${op//-/}" "$hex" "the op resolved is the one whose journal was rolled back"
eq "${resolved#* }" '{"applied":false}' "resolved as not applied"
(cd g && "$TG" ops list --unknown --json > "$WS/unknown.out" 2> "$WS/unknown.err")
eq "$(jq -c . unknown.out)" "[]" "no call has an unknown outcome after apply-patch's recovery"
(cd g && "$TG" call --json --mode bypassPermissions --key p1 apply_patch @"$WS/patch.json" > "$WS/again.out" 2> "$WS/again.err")
eq "$(jqv again.out .status)" persisted "the interrupted call repeated runs (nothing of it was applied)"
eq "$(cat g/a.txt) $(cat g/c.txt)" "ONE three" "and applies"

# the gated call killed after its commit point: the files stay patched and the
# claim is, as a gate's start leaves it, an unknown outcome for the operator
COMMIT=$(awk '$2 == "renameat" && $3 ~ /\.journal$/ && $4 ~ /\.commit$/ { print $1 }' ref.out.log)
rm -rf g && cp -a orig g
(cd g && "$TG" call --json read_file '{"path":"untouched.txt"}' > "$WS/g0.out" 2>&1)
killed "$COMMIT" "$WS/g" "$WS/gkill.out" \
	"$TG" call --json --mode bypassPermissions --key p2 apply_patch @"$WS/patch.json"
eq "$?" 137 "gated apply_patch killed at its commit point"
(cd g && "$TG" apply-patch "$HARMLESS" > "$WS/ap.out" 2> "$WS/ap.err")
eq "$?" 0 "apply-patch runs after a crash past the commit point"
eq "$(cat g/a.txt) $(cat g/c.txt)" "ONE three" "rolled forward"
eq "$(leftovers g)" "" "no leftovers, no journal (committed)"
(cd g && "$TG" ops list --unknown --json > "$WS/unknown.out" 2> /dev/null)
hex=$(awk '$2 == "renameat" && $3 ~ /\.journal\.tmp$/ && $4 ~ /\.journal$/ { sub(/\.journal$/, "", $4); print $4; exit }' gkill.out.log)
op=$(jq -r '.[].op_id' unknown.out)
eq "${op//-/}" "$hex" "the committed call is an unknown outcome for the operator, as a gate's start leaves it"

# ---- 2. a path someone else created since the crash survives the rollback
printf '*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Add File: new.txt\n+ours\n*** End Patch\n' > addpatch.txt
cp addpatch.txt stdin
rm -rf ref2 && cp -a orig ref2
(cd ref2 && "$TG" call --json read_file '{"path":"untouched.txt"}' > /dev/null 2>&1)  # a ledger, as below
killed 0 "$WS/ref2" "$WS/ref2.out" "$TG" apply-patch
eq "$?" 0 "the adding patch applies"
JOURNALED=$(awk '$2 == "renameat" && $3 ~ /\.journal\.tmp$/ && $4 ~ /\.journal$/ { print $1; exit }' ref2.out.log)
PLACED=$(awk '$2 == "renameat" && $3 ~ /^\.tgpatch-.*\.new$/ && $4 == "new.txt" { print $1 }' ref2.out.log)
[ -n "$JOURNALED" ] && [ -n "$PLACED" ] || { fail "the adding commit's calls were not seen"; cat ref2.out.log >&2; }

for via in apply-patch call; do
	for at in journaled placed; do
		what="killed once $at, another's new.txt, recovered by $via"
		n=$JOURNALED
		[ "$at" = placed ] && n=$PLACED
		rm -rf w && cp -a orig w
		(cd w && "$TG" call --json read_file '{"path":"untouched.txt"}' > /dev/null 2>&1)
		cp addpatch.txt stdin
		killed "$n" "$WS/w" "$WS/wkill.out" "$TG" apply-patch
		eq "$?" 137 "$what: died by SIGKILL"
		if [ "$at" = journaled ]; then
			[ -e w/new.txt ] && fail "$what: new.txt exists before the other made it"
		else
			eq "$(cat w/new.txt)" ours "$what: the patch's new.txt was in place"
			rm -f w/new.txt
		fi
		printf 'theirs\n' > w/new.txt           # another process, a new file
		if [ "$via" = apply-patch ]; then
			(cd w && "$TG" apply-patch "$HARMLESS" > "$WS/rec.out" 2> "$WS/rec.err")
			eq "$?" 0 "$what: apply-patch runs"
			contains "$(cat rec.err)" "new.txt" "$what: apply-patch says it left new.txt"
		else
			(cd w && "$TG" call --json read_file '{"path":"new.txt"}' > "$WS/rec.out" 2> "$WS/rec.err")
			eq "$(jqv rec.out .status)" persisted "$what: the call runs"
			eq "$(sqlite3 w/.toolgate/ledger.db "SELECT json_extract(data, '\$.path') FROM events WHERE type = 'patch.rollback.kept'")" \
				new.txt "$what: the gate recorded that it left new.txt"
		fi
		sanitizers rec.err "$what"
		eq "$(cat w/new.txt 2> /dev/null)" theirs "$what: the other's new.txt survives"
		eq "$(cat w/a.txt)" one "$what: a.txt rolled back"
		eq "$(leftovers w)" "" "$what: no leftovers, no journal"
	done
done
# and without another's file, the file the patch created is removed
rm -rf w && cp -a orig w && cp addpatch.txt stdin
(cd w && "$TG" call --json read_file '{"path":"untouched.txt"}' > /dev/null 2>&1)
killed "$PLACED" "$WS/w" "$WS/wkill.out" "$TG" apply-patch
(cd w && "$TG" apply-patch "$HARMLESS" > "$WS/rec.out" 2> "$WS/rec.err")
eq "$?" 0 "killed once placed, nobody else: apply-patch runs"
[ -e w/new.txt ] && fail "killed once placed, nobody else: the patch's new.txt stays"
eq "$(cat rec.err)" "" "killed once placed, nobody else: nothing to say"

# ---- 3. a journal of version 1 (before files were identified) is still read
rm -rf v && cp -a orig v && mkdir -p v/.toolgate/journal && chmod 700 v/.toolgate v/.toolgate/journal
printf 'ONE\n' > v/a.txt.new && ln v/a.txt v/.tgpatch-0-0.old && mv v/a.txt.new v/a.txt
printf 'made\n' > v/made.txt
printf '%s' '{"version":1,"tx":"0123456789abcdef0123456789abcdef","dirs":[],"files":[{"path":"a.txt","temp":".tgpatch-0-0.new","backup":".tgpatch-0-0.old"},{"path":"made.txt","temp":".tgpatch-0-1.new","backup":null}]}' \
	> v/.toolgate/journal/0123456789abcdef0123456789abcdef.journal
chmod 600 v/.toolgate/journal/*.journal
(cd v && "$TG" apply-patch "$HARMLESS" > "$WS/v.out" 2> "$WS/v.err")
eq "$?" 0 "a version 1 journal: apply-patch runs"
sanitizers v.err "a version 1 journal"
eq "$(cat v/a.txt)" one "a version 1 journal: its backup goes back"
eq "$(cat v/made.txt 2> /dev/null)" made "a version 1 journal: a file it may have created is left"
contains "$(cat v.err)" "made.txt" "a version 1 journal: apply-patch says it left made.txt"
eq "$(leftovers v)" "" "a version 1 journal: no leftovers, no journal"
# one of a version this build does not know is refused with a sentence, and kept
rm -rf v && cp -a orig v && mkdir -p v/.toolgate/journal && chmod 700 v/.toolgate v/.toolgate/journal
printf '%s' '{"version":9,"tx":"0123456789abcdef0123456789abcdef","dirs":[],"files":[]}' \
	> v/.toolgate/journal/0123456789abcdef0123456789abcdef.journal
chmod 600 v/.toolgate/journal/*.journal
(cd v && "$TG" apply-patch "$HARMLESS" > "$WS/v.out" 2> "$WS/v.err")
eq "$?" 1 "a journal of an unknown version: apply-patch refuses"
sanitizers v.err "a journal of an unknown version"
contains "$(cat v.err)" "version 9" "a journal of an unknown version: the sentence names it"
eq "$(ls v/.toolgate/journal)" 0123456789abcdef0123456789abcdef.journal "the journal of an unknown version is kept"
finish
