# The project's policy from a subdirectory (issue 21): with no --config
# and no $TOOLGATE_CONFIG, the configuration is the first toolgate.yaml
# (.yml, .json) in the current directory or one above it, and its
# directory is the workspace (its ledger included).
#
#  - `cd sub/deep && toolgate call write_file ...` in a `mode: plan`
#    project is denied by plan mode and recorded in the project's ledger;
#    no sub/.toolgate is made; the nearest configuration wins;
#  - `workspace: .` is the file's directory whether the file was found or
#    named (--config, $TOOLGATE_CONFIG); without `workspace`, a found file's
#    directory is the workspace and a named file's is the current one;
#    --workspace still names the workspace, and the search starts there;
#  - only what you or root own is trusted: a directory above owned by
#    another user ends the search (its toolgate.yaml is not picked up), as
#    does a file another user owns in a directory above, or a current
#    directory another user owns; such a file in the current directory is an
#    error.  Run as an unprivileged user made here and as
#    root (the other user is `nobody`).
. "$(dirname "$0")/lib.sh"

OTHER=nobody
id "$OTHER" > /dev/null 2>&1 || { echo "FAIL: the user $OTHER is needed" >&2; exit 1; }

# decision NAME [DIR] ARGS...: the dry-run decision of write_file in DIR
# (run as $AS): allow/ask from the plan, "deny" when denied, else the
# status and the first line of stderr
AS=
decision() {
	local dir=$1; shift
	local run=(env LSAN_OPTIONS="$RUN_LSAN" "$RUN_TG" call --json --dry-run "$@" write_file
	           '{"path":"probe.txt","content":"x"}')
	[ -z "$AS" ] || run=(runuser -u "$AS" -- "${run[@]}")
	local out err
	err=$(mktemp "$WS/err.XXXXXX")
	out=$(cd "$dir" && "${run[@]}" 2> "$err" < /dev/null)
	sanitizers "$err" "decision in $dir"
	if [ -n "$out" ]; then
		jq -r 'if .status == "dry_run" then .output.decision elif .status == "denied" then
		       "deny" else .status end' <<< "$out"
	else
		echo "error: $(head -n 1 "$err")"
	fi
	rm -f "$err"
}
# doc DIR FILTER ARGS...: doctor --json in DIR, one value of its config
doc() {
	local dir=$1 filter=$2; shift 2
	(cd "$dir" && "$TG" doctor --json "$@" 2> /dev/null < /dev/null | jq -r ".config.$filter")
}

RUN_TG=$TG RUN_LSAN=${LSAN_OPTIONS:-}
P=$WS/proj
mkdir -p "$P/sub/deep" "$P/nested" "$WS/elsewhere"
printf 'mode: plan\n' > "$P/toolgate.yaml"
printf 'mode: acceptEdits\n' > "$P/nested/toolgate.yaml"
echo marker > "$P/marker.txt"
P=$(cd "$P" && pwd -P)

# ---- found from below: plan mode, the project's ledger
(cd "$P/sub/deep" && "$TG" call --json write_file '{"path":"probe.txt","content":"x"}' \
	> "$WS/deep.json" 2> "$WS/deep.err" < /dev/null)
eq "$?" 3 "cd sub/deep && toolgate call write_file: exit 3 (denied)"
eq "$(jq -r .error.rule "$WS/deep.json")" "mode plan" "from sub/deep: plan mode decided"
eq "$(ls -A "$P/sub" | tr '\n' ' ')" "deep " "from sub/deep: no sub/.toolgate"
eq "$(ls -A "$P/sub/deep")" "" "from sub/deep: nothing made in sub/deep"
eq "$(sqlite3 "$P/.toolgate/ledger.db" "select status from ops where tool = 'write_file'")" \
	denied "from sub/deep: the call is in the project's ledger"
(cd "$P/sub/deep" && "$TG" call --json read_file '{"path":"marker.txt"}' > "$WS/rd.json" 2> /dev/null)
eq "$(jq -r .output.content "$WS/rd.json" | tr -d ' \t')" "1marker" \
	"from sub/deep: paths are relative to the workspace (the project)"
eq "$(doc "$P/sub/deep" file)" "$P/toolgate.yaml" "doctor from sub/deep: the project's file"
eq "$(doc "$P/sub/deep" workspace)" "$P" "doctor from sub/deep: the project is the workspace"
eq "$(decision "$P/nested")" allow "nested: the nearest configuration (acceptEdits) wins"
eq "$(decision "$WS/elsewhere")" ask "outside the project: the built-in defaults"

# ---- what `workspace` means, found or named
printf 'workspace: .\nmode: plan\n' > "$WS/dot.yaml"
mkdir -p "$WS/wsdot/sub"
printf 'workspace: .\n' > "$WS/wsdot/toolgate.yaml"
eq "$(doc "$WS/wsdot/sub" workspace)" "$(cd "$WS/wsdot" && pwd -P)" "workspace: . (found): the file's directory"
eq "$(doc "$WS/elsewhere" workspace --config "$WS/wsdot/toolgate.yaml")" "$(cd "$WS/wsdot" && pwd -P)" \
	"workspace: . (--config): the file's directory"
eq "$(cd "$WS/elsewhere" && TOOLGATE_CONFIG="$WS/wsdot/toolgate.yaml" "$TG" doctor --json 2> /dev/null |
	jq -r .config.workspace)" "$(cd "$WS/wsdot" && pwd -P)" "workspace: . (\$TOOLGATE_CONFIG): the file's directory"
eq "$(doc "$WS/elsewhere" workspace --config "$P/toolgate.yaml")" "$(cd "$WS/elsewhere" && pwd -P)" \
	"no workspace key (--config): the current directory"
eq "$(doc "$WS/elsewhere" workspace --workspace "$P/sub")" "$P/sub" "--workspace names the workspace"
eq "$(doc "$WS/elsewhere" file --workspace "$P/sub")" "$P/toolgate.yaml" \
	"--workspace: the search starts there (the project's file)"
eq "$(decision "$WS/elsewhere" --workspace "$P/sub")" deny "--workspace inside the project: plan mode"
eq "$(decision "$P/sub" --mode default)" ask "--mode still overrides the found file"

# ---- ownership: another user's directory or file is not trusted
if [ "$(id -u)" != 0 ]; then
	# files another user owns can only be made by root: here, a parent of yours only
	echo "not root: the ownership cases with your own files only, as $(id -un)"
	mkdir -p "$WS/own/child"
	printf 'mode: plan\n' > "$WS/own/toolgate.yaml"
	eq "$(decision "$WS/own/child")" deny "$(id -un): a parent you own: picked up (plan)"
	finish; exit
fi
BASE=$(mktemp -d /var/lib/tg-discovery.XXXXXX)
chmod 755 "$BASE"
U=tgdiscovery
USER_MADE=
cleanup() {
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	rm -rf "$BASE" "$WS"
}
trap cleanup EXIT
if ! id "$U" > /dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit 1; }
	USER_MADE=$U
fi

# layout DIR DIROWNER FILEOWNER CHILDOWNER: DIR/toolgate.yaml (plan) and DIR/child
layout() {
	mkdir -p "$1/child"
	printf 'mode: plan\n' > "$1/toolgate.yaml"
	chown "$2" "$1"
	chown "$3" "$1/toolgate.yaml"
	chown "$4" "$1/child"
	chmod 755 "$1" "$1/child"
	chmod 644 "$1/toolgate.yaml"
}

for who in user root; do
	if [ "$who" = user ]; then AS=$U me=$U; else AS= me=root; fi
	reach_as "$AS" "$BASE"
	d=$BASE/$who
	mkdir -p "$d"
	chmod 755 "$d"
	layout "$d/mine" "$me" "$me" "$me"
	eq "$(decision "$d/mine/child")" deny "$who: a parent you own: picked up (plan)"
	layout "$d/rootparent" root root "$me"
	chmod 1777 "$d/rootparent"    # the ledger is made there
	eq "$(decision "$d/rootparent/child")" deny "$who: a parent root owns: picked up (plan)"
	layout "$d/otherdir" "$OTHER" "$OTHER" "$me"
	eq "$(decision "$d/otherdir/child")" ask "$who: a parent another user owns: not picked up"
	layout "$d/otherfile" root "$OTHER" "$me"
	chmod 1777 "$d/otherfile"
	eq "$(decision "$d/otherfile/child")" ask \
		"$who: another user's file in a shared parent (like /tmp's): not picked up"
	layout "$d/above" "$me" "$me" "$me"
	mkdir -p "$d/above/other/child"
	chown "$OTHER" "$d/above/other"
	chown "$me" "$d/above/other/child"
	eq "$(decision "$d/above/other/child")" ask \
		"$who: the search does not cross a directory another user owns"
	mkdir -p "$d/upplan/otherstart"
	printf 'mode: plan\n' > "$d/upplan/toolgate.yaml"
	chown "$me" "$d/upplan" "$d/upplan/toolgate.yaml"
	chown "$OTHER" "$d/upplan/otherstart"
	chmod 755 "$d/upplan"
	chmod 1777 "$d/upplan/otherstart"
	eq "$(decision "$d/upplan/otherstart")" ask \
		"$who: from a directory another user owns, the search does not go up"
	out=$(decision "$d/otherfile")
	contains "$out" "owned by uid $(id -u "$OTHER"), not by you" \
		"$who: another user's file in the current directory: an error naming the owner"
	contains "$out" "--config" "$who: the error says how to use it anyway"
	mkdir -p "$d/otherhere"
	printf 'mode: plan\n' > "$d/otherhere/toolgate.yaml"
	chown "$me" "$d/otherhere/toolgate.yaml"
	chown "$OTHER" "$d/otherhere"
	chmod 755 "$d/otherhere"
	contains "$(decision "$d/otherhere")" "is in a directory owned by uid" \
		"$who: a current directory another user owns: its file is an error"
	eq "$(decision "$d/otherdir/child" --config "$d/otherdir/toolgate.yaml")" deny \
		"$who: --config names another user's file: loaded (it was named)"
done
finish
