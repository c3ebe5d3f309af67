/*
 * uri.c — RFC 3986 reference resolution (§5.2) for `$id` and `$ref`.
 *
 * Only what schema identifiers need: split a reference into its five
 * parts, resolve it against a base (which may itself be relative or empty
 * when a document has no `$id`), remove dot segments, put it back
 * together.  No normalisation beyond that, no I/O.
 *
 * Owns: nothing.  Must not: fetch anything or decide what is remote (the
 * compiler does, by looking the result up among the document's resources).
 */
#include <stdlib.h>
#include <string.h>

#include "schema/node.h"
#include "util/util.h"

/* Longest identifier we resolve; longer ones are rejected, not truncated. */
#define URI_MAX 4096

typedef struct span {
	const char *p;
	size_t      n;
	int         has; /* the component is defined (may be empty) */
} span;

typedef struct uri {
	span scheme, authority, path, query, fragment;
} uri;

static void parse(const char *s, uri *u)
{
	size_t n = strlen(s), i = 0;
	memset(u, 0, sizeof *u);
	/* scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
	while (i < n && strchr("/?#:", s[i]) == NULL)
		i++;
	if (i > 0 && i < n && s[i] == ':') {
		int ok = (s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z';
		for (size_t j = 1; ok && j < i; j++) {
			char c = s[j];
			ok = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') ||
			     c == '+' || c == '-' || c == '.';
		}
		if (ok) {
			u->scheme = (span){s, i, 1};
			s += i + 1;
			n -= i + 1;
		}
	}
	if (n >= 2 && s[0] == '/' && s[1] == '/') {
		i = 2;
		while (i < n && strchr("/?#", s[i]) == NULL)
			i++;
		u->authority = (span){s + 2, i - 2, 1};
		s += i;
		n -= i;
	}
	i = 0;
	while (i < n && s[i] != '?' && s[i] != '#')
		i++;
	u->path = (span){s, i, 1};
	s += i;
	n -= i;
	if (n && s[0] == '?') {
		i = 1;
		while (i < n && s[i] != '#')
			i++;
		u->query = (span){s + 1, i - 1, 1};
		s += i;
		n -= i;
	}
	if (n && s[0] == '#')
		u->fragment = (span){s + 1, n - 1, 1};
}

/* RFC 3986 §5.2.4, appending the result to out. */
static int remove_dots(tgi_buf *out, const char *p, size_t n)
{
	size_t base = out->len;
	while (n) {
		if (n >= 3 && memcmp(p, "../", 3) == 0) {
			p += 3, n -= 3;
		} else if (n >= 2 && memcmp(p, "./", 2) == 0) {
			p += 2, n -= 2;
		} else if ((n >= 3 && memcmp(p, "/./", 3) == 0) || (n == 2 && memcmp(p, "/.", 2) == 0)) {
			p += 2, n -= 2;
			if (!n) {
				p = "/", n = 1;
				if (tgi_buf_append(out, p, 1) < 0)
					return -1;
				break;
			}
		} else if ((n >= 4 && memcmp(p, "/../", 4) == 0) || (n == 3 && memcmp(p, "/..", 3) == 0)) {
			int last = n == 3;
			p += 3, n -= 3;
			while (out->len > base && out->p[out->len - 1] != '/')
				out->len--;
			if (out->len > base)
				out->len--;
			if (out->p)
				out->p[out->len] = '\0';
			if (last) {
				if (tgi_buf_append(out, "/", 1) < 0)
					return -1;
				break;
			}
		} else if ((n == 1 && p[0] == '.') || (n == 2 && memcmp(p, "..", 2) == 0)) {
			break;
		} else {
			size_t i = p[0] == '/' ? 1 : 0;
			while (i < n && p[i] != '/')
				i++;
			if (tgi_buf_append(out, p, i) < 0)
				return -1;
			p += i, n -= i;
		}
	}
	return 0;
}

static int put(tgi_buf *b, const char *pre, const span *s)
{
	if (!s->has)
		return 0;
	if (tgi_buf_puts(b, pre) < 0 || tgi_buf_append(b, s->p, s->n) < 0)
		return -1;
	return 0;
}

char *tgi_uri_resolve(const char *base, const char *ref)
{
	uri b, r;
	tgi_buf out, merged;
	if (strlen(base) > URI_MAX || strlen(ref) > URI_MAX)
		return NULL;
	parse(base, &b);
	parse(ref, &r);
	tgi_buf_init(&out, 2 * URI_MAX + 16);
	tgi_buf_init(&merged, 2 * URI_MAX + 16);

	const span *scheme, *authority, *query;
	const char *path;
	size_t pathn;
	int rc = 0;
	if (r.scheme.has) {
		scheme = &r.scheme, authority = &r.authority, query = &r.query;
		path = r.path.p, pathn = r.path.n;
	} else if (r.authority.has) {
		scheme = &b.scheme, authority = &r.authority, query = &r.query;
		path = r.path.p, pathn = r.path.n;
	} else if (r.path.n == 0) {
		scheme = &b.scheme, authority = &b.authority;
		query = r.query.has ? &r.query : &b.query;
		path = b.path.p, pathn = b.path.n;
	} else {
		scheme = &b.scheme, authority = &b.authority, query = &r.query;
		if (r.path.p[0] == '/') {
			path = r.path.p, pathn = r.path.n;
		} else { /* §5.2.3 merge */
			if (b.authority.has && b.path.n == 0) {
				rc |= tgi_buf_puts(&merged, "/");
			} else {
				size_t keep = b.path.n;
				while (keep && b.path.p[keep - 1] != '/')
					keep--;
				rc |= tgi_buf_append(&merged, b.path.p, keep);
			}
			rc |= tgi_buf_append(&merged, r.path.p, r.path.n);
			path = merged.p ? merged.p : "", pathn = merged.len;
		}
	}
	rc |= put(&out, "", scheme);
	if (scheme->has)
		rc |= tgi_buf_puts(&out, ":");
	rc |= put(&out, "//", authority);
	rc |= remove_dots(&out, path, pathn);
	rc |= put(&out, "?", query);
	rc |= put(&out, "#", &r.fragment);
	tgi_buf_free(&merged);
	if (rc) {
		tgi_buf_free(&out);
		return NULL;
	}
	return tgi_buf_steal(&out);
}

char *tgi_uri_unescape(const char *s, size_t n)
{
	char *out = tgi_xmalloc(n + 1);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			out[j++] = s[i];
			continue;
		}
		int hi = i + 2 < n ? tgi_hex_value((unsigned char)s[i + 1]) : -1;
		int lo = hi >= 0 ? tgi_hex_value((unsigned char)s[i + 2]) : -1;
		if (lo < 0 || (hi == 0 && lo == 0)) {
			free(out);
			return NULL;
		}
		out[j++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[j] = '\0';
	return out;
}
