# What placing a path costs the kernel (issue 24), counted with strace so
# that the hot path cannot grow again unseen: a read_file, list_dir or
# search_files call whose path holds no symlink opens it with openat2 once
# where policy places it (decide, O_PATH) and once where the tool uses it,
# and never reads a path back through /proc/self/fd (the kernel's walk,
# refused at any symlink, says where it led, and so whether the tool's
# open landed where decide looked).  A write_file opens its directory once
# to write, as placed.  A path through a symlink is
# still placed where the link leads: a link to a denied file is denied.
. "$(dirname "$0")/lib.sh"
STRACE=$(command -v strace) || { echo "FAIL: strace is needed (scripts/install-deps test)" >&2; exit 1; }

mkdir -p "$WS/dir/sub"
printf 'one\ntwo\n' > "$WS/dir/probe.txt"
printf 'SECRET=1\n' > "$WS/.env"
ln -s ../.env "$WS/dir/innocent"
cat > "$WS/toolgate.yaml" <<'YAML'
permissions:
  deny: ["read_file(**/.env)"]
  allow: ["write_file(./dir/**)"]
YAML

# traced NAME TOOL ARGS: the call under strace, envelope to NAME.json,
# the trace of openat2 and readlink to NAME.trace (LeakSanitizer cannot
# run under ptrace: off for these calls; the other cases check leaks)
traced() {
	local name=$1 tool=$2 args=$3
	(cd "$WS" && ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$STRACE" -f -qq -e trace=openat2,readlink,readlinkat -o "$WS/$name.trace" \
		"$TG" call --json "$tool" "$args" > "$WS/$name.json" 2> "$WS/$name.err" < /dev/null)
	sanitizers "$WS/$name.err" "$name"
}
# opens NAME PATH: the openat2 calls naming PATH exactly
opens() { grep -c "openat2([0-9]*, \"$2\"" "$WS/$1.trace"; }
# readbacks NAME: readlinks of /proc/self/fd/N
readbacks() { grep -c 'readlink[at]*(.*"/proc/self/fd/' "$WS/$1.trace"; }

traced read read_file '{"path": "dir/probe.txt"}'
eq "$(jqv "$WS/read.json" .status)" persisted "read_file: read"
eq "$(jqv "$WS/read.json" .output.content)" $'     1\tone\n     2\ttwo' "read_file: the lines"
eq "$(opens read dir/probe.txt)" 2 "read_file: one openat2 to judge, one to read"
eq "$(readbacks read)" 0 "read_file: no path read back through /proc/self/fd"

traced dotted read_file '{"path": "dir/sub/../probe.txt"}'
eq "$(jqv "$WS/dotted.json" .status)" persisted "read_file through ..: read"
eq "$(opens dotted dir/sub/../probe.txt)" 2 "read_file through ..: two openat2"
eq "$(readbacks dotted)" 0 "read_file through ..: no read-back"

traced list list_dir '{"path": "dir", "depth": 2}'
eq "$(jqv "$WS/list.json" .status)" persisted "list_dir: listed"
eq "$(jqv "$WS/list.json" '[.output.entries[].name] | join(",")')" "innocent,probe.txt,sub/" \
	"list_dir: the entries"
eq "$(opens list dir)" 2 "list_dir: one openat2 to judge, one to walk"
eq "$(readbacks list)" 0 "list_dir: no read-back"

traced search search_files '{"pattern": "two", "path": "dir"}'
eq "$(jqv "$WS/search.json" .status)" persisted "search_files: searched"
contains "$(jqv "$WS/search.json" .output)" probe.txt "search_files: the match"
eq "$(opens search dir)" 2 "search_files: one openat2 to judge, one to walk"
eq "$(readbacks search)" 0 "search_files: no read-back"

# a write lands where decide placed it (tgi_write_atomic_landed): its
# directory opened once for the write, placed by the walk itself
traced write write_file '{"path": "dir/new.txt", "content": "x\n"}'
eq "$(jqv "$WS/write.json" .status)" persisted "write_file: written"
eq "$(grep -c 'openat2([0-9]*, "dir", {flags=O_RDONLY|O_CLOEXEC|O_DIRECTORY' "$WS/write.trace")" 1 \
	"write_file: its directory opened once to write"
eq "$(readbacks write)" 0 "write_file: no read-back"

# a symlink on the way: placed where it leads (the kernel says where), and
# a rule on the file it leads to holds
traced link read_file '{"path": "dir/innocent"}'
eq "$(jqv "$WS/link.json" .status)" denied "read_file through a link to .env: denied"
contains "$(jqv "$WS/link.json" .error.message)" "do not retry" "read_file through a link: the sentence"
traced linkdir read_file '{"path": "dir/innocent/../dir/probe.txt"}'
eq "$(jqv "$WS/linkdir.json" .status)" denied "a link to a file taken as a directory: denied"

finish
