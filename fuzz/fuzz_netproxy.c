/*
 * fuzz_netproxy.c — libFuzzer target for what the network proxy reads from
 * a sandbox (src/exec/nethead.c) and the host list it is configured with
 * (src/exec/netallow.c).
 *
 * Input: any bytes, read three ways.
 *   1. As the start of a connection, with the full limit and with a small
 *      one (64 + the first byte): a result is one of the four kinds; MORE
 *      only below the limit; a refusal carries a reason with a 4xx status;
 *      an accepted head lies within the input and the limit, ends in
 *      CRLFCRLF, has a printable normalised host that normalises to itself
 *      and a port from 1 to 65535, and every shorter prefix of it is MORE;
 *      a plain request rewrites within head_len + TGI_NETREQ_REWRITE_EXTRA
 *      into origin-form with one Host line.
 *   2. As a host (IDNA allowed): a result normalises to itself.
 *   3. As a host list, one entry a line: a compiled list matches what the
 *      input's lines normalise to without crashing, and describes itself.
 * Any crash, leak, hang or sanitizer report is a bug.
 *
 * Owns: nothing beyond one input.  Must not: open sockets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/netproxy.h"
#include "fuzz.h"

#define INPUT_MAX 20000

static void head(const char *b, size_t n, size_t max)
{
	tgi_netreq r;
	tgi_netreq_kind k = tgi_netreq_parse(b, n, max, &r);
	check(k == TGI_NETREQ_MORE || k == TGI_NETREQ_CONNECT || k == TGI_NETREQ_HTTP ||
	      k == TGI_NETREQ_BAD);
	check(k == r.kind);
	if (k == TGI_NETREQ_MORE) {
		check(n < max);
		return;
	}
	if (k == TGI_NETREQ_BAD) {
		int st = tgi_netwhy_status(r.why);
		check(r.why != TGI_NETWHY_OK && st >= 400 && st < 500);
		check(printable(tgi_netwhy_text(r.why)));
		return;
	}
	check(r.head_len >= 4 && r.head_len <= n && r.head_len <= max);
	check(!memcmp(b + r.head_len - 4, "\r\n\r\n", 4));
	check(r.host[0] && printable(r.host) && strlen(r.host) < TGI_NETHOST_MAX);
	check(r.port >= 1 && r.port <= 65535);
	check(r.minor == 0 || r.minor == 1);
	char again[TGI_NETHOST_MAX];
	tgi_nethost_kind kind;
	if (r.host_kind == TGI_NETHOST_IPV6) {
		char br[TGI_NETHOST_MAX + 2];
		size_t hl = strlen(r.host);
		br[0] = '[';
		memcpy(br + 1, r.host, hl);
		br[hl + 1] = ']';
		check(tgi_nethost_norm(br, hl + 2, 0, again, sizeof again, &kind, NULL) == 0);
	} else {
		check(tgi_nethost_norm(r.host, strlen(r.host), 0, again, sizeof again, &kind, NULL) == 0);
	}
	check(!strcmp(again, r.host) && kind == r.host_kind);
	/* shorter prefixes are still coming */
	size_t cuts[] = {r.head_len - 1, r.head_len / 2, 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		tgi_netreq p;
		if (cuts[i] && cuts[i] < r.head_len)
			check(tgi_netreq_parse(b, cuts[i], max, &p) == TGI_NETREQ_MORE);
	}
	if (k != TGI_NETREQ_HTTP)
		return;
	size_t cap = r.head_len + TGI_NETREQ_REWRITE_EXTRA;
	char *out = malloc(cap + 1);
	long w = tgi_netreq_rewrite(b, &r, out, cap);
	check(w > 0 && (size_t)w <= cap);
	out[w] = '\0';
	size_t ml = strlen(r.method);
	check(!memcmp(out, r.method, ml) && out[ml] == ' ' && out[ml + 1] == '/');
	check(!memcmp(out + w - 4, "\r\n\r\n", 4));
	char *host = strstr(out, "\r\nHost: ");
	check(host && !strstr(host + 1, "\r\nHost: "));
	check(strstr(out, "\r\nConnection: close\r\n\r\n") != NULL);
	free(out);
}

static void hosts(const char *b, size_t n)
{
	char out[TGI_NETHOST_MAX], again[TGI_NETHOST_MAX];
	tgi_nethost_kind kind, k2;
	const char *why = NULL;
	if (tgi_nethost_norm(b, n, 1, out, sizeof out, &kind, &why) < 0) {
		check(why && printable(why));
		return;
	}
	check(printable(out));
	if (kind == TGI_NETHOST_IPV6)
		return;
	check(tgi_nethost_norm(out, strlen(out), 0, again, sizeof again, &k2, NULL) == 0);
	check(!strcmp(again, out) && k2 == kind);
}

static void list(const char *b, size_t n)
{
	char *copy = malloc(n + 1);
	memcpy(copy, b, n);
	copy[n] = '\0';
	const char *entries[64];
	size_t ne = 0;
	for (char *s = copy, *nl; s && ne < 64; s = nl) {
		nl = strchr(s, '\n');
		if (nl)
			*nl++ = '\0';
		entries[ne++] = s;
	}
	tgi_netallow *a = NULL;
	char err[512];
	err[0] = '\0';
	if (tgi_netallow_new(entries, ne, &a, err, sizeof err) < 0) {
		check(a == NULL && err[0] && printable(err));
		free(copy);
		return;
	}
	for (size_t i = 0; i < ne; i++) {
		char h[TGI_NETHOST_MAX];
		tgi_nethost_kind kind;
		const char *e = entries[i][0] == '*' && entries[i][1] == '.' ? entries[i] + 2 : entries[i];
		if (tgi_nethost_norm(e, strcspn(e, ":"), 1, h, sizeof h, &kind, NULL) == 0) {
			tgi_netallow_verdict v = tgi_netallow_match(a, h, kind, 443);
			check(v == TGI_NETALLOW_YES || v == TGI_NETALLOW_WILDCARD || v == TGI_NETALLOW_NO_HOST ||
			      v == TGI_NETALLOW_NO_PORT);
		}
	}
	json_t *j = tgi_netallow_json(a);
	check(json_array_size(j) == ne);
	json_decref(j);
	tgi_netallow_unref(a);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		size = INPUT_MAX;
	const char *b = (const char *)data;
	head(b, size, 16384);
	if (size)
		head(b, size, 64 + data[0]);
	hosts(b, size);
	list(b, size);
	return 0;
}
