/*
 * evaluate.c — an instance (a tgi_jv DOM, util/jv.h) against a compiled
 * schema (see node.h).
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
 * allocate anything.  Depth is capped at TGI_SCHEMA_MAX_DEPTH evaluations,
 * which also stops `$ref` cycles that never descend into the instance.
 *
 * Objects: the instance's members are visited once, in document order, and
 * each is looked up in the node's precompiled property table (a hash that
 * first tries the slot after the previous hit, since instances tend to
 * follow the schema's order); a hit sets bit i of a "seen" mask, so
 * `required` is one mask compare and never a lookup.
 *
 * A pattern that hits PCRE2's match or depth limit cannot be decided.
 * That is sticky, never "no match": whatever keyword holds the pattern
 * (including under not, if, anyOf or contains, where "no match" would
 * make the instance pass), the whole validation fails with one error,
 * "pattern too expensive to check", at the instance pointer concerned.
 *
 * Owns: the walk and the messages.  Must not: modify the compiled schema
 * or the instance, keep state between calls, or echo an instance value
 * without truncating it and stripping control characters.
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

/* What one validation shares across every sub-walk. */
typedef struct vrun {
	tgi_rscratch    *rx;
	int              expensive;  /* a pattern could not be decided: the answer is no */
	const tgi_regex *re;         /* that pattern */
	char             where[256]; /* and the instance pointer it was tried at */
} vrun;

typedef struct vctx {
	sink *sink;     /* NULL: yes/no mode */
	vrun *run;
	int   depth;
	int   closest;  /* may run an anyOf/oneOf branch to explain a failure */
} vctx;

/* One step from the root to the value under test. */
typedef struct vpath {
	const struct vpath *up;
	const char         *key;   /* member name, or NULL for an array index */
	size_t              index;
} vpath;

static int v_node(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at);
static inline int v_child(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at);

static inline int stop(const vctx *c)
{
	return !c->sink || c->sink->truncated || c->run->expensive;
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

/* Append n bytes; -1 (and cut) once the buffer is full. */
static int put(capped *b, const char *buf, size_t n)
{
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

/* s[0..n) as a JSON string literal. */
static int put_string(capped *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;
	if (put(b, "\"", 1) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		char esc[6] = {'\\', (char)ch, 0, 0, 0, 0};
		size_t elen = 2;
		switch (ch) {
		case '"': case '\\': break;
		case '\n': esc[1] = 'n'; break;
		case '\t': esc[1] = 't'; break;
		case '\r': esc[1] = 'r'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 15];
			elen = 6;
		}
		if (put(b, s + run, i - run) < 0 || put(b, esc, elen) < 0)
			return -1;
		run = i + 1;
	}
	if (put(b, s + run, n - run) < 0)
		return -1;
	return put(b, "\"", 1);
}

/* The shortest text that reads back as d, with ".0" when it would
 * otherwise read as an integer. */
static void real_string(char *out, size_t cap, double d)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	if (!strpbrk(out, ".en"))
		strncat(out, ".0", cap - strlen(out) - 1);
}

/* v as compact JSON; -1 once the buffer is full. */
static int put_value(capped *b, const tgi_jv *v)
{
	char num[40];
	switch (v->type) {
	case TGI_JV_NULL: return put(b, "null", 4);
	case TGI_JV_TRUE: return put(b, "true", 4);
	case TGI_JV_FALSE: return put(b, "false", 5);
	case TGI_JV_INT:
		snprintf(num, sizeof num, "%lld", (long long)v->u.i);
		return put(b, num, strlen(num));
	case TGI_JV_REAL:
		real_string(num, sizeof num, v->u.d);
		return put(b, num, strlen(num));
	case TGI_JV_STRING:
		return put_string(b, v->u.s, v->n);
	case TGI_JV_ARRAY:
		if (put(b, "[", 1) < 0)
			return -1;
		for (uint32_t i = 0; i < v->n; i++)
			if ((i && put(b, ",", 1) < 0) || put_value(b, &v->u.items[i]) < 0)
				return -1;
		return put(b, "]", 1);
	default:
		if (put(b, "{", 1) < 0)
			return -1;
		for (uint32_t i = 0; i < v->n; i++) {
			const tgi_jv_member *m = &v->u.members[i];
			if ((i && put(b, ",", 1) < 0) || put_string(b, m->key, m->klen) < 0 ||
			    put(b, ":", 1) < 0 || put_value(b, &m->value) < 0)
				return -1;
		}
		return put(b, "}", 1);
	}
}

/* v as compact JSON, at most `max` bytes, "..." when cut; out must hold
 * max + 4 bytes.  The writer stops at the cap, so a value nests at most
 * `max` levels into it. */
static void describe_n(char *out, size_t max, const tgi_jv *v)
{
	char tmp[LIST_MAX + 8];
	capped b = {tmp, 0, max + 1 < sizeof tmp ? max + 1 : sizeof tmp, 0};
	tmp[0] = '\0';
	put_value(&b, v);
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

static void describe(char out[ECHO_MAX + 4], const tgi_jv *v)
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

static const char *type_name(const tgi_jv *x)
{
	switch (x->type) {
	case TGI_JV_OBJECT: return "object";
	case TGI_JV_ARRAY: return "array";
	case TGI_JV_STRING: return "string";
	case TGI_JV_INT:
	case TGI_JV_REAL: return "number";
	case TGI_JV_TRUE:
	case TGI_JV_FALSE: return "boolean";
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

static inline unsigned type_bits(const tgi_jv *x)
{
	static const uint8_t bits[] = { /* by tgi_jv_type */
		[TGI_JV_NULL] = TGI_ST_NULL, [TGI_JV_FALSE] = TGI_ST_BOOLEAN,
		[TGI_JV_TRUE] = TGI_ST_BOOLEAN, [TGI_JV_INT] = TGI_ST_NUMBER | TGI_ST_INTEGER,
		[TGI_JV_REAL] = TGI_ST_NUMBER, [TGI_JV_STRING] = TGI_ST_STRING,
		[TGI_JV_ARRAY] = TGI_ST_ARRAY, [TGI_JV_OBJECT] = TGI_ST_OBJECT,
	};
	unsigned b = bits[x->type & 7];
	if (x->type == TGI_JV_REAL && tgi_is_integral(x->u.d))
		b |= TGI_ST_INTEGER;
	return b;
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
static void fail_type(vctx *c, const vpath *at, unsigned types, const tgi_jv *x)
{
	char want[128];
	type_list(want, sizeof want, types);
	report(c, at, "must be %s, got %s", want, type_name(x));
}

__attribute__((noinline, cold))
static void fail_number(vctx *c, const vpath *at, const char *what, const tgi_snum *lim,
                        const tgi_jv *x)
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
static void fail_pattern(vctx *c, const vpath *at, const tgi_regex *re)
{
	char pat[128];
	pattern_text(pat, sizeof pat, re);
	report(c, at, "must match %s", pat);
}

/* re could not be decided at `at`: remember the first such place; the
 * walk then winds down and the entry point reports it alone. */
__attribute__((noinline, cold))
static void too_expensive(vctx *c, const vpath *at, const tgi_regex *re)
{
	vrun *r = c->run;
	if (r->expensive)
		return;
	r->expensive = 1;
	r->re = re;
	path_string(at, r->where, sizeof r->where);
}

__attribute__((noinline, cold))
static void fail_format(vctx *c, const vpath *at, int format, const tgi_jv *x)
{
	char got[ECHO_MAX + 4];
	describe(got, x);
	report(c, at, "must be a valid %s, got %s", tgi_format_describe(format), got);
}

/* ---- scalars ------------------------------------------------------------------ */

/* x (a number) compared with a limit: <0, 0, >0. */
static int num_cmp(const tgi_jv *x, const tgi_snum *lim)
{
	if (x->type == TGI_JV_INT && lim->is_int)
		return (x->u.i > lim->i) - (x->u.i < lim->i);
	long double a = x->type == TGI_JV_INT ? (long double)x->u.i : (long double)x->u.d;
	long double b = lim->is_int ? (long double)lim->i : (long double)lim->d;
	return (a > b) - (a < b);
}

/* Decimal-friendly multipleOf: 0.0075 is a multiple of 0.0001 although
 * 0.0075 / 0.0001 is 74.99999999999999 in binary floating point.  The
 * quotient may be off by the rounding of three values, a few ulps. */
static int is_multiple(const tgi_jv *x, const tgi_snum *m)
{
	if (x->type == TGI_JV_INT && m->is_int)
		return x->u.i % m->i == 0; /* m->i > 0: compile checked */
	double q = (x->type == TGI_JV_INT ? (double)x->u.i : x->u.d) / m->d;
	if (!(q > -DBL_MAX && q < DBL_MAX))
		return 0; /* overflowed: 1e308 is no multiple of 0.123456789 */
	if (tgi_is_integral(q))
		return 1;
	double r = (double)(long long)(q < 0 ? q - 0.5 : q + 0.5);
	return __builtin_fabs(q - r) <= __builtin_fabs(q) * 4 * DBL_EPSILON;
}

static int v_number(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
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

static int v_string(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	const char *s = x->u.s;
	size_t len = x->n, cps = SIZE_MAX;
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
		int r = tgi_regex_match(n->pattern, c->run->rx, s, len);
		if (r < 0) {
			too_expensive(c, at, n->pattern);
			return 0;
		}
		if (!r)
			FAIL_BY(fail_pattern(c, at, n->pattern));
	}
	if ((kw & TGI_KW_FORMAT) && !tgi_format_check(n->format, s, len))
		FAIL_BY(fail_format(c, at, n->format, x));
	return ok;
}

/* ---- enum and const --------------------------------------------------------- */

static void value_list(char *out, size_t cap, const tgi_jv *v, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char one[44];
		describe_n(one, 40, &v[i]);
		if (len + strlen(one) + 6 >= cap || len + strlen(one) > LIST_MAX) {
			tgi_snprintf(out + len, cap - len, ", ...");
			return;
		}
		tgi_snprintf(out + len, cap - len, "%s%s", i ? ", " : "", one);
		len = strlen(out);
	}
}

__attribute__((noinline, cold))
static void fail_enum(vctx *c, const vpath *at, const tgi_snode *n, const tgi_jv *x)
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
static void fail_const(vctx *c, const vpath *at, const tgi_snode *n, const tgi_jv *x)
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

static int v_enum_const(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	int ok = 1;
	const char *s = NULL;
	size_t len = 0;
	if (x->type == TGI_JV_STRING) { /* strings compare as bytes: no general equality */
		s = x->u.s;
		len = x->n;
	}
	if (n->kw & TGI_KW_ENUM) {
		int found;
		if (s) {
			found = in_strs(n->enum_strs, n->nenum_strs, s, len);
		} else {
			size_t i = 0;
			while (i < n->nenum && !tgi_jv_equal(&n->enumv[i], x))
				i++;
			found = i < n->nenum;
		}
		if (!found)
			FAIL_BY(fail_enum(c, at, n, x));
	}
	if ((n->kw & TGI_KW_CONST) &&
	    !(s ? n->const_str.s && in_strs(&n->const_str, 1, s, len)
	        : tgi_jv_equal(n->constv, x)))
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
static int find_duplicate(const tgi_jv *a, size_t *first, size_t *second)
{
	size_t n = a->n;
	const tgi_jv *it = a->u.items;
	if (n <= SMALL_UNIQUE) {
		for (size_t j = 1; j < n; j++)
			for (size_t i = 0; i < j; i++)
				if (tgi_jv_equal(&it[i], &it[j])) {
					*first = i, *second = j;
					return 1;
				}
		return 0;
	}
	hashed *h = tgi_xmalloc(n * sizeof *h);
	for (size_t i = 0; i < n; i++)
		h[i] = (hashed){tgi_schema_value_hash(&it[i]), i};
	qsort(h, n, sizeof *h, hashed_cmp);
	int found = 0;
	for (size_t i = 0; i + 1 < n && !found; i++)
		for (size_t j = i + 1; j < n && h[j].h == h[i].h && !found; j++)
			if (tgi_jv_equal(&it[h[i].i], &it[h[j].i])) {
				*first = h[i].i, *second = h[j].i;
				found = 1;
			}
	free(h);
	return found;
}

static int v_array(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	uint32_t kw = n->kw;
	size_t len = x->n;
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
			CHECK(v_child(c, s, &x->u.items[i], &p));
		}
	}
	if (kw & TGI_KW_CONTAINS) {
		vctx q = *c;
		size_t matches = 0;
		q.sink = NULL;
		for (size_t i = 0; i < len && matches <= n->max_contains; i++) {
			vpath p = {at, NULL, i};
			if (v_node(&q, n->contains, &x->u.items[i], &p)) {
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
static void fail_name(vctx *c, const tgi_snode *n, const tgi_jv *name, const vpath *p)
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
static int v_property_name(vctx *c, const tgi_snode *n, const tgi_jv_member *m,
                           const vpath *p)
{
	tgi_jv name = {TGI_JV_STRING, m->klen, {.s = m->key}};
	vctx q = *c;
	q.sink = NULL;
	int ok = v_node(&q, n->names, &name, p);
	if (!ok && c->sink && !c->run->expensive)
		fail_name(c, n, &name, p);
	return ok;
}

/* Is property i of n in x?  The walk's bit when it has one, else a lookup. */
static inline int has_prop(const tgi_snode *n, const tgi_jv *x, unsigned i, int walked,
                           uint64_t seen)
{
	if (walked && i < 64)
		return (int)((seen >> i) & 1);
	return tgi_jv_get(x, n->props[i].name, n->props[i].len) != NULL;
}

static int v_object(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	uint32_t kw = n->kw;
	uint64_t seen = 0;
	int ok = 1, walked = 0;

	if (kw & (TGI_KW_MIN_PROPS | TGI_KW_MAX_PROPS)) {
		size_t size = x->n;
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
		for (uint32_t m = 0; m < x->n; m++) {
			const tgi_jv_member *mem = &x->u.members[m];
			const tgi_jv *v = &mem->value;
			vpath p = {at, mem->key, 0};
			int known = 0;
			int i = tgi_snode_prop_near(n, mem->key, mem->klen, guess);
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
				int r = tgi_regex_match(n->patterns[k].re, c->run->rx, mem->key, mem->klen);
				if (r < 0) {
					too_expensive(c, &p, n->patterns[k].re);
					return 0;
				}
				if (r) {
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
				CHECK(v_property_name(c, n, mem, &p));
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
static void explain_none(vctx *c, const tgi_slist *l, const char *kw, const tgi_jv *x, const vpath *at)
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

static int v_apply(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
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

static int v_checks(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	uint32_t kw = n->kw;
	int ok = 1;

	if ((kw & TGI_KW_TYPE) && !(type_bits(x) & n->types)) {
		if (c->sink)
			fail_type(c, at, n->types, x);
		return 0; /* the other keywords would only repeat this */
	}
	if (kw & TGI_KW_REF)
		CHECK(v_node(c, n->ref, x, at));
	if (kw & (TGI_KW_ENUM | TGI_KW_CONST))
		CHECK(v_enum_const(c, n, x, at));
	switch (x->type) {
	case TGI_JV_OBJECT:
		if (kw & TGI_KW_OBJECT_MASK)
			CHECK(v_object(c, n, x, at));
		break;
	case TGI_JV_ARRAY:
		if (kw & TGI_KW_ARRAY_MASK)
			CHECK(v_array(c, n, x, at));
		break;
	case TGI_JV_STRING:
		if (kw & TGI_KW_STRING_MASK)
			CHECK(v_string(c, n, x, at));
		break;
	case TGI_JV_INT:
	case TGI_JV_REAL:
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
static inline int v_child(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	if (n->kw == TGI_KW_TYPE && (type_bits(x) & n->types))
		return 1;
	return v_node(c, n, x, at);
}

static int v_node(vctx *c, const tgi_snode *n, const tgi_jv *x, const vpath *at)
{
	if (!n->kw)
		return 1;
	if (c->run->expensive)
		return 0; /* winding down: the answer is already no */
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

__attribute__((noinline, cold))
static void report_expensive(const vrun *r, tgi_schema_result *res)
{
	char pat[128];
	tgi_schema_error *e = &res->errors[0];
	pattern_text(pat, sizeof pat, r->re);
	tgi_sanitize(e->pointer, sizeof e->pointer, r->where);
	tgi_utf8_trim(e->pointer);
	tgi_snprintf(e->message, sizeof e->message,
	             "pattern too expensive to check (%s); send a simpler value", pat);
	tgi_utf8_trim(e->message);
	res->nerrors = 1;
	res->truncated = 0;
}

int tgi_schema_validate_jv(const tgi_schema *s, const tgi_jv *instance, tgi_schema_result *res)
{
	tgi_rscratch rx;
	vrun run;
	sink k = {res ? res->errors : NULL, TGI_SCHEMA_MAX_ERRORS, 0, 0};
	vctx c = {res ? &k : NULL, &run, 0, 1};

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
	run.rx = &rx;
	run.expensive = 0;
	int ok = v_node(&c, s->root, instance, NULL);
	tgi_rscratch_fini(&rx);
	if (run.expensive) {
		if (res)
			report_expensive(&run, res);
		return 0;
	}
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
