/*
 * nethead.c — the one request head a sandbox's proxy connection starts
 * with, and the rewrite of a plain HTTP request for the origin server.
 *
 * Accepted, and nothing else:
 *   CONNECT host:port HTTP/1.x          (authority-form, port required)
 *   METHOD http://host[:port][/path][?query] HTTP/1.x
 *                                        (absolute-form; METHOD one of GET,
 *                                         HEAD, POST, PUT, DELETE, OPTIONS,
 *                                         PATCH; port 80 when absent)
 * followed by header lines and an empty line, every line ending in CRLF.
 * Refused: a first byte that starts no method (TLS, SSH, binary: at once,
 * without waiting for more), origin-form and `*` targets, https:// and
 * other schemes in absolute-form, user info in the authority, fragments,
 * other methods, versions but 1.0 and 1.1, bare LF or CR, obsolete line
 * folding, control bytes, header names that are not tokens, blanks
 * before a colon, more than 100 header lines, a head longer than max.
 * Hosts are normalised by tgi_nethost_norm (ASCII only: clients send IDNA
 * names punycode-encoded).
 *
 * Owns: nothing beyond its arguments.  Must not: allocate, or judge the
 * host (netallow.c does).
 */
#include <string.h>

#include "exec/netproxy.h"
#include "util/util.h"

#define MAX_HEADERS 100

static const struct { const char *code, *text; int status; } whys[] = {
#define X(e, status, code, text) {code, text, status},
	TGI_NETWHY_MAP(X)
#undef X
};

const char *tgi_netwhy_code(tgi_netwhy w)
{
	return (size_t)w < TGI_ARRAY_LEN(whys) ? whys[w].code : "unknown";
}

const char *tgi_netwhy_text(tgi_netwhy w)
{
	return (size_t)w < TGI_ARRAY_LEN(whys) ? whys[w].text : "unknown";
}

int tgi_netwhy_status(tgi_netwhy w)
{
	return (size_t)w < TGI_ARRAY_LEN(whys) ? whys[w].status : 500;
}

static const char *const plain_methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE",
                                            "OPTIONS", "PATCH"};

static int tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static tgi_netreq_kind bad(tgi_netreq *r, tgi_netwhy why)
{
	r->kind = TGI_NETREQ_BAD;
	r->why = why;
	return r->kind;
}

/* The start of what arrived: is it still a request line that could be
 * valid?  Checks the method bytes and that no control byte comes before
 * the first CR.  0 or a reason. */
static tgi_netwhy prefix_check(const char *b, size_t len)
{
	size_t i = 0;
	for (; i < len && b[i] != ' '; i++)
		if (b[i] < 'A' || b[i] > 'Z' || i >= 15)
			return TGI_NETWHY_NOT_HTTP;
	if (i < len && i == 0)
		return TGI_NETWHY_NOT_HTTP;
	for (; i < len && b[i] != '\r'; i++)
		if ((unsigned char)b[i] < 0x20 || (unsigned char)b[i] >= 0x7f)
			return TGI_NETWHY_MALFORMED;
	return TGI_NETWHY_OK;
}

/* host[:port] of n bytes: normalised into r->host, port into *port (0 when
 * absent).  0 or -1. */
static int authority(const char *a, size_t n, tgi_netreq *r, unsigned *port)
{
	size_t hn = n;
	*port = 0;
	if (n && a[0] == '[') {
		const char *close = memchr(a, ']', n);
		if (!close)
			return -1;
		hn = (size_t)(close - a) + 1;
		if (hn < n && a[hn] != ':')
			return -1;
	} else {
		const char *colon = memchr(a, ':', n);
		if (colon)
			hn = (size_t)(colon - a);
	}
	if (hn < n) {
		const char *p = a + hn + 1;
		size_t pn = n - hn - 1;
		unsigned long v = 0;
		if (pn == 0 || pn > 5)
			return -1;
		for (size_t i = 0; i < pn; i++) {
			if (p[i] < '0' || p[i] > '9')
				return -1;
			v = v * 10 + (unsigned long)(p[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -1;
		*port = (unsigned)v;
	}
	const char *why;
	return tgi_nethost_norm(a, hn, 0, r->host, sizeof r->host, &r->host_kind, &why);
}

static int ieq_prefix(const char *s, size_t n, const char *p)
{
	size_t pn = strlen(p);
	if (n < pn)
		return 0;
	for (size_t i = 0; i < pn; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != p[i])
			return 0;
	}
	return 1;
}

/* The request target of a non-CONNECT method. */
static tgi_netreq_kind absolute_form(const char *b, size_t t0, size_t tn, tgi_netreq *r)
{
	const char *t = b + t0;
	if (tn && (t[0] == '/' || (tn == 1 && t[0] == '*')))
		return bad(r, TGI_NETWHY_ORIGIN_FORM);
	if (!ieq_prefix(t, tn, "http://")) {
		const char *colon = memchr(t, ':', tn);
		if (colon && (size_t)(colon - t) + 2 < tn && colon[1] == '/' && colon[2] == '/')
			return bad(r, TGI_NETWHY_SCHEME);
		return bad(r, TGI_NETWHY_ORIGIN_FORM);
	}
	size_t a0 = 7, a1 = a0;
	while (a1 < tn && t[a1] != '/' && t[a1] != '?' && t[a1] != '#')
		a1++;
	if (memchr(t + a0, '@', a1 - a0) || memchr(t, '#', tn) || a1 == a0)
		return bad(r, TGI_NETWHY_MALFORMED);
	unsigned port;
	if (authority(t + a0, a1 - a0, r, &port) < 0)
		return bad(r, TGI_NETWHY_MALFORMED);
	r->port = port ? port : 80;
	r->path_off = t0 + a1;
	r->path_len = tn - a1;
	r->query_only = r->path_len && t[a1] == '?';
	r->kind = TGI_NETREQ_HTTP;
	return r->kind;
}

tgi_netreq_kind tgi_netreq_parse(const char *b, size_t len, size_t max, tgi_netreq *r)
{
	memset(r, 0, sizeof *r);
	r->kind = TGI_NETREQ_MORE;
	if (len > max)
		len = max;
	tgi_netwhy early = prefix_check(b, len);
	if (early != TGI_NETWHY_OK)
		return bad(r, early);

	/* the end of the head */
	size_t end = 0;
	for (size_t i = 3; i < len; i++)
		if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') {
			end = i + 1;
			break;
		}
	if (!end)
		return len >= max ? bad(r, TGI_NETWHY_TOO_LARGE) : r->kind;
	r->head_len = end;

	/* the request line: METHOD SP target SP HTTP/1.x CRLF */
	const char *le = memchr(b, '\r', end);
	size_t ll = (size_t)(le - b);
	if (b[ll + 1] != '\n')
		return bad(r, TGI_NETWHY_MALFORMED);
	const char *sp1 = memchr(b, ' ', ll);
	if (!sp1)
		return bad(r, TGI_NETWHY_NOT_HTTP);
	size_t mn = (size_t)(sp1 - b);
	memcpy(r->method, b, mn);
	r->method[mn] = '\0';
	const char *sp2 = memchr(sp1 + 1, ' ', ll - mn - 1);
	if (!sp2 || sp2 == sp1 + 1)
		return bad(r, TGI_NETWHY_MALFORMED);
	size_t t0 = mn + 1, tn = (size_t)(sp2 - b) - t0;
	size_t vn = ll - (size_t)(sp2 - b) - 1;
	const char *v = sp2 + 1;
	if (vn != 8 || memcmp(v, "HTTP/1.", 7) || (v[7] != '0' && v[7] != '1'))
		return bad(r, TGI_NETWHY_MALFORMED);
	r->minor = v[7] - '0';

	/* the header lines */
	size_t nh = 0;
	for (size_t i = ll + 2; i < end - 2;) {
		const char *cr = memchr(b + i, '\r', end - i);
		size_t j = (size_t)(cr - b);         /* the line is b[i..j) */
		if (b[j + 1] != '\n' || j == i)
			return bad(r, TGI_NETWHY_MALFORMED);
		if (++nh > MAX_HEADERS)
			return bad(r, TGI_NETWHY_TOO_LARGE);
		size_t k = i;
		while (k < j && tchar((unsigned char)b[k]))
			k++;
		if (k == i || k == j || b[k] != ':')
			return bad(r, TGI_NETWHY_MALFORMED);
		for (k++; k < j; k++) {
			unsigned char c = (unsigned char)b[k];
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return bad(r, TGI_NETWHY_MALFORMED);
		}
		i = j + 2;
	}

	/* what the request asks for */
	if (!strcmp(r->method, "CONNECT")) {
		unsigned port;
		if (ieq_prefix(b + t0, tn, "http://") || memchr(b + t0, '/', tn) ||
		    memchr(b + t0, '@', tn) || authority(b + t0, tn, r, &port) < 0 || !port)
			return bad(r, TGI_NETWHY_MALFORMED);
		r->port = port;
		r->kind = TGI_NETREQ_CONNECT;
		return r->kind;
	}
	int plain = 0;
	for (size_t i = 0; i < TGI_ARRAY_LEN(plain_methods); i++)
		plain |= !strcmp(r->method, plain_methods[i]);
	if (!plain)
		return bad(r, TGI_NETWHY_METHOD);
	return absolute_form(b, t0, tn, r);
}

/* Is the header line b[0..n) named name (case-insensitively)? */
static int header_is(const char *b, size_t n, const char *name)
{
	size_t k = strlen(name);
	return n > k && b[k] == ':' && ieq_prefix(b, n, name);
}

static int put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (*o + n > cap)
		return -1;
	memcpy(out + *o, s, n);
	*o += n;
	return 0;
}

long tgi_netreq_rewrite(const char *b, const tgi_netreq *r, char *out, size_t cap)
{
	static const char *const dropped[] = {"host", "connection", "keep-alive",
	                                      "proxy-connection", "proxy-authorization",
	                                      "upgrade", "te"};
	if (r->kind != TGI_NETREQ_HTTP)
		return -1;
	size_t o = 0;
	char line[TGI_NETHOST_MAX + 64];
	int v6 = r->host_kind == TGI_NETHOST_IPV6;
	size_t mn = strlen(r->method);
	if (put(out, cap, &o, r->method, mn) || put(out, cap, &o, " ", 1))
		return -1;
	if ((!r->path_len || r->query_only) && put(out, cap, &o, "/", 1))
		return -1;
	if (put(out, cap, &o, b + r->path_off, r->path_len))
		return -1;
	tgi_snprintf(line, sizeof line, " HTTP/1.%d\r\n", r->minor);
	if (put(out, cap, &o, line, strlen(line)))
		return -1;
	if (r->port == 80)
		tgi_snprintf(line, sizeof line, "Host: %s%s%s\r\n", v6 ? "[" : "", r->host,
		             v6 ? "]" : "");
	else
		tgi_snprintf(line, sizeof line, "Host: %s%s%s:%u\r\n", v6 ? "[" : "", r->host,
		             v6 ? "]" : "", r->port);
	if (put(out, cap, &o, line, strlen(line)))
		return -1;

	const char *le = memchr(b, '\r', r->head_len);
	for (size_t i = (size_t)(le - b) + 2; i + 2 < r->head_len;) {
		const char *cr = memchr(b + i, '\r', r->head_len - i);
		size_t j = (size_t)(cr - b);
		int drop = 0;
		for (size_t d = 0; d < TGI_ARRAY_LEN(dropped) && !drop; d++)
			drop = header_is(b + i, j - i, dropped[d]);
		if (!drop && put(out, cap, &o, b + i, j - i + 2))
			return -1;
		i = j + 2;
	}
	static const char tail[] = "Connection: close\r\n\r\n";
	if (put(out, cap, &o, tail, sizeof tail - 1))
		return -1;
	return (long)o;
}
