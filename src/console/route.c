/*
 * route.c — the console's request line and bodies as data (console.h).
 *
 * A target is "/path?query" exactly as the request line carried it.  The
 * path is cut at each '/' and every segment percent-decoded on its own
 * (so "%2F" in a session id stays inside that segment); the query and a
 * POST's application/x-www-form-urlencoded body are "name=value" pairs
 * joined by '&', '+' meaning a space, percent-decoded.  Everything that
 * comes out is NUL-free, valid UTF-8 (no overlong forms, no surrogates,
 * nothing past U+10FFFF) and bounded: TARGET_MAX bytes of target,
 * TGC_MAX_PARAMS pairs, TGC_MAX_VALUE bytes per decoded name or value.
 * The argument of a path is checked for what it names: an approval or op
 * id is a UUID (lower-cased), a session id 1 to SESSION_MAX printable
 * bytes, an asset one of the embedded files' names.
 *
 *   "/"                          TGC_ROOT       GET
 *   "/login"                     TGC_LOGIN      GET POST
 *   "/live" "/events" "/approvals" "/stats" "/sessions"   GET
 *   "/approvals/<uuid>/approve"  TGC_DECIDE     POST   (and ".../deny")
 *   "/calls/<uuid>" "/spill/<uuid>" "/sessions/<id>" "/static/<asset>"  GET
 *
 * HEAD goes wherever GET goes.
 *
 * Owns: the decoded copies in a tgc_request.  Must not: do I/O, look at
 * headers, cookies or the ledger, or decide who may see a page.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "console/console.h"

#define TARGET_MAX   8192   /* bytes of a request target */
#define SEGMENTS_MAX 4      /* the longest path routed: /approvals/<id>/approve */
#define SESSION_MAX  200    /* bytes of a session id */
#define SHOWN_MAX    60     /* bytes of outside text echoed in a sentence */

enum { M_GET = 1, M_POST = 2 };

/* ---- decoding ---- */

/*
 * Is s[0..n) valid UTF-8: shortest forms only, no surrogates, at most
 * U+10FFFF?  (NUL is checked by the caller.)
 */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t k;
		unsigned cp, min;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			k = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return 0;
		}
		if (n - i <= k)
			return 0;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
}

/* What went wrong with a piece of outside text, said with the piece (cut,
 * control characters replaced). */
static int refuse(char *err, size_t errlen, const char *what, const char *s, size_t n)
{
	char shown[SHOWN_MAX + 8];
	tgi_sanitize_n(shown, sizeof shown, s, n, SHOWN_MAX);
	tgi_snprintf(err, errlen, "%s in \"%s\"", what, shown);
	return -1;
}

/*
 * Percent-decode s[0..n) (plus: '+' is a space) into a new string (caller
 * frees): NUL-terminated, no NUL inside, valid UTF-8, at most TGC_MAX_VALUE
 * bytes.  NULL with a sentence in err (what: "the query", "a path segment").
 */
static char *decode(const char *s, size_t n, int plus, const char *what, char *err,
                    size_t errlen)
{
	char *out = tgi_xmalloc(n + 1);
	size_t len = 0;
	char why[96];
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (n - i < 3 || tgi_hex_value(s[i + 1]) < 0 || tgi_hex_value(s[i + 2]) < 0) {
				tgi_snprintf(why, sizeof why, "a '%%' not followed by two hex digits in %s", what);
				goto bad;
			}
			c = (char)(tgi_hex_value(s[i + 1]) << 4 | tgi_hex_value(s[i + 2]));
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (c == '\0') {
			tgi_snprintf(why, sizeof why, "a NUL byte in %s", what);
			goto bad;
		}
		out[len++] = c;
	}
	out[len] = '\0';
	if (len > TGC_MAX_VALUE) {
		tgi_snprintf(why, sizeof why, "more than %d bytes in one value of %s", TGC_MAX_VALUE,
		             what);
		goto bad;
	}
	if (!utf8_valid((const unsigned char *)out, len)) {
		tgi_snprintf(why, sizeof why, "text that is not UTF-8 in %s", what);
		goto bad;
	}
	return out;
bad:
	free(out);
	refuse(err, errlen, why, s, n);
	return NULL;
}

/* ---- name=value pairs ---- */

static void params_free(tgc_params *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].name);
		free(p->v[i].value);
	}
	p->n = 0;
}

/*
 * The pairs of s[0..n) into out (empty on entry): pairs are cut at '&',
 * a pair without '=' has the value "", empty pairs and pairs without a
 * name are skipped.  0, or -1 with a sentence (out left empty).
 */
static int parse_pairs(const char *s, size_t n, const char *what, tgc_params *out, char *err,
                       size_t errlen)
{
	size_t i = 0;
	while (i < n) {
		const char *pair = s + i;
		const char *amp = memchr(pair, '&', n - i);
		size_t plen = amp ? (size_t)(amp - pair) : n - i;
		i += plen + 1;
		const char *eq = memchr(pair, '=', plen);
		size_t nlen = eq ? (size_t)(eq - pair) : plen;
		if (nlen == 0)
			continue;
		if (out->n == TGC_MAX_PARAMS) {
			char why[96];
			tgi_snprintf(why, sizeof why, "more than %d parameters in %s", TGC_MAX_PARAMS, what);
			params_free(out);
			return refuse(err, errlen, why, pair, plen);
		}
		char *name = decode(pair, nlen, 1, what, err, errlen);
		char *value = name ? decode(eq ? eq + 1 : "", eq ? plen - nlen - 1 : 0, 1, what, err,
		                            errlen) : NULL;
		if (!value) {
			free(name);
			params_free(out);
			return -1;
		}
		out->v[out->n].name = name;
		out->v[out->n].value = value;
		out->n++;
	}
	return 0;
}

int tgc_form_parse(const char *body, size_t len, tgc_params *out, char *err, size_t errlen)
{
	tgc_params got;
	got.n = 0;
	if (body && memchr(body, '\0', len))
		return refuse(err, errlen, "a NUL byte in the form", body, len);
	if (parse_pairs(body ? body : "", body ? len : 0, "the form", &got, err, errlen) < 0)
		return -1;
	params_free(out);
	*out = got;
	return 0;
}

const char *tgc_param_get(const tgc_params *p, const char *name)
{
	for (size_t i = 0; p && name && i < p->n; i++)
		if (!strcmp(p->v[i].name, name))
			return p->v[i].value;
	return NULL;
}

void tgc_request_free(tgc_request *r)
{
	if (!r)
		return;
	free(r->arg);
	r->arg = NULL;
	params_free(&r->query);
	params_free(&r->form);
}

/* ---- what a path's argument may be ---- */

/* A UUID (8-4-4-4-12 hex digits), lower-cased in place. */
static int is_uuid(char *s)
{
	if (strlen(s) != 36)
		return 0;
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (tgi_hex_value(s[i]) < 0) {
			return 0;
		} else {
			s[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] | 0x20 : s[i]);
		}
	}
	return 1;
}

/* 1 to SESSION_MAX bytes (already valid UTF-8), no C0 or C1 control, no DEL. */
static int is_session_id(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SESSION_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return 0;
		/* U+0080..U+009F are C2 80..C2 9F */
		if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] < 0xa0)
			return 0;
	}
	return 1;
}

static int is_asset(const char *s)
{
	return !strcmp(s, "console.css") || !strcmp(s, "console.js");
}

/* ---- the path ---- */

typedef struct path {
	char  *seg[SEGMENTS_MAX];
	size_t n;
	int    too_deep;   /* more segments than any route has */
} path;

static void path_free(path *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->seg[i]);
	p->n = 0;
}

/* Cut s[0..n) (it starts with '/') into decoded segments.  0, or -1. */
static int path_split(const char *s, size_t n, path *p, char *err, size_t errlen)
{
	size_t i = 1;
	memset(p, 0, sizeof *p);
	if (n == 1)
		return 0;                     /* "/": no segment */
	while (i <= n) {
		const char *seg = s + i;
		const char *slash = memchr(seg, '/', n - i);
		size_t len = slash ? (size_t)(slash - seg) : n - i;
		if (p->n == SEGMENTS_MAX) {
			p->too_deep = 1;
			return 0;
		}
		p->seg[p->n] = decode(seg, len, 0, "the path", err, errlen);
		if (!p->seg[p->n]) {
			path_free(p);
			return -1;
		}
		p->n++;
		i += len + 1;
	}
	return 0;
}

/* A path with no argument: its route and methods, or TGC_NOT_FOUND. */
static tgc_route fixed_route(const char *name, unsigned *methods)
{
	static const struct {
		const char *name;
		tgc_route   route;
		unsigned    methods;
	} fixed[] = {
		{"login", TGC_LOGIN, M_GET | M_POST},
		{"live", TGC_LIVE, M_GET},
		{"events", TGC_EVENTS, M_GET},
		{"approvals", TGC_APPROVALS, M_GET},
		{"stats", TGC_STATS, M_GET},
		{"sessions", TGC_SESSIONS, M_GET},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(fixed); i++)
		if (!strcmp(name, fixed[i].name)) {
			*methods = fixed[i].methods;
			return fixed[i].route;
		}
	return TGC_NOT_FOUND;
}

/*
 * Route the decoded path: r->route, r->arg (taken from p), r->approve, and
 * the methods the route takes.  0, or -1 with a sentence for an argument
 * that is not what the route names.
 */
static int route_path(path *p, tgc_request *r, unsigned *methods, char *err, size_t errlen)
{
	char **seg = p->seg;
	*methods = M_GET;
	r->route = TGC_NOT_FOUND;
	if (p->too_deep)
		return 0;
	if (p->n == 0) {
		r->route = TGC_ROOT;
		return 0;
	}
	if (p->n == 1) {
		r->route = fixed_route(seg[0], methods);
		return 0;
	}
	const char *what = NULL;
	tgc_route route = TGC_NOT_FOUND;
	int ok = 0;
	if (p->n == 2 && !strcmp(seg[0], "calls")) {
		route = TGC_CALL, what = "an op id (a UUID)", ok = is_uuid(seg[1]);
	} else if (p->n == 2 && !strcmp(seg[0], "spill")) {
		route = TGC_SPILL, what = "an op id (a UUID)", ok = is_uuid(seg[1]);
	} else if (p->n == 2 && !strcmp(seg[0], "sessions")) {
		route = TGC_SESSION, what = "a session id (1 to 200 printable bytes)";
		ok = is_session_id(seg[1]);
	} else if (p->n == 2 && !strcmp(seg[0], "static")) {
		if (!is_asset(seg[1]))
			return 0;               /* no such file: 404 */
		route = TGC_ASSET, ok = 1;
	} else if (p->n == 3 && !strcmp(seg[0], "approvals") &&
	           (!strcmp(seg[2], "approve") || !strcmp(seg[2], "deny"))) {
		route = TGC_DECIDE, what = "an approval id (a UUID)", ok = is_uuid(seg[1]);
		r->approve = !strcmp(seg[2], "approve");
		*methods = M_POST;
	} else {
		return 0;
	}
	if (!ok) {
		char why[96];
		tgi_snprintf(why, sizeof why, "the path does not name %s", what);
		return refuse(err, errlen, why, seg[1], strlen(seg[1]));
	}
	r->route = route;
	r->arg = seg[1];
	seg[1] = NULL;                      /* taken */
	free(seg[0]);
	seg[0] = NULL;
	return 0;
}

int tgc_route_parse(const char *method, const char *target, tgc_request *r, char *err,
                    size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->route = TGC_NOT_FOUND;
	unsigned m = !method                                               ? 0
	           : !strcmp(method, "GET") || !strcmp(method, "HEAD") ? M_GET
	           : !strcmp(method, "POST")                          ? M_POST
	                                                              : 0;
	r->post = m == M_POST;
	if (!target || !method) {
		tgi_snprintf(err, errlen, "the request has no target");
		return -1;
	}
	size_t n = strnlen(target, TARGET_MAX + 1);
	if (n > TARGET_MAX) {
		tgi_snprintf(err, errlen, "the request target is longer than %d bytes", TARGET_MAX);
		return -1;
	}
	if (target[0] != '/')
		return refuse(err, errlen, "the request target does not start with '/'", target, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)target[i];
		if (c <= ' ' || c == 0x7f || c == '#')
			return refuse(err, errlen, "a space, control character or '#' in the request "
			              "target", target, n);
	}
	const char *q = memchr(target, '?', n);
	size_t plen = q ? (size_t)(q - target) : n;

	path p;
	unsigned methods;
	if (path_split(target, plen, &p, err, errlen) < 0)
		return -1;
	int rc = route_path(&p, r, &methods, err, errlen);
	path_free(&p);
	if (rc == 0 && q)
		rc = parse_pairs(q + 1, n - plen - 1, "the query", &r->query, err, errlen);
	if (rc < 0) {
		tgc_request_free(r);
		r->route = TGC_NOT_FOUND;
		return -1;
	}

	if (r->route == TGC_NOT_FOUND)
		return m ? 0 : -2;
	if (!(m & methods))
		return -2;
	return 0;
}
