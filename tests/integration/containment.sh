# Containment of the shell tool (issue 20), through `toolgate call`, as root
# and as an unprivileged user made here (runuser), each in a tree of its
# own with a fake $HOME full of secrets, canaries outside the workspace and
# in the host's /tmp, listening unix sockets, a sleeper process and a
# secret in the gate's own environment.  The attacks run as script files
# (tests/integration/support/contain.py, attacks/*.sh) so that the floor,
# which judges command lines, does not stop them first: here the sandbox
# has to.  Legitimate use is checked beside each class, so that "refuse
# everything" cannot pass.
#
#  1. kernel: /proc/sys (lease-break-time, core_pattern) and
#     /proc/sysrq-trigger not writable, the host's values unchanged; a key
#     planted in @u outside unreadable (keyctl READ refused, /proc/keys
#     hidden); /etc/shadow unreadable with python; the administrative
#     syscalls refused; no capabilities.
#  2. secrets: ~/.ssh/id_rsa, ~/.aws/credentials, ~/.netrc,
#     ~/.config/gh/hosts.yml unreadable by python, tar, find -exec, cat;
#     the canaries too; the gate's environment not in /proc/$PPID/environ
#     or /proc/1/environ; the sleeper neither visible nor signalable; a
#     private, writable, empty home; sandbox.read shows ~/.gitconfig.
#  3. sockets: a socket under another directory and ~/.gnupg/S.gpg-agent
#     unreachable, an abstract one too; sandbox.sockets makes one
#     reachable; under `toolgate serve`, .toolgate/events.sock unreachable.
#  4. nested .git: vendor/lib/.git/hooks/pre-commit and core.hooksPath not
#     writable; sub2/.git/hooks/pre-commit, `git init sub3` and a .git file
#     removed after the run and reported (warning, event); a moved .git
#     kept.
#  5. traces: nothing new in the workspace while a command runs, nor after
#     a kill -9 of the gate mid-call (in a fresh directory too).
#  6. the gate's files: rules/, hooks/, tools/ and config/ cannot be
#     renamed or written, tools/probe.py (a script argument) cannot be
#     overwritten, a toolgate.yml found first is removed: the next call
#     still obeys and runs the originals.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "FAIL: $PY is needed" >&2; exit 1; }
[ -x /usr/bin/git ] || { echo "FAIL: /usr/bin/git is needed" >&2; exit 1; }
SUPPORT=$ROOT/tests/integration/support

ROOTED=
[ "$(id -u)" = 0 ] && ROOTED=1
# the trees live outside /tmp, as homes do (the sandbox's private /tmp would
# hide them anyway, and prove nothing)
if [ -n "$ROOTED" ]; then
	BASE=$(mktemp -d /var/lib/tg-contain.XXXXXX)
else
	mkdir -p "$ROOT/build"
	BASE=$(mktemp -d "$ROOT/build/contain.XXXXXX")
fi
chmod 755 "$BASE"
SECRET=tgsecret$$x$RANDOM$RANDOM
CANARY_TMP=$(mktemp /tmp/tg-canary.XXXXXX)
printf 'canary-tmp-%s\n' "$SECRET" > "$CANARY_TMP"
chmod 644 "$CANARY_TMP"
USER_MADE=
BG=()   # pids of the listeners, sleepers and servers started here
cleanup() {
	for p in "${BG[@]}"; do kill -9 "$p" 2> /dev/null; done
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	rm -f "$CANARY_TMP"
	[ -n "${KEEP:-}" ] || rm -rf "$BASE"
	chattr -R -i "$WS" 2> /dev/null
	rm -rf "$WS"
}
trap cleanup EXIT

# ---- one user's world ----

setup() { # DIR OWNER
	local d=$1 owner=$2
	mkdir -p "$d/ws/rules" "$d/ws/hooks" "$d/ws/tools" "$d/ws/config" "$d/ws/attacks" \
		"$d/ws/vendor/lib" "$d/home/.ssh" "$d/home/.aws" "$d/home/.config/gh" "$d/home/.gnupg" \
		"$d/outside" "$d/sock" "$d/out" "$d/fresh"
	printf 'PRIVATE-KEY-%s\n' "$SECRET" > "$d/home/.ssh/id_rsa"
	chmod 600 "$d/home/.ssh/id_rsa"
	printf '[default]\naws_secret_access_key = AWS-%s\n' "$SECRET" > "$d/home/.aws/credentials"
	printf 'machine example.com login me password NETRC-%s\n' "$SECRET" > "$d/home/.netrc"
	printf 'github.com:\n  oauth_token: GH-%s\n' "$SECRET" > "$d/home/.config/gh/hosts.yml"
	printf '[user]\n\tname = tester-gitconfig\n' > "$d/home/.gitconfig"
	chmod 700 "$d/home/.gnupg"
	printf 'canary-outside-%s\n' "$SECRET" > "$d/outside/canary"
	cp "$SUPPORT/contain.py" "$d/ws/contain.py"

	(cd "$d/ws" && git init -q . && git init -q vendor/lib) || fail "git init"
	cat > "$d/ws/rules/default.rules" <<-'RULES'
	prefix_rule(pattern = ["git", "push"], decision = "forbidden", justification = "no pushing")
	RULES
	printf '#!/bin/sh\ncat > /dev/null\nexit 0\n' > "$d/ws/hooks/check.sh"
	chmod 755 "$d/ws/hooks/check.sh"
	printf 'import json\nprint(json.dumps({"probe": "original"}))\n' > "$d/ws/tools/probe.py"
	cat > "$d/ws/toolgate.yaml" <<-YAML
	mode: bypassPermissions
	approval: never
	execpolicy: [rules/default.rules]
	hooks: {before_tool_call: [{command: [./hooks/check.sh], tools: [shell]}]}
	tools:
	  probe: {description: "A probe.", command: [$PY, tools/probe.py]}
	YAML
	cat > "$d/ws/config/toolgate.yaml" <<-YAML
	workspace: ..
	mode: bypassPermissions
	approval: never
	YAML
	# outside the workspace: other profiles
	cat > "$d/read.yaml" <<-YAML
	workspace: $d/ws
	mode: bypassPermissions
	approval: never
	sandbox: {mode: workspace-write, read: [~/.gitconfig]}
	YAML
	cat > "$d/sockets.yaml" <<-YAML
	workspace: $d/ws
	mode: bypassPermissions
	approval: never
	sandbox: {mode: workspace-write, sockets: [$d/sock/s]}
	YAML
	cat > "$d/serve.yaml" <<-YAML
	workspace: $d/ws
	mode: bypassPermissions
	approval: never
	events: {socket: .toolgate/events.sock}
	YAML
	# the attacks that the floor would see on a command line
	cat > "$d/ws/attacks/home.sh" <<-SH
	cat "\$HOME/.ssh/id_rsa" "$d/home/.ssh/id_rsa"
	$PY contain.py read "$d/home/.ssh/id_rsa" "$d/home/.aws/credentials" "$d/home/.netrc" "$d/home/.config/gh/hosts.yml"
	tar -cf - "$d/home/.ssh" "$d/home/.aws" 2>&1 | head -c 2000
	find "$d/home" -name id_rsa -exec cat {} \\;
	find / -xdev -name credentials -path '*aws*' -exec cat {} \\; 2> /dev/null
	$PY contain.py read "$CANARY_TMP" "$d/outside/canary" /root/.bashrc
	ls -A /root /home 2>&1
	cat /proc/\$PPID/environ /proc/1/environ 2>&1
	cat /proc/[0-9]*/environ 2>&1
	env
	SH
	chown -R "$owner" "$d"
	chmod 755 "$d"
}

# ---- running the gate as the half's user ----

AS= D= OUT=
run_tg() { # NAME ARGS...: toolgate ARGS in $D/ws, stdout to $OUT/NAME.json
	local name=$1; shift
	local run=(env HOME="$D/home" TG_TEST_SECRET="$SECRET" LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" "$@")
	[ -z "$AS" ] || run=(runuser -u "$AS" -- "${run[@]}")
	(cd "$D/ws" && "${run[@]}" > "$OUT/$name.json" 2> "$OUT/$name.err" < /dev/null)
	sanitizers "$OUT/$name.err" "$name"
}
sh_call() { # NAME COMMAND [GATE OPTIONS...]: the shell tool
	local name=$1 cmd=$2; shift 2
	run_tg "$name" call --json "$@" shell "$(jq -cn --arg c "$cmd" '{command: $c}')"
}
as_user() { # COMMAND...: as the half's user, outside any sandbox (setpriv execs the
	# command itself, so that $! of a background one is the command)
	if [ -n "$AS" ]; then
		setpriv --reuid="$AS" --regid="$(id -g "$AS")" --clear-groups -- "$@"
	else
		"$@"
	fi
}
bg_user() { # COMMAND...: as_user in the background, its pid in BG
	if [ -n "$AS" ]; then
		setpriv --reuid="$AS" --regid="$(id -g "$AS")" --clear-groups -- "$@" &
	else
		"$@" &
	fi
	BG+=($!)
	disown $!          # killed at the end without a word
}
st() { jq -r .status "$OUT/$1.json" 2> /dev/null; }
out() { jq -r '(.output.stdout // "") + (.output.stderr // "")' "$OUT/$1.json" 2> /dev/null; }
why() { echo "status $(st "$1"), $(jq -c '.error // .output | tostring | .[0:400]' "$OUT/$1.json" 2> /dev/null) $(head -c 300 "$OUT/$1.err")"; }
ran() { # NAME WHAT: the command ran in the sandbox
	CHECKS=$((CHECKS + 1))
	[ "$(st "$1")" = persisted ] || fail "$2: did not run: $(why "$1")"
}
ok_line() { # NAME PREFIX WHAT: the helper's line for PREFIX says ok
	contains "$(out "$1")" "$2: ok" "$3"
}
refused_line() { # NAME PREFIX WHAT: the helper's line for PREFIX is an error
	CHECKS=$((CHECKS + 1))
	local line
	line=$(out "$1" | grep -F -- "$2: " | head -n 1)
	[ -n "$line" ] && [[ $line != *": ok"* ]] || fail "$3: expected a refusal, got '${line:-nothing}' ($(why "$1"))"
}
no_secret() { # NAME WHAT
	CHECKS=$((CHECKS + 1))
	! grep -qF "$SECRET" "$OUT/$1.json" || fail "$2: the secret was read: $(grep -oF -m1 -- "-$SECRET" "$OUT/$1.json" | head -n1) in $(out "$1" | grep -F "$SECRET" | head -n 3)"
}
listen() { # WHERE: a unix socket listener, as the half's user
	local ready=$OUT/listen.$RANDOM
	bg_user "$PY" "$SUPPORT/contain.py" listen "$1" "$ready" > /dev/null 2>&1
	for _ in $(seq 250); do [ -s "$ready" ] && return 0; sleep 0.02; done
	fail "the listener on $1 did not start"
}

half() { # AS DIR LABEL
	AS=$1 D=$2
	local l=$3
	OUT=$D/out
	reach_as "$AS" "$BASE"

	# ---- legitimate use first
	sh_call "$l-ok" "echo hi > made.txt && cat made.txt && git status --short > /dev/null && echo tmp > \"\$TMPDIR/t\" && echo home > ~/h && cat ~/h && ls /usr/bin > /dev/null && $PY -c 'print(40+2)'"
	ran "$l-ok" "$l: legitimate commands"
	eq "$(jq -r .output.stdout "$OUT/$l-ok.json")" "$(printf 'hi\nhome\n42')" "$l: legitimate output"
	eq "$(cat "$D/ws/made.txt" 2>&1)" hi "$l: written in the workspace"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/home/h" ] || fail "$l: the private home wrote into the real one"

	# ---- what doctor says holds, for this user
	run_tg "$l-doctor" doctor --json
	local uid
	uid=$(as_user id -u)
	eq "$(jq -r .backend "$OUT/$l-doctor.json")" bubblewrap "$l: doctor: the backend"
	contains "$(jq -r .kernel "$OUT/$l-doctor.json")" "uid $uid inside is uid $uid outside" "$l: doctor: uid $uid"
	contains "$(jq -r .kernel "$OUT/$l-doctor.json")" "no capabilities" "$l: doctor: no capabilities"
	contains "$(jq -r '.shell.hidden | join(" ")' "$OUT/$l-doctor.json")" "/etc/shadow" "$l: doctor: /etc/shadow hidden"
	contains "$(jq -r '.shell.hidden | join(" ")' "$OUT/$l-doctor.json")" "$D/ws/.toolgate" "$l: doctor: .toolgate hidden"
	contains "$(jq -r '.shell.private | join(" ")' "$OUT/$l-doctor.json")" "$D/home" "$l: doctor: the home is private"
	contains "$(jq -r '.shell.writable | join(" ")' "$OUT/$l-doctor.json")" "$D/ws" "$l: doctor: the workspace is writable"
	contains "$(jq -r '.shell.readable | join(" ")' "$OUT/$l-doctor.json")" "$D/ws/rules" "$l: doctor: rules/ is read-only"
	contains "$(jq -r '.shell.not_shown | join(" ")' "$OUT/$l-doctor.json")" "/root" "$l: doctor: /root is not shown"

	# ---- 1. the host kernel
	local lease core
	lease=$(cat /proc/sys/fs/lease-break-time)
	core=$(cat /proc/sys/kernel/core_pattern)
	sh_call "$l-lease" "$PY contain.py write /proc/sys/fs/lease-break-time $((lease + 1))"
	refused_line "$l-lease" "write /proc/sys/fs/lease-break-time" "$l: /proc/sys/fs/lease-break-time"
	eq "$(cat /proc/sys/fs/lease-break-time)" "$lease" "$l: the host's lease-break-time"
	sh_call "$l-core" "$PY contain.py write /proc/sys/kernel/core_pattern '|/bin/false'"
	refused_line "$l-core" "write /proc/sys/kernel/core_pattern" "$l: core_pattern"
	eq "$(cat /proc/sys/kernel/core_pattern)" "$core" "$l: the host's core_pattern"
	sh_call "$l-sysrq" "$PY contain.py write /proc/sysrq-trigger h"
	refused_line "$l-sysrq" "write /proc/sysrq-trigger" "$l: /proc/sysrq-trigger"
	local kid
	kid=$(as_user "$PY" "$SUPPORT/contain.py" plant-key "tgkey-$SECRET" "keydata-$SECRET")
	if [[ $kid =~ ^[0-9]+$ ]]; then
		sh_call "$l-keys" "$PY contain.py keyread $kid; $PY contain.py read /proc/keys"
		contains "$(out "$l-keys")" "keyread: EPERM" "$l: keyctl(KEYCTL_READ) refused"
		refused_line "$l-keys" "read /proc/keys" "$l: /proc/keys"
		no_secret "$l-keys" "$l: the planted key"
		as_user "$PY" "$SUPPORT/contain.py" revoke-key "$kid" > /dev/null
	else
		fail "$l: could not plant a key outside: $kid"
	fi
	sh_call "$l-shadow" "$PY contain.py read /etc/shadow /etc/gshadow"
	refused_line "$l-shadow" "read /etc/shadow" "$l: /etc/shadow"
	refused_line "$l-shadow" "read /etc/gshadow" "$l: /etc/gshadow"
	sh_call "$l-calls" "$PY contain.py syscalls"
	ran "$l-calls" "$l: the syscall probe"
	local bad
	bad=$(out "$l-calls" | grep -vE ': EPERM$' | grep -v '^clone3: ENOSYS$')
	eq "$bad" "" "$l: every administrative call refused"
	contains "$(out "$l-calls")" "unshare-user: EPERM" "$l: no nested user namespace"
	sh_call "$l-caps" "grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status | tr -d ' \\t'"
	eq "$(jq -r .output.stdout "$OUT/$l-caps.json")" "$(printf 'CapPrm:0000000000000000\nCapEff:0000000000000000\nNoNewPrivs:1')" "$l: no capabilities"

	# ---- 2. secrets hidden by default
	local sleeper_mark="9$$$RANDOM"
	bg_user sleep "$sleeper_mark"
	local sleeper=$!
	sh_call "$l-home" "sh attacks/home.sh"
	ran "$l-home" "$l: the home attacks ran"
	no_secret "$l-home" "$l: home secrets, canaries, the gate's environment"
	sh_call "$l-sleeper" "kill -0 $sleeper && echo signalled; ps -eo args | grep -c '^sleep $sleeper_mark'"
	CHECKS=$((CHECKS + 1))
	[[ $(out "$l-sleeper") != *signalled* ]] || fail "$l: the sleeper outside could be signalled"
	eq "$(jq -r .output.stdout "$OUT/$l-sleeper.json")" 0 "$l: the sleeper outside is not visible"
	CHECKS=$((CHECKS + 1))
	kill -0 "$sleeper" 2> /dev/null || fail "$l: the sleeper outside died"
	sh_call "$l-read" "cat ~/.gitconfig; $PY contain.py read ~/.ssh/id_rsa" --config "$D/read.yaml"
	contains "$(out "$l-read")" "tester-gitconfig" "$l: sandbox.read shows ~/.gitconfig"
	no_secret "$l-read" "$l: sandbox.read shows nothing else of the home"

	# ---- 3. sockets
	listen "$D/sock/s"
	listen "$D/home/.gnupg/S.gpg-agent"
	listen "@tgabstract$l$SECRET"
	CHECKS=$((CHECKS + 1))
	[[ $(as_user "$PY" "$SUPPORT/contain.py" connect "$D/sock/s") == *": ok"* ]] || fail "$l: the socket outside does not answer"
	sh_call "$l-sock" "$PY contain.py connect $D/sock/s $D/home/.gnupg/S.gpg-agent; $PY contain.py abstract tgabstract$l$SECRET"
	refused_line "$l-sock" "connect $D/sock/s" "$l: a socket under another directory"
	refused_line "$l-sock" "connect $D/home/.gnupg/S.gpg-agent" "$l: ~/.gnupg/S.gpg-agent"
	refused_line "$l-sock" "abstract tgabstract$l$SECRET" "$l: an abstract socket"
	sh_call "$l-sockok" "$PY contain.py connect $D/sock/s" --config "$D/sockets.yaml"
	ok_line "$l-sockok" "connect $D/sock/s" "$l: sandbox.sockets makes it reachable"

	local fifo=$OUT/serve.in
	mkfifo "$fifo"
	[ -z "$AS" ] || chown "$AS" "$fifo"
	exec 7<> "$fifo"         # read-write: opening it does not wait for the server
	cd "$D/ws"
	# (its own redirection: an & command's stdin is /dev/null otherwise)
	local serve_cmd=(env HOME="$D/home" LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" serve --config "$D/serve.yaml")
	[ -z "$AS" ] || serve_cmd=(setpriv --reuid="$AS" --regid="$(id -g "$AS")" --clear-groups -- "${serve_cmd[@]}")
	"${serve_cmd[@]}" < "$fifo" > /dev/null 2> "$OUT/serve.err" &
	local serve=$!
	BG+=($serve)
	cd - > /dev/null
	for _ in $(seq 250); do [ -S "$D/ws/.toolgate/events.sock" ] && break; sleep 0.02; done
	CHECKS=$((CHECKS + 1))
	if [ -S "$D/ws/.toolgate/events.sock" ]; then
		[[ $(as_user "$PY" "$SUPPORT/contain.py" connect "$D/ws/.toolgate/events.sock") == *": ok"* ]] ||
			fail "$l: the events socket does not answer outside"
		# (listed by python: policy itself refuses `ls .toolgate`, and this is the sandbox's test)
		sh_call "$l-events" "$PY contain.py connect .toolgate/events.sock $D/ws/.toolgate/events.sock; $PY contain.py ls .toolgate"
		refused_line "$l-events" "connect .toolgate/events.sock" "$l: .toolgate/events.sock"
		eq "$(jq -r .output.stdout "$OUT/$l-events.json" | grep -v '^connect')" "" "$l: .toolgate is empty inside"
	else
		fail "$l: toolgate serve made no events socket: $(head -c 300 "$OUT/serve.err")"
	fi
	exec 7>&-
	kill "$serve" 2> /dev/null

	# ---- 4. nested .git
	sh_call "$l-git1" "mkdir -p vendor/lib/.git/hooks; echo 'echo owned' > vendor/lib/.git/hooks/pre-commit"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/ws/vendor/lib/.git/hooks/pre-commit" ] || fail "$l: vendor/lib/.git/hooks/pre-commit written"
	sh_call "$l-git2" "git -C vendor/lib config core.hooksPath /tmp/hooks"
	eq "$(as_user git -C "$D/ws/vendor/lib" config core.hooksPath)" "" "$l: core.hooksPath of vendor/lib"
	sh_call "$l-git3" "mkdir -p sub2/.git/hooks && echo 'echo owned' > sub2/.git/hooks/pre-commit && git init -q sub3 && mkdir -p sub4 && echo 'gitdir: /tmp' > sub4/.git && echo made"
	ran "$l-git3" "$l: making .git runs"
	for g in sub2 sub3 sub4; do
		CHECKS=$((CHECKS + 1))
		[ ! -e "$D/ws/$g/.git" ] || fail "$l: $g/.git is still there after the run"
		contains "$(jq -r '.warnings // [] | join("\n")' "$OUT/$l-git3.json")" "$g/.git" "$l: the warning names $g/.git"
	done
	CHECKS=$((CHECKS + 1))
	[ -d "$D/ws/sub3" ] || fail "$l: sub3 itself was removed"
	local ev
	ev=$(sqlite3 "$D/ws/.toolgate/ledger.db" "select count(*) from events where type = 'tool.sandbox.removed'" 2>&1)
	eq "$ev" 1 "$l: one tool.sandbox.removed event"
	sh_call "$l-gitmove" "mv vendor vendor2 && mv vendor2 vendor && echo moved"
	ran "$l-gitmove" "$l: moving a directory above a .git"
	eq "$(as_user git -C "$D/ws/vendor/lib" rev-parse --git-dir 2>&1)" .git "$l: the moved .git is kept"
	eq "$(jq -r '.warnings // [] | length' "$OUT/$l-gitmove.json")" 0 "$l: a moved .git is not reported"
	sh_call "$l-git4" "echo x >> .git/config; mv .git git2"
	eq "$(grep -c '^x' "$D/ws/.git/config")" 0 "$l: .git/config unchanged"

	# ---- 5. no traces in the workspace
	local before during
	before=$(ls -A "$D/ws" | sort)
	sh_call "$l-sleep" "sleep 2" &
	local call=$!
	sleep 0.7
	during=$(ls -A "$D/ws" | sort)
	wait "$call"
	eq "$during" "$before" "$l: nothing new in the workspace while a command runs"
	eq "$(ls -A "$D/ws" | sort)" "$before" "$l: nor after"
	# the issue's reproduction: a fresh directory, no configuration, no .git
	local mark="7$$$RANDOM"
	(cd "$D/fresh" && ${AS:+runuser -u "$AS" --} env HOME="$D/home" LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" call --mode bypassPermissions shell "{\"command\":\"sleep $mark\"}" > /dev/null 2>&1) &
	local gate=$!
	sleep 0.7
	eq "$(ls -A "$D/fresh")" .toolgate "$l: a fresh directory while a command runs"
	# kill -9 the gate itself (the subshell's child)
	local gpid
	gpid=$(pgrep -f "^$RUN_TG call --mode bypassPermissions shell .*sleep $mark" | head -n 1)
	CHECKS=$((CHECKS + 1))
	[ -n "$gpid" ] || fail "$l: the gate running sleep $mark was not found"
	kill -9 $gpid 2> /dev/null
	wait "$gate" 2> /dev/null
	eq "$(ls -A "$D/fresh")" .toolgate "$l: after a kill -9 of the gate"
	for _ in $(seq 100); do pgrep -f "^sleep $mark" > /dev/null || break; sleep 0.05; done
	CHECKS=$((CHECKS + 1))
	! pgrep -f "^sleep $mark" > /dev/null || fail "$l: the command outlived the killed gate"

	# ---- 6. the gate's own files
	sh_call "$l-rules" "mv rules rules.old; mkdir -p rules; echo 'prefix_rule(pattern = [\"git\", \"push\"], decision = \"allow\")' > rules/default.rules"
	sh_call "$l-push" "git push origin main"
	eq "$(st "$l-push")" denied "$l: git push is still forbidden"
	contains "$(jq -r '.error.rule // ""' "$OUT/$l-push.json")" "forbidden" "$l: by the original rule"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/ws/rules.old" ] || fail "$l: rules/ was renamed"

	sh_call "$l-hooks" "mv hooks hooks.old; mkdir -p hooks; printf '#!/bin/sh\\ncat /proc/\$PPID/environ > $D/outside/leak\\n' > hooks/check.sh; chmod +x hooks/check.sh"
	sh_call "$l-afterhook" "echo after"
	ran "$l-afterhook" "$l: the hook still lets calls through"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/outside/leak" ] && [ ! -e "$D/ws/hooks.old" ] || fail "$l: the planted hook ran"

	sh_call "$l-tools" "echo 'print(\"owned\")' > tools/probe.py; mv tools tools.old; mkdir -p tools; echo 'print(\"owned\")' > tools/probe.py"
	run_tg "$l-probe" call --json probe '{}'
	contains "$(jq -c .output "$OUT/$l-probe.json")" original "$l: the command tool runs the original script"

	sh_call "$l-config" "mv config config.old; mkdir -p config; printf 'workspace: ..\\nmode: bypassPermissions\\napproval: never\\nsandbox: danger-full-access\\n' > config/toolgate.yaml" --config "$D/ws/config/toolgate.yaml"
	sh_call "$l-config2" "echo pwned > $D/outside/pwned" --config "$D/ws/config/toolgate.yaml"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/outside/pwned" ] || fail "$l: the next call ran unsandboxed"
	grep -q danger "$D/ws/config/toolgate.yaml" && fail "$l: config/toolgate.yaml was rewritten"

	sh_call "$l-first" "printf 'sandbox: danger-full-access\\n' > toolgate.yml && echo made"
	ran "$l-first" "$l: writing toolgate.yml runs"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/ws/toolgate.yml" ] || fail "$l: toolgate.yml stays after the run"
	contains "$(jq -r '.warnings // [] | join("\n")' "$OUT/$l-first.json")" "toolgate.yml" "$l: the warning names toolgate.yml"

	# the configuration is found from the directory the gate runs in upward:
	# one below the root is the gate's as much as the root's
	as_user mkdir -p "$D/ws/nest/deep"
	sh_call "$l-nested" "printf 'mode: bypassPermissions\n' > nest/toolgate.yaml && echo made"
	ran "$l-nested" "$l: writing nest/toolgate.yaml runs"
	CHECKS=$((CHECKS + 1))
	[ ! -e "$D/ws/nest/toolgate.yaml" ] || fail "$l: nest/toolgate.yaml stays after the run"
	contains "$(jq -r '.warnings // [] | join("\n")' "$OUT/$l-nested.json")" "nest/toolgate.yaml" "$l: the warning names it"
	as_user sh -c "printf 'mode: plan\n' > '$D/ws/nest/deep/toolgate.json'"
	sh_call "$l-nested-old" "echo '{}' > nest/deep/toolgate.json; cat nest/deep/toolgate.json"
	eq "$(cat "$D/ws/nest/deep/toolgate.json")" "mode: plan" "$l: a configuration below the root is read-only in the sandbox"
	run_tg "$l-nested-wf" call --json write_file '{"path":"nest/toolgate.yml","content":"mode: bypassPermissions\n"}'
	eq "$(st "$l-nested-wf")" denied "$l: write_file of nest/toolgate.yml: denied"
	contains "$(jq -r .error.message "$OUT/$l-nested-wf.json")" "configuration" "$l: the denial says why"
	run_tg "$l-nested-patch" call --json apply_patch '{"patch":"*** Begin Patch\n*** Add File: nest/deep/toolgate.yaml\n+mode: bypassPermissions\n*** End Patch"}'
	eq "$(st "$l-nested-patch")" denied "$l: apply_patch adding nest/deep/toolgate.yaml: denied"
	# renaming the directory above it, then writing one at the old place
	sh_call "$l-nested-mv" "mv nest/deep nest/deep.old; mkdir -p nest/deep && printf 'mode: bypassPermissions\n' > nest/deep/toolgate.json; echo done"
	eq "$(cat "$D/ws/nest/deep/toolgate.json" 2> /dev/null || cat "$D/ws/nest/deep.old/toolgate.json")" "mode: plan" \
		"$l: a parent renamed: no configuration but the old one stands"
	CHECKS=$((CHECKS + 1))
	! grep -rqs bypassPermissions "$D/ws/nest" || fail "$l: a parent renamed: a new configuration stays"
	as_user rm -rf "$D/ws/nest"
}

if [ -n "$ROOTED" ]; then
	setup "$BASE/root" root:root
	half "" "$BASE/root" root
	U=tgcontain
	if ! id "$U" > /dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
		USER_MADE=$U
	fi
	setup "$BASE/user" "$U:"
	half "$U" "$BASE/user" user
else
	echo "not root: the unprivileged half only, as $(id -un)"
	setup "$BASE/user" "$(id -un):"
	half "" "$BASE/user" user
fi
finish
