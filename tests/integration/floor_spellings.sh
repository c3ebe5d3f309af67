# The floor's spellings through the gate (issue 20, part 7): every case of
# tests/data/floor/spellings.txt as `toolgate call --dry-run --mode
# bypassPermissions shell ARGS`, as root and as an unprivileged user made
# here (a non-root caller runs the second half as itself):
#   deny  → status denied, the rule names the floor;
#   ask   → not run unasked: dry_run with the decision ask;
#   allow → dry_run with the decision allow.
# Then what a floor that cannot see means in the other modes: it asks in
# acceptEdits and under an allow rule, is denied in plan mode (which runs
# nothing it cannot judge), and default mode's answers stay as they were
# (a read-only `echo $HOME` runs, `rm -rf "$OUT"` asks as it did); a floor
# spelling is denied in every mode; the call's own variables ("env") are
# what the line's expansions hold; policy check --explain says what the
# floor cannot judge.
#
# The sandbox is danger-full-access: nothing runs (--dry-run) and the
# floor comes before any backend, so the test needs none.
. "$(dirname "$0")/lib.sh"
DATA=$ROOT/tests/data/floor/spellings.txt
[ -r "$DATA" ] || { fail "no $DATA"; finish; exit; }

BASE=$(mktemp -d "${TMPDIR:-/tmp}/tg-floor.XXXXXX")
USER_MADE=
cleanup() {
	rm -rf "$BASE"
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	chattr -R -i "$WS" 2> /dev/null
	rm -rf "$WS"
}
trap cleanup EXIT
chmod 755 "$BASE"

# setup DIR OWNER: a workspace and a home for one half
setup() {
	mkdir -p "$1/ws" "$1/home"
	cat > "$1/ws/toolgate.yaml" <<'YAML'
sandbox: danger-full-access
shell:
  env_allow: ["APP_*"]
permissions:
  allow: ["shell(rm *)"]
YAML
	cat > "$1/ws/plain.yaml" <<'YAML'
sandbox: danger-full-access
YAML
	chown -R "$2" "$1"
}

# call DIR AS CONFIG MODE ARGS: one dry run, its envelope on stdout
call() {
	local d=$1 as=$2 cfg=$3 mode=$4 args=$5
	(cd "$d/ws" && ${as:+runuser -u "$as" --} env HOME="$d/home" TOOLGATE_CONFIG="$d/ws/$cfg" \
		LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" call --json --dry-run --mode "$mode" shell "$args" \
		2> "$BASE/err") < /dev/null
	sanitizers "$BASE/err" "$args"
}

decision() { jq -r '.stages[] | select(.stage=="decide") | .decision' <<< "$1"; }
rule() { jq -r '.error.rule // (.stages[] | select(.stage=="decide") | .rule)' <<< "$1"; }

# every case of the data file, under bypassPermissions; as the user (whose
# home and rights are what differ) every third case and every case that
# names a home (the unit test judges all of them in process)
spellings() {
	local d=$1 as=$2 l=$3 verdict rest args st dec why n=0 i=0 k=0
	local -a verdicts=() texts=()
	: > "$BASE/out"
	while read -r verdict rest; do
		case $verdict in '' | '#'*) continue ;; esac
		k=$((k + 1))
		if [ -n "$as" ] && [ $((k % 3)) != 0 ]; then
			case $rest in *'~'* | *HOME* | *home* | *root*) ;; *) continue ;; esac
		fi
		case $rest in
		'{'*) args=$rest ;;
		*) args="{\"command\": $rest}" ;;
		esac
		call "$d" "$as" plain.yaml bypassPermissions "$args" >> "$BASE/out"
		verdicts+=("$verdict") texts+=("$rest")
		n=$((n + 1))
	done < "$DATA"
	# one jq over every answer: status, decision, rule per call
	while IFS=$'\t' read -r st dec why; do
		verdict=${verdicts[$i]} rest=${texts[$i]}
		i=$((i + 1))
		CHECKS=$((CHECKS + 1))
		case $verdict in
		deny)
			[ "$st" = denied ] && [[ "$why" == floor:* ]] ||
				fail "$l: $rest: expected denied by the floor, got $st ($why)" ;;
		ask)
			[ "$st" = dry_run ] && [ "$dec" = ask ] ||
				fail "$l: $rest: expected ask, got $st $dec ($why)" ;;
		allow)
			[ "$st" = dry_run ] && [ "$dec" = allow ] ||
				fail "$l: $rest: expected allow, got $st $dec ($why)" ;;
		*) fail "$l: unknown verdict $verdict" ;;
		esac
	done < <(jq -r '[.status, ((.stages[]? | select(.stage=="decide") | .decision) // "-"),
	                 (.error.rule // (.stages[]? | select(.stage=="decide") | .rule) // "-")] | @tsv' \
	         "$BASE/out")
	eq "$i" "$n" "$l: an answer for every spelling"
	echo "$l: $n spellings"
}

modes() {
	local d=$1 as=$2 l=$3 out
	blind='{"command":"rm -rf \"$OUT\""}'
	out=$(call "$d" "$as" plain.yaml acceptEdits "$blind")
	eq "$(decision "$out")" ask "$l: acceptEdits: a path the floor cannot tell asks"
	contains "$(rule "$out")" "floor cannot judge" "$l: acceptEdits: the rule says why"
	out=$(call "$d" "$as" plain.yaml plan "$blind")
	eq "$(jq -r .status <<< "$out")" denied "$l: plan: what it cannot judge is denied"
	out=$(call "$d" "$as" plain.yaml default "$blind")
	eq "$(decision "$out")" ask "$l: default: it asks, as rm did before"
	out=$(call "$d" "$as" toolgate.yaml default "$blind")
	eq "$(decision "$out")" ask "$l: an allow rule for rm does not run it unasked"
	contains "$(rule "$out")" "floor cannot judge" "$l: allow rule: the floor's reason"
	out=$(call "$d" "$as" toolgate.yaml default '{"command":"rm -rf build"}')
	eq "$(decision "$out")" allow "$l: the allow rule still allows what the floor sees"
	out=$(call "$d" "$as" plain.yaml default '{"command":"echo $HOME"}')
	eq "$(decision "$out")" allow "$l: default: echo \$HOME is read-only and runs"
	out=$(call "$d" "$as" plain.yaml default '{"command":"ls -la src && git status"}')
	eq "$(decision "$out")" allow "$l: default: ls and git status run"
	for m in default acceptEdits plan bypassPermissions; do
		out=$(call "$d" "$as" plain.yaml "$m" '{"command":"d=/; rm -rf \"$d\""}')
		eq "$(jq -r .status <<< "$out")" denied "$l: $m: a floor spelling is denied"
		contains "$(jq -r .error.message <<< "$out")" "nothing lifts this" "$l: $m: the sentence"
	done
	out=$(call "$d" "$as" toolgate.yaml bypassPermissions \
		'{"command":"rm -rf \"$APP_DIR\"","env":{"APP_DIR":"build"}}')
	eq "$(decision "$out")" allow "$l: the call's own variable is read: build"
	out=$(call "$d" "$as" toolgate.yaml bypassPermissions \
		'{"command":"rm -rf \"$APP_DIR\"/","env":{"APP_DIR":""}}')
	eq "$(jq -r .status <<< "$out")" denied "$l: the call's own variable is read: empty"
	out=$(cd "$d/ws" && ${as:+runuser -u "$as" --} env HOME="$d/home" TOOLGATE_CONFIG="$d/ws/plain.yaml" \
		LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" policy check --explain -- bash -c 'rm -rf "$X"' 2> "$BASE/err")
	sanitizers "$BASE/err" explain
	contains "$(jq -r .floor_cannot_judge <<< "$out")" '$X' "$l: explain names what the floor cannot judge"
	eq "$(jq -r .floor <<< "$out")" null "$l: explain: nothing floored"
}

half() {
	spellings "$@"
	modes "$@"
}

RUN_TG=$TG RUN_LSAN=${LSAN_OPTIONS:-}
if [ "$(id -u)" = 0 ]; then
	setup "$BASE/root" root:root
	half "$BASE/root" "" root
	U=tgfloor
	if ! id "$U" > /dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
		USER_MADE=$U
	fi
	reach_as "$U" "$BASE"
	setup "$BASE/user" "$U:"
	half "$BASE/user" "$U" user
else
	echo "not root: the unprivileged half only, as $(id -un)"
	setup "$BASE/user" "$(id -un):"
	half "$BASE/user" "" user
fi
finish
