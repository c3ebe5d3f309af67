# apply-patch: runs every scenario in tests/data/apply_patch/NNN_name/ through
# `toolgate apply-patch` and compares the resulting tree byte for byte with the
# scenario's expected/ (regular files and symlinks, both ways), plus the exit code,
# stdout, stderr lines, confinement (a sibling outside/ must stay untouched) and,
# for failing scenarios, that nothing at all changed.  Then a few CLI checks that
# do not fit the scenario format (argument count, `-`, --preserve-crlf).
#
# Scenario files (see the apply_patch contract): patch.txt (fed on stdin, or passed
# as the single argument when a file `argv` exists), input/ (absent = empty),
# expected/ (absent = empty), exit (absent = 0), stdout (exact), stderr (every
# non-empty line must occur in stderr).
#
# make_git_dir: git refuses to store a directory named .git inside the repository,
# so a scenario that needs one holds a file `make_git_dir`; the runner then creates
# .git/config (GIT_CONFIG below) in the workspace copy AND in the expected tree, so
# the comparison also proves that .git/config was left as it was.
source "$(dirname "$0")/lib.sh"

DATA=$ROOT/tests/data/apply_patch
GIT_CONFIG=$'[core]\n\trepositoryformatversion = 0\n\tbare = false\n'
SECRET=$'secret\n'
RUN_TIMEOUT=${APPLY_PATCH_TIMEOUT:-30}

# entries DIR: every regular file and symlink below DIR, with its type, sorted
entries() {
	(cd "$1" && find . -mindepth 1 \( -type f -o -type l \) -printf '%y %P\n' | LC_ALL=C sort)
}
# dirs DIR: every directory below DIR, sorted
dirs() {
	(cd "$1" && find . -mindepth 1 -type d -printf '%P\n' | LC_ALL=C sort)
}

# same_tree ACTUAL EXPECTED WHAT: same files and symlinks, same bytes, same targets
same_tree() {
	local actual=$1 expected=$2 what=$3 a e kind path
	CHECKS=$((CHECKS + 1))
	a=$(entries "$actual")
	e=$(entries "$expected")
	if [ "$a" != "$e" ]; then
		fail "$what: file set differs (< expected, > actual):"
		diff <(printf '%s\n' "$e") <(printf '%s\n' "$a") | grep '^[<>]' | head -n 20 >&2
		return
	fi
	while read -r kind path; do
		[ -n "$path" ] || continue
		if [ "$kind" = l ]; then
			[ "$(readlink "$actual/$path")" = "$(readlink "$expected/$path")" ] ||
				fail "$what: symlink $path points to '$(readlink "$actual/$path")', expected '$(readlink "$expected/$path")'"
		elif ! cmp -s "$actual/$path" "$expected/$path"; then
			fail "$what: $path differs; expected / actual bytes:"
			od -c "$expected/$path" | head -n 8 >&2
			echo "  ---" >&2
			od -c "$actual/$path" | head -n 8 >&2
		fi
	done <<< "$e"
}

# run_scenario DIR
run_scenario() {
	local sc=$1 name case work exp out err want_exit got_exit patch line
	name=$(basename "$sc")
	case=$WS/cases/$name
	work=$case/work
	exp=$WS/expected/$name
	out=$WS/out/$name.stdout
	err=$WS/out/$name.stderr
	mkdir -p "$work" "$case/outside" "$exp" "$WS/out"
	printf '%s' "$SECRET" > "$case/outside/secret.txt"
	[ -d "$sc/input" ] && cp -a "$sc/input/." "$work/"
	[ -d "$sc/expected" ] && cp -a "$sc/expected/." "$exp/"
	if [ -f "$sc/make_git_dir" ]; then
		mkdir -p "$work/.git" "$exp/.git"
		printf '%s' "$GIT_CONFIG" > "$work/.git/config"
		printf '%s' "$GIT_CONFIG" > "$exp/.git/config"
	fi
	local had_toolgate=no dirs_before
	[ -e "$work/.toolgate" ] && had_toolgate=yes
	dirs_before=$(dirs "$work")
	want_exit=0
	[ -f "$sc/exit" ] && want_exit=$(head -n 1 "$sc/exit")

	if [ -f "$sc/argv" ]; then
		# keep the text exactly as stored (command substitution would drop final newlines)
		patch=$(cat "$sc/patch.txt"; printf x)
		patch=${patch%x}
		(cd "$work" && timeout "$RUN_TIMEOUT" "$TG" apply-patch "$patch" > "$out" 2> "$err" < /dev/null)
	else
		(cd "$work" && timeout "$RUN_TIMEOUT" "$TG" apply-patch > "$out" 2> "$err" < "$sc/patch.txt")
	fi
	got_exit=$?
	sanitizers "$err" "$name"

	eq "$got_exit" "$want_exit" "$name: exit code (stderr: $(head -c 300 "$err"))"
	if [ -f "$sc/stdout" ]; then
		CHECKS=$((CHECKS + 1))
		cmp -s "$out" "$sc/stdout" ||
			fail "$name: stdout: expected '$(cat "$sc/stdout")', got '$(cat "$out")'"
	elif [ "$want_exit" != 0 ]; then
		eq "$(cat "$out")" "" "$name: stdout on failure"
	fi
	if [ -f "$sc/stderr" ]; then
		while IFS= read -r line; do
			[ -n "$line" ] || continue
			CHECKS=$((CHECKS + 1))
			grep -qF -- "$line" "$err" ||
				fail "$name: stderr lacks '$line'; stderr was: $(head -c 400 "$err")"
		done < "$sc/stderr"
	fi

	same_tree "$work" "$exp" "$name: tree"
	if [ "$want_exit" != 0 ]; then
		eq "$(dirs "$work")" "$dirs_before" "$name: directories after a failure"
	fi
	if [ "$had_toolgate" = no ]; then
		CHECKS=$((CHECKS + 1))
		[ ! -e "$work/.toolgate" ] || fail "$name: a .toolgate directory was left behind"
	fi
	# confinement: nothing next to the workspace changed or appeared
	eq "$(ls -A "$case" | tr '\n' ' ')" "outside work " "$name: entries next to the workspace"
	eq "$(entries "$case/outside")" "f secret.txt" "$name: outside/ file set"
	eq "$(cat "$case/outside/secret.txt"; printf x)" "${SECRET}x" "$name: outside/secret.txt"
	eq "$(dirs "$case/outside")" "" "$name: outside/ directories"
}

count=0
for sc in "$DATA"/[0-9][0-9][0-9]_*/; do
	run_scenario "${sc%/}"
	count=$((count + 1))
done
CHECKS=$((CHECKS + 1))
[ "$count" -ge 55 ] || fail "only $count scenarios found in $DATA"
echo "$count scenarios"

# CLI surface the scenario format cannot express
cli=$WS/cli
mkdir -p "$cli"
ADD_PATCH=$'*** Begin Patch\n*** Add File: from_stdin.txt\n+hi\n*** End Patch\n'
(cd "$cli" && printf '%s' "$ADD_PATCH" | timeout "$RUN_TIMEOUT" "$TG" apply-patch - > "$WS/cli.out" 2> "$WS/cli.err")
eq "$?" 0 "cli: '-' reads the patch from stdin"
sanitizers "$WS/cli.err" "cli: -"
eq "$(cat "$WS/cli.out")" $'Success. Updated the following files:\nA from_stdin.txt' "cli: '-' stdout"
eq "$(cat "$cli/from_stdin.txt" 2> /dev/null)" hi "cli: '-' wrote the file"

(cd "$cli" && timeout "$RUN_TIMEOUT" "$TG" apply-patch --preserve-crlf \
	$'*** Begin Patch\n*** Add File: crlf_flag.txt\n+x\n*** End Patch' > "$WS/cli.out" 2> "$WS/cli.err" < /dev/null)
eq "$?" 0 "cli: --preserve-crlf is accepted"
sanitizers "$WS/cli.err" "cli: --preserve-crlf"
eq "$(cat "$cli/crlf_flag.txt" 2> /dev/null)" x "cli: --preserve-crlf applied the patch"

(cd "$cli" && timeout "$RUN_TIMEOUT" "$TG" apply-patch "$ADD_PATCH" "$ADD_PATCH" > "$WS/cli.out" 2> "$WS/cli.err" < /dev/null)
eq "$?" 2 "cli: two PATCH arguments"
sanitizers "$WS/cli.err" "cli: two arguments"
contains "$(cat "$WS/cli.err")" "Error: apply_patch accepts exactly one PATCH argument." "cli: two arguments message"
eq "$(cat "$WS/cli.out")" "" "cli: two arguments stdout"
eq "$(ls "$cli" | tr '\n' ' ')" "crlf_flag.txt from_stdin.txt " "cli: two arguments wrote nothing"

finish
