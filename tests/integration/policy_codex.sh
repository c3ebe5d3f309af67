# `toolgate policy check` side by side with the real `codex execpolicy
# check`: every case of tests/data/execpolicy/codex-parity.json (rules
# files beside it, flags, a command) through both, and their stdout must be
# the same bytes (compact and --pretty JSON alike) and their exit statuses
# equal.  The Codex CLI is the pinned one under build/clients
# (scripts/install-node-deps installs it); without it this case fails,
# unless the machine has no npm to install it with: then it says SKIPPED,
# loudly, as the other tests of npm packages do.
. "$(dirname "$0")/lib.sh"
DATA=$ROOT/tests/data/execpolicy
CODEX=${TOOLGATE_CODEX:-$ROOT/build/clients/node_modules/.bin/codex}
PIN=0.171.0
if [ -f "$ROOT/tests/clients/package.json" ]; then
	p=$(jq -r '.dependencies["@openai/codex"] // .devDependencies["@openai/codex"] // empty' \
		"$ROOT/tests/clients/package.json")
	[ -n "$p" ] && PIN=$p
fi
if [ ! -x "$CODEX" ] || ! "$CODEX" --version > "$WS/codex.version" 2>&1; then
	if ! command -v npm > /dev/null 2>&1 || ! command -v node > /dev/null 2>&1; then
		echo "SKIPPED: no Codex CLI, and no npm to install it (scripts/install-node-deps):" \
			"policy check was not compared with codex execpolicy check" >&2
		exit 0
	fi
	echo "FAIL: no working Codex CLI at $CODEX: it is the reference this case compares with;" \
		"scripts/install-node-deps installs it (make check runs it)" >&2
	exit 1
fi
version=$(awk '{print $NF}' "$WS/codex.version")
echo "codex $version (pinned: $PIN)"
case $PIN in
[0-9]*) eq "$version" "$PIN" "the Codex CLI is the pinned version" ;;
esac

# both read ~ and relative paths the same way: one home, one current directory
mkdir -p "$WS/home" "$WS/cwd"
export HOME=$WS/home
cd "$WS/cwd"

n=$(jq length "$DATA/codex-parity.json")
[ "$n" -ge 20 ] || fail "the suite has $n commands, want at least 20"
resolved=0
for ((i = 0; i < n; i++)); do
	c=$(jq -c ".[$i]" "$DATA/codex-parity.json")
	name=$(jq -r .name <<< "$c")
	opt=--rules
	[ "$(jq -r '.short // false' <<< "$c")" = true ] && opt=-r
	words=() flags=() rules=()
	while IFS= read -r -d '' w; do words+=("$w"); done < <(jq -j '.argv[] | ., "\u0000"' <<< "$c")
	while IFS= read -r -d '' w; do flags+=("$w"); done < <(jq -j '(.flags // [])[] | ., "\u0000"' <<< "$c")
	while IFS= read -r -d '' w; do rules+=("$opt" "$DATA/$w"); done < <(jq -j '.rules[] | ., "\u0000"' <<< "$c")

	"$CODEX" execpolicy check "${flags[@]}" "${rules[@]}" -- "${words[@]}" > "$WS/codex.out" 2> "$WS/codex.err"
	ce=$?
	"$TG" policy check "${flags[@]}" "${rules[@]}" -- "${words[@]}" > "$WS/tg.out" 2> "$WS/tg.err"
	te=$?
	sanitizers "$WS/tg.err" "$name"
	CHECKS=$((CHECKS + 1))
	if ! cmp -s "$WS/codex.out" "$WS/tg.out"; then
		fail "$name: the outputs differ (< codex, > toolgate):"
		diff "$WS/codex.out" "$WS/tg.out" | head -n 20 >&2
	fi
	eq "$te" "$ce" "$name: exit status (codex: $(head -c 300 "$WS/codex.err" | tr '\n' ' '))"
	grep -q resolvedProgram "$WS/tg.out" && resolved=$((resolved + 1))
done
# the suite reaches the fallback, and the issue's command is in it
[ "$resolved" -ge 5 ] || fail "only $resolved cases matched through a basename"
jq -e 'any(.[]; .argv == ["/usr/bin/git", "status"] and (.flags // []) == [])' \
	"$DATA/codex-parity.json" > /dev/null || fail "the suite lacks /usr/bin/git status"
eq "$("$TG" policy check --rules "$DATA/parity.rules" -- /usr/bin/git status)" '{"matchedRules":[]}' \
	"/usr/bin/git status without --resolve-host-executables"
finish
