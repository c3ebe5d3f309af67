# A program given by its path, through the gate: an execpolicy allow rule
# for `git` covers /usr/bin/git (and git found on PATH) but no git the
# model could have planted: not /tmp/evil/git, not ./git or any other file
# in the workspace, not $HOME/bin/git, not a symlink to /usr/bin/git in a
# writable directory (it could be re-pointed between the check and the
# run), not /usr/bin/../bin/git.  A root-owned copy or link outside those
# places counts, and so do host_executable entries, even in the home
# directory (that one then runs); forbidden rules hold for every path.  Run as root and as an
# unprivileged user made here with useradd (runuser); a non-root caller
# runs the unprivileged half as itself.
#
# The read-only class is switched off (read_only_replace with no entries)
# and approval is `never`, so a call runs only if execpolicy allowed it:
# any other path ends `denied`.  Each planted program writes a marker into
# the workspace if it ever runs.
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/git ] || { echo "FAIL: /usr/bin/git is needed" >&2; exit 1; }

# Is DIR a place only root can write, outside temp dirs and the home, that
# everyone can reach (root-owned, no group/other write bit, o+x, all the
# way up)?  Copies of git there must count.
trusted_dir() {
	local p u m
	p=$(realpath "$1" 2> /dev/null) || return 1
	case $p/ in /tmp/* | /var/tmp/* | /dev/shm/* | "${TMPDIR:-/tmp}"/* | "$HOME"/*) return 1 ;; esac
	while :; do
		read -r u m < <(stat -c '%u %a' "$p") || return 1
		[ "$u" = 0 ] && (((8#$m & 8#022) == 0 && (8#$m & 8#001) != 0)) || return 1
		[ "$p" = / ] && return 0
		p=$(dirname "$p")
	done
}

ROOTED=
[ "$(id -u)" = 0 ] && ROOTED=1
mkdir -p "$ROOT/build"
BASE=
if [ -n "$ROOTED" ]; then
	for c in "$ROOT/build" /var/lib /opt /srv; do
		if trusted_dir "$c"; then
			BASE=$(mktemp -d "$c/tg-program-paths.XXXXXX") && break
		fi
	done
	[ -n "$BASE" ] || { echo "FAIL: no root-owned place outside temp dirs for the test" >&2; exit 1; }
else
	BASE=$(mktemp -d "$ROOT/build/program-paths.XXXXXX")
fi
USER_MADE=
cleanup() {
	[ -n "${KEEP:-}" ] || rm -rf "$BASE"
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	chattr -R -i "$WS" 2> /dev/null
	rm -rf "$WS"
}
trap cleanup EXIT
chmod 755 "$BASE"

# sys/: root-owned, outside workspace, home and temp dirs: a trusted place
# (made only as root)
mkdir -p "$BASE/sys/bin" "$BASE/sys/link"
if [ -n "$ROOTED" ]; then
	cp /usr/bin/git "$BASE/sys/bin/git"
	ln -s /usr/bin/git "$BASE/sys/link/git"
	chmod -R go-w "$BASE/sys"
fi

# one gate user's world: its workspace and home, a planted git everywhere
# it could write, and the configurations
setup() { # DIR OWNER
	local d=$1 owner=$2
	mkdir -p "$d/ws/rules" "$d/ws/bin" "$d/ws/lnk" "$d/home/bin" "$d/tmp/evil/lnk"
	local planted='#!/bin/sh
echo planted > "$PWD/planted-ran"
'
	for f in "$d/ws/git" "$d/ws/bin/git" "$d/home/bin/git" "$d/tmp/evil/git"; do
		printf '%s' "$planted" > "$f"
		chmod 755 "$f"
	done
	ln -s /usr/bin/git "$d/ws/lnk/git"
	ln -s /usr/bin/git "$d/tmp/evil/lnk/git"
	cat > "$d/ws/rules/git.rules" <<-'RULES'
	prefix_rule(pattern = ["git", ["status", "--version"]], decision = "allow")
	prefix_rule(pattern = ["git", "push", ["--force", "-f"]], decision = "forbidden")
	RULES
	cat > "$d/ws/rules/host.rules" <<-RULES
	host_executable(name = "git", paths = ["$d/home/bin/git", "$BASE/sys/bin/git"])
	RULES
	for name in plain host full perm; do
		{
			echo "approval: never"
			echo "shell: {read_only_commands: [], read_only_replace: true}"
			case $name in
			plain) echo "execpolicy: [rules/git.rules]" ;;
			host) echo "execpolicy: [rules/git.rules, rules/host.rules]"
			      # the sandbox hides the home: show the operator's bin read-only
			      echo "sandbox: {read: [~/bin]}" ;;
			full) echo "execpolicy: [rules/git.rules]"; echo "sandbox: danger-full-access" ;;
			perm) echo 'permissions: {allow: ["shell(git --version)", "shell(/usr/bin/git status)"], deny: ["shell(git push *)"]}' ;;
			esac
		} > "$d/ws/$name.yaml"
	done
	chown -R "$owner" "$d"
	chmod 755 "$d"
}

# the /tmp planting place, shared by both halves
EVIL=$(mktemp -d "${TMPDIR:-/tmp}/evil.XXXXXX")
chmod 1777 "$EVIL"

# call AS NAME CONFIG COMMAND...: the shell tool with an argv, as user AS
# ("" for the caller), the envelope in $BASE/out/NAME.json
mkdir -p "$BASE/out"
chmod 777 "$BASE/out"
call() {
	local as=$1 name=$2 cfg=$3 d=$4; shift 4
	local args='{"command":[' sep= w
	for w in "$@"; do
		args+="$sep$(jq -cn --arg w "$w" '$w')"
		sep=,
	done
	args+=']}'
	local run=(env HOME="$d/home" TOOLGATE_CONFIG="$d/ws/$cfg.yaml" LSAN_OPTIONS="$RUN_LSAN"
		"$RUN_TG" call --json shell "$args")
	if [ -n "$as" ]; then
		run=(runuser -u "$as" -- "${run[@]}")
	fi
	(cd "$d/ws" && "${run[@]}" > "$BASE/out/$name.json" 2> "$BASE/out/$name.err" < /dev/null)
	sanitizers "$BASE/out/$name.err" "$name"
}
status() { jq -r .status "$BASE/out/$1.json" 2> /dev/null || cat "$BASE/out/$1.err" >&2; }
rule() { jq -r '[.stages[] | select(.stage=="decide") | .rule][0] // .error.rule // ""' "$BASE/out/$1.json"; }

allowed() { # WHAT NAME
	eq "$(status "$2")" persisted "$1: runs"
	contains "$(rule "$2")" "execpolicy allow" "$1: allowed by the execpolicy rule"
}
# allowed, for a program outside what the sandbox shows (a directory no
# sandbox.read names): policy lets it run, and the gate says that the
# sandbox has no such program (applied unknown: a command could print the
# sandbox's words itself)
allowed_unseen() { # WHAT NAME
	eq "$(status "$2")/$(jq -r .error.applied "$BASE/out/$2.json")" failed/unknown "$1: failed, applied unknown"
	contains "$(jq -r .error.message "$BASE/out/$2.json")" "inside the sandbox" \
		"$1: the gate says the sandbox cannot start it"
	contains "$(rule "$2")" "execpolicy allow" "$1: allowed by the execpolicy rule"
}
refused() { # WHAT NAME
	eq "$(status "$2")" denied "$1: not allowed by the rule for git"
	case $(rule "$2") in *"execpolicy allow"*) fail "$1: allowed by execpolicy: $(rule "$2")" ;; esac
}

half() { # AS DIR LABEL
	local as=$1 d=$2 l=$3
	local evil=$EVIL/$l
	mkdir -p "$evil"
	cp -a "$d/tmp/evil/." "$evil/"
	[ -z "$as" ] || chown -R "$as" "$evil"
	# the user must reach the program (and the sanitizers' suppressions)
	reach_as "$as" "$BASE"

	call "$as" "$l-usr" plain "$d" /usr/bin/git --version
	allowed "$l: /usr/bin/git" "$l-usr"
	call "$as" "$l-status" plain "$d" /usr/bin/git status
	allowed "$l: /usr/bin/git status" "$l-status"
	call "$as" "$l-path" plain "$d" git --version
	allowed "$l: git found on PATH" "$l-path"
	call "$as" "$l-merged" plain "$d" /bin/git --version
	allowed "$l: /bin/git through the root-owned /bin link" "$l-merged"
	if [ -n "$ROOTED" ]; then
		call "$as" "$l-copy" plain "$d" "$BASE/sys/bin/git" --version
		allowed_unseen "$l: a root-owned copy outside the writable places" "$l-copy"
		call "$as" "$l-syslink" plain "$d" "$BASE/sys/link/git" --version
		allowed_unseen "$l: a root-owned link outside the writable places" "$l-syslink"
	fi

	call "$as" "$l-tmp" plain "$d" "$evil/git" status
	refused "$l: $evil/git status" "$l-tmp"
	call "$as" "$l-dot" plain "$d" ./git status
	refused "$l: ./git status in the workspace" "$l-dot"
	call "$as" "$l-ws" plain "$d" "$d/ws/bin/git" status
	refused "$l: the workspace's bin/git by its absolute path" "$l-ws"
	call "$as" "$l-home" plain "$d" "$d/home/bin/git" status
	refused "$l: \$HOME/bin/git" "$l-home"
	call "$as" "$l-wslink" plain "$d" "$d/ws/lnk/git" --version
	refused "$l: a link to /usr/bin/git in the workspace" "$l-wslink"
	call "$as" "$l-tmplink" plain "$d" "$evil/lnk/git" --version
	refused "$l: a link to /usr/bin/git in a temp dir" "$l-tmplink"
	call "$as" "$l-dotdot" plain "$d" /usr/bin/../bin/git --version
	refused "$l: /usr/bin/../bin/git" "$l-dotdot"
	call "$as" "$l-force" plain "$d" "$evil/git" push --force
	eq "$(status "$l-force")" denied "$l: a planted git's force push"
	contains "$(rule "$l-force")" "execpolicy forbidden" "$l: forbidden holds for any path"

	[ ! -e "$d/ws/planted-ran" ] || fail "$l: a planted program ran"

	# host_executable: its paths count, wherever they are (the operator
	# vouches for the home's git, planted or not: it runs); others do not
	call "$as" "$l-hosthome" host "$d" "$d/home/bin/git" status
	allowed "$l: a host_executable path in the home directory" "$l-hosthome"
	[ -e "$d/ws/planted-ran" ] || fail "$l: the listed program did not run"
	rm -f "$d/ws/planted-ran"
	if [ -n "$ROOTED" ]; then
		call "$as" "$l-hostcopy" host "$d" "$BASE/sys/bin/git" --version
		allowed_unseen "$l: a listed root-owned copy" "$l-hostcopy"
	fi
	call "$as" "$l-hostusr" host "$d" /usr/bin/git --version
	refused "$l: /usr/bin/git, not in the host_executable list" "$l-hostusr"
	call "$as" "$l-hostplain" host "$d" git --version
	allowed "$l: git as written" "$l-hostplain"

	# permission rules: an allow rule covers a program path only as its own
	# text says; deny and ask rules read any path by its basename
	call "$as" "$l-perm" perm "$d" git --version
	eq "$(status "$l-perm")" persisted "$l: shell(git --version) allows git --version"
	call "$as" "$l-permusr" perm "$d" /usr/bin/git --version
	eq "$(status "$l-permusr")" denied "$l: shell(git --version) does not allow /usr/bin/git --version"
	call "$as" "$l-permtmp" perm "$d" "$evil/git" --version
	eq "$(status "$l-permtmp")" denied "$l: nor a planted git"
	call "$as" "$l-permpath" perm "$d" /usr/bin/git status
	eq "$(status "$l-permpath")" persisted "$l: shell(/usr/bin/git status) allows that path"
	call "$as" "$l-permdeny" perm "$d" "$evil/git" push origin
	contains "$(rule "$l-permdeny")" "shell(git push *)" "$l: a deny rule holds for any path"

	# explain shows the gate's reading
	local ex
	ex=$(cd "$d/ws" && ${as:+runuser -u "$as" --} env HOME="$d/home" TOOLGATE_CONFIG="$d/ws/plain.yaml" \
		LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" policy check --explain -- "$evil/git" status)
	eq "$(jq -c .execpolicy <<< "$ex")" '{"matchedRules":[]}' "$l: explain, planted"
	ex=$(cd "$d/ws" && ${as:+runuser -u "$as" --} env HOME="$d/home" TOOLGATE_CONFIG="$d/ws/plain.yaml" \
		LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" policy check --explain -- /usr/bin/git status)
	eq "$(jq -r '.execpolicy.matchedRules[0].prefixRuleMatch.resolvedProgram' <<< "$ex")" /usr/bin/git \
		"$l: explain, /usr/bin/git"

	# danger-full-access: as root a command could have written /usr/bin itself
	call "$as" "$l-full" full "$d" /usr/bin/git --version
	if [ "$(id -u "${as:-$(id -un)}")" = 0 ]; then
		refused "$l: /usr/bin/git unsandboxed as root" "$l-full"
	else
		allowed "$l: /usr/bin/git unsandboxed, not root" "$l-full"
	fi

	[ ! -e "$d/ws/planted-ran" ] || fail "$l: a planted program ran"
}

if [ "$(id -u)" = 0 ]; then
	setup "$BASE/root" root:root
	half "" "$BASE/root" root
	U=tgpaths
	if ! id "$U" > /dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
		USER_MADE=$U
	fi
	setup "$BASE/user" "$U:"
	half "$U" "$BASE/user" user
else
	echo "not root: the unprivileged half only, as $(id -un), without root-owned copies"
	setup "$BASE/user" "$(id -un):"
	half "" "$BASE/user" user
fi
rm -rf "$EVIL"
finish
