/*
 * test_netproxy.c — network by host (src/exec/netproxy.h).
 *
 * Tables: host normalisation (IDNA, trailing dots, numbers in other
 * spellings), allow-list entries (accepted and refused with the entry
 * named) and matches, request heads (CONNECT, absolute-form, every refusal
 * with its reason, heads cut short and oversized), the rewrite of a plain
 * request.
 *
 * The proxy for real, without namespaces: connections handed to it over
 * socketpairs, against an echo server and an HTTP server on 127.0.0.1.  An
 * allowed CONNECT tunnels both ways (early data after the head, half-close,
 * a megabyte each way intact), a plain request reaches the origin in
 * origin-form with Host and Connection replaced; a host or a port not on
 * the list, a byte stream that is not HTTP, a head over the limit, one that
 * never ends (while another connection goes through meanwhile), too many
 * connections, a refused connect: each gets its HTTP error and exactly one
 * callback naming host and port.  Detach closes its connections, and no
 * callback comes after it.
 *
 * The forwarder for real: a process in its own network namespace (with and,
 * as root, without its own user namespace) gets 127.0.0.1:3128, tunnels
 * through it to the host's loopback, cannot reach that loopback directly;
 * the forwarder has no capabilities, no_new_privs and a seccomp filter, and
 * exits by itself when the process is gone.  Attaching to a process in the
 * gate's own network namespace, or to one that is gone, is refused.
 *
 * This binary doubles as the integration driver (tests/integration/
 * netproxy.sh): `test_netproxy --drive [options] -- command...` runs the
 * command under bubblewrap with the proxy, as the sandbox will.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/netproxy.h"
#include "util/util.h"

/* ================================================================ tables */

static void test_host_norm(void **state)
{
	(void)state;
	static const struct { const char *in; int unicode; const char *out; int kind; } t[] = {
		{"api.github.com", 0, "api.github.com", TGI_NETHOST_NAME},
		{"API.GitHub.COM.", 0, "api.github.com", TGI_NETHOST_NAME},
		{"registry.npmjs.org", 0, "registry.npmjs.org", TGI_NETHOST_NAME},
		{"_acme.example.com", 0, "_acme.example.com", TGI_NETHOST_NAME},
		{"localhost", 0, "localhost", TGI_NETHOST_NAME},
		{"xn--bcher-kva.example", 0, "xn--bcher-kva.example", TGI_NETHOST_NAME},
		{"b\xc3\xbc" "cher.example", 1, "xn--bcher-kva.example", TGI_NETHOST_NAME},
		{"M\xc3\x9c" "NCHEN.de", 1, "xn--mnchen-3ya.de", TGI_NETHOST_NAME},
		/* fullwidth letters and the ideographic full stop */
		{"\xef\xbd\x81\xef\xbd\x90\xef\xbd\x89\xe3\x80\x82" "example.com", 1, "api.example.com",
		 TGI_NETHOST_NAME},
		{"\xe4\xbe\x8b\xe3\x81\x88.jp", 1, "xn--r8jz45g.jp", TGI_NETHOST_NAME},
		{"10.0.0.5", 0, "10.0.0.5", TGI_NETHOST_IPV4},
		{"127.0.0.1.", 0, "127.0.0.1", TGI_NETHOST_IPV4},
		{"[::1]", 0, "::1", TGI_NETHOST_IPV6},
		{"[2001:DB8:0:0:0:0:0:1]", 0, "2001:db8::1", TGI_NETHOST_IPV6},
		{"[::ffff:127.0.0.1]", 0, "::ffff:127.0.0.1", TGI_NETHOST_IPV6},
		/* refused */
		{"", 0, NULL, 0},
		{".", 0, NULL, 0},
		{"a..b", 0, NULL, 0},
		{".example.com", 0, NULL, 0},
		{"-bad.example.com", 0, NULL, 0},
		{"bad-.example.com", 0, NULL, 0},
		{"exa mple.com", 0, NULL, 0},
		{"exa%2ample.com", 0, NULL, 0},
		{"b\xc3\xbc" "cher.example", 0, NULL, 0},
		{"\xff\xfe.example", 1, NULL, 0},
		{"127.1", 0, NULL, 0},
		{"0x7f000001", 0, NULL, 0},
		{"0x7f.0.0.1", 0, NULL, 0},
		{"017700000001", 0, NULL, 0},
		{"2130706433", 0, NULL, 0},
		{"127.000.000.001", 0, NULL, 0},
		{"1.2.3.4.5", 0, NULL, 0},
		{"example.123", 0, NULL, 0},
		{"[::1", 0, NULL, 0},
		{"[fe80::1%25eth0]", 0, NULL, 0},
		{"[1.2.3.4]", 0, NULL, 0},
		{"::1", 0, NULL, 0},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", 0, NULL, 0},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		char out[TGI_NETHOST_MAX];
		tgi_nethost_kind kind = TGI_NETHOST_NAME;
		const char *why = NULL;
		int r = tgi_nethost_norm(t[i].in, strlen(t[i].in), t[i].unicode, out, sizeof out, &kind,
		                         &why);
		if (t[i].out) {
			if (r != 0)
				fail_msg("host %zu \"%s\": refused (%s)", i, t[i].in, why);
			assert_string_equal(out, t[i].out);
			assert_int_equal(kind, t[i].kind);
		} else {
			if (r != -1)
				fail_msg("host %zu \"%s\": accepted as \"%s\"", i, t[i].in, out);
			assert_non_null(why);
		}
	}
	/* a name of 253 bytes passes, 254 does not */
	char name[300];
	memset(name, 'a', sizeof name);
	for (int i = 63; i < 253; i += 64)
		name[i] = '.';
	char out[TGI_NETHOST_MAX];
	tgi_nethost_kind k;
	assert_int_equal(tgi_nethost_norm(name, 253, 0, out, sizeof out, &k, NULL), 0);
	assert_int_equal(tgi_nethost_norm(name, 254, 0, out, sizeof out, &k, NULL), -1);
	/* a NUL inside is refused */
	assert_int_equal(tgi_nethost_norm("a\0b.com", 7, 0, out, sizeof out, &k, NULL), -1);
}

static void test_allow_entries(void **state)
{
	(void)state;
	static const struct { const char *entry; const char *err; } t[] = {
		{"api.github.com", NULL},
		{"api.github.com:443", NULL},
		{"*.npmjs.org", NULL},
		{"*.npmjs.org:8443", NULL},
		{"10.0.0.5", NULL},
		{"10.0.0.5:8080", NULL},
		{"[::1]:8080", NULL},
		{"[::1]", NULL},
		{"B\xc3\x9c" "CHER.example", NULL},
		{"", "entry 1 (\"\"): it is empty"},
		{"https://api.github.com", "without a scheme"},
		{"api.github.com/path", "no path"},
		{"user@api.github.com", "no path, user or blanks"},
		{"*", "'*' would allow every host"},
		{"*:443", "'*' would allow every host"},
		{"*.com", "at least two labels"},
		{"api.*.com", "whole first label"},
		{"a*.example.com", "whole first label"},
		{"*.10.0.0.5", "applies to names, not to addresses"},
		{"*.[::1]", "applies to names, not to addresses"},
		{"api.github.com:0", "from 1 to 65535"},
		{"api.github.com:65536", "from 1 to 65535"},
		{"api.github.com:http", "from 1 to 65535"},
		{"api.github.com:", "from 1 to 65535"},
		{"::1", "in brackets"},
		{"[::1]x", "only a port"},
		{"127.1", "a number in a form"},
		{"0x7f000001:80", "a number in a form"},
		{"exa_mple .com", "no path, user or blanks"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		tgi_netallow *a = NULL;
		char err[256] = "";
		const char *e[] = {t[i].entry};
		int r = tgi_netallow_new(e, 1, &a, err, sizeof err);
		if (!t[i].err) {
			if (r != 0)
				fail_msg("entry %zu \"%s\" refused: %s", i, t[i].entry, err);
			tgi_netallow_unref(a);
			continue;
		}
		if (r != -1)
			fail_msg("entry %zu \"%s\" accepted", i, t[i].entry);
		assert_null(a);
		if (!strstr(err, t[i].err) || !strstr(err, "network entry 1"))
			fail_msg("entry %zu: \"%s\" lacks \"%s\"", i, err, t[i].err);
	}
	/* the second entry of a list is named as such */
	const char *two[] = {"ok.example.com", "https://x"};
	tgi_netallow *a = NULL;
	char err[256];
	assert_int_equal(tgi_netallow_new(two, 2, &a, err, sizeof err), -1);
	assert_non_null(strstr(err, "network entry 2 (\"https://x\")"));
}

static void test_allow_match(void **state)
{
	(void)state;
	const char *entries[] = {"api.github.com:443", "registry.npmjs.org", "*.pkg.example",
	                         "*.cdn.example:8443", "10.0.0.5:8080", "[::1]:9000",
	                         "b\xc3\xbc" "cher.example:443", "plain.example."};
	tgi_netallow *a;
	char err[256];
	assert_int_equal(tgi_netallow_new(entries, TGI_ARRAY_LEN(entries), &a, err, sizeof err), 0);
	static const struct { const char *host; int kind; unsigned port; int want; } t[] = {
		{"api.github.com", TGI_NETHOST_NAME, 443, TGI_NETALLOW_YES},
		{"api.github.com", TGI_NETHOST_NAME, 80, TGI_NETALLOW_NO_PORT},
		{"api.github.com", TGI_NETHOST_NAME, 22, TGI_NETALLOW_NO_PORT},
		{"github.com", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"xapi.github.com", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"evil.api.github.com", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"registry.npmjs.org", TGI_NETHOST_NAME, 443, TGI_NETALLOW_YES},
		{"registry.npmjs.org", TGI_NETHOST_NAME, 80, TGI_NETALLOW_YES},
		{"registry.npmjs.org", TGI_NETHOST_NAME, 8080, TGI_NETALLOW_NO_PORT},
		{"a.pkg.example", TGI_NETHOST_NAME, 443, TGI_NETALLOW_WILDCARD},
		{"a.b.pkg.example", TGI_NETHOST_NAME, 80, TGI_NETALLOW_WILDCARD},
		{"pkg.example", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"xpkg.example", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"a.pkg.example.evil", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"x.cdn.example", TGI_NETHOST_NAME, 8443, TGI_NETALLOW_WILDCARD},
		{"x.cdn.example", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_PORT},
		{"10.0.0.5", TGI_NETHOST_IPV4, 8080, TGI_NETALLOW_YES},
		{"10.0.0.5", TGI_NETHOST_IPV4, 80, TGI_NETALLOW_NO_PORT},
		{"10.0.0.5", TGI_NETHOST_NAME, 8080, TGI_NETALLOW_NO_HOST},
		{"10.0.0.6", TGI_NETHOST_IPV4, 8080, TGI_NETALLOW_NO_HOST},
		{"::1", TGI_NETHOST_IPV6, 9000, TGI_NETALLOW_YES},
		{"::ffff:10.0.0.5", TGI_NETHOST_IPV6, 8080, TGI_NETALLOW_NO_HOST},
		{"xn--bcher-kva.example", TGI_NETHOST_NAME, 443, TGI_NETALLOW_YES},
		{"plain.example", TGI_NETHOST_NAME, 80, TGI_NETALLOW_YES},
		{"", TGI_NETHOST_NAME, 443, TGI_NETALLOW_NO_HOST},
		{"api.github.com", TGI_NETHOST_NAME, 0, TGI_NETALLOW_NO_HOST},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		int got = tgi_netallow_match(a, t[i].host, (tgi_nethost_kind)t[i].kind, t[i].port);
		if (got != t[i].want)
			fail_msg("match %zu %s:%u: got %d, want %d", i, t[i].host, t[i].port, got,
			         t[i].want);
	}
	/* a name listed exactly and covered by a wildcard too is listed exactly */
	const char *both[] = {"*.example.org", "api.example.org:443", "*.example.org:8080"};
	tgi_netallow *w;
	assert_int_equal(tgi_netallow_new(both, 3, &w, err, sizeof err), 0);
	assert_int_equal(tgi_netallow_match(w, "api.example.org", TGI_NETHOST_NAME, 443),
	                 TGI_NETALLOW_YES);
	assert_int_equal(tgi_netallow_match(w, "api.example.org", TGI_NETHOST_NAME, 80),
	                 TGI_NETALLOW_WILDCARD);
	assert_int_equal(tgi_netallow_match(w, "api.example.org", TGI_NETHOST_NAME, 8080),
	                 TGI_NETALLOW_WILDCARD);
	assert_int_equal(tgi_netallow_match(w, "api.example.org", TGI_NETHOST_NAME, 22),
	                 TGI_NETALLOW_NO_PORT);
	tgi_netallow_unref(w);

	json_t *j = tgi_netallow_json(a);
	char *s = json_dumps(j, JSON_COMPACT);
	assert_string_equal(s, "[\"api.github.com:443\",\"registry.npmjs.org:80,443\","
	                       "\"*.pkg.example:80,443\",\"*.cdn.example:8443\",\"10.0.0.5:8080\","
	                       "\"[::1]:9000\",\"xn--bcher-kva.example:443\","
	                       "\"plain.example:80,443\"]");
	free(s);
	json_decref(j);
	/* references */
	tgi_netallow *b = tgi_netallow_ref(a);
	assert_ptr_equal(a, b);
	tgi_netallow_unref(a);
	assert_int_equal(tgi_netallow_match(b, "api.github.com", TGI_NETHOST_NAME, 443),
	                 TGI_NETALLOW_YES);
	tgi_netallow_unref(b);
	tgi_netallow_unref(NULL);
	/* an empty list allows nothing */
	assert_int_equal(tgi_netallow_new(NULL, 0, &a, err, sizeof err), 0);
	assert_int_equal(tgi_netallow_match(a, "api.github.com", TGI_NETHOST_NAME, 443),
	                 TGI_NETALLOW_NO_HOST);
	tgi_netallow_unref(a);
}

static void test_special_addr(void **state)
{
	(void)state;
	static const struct { const char *a; int special; } t[] = {
		{"127.0.0.1", 1}, {"127.1.2.3", 1}, {"0.0.0.0", 1}, {"0.1.2.3", 1},
		{"169.254.169.254", 1}, {"169.254.0.1", 1}, {"224.0.0.1", 1}, {"239.255.255.250", 1},
		{"255.255.255.255", 1}, {"100.100.100.200", 1},
		{"10.0.0.5", 0}, {"192.168.1.1", 0}, {"172.16.0.1", 0}, {"140.82.112.3", 0},
		{"100.100.100.201", 0}, {"169.253.255.255", 0}, {"223.255.255.255", 0},
		{"::", 1}, {"::1", 1}, {"fe80::1", 1}, {"fec0::1", 1}, {"ff02::1", 1},
		{"::ffff:127.0.0.1", 1}, {"::ffff:169.254.169.254", 1}, {"::127.0.0.1", 1},
		{"fd00:ec2::254", 1},
		{"::ffff:140.82.112.3", 0}, {"2606:50c0:8000::153", 0}, {"fd00::1", 0},
		{"fd00:ec2::253", 0},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		if (strchr(t[i].a, ':')) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			s6->sin6_family = AF_INET6;
			assert_int_equal(inet_pton(AF_INET6, t[i].a, &s6->sin6_addr), 1);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			s4->sin_family = AF_INET;
			assert_int_equal(inet_pton(AF_INET, t[i].a, &s4->sin_addr), 1);
		}
		if (tgi_netaddr_special((struct sockaddr *)&ss) != t[i].special)
			fail_msg("address %s: special should be %d", t[i].a, t[i].special);
	}
	struct sockaddr_storage un = {.ss_family = AF_UNIX};
	assert_int_equal(tgi_netaddr_special((struct sockaddr *)&un), 1);
	assert_int_equal(tgi_netaddr_special(NULL), 1);
}

#define H(s) s, sizeof(s) - 1

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t      n;
		int         kind;
		int         why;
		const char *host;
		unsigned    port;
	} t[] = {
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n"),
		 TGI_NETREQ_CONNECT, 0, "api.github.com", 443},
		{H("CONNECT API.GITHUB.COM.:443 HTTP/1.0\r\n\r\n"), TGI_NETREQ_CONNECT, 0,
		 "api.github.com", 443},
		{H("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_CONNECT, 0, "::1", 8443},
		{H("CONNECT 10.0.0.5:22 HTTP/1.1\r\nUser-Agent: x\r\n\r\n"), TGI_NETREQ_CONNECT, 0,
		 "10.0.0.5", 22},
		{H("GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: example.com\r\n\r\n"),
		 TGI_NETREQ_HTTP, 0, "example.com", 80},
		{H("POST HTTP://Example.COM:8080 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
		 TGI_NETREQ_HTTP, 0, "example.com", 8080},
		{H("HEAD http://[::1]:81/x HTTP/1.0\r\n\r\n"), TGI_NETREQ_HTTP, 0, "::1", 81},
		{H("GET http://example.com?q HTTP/1.1\r\n\r\n"), TGI_NETREQ_HTTP, 0, "example.com",
		 80},
		{H("GET http://example.com/ HTTP/1.1\r\nX: \x80\xff obs-text\r\n\r\n"),
		 TGI_NETREQ_HTTP, 0, "example.com", 80},
		/* still coming */
		{H(""), TGI_NETREQ_MORE, 0, "", 0},
		{H("CONN"), TGI_NETREQ_MORE, 0, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\n"), TGI_NETREQ_MORE, 0, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nHost: x\r\n\r"), TGI_NETREQ_MORE, 0, "", 0},
		/* not HTTP at all: at once */
		{H("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP,
		 "", 0},
		{H("SSH-2.0-OpenSSH_9.2\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP, "", 0},
		{H("get http://example.com/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP,
		 "", 0},
		{H(" GET"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP, "", 0},
		{H("\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP, "", 0},
		{H("ABCDEFGHIJKLMNOPQRSTUVWXYZ http://x/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_NOT_HTTP, "", 0},
		{H("\0\0\0\0"), TGI_NETREQ_BAD, TGI_NETWHY_NOT_HTTP, "", 0},
		/* malformed */
		{H("CONNECT api.github.com HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED, "",
		 0},
		{H("CONNECT api.github.com:0 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED,
		 "", 0},
		{H("CONNECT api.github.com:65536 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443x HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT http://api.github.com:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT user@api.github.com:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT 127.1:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT 0x7f000001:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED, "",
		 0},
		{H("CONNECT b\xc3\xbc" "cher.example:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/2.0\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED,
		 "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1 \r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT  api.github.com:443 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\n\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED,
		 "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nHost: x\n\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\n folded\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nHost : x\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nNoColon\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nX: a\0b\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.github.com:443 HTTP/1.1\r\nX: a\rb\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("CONNECT api.git\x01hub.com:443 HTTP/1.1\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("GET http://allowed.example@evil.example/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("GET http:///path HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED, "", 0},
		{H("GET http://example.com/#frag HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		{H("GET http://example.com:99999/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_MALFORMED, "", 0},
		/* the shape of the request */
		{H("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), TGI_NETREQ_BAD,
		 TGI_NETWHY_ORIGIN_FORM, "", 0},
		{H("OPTIONS * HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_ORIGIN_FORM, "", 0},
		{H("GET example.com:80 HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_ORIGIN_FORM, "",
		 0},
		{H("GET https://example.com/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_SCHEME, "",
		 0},
		{H("GET ftp://example.com/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_SCHEME, "",
		 0},
		{H("TRACE http://example.com/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_METHOD, "",
		 0},
		{H("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_MALFORMED, "", 0},
		{H("BREW http://pot.example/ HTTP/1.1\r\n\r\n"), TGI_NETREQ_BAD, TGI_NETWHY_METHOD, "",
		 0},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		tgi_netreq r;
		int k = tgi_netreq_parse(t[i].in, t[i].n, 16384, &r);
		if (k != t[i].kind || (k == TGI_NETREQ_BAD && (int)r.why != t[i].why))
			fail_msg("head %zu \"%.40s\": kind %d why %s, want kind %d why %s", i, t[i].in, k,
			         tgi_netwhy_code(r.why), t[i].kind, tgi_netwhy_code(t[i].why));
		if (k == TGI_NETREQ_CONNECT || k == TGI_NETREQ_HTTP) {
			assert_string_equal(r.host, t[i].host);
			assert_int_equal(r.port, t[i].port);
			assert_int_equal(r.head_len, t[i].n);
		}
	}

	/* bytes after the head are not part of it */
	static const char early[] = "CONNECT a.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01tls";
	tgi_netreq r;
	assert_int_equal(tgi_netreq_parse(early, sizeof early - 1, 16384, &r), TGI_NETREQ_CONNECT);
	assert_int_equal(r.head_len, sizeof "CONNECT a.example:443 HTTP/1.1\r\n\r\n" - 1);

	/* the limit: a head that does not end within max is too large, one that
	 * ends exactly at it is fine */
	char big[600];
	memset(big, 'a', sizeof big);
	memcpy(big, "CONNECT a.example:443 HTTP/1.1\r\nX: ", 35);
	assert_int_equal(tgi_netreq_parse(big, sizeof big, 512, &r), TGI_NETREQ_BAD);
	assert_int_equal(r.why, TGI_NETWHY_TOO_LARGE);
	assert_int_equal(tgi_netreq_parse(big, 511, 512, &r), TGI_NETREQ_MORE);
	memcpy(big + 508, "\r\n\r\n", 4);
	assert_int_equal(tgi_netreq_parse(big, 512, 512, &r), TGI_NETREQ_CONNECT);
	assert_int_equal(r.head_len, 512);
	/* 101 header lines */
	char many[4096];
	size_t o = (size_t)snprintf(many, sizeof many, "CONNECT a.example:443 HTTP/1.1\r\n");
	for (int i = 0; i < 101; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "X: %d\r\n", i);
	o += (size_t)snprintf(many + o, sizeof many - o, "\r\n");
	assert_int_equal(tgi_netreq_parse(many, o, 16384, &r), TGI_NETREQ_BAD);
	assert_int_equal(r.why, TGI_NETWHY_TOO_LARGE);

	/* every reason has a code, a status and a sentence */
	for (int w = TGI_NETWHY_OK; w <= TGI_NETWHY_ADDRESS; w++) {
		assert_true(strlen(tgi_netwhy_code((tgi_netwhy)w)) > 1);
		assert_true(strlen(tgi_netwhy_text((tgi_netwhy)w)) > 5);
		assert_true(tgi_netwhy_status((tgi_netwhy)w) >= 200);
	}
	assert_int_equal(tgi_netwhy_status(TGI_NETWHY_HOST), 403);
	assert_int_equal(tgi_netwhy_status(TGI_NETWHY_METHOD), 405);
	assert_string_equal(tgi_netwhy_code((tgi_netwhy)999), "unknown");
}

static void test_rewrite(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } t[] = {
		{"GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: evil.example\r\nAccept: */*\r\n"
		 "Proxy-Connection: Keep-Alive\r\nProxy-Authorization: Basic eA==\r\n"
		 "Connection: keep-alive\r\nKeep-Alive: 5\r\nUpgrade: h2c\r\nTE: trailers\r\n"
		 "User-Agent: curl\r\n\r\n",
		 "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nUser-Agent: curl\r\n"
		 "Connection: close\r\n\r\n"},
		{"POST http://Example.com:8080 HTTP/1.0\r\nContent-Length: 3\r\n\r\n",
		 "POST / HTTP/1.0\r\nHost: example.com:8080\r\nContent-Length: 3\r\n"
		 "Connection: close\r\n\r\n"},
		{"GET http://example.com?q=1 HTTP/1.1\r\n\r\n",
		 "GET /?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"},
		{"HEAD http://[::1]:81/x HTTP/1.1\r\nhost: a\r\nHOST: b\r\nHostname: keep\r\n\r\n",
		 "HEAD /x HTTP/1.1\r\nHost: [::1]:81\r\nHostname: keep\r\nConnection: close\r\n\r\n"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(t); i++) {
		tgi_netreq r;
		size_t n = strlen(t[i].in);
		assert_int_equal(tgi_netreq_parse(t[i].in, n, 16384, &r), TGI_NETREQ_HTTP);
		char out[2048];
		long w = tgi_netreq_rewrite(t[i].in, &r, out, sizeof out);
		assert_true(w > 0);
		out[w] = '\0';
		assert_string_equal(out, t[i].out);
		assert_true((size_t)w <= r.head_len + TGI_NETREQ_REWRITE_EXTRA);
		/* too small an output is refused, not overrun */
		assert_int_equal(tgi_netreq_rewrite(t[i].in, &r, out, (size_t)w - 1), -1);
	}
	/* the largest growth stays within the bound */
	char host[260], in[600];
	memset(host, 'a', 253);
	for (int i = 63; i < 253; i += 64)
		host[i] = '.';
	host[253] = '\0';
	int n = snprintf(in, sizeof in, "GET http://%s:65535 HTTP/1.1\r\n\r\n", host);
	tgi_netreq r;
	assert_int_equal(tgi_netreq_parse(in, (size_t)n, 16384, &r), TGI_NETREQ_HTTP);
	char out[1200];
	long w = tgi_netreq_rewrite(in, &r, out, sizeof out);
	assert_true(w > 0 && (size_t)w <= r.head_len + TGI_NETREQ_REWRITE_EXTRA);
	/* a CONNECT has nothing to rewrite */
	assert_int_equal(tgi_netreq_parse(H("CONNECT a.example:443 HTTP/1.1\r\n\r\n"), 16384, &r),
	                 TGI_NETREQ_CONNECT);
	assert_int_equal(tgi_netreq_rewrite("CONNECT a.example:443 HTTP/1.1\r\n\r\n", &r, out,
	                                    sizeof out), -1);
}

static void test_info_pid(void **state)
{
	(void)state;
	static const char ok[] = "{\n    \"child-pid\": 12345,\n    \"cgroup-namespace\": 4026531835\n}\n";
	assert_int_equal(tgi_netproxy_info_pid(ok, sizeof ok - 1), 12345);
	assert_int_equal(tgi_netproxy_info_pid(H("{ \"child-pid\" :7 }")), 7);
	assert_int_equal(tgi_netproxy_info_pid(H("{ \"child-pid\": -1 }")), -1);
	assert_int_equal(tgi_netproxy_info_pid(H("{ \"child-pid\": 0 }")), -1);
	assert_int_equal(tgi_netproxy_info_pid(H("{ \"child-pid\": 99999999999 }")), -1);
	assert_int_equal(tgi_netproxy_info_pid(H("{ \"child-pid\"")), -1);
	assert_int_equal(tgi_netproxy_info_pid(H("{}")), -1);
	assert_int_equal(tgi_netproxy_info_pid(H("")), -1);
}

/* ================================================================ servers */

typedef struct server {
	int             lfd;
	unsigned        port;
	int             http;          /* 1: record the head, answer "hello", close; 0: echo */
	pthread_t       t;
	pthread_mutex_t mu;
	char            head[4096];    /* the last head an HTTP request brought */
	int             served;
} server;

static int read_full(int fd, char *buf, size_t cap, const char *until, int timeout_ms);

static void *server_main(void *arg)
{
	server *s = arg;
	for (;;) {
		int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		if (s->http) {
			char head[4096];
			int n = read_full(c, head, sizeof head - 1, "\r\n\r\n", 5000);
			head[n < 0 ? 0 : n] = '\0';
			static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
			                            "Connection: close\r\n\r\nhello";
			if (write(c, reply, sizeof reply - 1) < 0) {
				/* the client left */
			}
			pthread_mutex_lock(&s->mu);
			memcpy(s->head, head, sizeof head);
			s->served++;
			pthread_mutex_unlock(&s->mu);
		} else {
			char buf[65536];
			ssize_t n;
			while ((n = read(c, buf, sizeof buf)) > 0) {
				for (ssize_t o = 0; o < n;) {
					ssize_t w = write(c, buf + o, (size_t)(n - o));
					if (w <= 0)
						goto done;
					o += w;
				}
			}
			shutdown(c, SHUT_WR);
			pthread_mutex_lock(&s->mu);
			s->served++;
			pthread_mutex_unlock(&s->mu);
		}
	done:
		close(c);
	}
	return NULL;
}

static void server_start(server *s, int http)
{
	memset(s, 0, sizeof *s);
	s->http = http;
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	socklen_t sl = sizeof sa;
	getsockname(s->lfd, (struct sockaddr *)&sa, &sl);
	s->port = ntohs(sa.sin_port);
	assert_int_equal(listen(s->lfd, 64), 0);
	assert_int_equal(pthread_create(&s->t, NULL, server_main, s), 0);
}

static void server_stop(server *s)
{
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->t, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
}

/* A port on 127.0.0.1 where nothing listens. */
static unsigned closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(fd, (struct sockaddr *)&sa, sizeof sa);
	socklen_t sl = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	close(fd);
	return ntohs(sa.sin_port);
}

/* ================================================================ clients */

/* Read until `until` has arrived (NULL: until EOF), cap is full, or the
 * time is up.  The bytes read, or -1 on an error before any. */
static int read_full(int fd, char *buf, size_t cap, const char *until, int timeout_ms)
{
	size_t n = 0;
	double deadline = tgi_now_ms() + timeout_ms;
	while (n < cap) {
		if (until) {
			buf[n] = '\0';
			if (memmem(buf, n, until, strlen(until)))
				break;
		}
		double left = deadline - tgi_now_ms();
		if (left <= 0)
			break;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, (int)left + 1) <= 0)
			continue;
		ssize_t r = read(fd, buf + n, cap - n);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return n ? (int)n : -1;
		}
		n += (size_t)r;
	}
	return (int)n;
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		assert_true(w > 0);
		c += w;
		n -= (size_t)w;
	}
}

typedef struct seen {
	pthread_mutex_t mu;
	int             n;
	struct { int why, status; char method[16], host[TGI_NETHOST_MAX]; unsigned port; } e[64];
} seen;

static void on_event(void *arg, const tgi_netevent *ev)
{
	seen *s = arg;
	pthread_mutex_lock(&s->mu);
	if (s->n < 64) {
		s->e[s->n].why = ev->why;
		s->e[s->n].status = ev->status;
		tgi_snprintf(s->e[s->n].method, sizeof s->e[s->n].method, "%s", ev->method);
		tgi_snprintf(s->e[s->n].host, sizeof s->e[s->n].host, "%s", ev->host);
		s->e[s->n].port = ev->port;
	}
	s->n++;
	pthread_mutex_unlock(&s->mu);
}

/* Wait until s holds n events (or 5 s). */
static int seen_wait(seen *s, int n)
{
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&s->mu);
		int k = s->n;
		pthread_mutex_unlock(&s->mu);
		if (k >= n)
			return k;
		usleep(10000);
	}
	return -1;
}

typedef struct pfx {
	server        echo, http;
	tgi_netproxy *p;
	tgi_netallow *allow;
	tgi_netsb    *sb;
	seen          ev;
	unsigned      dead_port;
} pfx;

static pfx *proxy_setup(const tgi_netproxy_opts *o)
{
	pfx *f = calloc(1, sizeof *f);
	server_start(&f->echo, 0);
	server_start(&f->http, 1);
	f->dead_port = closed_port();
	pthread_mutex_init(&f->ev.mu, NULL);
	char e0[64], e1[64], e2[64], e3[64];
	snprintf(e0, sizeof e0, "127.0.0.1:%u", f->echo.port);
	snprintf(e1, sizeof e1, "localhost:%u", f->http.port);
	snprintf(e2, sizeof e2, "127.0.0.1:%u", f->dead_port);
	snprintf(e3, sizeof e3, "*.allowed.example:%u", f->echo.port);
	const char *entries[] = {e0, e1, e2, e3, "allowed.example:443"};
	char err[256];
	assert_int_equal(tgi_netallow_new(entries, 5, &f->allow, err, sizeof err), 0);
	f->p = tgi_netproxy_new(o, err, sizeof err);
	assert_non_null(f->p);
	f->sb = tgi_netproxy_attach(f->p, 0, f->allow, on_event, &f->ev, err, sizeof err);
	assert_non_null(f->sb);
	assert_int_equal(tgi_netproxy_forwarder(f->sb), 0);
	return f;
}

static void proxy_teardown(pfx *f)
{
	tgi_netproxy_detach(f->sb);
	tgi_netproxy_stats st;
	tgi_netproxy_get_stats(f->p, &st);
	assert_int_equal(st.connections, 0);
	assert_int_equal(st.sandboxes, 0);
	tgi_netproxy_free(f->p);
	tgi_netallow_unref(f->allow);
	server_stop(&f->echo);
	server_stop(&f->http);
	pthread_mutex_destroy(&f->ev.mu);
	free(f);
}

/* A client connection handed to the proxy: the client's end. */
static int client(pfx *f)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(tgi_netproxy_hand(f->sb, sv[1]), 0);
	return sv[0];
}

/* Send a head, read the reply head and body until EOF (or 5 s). */
static int ask(pfx *f, const char *head, char *reply, size_t cap)
{
	int c = client(f);
	write_all(c, head, strlen(head));
	int n = read_full(c, reply, cap - 1, NULL, 5000);
	reply[n < 0 ? 0 : n] = '\0';
	close(c);
	return n;
}

static void expect_event(pfx *f, int idx, int why, const char *host, unsigned port)
{
	assert_true(seen_wait(&f->ev, idx + 1) > idx);
	pthread_mutex_lock(&f->ev.mu);
	int w = f->ev.e[idx].why, st = f->ev.e[idx].status;
	char h[TGI_NETHOST_MAX];
	tgi_snprintf(h, sizeof h, "%s", f->ev.e[idx].host);
	unsigned pt = f->ev.e[idx].port;
	pthread_mutex_unlock(&f->ev.mu);
	if (w != why)
		fail_msg("event %d: %s, want %s", idx, tgi_netwhy_code((tgi_netwhy)w),
		         tgi_netwhy_code((tgi_netwhy)why));
	assert_int_equal(st, tgi_netwhy_status((tgi_netwhy)why));
	assert_string_equal(h, host);
	assert_int_equal(pt, port);
}

/* ================================================================ the proxy */

static void test_proxy_connect(void **state)
{
	(void)state;
	pfx *f = proxy_setup(NULL);
	char head[256], buf[4096];

	/* a tunnel: 200, then both ways, with the client's first bytes sent
	 * right behind the head */
	int c = client(f);
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: x\r\n\r\nearly", f->echo.port);
	write_all(c, head, strlen(head));
	int n = read_full(c, buf, sizeof buf - 1, "early", 5000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\nearly");
	write_all(c, "ping", 4);
	n = read_full(c, buf, 4, NULL, 5000);
	assert_int_equal(n, 4);
	assert_memory_equal(buf, "ping", 4);
	/* half-close passes on: the echo server sees EOF, shuts, we read EOF */
	shutdown(c, SHUT_WR);
	n = read_full(c, buf, sizeof buf, NULL, 5000);
	assert_int_equal(n, 0);
	close(c);
	expect_event(f, 0, TGI_NETWHY_OK, "127.0.0.1", f->echo.port);

	/* a wildcard name: resolved by the proxy (allowed.example is not real:
	 * it fails to resolve, which is a 502 and an event, not a hang; a
	 * resolver that does not answer makes it a 504 after connect_timeout) */
	snprintf(head, sizeof head, "CONNECT www.allowed.example:%u HTTP/1.1\r\n\r\n",
	         f->echo.port);
	ask(f, head, buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 502 ", 13) || !strncmp(buf, "HTTP/1.1 504 ", 13));
	assert_true(seen_wait(&f->ev, 2) >= 2);
	pthread_mutex_lock(&f->ev.mu);
	int why = f->ev.e[1].why;
	pthread_mutex_unlock(&f->ev.mu);
	expect_event(f, 1, why == TGI_NETWHY_RESOLVE ? TGI_NETWHY_RESOLVE
	             : TGI_NETWHY_CONNECT_TIMEOUT, "www.allowed.example", f->echo.port);

	/* a listed name that resolves (localhost: maybe ::1 first, where nothing
	 * listens, then 127.0.0.1) */
	c = client(f);
	snprintf(head, sizeof head, "CONNECT LOCALHOST.:%u HTTP/1.1\r\n\r\n", f->http.port);
	write_all(c, head, strlen(head));
	n = read_full(c, buf, sizeof buf - 1, "\r\n\r\n", 5000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
	static const char get[] = "GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n";
	write_all(c, get, sizeof get - 1);
	n = read_full(c, buf, sizeof buf - 1, NULL, 5000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_non_null(strstr(buf, "\r\n\r\nhello"));
	close(c);
	expect_event(f, 2, TGI_NETWHY_OK, "localhost", f->http.port);

	/* a refused connect */
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->dead_port);
	ask(f, head, buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 502 Bad Gateway\r\n", 26));
	expect_event(f, 3, TGI_NETWHY_CONNECT, "127.0.0.1", f->dead_port);
	proxy_teardown(f);
}

static void test_proxy_plain_http(void **state)
{
	(void)state;
	pfx *f = proxy_setup(NULL);
	char head[512], buf[4096];
	snprintf(head, sizeof head,
	         "GET http://localhost:%u/a?b=c HTTP/1.1\r\nHost: evil.example\r\n"
	         "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
	         "Accept: */*\r\n\r\n", f->http.port);
	ask(f, head, buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 200 OK\r\n", 17));
	assert_non_null(strstr(buf, "\r\n\r\nhello"));
	pthread_mutex_lock(&f->http.mu);
	char want[512];
	snprintf(want, sizeof want, "GET /a?b=c HTTP/1.1\r\nHost: localhost:%u\r\nAccept: */*\r\n"
	         "Connection: close\r\n\r\n", f->http.port);
	assert_string_equal(f->http.head, want);
	pthread_mutex_unlock(&f->http.mu);
	expect_event(f, 0, TGI_NETWHY_OK, "localhost", f->http.port);

	/* a body that follows the head is relayed behind the rewritten head */
	snprintf(head, sizeof head, "POST http://127.0.0.1:%u/ HTTP/1.1\r\nContent-Length: 4\r\n\r\n"
	         "body", f->echo.port);
	ask(f, head, buf, sizeof buf);
	snprintf(want, sizeof want, "POST / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: 4\r\n"
	         "Connection: close\r\n\r\nbody", f->echo.port);
	assert_string_equal(buf, want);
	expect_event(f, 1, TGI_NETWHY_OK, "127.0.0.1", f->echo.port);
	proxy_teardown(f);
}

static void test_proxy_refusals(void **state)
{
	(void)state;
	pfx *f = proxy_setup(NULL);
	char head[512], buf[4096];
	int ev = 0;

	/* a host not on the list, through CONNECT and plain HTTP */
	ask(f, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n", buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 403 Forbidden\r\n", 24));
	assert_non_null(strstr(buf, "X-Toolgate-Refused: host_denied"));
	assert_non_null(strstr(buf, "does not allow this host: evil.example:443."));
	expect_event(f, ev++, TGI_NETWHY_HOST, "evil.example", 443);
	ask(f, "GET http://Evil.Example./x HTTP/1.1\r\n\r\n", buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 403 ", 13));
	expect_event(f, ev++, TGI_NETWHY_HOST, "evil.example", 80);
	/* the apex of a wildcard */
	snprintf(head, sizeof head, "CONNECT allowed.example:%u HTTP/1.1\r\n\r\n", f->echo.port);
	ask(f, head, buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 403 ", 13));
	expect_event(f, ev++, TGI_NETWHY_PORT, "allowed.example", f->echo.port);
	/* a listed host on another port */
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->http.port);
	ask(f, head, buf, sizeof buf);
	assert_non_null(strstr(buf, "X-Toolgate-Refused: port_denied"));
	expect_event(f, ev++, TGI_NETWHY_PORT, "127.0.0.1", f->http.port);
	/* an address spelled as a number: refused as malformed, never resolved */
	ask(f, "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 400 ", 13));
	expect_event(f, ev++, TGI_NETWHY_MALFORMED, "", 0);
	/* not HTTP: refused at the first byte, without waiting for more */
	int c = client(f);
	write_all(c, "\x16\x03\x01\x02\x00", 5);
	int n = read_full(c, buf, sizeof buf - 1, NULL, 3000);
	buf[n < 0 ? 0 : n] = '\0';
	close(c);
	assert_true(!strncmp(buf, "HTTP/1.1 400 Bad Request\r\n", 26));
	assert_non_null(strstr(buf, "not_http"));
	expect_event(f, ev++, TGI_NETWHY_NOT_HTTP, "", 0);
	/* origin-form, another scheme, another method */
	ask(f, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "origin_form"));
	expect_event(f, ev++, TGI_NETWHY_ORIGIN_FORM, "", 0);
	ask(f, "GET https://allowed.example/ HTTP/1.1\r\n\r\n", buf, sizeof buf);
	assert_non_null(strstr(buf, "scheme"));
	expect_event(f, ev++, TGI_NETWHY_SCHEME, "", 0);
	ask(f, "TRACE http://allowed.example/ HTTP/1.1\r\n\r\n", buf, sizeof buf);
	assert_true(!strncmp(buf, "HTTP/1.1 405 Method Not Allowed\r\n", 33));
	expect_event(f, ev++, TGI_NETWHY_METHOD, "", 0);
	/* a head over the limit */
	c = client(f);
	char big[20000];
	memset(big, 'a', sizeof big);
	memcpy(big, "CONNECT allowed.example:443 HTTP/1.1\r\nX: ", 41);
	write_all(c, big, sizeof big);
	n = read_full(c, buf, sizeof buf - 1, NULL, 5000);
	buf[n < 0 ? 0 : n] = '\0';
	close(c);
	assert_true(!strncmp(buf, "HTTP/1.1 431 ", 13));
	expect_event(f, ev++, TGI_NETWHY_TOO_LARGE, "", 0);
	/* a head cut short by the client closing */
	c = client(f);
	write_all(c, "CONNECT allow", 13);
	shutdown(c, SHUT_WR);
	n = read_full(c, buf, sizeof buf - 1, NULL, 5000);
	buf[n < 0 ? 0 : n] = '\0';
	close(c);
	assert_true(!strncmp(buf, "HTTP/1.1 400 ", 13));
	expect_event(f, ev++, TGI_NETWHY_MALFORMED, "", 0);
	/* a connection that says nothing and closes is no request: no event */
	c = client(f);
	close(c);
	usleep(100000);
	assert_int_equal(seen_wait(&f->ev, ev), ev);

	tgi_netproxy_stats st;
	tgi_netproxy_get_stats(f->p, &st);
	assert_int_equal(st.opened, 0);
	assert_int_equal(st.refused, (size_t)ev);
	proxy_teardown(f);
}

/* A head that never ends holds only its own connection, and gets 408. */
static void test_proxy_slow(void **state)
{
	(void)state;
	tgi_netproxy_opts o = {.head_timeout_ms = 2000};
	pfx *f = proxy_setup(&o);
	int slow = client(f);
	write_all(slow, "CONNECT 127.0.0.1:", 18);
	double t0 = tgi_now_ms();
	/* meanwhile a tunnel opens and carries bytes */
	char head[128], buf[256];
	int c = client(f);
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->echo.port);
	write_all(c, head, strlen(head));
	int n = read_full(c, buf, sizeof buf - 1, "\r\n\r\n", 5000);
	assert_true(n > 12 && !strncmp(buf, "HTTP/1.1 200", 12));
	write_all(c, "x", 1);
	assert_int_equal(read_full(c, buf, 1, NULL, 5000), 1);
	assert_true(tgi_now_ms() - t0 < 1500);     /* well before the slow one's 2 s */
	close(c);
	/* the slow one times out */
	n = read_full(slow, buf, sizeof buf - 1, NULL, 5000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_true(!strncmp(buf, "HTTP/1.1 408 Request Timeout\r\n", 30));
	assert_true(tgi_now_ms() - t0 >= 1900);
	close(slow);
	expect_event(f, 0, TGI_NETWHY_OK, "127.0.0.1", f->echo.port);
	expect_event(f, 1, TGI_NETWHY_HEAD_TIMEOUT, "", 0);

	/* an idle tunnel is closed */
	tgi_netproxy_opts o2 = {.idle_timeout_ms = 300};
	pfx *g = proxy_setup(&o2);
	c = client(g);
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", g->echo.port);
	write_all(c, head, strlen(head));
	n = read_full(c, buf, sizeof buf - 1, "\r\n\r\n", 5000);
	t0 = tgi_now_ms();
	n = read_full(c, buf, sizeof buf, NULL, 5000);
	assert_int_equal(n, 0);
	assert_true(tgi_now_ms() - t0 < 2000);
	close(c);
	proxy_teardown(g);
	proxy_teardown(f);
}

/* Past the caps: 503 at once. */
static void test_proxy_caps(void **state)
{
	(void)state;
	tgi_netproxy_opts o = {.max_per_sandbox = 2, .max_tunnels = 3};
	pfx *f = proxy_setup(&o);
	int a = client(f), b = client(f);
	usleep(100000);
	char buf[1024];
	int c = client(f);
	int n = read_full(c, buf, sizeof buf - 1, NULL, 3000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_true(!strncmp(buf, "HTTP/1.1 503 Service Unavailable\r\n", 34));
	close(c);
	expect_event(f, 0, TGI_NETWHY_BUSY, "", 0);
	/* another sandbox still has room for one: the cap in all is 3 */
	tgi_netallow *none;
	char err[128];
	assert_int_equal(tgi_netallow_new(NULL, 0, &none, err, sizeof err), 0);
	tgi_netsb *sb2 = tgi_netproxy_attach(f->p, 0, none, NULL, NULL, err, sizeof err);
	assert_non_null(sb2);
	int sv[2], sw[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sw);
	assert_int_equal(tgi_netproxy_hand(sb2, sv[1]), 0);
	usleep(100000);
	assert_int_equal(tgi_netproxy_hand(sb2, sw[1]), 0);
	n = read_full(sw[0], buf, sizeof buf - 1, NULL, 3000);
	buf[n < 0 ? 0 : n] = '\0';
	assert_true(!strncmp(buf, "HTTP/1.1 503 ", 13));
	/* detach closes its connection */
	tgi_netproxy_detach(sb2);
	assert_int_equal(read_full(sv[0], buf, sizeof buf, NULL, 3000), 0);
	close(sv[0]);
	close(sw[0]);
	tgi_netallow_unref(none);
	tgi_netproxy_stats st;
	tgi_netproxy_get_stats(f->p, &st);
	assert_int_equal(st.connections, 2);
	close(a);
	close(b);
	proxy_teardown(f);
}

typedef struct pump_arg { int fd; const unsigned char *data; size_t n; } pump_arg;

static void *pump(void *arg)
{
	pump_arg *a = arg;
	for (size_t o = 0; o < a->n;) {
		size_t k = a->n - o < 7777 ? a->n - o : 7777;
		ssize_t w = write(a->fd, a->data + o, k);
		if (w <= 0)
			break;
		o += (size_t)w;
	}
	shutdown(a->fd, SHUT_WR);
	return NULL;
}

/* A megabyte each way, intact, through fixed buffers. */
static void test_proxy_bulk(void **state)
{
	(void)state;
	pfx *f = proxy_setup(NULL);
	size_t n = 1 << 20;
	unsigned char *data = malloc(n), *back = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	int c = client(f);
	char head[128], buf[256];
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->echo.port);
	write_all(c, head, strlen(head));
	int k = read_full(c, buf, 39, NULL, 5000);
	assert_int_equal(k, 39);
	pump_arg pa = {c, data, n};
	pthread_t t;
	pthread_create(&t, NULL, pump, &pa);
	int got = read_full(c, (char *)back, n + 1, NULL, 20000);
	pthread_join(t, NULL);
	assert_int_equal(got, (int)n);
	assert_memory_equal(back, data, n);
	close(c);
	free(data);
	free(back);
	proxy_teardown(f);
}

/* Detach while tunnels are open: they close, and no callback follows. */
static void test_proxy_detach(void **state)
{
	(void)state;
	pfx *f = proxy_setup(NULL);
	char head[128], buf[256];
	int c = client(f);
	snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f->echo.port);
	write_all(c, head, strlen(head));
	assert_true(read_full(c, buf, sizeof buf - 1, "\r\n\r\n", 5000) > 0);
	int d = client(f);                  /* in its head */
	write_all(d, "CONNECT 127.0.0.1:", 18);
	assert_int_equal(seen_wait(&f->ev, 1), 1);
	tgi_netproxy_detach(f->sb);
	int after = seen_wait(&f->ev, 0);
	assert_int_equal(read_full(c, buf, sizeof buf, NULL, 3000), 0);
	/* (d's bytes may not have been read: then it is a reset, not an EOF) */
	assert_true(read_full(d, buf, sizeof buf, NULL, 3000) <= 0);
	usleep(50000);
	assert_int_equal(seen_wait(&f->ev, 0), after);
	close(c);
	close(d);
	/* handing to a detached sandbox is impossible by construction (freed);
	 * a new one works */
	char err[128];
	f->sb = tgi_netproxy_attach(f->p, 0, f->allow, on_event, &f->ev, err, sizeof err);
	assert_non_null(f->sb);
	/* freeing the proxy before detaching leaves the sandbox to its detach */
	tgi_netproxy_free(f->p);
	f->p = NULL;
	tgi_netproxy_detach(f->sb);
	tgi_netallow_unref(f->allow);
	server_stop(&f->echo);
	server_stop(&f->http);
	pthread_mutex_destroy(&f->ev.mu);
	free(f);
	tgi_netproxy_free(NULL);
	tgi_netproxy_detach(NULL);
}

/* ================================================================ the forwarder */

/* In a forked test child: close every fd but a and b, so that nothing the
 * test process holds (a proxy's end, a server) outlives it in the child. */
static void close_all_but(int a, int b)
{
	for (int fd = 3; fd < 4096; fd++)
		if (fd != a && fd != b)
			close(fd);
}

static int bring_lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	memcpy(ifr.ifr_name, "lo", 3);
	int r = -1;
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
	return r;
}

/* The sandbox-like process: own network namespace (and user namespace when
 * userns), loopback up; on "g" it tries the host's echo server directly and
 * through the proxy, writes one result line, waits for "x", exits. */
static int tcp_connect(unsigned port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static void sandbox_child(int userns, unsigned echo_port, int ctl, int res)
	__attribute__((noreturn));
static void sandbox_child(int userns, unsigned echo_port, int ctl, int res)
{
	char line[512];
	size_t o = 0;
	close_all_but(ctl, res);
	if (unshare(CLONE_NEWNET | (userns ? CLONE_NEWUSER : 0)) < 0 || bring_lo_up() < 0) {
		if (write(res, "E", 1) < 0)
			_exit(1);
		_exit(1);
	}
	if (write(res, "R", 1) < 0)
		_exit(1);
	char go;
	if (read(ctl, &go, 1) != 1)
		_exit(1);
	/* directly: the host's loopback is not here */
	int d = tcp_connect(echo_port);
	o += (size_t)snprintf(line + o, sizeof line - o, "direct=%s ",
	                      d >= 0 ? "connected" : errno == ECONNREFUSED ? "refused" : "other");
	/* through the proxy */
	int s = tcp_connect(TGI_NETPROXY_PORT);
	if (s >= 0) {
		char head[128], buf[256];
		snprintf(head, sizeof head, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", echo_port);
		if (write(s, head, strlen(head)) < 0)
			_exit(1);
		int n = read_full(s, buf, 39, NULL, 5000);
		int ok = n == 39 && !memcmp(buf, "HTTP/1.1 200", 12);
		if (write(s, "ping", 4) < 0)
			_exit(1);
		n = read_full(s, buf, 4, NULL, 5000);
		ok = ok && n == 4 && !memcmp(buf, "ping", 4);
		o += (size_t)snprintf(line + o, sizeof line - o, "tunnel=%s ", ok ? "ok" : "bad");
		close(s);
		s = tcp_connect(TGI_NETPROXY_PORT);
		static const char evil[] = "CONNECT evil.example:443 HTTP/1.1\r\n\r\n";
		if (write(s, evil, sizeof evil - 1) < 0)
			_exit(1);
		n = read_full(s, buf, 12, NULL, 5000);
		o += (size_t)snprintf(line + o, sizeof line - o, "evil=%.12s",
		                      n == 12 ? buf : "none");
		close(s);
	} else {
		o += (size_t)snprintf(line + o, sizeof line - o, "proxy=unreachable");
	}
	line[o++] = '\n';
	if (write(res, line, o) < 0)
		_exit(1);
	if (read(ctl, &go, 1) < 0)
		_exit(1);
	_exit(0);
}

/* /proc/PID/status field, or "" */
static void status_field(pid_t pid, const char *name, char *out, size_t cap)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	char *p = strstr(buf, name);
	if (!p)
		return;
	p += strlen(name);
	while (*p == ':' || *p == '\t' || *p == ' ')
		p++;
	size_t k = strcspn(p, "\n");
	tgi_snprintf(out, cap, "%.*s", (int)k, p);
}

static char proc_state(pid_t pid)
{
	char s[32];
	status_field(pid, "State", s, sizeof s);
	return s[0] ? s[0] : '?';
}

static void forwarder_case(int userns)
{
	server echo;
	server_start(&echo, 0);
	int ctl[2], res[2];
	assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0)
		sandbox_child(userns, echo.port, ctl[0], res[1]);
	close(ctl[0]);
	close(res[1]);
	char r;
	assert_int_equal(read(res[0], &r, 1), 1);
	if (r != 'R') {
		waitpid(kid, NULL, 0);
		close(ctl[1]);
		close(res[0]);
		server_stop(&echo);
		print_message("cannot make namespaces here (userns %d): skipped\n", userns);
		return;
	}
	char err[256];
	tgi_netproxy *p = tgi_netproxy_new(NULL, err, sizeof err);
	assert_non_null(p);
	const char *entries[] = {"127.0.0.1"};
	char e0[64];
	snprintf(e0, sizeof e0, "127.0.0.1:%u", echo.port);
	entries[0] = e0;
	tgi_netallow *a;
	assert_int_equal(tgi_netallow_new(entries, 1, &a, err, sizeof err), 0);
	seen ev = {.n = 0};
	pthread_mutex_init(&ev.mu, NULL);
	tgi_netsb *sb = tgi_netproxy_attach(p, kid, a, on_event, &ev, err, sizeof err);
	if (!sb)
		fail_msg("attach: %s", err);
	pid_t fwd = tgi_netproxy_forwarder(sb);
	assert_true(fwd > 0);

	/* what the forwarder may do */
	char f[64];
	status_field(fwd, "CapEff", f, sizeof f);
	assert_string_equal(f, "0000000000000000");
	status_field(fwd, "CapBnd", f, sizeof f);
	assert_string_equal(f, "0000000000000000");
	status_field(fwd, "NoNewPrivs", f, sizeof f);
	assert_string_equal(f, "1");
	status_field(fwd, "Seccomp", f, sizeof f);
	assert_string_equal(f, "2");
	/* its fds: the listener, the socketpair end, the pidfd (only root may
	 * look: it is not dumpable) */
	if (geteuid() == 0) {
		int nfd = 0;
		char lp[96];
		for (int i = 0; i < 1024; i++) {
			snprintf(lp, sizeof lp, "/proc/%d/fd/%d", (int)fwd, i);
			struct stat st;
			nfd += lstat(lp, &st) == 0;
		}
		assert_int_equal(nfd, 3);
	}

	assert_int_equal(write(ctl[1], "g", 1), 1);
	char line[512];
	int n = read_full(res[0], line, sizeof line - 1, "\n", 10000);
	line[n < 0 ? 0 : n] = '\0';
	assert_string_equal(line, "direct=refused tunnel=ok evil=HTTP/1.1 403\n");
	assert_int_equal(seen_wait(&ev, 2), 2);
	assert_int_equal(ev.e[0].why, TGI_NETWHY_OK);
	assert_int_equal(ev.e[1].why, TGI_NETWHY_HOST);
	assert_string_equal(ev.e[1].host, "evil.example");

	/* the sandbox ends: the forwarder ends by itself */
	assert_int_equal(write(ctl[1], "x", 1), 1);
	waitpid(kid, NULL, 0);
	int gone = 0;
	for (int i = 0; i < 300 && !gone; i++) {
		gone = proc_state(fwd) == 'Z';
		if (!gone)
			usleep(10000);
	}
	assert_true(gone);
	tgi_netproxy_detach(sb);
	assert_int_equal(kill(fwd, 0), -1);     /* reaped */
	close(ctl[1]);
	close(res[0]);
	tgi_netallow_unref(a);
	tgi_netproxy_free(p);
	pthread_mutex_destroy(&ev.mu);
	server_stop(&echo);
}

static void test_forwarder_userns(void **state)
{
	(void)state;
	forwarder_case(1);
}

static void test_forwarder_root_netns(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	forwarder_case(0);
}

static void test_forwarder_refusals(void **state)
{
	(void)state;
	char err[256];
	tgi_netproxy *p = tgi_netproxy_new(NULL, err, sizeof err);
	tgi_netallow *a;
	assert_int_equal(tgi_netallow_new(NULL, 0, &a, err, sizeof err), 0);
	/* a process in the gate's own network namespace */
	int ctl[2];
	assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
	pid_t kid = fork();
	if (kid == 0) {
		char c;
		close_all_but(ctl[0], -1);
		if (read(ctl[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ctl[0]);
	tgi_netsb *sb = tgi_netproxy_attach(p, kid, a, NULL, NULL, err, sizeof err);
	assert_null(sb);
	if (!strstr(err, "shares the gate's") && !strstr(err, "could not join"))
		fail_msg("unexpected: %s", err);
	if (geteuid() == 0)
		assert_non_null(strstr(err, "it shares the gate's: bubblewrap must run with --unshare-net"));
	close(ctl[1]);
	waitpid(kid, NULL, 0);
	/* a process that is gone */
	sb = tgi_netproxy_attach(p, kid, a, NULL, NULL, err, sizeof err);
	assert_null(sb);
	assert_non_null(strstr(err, "gone"));
	tgi_netproxy_stats st;
	tgi_netproxy_get_stats(p, &st);
	assert_int_equal(st.sandboxes, 0);
	tgi_netallow_unref(a);
	tgi_netproxy_free(p);
}

/* ================================================================ the driver */

/*
 * test_netproxy --drive [--events FILE] [--no-userns] [--bind DIR]...
 *               [--allow ENTRY]... -- COMMAND...
 * Runs COMMAND under bubblewrap (its own network, pid, user namespaces, /
 * read-only, a private /tmp) with the proxy attached as the sandbox will do
 * it; prints one line per event to FILE ("why status method host port");
 * exits with COMMAND's status.
 */
static int drive(int argc, char **argv)
{
	const char *events = NULL, *allowv[64], *binds[16];
	int nallow = 0, nbind = 0, userns = 1, i = 2;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events = argv[++i];
		else if (!strcmp(argv[i], "--allow") && i + 1 < argc && nallow < 64)
			allowv[nallow++] = argv[++i];
		else if (!strcmp(argv[i], "--bind") && i + 1 < argc && nbind < 16)
			binds[nbind++] = argv[++i];
		else if (!strcmp(argv[i], "--no-userns"))
			userns = 0;
		else {
			fprintf(stderr, "drive: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "drive: no command\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	char err[512];
	tgi_netallow *allow;
	if (tgi_netallow_new(allowv, (size_t)nallow, &allow, err, sizeof err) < 0) {
		fprintf(stderr, "drive: %s\n", err);
		return 2;
	}
	tgi_netproxy *p = tgi_netproxy_new(NULL, err, sizeof err);
	if (!p) {
		fprintf(stderr, "drive: %s\n", err);
		return 2;
	}
	int info[2], block[2];
	if (pipe2(info, O_CLOEXEC) < 0 || pipe2(block, O_CLOEXEC) < 0)
		return 2;
	char infos[16], blocks[16];
	const char *bargv[96];
	int n = 0;
	bargv[n++] = "bwrap";
	static const char *const base[] = {
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
	};
	for (size_t k = 0; k < TGI_ARRAY_LEN(base); k++)
		bargv[n++] = base[k];
	if (userns)
		bargv[n++] = "--unshare-user";
	for (int k = 0; k < nbind; k++) {
		bargv[n++] = "--ro-bind";
		bargv[n++] = binds[k];
		bargv[n++] = binds[k];
	}
	snprintf(infos, sizeof infos, "%d", info[1]);
	snprintf(blocks, sizeof blocks, "%d", block[0]);
	bargv[n++] = "--info-fd";
	bargv[n++] = infos;
	bargv[n++] = "--block-fd";
	bargv[n++] = blocks;
	bargv[n++] = "--";
	for (char **c = cmd; *c && n < 94; c++)
		bargv[n++] = *c;
	bargv[n] = NULL;
	const char *envp[16];
	int ne = 0;
	for (const char *const *e = tgi_netproxy_env; *e; e++)
		envp[ne++] = *e;
	envp[ne++] = "PATH=/usr/local/bin:/usr/bin:/bin";
	envp[ne++] = "HOME=/tmp";
	envp[ne++] = "LC_ALL=C";
	envp[ne] = NULL;

	fflush(NULL);
	pid_t bw = fork();
	if (bw == 0) {
		fcntl(info[1], F_SETFD, 0);
		fcntl(block[0], F_SETFD, 0);
		execve("/usr/bin/bwrap", (char *const *)bargv, (char *const *)envp);
		_exit(127);
	}
	close(info[1]);
	close(block[0]);
	char text[1024];
	int tn = read_full(info[0], text, sizeof text - 1, NULL, 10000);
	close(info[0]);
	pid_t pid = tgi_netproxy_info_pid(text, tn < 0 ? 0 : (size_t)tn);
	seen ev = {.n = 0};
	pthread_mutex_init(&ev.mu, NULL);
	tgi_netsb *sb = pid > 0 ? tgi_netproxy_attach(p, pid, allow, on_event, &ev, err, sizeof err)
	                        : NULL;
	if (!sb) {
		fprintf(stderr, "drive: %s\n", pid > 0 ? err : "bwrap told no child-pid");
		kill(bw, SIGKILL);
		waitpid(bw, NULL, 0);
		return 3;
	}
	if (write(block[1], "g", 1) != 1)
		return 3;
	close(block[1]);
	int st = 0;
	while (waitpid(bw, &st, 0) < 0 && errno == EINTR)
		;
	tgi_netproxy_detach(sb);
	tgi_netproxy_free(p);
	tgi_netallow_unref(allow);
	if (events) {
		FILE *f = fopen(events, "w");
		for (int k = 0; f && k < ev.n && k < 64; k++)
			fprintf(f, "%s %d %s %s %u\n", tgi_netwhy_code((tgi_netwhy)ev.e[k].why),
			        ev.e[k].status, ev.e[k].method[0] ? ev.e[k].method : "-",
			        ev.e[k].host[0] ? ev.e[k].host : "-", ev.e[k].port);
		if (f)
			fclose(f);
	}
	pthread_mutex_destroy(&ev.mu);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--drive"))
		return drive(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_norm),
		cmocka_unit_test(test_allow_entries),
		cmocka_unit_test(test_allow_match),
		cmocka_unit_test(test_special_addr),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_info_pid),
		cmocka_unit_test(test_proxy_connect),
		cmocka_unit_test(test_proxy_plain_http),
		cmocka_unit_test(test_proxy_refusals),
		cmocka_unit_test(test_proxy_slow),
		cmocka_unit_test(test_proxy_caps),
		cmocka_unit_test(test_proxy_bulk),
		cmocka_unit_test(test_proxy_detach),
		cmocka_unit_test(test_forwarder_userns),
		cmocka_unit_test(test_forwarder_root_netns),
		cmocka_unit_test(test_forwarder_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
