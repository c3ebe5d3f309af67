#!/usr/bin/env bash
# A repository that ships its own .toolgate/ (issue 22 §1): workspace A
# asks for write_file, the owner approves, the row's expiry is raised by
# hand; A's .toolgate/ is copied into a fresh workspace B, committed there
# as a repository would carry it.  The same call in B must be refused with
# the foreign-ledger sentence and write nothing; `toolgate log` reads the
# ledger with a warning, `approvals approve` refuses it; after `toolgate
# ledger adopt` the call asks anew (its old approval carries no
# authority).  Then: a ledger built from scratch with sqlite3 is foreign; a
# key file others can read, and a ledger.key_env holding no key, fail
# closed; a key file inside the workspace is refused; each as root and as
# an unprivileged user with a state directory of their own.
. "$(dirname "$0")/lib.sh"

for p in sqlite3 jq git; do
	command -v "$p" > /dev/null || { echo "SKIP: $p is not installed"; exit 77; }
done

BASE=$(mktemp -d "${TMPDIR:-/tmp}/tg-forge.XXXXXX")
chmod 755 "$BASE"
USERS=("")
NOBODY=
if [ "$(id -u)" -eq 0 ]; then
	NOBODY=tgforge$$
	useradd -M -d /nonexistent -s /usr/sbin/nologin "$NOBODY" 2> /dev/null && USERS+=("$NOBODY") ||
		NOBODY=
fi
trap 'chattr -R -i "$WS" 2>/dev/null; rm -rf "$WS" "$TG_STATE" "$BASE"; [ -z "$NOBODY" ] || userdel "$NOBODY" 2>/dev/null' EXIT

AS= D=
tg() { # DIR NAME ARGS...: toolgate ARGS in DIR as $AS; out/err/exit to $D/NAME.*
	local dir=$1 name=$2; shift 2
	local run=(env XDG_STATE_HOME="$XDG_STATE_HOME" LSAN_OPTIONS="$RUN_LSAN" ${TG_ENV:-} "$RUN_TG" "$@")
	[ -z "$AS" ] || run=(runuser -u "$AS" -- "${run[@]}")
	(cd "$dir" && "${run[@]}" > "$D/$name.out" 2> "$D/$name.err" < /dev/null)
	echo $? > "$D/$name.exit"
	sanitizers "$D/$name.err" "$AS/$name"
}
as_user() { if [ -z "$AS" ]; then "$@"; else runuser -u "$AS" -- "$@"; fi; }

CALL='{"path":"evil.sh","content":"echo pwned"}'
for AS in "${USERS[@]}"; do
	who=${AS:-root}
	D=$BASE/$who
	mkdir -p "$D"
	[ -z "$AS" ] || chown "$AS" "$D"
	reach_as "$AS" "$BASE"
	A=$D/A B=$D/B
	as_user mkdir "$A" "$B"
	as_user sh -c "printf 'permissions:\n  ask: [\"write_file\"]\n' > '$A/toolgate.yaml'"
	as_user cp "$A/toolgate.yaml" "$B/toolgate.yaml"

	# ---- A: asked, approved, the approval's expiry raised by hand ----
	tg "$A" a1 call --json write_file "$CALL"
	eq "$(jq -r .status "$D/a1.out")" pending "$who: the call in A asks"
	id=$(jq -r .error.approval_id "$D/a1.out")
	tg "$A" approve approvals approve "$id"
	eq "$(cat "$D/approve.exit")" 0 "$who: the owner approves in A"
	as_user sqlite3 "$A/.toolgate/ledger.db" "UPDATE approvals SET expires_ms = 99999999999999"

	# ---- B: A's .toolgate/ arrived with a repository ----
	as_user cp -a "$A/.toolgate" "$B/"
	as_user sh -c "cd '$B' && git init -q && git add -f .toolgate toolgate.yaml &&
		git -c user.name=x -c user.email=x@x commit -qm ledger" ||
		fail "$who: the repository in B"
	tg "$B" b1 call --json write_file "$CALL"
	eq "$(cat "$D/b1.exit")" 1 "$who: the call in B: the gate cannot open"
	eq "$(cat "$D/b1.out")" "" "$who: no envelope from a gate that did not open"
	contains "$(cat "$D/b1.err")" "the ledger $B/.toolgate/ledger.db is a copy of another ledger (its identity is bound to $A/.toolgate/ledger.db): it may have arrived with a repository; look at it with \`toolgate log\`, then \`toolgate ledger adopt\` to take it on (its history stays, and carries no authority), or move it away" "$who: the foreign sentence"
	[ ! -e "$B/evil.sh" ] || fail "$who: evil.sh was written in B"

	# read-only commands read it, saying so; deciding in it is refused
	tg "$B" log log
	eq "$(cat "$D/log.exit")" 0 "$who: toolgate log reads a foreign ledger"
	contains "$(cat "$D/log.out")" "write_file" "$who: its history shows"
	contains "$(cat "$D/log.err")" "warning: the ledger $B/.toolgate/ledger.db is a copy" "$who: log warns"
	tg "$B" list approvals list
	eq "$(cat "$D/list.exit")" 0 "$who: approvals list reads it"
	contains "$(cat "$D/list.err")" "warning:" "$who: approvals list warns"
	tg "$B" decide approvals approve "$id"
	eq "$(cat "$D/decide.exit")" 1 "$who: approving in a foreign ledger is refused"
	contains "$(cat "$D/decide.err")" "is a copy of another ledger" "$who: ... with the sentence"
	tg "$B" stats stats
	eq "$(cat "$D/stats.exit")" 0 "$who: stats reads it"
	tg "$B" export ledger export
	eq "$(cat "$D/export.exit")" 0 "$who: ledger export reads it"

	# ---- adopted: the call asks anew ----
	tg "$B" adopt ledger adopt
	eq "$(cat "$D/adopt.exit")" 0 "$who: ledger adopt"
	contains "$(cat "$D/adopt.out")" "1 approval, 0 idempotency claims, 0 pins and 0 rate-limit buckets now carry no authority" "$who: adopt says what it left without authority"
	tg "$B" adopt2 ledger adopt
	eq "$(cat "$D/adopt2.exit")" 1 "$who: adopting one's own ledger is refused"
	contains "$(cat "$D/adopt2.err")" "is this machine's already" "$who: ... saying so"
	tg "$B" b2 call --json write_file "$CALL"
	eq "$(jq -r .status "$D/b2.out")" pending "$who: after adopt the call asks again"
	[ ! -e "$B/evil.sh" ] || fail "$who: evil.sh was written in B after adopt"

	# ---- a ledger built from scratch with sqlite3 ----
	C=$D/C
	as_user mkdir -p "$C/.toolgate"
	as_user chmod 700 "$C/.toolgate"
	as_user cp "$A/toolgate.yaml" "$C/"
	sqlite3 "$A/.toolgate/ledger.db" .schema > "$D/schema.sql"
	v=$(sqlite3 "$A/.toolgate/ledger.db" 'PRAGMA user_version')
	as_user sh -c "sqlite3 '$C/.toolgate/ledger.db' < '$D/schema.sql'"
	as_user sqlite3 "$C/.toolgate/ledger.db" "PRAGMA user_version = $v;
		ATTACH '$A/.toolgate/ledger.db' AS a; INSERT INTO approvals SELECT * FROM a.approvals"
	tg "$C" c1 call --json write_file "$CALL"
	eq "$(cat "$D/c1.exit")" 1 "$who: a ledger made with sqlite3 is refused"
	contains "$(cat "$D/c1.err")" "holds records but has no identity" "$who: ... as foreign"
	[ ! -e "$C/evil.sh" ] || fail "$who: evil.sh was written in C"

	# ---- keys: readable by others, malformed, inside the workspace ----
	K=$D/key
	as_user sh -c "umask 022; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > '$K'"
	as_user chmod 644 "$K"
	as_user sh -c "printf 'permissions:\n  ask: [\"write_file\"]\nledger:\n  key_file: $K\n' > '$A/keyed.yaml'"
	tg "$A" k1 call --json --config "$A/keyed.yaml" write_file "$CALL"
	eq "$(cat "$D/k1.exit")" 1 "$who: a key file others can read is refused"
	contains "$(cat "$D/k1.err")" "the ledger key $K can be read by others (mode 0644)" "$who: ... with its sentence"
	as_user sh -c "printf 'ledger:\n  key_env: TG_FORGE_KEY\n' > '$A/env.yaml'"
	TG_ENV="TG_FORGE_KEY=not-hex" tg "$A" k2 call --json --config "$A/env.yaml" read_file '{"path":"toolgate.yaml"}'
	eq "$(cat "$D/k2.exit")" 1 "$who: a key_env holding no key is refused"
	contains "$(cat "$D/k2.err")" "\$TG_FORGE_KEY (ledger.key_env) does not hold 64 hex digits" "$who: ... with its sentence"
	as_user sh -c "printf 'ledger:\n  key_file: .toolgate/key\n' > '$A/inside.yaml'"
	tg "$A" k3 call --json --config "$A/inside.yaml" read_file '{"path":"toolgate.yaml"}'
	eq "$(cat "$D/k3.exit")" 1 "$who: a key file inside the workspace is refused"
	contains "$(cat "$D/k3.err")" "is inside the workspace" "$who: ... saying so"
	# A's ledger under another key (the fleet's, by key_env) is foreign too
	TG_ENV="TG_FORGE_KEY=$(printf '%064d' 7)" tg "$A" k4 log --config "$A/env.yaml"
	contains "$(cat "$D/k4.err")" "was not made by this machine's key" "$who: another key: foreign"

	# a fleet's key in key_env does not reach what the gate starts: a hook
	# (the gate's own child, unsandboxed) sees neither the variable nor the
	# key in /proc/$PPID/environ; a sandboxed command neither
	F=$D/F
	as_user mkdir -p "$F/hooks"
	as_user sh -c "printf '#!/bin/sh\ncat > /dev/null\n{ env; tr \"\\\\000\" \"\\\\n\" < /proc/\$PPID/environ; } > leak.txt 2>&1\n' > '$F/hooks/leak.sh'; chmod 755 '$F/hooks/leak.sh'"
	as_user sh -c "printf 'ledger:\n  key_env: TG_FLEET_KEY\nhooks:\n  before_tool_call:\n    - {command: [./hooks/leak.sh]}\n' > '$F/toolgate.yaml'"
	fleet=$(printf '%064d' 5)
	# (set, not a prefix: a prefix to a function is in the environment of what it runs)
	TG_ENV="TG_FLEET_KEY=$fleet TG_CANARY=seen"
	tg "$F" f1 call --json read_file '{"path":"toolgate.yaml"}'
	eq "$(jq -r .status "$D/f1.out")" persisted "$who: a call with the fleet's key in key_env ($(head -c 300 "$D/f1.err"))"
	contains "$(cat "$F/leak.txt" 2>&1)" "TG_CANARY=seen" "$who: the hook read the gate's environment and /proc/\$PPID/environ"
	case "$(cat "$F/leak.txt" 2>&1)" in *"$fleet"*) fail "$who: the fleet's key reached a hook" ;; esac
	TG_ENV="TG_FLEET_KEY=$fleet"
	tg "$F" f2 call --json shell '{"command":"env; cat /proc/$PPID/environ /proc/1/environ"}'
	unset TG_ENV
	case "$(cat "$D/f2.out")" in *"$fleet"*) fail "$who: the fleet's key reached a command" ;; esac

	# the key is this user's, in their own state directory
	key=$XDG_STATE_HOME/toolgate/key
	[ -f "$key" ] || fail "$who: no key at $key"
	eq "$(stat -c %a "$key")" 600 "$who: the key file's mode"
	eq "$(stat -c %a "$XDG_STATE_HOME/toolgate")" 700 "$who: the key directory's mode"
done

# ---- a workspace that holds the key's directory (the workspace is $HOME) ----
for AS in "${USERS[@]}"; do
who=${AS:-root}
D=$BASE/home-$who
reach_as "$AS" "$BASE"
mkdir -p "$D"
[ -z "$AS" ] || chown "$AS" "$D"
export XDG_STATE_HOME=$D/.local/state
tg "$D" h0 call --json read_file '{"path":"nothing"}'
[ -f "$D/.local/state/toolgate/key" ] || fail "$who home: the key was not made in the workspace's state dir"
secret=$(as_user cat "$D/.local/state/toolgate/key")
tg "$D" h1 call --json --mode bypassPermissions read_file '{"path":".local/state/toolgate/key"}'
eq "$(jq -r .status "$D/h1.out")" denied "$who home: read_file of the key"
contains "$(jq -r .error.message "$D/h1.out")" "holds the ledger's key" "$who home: ... says why"
tg "$D" h2 call --json --mode bypassPermissions write_file '{"path":".local/state/toolgate/key","content":"x"}'
eq "$(jq -r .status "$D/h2.out")" denied "$who home: write_file of the key"
tg "$D" h3 call --json --mode bypassPermissions search_files '{"pattern":"[0-9a-f]{64}","path":".local"}'
case "$(cat "$D/h3.out")" in *"$secret"*) fail "$who home: search_files shows the key" ;; esac
# a command that does not name it: the sandbox hides the directory
tg "$D" h4 call --json --mode bypassPermissions shell '{"command":"d=.local; cat $d/state/t*/k* 2>&1; true"}'
eq "$(jq -r .status "$D/h4.out")" persisted "$who home: the command ran, in its sandbox"
case "$(cat "$D/h4.out")" in *"$secret"*) fail "$who home: the shell read the key" ;; esac
# a parent of the key's directory renamed from inside the sandbox would take
# the key out from under the path the checks know (and a new key made in
# its place would leave every ledger of this user foreign): the directories
# above it are pinned, as the gate's own files are
tg "$D" h5 call --json --mode bypassPermissions shell '{"command":"mv .local .moved 2>&1; mv .local/state .local/st2 2>&1; mv .local/state/toolgate .local/state/tg2 2>&1; true"}'
eq "$(jq -r .status "$D/h5.out")" persisted "$who home: the renaming command ran, in its sandbox"
eq "$(as_user cat "$D/.local/state/toolgate/key" 2>&1)" "$secret" "$who home: the key is where it was after a command tried to rename its parents"
[ ! -e "$D/.moved" ] && [ ! -e "$D/.local/st2" ] && [ ! -e "$D/.local/state/tg2" ] ||
	fail "$who home: a parent of the key's directory was renamed: $(ls -a "$D" "$D/.local" 2>&1 | tr '\n' ' ')"
done
finish
