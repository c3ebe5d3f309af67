# Exactly-once across processes and hosts on one PostgreSQL ledger (issue 9).
# Two gate hosts (each two `toolgate call --batch` processes, in different
# orders) hammer the same 500 idempotency keys at once with a side-effecting
# command tool that appends one line per run (O_APPEND): every key ran
# exactly once, every duplicate was replayed (the original op and output) or
# pending, every reported `persisted` has its committed row, and every call
# has exactly one row.  Then the same between two network namespaces
# (`ip netns`, veth pairs, a server listening on the host-side addresses),
# each with a host name of its own: where the machine refuses namespaces,
# that sub-case says why and the rest still counts.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/integration/support/pg/lib.sh"
N=500

# the workspace both hosts share: the tool and its log of runs
mkdir -p "$WS/w"
cat > "$WS/w/toolgate.yaml" <<'YAML'
default_principal: local
principals:
  local: {roles: [owner]}
roles:
  owner: {allow: ["*"]}
tools:
  mark:
    description: Record that a key was handled (one line per run).
    input_schema:
      type: object
      properties:
        key: {type: string, pattern: "^k[0-9]+$"}
      required: [key]
      additionalProperties: false
    command: [./mark.sh]
    category: runtime
    concurrency_safe: true
    requires_idempotency_key: true
YAML
cat > "$WS/w/mark.sh" <<'SH'
#!/bin/sh
# one line per run, appended with O_APPEND (one write each): "KEY OP_ID"
key=$(sed -n 's/.*"key":"\(k[0-9]*\)".*/\1/p')
printf '%s %s\n' "$key" "$TOOLGATE_OP_ID" >> marks.log
printf '{"key":"%s","op":"%s"}\n' "$key" "$TOOLGATE_OP_ID"
SH
chmod +x "$WS/w/mark.sh"
export TOOLGATE_CONFIG=$WS/w/toolgate.yaml
# the batches: in key order, reversed, and interleaved (a stride through the keys)
seq 1 $N | jq -R -s -c 'split("\n")[:-1] | map({tool: "mark", args: {key: ("k" + .)},
	idempotency_key: ("k" + .)})' > "$WS/fwd.json"
jq -c reverse "$WS/fwd.json" > "$WS/rev.json"
jq -c 'to_entries | sort_by((.key * 211) % length) | map(.value)' "$WS/fwd.json" > "$WS/mix.json"

# gate HOST NAME STORE BATCH: one gate process in the background, on HOST:
# "" here, else in that network namespace (with a host name of its own
# when UTS namespaces are allowed)
gate() {
	local host=$1 name=$2 store=$3 batch=$4 pre=()
	if [ -n "$host" ]; then
		pre=(ip netns exec "$host")
		[ "${UTS_OK:-0}" = 1 ] &&
			pre+=(unshare --uts -- sh -c 'hostname "$1" && shift && exec "$@"' sh "$host-gate")
	fi
	(cd "$WS/w" && TOOLGATE_STORE=$store "${pre[@]}" "$TG" call --json --batch "$batch" \
		> "$RUN/$name.json" 2> "$RUN/$name.err" < /dev/null; echo $? > "$RUN/$name.exit") &
}

# hammer TAG HOST_A STORE_A HOST_B STORE_B DB: the four processes at once,
# checked (DB: the ledger's URL from here); then each host replays every key
# once more
hammer() {
	local tag=$1 ha=$2 sa=$3 hb=$4 sb=$5 db=$6 t0 f
	RUN=$WS/$tag
	mkdir -p "$RUN"
	rm -f "$WS/w/marks.log"
	t0=$(date +%s)
	gate "$ha" a1 "$sa" "$WS/fwd.json"
	gate "$ha" a2 "$sa" "$WS/rev.json"
	gate "$hb" b1 "$sb" "$WS/fwd.json"
	gate "$hb" b2 "$sb" "$WS/mix.json"
	wait
	echo "$tag: 4 x $N calls in $(( $(date +%s) - t0 )) s"
	for f in a1 a2 b1 b2; do
		case $(cat "$RUN/$f.exit") in 0|5) ;; *) fail "$tag: gate $f exit $(cat "$RUN/$f.exit"):
			$(head -c 400 "$RUN/$f.err")" ;; esac
		sanitizers "$RUN/$f.err" "$tag: gate $f"
		eq "$(jq length "$RUN/$f.json" 2>/dev/null)" $N "$tag: gate $f returned one result per call"
	done
	jq -s add "$RUN"/a1.json "$RUN"/a2.json "$RUN"/b1.json "$RUN"/b2.json > "$RUN/all.json"
	echo "$tag: $(jq -r 'group_by(.status) | map("\(length) \(.[0].status)") | join(", ")' "$RUN/all.json" 2>/dev/null)"
	check_run "$tag" "$db"
	# every key once more, from both hosts: all replayed, the original result
	gate "$ha" ra "$sa" "$WS/mix.json"
	gate "$hb" rb "$sb" "$WS/rev.json"
	wait
	jq -s add "$RUN"/ra.json "$RUN"/rb.json > "$RUN/replay.json"
	eq "$(jq -r '[.[].status] | unique | join(",")' "$RUN/replay.json")" replayed \
		"$tag: a later repeat of every key from both hosts is replayed"
	eq "$(jq -r --slurpfile all "$RUN/all.json" '
		($all[0] | map(select(.status == "persisted")) | map({(.idempotency_key): .op_id}) | add) as $first |
		[.[] | select(.output.op != $first[.idempotency_key]
		              or ([.stages[] | select(.replayed_from)][0].replayed_from) != $first[.idempotency_key])]
		| length' "$RUN/replay.json")" 0 "$tag: every later replay returns the op that ran and its output"
	eq "$(wc -l < "$WS/w/marks.log")" $N "$tag: the replays ran nothing"
	eq "$(pgq "$db" "select count(*) from ops where tool = 'mark'")" $((6 * N)) \
		"$tag: one ledger row per call, replays included"
}

# check_run TAG STORE: the four processes' results against the tool's log and the ledger
check_run() {
	local tag=$1 db=$2 all=$RUN/all.json
	# the side effects: one line per key, every key
	eq "$(wc -l < "$WS/w/marks.log")" $N "$tag: $N side effects for $N keys"
	eq "$(cut -d' ' -f1 "$WS/w/marks.log" | sort -u | wc -l)" $N "$tag: every key's side effect happened exactly once"
	eq "$(cut -d' ' -f1 "$WS/w/marks.log" | sort | uniq -d | head -n 5 | tr '\n' ' ')" "" \
		"$tag: keys that ran twice"
	# the results: one persisted per key, the others replayed or pending
	eq "$(jq -r '[.[] | select(.status != "persisted" and .status != "replayed" and .status != "pending")
		| "\(.idempotency_key):\(.status):\(.error.kind):\(.error.message)"] | .[:3] | join(" | ")' "$all")" "" \
		"$tag: every result is persisted, replayed or pending"
	eq "$(jq '[.[] | select(.status == "persisted") | .idempotency_key] | [length, (unique | length)]
		| map(tostring) | join(" ")' -r "$all")" "$N $N" "$tag: exactly one persisted result per key"
	# the op that ran each key is the one reported persisted for it
	eq "$(jq -r '.[] | select(.status == "persisted") | "\(.idempotency_key) \(.op_id)"' "$all" | sort)" \
		"$(sort "$WS/w/marks.log")" "$tag: the tool ran as the op reported persisted (TOOLGATE_OP_ID)"
	# a replay returns the original op's output and names it
	eq "$(jq -r '(map(select(.status == "persisted")) | map({(.idempotency_key): .}) | add) as $p |
		[.[] | select(.status == "replayed") | select(.output != $p[.idempotency_key].output
			or ([.stages[] | select(.replayed_from)][0].replayed_from) != $p[.idempotency_key].op_id)]
		| length' "$all")" 0 "$tag: every replay returns the original op's output and names it"
	eq "$(jq -r '[.[] | select(.status == "pending") | select((.error.retry_after_s // 0) <= 0
		or .error.applied == "yes")] | length' "$all")" 0 "$tag: a pending duplicate says when to retry"
	# the ledger: every reported result has its row with that status, and nothing more
	jq -r '.[] | "\(.op_id)|\(.status)"' "$all" | sort > "$RUN/reported"
	pgq "$db" "select op_id, status from ops where tool = 'mark'" | sort > "$RUN/rows"
	eq "$(comm -23 "$RUN/reported" "$RUN/rows" | grep -c '|persisted$')" 0 \
		"$tag: a result reported persisted without its committed row"
	eq "$(comm -3 "$RUN/reported" "$RUN/rows" | head -n 3 | tr '\n' ' ')" "" \
		"$tag: the ledger rows are exactly the reported results"
	eq "$(pgq "$db" "select count(*) from idem where state = 'done'")" $N "$tag: $N idempotency rows done"
	# across hosts, both hosts won claims (each host name is its namespace's)
	[ "$tag" != cross-host ] || [ "${UTS_OK:-0}" != 1 ] ||
		eq "$(pgq "$db" "select string_agg(distinct split_part(owner_host, '/', 1), ' ' order by split_part(owner_host, '/', 1)) from idem")" \
			"${HOSTS:-}" "$tag: the keys were claimed by the gates of both hosts"
}

pg_newdb DB local
hammer local "" "$DB" "" "$DB" "$DB"

# ---- across hosts: two network namespaces, a veth pair each ----
cross_host() {
	local s=$$ o1 o2 dir url port ns1 ns2 a b err
	ns1=tg${s}a ns2=tg${s}b
	o1=$((RANDOM % 200 + 20)) o2=$((RANDOM % 60 * 4))
	a=10.$o1.$o2 # two /30s: .1-.2 (host A), .5-.6 (host B)
	if ! err=$(ip netns add "$ns1" 2>&1); then
		echo "cross-host case NOT RUN (the one case run only where the machine allows it): ip netns add was refused: $err"
		return
	fi
	pg_atexit "ip netns del $ns1 2>/dev/null; ip link del ${ns1}h 2>/dev/null"
	ip netns add "$ns2" || { fail "ip netns add $ns2"; return; }
	pg_atexit "ip netns del $ns2 2>/dev/null; ip link del ${ns2}h 2>/dev/null"
	for pair in "$ns1 1" "$ns2 5"; do
		set -- $pair
		ip link add "${1}h" type veth peer name "${1}n" &&
		ip link set "${1}n" netns "$1" &&
		ip addr add "$a.$2/30" dev "${1}h" && ip link set "${1}h" up &&
		ip netns exec "$1" ip addr add "$a.$(($2 + 1))/30" dev "${1}n" &&
		ip netns exec "$1" ip link set "${1}n" up &&
		ip netns exec "$1" ip link set lo up ||
			{ fail "cross-host: cannot set up the veth pair of $1"; return; }
	done
	# a server of this case's own, listening on the host-side veth addresses too
	dir=$(mktemp -d "${TMPDIR:-/tmp}/tg-pg.XXXXXX")
	pg_own_cluster url "$dir" || { fail "cross-host: no server"; return; }
	port=$(cat "$dir/port")
	printf "listen_addresses = '127.0.0.1,%s.1,%s.5'\n" "$a" "$a" >> "$dir/data/postgresql.conf"
	printf 'host all toolgate %s.0/29 scram-sha-256\n' "$a" >> "$dir/data/pg_hba.conf"
	"$PG_CLUSTER" restart "$dir" || { fail "cross-host: the server did not restart"; return; }
	pgq "$url" "CREATE DATABASE xhost" || { fail "cross-host: CREATE DATABASE"; return; }
	# each namespace reaches the server over its veth only, not over loopback
	ip netns exec "$ns1" "$PG_BIN/pg_isready" -q -t 3 -h "$a.1" -p "$port" ||
		fail "cross-host: host A does not reach the server at $a.1"
	ip netns exec "$ns2" "$PG_BIN/pg_isready" -q -t 3 -h "$a.5" -p "$port" ||
		fail "cross-host: host B does not reach the server at $a.5"
	ip netns exec "$ns1" "$PG_BIN/pg_isready" -q -t 2 -h 127.0.0.1 -p "$port" &&
		fail "cross-host: host A reached the server on loopback: not a namespace of its own"
	# each host has a name of its own (a UTS namespace) where unshare allows it
	unshare --uts true 2> /dev/null && UTS_OK=1 HOSTS="$ns1-gate $ns2-gate"
	hammer cross-host "$ns1" "postgresql://$(pg_userinfo "$url")@$a.1:$port/xhost" \
		"$ns2" "postgresql://$(pg_userinfo "$url")@$a.5:$port/xhost" "${url%/*}/xhost"
	[ "${UTS_OK:-0}" = 1 ] || echo "cross-host: the two namespaces share this machine's host name (unshare --uts refused)"
}
cross_host
finish
