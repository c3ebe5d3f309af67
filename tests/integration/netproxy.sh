# Network by host, for real, without the gate's sandbox: a command under
# bubblewrap in its own network namespace (--unshare-net, its own user and
# pid namespaces) reaches the outside only through the proxy the driver
# runs (build/*/tests/test_netproxy --drive: the proxy, the forwarder
# attached to bwrap's child-pid from --info-fd, the command held by
# --block-fd until the forwarder listens, the proxy variables in its
# environment: what the sandbox will do).
#
# The proxy side resolves test names (api.github.test, evil.test,
# a.pkg.test, pkg.test -> 127.0.0.1; meta.pkg.test -> 169.254.169.254;
# b.pkg.test -> this machine's own address) from an /etc/hosts bind-mounted
# in a mount namespace of its own; servers answer: plain HTTP on 127.0.0.1
# P1 and P3 and on the machine's address P4, HTTPS (a test certificate for
# api.github.test) on 127.0.0.1 P2.  The list: api.github.test:P1,
# api.github.test:P2, *.pkg.test:P1, *.pkg.test:P4.  Inside, curl through
# the proxy: the allowed host's body arrives over plain HTTP and over a
# CONNECT tunnel with TLS; evil.test (which resolves to the same loopback)
# gets 403 for both and the event names it; api.github.test:P3 gets 403
# (port); b.pkg.test passes through the wildcard, its apex pkg.test does
# not, and neither do a.pkg.test and meta.pkg.test, which the wildcard
# would take to loopback and the metadata address (403, address); a TLS
# hello sent to the proxy gets 400; the origin server saw origin-form.
# Without the proxy nothing leaves: TCP to 127.0.0.1:P1 is refused (the
# sandbox's own loopback), TCP to the host's address and UDP to the
# resolver are unreachable.
#
# Run as root with the sandbox's own user namespace and without one (as
# bubblewrap runs for root today), and as an unprivileged user made here
# (setpriv inside the root-made mount namespace); a non-root caller runs
# the unprivileged half as itself in a user namespace of its own.
. "$(dirname "$0")/lib.sh"
DRIVER=$(dirname "$TG")/tests/test_netproxy
[ -x "$DRIVER" ] || { echo "FAIL: $DRIVER is missing (make $DRIVER)" >&2; exit 1; }
for p in bwrap curl openssl unshare setpriv; do
	command -v $p > /dev/null || { echo "FAIL: $p is needed" >&2; exit 1; }
done
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

D=$(mktemp -d "${TMPDIR:-/tmp}/tg-netproxy.XXXXXX")
USER_MADE=
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
	wait 2> /dev/null
	[ -z "$USER_MADE" ] || userdel "$USER_MADE" 2> /dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$D"
	rm -rf "$WS"
}
trap cleanup EXIT
chmod 755 "$D"
mkdir -p "$D/www" "$D/out"
echo "hello from the origin" > "$D/www/hello.txt"
chmod -R a+rX "$D"
chmod 777 "$D/out"
printf '127.0.0.1 localhost\n::1 localhost\n127.0.0.1 api.github.test evil.test a.pkg.test pkg.test\n169.254.169.254 meta.pkg.test\n' > "$D/hosts"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=api.github.test \
	-addext subjectAltName=DNS:api.github.test,DNS:evil.test \
	-keyout "$D/key.pem" -out "$D/cert.pem" 2> /dev/null || { fail "openssl req"; finish; exit; }
chmod 644 "$D/key.pem" "$D/cert.pem"

HOSTIP=$(hostname -I 2> /dev/null | awk '{print $1}')
case $HOSTIP in *.*.*.*) ;; *) HOSTIP= ;; esac
[ -z "$HOSTIP" ] || echo "$HOSTIP b.pkg.test" >> "$D/hosts"
read -r P1 P2 P3 P4 < <("$PY" -c '
import socket, sys
s = [socket.socket() for _ in range(4)]
for x in s[:3]: x.bind(("127.0.0.1", 0))
s[3].bind((sys.argv[1] or "127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' "$HOSTIP")
"$PY" -m http.server --bind 127.0.0.1 --directory "$D/www" "$P1" > /dev/null 2> "$D/p1.log" &
PIDS+=($!)
"$PY" -m http.server --bind 127.0.0.1 --directory "$D/www" "$P3" > /dev/null 2> "$D/p3.log" &
PIDS+=($!)
if [ -n "$HOSTIP" ]; then
	"$PY" -m http.server --bind "$HOSTIP" --directory "$D/www" "$P4" > /dev/null 2> "$D/p4.log" &
	PIDS+=($!)
else
	echo "no IPv4 address of this machine's own: the wildcard's way through is not tried"
fi
"$PY" -c '
import http.server, ssl, sys, functools
d, port, cert, key = sys.argv[1:5]
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=d)
s = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), h)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(cert, key)
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()' "$D/www" "$P2" "$D/cert.pem" "$D/key.pem" > /dev/null 2> "$D/p2.log" &
PIDS+=($!)
for i in $(seq 100); do
	curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$P1/" &&
		curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$P3/" &&
		curl -sk --noproxy '*' -o /dev/null "https://127.0.0.1:$P2/" &&
		{ [ -z "$HOSTIP" ] || curl -s --noproxy '*' -o /dev/null "http://$HOSTIP:$P4/"; } && break
	sleep 0.1
done
RESOLVER=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)

# what runs inside the sandbox: one "name=value" line per check
cat > "$D/inside.sh" <<'EOF'
D=$1 P1=$2 P2=$3 P3=$4 HOSTIP=$5 RESOLVER=$6 P4=$7
c() { curl -s --max-time 10 "$@"; }
echo "http_allowed=$(c "http://api.github.test:$P1/hello.txt")"
echo "https_allowed=$(c --cacert "$D/cert.pem" "https://api.github.test:$P2/hello.txt")"
echo "http_evil=$(c -o /dev/null -w '%{http_code}' "http://evil.test:$P1/hello.txt")"
echo "https_evil=$(c -o /dev/null -w '%{http_connect}' --cacert "$D/cert.pem" "https://evil.test:$P2/hello.txt")"
echo "port_denied=$(c -o /dev/null -w '%{http_code}' "http://api.github.test:$P3/hello.txt")"
[ -z "$HOSTIP" ] || echo "wildcard=$(c "http://b.pkg.test:$P4/hello.txt")"
echo "wildcard_loopback=$(c -o /dev/null -w '%{http_code}' "http://a.pkg.test:$P1/hello.txt")"
echo "wildcard_metadata=$(c -o /dev/null -w '%{http_code}' "http://meta.pkg.test:$P1/latest/meta-data/")"
echo "apex=$(c -o /dev/null -w '%{http_code}' "http://pkg.test:$P1/hello.txt")"
echo "not_http=$(python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(bytes.fromhex("160301020001000001fc0303") + b"x" * 64)
print(s.recv(4096).split(b"\r\n")[0].decode())')"
c --noproxy '*' -o /dev/null "http://127.0.0.1:$P1/hello.txt"; echo "direct_loopback=$?"
c --noproxy '*' -o /dev/null "http://api.github.test:$P1/hello.txt"; echo "direct_name=$?"
echo "direct_tcp=$(python3 -c '
import socket, sys, errno
for host in sys.argv[1:]:
    if not host: continue
    try:
        socket.create_connection((host, 443), timeout=5); print("connected", end=" ")
    except OSError as e:
        print(errno.errorcode.get(e.errno, "timeout"), end=" ")
' "$HOSTIP" "$RESOLVER" 1.1.1.1)"
echo "direct_udp=$(python3 -c '
import socket, sys, errno
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", (sys.argv[1] or "1.1.1.1", 53)); print("sent")
except OSError as e:
    print(errno.errorcode.get(e.errno, "other"))
' "$RESOLVER")"
EOF
chmod 644 "$D/inside.sh"

# run LABEL AS [driver options]: the driver in a mount namespace with the
# test names, as user AS ("" for the caller); its checks in $D/out/LABEL.txt
run() {
	local label=$1 as=$2; shift 2
	local drv=$DRIVER lsan=${LSAN_OPTIONS:-}
	if [ -n "$as" ] && ! setpriv --reuid="$as" --regid="$as" --clear-groups -- test -x "$drv"; then
		cp "$DRIVER" "$D/test_netproxy"
		chmod 755 "$D/test_netproxy"
		drv=$D/test_netproxy
	fi
	if [ -n "$as" ] && [ -f "$ROOT/tests/lsan.supp" ] &&
		! setpriv --reuid="$as" --regid="$as" --clear-groups -- test -r "$ROOT/tests/lsan.supp"; then
		cp "$ROOT/tests/lsan.supp" "$D/lsan.supp"
		chmod 644 "$D/lsan.supp"
		lsan=${lsan//$ROOT\/tests\/lsan.supp/$D/lsan.supp}
	fi
	# root: a mount namespace, then setpriv to the user; not root: root in a
	# user namespace of its own for the mount, then back to its own ids in
	# one nested below it
	local drop=() ns=(unshare -m --propagation private)
	[ -z "$as" ] || drop=(setpriv --reuid="$as" --regid="$as" --clear-groups --)
	if [ "$(id -u)" != 0 ]; then
		ns=(unshare --map-root-user -m --propagation private)
		drop=(unshare --user --map-user="$(id -u)" --map-group="$(id -g)" --)
	fi
	"${ns[@]}" -- sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$D/hosts" \
		"${drop[@]}" env LSAN_OPTIONS="$lsan" "$drv" --drive --events "$D/out/$label.events" \
		--bind "$D" "$@" \
		--allow "api.github.test:$P1" --allow "API.GitHub.test.:$P2" --allow "*.pkg.test:$P1" \
		--allow "*.pkg.test:$P4" \
		-- sh "$D/inside.sh" "$D" "$P1" "$P2" "$P3" "$HOSTIP" "$RESOLVER" "$P4" \
		> "$D/out/$label.txt" 2> "$D/out/$label.err"
	echo $? > "$D/out/$label.rc"
	sanitizers "$D/out/$label.err" "$label"
}

# check LABEL: every expectation on one run
check() {
	local l=$1 out=$D/out/$1.txt ev=$D/out/$1.events
	v() { sed -n "s/^$1=//p" "$out"; }
	eq "$(cat "$D/out/$l.rc")" 0 "$l: the driver's status ($(head -c 300 "$D/out/$l.err"))"
	eq "$(v http_allowed)" "hello from the origin" "$l: plain HTTP to an allowed host"
	eq "$(v https_allowed)" "hello from the origin" "$l: HTTPS through a CONNECT tunnel"
	eq "$(v http_evil)" 403 "$l: plain HTTP to a host not on the list"
	eq "$(v https_evil)" 403 "$l: CONNECT to a host not on the list"
	eq "$(v port_denied)" 403 "$l: an allowed host on a port not on the list"
	[ -z "$HOSTIP" ] || eq "$(v wildcard)" "hello from the origin" "$l: a subdomain of a wildcard entry"
	eq "$(v wildcard_loopback)" 403 "$l: a wildcard's name that resolves to loopback"
	eq "$(v wildcard_metadata)" 403 "$l: a wildcard's name that resolves to the metadata address"
	eq "$(v apex)" 403 "$l: the apex of a wildcard entry"
	eq "$(v not_http)" "HTTP/1.1 400 Bad Request" "$l: a TLS hello sent to the proxy itself"
	eq "$(v direct_loopback)" 7 "$l: TCP to the host's loopback without the proxy (curl: cannot connect)"
	eq "$(v direct_name)" 7 "$l: TCP to a test name without the proxy"
	local tcp
	tcp=$(v direct_tcp)
	case " $tcp " in *connected* | *timeout*) fail "$l: TCP out of the sandbox: $tcp" ;; esac
	CHECKS=$((CHECKS + 1))
	eq "$(v direct_udp)" ENETUNREACH "$l: UDP to the resolver without the proxy"
	local events
	events=$(cat "$ev" 2> /dev/null)
	contains "$events" "ok 200 GET api.github.test $P1" "$l: the allowed request's event"
	contains "$events" "ok 200 CONNECT api.github.test $P2" "$l: the tunnel's event"
	contains "$events" "host_denied 403 GET evil.test $P1" "$l: the denied host named (HTTP)"
	contains "$events" "host_denied 403 CONNECT evil.test $P2" "$l: the denied host named (CONNECT)"
	contains "$events" "port_denied 403 GET api.github.test $P3" "$l: the denied port named"
	contains "$events" "host_denied 403 GET pkg.test $P1" "$l: the wildcard's apex named"
	contains "$events" "address_denied 403 GET a.pkg.test $P1" "$l: the wildcard's loopback name named"
	contains "$events" "address_denied 403 GET meta.pkg.test $P1" "$l: the wildcard's metadata name named"
	[ -z "$HOSTIP" ] || contains "$events" "ok 200 GET b.pkg.test $P4" "$l: the wildcard's event"
	contains "$events" "not_http 400 - - 0" "$l: the byte stream that is not HTTP"
	eq "$(grep -c . "$ev" 2> /dev/null)" "$([ -n "$HOSTIP" ] && echo 10 || echo 9)" "$l: one event per request"
	# the origin server saw origin-form requests only
	contains "$(tr -d '\0' < "$D/p1.log")" '"GET /hello.txt HTTP/1.1" 200' "$l: origin-form at the origin"
	grep -aq '"GET http' "$D/p1.log" && fail "$l: an absolute-form request reached the origin"
	CHECKS=$((CHECKS + 1))
	: > "$D/p1.log"
}

if [ "$(id -u)" = 0 ]; then
	run root ""
	check root
	run root-no-userns "" --no-userns
	check root-no-userns
	U=tgnetproxy
	if ! id "$U" > /dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$U" || { fail "useradd $U"; finish; exit; }
		USER_MADE=$U
	fi
	run user "$U"
	check user
else
	echo "not root: the unprivileged half only, as $(id -un)"
	run user ""
	check user
fi
finish
