# policy cases: runs every case of tests/data/policy/NNN_name/ through
# `toolgate call --json --dry-run` (every stage up to execute, nothing run)
# and compares what decided each call with the case's `expected`, as
# tests/data/policy/README describes: the case's toolgate.yaml and input/
# make a fresh workspace (which is also $HOME, so ~/.ssh is input/.ssh),
# each call of call.json runs in it, and its envelope is rendered as lines
# (status, the stage that stopped it, the decide stage's decision and rule,
# the approve stage's answer, error.kind; the workspace's path written
# @WORKSPACE@).  One FAIL line per case that differs, with the diff
# (- expected, + got).
source "$(dirname "$0")/lib.sh"

DATA=$ROOT/tests/data/policy

# render NAME.N TOOL: the lines `expected` holds for one call, from its
# envelope (NAME.N.json); no envelope (a configuration error): the exit
# code and the first line of stderr, which no expected file holds
render() {
	printf 'call %s\n' "$2"
	if ! jq -se 'length == 1 and (.[0] | type == "object")' "$1.json" > /dev/null 2>&1; then
		printf 'no envelope: exit %s: %s\n' "$(cat "$1.exit")" "$(head -n 1 "$1.err")"
		return
	fi
	jq -r '(.stages // []) as $s
		| "status \(.status)",
		  ([$s[] | select(.ok == false and .stage != "persist")][0].stage // empty | "stage \(.)"),
		  ($s[] | select(.stage == "decide") | "decision \(.decision)", (.rule // empty | "rule \(.)")),
		  ($s[] | select(.stage == "approve") | .approval // empty | "approval \(.)"),
		  (.error.kind // empty | "kind \(.)")' "$1.json"
}

# run_case DIR: every call of the case, rendered, to $WS/out/NAME.got
run_case() {
	local sc=$1 name work real got n call tool args opts vars o v out
	name=$(basename "$sc")
	work=$WS/cases/$name
	got=$WS/out/$name.got
	mkdir -p "$work" "$WS/out"
	real=$(cd "$work" && pwd -P)
	[ -d "$sc/input" ] && cp -a "$sc/input/." "$work/"
	cp "$sc/toolgate.yaml" "$work/toolgate.yaml"
	: > "$got"
	# one call or a list of them; @WORKSPACE@ in a call is the workspace's path
	jq -c 'if type == "array" then .[] else . end' "$sc/call.json" |
		sed "s|@WORKSPACE@|$work|g" > "$WS/out/$name.calls"
	n=0
	while IFS= read -r call; do
		n=$((n + 1))
		tool=$(jq -r .tool <<< "$call")
		args=$(jq -c '.args // {}' <<< "$call")
		opts=()
		for o in principal:--as mode:--mode approval:--approval; do
			v=$(jq -r ".${o%%:*} // empty" <<< "$call")
			[ -z "$v" ] || opts+=("${o#*:}" "$v")
		done
		mapfile -t vars < <(jq -r '.env // {} | to_entries[] | "\(.key)=\(.value)"' <<< "$call")
		out=$WS/out/$name.$n
		(cd "$work" && env HOME="$work" "${vars[@]}" "$TG" call --json --dry-run "${opts[@]}" \
			"$tool" "$args" > "$out.json" 2> "$out.err" < /dev/null)
		echo $? > "$out.exit"
		sanitizers "$out.err" "$name: call $n"
		# the exit code is the status's (DESIGN §1)
		v=$(jq -r '{"dry_run": 0, "invalid": 2, "denied": 3, "pending": 5}[.status] // empty' \
			"$out.json" 2> /dev/null)
		[ -z "$v" ] || eq "$(cat "$out.exit")" "$v" "$name: call $n: the exit code of its status"
		[ "$n" -gt 1 ] && echo >> "$got"
		render "$out" "$tool" |
			sed "s|$real|@WORKSPACE@|g; s|$work|@WORKSPACE@|g" >> "$got"
	done < "$WS/out/$name.calls"
	CHECKS=$((CHECKS + 1))
	[ "$n" -gt 0 ] || { fail "$name: call.json holds no call"; return; }
	if ! diff -q "$sc/expected" "$got" > /dev/null; then
		fail "$name (- expected, + got): $(diff -U0 "$sc/expected" "$got" | tail -n +3 | grep -v '^@@' | tr '\n' ' ')"
	fi
}

count=0
for sc in "$DATA"/[0-9][0-9][0-9]_*/; do
	run_case "${sc%/}"
	count=$((count + 1))
done
CHECKS=$((CHECKS + 1))
[ "$count" -ge 40 ] || fail "only $count cases found in $DATA"
echo "$count cases"
finish
