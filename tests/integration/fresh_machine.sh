# The README's first commands on a fresh machine, from a clean clone.
#
# The machine is simulated with shims first on PATH: pkg-config answers as it
# does where no -dev package is installed (nothing found, no flags) until
# apt-get has been asked to install something, and then it is the real one;
# apt-get only records what it was asked; npm and node record that they were
# called.  Then, each time in a clean copy of the tree made a git repository:
#   make demo      builds for real and prints the demo; installs only the
#                  build's packages, never calls npm; git status stays clean;
#   make, make check, make bench, make install
#                  each installs its packages before its first compile, whose
#                  command line carries every flag pkg-config gives (a probe
#                  compiler records it and stops the build there).
. "$(dirname "$0")/lib.sh"
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEFILES
SHIM=$WS/shim
STATE=$WS/state
mkdir -p "$SHIM" "$STATE"
real_pkgconfig=$(command -v pkg-config) || { fail "pkg-config is not installed"; finish; exit; }

cat > "$SHIM/pkg-config" <<EOF
#!/bin/sh
[ -e "$STATE/installed" ] && exec "$real_pkgconfig" "\$@"
for a; do
	case \$a in
	--version) exec "$real_pkgconfig" --version ;;
	-*) ;;
	*) echo "Package \$a was not found in the pkg-config search path." >&2 ;;
	esac
done
exit 1
EOF
cat > "$SHIM/apt-get" <<EOF
#!/bin/sh
echo "\$*" >> "$STATE/apt.log"
case " \$* " in *" install "*) touch "$STATE/installed" ;; esac
exit 0
EOF
# npm and node: recorded; npm ci makes node_modules, as a real one would
for p in npm node npx; do
	cat > "$SHIM/$p" <<EOF
#!/bin/sh
echo "$p \$*" >> "$STATE/node.log"
[ "\$1" = ci ] && mkdir -p node_modules
[ "\$1" = --version ] && echo v22.19.0
exit 0
EOF
done
# the probe compiler: records the first compile's command line and stops the build
cat > "$SHIM/cc-probe" <<EOF
#!/bin/sh
[ -e "$STATE/cc.log" ] || echo "\$*" > "$STATE/cc.log"
exit 1
EOF
chmod +x "$SHIM"/*
fresh_path=$SHIM:$PATH

# a clean clone of the tree as it is (tracked files and new ones not ignored)
clone() { # DIR
	mkdir -p "$1"
	(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -C "$1" -xf -
	(cd "$1" && git init -q && git add -A &&
		git -c user.name=t -c user.email=t@example.invalid commit -qm clone) ||
		fail "making the clone in $1"
	rm -f "$STATE"/*.log "$STATE/installed"
}

# ---- make demo, the first command
clone "$WS/demo"
(cd "$WS/demo" && PATH=$fresh_path make demo) > "$WS/demo.out" 2>&1
rc=$?
eq "$rc" 0 "make demo as the first command exits 0"
[ "$rc" = 0 ] || tail -n 30 "$WS/demo.out" >&2
out=$(cat "$WS/demo.out")
contains "$out" "toolgate agent --provider demo" "the demo ran"
contains "$out" "done: 11 turns" "the demo's agent finished"
contains "$out" "deployed v2 to staging" "the demo's deploy ran"
apt=$(cat "$STATE/apt.log" 2> /dev/null)
contains "$apt" "install" "make demo installed the missing packages"
contains "$apt" "libpq-dev" "the PostgreSQL client headers the build needs"
case "$apt" in *cmocka* | *clang* | *postgresql-* | *jq*)
	fail "make demo installed test packages: $apt" ;;
esac
[ ! -s "$STATE/node.log" ] || fail "make demo called npm or node: $(cat "$STATE/node.log")"
eq "$(cd "$WS/demo" && git status --porcelain)" "" "git status after make demo"
[ "$rc" = 0 ] || { finish; exit; }

# ---- the other entry points, each the first command in a clean clone
want=$("$real_pkgconfig" --cflags $(sed -n 's/^PKGS *:= *//p; s/^PKGS_DL *:= *//p' "$ROOT/Makefile"))
[ -n "$want" ] || fail "the real pkg-config gives no flags"
for target in "" check bench install; do
	name=${target:-all}
	rm -rf "$WS/t"
	clone "$WS/t"
	(cd "$WS/t" && PATH=$fresh_path make $target CC="$SHIM/cc-probe" PREFIX="$WS/prefix") \
		> "$WS/$name.out" 2>&1
	[ -e "$STATE/installed" ] || fail "make $target: nothing installed before the build"
	line=$(cat "$STATE/cc.log" 2> /dev/null)
	[ -n "$line" ] || { fail "make $target: no compile: $(tail -n 5 "$WS/$name.out")"; continue; }
	for f in $want; do
		CHECKS=$((CHECKS + 1))
		case " $line " in *" $f "*) ;; *) fail "make $target: the first compile lacks $f: $line" ;; esac
	done
	case $target in
	check | bench)
		contains "$(cat "$STATE/node.log" 2> /dev/null)" "npm ci" "make $target installs its node packages" ;;
	*)
		[ ! -s "$STATE/node.log" ] || fail "make $target called npm or node: $(cat "$STATE/node.log")" ;;
	esac
	case $target in
	check) contains "$(cat "$STATE/apt.log")" "libcmocka-dev" "make check installs the test packages" ;;
	*) case "$(cat "$STATE/apt.log")" in *cmocka*) fail "make $target installed cmocka" ;; esac ;;
	esac
done
finish
