/*
 * yaml.c — YAML text to JSON (jansson), with a source map from each node's
 * JSON pointer to the line:column where the node starts.
 *
 * Plain scalars are typed with the YAML 1.2 core schema; quoted and block
 * scalars are strings.  Anything JSON cannot hold or that makes a document
 * mean more than it shows is refused with "line:col: sentence": anchors and
 * aliases, duplicate keys, non-scalar keys, several documents, custom tags,
 * infinities and NaN, NUL bytes, nesting deeper than YAML_MAX_DEPTH.
 *
 * Owns: the libyaml parser for one call and the source map it returns.
 * Must not: know what a configuration means (config.c does), read files,
 * or keep state between calls.
 *
 * The source map is a tree flattened into one array: every node has an id
 * (its creation order), its parent's id and its token (a key, or an array
 * index in decimal).  Sorted by (parent, token), a pointer is looked up one
 * token at a time with a binary search, so memory stays linear in the
 * document however deep or long its keys are.
 */
#include "util/yaml.h"
#include "util/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define YAML_MAX_DEPTH 64          /* nested mappings/sequences */
#define YAML_MAX_NODES 0x7fffffffu /* ids are uint32_t; far above any input we take */
#define NO_PARENT      UINT32_MAX

static const char TAG_STR[]   = "tag:yaml.org,2002:str";
static const char TAG_NULL[]  = "tag:yaml.org,2002:null";
static const char TAG_BOOL[]  = "tag:yaml.org,2002:bool";
static const char TAG_INT[]   = "tag:yaml.org,2002:int";
static const char TAG_FLOAT[] = "tag:yaml.org,2002:float";
static const char TAG_SEQ[]   = "tag:yaml.org,2002:seq";
static const char TAG_MAP[]   = "tag:yaml.org,2002:map";

/* ---- the source map ---- */

typedef struct map_ent {
	uint32_t id;
	uint32_t parent;
	size_t   tok;        /* offset of the NUL-terminated token in pool */
	int      line, col;  /* 1-based: the node */
	int      kline, kcol;/* its key, for a mapping's member; else the node */
} map_ent;

struct tgi_srcmap {
	map_ent *e;
	size_t   n, cap;
	tgi_buf  pool;       /* tokens; capped in proportion to the input */
	int      root_line, root_col;
};

static int ent_cmp(const void *a, const void *b, void *arg)
{
	const map_ent *x = a, *y = b;
	const tgi_srcmap *m = arg;
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(m->pool.p + x->tok, m->pool.p + y->tok);
}

/* The entry for (parent, tok), or NULL.  m is sorted. */
static const map_ent *map_find(const tgi_srcmap *m, uint32_t parent, const char *tok)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const map_ent *e = &m->e[mid];
		int c = e->parent != parent ? (e->parent < parent ? -1 : 1)
		                            : strcmp(m->pool.p + e->tok, tok);
		if (c == 0)
			return e;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The node at ptr, or its key (key != 0), as tgi_srcmap_lookup says it. */
static int lookup(const tgi_srcmap *m, const char *ptr, int key, int *line, int *col)
{
	if (!m || !ptr)
		return -1;
	if (!*ptr) {
		*line = m->root_line;
		*col = m->root_col;
		return 0;
	}
	if (*ptr != '/')
		return -1;

	/* Decode each token into tok (never longer than its escaped form). */
	size_t plen = strlen(ptr);
	char *tok = tgi_xmalloc(plen + 1);
	const map_ent *e = NULL;
	uint32_t parent = 0; /* the root's id */
	const char *p = ptr + 1;
	for (;;) {
		size_t j = 0;
		for (; *p && *p != '/'; p++) {
			char ch = *p;
			if (ch == '~') {
				ch = p[1] == '0' ? '~' : p[1] == '1' ? '/' : '\0';
				if (!ch)
					goto out;
				p++;
			}
			tok[j++] = ch;
		}
		tok[j] = '\0';
		e = map_find(m, parent, tok);
		if (!e || !*p)
			break;
		parent = e->id;
		p++;
	}
out:
	free(tok);
	if (!e || *p)
		return -1;
	*line = key ? e->kline : e->line;
	*col = key ? e->kcol : e->col;
	return 0;
}

int tgi_srcmap_lookup(const tgi_srcmap *m, const char *ptr, int *line, int *col)
{
	return lookup(m, ptr, 0, line, col);
}

int tgi_srcmap_lookup_key(const tgi_srcmap *m, const char *ptr, int *line, int *col)
{
	return lookup(m, ptr, 1, line, col);
}

void tgi_srcmap_free(tgi_srcmap *m)
{
	if (!m)
		return;
	free(m->e);
	tgi_buf_free(&m->pool);
	free(m);
}

/* ---- the parser ---- */

typedef struct yp {
	yaml_parser_t parser;
	const char   *text;
	size_t        len;
	tgi_srcmap   *map;    /* NULL when the caller wants none */
	uint32_t      nodes;  /* ids handed out so far (the root is 0) */
	char         *err;
	size_t        errlen;
} yp;

/* Line and column (1-based, columns in characters) of byte offset off. */
static void offset_pos(const char *text, size_t len, size_t off, int *line, int *col)
{
	int l = 1, c = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		unsigned char ch = (unsigned char)text[i];
		if (ch == '\n') {
			l++;
			c = 1;
		} else if ((ch & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

__attribute__((format(printf, 3, 4)))
static void fail(yp *p, yaml_mark_t m, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_snprintf(p->err, p->errlen, "%d:%d: %s", (int)m.line + 1, (int)m.column + 1, msg);
}

/* Report libyaml's own error. */
static void fail_libyaml(yp *p)
{
	yaml_parser_t *y = &p->parser;
	int line, col;
	const char *problem = y->problem ? y->problem : "cannot parse the document";

	switch (y->error) {
	case YAML_MEMORY_ERROR:
		tgi_snprintf(p->err, p->errlen, "1:1: out of memory while parsing");
		return;
	case YAML_READER_ERROR:
		offset_pos(p->text, p->len, y->problem_offset, &line, &col);
		tgi_snprintf(p->err, p->errlen, "%d:%d: %s", line, col, problem);
		return;
	default:
		line = (int)y->problem_mark.line + 1;
		col = (int)y->problem_mark.column + 1;
		if (y->context)
			tgi_snprintf(p->err, p->errlen, "%d:%d: %s (%s that started at %d:%d)",
			             line, col, problem, y->context, (int)y->context_mark.line + 1,
			             (int)y->context_mark.column + 1);
		else
			tgi_snprintf(p->err, p->errlen, "%d:%d: %s", line, col, problem);
		return;
	}
}

static int next(yp *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->parser, ev)) {
		fail_libyaml(p);
		return -1;
	}
	return 0;
}

/* Quote s for a message: sanitized, cut short. */
static const char *quoted(char out[72], const char *s)
{
	char clean[64];
	tgi_sanitize(clean, sizeof clean, s);
	snprintf(out, 72, "\"%s%s\"", clean, strlen(s) >= sizeof clean ? "..." : "");
	return out;
}

/* Record a node (parent, token) at mark, its key at kmark; its id goes to
 * *id.  Without a map only the id counter moves. */
static int map_add(yp *p, uint32_t parent, const char *tok, yaml_mark_t mark, yaml_mark_t kmark,
                   uint32_t *id)
{
	if (p->nodes >= YAML_MAX_NODES) {
		fail(p, mark, "the document has too many nodes");
		return -1;
	}
	*id = p->nodes++;
	tgi_srcmap *m = p->map;
	if (!m)
		return 0;
	size_t off = m->pool.len;
	if (tgi_buf_append(&m->pool, tok, strlen(tok) + 1) < 0) {
		fail(p, mark, "the document is too large to map");
		return -1;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->e = tgi_xrealloc(m->e, m->cap * sizeof *m->e);
	}
	m->e[m->n++] = (map_ent){ *id, parent, off, (int)mark.line + 1, (int)mark.column + 1,
	                          (int)kmark.line + 1, (int)kmark.column + 1 };
	return 0;
}

/* ---- scalars (YAML 1.2 core schema) ---- */

/* What a scalar reads as; K_ANY: an untagged plain scalar, typed by its text. */
typedef enum { K_ANY, K_NULL, K_BOOL, K_INT, K_FLOAT, K_SPECIAL, K_STR } kind;

static int all_digits(const char *s, size_t n, int base)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		int ok = base == 8 ? (c >= '0' && c <= '7')
		       : base == 16 ? ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'))
		       : (c >= '0' && c <= '9');
		if (!ok)
			return 0;
	}
	return 1;
}

static int one_of(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return 1;
	return 0;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int is_float(const char *s, size_t n)
{
	size_t i = 0, d = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++, d++;
	if (i < n && s[i] == '.') {
		i++;
		size_t f = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, f++;
		if (!d && !f)
			return 0;
	} else if (!d) {
		return 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		if (!all_digits(s + i, n - i, 10))
			return 0;
		i = n;
	}
	return i == n;
}

static kind classify(const char *s, size_t n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const bools[] = { "true", "True", "TRUE", "false", "False", "FALSE", NULL };
	static const char *const specials[] = {
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
		".nan", ".NaN", ".NAN", NULL
	};
	if (one_of(s, nulls))
		return K_NULL;
	if (one_of(s, bools))
		return K_BOOL;
	size_t sign = (n && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
	if (all_digits(s + sign, n - sign, 10))
		return K_INT;
	if (n > 2 && s[0] == '0' && ((s[1] == 'o' && all_digits(s + 2, n - 2, 8)) ||
	                             (s[1] == 'x' && all_digits(s + 2, n - 2, 16))))
		return K_INT;
	if (is_float(s, n))
		return K_FLOAT;
	if (one_of(s, specials))
		return K_SPECIAL;
	return K_STR;
}

/* Integer text already classified K_INT into *out; -1 if out of range. */
static int int_value(const char *s, size_t n, json_int_t *out)
{
	int neg = 0, base = 10;
	size_t i = 0;
	if (s[0] == '-' || s[0] == '+')
		neg = s[i++] == '-';
	else if (n > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x'))
		base = s[1] == 'o' ? 8 : 16, i = 2;
	unsigned long long limit = neg ? (unsigned long long)INT64_MAX + 1 : INT64_MAX;
	unsigned long long v = 0;
	for (; i < n; i++) {
		int c = (unsigned char)s[i];
		unsigned d = c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 0x20) - 'a' + 10);
		if (v > (limit - d) / (unsigned)base)
			return -1;
		v = v * (unsigned)base + d;
	}
	*out = neg ? (json_int_t)(0 - v) : (json_int_t)v;
	return 0;
}

static const char *kind_name(kind k)
{
	switch (k) {
	case K_NULL:  return "null";
	case K_BOOL:  return "boolean";
	case K_INT:   return "integer";
	case K_FLOAT: return "float";
	default:      return "string";
	}
}

static json_t *string(yp *p, yaml_mark_t at, const char *s, size_t n)
{
	json_t *v = json_stringn(s, n);
	if (!v)
		fail(p, at, "string is not valid UTF-8");
	return v;
}

static json_t *scalar(yp *p, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	yaml_mark_t at = ev->start_mark;
	char q[72];
	kind want;

	if (memchr(s, '\0', n)) {
		fail(p, at, "strings must not contain NUL bytes");
		return NULL;
	}
	if (!tag)
		want = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? K_ANY : K_STR;
	else if (!strcmp(tag, "!") || !strcmp(tag, TAG_STR))
		want = K_STR;
	else if (!strcmp(tag, TAG_NULL))
		want = K_NULL;
	else if (!strcmp(tag, TAG_BOOL))
		want = K_BOOL;
	else if (!strcmp(tag, TAG_INT))
		want = K_INT;
	else if (!strcmp(tag, TAG_FLOAT))
		want = K_FLOAT;
	else {
		fail(p, at, "tag %s is not supported", quoted(q, tag));
		return NULL;
	}

	if (want == K_STR)
		return string(p, at, s, n);

	kind k = classify(s, n);
	if (k == K_SPECIAL) {
		fail(p, at, "%s: infinity and NaN cannot be represented in JSON", quoted(q, s));
		return NULL;
	}
	if (want == K_ANY)
		want = k;
	if (k != want && !(want == K_FLOAT && k == K_INT)) {
		fail(p, at, "%s is not a valid %s", quoted(q, s), kind_name(want));
		return NULL;
	}

	json_int_t i;
	switch (want) {
	case K_STR:
		return string(p, at, s, n);
	case K_NULL:
		return json_null();
	case K_BOOL:
		return json_boolean(s[0] == 't' || s[0] == 'T');
	case K_INT:
		if (int_value(s, n, &i) < 0) {
			fail(p, at, "integer %s is out of range", quoted(q, s));
			return NULL;
		}
		return json_integer(i);
	default: {
		/* a float, or an integer tagged !!float (0x/0o need int_value) */
		double d = (k == K_INT && int_value(s, n, &i) == 0) ? (double)i : strtod(s, NULL);
		if (isinf(d)) {
			fail(p, at, "number %s is out of range", quoted(q, s));
			return NULL;
		}
		return json_real(d);
	}
	}
}

/* ---- collections and the document ---- */

static json_t *node(yp *p, yaml_event_t *ev, uint32_t id, int depth);

static const char *anchor_of(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:         return (const char *)ev->data.scalar.anchor;
	case YAML_SEQUENCE_START_EVENT: return (const char *)ev->data.sequence_start.anchor;
	case YAML_MAPPING_START_EVENT:  return (const char *)ev->data.mapping_start.anchor;
	default:                        return NULL;
	}
}

/* Check what every node may not carry: an anchor, an alias, a foreign
 * collection tag, or one nesting level too many. */
static int node_ok(yp *p, const yaml_event_t *ev, int depth)
{
	char q[72];
	const char *tag = NULL, *std = NULL;

	if (ev->type == YAML_ALIAS_EVENT) {
		fail(p, ev->start_mark, "alias %s: aliases are not supported",
		     quoted(q, (const char *)ev->data.alias.anchor));
		return -1;
	}
	if (anchor_of(ev)) {
		fail(p, ev->start_mark, "anchor %s: anchors and aliases are not supported",
		     quoted(q, anchor_of(ev)));
		return -1;
	}
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		tag = (const char *)ev->data.sequence_start.tag, std = TAG_SEQ;
	else if (ev->type == YAML_MAPPING_START_EVENT)
		tag = (const char *)ev->data.mapping_start.tag, std = TAG_MAP;
	else
		return 0;
	if (tag && strcmp(tag, "!") && strcmp(tag, std)) {
		fail(p, ev->start_mark, "tag %s is not supported", quoted(q, tag));
		return -1;
	}
	if (depth >= YAML_MAX_DEPTH) {
		fail(p, ev->start_mark, "nesting is deeper than %d levels", YAML_MAX_DEPTH);
		return -1;
	}
	return 0;
}

/* The key of a mapping entry as a NUL-terminated string (caller frees), or
 * NULL with err set.  Deletes ev. */
static char *mapping_key(yp *p, yaml_event_t *ev)
{
	char *key = NULL;
	char q[72];
	const char *tag = ev->type == YAML_SCALAR_EVENT ? (const char *)ev->data.scalar.tag : NULL;

	if (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT)
		fail(p, ev->start_mark, "mapping keys must be scalars, not %s",
		     ev->type == YAML_SEQUENCE_START_EVENT ? "lists" : "mappings");
	else if (node_ok(p, ev, 0) < 0)
		;
	else if (ev->type != YAML_SCALAR_EVENT)
		fail(p, ev->start_mark, "expected a mapping key");
	else if (tag && strcmp(tag, "!") && strcmp(tag, TAG_STR))
		fail(p, ev->start_mark, "key tag %s is not supported; keys are strings", quoted(q, tag));
	else if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length))
		fail(p, ev->start_mark, "keys must not contain NUL bytes");
	else
		key = tgi_strdup((const char *)ev->data.scalar.value);
	yaml_event_delete(ev);
	return key;
}

static json_t *mapping(yp *p, uint32_t id, int depth)
{
	json_t *obj = json_object();
	char q[72];

	for (;;) {
		yaml_event_t kev, vev;
		if (next(p, &kev) < 0)
			goto fail;
		if (kev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&kev);
			return obj;
		}
		yaml_mark_t kmark = kev.start_mark;
		char *key = mapping_key(p, &kev);
		if (!key)
			goto fail;
		if (json_object_get(obj, key)) {
			fail(p, kmark, "duplicate key %s", quoted(q, key));
			free(key);
			goto fail;
		}
		uint32_t cid;
		if (next(p, &vev) < 0) {
			free(key);
			goto fail;
		}
		if (map_add(p, id, key, vev.start_mark, kmark, &cid) < 0) {
			yaml_event_delete(&vev);
			free(key);
			goto fail;
		}
		json_t *v = node(p, &vev, cid, depth + 1);
		if (!v || json_object_set_new(obj, key, v) < 0) {
			if (v)
				fail(p, kmark, "key %s is not valid UTF-8", quoted(q, key));
			free(key);
			goto fail;
		}
		free(key);
	}
fail:
	json_decref(obj);
	return NULL;
}

static json_t *sequence(yp *p, uint32_t id, int depth)
{
	json_t *arr = json_array();

	for (size_t i = 0;; i++) {
		yaml_event_t ev;
		char tok[24];
		uint32_t cid;
		if (next(p, &ev) < 0)
			goto fail;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return arr;
		}
		snprintf(tok, sizeof tok, "%zu", i);
		if (map_add(p, id, tok, ev.start_mark, ev.start_mark, &cid) < 0) {
			yaml_event_delete(&ev);
			goto fail;
		}
		json_t *v = node(p, &ev, cid, depth + 1);
		if (!v)
			goto fail;
		json_array_append_new(arr, v);
	}
fail:
	json_decref(arr);
	return NULL;
}

/* Build the node that ev starts; depth counts the collections around it.
 * Always deletes ev. */
static json_t *node(yp *p, yaml_event_t *ev, uint32_t id, int depth)
{
	json_t *v = NULL;
	if (node_ok(p, ev, depth) == 0) {
		switch (ev->type) {
		case YAML_SCALAR_EVENT:
			v = scalar(p, ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			v = sequence(p, id, depth);
			break;
		case YAML_MAPPING_START_EVENT:
			v = mapping(p, id, depth);
			break;
		default:
			fail(p, ev->start_mark, "expected a value");
			break;
		}
	}
	yaml_event_delete(ev);
	return v;
}

/* Expect an event of type t (anything else is reported with what). */
static int expect(yp *p, yaml_event_type_t t, const char *what)
{
	yaml_event_t ev;
	if (next(p, &ev) < 0)
		return -1;
	int ok = ev.type == t;
	if (!ok)
		fail(p, ev.start_mark, "%s", what);
	yaml_event_delete(&ev);
	return ok ? 0 : -1;
}

static json_t *document(yp *p)
{
	yaml_event_t ev;
	json_t *root;

	if (expect(p, YAML_STREAM_START_EVENT, "expected the start of the text") < 0)
		return NULL;
	if (next(p, &ev) < 0)
		return NULL;
	if (ev.type == YAML_STREAM_END_EVENT) { /* empty text: a null document */
		yaml_event_delete(&ev);
		if (p->map)
			p->map->root_line = p->map->root_col = 1;
		return json_null();
	}
	int is_doc = ev.type == YAML_DOCUMENT_START_EVENT;
	yaml_mark_t at = ev.start_mark;
	yaml_event_delete(&ev);
	if (!is_doc) {
		fail(p, at, "expected a document");
		return NULL;
	}

	if (next(p, &ev) < 0)
		return NULL;
	if (p->map) {
		p->map->root_line = (int)ev.start_mark.line + 1;
		p->map->root_col = (int)ev.start_mark.column + 1;
	}
	p->nodes = 1; /* the root is 0 */
	root = node(p, &ev, 0, 0);
	if (!root)
		return NULL;
	if (expect(p, YAML_DOCUMENT_END_EVENT, "expected the end of the document") < 0 ||
	    expect(p, YAML_STREAM_END_EVENT, "multiple documents are not supported") < 0) {
		json_decref(root);
		return NULL;
	}
	return root;
}

json_t *tgi_yaml_parse(const char *text, size_t len, tgi_srcmap **map, char *err, size_t errlen)
{
	yp p = { .text = text, .len = len, .err = err, .errlen = errlen };
	json_t *root = NULL;

	if (map)
		*map = NULL;
	const char *nul = memchr(text, '\0', len);
	if (nul) {
		int line, col;
		offset_pos(text, len, (size_t)(nul - text), &line, &col);
		tgi_snprintf(err, errlen, "%d:%d: the text contains a NUL byte", line, col);
		return NULL;
	}
	if (map) {
		p.map = tgi_xcalloc(1, sizeof *p.map);
		/* tokens: keys appear in the text; indices take at most ~4x their item */
		tgi_buf_init(&p.map->pool, len > SIZE_MAX / 8 ? SIZE_MAX : 8 * len + 4096);
	}
	if (!yaml_parser_initialize(&p.parser)) {
		tgi_snprintf(err, errlen, "1:1: out of memory while parsing");
		tgi_srcmap_free(p.map);
		return NULL;
	}
	yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);
	root = document(&p);
	yaml_parser_delete(&p.parser);

	if (!root) {
		tgi_srcmap_free(p.map);
		return NULL;
	}
	if (map) {
		if (p.map->n)
			qsort_r(p.map->e, p.map->n, sizeof *p.map->e, ent_cmp, p.map);
		*map = p.map;
	}
	return root;
}
