/*
 * glob.c — the two glob dialects of permission rules.
 *
 * tgi_path_glob reads gitignore's dialect over workspace-relative paths;
 * tgi_text_glob is a plain `*` / `?` glob for tool names and argument
 * values.  Both match with the iterative two-pointer wildcard algorithm
 * (remember the last star; on a mismatch let it take one more element and
 * retry), so no pattern, however hostile, costs more than
 * O(pattern x text) steps: no recursion, no exponential backtracking.
 *
 * Path globs, as gitignore(5) reads them, with the choices a permission
 * rule needs:
 *   - A path is split on '/'; empty and "." segments are ignored, so "."
 *     (and "") is the workspace root, a path of no segments.
 *   - `*` matches any run of characters inside one segment (dotfiles
 *     included), `?` one character, `[a-z]`, `[!x]`, `[^x]` and
 *     `[[:alpha:]]` one character of a set, `\c` the character c.  A
 *     segment that is exactly `**` matches zero or more whole segments;
 *     `**` inside a segment is `*`.  An unclosed '[' or a trailing '\' is
 *     an ordinary character here (tgi_path_glob_check reports both, so a
 *     rule never carries one).
 *   - A leading "/" or "./" anchors the pattern at the workspace root, and
 *     so does a '/' in the middle.  A pattern with no '/' (other than a
 *     trailing one) matches at any depth, as if it began with "**" "/".
 *   - A trailing '/' is dropped.  Paths are judged without looking at the
 *     disk, so "docs/" cannot tell the directory from a file named docs and
 *     matches both (the safe reading for deny and ask rules).
 *   - A pattern that matches a directory matches everything under it, as
 *     git ignores the contents of an ignored directory: "src" and "src/x*"
 *     both match "src/xy/b.c".  For the same reason a final `**` segment
 *     may take zero segments, so `src` `/` `**` matches "src" itself: a rule
 *     on a directory covers listing that directory.
 *   - The root has no segments, so only patterns that need none match it:
 *     "/", "./", "." and "**" (each of them matches every path).  `*` needs
 *     a segment and does not match the root.
 *   - "~", "~/..." and "//..." are absolute patterns, kept for rules on
 *     paths outside the workspace; a workspace-relative path never matches
 *     them.
 *
 * Owns: pattern syntax and matching.  Must not: allocate, look at the
 * filesystem, or know about rules and tools.
 */
#include "policy/policy.h"

#include <ctype.h>
#include <string.h>

/* A segment [s, e) of a pattern or a path. */
typedef struct seg {
	const char *s;
	const char *e;
} seg;

/* POSIX character classes, `[[:name:]]` inside a bracket expression. */
static const struct {
	const char *name;
	int (*is)(int);
} char_classes[] = {
	{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
	{ "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
	{ "lower", islower }, { "print", isprint }, { "punct", ispunct },
	{ "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
};

/* The class named [s, e), or -1. */
static int char_class(const char *s, const char *e)
{
	size_t n = (size_t)(e - s);
	for (size_t i = 0; i < sizeof char_classes / sizeof char_classes[0]; i++)
		if (strlen(char_classes[i].name) == n && memcmp(char_classes[i].name, s, n) == 0)
			return (int)i;
	return -1;
}

/*
 * The bracket expression opening at p ('[') inside [p, e): sets *hit to
 * whether c belongs to the set and returns the position after the closing
 * ']', or NULL when the bracket is not closed before e.  A ']' first in the
 * set is a member; `a-z` is a range; `\c` is c.  An unknown `[:name:]`
 * matches nothing and sets *bad_class (when given) to its position.
 */
static const char *bracket(const char *p, const char *e, unsigned char c, int *hit,
                           const char **bad_class)
{
	const char *q = p + 1;
	int negate = 0, in = 0;

	if (q < e && (*q == '!' || *q == '^')) {
		negate = 1;
		q++;
	}
	const char *first = q;
	while (q < e && (*q != ']' || q == first)) {
		if (q[0] == '[' && q + 1 < e && q[1] == ':') {
			const char *name = q + 2, *end = name;
			while (end + 1 < e && !(end[0] == ':' && end[1] == ']'))
				end++;
			if (end + 1 < e) {
				int k = char_class(name, end);
				if (k >= 0 && char_classes[k].is(c))
					in = 1;
				if (k < 0 && bad_class && !*bad_class)
					*bad_class = q;
				q = end + 2;
				continue;
			}
		}
		if (*q == '\\' && q + 1 < e)
			q++;
		unsigned char lo = (unsigned char)*q++, hi = lo;
		if (q + 1 < e && q[0] == '-' && q[1] != ']') {
			q++;
			if (*q == '\\' && q + 1 < e)
				q++;
			hi = (unsigned char)*q++;
		}
		if (lo <= c && c <= hi)
			in = 1;
	}
	if (q >= e)
		return NULL;
	*hit = in != negate;
	return q + 1;
}

/* Does the one-character token at p (inside [p, e)) match c?  The position
 * after the token, or NULL. */
static const char *token_match(const char *p, const char *e, unsigned char c)
{
	const char *q;
	int hit;

	switch (*p) {
	case '?':
		return p + 1;
	case '[':
		q = bracket(p, e, c, &hit, NULL);
		if (q)
			return hit ? q : NULL;
		break; /* unclosed: a literal '[' */
	case '\\':
		if (p + 1 < e)
			return (unsigned char)p[1] == c ? p + 2 : NULL;
		break; /* trailing: a literal '\' */
	}
	return (unsigned char)*p == c ? p + 1 : NULL;
}

/* One pattern segment against one path segment: `*` stays inside it. */
static int seg_match(const seg *pat, const seg *txt)
{
	const char *p = pat->s, *t = txt->s, *star_p = NULL, *star_t = NULL;

	while (t < txt->e) {
		if (p < pat->e && *p == '*') {
			while (p < pat->e && *p == '*')
				p++;
			star_p = p;
			star_t = t;
			continue;
		}
		const char *next = p < pat->e ? token_match(p, pat->e, (unsigned char)*t) : NULL;
		if (next) {
			p = next;
			t++;
			continue;
		}
		if (!star_p)
			return 0;
		p = star_p;
		t = ++star_t;
	}
	while (p < pat->e && *p == '*')
		p++;
	return p == pat->e;
}

/* The next segment from *cur (before end), skipping empty and "." ones;
 * 0 when there is none. */
static int next_seg(const char **cur, const char *end, seg *out)
{
	const char *p = *cur;

	for (;;) {
		while (p < end && *p == '/')
			p++;
		if (p == end) {
			*cur = p;
			return 0;
		}
		const char *q = memchr(p, '/', (size_t)(end - p));
		if (!q)
			q = end;
		if (!(q - p == 1 && *p == '.')) {
			out->s = p;
			out->e = q;
			*cur = q;
			return 1;
		}
		p = q;
	}
}

static int is_globstar(const seg *s)
{
	return s->e - s->s == 2 && s->s[0] == '*' && s->s[1] == '*';
}

static int is_absolute_pattern(const char *pattern)
{
	return (pattern[0] == '~' && (pattern[1] == '\0' || pattern[1] == '/')) ||
	       (pattern[0] == '/' && pattern[1] == '/');
}

int tgi_path_glob(const char *pattern, const char *path)
{
	if (!pattern || !path || !*pattern || is_absolute_pattern(pattern))
		return 0;

	const char *p = pattern, *pe = pattern + strlen(pattern);
	int anchored = p[0] == '/' || (p[0] == '.' && (p[1] == '/' || p[1] == '\0'));
	while (pe > p && pe[-1] == '/')
		pe--;
	if (!anchored && memchr(p, '/', (size_t)(pe - p)))
		anchored = 1;

	/*
	 * Two pointers over segments.  An unanchored pattern starts as if
	 * after a `**`; running out of pattern is a match whatever path is
	 * left (the path is the matched entry or lies under it).
	 */
	const char *te = path + strlen(path), *pc = p, *tc = path;
	const char *star_p = anchored ? NULL : p, *star_t = path;
	seg ps, ts;

	for (;;) {
		const char *pn = pc, *tn = tc;
		if (!next_seg(&pn, pe, &ps))
			return 1;
		if (is_globstar(&ps)) {
			star_p = pc = pn;
			star_t = tc;
			continue;
		}
		if (!next_seg(&tn, te, &ts))
			return 0; /* a `**` taking more cannot help */
		if (seg_match(&ps, &ts)) {
			pc = pn;
			tc = tn;
			continue;
		}
		if (!star_p || !next_seg(&star_t, te, &ts))
			return 0;
		pc = star_p; /* let the last `**` take one more segment */
		tc = star_t;
	}
}

/* Is the pattern anchored (a leading "/" or "./", or a '/' before its
 * trailing ones)?  *pe: its end without trailing slashes. */
static int anchored_at(const char *p, const char **pe)
{
	const char *e = p + strlen(p);
	int anchored = p[0] == '/' || (p[0] == '.' && (p[1] == '/' || p[1] == '\0'));
	while (e > p && e[-1] == '/')
		e--;
	if (!anchored && memchr(p, '/', (size_t)(e - p)))
		anchored = 1;
	*pe = e;
	return anchored;
}

int tgi_path_glob_reaches(const char *pattern, const char *dir)
{
	if (!pattern || !dir || !*pattern || is_absolute_pattern(pattern))
		return 0;
	if (tgi_path_glob(pattern, dir))
		return 1;
	const char *pe, *pc = pattern, *tc = dir, *te = dir + strlen(dir);
	if (!anchored_at(pattern, &pe))
		return 1;                   /* a name at any depth: one may lie below */
	seg ps, ts;
	while (next_seg(&tc, te, &ts)) {
		if (!next_seg(&pc, pe, &ps) || is_globstar(&ps))
			return 1;
		if (!seg_match(&ps, &ts))
			return 0;
	}
	return 1;                           /* dir is a prefix of what it names */
}

static int has_meta(const char *s, const char *e)
{
	for (; s < e; s++)
		if (*s == '*' || *s == '?' || *s == '[' || *s == '\\')
			return 1;
	return 0;
}

int tgi_path_glob_base(const char *pattern, char *base, size_t cap)
{
	const char *pe, *pc = pattern;
	size_t n = 0;
	seg ps;
	if (cap)
		base[0] = '\0';
	if (!pattern || !*pattern || is_absolute_pattern(pattern) || !cap)
		return -1;
	if (!anchored_at(pattern, &pe))
		return 0;
	while (next_seg(&pc, pe, &ps)) {
		if (is_globstar(&ps)) {
			const char *rest = pc;
			seg more;
			return next_seg(&rest, pe, &more) ? 0 : 2;
		}
		if (has_meta(ps.s, ps.e) || (ps.e - ps.s == 2 && ps.s[0] == '.' && ps.s[1] == '.'))
			return 0;
		size_t len = (size_t)(ps.e - ps.s);
		if (n + len + 2 > cap)
			return -1;
		if (n)
			base[n++] = '/';
		memcpy(base + n, ps.s, len);
		n += len;
		base[n] = '\0';
	}
	return 1;
}

int tgi_path_glob_check(const char *pattern, size_t *at, const char **what)
{
	for (const char *p = pattern; *p; p++) {
		const char *e = p + strcspn(p, "/"), *bad_class = NULL;
		int hit;

		if (*p == '\\') {
			if (p + 1 == e) {
				*at = (size_t)(p - pattern);
				*what = "a '\\' that escapes nothing";
				return -1;
			}
			p++;
		} else if (*p == '[') {
			const char *q = bracket(p, e, 0, &hit, &bad_class);
			if (!q || bad_class) {
				*at = (size_t)((q ? bad_class : p) - pattern);
				*what = q ? "an unknown character class" : "an unclosed '['";
				return -1;
			}
			p = q - 1;
		}
	}
	return 0;
}

int tgi_text_glob_n(const char *pattern, const char *text, size_t len)
{
	const char *p = pattern, *star_p = NULL;
	size_t t = 0, star_t = 0;

	if (!pattern || !text)
		return 0;
	while (t < len) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p;
			star_t = t;
			continue;
		}
		if (*p && (*p == '?' || *p == text[t])) {
			p++;
			t++;
			continue;
		}
		if (!star_p)
			return 0;
		p = star_p;
		t = ++star_t;
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

int tgi_text_glob(const char *pattern, const char *text)
{
	return text ? tgi_text_glob_n(pattern, text, strlen(text)) : 0;
}
