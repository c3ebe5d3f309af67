# The read-only commands create nothing (issue 21): in a fresh directory,
# doctor, tools, log, stats, approvals list, eval --sizes and --history,
# migrate --dry-run, policy check (--explain too), policy test and ledger
# export leave no .toolgate/ behind; log, stats, approvals and eval
# --history say there is no ledger and print an empty result (exit 0),
# migrate --dry-run says there is none, ledger export fails saying so.
# Where a ledger is, they read it (and a migrate --dry-run changes nothing);
# log --follow waits for the ledger the first call makes and shows it.
. "$(dirname "$0")/lib.sh"

NOLEDGER="there is no ledger at '"

# ro NAME EXIT ARGS...: toolgate ARGS in a fresh directory; exit EXIT,
# nothing made there; stdout in $WS/NAME.out, stderr in $WS/NAME.err
ro() {
	local name=$1 want=$2; shift 2
	local d=$WS/fresh-$name
	mkdir -p "$d"
	(cd "$d" && "$TG" "$@" > "$WS/$name.out" 2> "$WS/$name.err" < /dev/null)
	eq "$?" "$want" "$*: exit $want"
	eq "$(ls -A "$d")" "" "$*: nothing made in a fresh directory"
	sanitizers "$WS/$name.err" "$name"
}

ro doctor 0 doctor
ro doctorj 0 doctor --json
ro tools 0 tools
ro tformat 0 tools --format anthropic
ro log 0 log
contains "$(cat "$WS/log.err")" "$NOLEDGER$WS/fresh-log/.toolgate/ledger.db' yet" "log: says there is no ledger"
eq "$(cat "$WS/log.out")" "" "log: an empty result"
ro logj 0 log --json
eq "$(cat "$WS/logj.out")" "" "log --json: nothing on stdout"
ro stats 0 stats
contains "$(cat "$WS/stats.err")" "$NOLEDGER" "stats: says there is no ledger"
contains "$(cat "$WS/stats.out")" "0 calls" "stats: an empty result"
ro statsj 0 stats --json
eq "$(jq -r .calls "$WS/statsj.out")" 0 "stats --json: zero calls, valid JSON"
ro approvals 0 approvals list
contains "$(cat "$WS/approvals.err")" "$NOLEDGER" "approvals list: says there is no ledger"
contains "$(cat "$WS/approvals.out")" "no open approvals" "approvals list: an empty list"
ro approvalsj 0 approvals list --json
eq "$(jq -c . "$WS/approvalsj.out")" "[]" "approvals list --json: []"
ro approve 1 approvals approve 01a250ad-7799-7657-b3e2-dddd77aae12f
contains "$(cat "$WS/approve.err")" "$NOLEDGER" "approvals approve: says there is no ledger"
ro sizes 0 eval --sizes
contains "$(cat "$WS/sizes.out")" "minimal" "eval --sizes: the sizes"
ro history 0 eval --history
contains "$(cat "$WS/history.err")" "$NOLEDGER" "eval --history: says there is no ledger"
ro migrate 0 migrate --dry-run
contains "$(cat "$WS/migrate.out")" "$NOLEDGER" "migrate --dry-run: says there is no ledger"
contains "$(cat "$WS/migrate.out")" "nothing was changed" "migrate --dry-run: changes nothing"
ro migratej 0 migrate --dry-run --json
eq "$(jq -r .exists "$WS/migratej.out")" false "migrate --dry-run --json: exists false"
ro check 0 policy check -- git status
ro explain 0 policy check --explain -- rm -rf build
ro ptest 0 policy test
ro export 1 ledger export
contains "$(cat "$WS/export.err")" "$NOLEDGER" "ledger export: says there is no ledger"
contains "$(cat "$WS/export.err")" "nothing was exported" "ledger export: says nothing was exported"

# ---- a project whose configuration is above: nothing made there either
mkdir -p "$WS/proj/sub"
printf 'mode: plan\n' > "$WS/proj/toolgate.yaml"
(cd "$WS/proj/sub" && "$TG" log > /dev/null 2>&1 && "$TG" stats > /dev/null 2>&1 &&
	"$TG" doctor > /dev/null 2>&1)
eq "$(ls -A "$WS/proj" | tr '\n' ' ')" "sub toolgate.yaml " "a project's read-only commands: no .toolgate"

# ---- where a ledger is, they read it
mkdir -p "$WS/used"
(cd "$WS/used" && exec "$TG" log --follow --json > "$WS/follow.out" 2> "$WS/follow.err" < /dev/null) &
FOLLOW=$!
for _ in $(seq 1 100); do grep -q "waiting" "$WS/follow.err" 2> /dev/null && break; sleep 0.05; done
contains "$(cat "$WS/follow.err")" "waiting for the first call" "log --follow: waits for a ledger"
eq "$(ls -A "$WS/used")" "" "log --follow: makes none while it waits"
(cd "$WS/used" && "$TG" call --json list_dir '{"path":"."}' > /dev/null 2>&1)
(cd "$WS/used" && "$TG" call --json write_file '{"path":"a.txt","content":"a"}' > "$WS/w.json" 2>&1)
for _ in $(seq 1 100); do grep -q '"tool.call.denied"\|approval_requested' "$WS/follow.out" 2> /dev/null && break; sleep 0.05; done
kill -INT "$FOLLOW" 2> /dev/null
wait "$FOLLOW"
eq "$?" 0 "log --follow: SIGINT ends it, exit 0"
contains "$(jq -r .type "$WS/follow.out" | tr '\n' ' ')" "tool.call.received" \
	"log --follow: the first call's events, from the ledger it made"
contains "$(jq -r .tool "$WS/follow.out" | sort -u | tr '\n' ' ')" "write_file" \
	"log --follow: the second call too"
sanitizers "$WS/follow.err" follow
(cd "$WS/used" && "$TG" log --json > "$WS/ulog.out" 2> "$WS/ulog.err")
eq "$(jq -r .tool "$WS/ulog.out" | tr '\n' ' ')" "list_dir write_file " "log: the ledger's calls"
eq "$(cat "$WS/ulog.err")" "" "log: no sentence when there is a ledger"
(cd "$WS/used" && "$TG" stats --json > "$WS/ustats.out" 2> /dev/null)
eq "$(jq -r .calls "$WS/ustats.out")" 2 "stats: the ledger's calls"
(cd "$WS/used" && "$TG" approvals list --json > "$WS/uappr.out" 2> /dev/null)
eq "$(jq length "$WS/uappr.out")" 1 "approvals list: the queued write"
before=$(sqlite3 "$WS/used/.toolgate/ledger.db" "select count(*) from ops; pragma user_version")
(cd "$WS/used" && "$TG" migrate --dry-run > "$WS/umig.out" 2>&1)
contains "$(cat "$WS/umig.out")" "schema version" "migrate --dry-run: the ledger's version"
eq "$(sqlite3 "$WS/used/.toolgate/ledger.db" "select count(*) from ops; pragma user_version")" "$before" \
	"migrate --dry-run: the ledger unchanged"
(cd "$WS/used" && "$TG" ledger export > "$WS/uexp.out" 2> /dev/null)
eq "$(wc -l < "$WS/uexp.out" | tr -d ' ')" 3 "ledger export: header and the two calls"
finish
