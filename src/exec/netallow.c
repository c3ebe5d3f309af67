/*
 * netallow.c — the host allow-list of a sandbox with `network: [hosts]`,
 * and the host normalisation that the request parser shares with it.
 *
 * An entry is `host` (ports 80 and 443), `host:port`, `*.domain` or
 * `*.domain:port` (any name ending in ".domain", never "domain" itself; the
 * domain has at least two labels), or an IP literal with or without a port
 * (`10.0.0.5`, `[::1]:8080`).  A name matches only names, an address only
 * the same address: a name that resolves to a listed address is not
 * allowed by it, and an address is never allowed by a name.
 *
 * Names are normalised the way resolvers see them: IDNA mapping for
 * entries written in Unicode (NFKC with case folding, the ideographic full
 * stops read as dots, each non-ASCII label punycode-encoded with "xn--"),
 * ASCII lower-cased, one trailing dot dropped.  Anything a resolver could
 * read as a number in another spelling is refused, so that no spelling of
 * an address passes as a name.
 *
 * Owns: the compiled list (immutable once made, shared by reference).
 * Must not: resolve anything, or know where the list came from.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "exec/netproxy.h"
#include "util/util.h"

#define MAX_ENTRIES 1024
#define MAX_LABEL   63
#define MAX_NAME    253

const char *const tgi_netproxy_env[] = {
	"HTTP_PROXY=" TGI_NETPROXY_URL,  "HTTPS_PROXY=" TGI_NETPROXY_URL,
	"ALL_PROXY=" TGI_NETPROXY_URL,   "http_proxy=" TGI_NETPROXY_URL,
	"https_proxy=" TGI_NETPROXY_URL, "all_proxy=" TGI_NETPROXY_URL,
	"NO_PROXY=localhost,127.0.0.1",  "no_proxy=localhost,127.0.0.1",
	"NODE_USE_ENV_PROXY=1",          /* Node's fetch and http honour the above only so */
	NULL,
};

/* ---- punycode (RFC 3492), the encoder only ---- */

enum { PC_BASE = 36, PC_TMIN = 1, PC_TMAX = 26, PC_SKEW = 38, PC_DAMP = 700,
       PC_BIAS = 72, PC_N = 128 };

static char pc_digit(uint32_t d)
{
	return (char)(d < 26 ? 'a' + d : '0' + (d - 26));
}

static uint32_t pc_adapt(uint32_t delta, uint32_t points, int first)
{
	delta = first ? delta / PC_DAMP : delta / 2;
	delta += delta / points;
	uint32_t k = 0;
	while (delta > ((PC_BASE - PC_TMIN) * PC_TMAX) / 2) {
		delta /= PC_BASE - PC_TMIN;
		k += PC_BASE;
	}
	return k + (PC_BASE - PC_TMIN + 1) * delta / (delta + PC_SKEW);
}

/* n code points into out (cap bytes, NUL added): its length or -1. */
static int punycode(const uint32_t *in, size_t n, char *out, size_t cap)
{
	size_t o = 0, basic = 0;
	for (size_t j = 0; j < n; j++)
		if (in[j] < 0x80) {
			if (o + 1 >= cap)
				return -1;
			out[o++] = (char)in[j];
			basic++;
		}
	size_t h = basic;
	if (basic) {
		if (o + 1 >= cap)
			return -1;
		out[o++] = '-';
	}
	uint32_t cp = PC_N, bias = PC_BIAS;
	uint64_t delta = 0;
	while (h < n) {
		uint32_t m = UINT32_MAX;
		for (size_t j = 0; j < n; j++)
			if (in[j] >= cp && in[j] < m)
				m = in[j];
		delta += (uint64_t)(m - cp) * (h + 1);
		if (delta > UINT32_MAX)
			return -1;
		cp = m;
		for (size_t j = 0; j < n; j++) {
			if (in[j] < cp && ++delta > UINT32_MAX)
				return -1;
			if (in[j] != cp)
				continue;
			uint32_t q = (uint32_t)delta;
			for (uint32_t k = PC_BASE;; k += PC_BASE) {
				uint32_t t = k <= bias ? PC_TMIN : k >= bias + PC_TMAX ? PC_TMAX : k - bias;
				if (q < t)
					break;
				if (o + 1 >= cap)
					return -1;
				out[o++] = pc_digit(t + (q - t) % (PC_BASE - t));
				q = (q - t) / (PC_BASE - t);
			}
			if (o + 1 >= cap)
				return -1;
			out[o++] = pc_digit(q);
			bias = pc_adapt((uint32_t)delta, (uint32_t)(h + 1), h == basic);
			delta = 0;
			h++;
		}
		delta++;
		cp++;
	}
	out[o] = '\0';
	return (int)o;
}

/* A Unicode name (UTF-8, NUL-terminated) as IDNA would send it: mapped,
 * then each non-ASCII label punycode-encoded.  0 or -1 with why. */
static int idna_ascii(const char *in, char *out, size_t cap, const char **why)
{
	utf8proc_uint8_t *mapped = NULL;
	utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)in, 0, &mapped,
	                                  UTF8PROC_NULLTERM | UTF8PROC_STABLE |
	                                  UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
	                                  UTF8PROC_CASEFOLD | UTF8PROC_IGNORE |
	                                  UTF8PROC_REJECTNA);
	if (m < 0) {
		*why = "it is not valid UTF-8 or holds unassigned characters";
		return -1;
	}
	size_t o = 0;
	utf8proc_ssize_t i = 0;
	uint32_t label[MAX_LABEL + 1];
	size_t ln = 0;
	int ascii = 1, rc = 0;
	for (;;) {
		utf8proc_int32_t c = 0;
		utf8proc_ssize_t k = i < m ? utf8proc_iterate(mapped + i, m - i, &c) : 0;
		if (k < 0) {
			*why = "it is not valid UTF-8";
			rc = -1;
			break;
		}
		/* the full stops IDNA reads as dots: U+3002, U+FF0E, U+FF61 */
		int dot = k == 0 || c == '.' || c == 0x3002 || c == 0xFF0E || c == 0xFF61;
		if (!dot) {
			if (ln == MAX_LABEL + 1) {
				*why = "a label is longer than 63 characters";
				rc = -1;
				break;
			}
			if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
				*why = "it holds control characters";
				rc = -1;
				break;
			}
			label[ln++] = (uint32_t)c;
			ascii &= c < 0x80;
			i += k;
			continue;
		}
		if (ascii) {
			if (o + ln + 2 > cap) {
				*why = "it is too long";
				rc = -1;
				break;
			}
			for (size_t j = 0; j < ln; j++)
				out[o++] = (char)label[j];
		} else {
			if (o + 4 + 2 > cap) {
				*why = "it is too long";
				rc = -1;
				break;
			}
			memcpy(out + o, "xn--", 4);
			int w = punycode(label, ln, out + o + 4, cap - o - 4);
			if (w < 0) {
				*why = "it is too long";
				rc = -1;
				break;
			}
			o += 4 + (size_t)w;
		}
		if (k == 0)
			break;
		out[o++] = '.';
		i += k;
		ln = 0;
		ascii = 1;
	}
	free(mapped);
	if (rc == 0)
		out[o] = '\0';
	return rc;
}

/* ---- host normalisation ---- */

static int all_digits(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int tgi_nethost_norm(const char *in, size_t n, int unicode, char *out, size_t cap,
                     tgi_nethost_kind *kind, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (cap < TGI_NETHOST_MAX) {
		*why = "internal: the output buffer is too small";
		return -1;
	}
	out[0] = '\0';
	if (n == 0) {
		*why = "the host is empty";
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (in[i] == '\0') {
			*why = "the host holds a NUL byte";
			return -1;
		}
	if (in[0] == '[') {
		char tmp[64];
		struct in6_addr a6;
		if (n < 3 || in[n - 1] != ']' || n - 2 >= sizeof tmp) {
			*why = "an IPv6 address in brackets is malformed";
			return -1;
		}
		memcpy(tmp, in + 1, n - 2);
		tmp[n - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) != 1) {
			*why = "an IPv6 address in brackets is malformed";
			return -1;
		}
		inet_ntop(AF_INET6, &a6, out, (socklen_t)cap);
		*kind = TGI_NETHOST_IPV6;
		return 0;
	}

	char name[MAX_NAME + 8];
	int wide = 0;
	for (size_t i = 0; i < n; i++)
		wide |= (unsigned char)in[i] >= 0x80;
	if (wide) {
		if (!unicode) {
			*why = "the host is not ASCII (send IDNA names punycode-encoded)";
			return -1;
		}
		char src[4 * MAX_NAME + 8];
		if (n >= sizeof src) {
			*why = "the host is too long";
			return -1;
		}
		memcpy(src, in, n);
		src[n] = '\0';
		if (idna_ascii(src, name, sizeof name, why) < 0)
			return -1;
	} else {
		if (n > MAX_NAME + 1) {
			*why = "the host is longer than 253 characters";
			return -1;
		}
		memcpy(name, in, n);
		name[n] = '\0';
	}
	size_t len = strlen(name);
	for (size_t i = 0; i < len; i++)
		if (name[i] >= 'A' && name[i] <= 'Z')
			name[i] = (char)(name[i] - 'A' + 'a');
	if (len && name[len - 1] == '.')
		name[--len] = '\0';
	if (len == 0 || len > MAX_NAME) {
		*why = len ? "the host is longer than 253 characters" : "the host is empty";
		return -1;
	}

	/* labels */
	const char *last = name;
	size_t last_len = 0;
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && name[i] != '.') {
			char c = name[i];
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
				*why = "the host holds a character that is not a letter, digit, '-', '_' or '.'";
				return -1;
			}
			continue;
		}
		size_t ll = i - start;
		if (ll == 0) {
			*why = "the host has an empty label";
			return -1;
		}
		if (ll > MAX_LABEL) {
			*why = "a label of the host is longer than 63 characters";
			return -1;
		}
		if (name[start] == '-' || name[i - 1] == '-') {
			*why = "a label of the host starts or ends with '-'";
			return -1;
		}
		last = name + start;
		last_len = ll;
		start = i + 1;
	}

	/* numbers: only a canonical dotted quad is an address; any other spelling
	 * a resolver would read as one is refused */
	struct in_addr a4;
	if (all_digits(last, last_len) || inet_aton(name, &a4)) {
		char canon[INET_ADDRSTRLEN];
		if (inet_pton(AF_INET, name, &a4) != 1 ||
		    !inet_ntop(AF_INET, &a4, canon, sizeof canon) || strcmp(canon, name)) {
			*why = "the host is a number in a form other than a dotted-quad IPv4 address";
			return -1;
		}
		memcpy(out, name, len + 1);
		*kind = TGI_NETHOST_IPV4;
		return 0;
	}
	memcpy(out, name, len + 1);
	*kind = TGI_NETHOST_NAME;
	return 0;
}

/* ---- the list ---- */

typedef struct entry {
	char             host[TGI_NETHOST_MAX]; /* the domain for a wildcard */
	size_t           len;
	tgi_nethost_kind kind;
	int              wildcard;
	unsigned         port;                  /* 0: 80 and 443 */
} entry;

struct tgi_netallow {
	int    refs;     /* atomic */
	size_t n;
	entry  e[];
};

/* Split "host[:port]" (brackets for IPv6) into host bytes and port. */
static int split(const char *s, const char **host, size_t *hn, unsigned *port, const char **why)
{
	size_t n = strlen(s);
	const char *colon = NULL;
	*port = 0;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close) {
			*why = "an IPv6 address has no closing ']'";
			return -1;
		}
		if (close[1] == ':')
			colon = close + 1;
		else if (close[1]) {
			*why = "only a port may follow an IPv6 address in brackets";
			return -1;
		}
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':')) {
			*why = "write an IPv6 address in brackets: [::1] or [::1]:443";
			return -1;
		}
	}
	*host = s;
	*hn = colon ? (size_t)(colon - s) : n;
	if (colon) {
		const char *p = colon + 1;
		unsigned long v = 0;
		size_t k = 0;
		for (; p[k] >= '0' && p[k] <= '9' && k < 6; k++)
			v = v * 10 + (unsigned long)(p[k] - '0');
		if (k == 0 || p[k] || v == 0 || v > 65535) {
			*why = "the port is not a number from 1 to 65535";
			return -1;
		}
		*port = (unsigned)v;
	}
	return 0;
}

static int compile_one(const char *s, entry *e, const char **why)
{
	memset(e, 0, sizeof *e);
	if (strstr(s, "://")) {
		*why = "write a host name, host:port or *.domain, without a scheme";
		return -1;
	}
	if (strchr(s, '/') || strchr(s, '@') || strchr(s, ' ') || strchr(s, '\t')) {
		*why = "write a host name, host:port or *.domain: no path, user or blanks";
		return -1;
	}
	if (!strcmp(s, "*") || !strncmp(s, "*:", 2)) {
		*why = "'*' would allow every host: use `network: true` for that";
		return -1;
	}
	if (!strncmp(s, "*.", 2)) {
		e->wildcard = 1;
		s += 2;
	} else if (strchr(s, '*')) {
		*why = "a wildcard is allowed only as a whole first label: *.example.com";
		return -1;
	}
	const char *h;
	size_t hn;
	if (split(s, &h, &hn, &e->port, why) < 0)
		return -1;
	if (tgi_nethost_norm(h, hn, 1, e->host, sizeof e->host, &e->kind, why) < 0)
		return -1;
	e->len = strlen(e->host);
	if (e->wildcard && e->kind != TGI_NETHOST_NAME) {
		*why = "a wildcard applies to names, not to addresses";
		return -1;
	}
	if (e->wildcard && !strchr(e->host, '.')) {
		*why = "a wildcard needs a domain of at least two labels (*.example.com)";
		return -1;
	}
	return 0;
}

int tgi_netallow_new(const char *const *entries, size_t n, tgi_netallow **out, char *err,
                     size_t errlen)
{
	*out = NULL;
	if (n > MAX_ENTRIES) {
		tgi_snprintf(err, errlen, "the network list has %zu entries; at most %d are allowed",
		             n, MAX_ENTRIES);
		return -1;
	}
	tgi_netallow *a = tgi_xcalloc(1, sizeof *a + n * sizeof(entry));
	a->refs = 1;
	for (size_t i = 0; i < n; i++) {
		const char *why = "it is empty";
		if (!entries[i] || !entries[i][0] || compile_one(entries[i], &a->e[a->n], &why) < 0) {
			char shown[96];
			tgi_sanitize_n(shown, sizeof shown, entries[i] ? entries[i] : "",
			               entries[i] ? strlen(entries[i]) : 0, 80);
			tgi_snprintf(err, errlen, "network entry %zu (\"%s\"): %s", i + 1, shown, why);
			free(a);
			return -1;
		}
		a->n++;
	}
	*out = a;
	return 0;
}

tgi_netallow *tgi_netallow_ref(tgi_netallow *a)
{
	if (a)
		__atomic_add_fetch(&a->refs, 1, __ATOMIC_RELAXED);
	return a;
}

void tgi_netallow_unref(tgi_netallow *a)
{
	if (a && __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(a);
}

static int port_ok(const entry *e, unsigned port)
{
	return e->port ? e->port == port : (port == 80 || port == 443);
}

static int host_ok(const entry *e, const char *host, size_t hl, tgi_nethost_kind kind)
{
	if (e->kind != kind)
		return 0;
	if (!e->wildcard)
		return hl == e->len && !memcmp(host, e->host, hl);
	/* "*.example.com": a non-empty label, a dot, then the domain */
	return hl > e->len + 1 && host[hl - e->len - 1] == '.' &&
	       !memcmp(host + hl - e->len, e->host, e->len);
}

tgi_netallow_verdict tgi_netallow_match(const tgi_netallow *a, const char *host,
                                        tgi_nethost_kind kind, unsigned port)
{
	tgi_netallow_verdict v = TGI_NETALLOW_NO_HOST;
	if (!a || !host || !host[0] || port == 0 || port > 65535)
		return v;
	size_t hl = strlen(host);
	for (size_t i = 0; i < a->n; i++) {
		if (!host_ok(&a->e[i], host, hl, kind))
			continue;
		if (!port_ok(&a->e[i], port)) {
			if (v == TGI_NETALLOW_NO_HOST)
				v = TGI_NETALLOW_NO_PORT;
			continue;
		}
		if (!a->e[i].wildcard)
			return TGI_NETALLOW_YES;
		v = TGI_NETALLOW_WILDCARD;
	}
	return v;
}

static int special4(uint32_t a)
{
	return (a >> 24) == 0 || (a >> 24) == 127 || (a >> 16) == 0xa9fe ||   /* 0/8 127/8 169.254/16 */
	       (a >> 28) == 0xe || a == 0xffffffffu ||                        /* 224/4, broadcast */
	       a == 0x646464c8u;                                              /* 100.100.100.200 */
}

int tgi_netaddr_special(const struct sockaddr *sa)
{
	if (!sa)
		return 1;
	if (sa->sa_family == AF_INET)
		return special4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return 1;
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	static const unsigned char ec2[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
	                                      0,    0,    0,    0,    0, 0, 0x02, 0x54};
	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
		uint32_t v4;
		memcpy(&v4, a->s6_addr + 12, 4);
		return special4(ntohl(v4));
	}
	return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
	       IN6_IS_ADDR_MULTICAST(a) || IN6_IS_ADDR_SITELOCAL(a) || !memcmp(a->s6_addr, ec2, 16);
}

json_t *tgi_netallow_json(const tgi_netallow *a)
{
	json_t *arr = json_array();
	for (size_t i = 0; a && i < a->n; i++) {
		const entry *e = &a->e[i];
		char text[TGI_NETHOST_MAX + 32];
		int v6 = e->kind == TGI_NETHOST_IPV6;
		char port[16];
		if (e->port)
			tgi_snprintf(port, sizeof port, "%u", e->port);
		else
			tgi_snprintf(port, sizeof port, "80,443");
		tgi_snprintf(text, sizeof text, "%s%s%s%s:%s", e->wildcard ? "*." : "", v6 ? "[" : "",
		             e->host, v6 ? "]" : "", port);
		json_array_append_new(arr, json_string(text));
	}
	return arr;
}
