# The sandbox end to end, through `toolgate call shell`: under each backend
# that works here (bubblewrap, then Landlock, forced with
# TOOLGATE_SANDBOX_BACKEND), in workspace-write: writing inside the
# workspace works; outside it, into .git/ and .toolgate/ (the ledger opened
# for writing) it does not -- except that Landlock cannot protect .git/ and
# .toolgate/, which is shown, as documented; a TCP connect to a listener on
# 127.0.0.1 fails and the listener sees nothing; killing the parent
# (`kill -9 $PPID`) does not stop the gate.  In read-only mode nothing but
# the private tmp dir is writable; with `network: true` the connect works.
# Landlock runs only for a profile that accepts it by name (accept:
# [landlock]): one that does not is refused, and doctor says what Landlock
# cannot enforce.
# A fork bomb under `shell.rlimits.processes: 64` is contained (never more
# than 64 of it in a pids cgroup, the call finishes, nothing is left), and
# a timed-out command leaves no process behind, background children
# included.  With no backend, sandboxed modes refuse; danger-full-access
# really is unsandboxed.
. "$(dirname "$0")/lib.sh"

cc -O2 -Wall -Wextra -Werror -o "$WS/listen" "$ROOT/tests/integration/support/listen.c" ||
	{ echo "cannot build the listener" >&2; exit 1; }

W=$WS/ws
OUT=$WS/outside
mkdir -p "$W/.git" "$W/src" "$OUT"
printf '[core]\n' > "$W/.git/config"
printf 'a\n' > "$W/src/a.txt"
printf 'orig\n' > "$OUT/f"

# config NAME MODE NETWORK [ACCEPT]: $WS/NAME.yaml (outside the workspace);
# the profiles accept Landlock by name unless ACCEPT says otherwise
config() {
	cat > "$WS/$1.yaml" <<YAML
workspace: $W
mode: bypassPermissions
approval: never
sandbox: {mode: $2, network: $3, accept: [${4-landlock}]}
shell: {rlimits: {processes: 64}}
YAML
}
config ww workspace-write false
config ro read-only false
config net workspace-write true
config full danger-full-access false
config strict workspace-write false ""

# sbcall NAME CONFIG COMMAND [TIMEOUT_S]: one shell call from the workspace;
# the envelope in $WS/NAME.json, toolgate's exit code in $WS/NAME.exit
sbcall() {
	local name=$1 cfg=$2 cmd=$3 t=${4:-}
	local args
	if [ -n "$t" ]; then
		args=$(jq -cn --arg c "$cmd" --argjson t "$t" '{command: $c, timeout_s: $t}')
	else
		args=$(jq -cn --arg c "$cmd" '{command: $c}')
	fi
	(cd "$W" && TOOLGATE_CONFIG="$WS/$cfg.yaml" timeout -s KILL 120 \
		"$TG" call --json shell "$args" > "$WS/$name.json" 2> "$WS/$name.err" < /dev/null)
	echo $? > "$WS/$name.exit"
	sanitizers "$WS/$name.err" "$name"
}
field() { jq -r "$2" "$WS/$1.json" 2> /dev/null; }
what() { echo "status $(field "$1" .status), exit_code $(field "$1" .output.exit_code), stderr: $(field "$1" .output.stderr | head -c 300)"; }

# ran NAME: the command ran in the sandbox and succeeded
ran() {
	CHECKS=$((CHECKS + 1))
	[ "$(field "$1" .status)" = persisted ] && [ "$(field "$1" .output.exit_code)" = 0 ] ||
		fail "$1: expected to run, got $(what "$1")"
}
# refused NAME: the command ran in the sandbox and the sandbox made it fail
refused() {
	CHECKS=$((CHECKS + 1))
	local c
	c=$(field "$1" .output.exit_code)
	[ "$(field "$1" .status)" = persisted ] && [ -n "$c" ] && [ "$c" != null ] && [ "$c" != 0 ] ||
		fail "$1: expected the sandbox to refuse it, got $(what "$1")"
}

# count_procs REGEX: processes whose command line (space-joined) matches
cmdline() { # PID: its command line, arguments each followed by a space (no fork)
	local a line=
	{ while IFS= read -r -d '' a; do line+="$a "; done < "/proc/$1/cmdline"; } 2> /dev/null
	printf '%s' "$line"
}
procs() { # REGEX: the pids
	local p
	for p in /proc/[0-9]*; do
		[[ $(cmdline "${p#/proc/}") =~ $1 ]] && echo "${p#/proc/}"
	done
}
count_procs() { procs "$1" | wc -l; }
# gone REGEX WHAT: within 3 s no such process is left
gone() {
	local left
	for _ in $(seq 60); do
		left=$(count_procs "$1")
		[ "$left" = 0 ] && break
		sleep 0.05
	done
	eq "$left" 0 "$2: processes left behind"
}

# listener: start one; $LPORT, $LPID.  heard: stop it and print its count.
listener() {
	rm -f "$WS/port"
	"$WS/listen" "$WS/port" > "$WS/listen.out" &
	LPID=$!
	# a loaded machine may take a while to start it; its output is its
	# count only once it stands (a TERM before that would leave none)
	for _ in $(seq 500); do [ -s "$WS/port" ] && break; sleep 0.02; done
	LPORT=$(cat "$WS/port" 2> /dev/null)
	[ -n "$LPORT" ] || fail "the test listener did not start within 10 s"
}
heard() {
	# heard runs in a command substitution, a subshell of which the listener
	# is no child: wait there returns at once, so watch for its count (it
	# prints it as it ends) instead
	kill -TERM "$LPID" 2> /dev/null
	for _ in $(seq 500); do
		[ -s "$WS/listen.out" ] && break
		kill -0 "$LPID" 2> /dev/null || break
		sleep 0.02
	done
	[ -s "$WS/listen.out" ] || echo "the listener printed no count" >&2
	cat "$WS/listen.out"
}

# ---- the shell tool must run at all
sbcall smoke full "echo hi"
if [ "$(field smoke .output.stdout)" != hi ]; then
	fail "the shell tool does not run: $(what smoke) $(head -c 300 "$WS/smoke.err")"
	finish
	exit 1
fi

# ---- a timed-out command leaves nothing behind (whatever the sandbox)
timed_out() { # NAME CONFIG
	local mark="100.$$${RANDOM}"
	local t0=$(date +%s)
	sbcall "$1" "$2" "sleep $mark & sleep $mark & (sleep $mark &); sleep $mark" 1
	eq "$(field "$1" .output.timed_out)" true "$1: timed out"
	CHECKS=$((CHECKS + 1))
	[ $(($(date +%s) - t0)) -lt 15 ] || fail "$1: the call took $(($(date +%s) - t0)) s"
	gone "^sleep $mark \$" "$1"
}
timed_out full-timeout full

# ---- a fork bomb under the process limit is contained
# can_bomb: whether a process limit holds here; BOMB_MAX, the most the bomb
# may reach: 64 in a pids cgroup; with RLIMIT_NPROC alone the limit counts
# every process of this user, so 64 more than this user already runs
can_bomb() {
	local how
	how=$(cd "$W" && TOOLGATE_CONFIG="$WS/ww.yaml" "$TG" doctor --json | jq -r .process_limit)
	if [ "$(id -u)" = 0 ] && [[ $how == *"not enforced for root"* ]]; then
		echo "skipped the fork bomb: the process limit is $how" >&2
		return 1
	fi
	BOMB_MAX=64
	[[ $how == *cgroup* ]] || BOMB_MAX=$((64 + $(ps -U "$(id -u)" -o pid= | wc -l)))
}
fork_bomb() { # NAME CONFIG
	local tag=$1-$$ max=0 n pids
	# bash retries a failed fork and goes on, so the bomb stays at the limit
	printf 'while :; do bash "$0" & done\n' > "$W/bomb-$tag.sh"
	local re="^bash (\\./)?bomb-$tag\\.sh \$"
	sbcall "$1" "$2" "bash ./bomb-$tag.sh" 2 &
	local call=$!
	# watch it: the most processes seen at once; a runaway is ended by pid
	while kill -0 "$call" 2> /dev/null; do
		n=$(count_procs "$re")
		[ "$n" -gt "$max" ] && max=$n
		if [ "$n" -gt 2000 ]; then
			pids=$(procs "$re")
			kill -9 $pids 2> /dev/null
			fail "$1: runaway fork bomb ($n processes)"
			break
		fi
		sleep 0.1
	done
	wait "$call"
	sanitizers "$WS/$1.err" "$1"   # the call ran in a subshell: count its report here
	echo "$1: at most $max at once; $(field "$1" '.output | {exit_code, timed_out}' | tr -d ' \n')" >&2
	CHECKS=$((CHECKS + 2))
	[ "$max" -ge 8 ] || fail "$1: the bomb never went off ($max processes at most)"
	[ "$max" -le "$BOMB_MAX" ] || fail "$1: $max bomb processes at once (limit $BOMB_MAX)"
	eq "$(cat "$WS/$1.exit")" 0 "$1: the call finished"
	eq "$(field "$1" .status)" persisted "$1: status"
	contains "$(field "$1" .output.stderr)" "fork" "$1: stopped by the process limit"
	gone "$re" "$1"
	rm -f "$W/bomb-$tag.sh"
}

# ---- each backend
for backend in bubblewrap landlock; do
	export TOOLGATE_SANDBOX_BACKEND=$backend
	doc=$(cd "$W" && TOOLGATE_CONFIG="$WS/ww.yaml" "$TG" doctor --json)
	if [ "$(jq -r .backend <<< "$doc")" != "$backend" ]; then
		echo "skipped $backend: it does not work here ($(jq -c .bubblewrap <<< "$doc"), Landlock ABI $(jq -r .landlock_abi <<< "$doc"))" >&2
		continue
	fi
	b=$backend
	if [ $b = bubblewrap ]; then
		eq "$(jq -r '.modes["workspace-write"].enforceable' <<< "$doc")" true "$b: doctor"
	else
		# Landlock cannot enforce a sandboxed mode fully: it says what it cannot,
		# and runs nothing unless the profile accepts it by name
		eq "$(jq -r '.modes["workspace-write"].enforceable' <<< "$doc")" false "$b: doctor"
		contains "$(jq -r '.modes["workspace-write"].notes' <<< "$doc")" "accept: [landlock]" \
			"$b: doctor says how to accept it"
		for gap in metadata renames sockets processes; do
			contains "$(jq -r '.landlock_cannot | join("\n")' <<< "$doc")" "$gap" \
				"$b: doctor says Landlock cannot enforce $gap"
		done
		sbcall $b-strict strict "echo hi"
		eq "$(field $b-strict .status)" failed "$b: a profile that does not accept Landlock"
		eq "$(field $b-strict .error.kind)" not_permitted "$b: refused, not failed"
		contains "$(field $b-strict .error.message)" "accept: [landlock]" "$b: says how to accept it"
		eq "$(field $b-strict .output)" null "$b: nothing ran"
	fi

	sbcall $b-echo ww "echo hi"
	eq "$(field $b-echo .output.stdout)" hi "$b: echo"

	sbcall $b-inside ww "echo x > inside-$b.txt && mkdir d-$b && echo y > d-$b/f"
	ran $b-inside
	eq "$(cat "$W/inside-$b.txt" 2>&1)" x "$b: written inside the workspace"

	sbcall $b-outside ww "echo x >> '$OUT/f'"
	refused $b-outside
	sbcall $b-outside-new ww "touch '$OUT/new-$b'"
	refused $b-outside-new
	sbcall $b-etc ww ": >> /etc/hostname"
	refused $b-etc
	eq "$(cat "$OUT/f")" orig "$b: outside file unchanged"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$OUT/new-$b" ] || fail "$b: a file was made outside the workspace"

	sbcall $b-git ww "echo x >> .git/config"
	sbcall $b-git-hook ww "mkdir -p .git/hooks && echo 'echo owned' > .git/hooks/pre-commit"
	sbcall $b-ledger ww ": >> .toolgate/ledger.db"
	if [ $b = bubblewrap ]; then
		refused $b-git
		refused $b-git-hook
		refused $b-ledger
		eq "$(cat "$W/.git/config")" "[core]" "$b: .git/config unchanged"
		CHECKS=$((CHECKS + 1))
		[ ! -e "$W/.git/hooks/pre-commit" ] || fail "$b: a hook was planted"
	else
		# documented: Landlock cannot keep .git/ and .toolgate/ inside a
		# writable workspace read-only
		ran $b-git
		ran $b-ledger
		contains "$(jq -r '.modes["workspace-write"].notes' <<< "$doc")" \
			".git, .toolgate and the gate's files in it included" "$b: doctor says .git/ is not protected"
		printf '[core]\n' > "$W/.git/config"
		rm -rf "$W/.git/hooks"
	fi

	listener
	sbcall $b-tcp ww "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$LPORT'"
	refused $b-tcp
	eq "$(heard)" 0 "$b: the listener heard nothing"

	if [ $b = bubblewrap ] || [ "$(jq -r .landlock_abi <<< "$doc")" -ge 6 ]; then
		sbcall $b-kill ww 'kill -9 $PPID; echo alive'
		eq "$(field $b-kill .status)" persisted "$b: the gate survives kill -9 \$PPID"
		eq "$(field $b-kill .output.stdout)" alive "$b: kill -9 \$PPID"
	else
		echo "skipped kill -9 \$PPID under Landlock ABI < 6 (signals are not scoped)" >&2
	fi

	sbcall $b-ro ro "echo x > ro-$b.txt"
	refused $b-ro
	sbcall $b-ro-src ro "echo x >> src/a.txt"
	refused $b-ro-src
	sbcall $b-ro-tmp ro 'echo t > "$TMPDIR/t" && cat "$TMPDIR/t"'
	ran $b-ro-tmp
	eq "$(field $b-ro-tmp .output.stdout)" t "$b: read-only: the private tmp dir is writable"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$W/ro-$b.txt" ] && [ "$(cat "$W/src/a.txt")" = a ] || fail "$b: read-only mode wrote"

	listener
	sbcall $b-net net "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$LPORT'"
	ran $b-net
	eq "$(heard)" 1 "$b: network: true reaches the listener"

	can_bomb && fork_bomb $b-bomb ww
	timed_out $b-timeout ww
done
unset TOOLGATE_SANDBOX_BACKEND

# ---- no backend: sandboxed modes refuse, danger-full-access runs
export TOOLGATE_SANDBOX_BACKEND=none
sbcall none-ww ww "echo hi"
eq "$(field none-ww .status)" denied "no backend: workspace-write refused"
contains "$(field none-ww .error.message)" "sandbox" "no backend: says why"
sbcall none-ro ro "echo hi"
eq "$(field none-ro .status)" denied "no backend: read-only refused"
doc=$(cd "$W" && TOOLGATE_CONFIG="$WS/ww.yaml" "$TG" doctor --json)
eq "$(jq -r .backend <<< "$doc")" none "no backend: doctor"
eq "$(jq -r '.modes["workspace-write"].enforceable' <<< "$doc")" false "no backend: not enforceable"
sbcall none-full full "echo hi"
eq "$(field none-full .output.stdout)" hi "no backend: danger-full-access runs"
unset TOOLGATE_SANDBOX_BACKEND

# ---- danger-full-access really is unsandboxed
sbcall full-outside full "echo free >> '$OUT/f'"
ran full-outside
eq "$(tail -n 1 "$OUT/f")" free "full access: wrote outside the workspace"
sbcall full-git full "echo '# x' >> .git/config"
ran full-git
listener
sbcall full-net full "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$LPORT'"
ran full-net
eq "$(heard)" 1 "full access: the network is there"
if [ "$(id -u)" = 0 ]; then
	sbcall full-caps full "grep CapEff /proc/self/status"
	CHECKS=$((CHECKS + 1))
	[[ $(field full-caps .output.stdout) != *0000000000000000* ]] ||
		fail "full access: root lost its capabilities"
fi

finish
