/*
 * evaluate.c — an instance against a compiled schema (see node.h).
 *
 * One recursive walk over (node, instance value).  It runs in one of two
 * modes:
 *
 *   yes/no   (no sink) the first failed check returns 0 straight up the
 *            stack; nothing is formatted.  Used when the caller passed no
 *            result, and inside anyOf/oneOf/not/if/contains, where a
 *            branch's failure is not the instance's failure.
 *   report   every failed check appends an error (instance JSON pointer +
 *            sentence) and the walk goes on to sibling properties and
 *            items, until TGI_SCHEMA_MAX_ERRORS are stored; one more marks
 *            the result truncated and ends the walk.
 *
 * The instance pointer is a chain of stack frames (vpath) turned into text
 * only when an error is reported, so the valid path does not format or
 * allocate anything (propertyNames aside, which needs a JSON string for
 * each name).  Depth is capped at TGI_SCHEMA_MAX_DEPTH evaluations, which
 * also stops `$ref` cycles that never descend into the instance.
 *
 * Owns: the walk, the messages, and the decision to apply defaults.  Must
 * not: modify the compiled schema, keep state between calls, or echo an
 * instance value without truncating it and stripping control characters.
 */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/node.h"
#include "util/util.h"

#define ECHO_MAX      60   /* bytes of an instance value quoted in a message */
#define LIST_MAX      160  /* bytes of a list of names/values in a message */
#define SMALL_UNIQUE  16   /* arrays up to this size are checked pairwise */

typedef struct sink {
	tgi_schema_error *errors;
	int               cap, n, truncated;
} sink;

typedef struct vctx {
	sink         *sink;     /* NULL: yes/no mode */
	tgi_rscratch *rx;
	int           depth;
	int           closest;  /* may run an anyOf/oneOf branch to explain a failure */
} vctx;

/* One step from the root to the value under test. */
typedef struct vpath {
	const struct vpath *up;
	const char         *key;   /* member name, or NULL for an array index */
	size_t              index;
} vpath;

static int v_node(vctx *c, const tgi_snode *n, json_t *x, const vpath *at);
static inline int v_child(vctx *c, const tgi_snode *n, json_t *x, const vpath *at);

static inline int stop(const vctx *c)
{
	return !c->sink || c->sink->truncated;
}

/* Inside a check function (which has `c` and `ok`): a sub-walk failed. */
#define CHECK(expr)                     \
	do {                            \
		if (!(expr)) {          \
			ok = 0;         \
			if (stop(c))    \
				return 0; \
		}                       \
	} while (0)

/* Inside a check function: this check failed; `call` (a fail_* function
 * below or report(), run in report mode only) says why. */
#define FAIL_BY(call)                    \
	do {                             \
		if (!c->sink)            \
			return 0;        \
		call;                    \
		ok = 0;                  \
		if (c->sink->truncated)  \
			return 0;        \
	} while (0)
#define FAIL(...) FAIL_BY(report(c, __VA_ARGS__))

/* ---- describing things in messages ---------------------------------------- */

/* The RFC 6901 pointer of `at`, cut (never overflowing) at cap. */
static void path_string(const vpath *at, char *out, size_t cap)
{
	const vpath *chain[TGI_SCHEMA_MAX_DEPTH + 8];
	size_t n = 0, len = 0;
	for (; at && n < TGI_ARRAY_LEN(chain); at = at->up)
		chain[n++] = at;
	while (n--) {
		char num[24];
		const char *tok = chain[n]->key;
		if (!tok) {
			snprintf(num, sizeof num, "%zu", chain[n]->index);
			tok = num;
		}
		if (len + 1 < cap)
			out[len++] = '/';
		for (; *tok && len + 1 < cap; tok++) {
			if (*tok == '~' || *tok == '/') {
				if (len + 2 >= cap)
					break;
				out[len++] = '~';
				out[len++] = *tok == '~' ? '0' : '1';
			} else {
				out[len++] = *tok;
			}
		}
	}
	out[len] = '\0';
}

typedef struct capped {
	char  *p;
	size_t len, cap;
	int    cut;
} capped;

static int capped_put(const char *buf, size_t n, void *data)
{
	capped *b = data;
	size_t room = b->cap - 1 - b->len;
	if (n > room) {
		n = room;
		b->cut = 1;
	}
	memcpy(b->p + b->len, buf, n);
	b->len += n;
	b->p[b->len] = '\0';
	return b->cut ? -1 : 0;
}

/* v as compact JSON, at most `max` bytes, "..." when cut; out must hold
 * max + 4 bytes. */
static void describe_n(char *out, size_t max, const json_t *v)
{
	char tmp[LIST_MAX + 8];
	capped b = {tmp, 0, max + 1 < sizeof tmp ? max + 1 : sizeof tmp, 0};
	tmp[0] = '\0';
	json_dump_callback(v, capped_put, &b, JSON_COMPACT | JSON_ENCODE_ANY);
	if (b.cut) {
		/* do not end inside a UTF-8 sequence */
		while (b.len && ((unsigned char)tmp[b.len - 1] & 0xC0) == 0x80)
			b.len--;
		if (b.len && ((unsigned char)tmp[b.len - 1] & 0xC0) == 0xC0)
			b.len--;
		memcpy(tmp + b.len, "...", 4);
	}
	tgi_sanitize(out, max + 4, tmp);
}

static void describe(char out[ECHO_MAX + 4], const json_t *v)
{
	describe_n(out, ECHO_MAX, v);
}

static void num_string(char *out, size_t cap, const tgi_snum *m)
{
	if (m->is_int) {
		snprintf(out, cap, "%lld", (long long)m->i);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) { /* shortest that reads back */
		snprintf(out, cap, "%.*g", prec, m->d);
		if (strtod(out, NULL) == m->d)
			return;
	}
}

static const char *type_name(const json_t *x)
{
	switch (json_typeof(x)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

/* "a string", "a string or null", "an object, an array or null" */
static void type_list(char *out, size_t cap, unsigned types)
{
	static const struct { unsigned bit; const char *text; } names[] = {
		{TGI_ST_STRING, "a string"}, {TGI_ST_NUMBER, "a number"},
		{TGI_ST_INTEGER, "an integer"}, {TGI_ST_OBJECT, "an object"},
		{TGI_ST_ARRAY, "an array"}, {TGI_ST_BOOLEAN, "a boolean"}, {TGI_ST_NULL, "null"},
	};
	const char *pick[TGI_ARRAY_LEN(names)];
	size_t n = 0;
	if (types & TGI_ST_NUMBER)
		types &= ~(unsigned)TGI_ST_INTEGER; /* every integer is a number */
	for (size_t i = 0; i < TGI_ARRAY_LEN(names); i++)
		if (types & names[i].bit)
			pick[n++] = names[i].text;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(out);
		tgi_snprintf(out + len, cap - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
		             pick[i]);
	}
}

static inline unsigned type_bits_of(const json_t *x, json_type t)
{
	switch (t) {
	case JSON_OBJECT: return TGI_ST_OBJECT;
	case JSON_ARRAY: return TGI_ST_ARRAY;
	case JSON_STRING: return TGI_ST_STRING;
	case JSON_INTEGER: return TGI_ST_NUMBER | TGI_ST_INTEGER;
	case JSON_REAL: {
		double d = json_real_value(x);
		return tgi_is_integral(d) ? TGI_ST_NUMBER | TGI_ST_INTEGER : TGI_ST_NUMBER;
	}
	case JSON_TRUE:
	case JSON_FALSE: return TGI_ST_BOOLEAN;
	default: return TGI_ST_NULL;
	}
}

static inline unsigned type_bits(const json_t *x)
{
	return type_bits_of(x, json_typeof(x));
}

__attribute__((format(printf, 3, 4), noinline, cold))
static void report(vctx *c, const vpath *at, const char *fmt, ...)
{
	sink *k = c->sink;
	va_list ap;
	if (k->n >= k->cap) {
		k->truncated = 1;
		return;
	}
	tgi_schema_error *e = &k->errors[k->n++];
	path_string(at, e->pointer, sizeof e->pointer);
	tgi_sanitize(e->pointer, sizeof e->pointer, e->pointer);
	tgi_utf8_trim(e->pointer);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof e->message, fmt, ap);
	va_end(ap);
	tgi_sanitize(e->message, sizeof e->message, e->message);
	tgi_utf8_trim(e->message);
}

/* ---- failure reports: cold, so their buffers stay off the walk's frames -- */

__attribute__((noinline, cold))
static void fail_type(vctx *c, const vpath *at, unsigned types, const json_t *x)
{
	char want[128];
	type_list(want, sizeof want, types);
	report(c, at, "must be %s, got %s", want, type_name(x));
}

__attribute__((noinline, cold))
static void fail_number(vctx *c, const vpath *at, const char *what, const tgi_snum *lim,
                        const json_t *x)
{
	char want[40], got[ECHO_MAX + 4];
	num_string(want, sizeof want, lim);
	describe(got, x);
	report(c, at, "must be %s %s, got %s", what, want, got);
}

/* A pattern for a message: as written, cut (on a character boundary, with
 * "...") to keep the sentence short.  cap > 4. */
static void pattern_text(char *out, size_t cap, const tgi_regex *re)
{
	const char *src = tgi_regex_source(re);
	tgi_sanitize(out, cap, src);
	size_t n = strlen(out);
	if (n == strlen(src))
		return;
	if (n > cap - 4)
		n = cap - 4;
	while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
		n--; /* out[n] would be the first byte dropped: not mid-character */
	memcpy(out + n, "...", 4);
}

__attribute__((noinline, cold))
static void fail_pattern(vctx *c, const vpath *at, const tgi_regex *re, int r, int is_name)
{
	char pat[128];
	pattern_text(pat, sizeof pat, re);
	if (r == 0)
		report(c, at, "must match %s", pat);
	else if (is_name)
		report(c, at, "is a property name too complex to check against %s", pat);
	else
		report(c, at, "is too complex to check against the pattern %s; send a simpler value",
		       pat);
}

__attribute__((noinline, cold))
static void fail_format(vctx *c, const vpath *at, int format, const json_t *x)
{
	char got[ECHO_MAX + 4];
	describe(got, x);
	report(c, at, "must be a valid %s, got %s", tgi_format_describe(format), got);
}

/* ---- scalars ------------------------------------------------------------------ */

/* x (a number) compared with a limit: <0, 0, >0. */
static int num_cmp(const json_t *x, const tgi_snum *lim)
{
	if (json_is_integer(x) && lim->is_int) {
		json_int_t i = json_integer_value(x);
		return (i > lim->i) - (i < lim->i);
	}
	long double a = json_is_integer(x) ? (long double)json_integer_value(x)
	                                   : (long double)json_real_value(x);
	long double b = lim->is_int ? (long double)lim->i : (long double)lim->d;
	return (a > b) - (a < b);
}

/* Decimal-friendly multipleOf: 0.0075 is a multiple of 0.0001 although
 * 0.0075 / 0.0001 is 74.99999999999999 in binary floating point.  The
 * quotient may be off by the rounding of three values, a few ulps. */
static int is_multiple(const json_t *x, const tgi_snum *m)
{
	if (json_is_integer(x) && m->is_int)
		return json_integer_value(x) % m->i == 0;
	double q = json_number_value(x) / m->d;
	if (!(q > -DBL_MAX && q < DBL_MAX))
		return 0; /* overflowed: 1e308 is no multiple of 0.123456789 */
	if (tgi_is_integral(q))
		return 1;
	double r = (double)(long long)(q < 0 ? q - 0.5 : q + 0.5);
	return __builtin_fabs(q - r) <= __builtin_fabs(q) * 4 * DBL_EPSILON;
}

static int v_number(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	static const struct {
		uint32_t bit;
		size_t off;
		int bad_lo, bad_hi; /* num_cmp results that fail */
		const char *op;
	} limits[] = {
		{TGI_KW_MINIMUM, offsetof(tgi_snode, minimum), -1, -1, ">="},
		{TGI_KW_MAXIMUM, offsetof(tgi_snode, maximum), 1, 1, "<="},
		{TGI_KW_XMINIMUM, offsetof(tgi_snode, xminimum), -1, 0, ">"},
		{TGI_KW_XMAXIMUM, offsetof(tgi_snode, xmaximum), 0, 1, "<"},
	};
	uint32_t kw = n->kw;
	int ok = 1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(limits); i++) {
		if (!(kw & limits[i].bit))
			continue;
		const tgi_snum *lim = (const tgi_snum *)((const char *)n + limits[i].off);
		int r = num_cmp(x, lim);
		if (r >= limits[i].bad_lo && r <= limits[i].bad_hi)
			FAIL_BY(fail_number(c, at, limits[i].op, lim, x));
	}
	if ((kw & TGI_KW_MULTIPLE_OF) && !is_multiple(x, &n->multiple_of))
		FAIL_BY(fail_number(c, at, "a multiple of", &n->multiple_of, x));
	return ok;
}

static size_t code_points(const char *s, size_t n)
{
	size_t cp = 0;
	for (size_t i = 0; i < n; i++)
		cp += ((unsigned char)s[i] & 0xC0) != 0x80;
	return cp;
}

static int v_string(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	const char *s = json_string_value(x);
	size_t len = json_string_length(x), cps = SIZE_MAX;
	uint32_t kw = n->kw;
	int ok = 1;

	/* bytes bound code points: len / 4 <= code points <= len */
	if ((kw & TGI_KW_MIN_LENGTH) && len / 4 < n->min_length &&
	    (cps = code_points(s, len)) < n->min_length)
		FAIL(at, "must be at least %zu character%s long, got %zu", n->min_length,
		     n->min_length == 1 ? "" : "s", cps);
	if ((kw & TGI_KW_MAX_LENGTH) && len > n->max_length) {
		if (cps == SIZE_MAX)
			cps = code_points(s, len);
		if (cps > n->max_length)
			FAIL(at, "must be at most %zu character%s long, got %zu", n->max_length,
			     n->max_length == 1 ? "" : "s", cps);
	}
	if (kw & TGI_KW_PATTERN) {
		int r = tgi_regex_match(n->pattern, c->rx, s, len);
		if (r <= 0)
			FAIL_BY(fail_pattern(c, at, n->pattern, r, 0));
	}
	if ((kw & TGI_KW_FORMAT) && !tgi_format_check(n->format, s, len))
		FAIL_BY(fail_format(c, at, n->format, x));
	return ok;
}

/* ---- enum and const --------------------------------------------------------- */

static void value_list(char *out, size_t cap, json_t *const *v, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char one[44];
		describe_n(one, 40, v[i]);
		if (len + strlen(one) + 6 >= cap || len + strlen(one) > LIST_MAX) {
			tgi_snprintf(out + len, cap - len, ", ...");
			return;
		}
		tgi_snprintf(out + len, cap - len, "%s%s", i ? ", " : "", one);
		len = strlen(out);
	}
}

__attribute__((noinline, cold))
static void fail_enum(vctx *c, const vpath *at, const tgi_snode *n, const json_t *x)
{
	char list[LIST_MAX + 16], got[ECHO_MAX + 4];
	value_list(list, sizeof list, n->enumv, n->nenum);
	describe(got, x);
	if (n->nenum == 0)
		report(c, at, "is not allowed (the enum is empty)");
	else if (n->nenum == 1)
		report(c, at, "must be %s; got %s", list, got);
	else
		report(c, at, "must be one of %s; got %s", list, got);
}

__attribute__((noinline, cold))
static void fail_const(vctx *c, const vpath *at, const tgi_snode *n, const json_t *x)
{
	char want[ECHO_MAX + 4], got[ECHO_MAX + 4];
	describe(want, n->constv);
	describe(got, x);
	report(c, at, "must be %s; got %s", want, got);
}

static int in_strs(const tgi_sstr *v, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].n == len && tgi_same_bytes(v[i].s, s, len))
			return 1;
	return 0;
}

static int v_enum_const(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	int ok = 1;
	const char *s = NULL;
	size_t len = 0;
	if (json_is_string(x)) { /* strings compare as bytes: no general equality */
		s = json_string_value(x);
		len = json_string_length(x);
	}
	if (n->kw & TGI_KW_ENUM) {
		int found;
		if (s) {
			found = in_strs(n->enum_strs, n->nenum_strs, s, len);
		} else {
			size_t i = 0;
			while (i < n->nenum && !tgi_schema_equal(n->enumv[i], x))
				i++;
			found = i < n->nenum;
		}
		if (!found)
			FAIL_BY(fail_enum(c, at, n, x));
	}
	if ((n->kw & TGI_KW_CONST) &&
	    !(s ? n->const_str.s && in_strs(&n->const_str, 1, s, len)
	        : tgi_schema_equal(n->constv, x)))
		FAIL_BY(fail_const(c, at, n, x));
	return ok;
}

/* ---- arrays ----------------------------------------------------------------- */

typedef struct hashed {
	uint64_t h;
	size_t   i;
} hashed;

static int hashed_cmp(const void *a, const void *b)
{
	const hashed *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* 1 and the indexes of two equal items, or 0. */
static int find_duplicate(const json_t *a, size_t *first, size_t *second)
{
	size_t n = json_array_size(a);
	if (n <= SMALL_UNIQUE) {
		for (size_t j = 1; j < n; j++)
			for (size_t i = 0; i < j; i++)
				if (tgi_schema_equal(json_array_get(a, i), json_array_get(a, j))) {
					*first = i, *second = j;
					return 1;
				}
		return 0;
	}
	hashed *h = tgi_xmalloc(n * sizeof *h);
	for (size_t i = 0; i < n; i++)
		h[i] = (hashed){tgi_schema_value_hash(json_array_get(a, i)), i};
	qsort(h, n, sizeof *h, hashed_cmp);
	int found = 0;
	for (size_t i = 0; i + 1 < n && !found; i++)
		for (size_t j = i + 1; j < n && h[j].h == h[i].h && !found; j++)
			if (tgi_schema_equal(json_array_get(a, h[i].i), json_array_get(a, h[j].i))) {
				*first = h[i].i, *second = h[j].i;
				found = 1;
			}
	free(h);
	return found;
}

static int v_array(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	uint32_t kw = n->kw;
	size_t len = json_array_size(x);
	int ok = 1;

	if ((kw & TGI_KW_MIN_ITEMS) && len < n->min_items)
		FAIL(at, "must have at least %zu item%s, got %zu", n->min_items,
		     n->min_items == 1 ? "" : "s", len);
	if ((kw & TGI_KW_MAX_ITEMS) && len > n->max_items)
		FAIL(at, "must have at most %zu item%s, got %zu", n->max_items,
		     n->max_items == 1 ? "" : "s", len);
	if (kw & TGI_KW_ITEMS) {
		for (size_t i = 0; i < len; i++) {
			const tgi_snode *s = i < n->prefix.n ? n->prefix.v[i] : n->items;
			if (!s)
				break; /* past the prefix, and anything goes */
			vpath p = {at, NULL, i};
			if (i >= n->prefix.n && (s->kw & TGI_KW_FALSE)) {
				FAIL(&p, "is not allowed (at most %zu item%s)", n->prefix.n,
				     n->prefix.n == 1 ? "" : "s");
				break;
			}
			CHECK(v_child(c, s, json_array_get(x, i), &p));
		}
	}
	if (kw & TGI_KW_CONTAINS) {
		vctx q = *c;
		size_t matches = 0;
		q.sink = NULL;
		for (size_t i = 0; i < len && matches <= n->max_contains; i++) {
			vpath p = {at, NULL, i};
			if (v_node(&q, n->contains, json_array_get(x, i), &p)) {
				matches++;
				if (matches >= n->min_contains && n->max_contains == SIZE_MAX)
					break;
			}
		}
		if (matches < n->min_contains) {
			if (n->min_contains == 1)
				FAIL(at, "must contain at least one item that matches the "
				     "\"contains\" schema");
			else
				FAIL(at, "must contain at least %zu items that match the \"contains\" "
				     "schema, got %zu", n->min_contains, matches);
		}
		if (matches > n->max_contains)
			FAIL(at, "must contain at most %zu item%s that match%s the \"contains\" schema",
			     n->max_contains, n->max_contains == 1 ? "" : "s",
			     n->max_contains == 1 ? "es" : "");
	}
	if ((kw & TGI_KW_UNIQUE) && len > 1) {
		size_t i = 0, j = 0;
		if (find_duplicate(x, &i, &j))
			FAIL(at, "must not contain duplicate items (items %zu and %zu are equal)", i, j);
	}
	return ok;
}

/* ---- objects ---------------------------------------------------------------- */

/* "title, start, ..." for an additionalProperties message. */
static void allowed_list(char *out, size_t cap, const tgi_snode *n)
{
	size_t len = 0;
	int any = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n->nprops; i++) {
		if (!n->props[i].schema)
			continue;
		if (len + n->props[i].len + 8 >= cap || len > LIST_MAX) {
			tgi_snprintf(out + len, cap - len, ", ...");
			return;
		}
		tgi_snprintf(out + len, cap - len, "%s%s", any ? ", " : "", n->props[i].name);
		len = strlen(out);
		any = 1;
	}
	for (size_t i = 0; i < n->npatterns; i++) {
		char pat[64];
		pattern_text(pat, sizeof pat, n->patterns[i].re);
		if (len + strlen(pat) + 24 >= cap) {
			tgi_snprintf(out + len, cap - len, ", ...");
			return;
		}
		tgi_snprintf(out + len, cap - len, "%snames matching %s", any ? ", or " : "", pat);
		len = strlen(out);
		any = 1;
	}
}

__attribute__((noinline, cold))
static void fail_additional(vctx *c, const vpath *at, const tgi_snode *n)
{
	char list[LIST_MAX + 32];
	allowed_list(list, sizeof list, n);
	if (list[0])
		report(c, at, "is not allowed (allowed: %s)", list);
	else
		report(c, at, "is not allowed (this object takes no properties)");
}

/* Why a property name failed propertyNames: the first error of a second,
 * reporting walk over the name. */
__attribute__((noinline, cold))
static void fail_name(vctx *c, const tgi_snode *n, json_t *name, const vpath *p)
{
	tgi_schema_error e;
	sink one = {&e, 1, 0, 0};
	vctx q = *c;
	q.sink = &one;
	q.closest = 0;
	v_node(&q, n->names, name, p);
	if (one.n)
		report(c, p, "is not an allowed property name (%s)", e.message);
	else
		report(c, p, "is not an allowed property name");
}

__attribute__((noinline))
static int v_property_name(vctx *c, const tgi_snode *n, const char *key, size_t len,
                           const vpath *p)
{
	json_t *name = json_stringn(key, len);
	if (!name)
		return 1; /* not UTF-8: jansson would not have made such a key */
	vctx q = *c;
	q.sink = NULL;
	int ok = v_node(&q, n->names, name, p);
	if (!ok && c->sink)
		fail_name(c, n, name, p);
	json_decref(name);
	return ok;
}

/* Is property i of n in x?  The walk's bit when it has one, else a lookup. */
static inline int has_prop(const tgi_snode *n, const json_t *x, unsigned i, int walked,
                           uint64_t seen)
{
	if (walked && i < 64)
		return (int)((seen >> i) & 1);
	return json_object_getn(x, n->props[i].name, n->props[i].len) != NULL;
}

static int v_object(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	uint32_t kw = n->kw;
	uint64_t seen = 0;
	int ok = 1, walked = 0;

	if (kw & (TGI_KW_MIN_PROPS | TGI_KW_MAX_PROPS)) {
		size_t size = json_object_size(x);
		if ((kw & TGI_KW_MIN_PROPS) && size < n->min_props)
			FAIL(at, "must have at least %zu propert%s, got %zu", n->min_props,
			     n->min_props == 1 ? "y" : "ies", size);
		if ((kw & TGI_KW_MAX_PROPS) && size > n->max_props)
			FAIL(at, "must have at most %zu propert%s, got %zu", n->max_props,
			     n->max_props == 1 ? "y" : "ies", size);
	}
	if (kw & TGI_KW_WALK) {
		size_t guess = 0;
		walked = 1;
		for (void *it = json_object_iter(x); it; it = json_object_iter_next(x, it)) {
			const char *key = json_object_iter_key(it);
			size_t klen = json_object_iter_key_len(it);
			json_t *v = json_object_iter_value(it);
			vpath p = {at, key, 0};
			int known = 0;
			int i = tgi_snode_prop_near(n, key, klen, guess);
			if (i >= 0) {
				guess = (size_t)i + 1;
				if (i < 64)
					seen |= (uint64_t)1 << i;
				if (n->props[i].schema) {
					known = 1;
					CHECK(v_child(c, n->props[i].schema, v, &p));
				}
			}
			for (size_t k = 0; k < n->npatterns; k++) {
				int r = tgi_regex_match(n->patterns[k].re, c->rx, key, klen);
				if (r < 0) {
					FAIL_BY(fail_pattern(c, &p, n->patterns[k].re, r, 1));
				} else if (r) {
					known = 1;
					CHECK(v_child(c, n->patterns[k].schema, v, &p));
				}
			}
			if (!known && n->additional) {
				if (n->additional->kw & TGI_KW_FALSE)
					FAIL_BY(fail_additional(c, &p, n));
				else
					CHECK(v_child(c, n->additional, v, &p));
			}
			if (n->names)
				CHECK(v_property_name(c, n, key, klen, &p));
		}
	}
	/* the walk saw every required name: nothing to look up */
	int all_seen = walked && n->required_all_in_mask &&
	               (seen & n->required_mask) == n->required_mask;
	for (size_t k = 0; k < n->nrequired && !all_seen; k++) {
		unsigned i = n->required[k];
		if (!has_prop(n, x, i, walked, seen)) {
			vpath p = {at, n->props[i].name, 0};
			FAIL(&p, "is required");
		}
	}
	for (size_t k = 0; k < n->ndependents; k++) {
		const tgi_sprop *d = &n->props[n->dependents[k]];
		if (!has_prop(n, x, n->dependents[k], walked, seen))
			continue;
		for (size_t j = 0; j < d->ndep_names; j++) {
			unsigned i = d->dep_names[j];
			if (!has_prop(n, x, i, walked, seen)) {
				vpath p = {at, n->props[i].name, 0};
				FAIL(&p, "is required when \"%s\" is present", d->name);
			}
		}
		if (d->dep_schema)
			CHECK(v_node(c, d->dep_schema, x, at));
	}
	return ok;
}

/* ---- combinators ------------------------------------------------------------ */

/*
 * Explain why none of the branches of anyOf/oneOf matched: if every branch
 * names its types and none fits, say which types would; otherwise name the
 * first error of the closest branch (the first whose type fits).
 */
__attribute__((noinline, cold))
static void explain_none(vctx *c, const tgi_slist *l, const char *kw, json_t *x, const vpath *at)
{
	unsigned t = type_bits(x), all = 0;
	const tgi_snode *closest = NULL;
	int typed = 1;
	for (size_t i = 0; i < l->n; i++) {
		const tgi_snode *b = l->v[i];
		if (b->kw & TGI_KW_TYPE) {
			all |= b->types;
			if ((b->types & t) && !closest)
				closest = b;
		} else {
			typed = 0;
			if (!closest)
				closest = b;
		}
	}
	if (typed && !closest) {
		fail_type(c, at, all, x);
		return;
	}
	if (closest && c->closest) {
		tgi_schema_error e;
		sink one = {&e, 1, 0, 0};
		vctx q = *c;
		q.sink = &one;
		q.closest = 0;
		v_node(&q, closest, x, at);
		if (one.n) {
			char here[sizeof e.pointer];
			path_string(at, here, sizeof here);
			tgi_sanitize(here, sizeof here, here);
			if (strcmp(here, e.pointer) == 0)
				report(c, at, "does not match any of the %s schemas; closest: %s", kw,
				       e.message);
			else
				report(c, at, "does not match any of the %s schemas; closest: %s %s", kw,
				       e.pointer, e.message);
			return;
		}
	}
	report(c, at, "does not match any of the %s schemas", kw);
}

static int v_apply(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	uint32_t kw = n->kw;
	int ok = 1;
	vctx q = *c;
	q.sink = NULL;

	if (kw & TGI_KW_ALL_OF)
		for (size_t i = 0; i < n->all_of.n; i++)
			CHECK(v_node(c, n->all_of.v[i], x, at));
	if (kw & TGI_KW_ANY_OF) {
		size_t i = 0;
		while (i < n->any_of.n && !v_child(&q, n->any_of.v[i], x, at))
			i++;
		if (i == n->any_of.n) {
			if (!c->sink)
				return 0;
			explain_none(c, &n->any_of, "anyOf", x, at);
			ok = 0;
			if (stop(c))
				return 0;
		}
	}
	if (kw & TGI_KW_ONE_OF) {
		size_t match[2], nmatch = 0;
		for (size_t i = 0; i < n->one_of.n && nmatch < 2; i++)
			if (v_node(&q, n->one_of.v[i], x, at))
				match[nmatch++] = i;
		if (nmatch == 0) {
			if (!c->sink)
				return 0;
			explain_none(c, &n->one_of, "oneOf", x, at);
			ok = 0;
			if (stop(c))
				return 0;
		} else if (nmatch > 1) {
			FAIL(at, "must match exactly one of the oneOf schemas, but matches %zu and %zu",
			     match[0], match[1]);
		}
	}
	if ((kw & TGI_KW_NOT) && v_node(&q, n->not_, x, at))
		FAIL(at, "must not match the \"not\" schema");
	if (kw & TGI_KW_IF) {
		const tgi_snode *b = v_node(&q, n->if_, x, at) ? n->then_ : n->else_;
		if (b)
			CHECK(v_node(c, b, x, at));
	}
	return ok;
}

/* ---- one node ------------------------------------------------------------------ */

static int v_checks(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	uint32_t kw = n->kw;
	json_type t = json_typeof(x);
	int ok = 1;

	if ((kw & TGI_KW_TYPE) && !(type_bits_of(x, t) & n->types)) {
		if (c->sink)
			fail_type(c, at, n->types, x);
		return 0; /* the other keywords would only repeat this */
	}
	if (kw & TGI_KW_REF)
		CHECK(v_node(c, n->ref, x, at));
	if (kw & (TGI_KW_ENUM | TGI_KW_CONST))
		CHECK(v_enum_const(c, n, x, at));
	switch (t) {
	case JSON_OBJECT:
		if (kw & TGI_KW_OBJECT_MASK)
			CHECK(v_object(c, n, x, at));
		break;
	case JSON_ARRAY:
		if (kw & TGI_KW_ARRAY_MASK)
			CHECK(v_array(c, n, x, at));
		break;
	case JSON_STRING:
		if (kw & TGI_KW_STRING_MASK)
			CHECK(v_string(c, n, x, at));
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		if (kw & TGI_KW_NUMBER_MASK)
			CHECK(v_number(c, n, x, at));
		break;
	default:
		break;
	}
	if (kw & TGI_KW_APPLY_MASK)
		CHECK(v_apply(c, n, x, at));
	return ok;
}

/* v_node for a value one step down: a node that only names types (the
 * commonest leaf: {"type": "string"}) is answered without the call. */
static inline int v_child(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	if (n->kw == TGI_KW_TYPE && (type_bits(x) & n->types))
		return 1;
	return v_node(c, n, x, at);
}

static int v_node(vctx *c, const tgi_snode *n, json_t *x, const vpath *at)
{
	if (!n->kw)
		return 1;
	if (n->kw & TGI_KW_FALSE) {
		if (c->sink)
			report(c, at, at ? "is not allowed" : "no value is allowed here");
		return 0;
	}
	if (c->depth >= TGI_SCHEMA_MAX_DEPTH) {
		if (c->sink)
			report(c, at, "is nested too deeply (more than %d levels of schema)",
			       TGI_SCHEMA_MAX_DEPTH);
		return 0;
	}
	c->depth++;
	int ok = v_checks(c, n, x, at);
	c->depth--;
	return ok;
}

/* ---- entry point --------------------------------------------------------------- */

int tgi_schema_validate(const tgi_schema *s, json_t *instance, int apply_defaults,
                        tgi_schema_result *res)
{
	tgi_rscratch rx;
	sink k = {res ? res->errors : NULL, TGI_SCHEMA_MAX_ERRORS, 0, 0};
	vctx c = {res ? &k : NULL, &rx, 0, 1};

	if (res) {
		res->nerrors = 0;
		res->truncated = 0;
	}
	if (!s || !instance) {
		if (res) {
			res->nerrors = 1;
			res->errors[0].pointer[0] = '\0';
			tgi_snprintf(res->errors[0].message, sizeof res->errors[0].message,
			             "no %s to validate", s ? "value" : "schema");
		}
		return 0;
	}
	tgi_rscratch_init(&rx);
	int ok = v_node(&c, s->root, instance, NULL);
	if (ok && apply_defaults)
		tgi_schema_apply_defaults(s->root, instance, &rx);
	tgi_rscratch_fini(&rx);
	if (res) {
		if (!ok && !k.n) { /* every failure reports; this is a safety net */
			k.n = 1;
			res->errors[0].pointer[0] = '\0';
			tgi_snprintf(res->errors[0].message, sizeof res->errors[0].message, "is invalid");
		}
		res->nerrors = k.n;
		res->truncated = k.truncated;
	}
	return ok;
}
