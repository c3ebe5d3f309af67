# Bad input gets a clear status and a sentence; nothing crashes, nothing is
# half-written, no ledger row is lost (issue 2, "Bad input").
. "$(dirname "$0")/lib.sh"
cd "$WS"
printf 'hello\nworld\n' > README.md
mkdir -p src && printf 'x' > src/a.txt
ln -s /etc/passwd passwd-link
ln -s / root-link
ln -s ../outside.txt escape-link
ln -s src/a.txt inside-link

# no config file at all: built-in defaults work in any directory
tgcall ok read_file '{"path":"README.md"}'
eq "$(jqv ok.json .status)" persisted "defaults: read_file works with no config"
eq "$(jqv ok.json .principal)" local "defaults: principal local"
eq "$(jqv ok.json .output.total_lines)" 2 "read_file counts lines"
eq "$(jqv ok.json '.op_id | test("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")')" true "op_id is a UUIDv7"
tgcall inside read_file '{"path":"inside-link"}'
eq "$(jqv inside.json .status)" persisted "a symlink inside the workspace is fine"

check() { # name, expected status, expected kind, message fragment, tool, args
	tgcall "$1" "$5" "$6"
	eq "$(jqv "$1.json" .status)" "$2" "$1: status"
	eq "$(jqv "$1.json" .error.kind)" "$3" "$1: kind"
	contains "$(jqv "$1.json" .error.message)" "$4" "$1: message"
	eq "$(sql "select count(*) from ops where op_id='$(jqv "$1.json" .op_id)'")" 1 "$1: ledger row"
}
check unparseable invalid invalid_input "not valid JSON" read_file '{"path":'
check unknown_tool invalid unknown_tool 'unknown tool "no_such_tool"' no_such_tool '{}'
check bad_name invalid unknown_tool "not a valid tool name" 'rm -rf /' '{}'
check wrong_type invalid invalid_input "must be" read_file '{"path":5}'
eq "$(jqv wrong_type.json .error.field)" /path "wrong_type: field"
check not_object invalid invalid_input "JSON object" read_file '[1,2]'
check dup_keys invalid invalid_input "not valid JSON" read_file '{"path":"README.md","path":"x"}'
check extra_prop invalid invalid_input "not allowed" read_file '{"path":"README.md","mode":"x"}'
check nul_path invalid invalid_input "NUL" read_file '{"path":"README.md\u0000.txt"}'
check absolute denied not_permitted "outside the workspace root $WS" read_file '{"path":"/etc/passwd"}'
tgcall absolute_inside read_file "{\"path\":\"$WS/README.md\"}"
eq "$(jqv absolute_inside.json .status)" persisted "an absolute path inside the workspace is read"
check dotdot denied not_permitted "leaves the workspace" read_file '{"path":"../../etc/passwd"}'
check symlink_file denied not_permitted "leaves the workspace" read_file '{"path":"passwd-link"}'
check symlink_dir denied not_permitted "leaves the workspace" read_file '{"path":"root-link/etc/passwd"}'
check symlink_dangling denied not_permitted "leaves the workspace" read_file '{"path":"escape-link"}'
check list_out denied not_permitted "leaves the workspace" list_dir '{"path":"root-link"}'
check ledger_read denied not_permitted "not readable" read_file '{"path":".toolgate/ledger.db"}'
check git_write denied not_permitted "read-only" write_file '{"path":".git/config","content":"x"}'
eq "$(cat dotdot.exit)" 3 "denied exits 3"
eq "$(cat unparseable.exit)" 2 "invalid exits 2"

# huge args: over the 1 MiB cap
head -c 1100000 /dev/zero | tr '\0' 'a' | sed 's/^/{"path":"/; s/$/"}/' > "$WS/huge-args.txt"
check huge invalid invalid_input "over the limit" read_file @huge-args.txt

# control characters never reach the message raw
tgcall ctrl no_such_tool_$'\e' '{}'
[ "$(jqv ctrl.json .error.message | tr -d '[:print:]' | wc -c)" -le 1 ] || fail "control chars echoed"

# a write of more than the file-size limit: failed, the old file intact, no temp file
printf 'old content\n' > keep.txt
head -c 900000 /dev/zero | tr '\0' 'b' | sed 's/^/{"path":"keep.txt","content":"/; s/$/"}/' > big.json
(cd "$WS" && ulimit -f 512 && "$TG" call --json --mode acceptEdits write_file @big.json > full.json 2> full.err)
eq "$(jqv full.json .status)" failed "full disk: status"
eq "$(jqv full.json .error.applied)" no "full disk: nothing applied"
contains "$(jqv full.json .error.message)" "full" "full disk: says so"
eq "$(cat keep.txt)" "old content" "full disk: the old file is intact"
eq "$(ls -A | grep -c '^\.keep\|tmp')" 0 "full disk: no temp files left"
eq "$(sql "select status from ops where op_id='$(jqv full.json .op_id)'")" failed "full disk: ledger row"

# a ledger that is not a database: a clear error, no crash, nothing run
cp -a .toolgate/ledger.db ledger.bak
printf 'this is not a database, just garbage bytes..........................' > .toolgate/ledger.db
rm -f .toolgate/ledger.db-wal .toolgate/ledger.db-shm
(cd "$WS" && "$TG" call read_file '{"path":"README.md"}' > corrupt.out 2> corrupt.err)
eq "$?" 1 "corrupt ledger: exit 1"
contains "$(cat corrupt.err)" "not a valid database" "corrupt ledger: says so"

# a missing ledger is created
rm -f .toolgate/ledger.db*
tgcall fresh read_file '{"path":"README.md"}'
eq "$(jqv fresh.json .status)" persisted "missing ledger: recreated"
eq "$(sql 'select count(*) from ops')" 1 "missing ledger: one row"

# a store directory that cannot be written: a clear error
if chattr +i .toolgate 2>/dev/null; then
	rm -f .toolgate/ledger.db-wal .toolgate/ledger.db-shm 2>/dev/null
	(cd "$WS" && "$TG" call read_file '{"path":"README.md"}' > ro.out 2> ro.err)
	rc=$?
	chattr -i .toolgate
	[ $rc -ne 0 ] || [ "$(jqv ro.out .status)" != persisted ] || fail "read-only store: reported success"
	[ -s ro.err ] || [ "$(jqv ro.out .status)" = committed ] || fail "read-only store: no sentence"
else
	# no immutable attribute here: make the ledger unwritable through a read-only mount
	unshare -m sh -c "mount -o bind,ro '$WS/.toolgate' '$WS/.toolgate' || exit 99; cd '$WS' && '$TG' call read_file '{\"path\":\"README.md\"}' > ro.out 2> ro.err"
	[ $? -ne 99 ] || fail "read-only store: could neither chattr nor mount read-only"
	[ -s ro.err ] || fail "read-only store: no sentence"
fi

# a hostile repository: .toolgate as a symlink is refused
mkdir -p "$WS/evil" && ln -s /tmp "$WS/evil/.toolgate"
(cd "$WS/evil" && "$TG" call read_file '{"path":"x"}' > /dev/null 2> "$WS/evil.err")
eq "$?" 1 "symlinked .toolgate: exit 1"
contains "$(cat "$WS/evil.err")" "symlink" "symlinked .toolgate: says so"

# the state directory keeps itself out of a repository
eq "$(cat "$WS/.toolgate/.gitignore" | tail -1)" "*" ".toolgate/.gitignore ignores everything"
if command -v git > /dev/null; then
	seen=$(cd "$WS" && git init -q . && git status --porcelain --untracked-files=all | grep '^?? \.toolgate')
	eq "$seen" "" "git does not see .toolgate"
fi

# bad config: file:line:col and what was expected
printf 'mode: default\nprofile: coding\napproval: sometimes\n' > "$WS/bad.yaml"
(cd "$WS" && "$TG" call --config bad.yaml read_file '{"path":"README.md"}' > /dev/null 2> bad.err)
eq "$?" 1 "bad config: exit 1"
contains "$(cat bad.err)" "bad.yaml:3:" "bad config: file:line"
contains "$(cat bad.err)" "one of ask, deny, untrusted" "bad config: what was expected"
finish
