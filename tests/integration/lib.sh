# Sourced by every integration case.  Gives: $TG (the program), a fresh
# workspace $WS (removed on exit), and assertions that print what differed.
set -uo pipefail
TG=${TOOLGATE:?TOOLGATE must point at the toolgate binary}
ROOT=${TOOLGATE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
WS=$(mktemp -d "${TMPDIR:-/tmp}/tg-it.XXXXXX")
# the gates' machine key ($XDG_STATE_HOME/toolgate/key) is this case's own,
# outside the workspace; reach_as gives another user one of theirs
TG_STATE=$(mktemp -d "${TMPDIR:-/tmp}/tg-state.XXXXXX")
export XDG_STATE_HOME=$TG_STATE
trap 'chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS" "$TG_STATE"' EXIT
unset TOOLGATE_CONFIG TOOLGATE_PRINCIPAL TOOLGATE_TOKEN
FAILS=0
CHECKS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

# eq ACTUAL EXPECTED WHAT
eq() {
	CHECKS=$((CHECKS + 1))
	[ "$1" == "$2" ] || fail "$3: expected '$2', got '$1'"
}
# contains HAYSTACK NEEDLE WHAT
contains() {
	CHECKS=$((CHECKS + 1))
	case "$1" in *"$2"*) ;; *) fail "$3: '$2' not found in: ${1:0:400}" ;; esac
}
# jqv FILE FILTER: one value
jqv() { jq -r "$2" "$1"; }

# tgcall NAME ARGS...: run toolgate call --json in $WS, envelope to $WS/NAME.json,
# exit code to $WS/NAME.exit
tgcall() {
	local name=$1; shift
	(cd "$WS" && "$TG" call --json "$@" > "$WS/$name.json" 2> "$WS/$name.err" < /dev/null)
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "$name"
}

# sanitizers FILE WHAT: a sanitizer report in a program's stderr is a failure
# reach_as USER DIR: RUN_TG and RUN_LSAN to run the gate as USER (empty:
# as this user), with copies in DIR of the binary and of the LSan
# suppressions when USER cannot reach them where they are, and
# XDG_STATE_HOME a directory of USER's own in DIR (the machine key's).
reach_as() {
	local as=$1 dir=$2
	RUN_TG=$TG RUN_LSAN=${LSAN_OPTIONS:-}
	export XDG_STATE_HOME=$TG_STATE
	[ -n "$as" ] || return 0
	mkdir -p -m 700 "$dir/state.$as"
	chown "$as" "$dir/state.$as"
	export XDG_STATE_HOME=$dir/state.$as
	if ! runuser -u "$as" -- test -x "$TG"; then
		cp "$TG" "$dir/toolgate"
		chmod 755 "$dir/toolgate"
		RUN_TG=$dir/toolgate
	fi
	if [ -f "$ROOT/tests/lsan.supp" ] && ! runuser -u "$as" -- test -r "$ROOT/tests/lsan.supp"; then
		cp "$ROOT/tests/lsan.supp" "$dir/lsan.supp"
		chmod 644 "$dir/lsan.supp"
		RUN_LSAN=${RUN_LSAN//$ROOT\/tests\/lsan.supp/$dir/lsan.supp}
	fi
}

sanitizers() {
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer' "$1" 2>/dev/null; then
		fail "$2: sanitizer report:"; head -n 30 "$1" >&2
	fi
}

# sql QUERY: against the workspace's ledger
sql() { sqlite3 "$WS/.toolgate/ledger.db" "$1"; }

finish() {
	echo "$CHECKS checks, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}
