# Read rules hold inside the sandbox (issue 20), as root and as an
# unprivileged user made here (runuser): a workspace with .env, sub/.env,
# secrets/key and notes/private.txt; rules deny reading the first three
# (`read_file(./.env)`, `read_file(**/.env)`, `read_file(./secrets/**)`)
# and ask before the last.
#
#  - controls first: `cat README`, read_file README, `grep -r` finding the
#    README's line, python reading README;
#  - policy: the read-only class is judged on its path operands: `cat .env`,
#    `head -c 10 ./.env`, `cat sub/../.env`, the absolute path, `cat .e*`,
#    `cd secrets && cat key`, `ls secrets`, `find secrets`, `cat < .env`
#    are denied naming the rule (bypassPermissions too: deny rules hold);
#    the ask rule makes `cat notes/private.txt` pending;
#  - sandbox: what policy cannot see into runs (bypassPermissions) but does
#    not see the secrets: python's open(), `cp .env x && cat x`,
#    `tar c . | cat`, `grep -r TOKEN .`, sub/.env through `**/.env`, a
#    .env one call made, in the next call; the asked file unless a person
#    approved the call (then that call reads it);
#  - `policy check --explain` and `policy test` give the rule; doctor lists
#    what the sandbox hides for the rules.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "FAIL: $PY is needed" >&2; exit 1; }

ROOTED=
[ "$(id -u)" = 0 ] && ROOTED=1
if [ -n "$ROOTED" ]; then
	BASE=$(mktemp -d /var/lib/tg-readrules.XXXXXX)
else
	mkdir -p "$ROOT/build"
	BASE=$(mktemp -d "$ROOT/build/readrules.XXXXXX")
fi
chmod 755 "$BASE"
SECRET=tgsecret$$x$RANDOM$RANDOM
USER_MADE=
cleanup() {
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$BASE"
	rm -rf "$WS"
}
trap cleanup EXIT

setup() { # DIR OWNER
	local d=$1 owner=$2
	mkdir -p "$d/ws/secrets" "$d/ws/sub" "$d/ws/notes" "$d/home" "$d/out"
	printf 'TOKEN=DOTENV-%s\n' "$SECRET" > "$d/ws/.env"
	printf 'TOKEN=SUBENV-%s\n' "$SECRET" > "$d/ws/sub/.env"
	printf 'KEY-%s\n' "$SECRET" > "$d/ws/secrets/key"
	printf 'ASKED-%s\n' "$SECRET" > "$d/ws/notes/private.txt"
	printf 'hello readme\nTOKEN goes in .env\n' > "$d/ws/README"
	cat > "$d/ws/toolgate.yaml" <<-YAML
	mode: default
	approval: on-request
	permissions:
	  deny: ["read_file(./.env)", "read_file(**/.env)", "read_file(./secrets/**)"]
	  ask: ["read_file(./notes/private.txt)"]
	  tests:
	    - {call: {tool: shell, args: {command: "cat .env"}}, expect: deny}
	    - {call: {tool: shell, args: {command: "cat README"}}, expect: allow}
	    - {call: {tool: shell, args: {command: "cat notes/private.txt"}}, expect: ask}
	tools:
	  peek:
	    description: Runs a command.
	    command: [$PY, peek.py]
	    input_schema: {type: object, properties: {cmd: {type: string}}, required: [cmd]}
	mcp_servers:
	  srv: {command: [$PY, srv.py], timeout_s: 30}
	YAML
	# a command tool and a bridged server that read what they are told
	cat > "$d/ws/peek.py" <<-'PY'
	import json, subprocess, sys
	call = json.load(sys.stdin)
	r = subprocess.run(["/bin/sh", "-c", call["args"]["cmd"]], capture_output=True, text=True)
	print(json.dumps({"out": r.stdout + r.stderr}))
	PY
	cat > "$d/ws/srv.py" <<-'PY'
	import json, subprocess, sys
	TOOL = {"name": "run", "description": "Runs a command.",
	        "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
	def reply(i, result):
	    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\n"); sys.stdout.flush()
	for line in sys.stdin:
	    m = json.loads(line); meth, i = m.get("method"), m.get("id")
	    if i is None: continue
	    if meth == "initialize":
	        reply(i, {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
	                  "serverInfo": {"name": "srv", "version": "1"}})
	    elif meth == "tools/list": reply(i, {"tools": [TOOL]})
	    elif meth == "tools/call":
	        r = subprocess.run(["/bin/sh", "-c", m["params"]["arguments"]["cmd"]], capture_output=True,
	                           text=True, stdin=subprocess.DEVNULL)
	        reply(i, {"content": [{"type": "text", "text": r.stdout + r.stderr}]})
	    else: reply(i, {})
	PY
	chown -R "$owner" "$d"
	chmod 755 "$d"
}

AS= D= OUT=
run_tg() { # NAME ARGS...: toolgate ARGS in $D/ws, stdout to $OUT/NAME.json
	local name=$1; shift
	local run=(env HOME="$D/home" LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" "$@")
	[ -z "$AS" ] || run=(runuser -u "$AS" -- "${run[@]}")
	(cd "$D/ws" && "${run[@]}" > "$OUT/$name.json" 2> "$OUT/$name.err" < /dev/null)
	sanitizers "$OUT/$name.err" "$name"
}
sh_call() { # NAME COMMAND [GATE OPTIONS...]
	local name=$1 cmd=$2; shift 2
	run_tg "$name" call --json "$@" shell "$(jq -cn --arg c "$cmd" '{command: $c}')"
}
st() { jq -r .status "$OUT/$1.json" 2> /dev/null; }
rule() { jq -r '.error.rule // ([.stages[]? | select(.stage == "decide") | .rule] | first) // ""' "$OUT/$1.json" 2> /dev/null; }
out() { jq -r '(.output.stdout // "") + (.output.stderr // "") + (.output.content // "" | tostring)' "$OUT/$1.json" 2> /dev/null; }
why() { echo "status $(st "$1"), $(jq -c '.error // .output | tostring | .[0:300]' "$OUT/$1.json" 2> /dev/null) $(head -c 300 "$OUT/$1.err")"; }
no_secret() { # NAME WHAT
	CHECKS=$((CHECKS + 1))
	! grep -qF "$SECRET" "$OUT/$1.json" || fail "$2: the secret was read: $(out "$1" | grep -F "$SECRET" | head -n 3)"
}
ran() { # NAME WHAT
	CHECKS=$((CHECKS + 1))
	[ "$(st "$1")" = persisted ] || fail "$2: did not run: $(why "$1")"
}
denied_by() { # NAME RULE WHAT
	eq "$(st "$1")" denied "$3: status"
	eq "$(rule "$1")" "$2" "$3: rule"
	no_secret "$1" "$3"
}

half() { # AS DIR LABEL
	AS=$1 D=$2
	local l=$3
	OUT=$D/out
	reach_as "$AS" "$BASE"

	# ---- controls
	sh_call "$l-cat-readme" "cat README"
	ran "$l-cat-readme" "$l: cat README"
	contains "$(out "$l-cat-readme")" "hello readme" "$l: cat README prints it"
	run_tg "$l-rf-readme" call --json read_file '{"path":"README"}'
	ran "$l-rf-readme" "$l: read_file README"
	sh_call "$l-grep" "grep -r TOKEN ."
	ran "$l-grep" "$l: grep -r runs (read-only; the sandbox hides what the rules deny)"
	contains "$(out "$l-grep")" "README:TOKEN goes in .env" "$l: grep -r finds the README's line"
	no_secret "$l-grep" "$l: grep -r TOKEN ."
	sh_call "$l-py-readme" "$PY -c \"print(open('README').read())\"" --mode bypassPermissions
	ran "$l-py-readme" "$l: python reads README"
	contains "$(out "$l-py-readme")" "hello readme" "$l: python prints README"

	# ---- policy: the read-only class against read rules
	run_tg "$l-rf-env" call --json read_file '{"path":".env"}'
	denied_by "$l-rf-env" "deny: read_file(./.env)" "$l: read_file .env"
	sh_call "$l-cat" "cat .env"
	denied_by "$l-cat" "deny: read_file(./.env)" "$l: cat .env"
	sh_call "$l-head" "head -c 10 ./.env"
	denied_by "$l-head" "deny: read_file(./.env)" "$l: head -c 10 ./.env"
	sh_call "$l-dotdot" "cat sub/../.env"
	denied_by "$l-dotdot" "deny: read_file(./.env)" "$l: cat sub/../.env"
	sh_call "$l-abs" "cat $D/ws/.env"
	denied_by "$l-abs" "deny: read_file(./.env)" "$l: cat of the absolute path"
	sh_call "$l-subenv" "tail -n 1 sub/.env"
	denied_by "$l-subenv" "deny: read_file(**/.env)" "$l: tail sub/.env"
	sh_call "$l-key" "cd secrets && cat key"
	denied_by "$l-key" "deny: read_file(./secrets/**)" "$l: cd secrets && cat key"
	sh_call "$l-ls" "ls secrets"
	denied_by "$l-ls" "deny: read_file(./secrets/**)" "$l: ls secrets"
	sh_call "$l-find" "find secrets -type f"
	denied_by "$l-find" "deny: read_file(./secrets/**)" "$l: find secrets"
	sh_call "$l-redir" "cat < .env"
	denied_by "$l-redir" "deny: read_file(./.env)" "$l: cat < .env"
	sh_call "$l-grepf" "grep TOKEN README .env"
	denied_by "$l-grepf" "deny: read_file(./.env)" "$l: grep TOKEN README .env"
	sh_call "$l-glob" "cat .e*"
	eq "$(st "$l-glob")" denied "$l: cat .e* (the glob reaches .env)"
	no_secret "$l-glob" "$l: cat .e*"
	sh_call "$l-bypass" "cat .env" --mode bypassPermissions
	denied_by "$l-bypass" "deny: read_file(./.env)" "$l: cat .env in bypassPermissions"
	sh_call "$l-ask" "cat notes/private.txt"
	eq "$(st "$l-ask")" pending "$l: cat notes/private.txt waits for approval"
	eq "$(rule "$l-ask")" "ask: read_file(./notes/private.txt)" "$l: by the ask rule"
	no_secret "$l-ask" "$l: the asked file"

	# approved, the asked file is shown to that call (the approver saw it)
	run_tg "$l-approve" approvals approve "$(jq -r .error.approval_id "$OUT/$l-ask.json")"
	sh_call "$l-ask2" "cat notes/private.txt"
	ran "$l-ask2" "$l: the approved call runs"
	contains "$(out "$l-ask2")" "ASKED-$SECRET" "$l: and reads the asked file"
	# unapproved, a command that reads it without naming it does not
	sh_call "$l-askpy" "$PY -c \"print(open('notes/private.txt').read())\"" --mode bypassPermissions
	no_secret "$l-askpy" "$l: python reading the asked file unasked"

	# ---- the sandbox: what policy cannot see into does not see the secrets
	sh_call "$l-py" "$PY -c \"print(open('.env').read())\"" --mode bypassPermissions
	no_secret "$l-py" "$l: python open('.env')"
	sh_call "$l-pysub" "$PY -c \"print(open('sub/.env').read()); print(open('secrets/key').read())\"" --mode bypassPermissions
	no_secret "$l-pysub" "$l: python open('sub/.env'), open('secrets/key')"
	sh_call "$l-cp" "cp .env x && cat x" --mode bypassPermissions
	no_secret "$l-cp" "$l: cp .env x && cat x"
	# ---- a command tool and a bridged server: the same masks
	local probe='cat README; cat .env sub/.env secrets/key notes/private.txt; grep -r TOKEN .'
	run_tg "$l-peek" call --json --mode bypassPermissions peek "$(jq -cn --arg c "$probe" '{cmd: $c}')"
	ran "$l-peek" "$l: the command tool ran"
	contains "$(jq -r '.output | tostring' "$OUT/$l-peek.json")" "hello readme" "$l: the command tool reads README"
	no_secret "$l-peek" "$l: the command tool"
	run_tg "$l-srv" call --json --mode bypassPermissions srv__run "$(jq -cn --arg c "$probe" '{cmd: $c}')"
	ran "$l-srv" "$l: the bridged server's tool ran"
	contains "$(jq -r '.output | tostring' "$OUT/$l-srv.json")" "hello readme" "$l: the bridged server reads README"
	no_secret "$l-srv" "$l: the bridged server (ask rules hide too: no person approves its reads)"

	sh_call "$l-tar" "tar c . | cat" --mode bypassPermissions
	ran "$l-tar" "$l: tar c . | cat runs"
	contains "$(out "$l-tar")" "hello readme" "$l: tar shows the README"
	no_secret "$l-tar" "$l: tar c . | cat"
	# a file a glob rule names, made by one call, is hidden from the next
	sh_call "$l-mk" "mkdir -p made && echo MADE-$SECRET > made/.env" --mode bypassPermissions
	ran "$l-mk" "$l: a call makes made/.env"
	sh_call "$l-pymk" "$PY -c \"print(open('made/.env').read())\"" --mode bypassPermissions
	no_secret "$l-pymk" "$l: the next call does not see made/.env"
	sh_call "$l-pyls" "$PY -c \"import os; print(sorted(os.listdir('secrets')))\"" --mode bypassPermissions
	ran "$l-pyls" "$l: python lists secrets/"
	CHECKS=$((CHECKS + 1))
	[[ $(out "$l-pyls") != *key* ]] || fail "$l: secrets/ is listed: $(out "$l-pyls")"

	# ---- explain and test
	run_tg "$l-explain" policy check --explain -- cat .env
	eq "$(jq -r .decision "$OUT/$l-explain.json")" deny "$l: explain: decision"
	eq "$(jq -r .rule "$OUT/$l-explain.json")" "deny: read_file(./.env)" "$l: explain: rule"
	run_tg "$l-doctor" doctor --json
	eq "$(jq -r '.shell.read_rules.hidden | map(sub(".*/ws/"; "")) | sort | join(" ")' "$OUT/$l-doctor.json")" \
		".env made/.env notes/private.txt secrets sub/.env" "$l: doctor lists what read rules hide"
	CHECKS=$((CHECKS + 1))
	jq -e --arg p "$D/ws/.env" '.shell.hidden | index($p)' "$OUT/$l-doctor.json" > /dev/null ||
		fail "$l: doctor's view of the shell hides .env"
	run_tg "$l-ptest" policy test
	contains "$(cat "$OUT/$l-ptest.json")" "0 failed" "$l: policy test"
}

if [ -n "$ROOTED" ]; then
	setup "$BASE/root" root:root
	half "" "$BASE/root" root
	U=tgreadrules
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
