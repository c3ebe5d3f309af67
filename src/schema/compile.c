/*
 * compile.c — a JSON Schema document → a graph of tgi_snode (see node.h).
 *
 * Two passes over the borrowed document:
 *
 *   scan     walks every schema position (keyword-aware, so an "$id" inside
 *            an enum value or a property *named* "$ref" is data), records
 *            the base URI and JSON pointer of each schema object, and
 *            indexes the resources ($id) and anchors ($id "#name",
 *            $anchor) that `$ref` may name.
 *   compile  turns one schema object at a time into a node, from a work
 *            list rather than by recursion, so a chain of a thousand
 *            definitions costs no stack.  Each schema object maps to one
 *            node; a `$ref` becomes a pointer to its target's node, so
 *            recursive schemas are cycles and compile in finite time.
 *
 * Then ref-only nodes are bypassed and each node learns whether a
 * `default` is reachable from it (for defaults.c).
 *
 * Dialect: `$ref` beside other keywords is one more keyword (2019-09 and
 * later) unless the document's "$schema" names draft 7 or older, or the
 * caller passes TGI_SCHEMA_DRAFT7; then, as draft 7 says, the siblings
 * are ignored.
 *
 * Owns: the compiled schema and everything in it (copies of enum and const
 * values in a tgi_jv doc, of default values as jansson; regexes).  Must not: keep any reference into
 * the document, fetch a remote reference, or report an error without the
 * JSON pointer of the keyword at fault.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/node.h"
#include "util/util.h"

#define PTR_MAX    2048     /* schema pointers longer than this are cut */
#define MAX_PROPS  65535    /* property names one node may know */

typedef struct loc {        /* one schema object found by the scan */
	const json_t *json;
	const char   *base;     /* borrowed from cstate.bases */
	char         *ptr;      /* JSON pointer from the document root; owned */
	tgi_snode    *node;     /* once scheduled for compiling */
} loc;

typedef struct resource {   /* "$id" resources and anchors ("uri#name") */
	char         *uri;      /* owned */
	const json_t *json;
} resource;

typedef struct cstate {
	tgi_schema *s;
	unsigned    flags;
	int         draft7;
	char       *err;
	size_t      errlen;
	int         failed;
	loc        *locs;
	size_t      nlocs, caplocs;
	uint32_t   *map;        /* json_t * → loc index + 1, open addressing */
	size_t      mapcap;
	char      **bases;
	size_t      nbases, capbases;
	resource   *res;
	size_t      nres, capres;
	size_t     *work;       /* loc indexes waiting to be compiled */
	size_t      nwork, capwork;
	size_t      capnodes;   /* of s->nodes */
} cstate;

static void grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	*v = tgi_xrealloc(*v, c * size);
	*cap = c;
}
#define PUSH(v, n, cap) (grow((void **)&(v), &(cap), (n) + 1, sizeof *(v)), &(v)[(n)++])

/* ---- errors and pointers ---------------------------------------------------- */

/* Record the first error as "<pointer>: <sentence>". */
__attribute__((format(printf, 3, 4)))
static void fail(cstate *cs, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	if (cs->failed)
		return;
	cs->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	size_t len = where ? strlen(where) : 0;
	if (len > 120) { /* keep the sentence: elide the middle of a long pointer */
		size_t head = 40, tail = len - 60;
		while (head > 0 && ((unsigned char)where[head] & 0xC0) == 0x80)
			head--;
		while (((unsigned char)where[tail] & 0xC0) == 0x80)
			tail++;
		tgi_snprintf(cs->err, cs->errlen, "%.*s...%s: %s", (int)head, where, where + tail, msg);
	} else if (len)
		tgi_snprintf(cs->err, cs->errlen, "%s: %s", where, msg);
	else
		tgi_snprintf(cs->err, cs->errlen, "schema root: %s", msg);
	tgi_sanitize(cs->err, cs->errlen, cs->err);
	tgi_utf8_trim(cs->err);
}

/* parent + "/" + escaped token (+ "/" + escaped token2); caller frees. */
static char *ptr_join(const char *parent, const char *tok, const char *tok2)
{
	tgi_buf b;
	tgi_buf_init(&b, PTR_MAX);
	(void)tgi_buf_puts(&b, parent);
	for (const char *t = tok; t; t = t == tok ? tok2 : NULL) {
		if (tgi_buf_puts(&b, "/") < 0)
			break;
		for (const char *c = t; *c; c++) {
			const char *esc = *c == '~' ? "~0" : *c == '/' ? "~1" : NULL;
			if ((esc ? tgi_buf_puts(&b, esc) : tgi_buf_append(&b, c, 1)) < 0)
				break;
		}
	}
	return tgi_buf_steal(&b);
}

static char *ptr_index(const char *parent, const char *kw, size_t i)
{
	char num[24];
	snprintf(num, sizeof num, "%zu", i);
	return ptr_join(parent, kw, num);
}

/* ---- schema positions: json_t * → loc ---------------------------------------- */

static size_t ptr_hash(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return (size_t)(h ^ (h >> 32));
}

static long loc_find(const cstate *cs, const json_t *j)
{
	if (!cs->mapcap)
		return -1;
	for (size_t i = ptr_hash(j) & (cs->mapcap - 1);; i = (i + 1) & (cs->mapcap - 1)) {
		uint32_t v = cs->map[i];
		if (!v)
			return -1;
		if (cs->locs[v - 1].json == j)
			return (long)(v - 1);
	}
}

static void map_put(cstate *cs, size_t idx)
{
	for (size_t i = ptr_hash(cs->locs[idx].json) & (cs->mapcap - 1);; i = (i + 1) & (cs->mapcap - 1)) {
		if (!cs->map[i]) {
			cs->map[i] = (uint32_t)idx + 1;
			return;
		}
	}
}

static size_t loc_add(cstate *cs, const json_t *j, const char *base, const char *ptr)
{
	loc *l = PUSH(cs->locs, cs->nlocs, cs->caplocs);
	l->json = j;
	l->base = base;
	l->ptr = tgi_strdup(ptr);
	l->node = NULL;
	if (cs->nlocs * 2 > cs->mapcap) {
		free(cs->map);
		cs->mapcap = cs->mapcap ? cs->mapcap * 2 : 64;
		cs->map = tgi_xcalloc(cs->mapcap, sizeof *cs->map);
		for (size_t i = 0; i < cs->nlocs; i++)
			map_put(cs, i);
	} else {
		map_put(cs, cs->nlocs - 1);
	}
	return cs->nlocs - 1;
}

static const char *base_intern(cstate *cs, char *uri)
{
	*PUSH(cs->bases, cs->nbases, cs->capbases) = uri;
	return uri;
}

static const json_t *resource_find(const cstate *cs, const char *uri)
{
	for (size_t i = 0; i < cs->nres; i++)
		if (strcmp(cs->res[i].uri, uri) == 0)
			return cs->res[i].json;
	return NULL;
}

static void resource_add(cstate *cs, const char *uri, const json_t *j)
{
	if (resource_find(cs, uri))
		return; /* the first definition wins */
	resource *r = PUSH(cs->res, cs->nres, cs->capres);
	r->uri = tgi_strdup(uri);
	r->json = j;
}

/* A location-independent name: "base#name". */
static void anchor_add(cstate *cs, const char *base, const char *name, const json_t *j)
{
	size_t n = strlen(base) + strlen(name) + 2;
	char *a = tgi_xmalloc(n);
	snprintf(a, n, "%s#%s", base, name);
	resource_add(cs, a, j);
	free(a);
}

/* ---- scan ------------------------------------------------------------------------ */

/* Keywords whose value is a schema, an array of schemas, or a map of them. */
static const char *const kw_schema[] = {
	"additionalProperties", "additionalItems", "items", "contains", "propertyNames",
	"not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties",
};
static const char *const kw_array[] = {"allOf", "anyOf", "oneOf", "items", "prefixItems"};
static const char *const kw_map[] = {
	"properties", "patternProperties", "definitions", "$defs", "dependentSchemas",
	"dependencies",
};

static void scan(cstate *cs, const json_t *j, const char *base, const char *ptr, int depth);

/* Apply "$id" / "$anchor" of j; returns the base URI inside j. */
static const char *scan_ids(cstate *cs, const json_t *j, const char *base)
{
	const char *id = json_string_value(json_object_get(j, "$id"));
	if (id && !(cs->draft7 && json_object_get(j, "$ref"))) {
		char *abs = tgi_uri_resolve(base, id);
		if (abs) {
			char *frag = strchr(abs, '#');
			if (frag)
				*frag++ = '\0';
			if (strcmp(abs, base) != 0) {
				resource_add(cs, abs, j);
				base = base_intern(cs, tgi_strdup(abs));
			}
			if (frag && *frag && *frag != '/')
				anchor_add(cs, base, frag, j);
			free(abs);
		}
	}
	const char *anchor = json_string_value(json_object_get(j, "$anchor"));
	if (anchor)
		anchor_add(cs, base, anchor, j);
	return base;
}

static void scan_child(cstate *cs, const json_t *v, const char *base, const char *ptr,
                       const char *kw, const char *key, long idx, int depth)
{
	if (!json_is_object(v))
		return;
	char *p = key ? ptr_join(ptr, kw, key) : idx >= 0 ? ptr_index(ptr, kw, (size_t)idx)
	                                                  : ptr_join(ptr, kw, NULL);
	scan(cs, v, base, p, depth + 1);
	free(p);
}

static void scan(cstate *cs, const json_t *j, const char *base, const char *ptr, int depth)
{
	if (cs->failed || !json_is_object(j) || loc_find(cs, j) >= 0)
		return;
	if (depth > TGI_SCHEMA_MAX_DEPTH) {
		fail(cs, ptr, "schema is nested more than %d levels deep", TGI_SCHEMA_MAX_DEPTH);
		return;
	}
	base = scan_ids(cs, j, base);
	loc_add(cs, j, base, ptr);
	for (size_t k = 0; k < TGI_ARRAY_LEN(kw_schema); k++)
		scan_child(cs, json_object_get(j, kw_schema[k]), base, ptr, kw_schema[k], NULL, -1, depth);
	for (size_t k = 0; k < TGI_ARRAY_LEN(kw_array); k++) {
		const json_t *a = json_object_get(j, kw_array[k]);
		for (size_t i = 0; i < json_array_size(a); i++)
			scan_child(cs, json_array_get(a, i), base, ptr, kw_array[k], NULL, (long)i, depth);
	}
	for (size_t k = 0; k < TGI_ARRAY_LEN(kw_map); k++) {
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)json_object_get(j, kw_map[k]), key, v)
			scan_child(cs, v, base, ptr, kw_map[k], key, -1, depth);
	}
}

/* ---- nodes ------------------------------------------------------------------------ */

/*
 * The node for schema json j (at `ptr`, `base` when the scan has not seen
 * it), scheduling it for compiling on first sight.  NULL after an error.
 */
static const tgi_snode *node_for(cstate *cs, const json_t *j, const char *base, const char *ptr)
{
	if (json_is_true(j))
		return &cs->s->node_true;
	if (json_is_false(j))
		return &cs->s->node_false;
	if (!json_is_object(j)) {
		fail(cs, ptr, "must be a schema (an object or a boolean)");
		return NULL;
	}
	long idx = loc_find(cs, j);
	if (idx < 0) {
		scan(cs, j, base, ptr, 0);
		if (cs->failed)
			return NULL;
		idx = loc_find(cs, j);
	}
	loc *l = &cs->locs[idx];
	if (!l->node) {
		tgi_schema *s = cs->s;
		l->node = tgi_xcalloc(1, sizeof *l->node);
		l->node->where = tgi_strdup(l->ptr);
		*PUSH(s->nodes, s->nnodes, cs->capnodes) = l->node;
		*PUSH(cs->work, cs->nwork, cs->capwork) = (size_t)idx;
	}
	return l->node;
}

/* Compile keyword kw's value v (a schema); `key`/`idx` locate it inside kw. */
static const tgi_snode *sub(cstate *cs, const tgi_snode *n, const char *base, const json_t *v,
                            const char *kw, const char *key, long idx)
{
	char *p = key ? ptr_join(n->where, kw, key) : idx >= 0 ? ptr_index(n->where, kw, (size_t)idx)
	                                                       : ptr_join(n->where, kw, NULL);
	const tgi_snode *r = node_for(cs, v, base, p);
	free(p);
	return r;
}

/* ---- $ref ------------------------------------------------------------------------- */

static const tgi_snode *resolve_ref(cstate *cs, const tgi_snode *n, const char *base,
                                    const char *ref)
{
	char *where = ptr_join(n->where, "$ref", NULL);
	const tgi_snode *target = NULL;
	char *abs = tgi_uri_resolve(base, ref), *frag = NULL, *decoded = NULL;
	if (!abs) {
		fail(cs, where, "\"%s\" is not a valid URI reference", ref);
		goto out;
	}
	if ((frag = strchr(abs, '#')))
		*frag++ = '\0';
	const json_t *doc = resource_find(cs, abs);
	if (!doc) {
		fail(cs, where, "remote reference \"%s\" is not supported (only references "
		     "within the schema)", ref);
		goto out;
	}
	const json_t *t = doc;
	if (frag && *frag) {
		decoded = tgi_uri_unescape(frag, strlen(frag));
		if (!decoded) {
			fail(cs, where, "\"%s\" has a bad %%-escape", ref);
			goto out;
		}
		if (decoded[0] == '/') {
			t = tgi_json_pointer((json_t *)doc, decoded);
		} else {
			size_t len = strlen(abs) + strlen(decoded) + 2;
			char *anchor = tgi_xmalloc(len);
			snprintf(anchor, len, "%s#%s", abs, decoded);
			t = resource_find(cs, anchor);
			free(anchor);
		}
		if (!t) {
			fail(cs, where, "\"%s\" does not point to anything in the schema", ref);
			goto out;
		}
	}
	/* An unscanned target (under an unknown keyword) takes the pointer the
	 * reference spells and the base of the resource it lives in. */
	long idx = loc_find(cs, doc);
	const char *tbase = idx >= 0 ? cs->locs[idx].base : base_intern(cs, tgi_strdup(abs));
	char *tptr;
	if (idx >= 0 && decoded && decoded[0] == '/') {
		size_t len = strlen(cs->locs[idx].ptr) + strlen(decoded) + 1;
		tptr = tgi_xmalloc(len);
		snprintf(tptr, len, "%s%s", cs->locs[idx].ptr, decoded);
	} else {
		tptr = tgi_strdup(where);
	}
	target = node_for(cs, t, tbase, tptr);
	free(tptr);
out:
	free(decoded);
	free(abs);
	free(where);
	return target;
}

/* ---- keyword values ------------------------------------------------------------- */

static int kw_fail(cstate *cs, const tgi_snode *n, const char *kw, const char *what)
{
	char *p = ptr_join(n->where, kw, NULL);
	fail(cs, p, "%s", what);
	free(p);
	return -1;
}

/* A non-negative integer keyword (1.0 counts); 1 present, 0 absent, -1 bad. */
static int get_count(cstate *cs, const tgi_snode *n, const json_t *j, const char *kw, size_t *out)
{
	const json_t *v = json_object_get(j, kw);
	if (!v)
		return 0;
	double d = json_number_value(v);
	if (!json_is_number(v) || d < 0 || !tgi_is_integral(d))
		return kw_fail(cs, n, kw, "must be a non-negative integer");
	if (json_is_integer(v))
		*out = (size_t)json_integer_value(v);
	else
		*out = d >= 1.8e19 ? SIZE_MAX : (size_t)d;
	return 1;
}

static int get_num(cstate *cs, const tgi_snode *n, const json_t *j, const char *kw, tgi_snum *out)
{
	const json_t *v = json_object_get(j, kw);
	if (!v)
		return 0;
	if (!json_is_number(v))
		return kw_fail(cs, n, kw, json_is_boolean(v)
		               ? "must be a number (the draft 4 boolean form is not supported)"
		               : "must be a number");
	out->is_int = json_is_integer(v);
	out->i = out->is_int ? json_integer_value(v) : 0;
	out->d = json_number_value(v);
	return 1;
}

static int get_list(cstate *cs, tgi_snode *n, const char *base, const json_t *j, const char *kw,
                    tgi_slist *out)
{
	const json_t *a = json_object_get(j, kw);
	if (!a)
		return 0;
	if (!json_is_array(a) || !json_array_size(a))
		return kw_fail(cs, n, kw, "must be a non-empty array of schemas");
	out->n = json_array_size(a);
	out->v = tgi_xcalloc(out->n, sizeof *out->v);
	for (size_t i = 0; i < out->n; i++)
		if (!(out->v[i] = sub(cs, n, base, json_array_get(a, i), kw, NULL, (long)i)))
			return -1;
	return 1;
}

/* A single-schema keyword; `true` compiles to NULL when `drop_true`. */
static int get_sub(cstate *cs, tgi_snode *n, const char *base, const json_t *j, const char *kw,
                   const tgi_snode **out, int drop_true)
{
	const json_t *v = json_object_get(j, kw);
	if (!v)
		return 0;
	if (!(*out = sub(cs, n, base, v, kw, NULL, -1)))
		return -1;
	if (drop_true && *out == &cs->s->node_true)
		*out = NULL;
	return 1;
}

/* ---- the property-name table -------------------------------------------------- */

/* Index of name in n's table, adding it if new; -1 when the table is full. */
static long prop_index(cstate *cs, tgi_snode *n, const char *name, size_t len, size_t *cap)
{
	int i = tgi_snode_prop(n, name, len);
	if (i >= 0)
		return i;
	if (n->nprops >= MAX_PROPS) {
		fail(cs, n->where, "more than %d property names", MAX_PROPS);
		return -1;
	}
	grow((void **)&n->props, cap, n->nprops + 1, sizeof *n->props);
	tgi_sprop *p = &n->props[n->nprops++];
	memset(p, 0, sizeof *p);
	p->name = tgi_xmalloc(len + 1);
	memcpy(p->name, name, len);
	p->name[len] = '\0';
	p->len = len;
	p->hash = tgi_schema_hash(name, len);
	/* keep the table at most half full */
	if (n->nprops * 2 > (size_t)n->slot_mask + (n->slots ? 1 : 0)) {
		size_t size = 8;
		while (size < n->nprops * 2)
			size *= 2;
		free(n->slots);
		n->slots = tgi_xcalloc(size, sizeof *n->slots);
		n->slot_mask = (uint32_t)(size - 1);
		for (size_t k = 0; k < n->nprops; k++) {
			uint32_t s = n->props[k].hash & n->slot_mask;
			while (n->slots[s])
				s = (s + 1) & n->slot_mask;
			n->slots[s] = (uint16_t)(k + 1);
		}
	} else {
		uint32_t s = p->hash & n->slot_mask;
		while (n->slots[s])
			s = (s + 1) & n->slot_mask;
		n->slots[s] = (uint16_t)n->nprops;
	}
	return (long)(n->nprops - 1);
}

/* Array of property names (e.g. "required") → indexes appended to *out. */
static int name_list(cstate *cs, tgi_snode *n, const json_t *a, const char *where,
                     uint16_t **out, size_t *nout, size_t *propcap)
{
	if (!json_is_array(a)) {
		fail(cs, where, "must be an array of property names");
		return -1;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *v = json_array_get(a, i);
		if (!json_is_string(v)) {
			fail(cs, where, "must be an array of property names");
			return -1;
		}
		long idx = prop_index(cs, n, json_string_value(v), json_string_length(v), propcap);
		if (idx < 0)
			return -1;
		size_t k = 0;
		while (k < *nout && (*out)[k] != idx)
			k++;
		if (k < *nout)
			continue; /* listed twice: once is enough */
		*out = tgi_xrealloc(*out, (*nout + 1) * sizeof **out);
		(*out)[(*nout)++] = (uint16_t)idx;
	}
	return 0;
}

/* ---- one node ------------------------------------------------------------------- */

static const struct { const char *name; uint8_t bit; } type_names[] = {
	{"null", TGI_ST_NULL},     {"boolean", TGI_ST_BOOLEAN}, {"object", TGI_ST_OBJECT},
	{"array", TGI_ST_ARRAY},   {"number", TGI_ST_NUMBER},   {"string", TGI_ST_STRING},
	{"integer", TGI_ST_INTEGER},
};

static int type_bit(const json_t *v)
{
	const char *s = json_string_value(v);
	for (size_t i = 0; s && i < TGI_ARRAY_LEN(type_names); i++)
		if (strcmp(s, type_names[i].name) == 0)
			return type_names[i].bit;
	return 0;
}

static int c_type(cstate *cs, tgi_snode *n, const json_t *j)
{
	const json_t *v = json_object_get(j, "type");
	if (!v)
		return 0;
	const char *bad = "must be a type name or an array of them (null, boolean, object, "
	                  "array, number, string, integer)";
	if (json_is_string(v)) {
		n->types = (uint8_t)type_bit(v);
	} else if (json_is_array(v) && json_array_size(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			int b = type_bit(json_array_get(v, i));
			if (!b)
				return kw_fail(cs, n, "type", bad);
			n->types |= (uint8_t)b;
		}
	}
	if (!n->types)
		return kw_fail(cs, n, "type", bad);
	n->kw |= TGI_KW_TYPE;
	return 0;
}

/* A copy of enum/const value v in the schema's constants doc; NULL (and an
 * error naming kw) when it nests too deeply or is too large. */
static const tgi_jv *constant(cstate *cs, const tgi_snode *n, const json_t *v, const char *kw)
{
	if (!cs->s->consts)
		cs->s->consts = tgi_jv_doc_new(0);
	const tgi_jv *c = tgi_jv_from_json(cs->s->consts, v);
	if (!c)
		kw_fail(cs, n, kw, "is nested too deeply or too large to hold");
	return c;
}

static int c_any(cstate *cs, tgi_snode *n, const json_t *j, const char *base)
{
	const json_t *v;
	if ((v = json_object_get(j, "enum"))) {
		if (!json_is_array(v))
			return kw_fail(cs, n, "enum", "must be an array");
		const tgi_jv *a = constant(cs, n, v, "enum");
		if (!a)
			return -1;
		n->enumv = a->u.items;
		n->nenum = a->n;
		n->enum_strs = tgi_xcalloc(n->nenum + 1, sizeof *n->enum_strs);
		for (size_t i = 0; i < n->nenum; i++)
			if (a->u.items[i].type == TGI_JV_STRING)
				n->enum_strs[n->nenum_strs++] =
					(tgi_sstr){a->u.items[i].u.s, a->u.items[i].n};
		n->kw |= TGI_KW_ENUM;
	}
	if ((v = json_object_get(j, "const"))) {
		if (!(n->constv = constant(cs, n, v, "const")))
			return -1;
		if (n->constv->type == TGI_JV_STRING)
			n->const_str = (tgi_sstr){n->constv->u.s, n->constv->n};
		n->kw |= TGI_KW_CONST;
	}
	int r;
	if ((r = get_list(cs, n, base, j, "allOf", &n->all_of)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_ALL_OF : 0;
	if ((r = get_list(cs, n, base, j, "anyOf", &n->any_of)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_ANY_OF : 0;
	if ((r = get_list(cs, n, base, j, "oneOf", &n->one_of)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_ONE_OF : 0;
	if ((r = get_sub(cs, n, base, j, "not", &n->not_, 0)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_NOT : 0;
	if (get_sub(cs, n, base, j, "if", &n->if_, 0) < 0 ||
	    get_sub(cs, n, base, j, "then", &n->then_, 1) < 0 ||
	    get_sub(cs, n, base, j, "else", &n->else_, 1) < 0)
		return -1;
	if (n->if_ && (n->then_ || n->else_))
		n->kw |= TGI_KW_IF;
	return 0;
}

static int c_number(cstate *cs, tgi_snode *n, const json_t *j)
{
	static const struct { const char *kw; uint32_t bit; size_t off; } nums[] = {
		{"minimum", TGI_KW_MINIMUM, offsetof(tgi_snode, minimum)},
		{"maximum", TGI_KW_MAXIMUM, offsetof(tgi_snode, maximum)},
		{"exclusiveMinimum", TGI_KW_XMINIMUM, offsetof(tgi_snode, xminimum)},
		{"exclusiveMaximum", TGI_KW_XMAXIMUM, offsetof(tgi_snode, xmaximum)},
		{"multipleOf", TGI_KW_MULTIPLE_OF, offsetof(tgi_snode, multiple_of)},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(nums); i++) {
		int r = get_num(cs, n, j, nums[i].kw, (tgi_snum *)((char *)n + nums[i].off));
		if (r < 0)
			return -1;
		n->kw |= r ? nums[i].bit : 0;
	}
	if ((n->kw & TGI_KW_MULTIPLE_OF) && !(n->multiple_of.d > 0))
		return kw_fail(cs, n, "multipleOf", "must be a number greater than 0");
	return 0;
}

static int c_string(cstate *cs, tgi_snode *n, const json_t *j)
{
	int r;
	if ((r = get_count(cs, n, j, "minLength", &n->min_length)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MIN_LENGTH : 0;
	if ((r = get_count(cs, n, j, "maxLength", &n->max_length)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MAX_LENGTH : 0;
	const json_t *v;
	if ((v = json_object_get(j, "pattern"))) {
		char err[256];
		if (!json_is_string(v))
			return kw_fail(cs, n, "pattern", "must be a string (a regular expression)");
		if (!(n->pattern = tgi_regex_compile(json_string_value(v), json_string_length(v),
		                                     err, sizeof err)))
			return kw_fail(cs, n, "pattern", err);
		n->kw |= TGI_KW_PATTERN;
	}
	if ((v = json_object_get(j, "format"))) {
		if (!json_is_string(v))
			return kw_fail(cs, n, "format", "must be a string");
		int f = tgi_format_lookup(json_string_value(v));
		if (f && (cs->flags & TGI_SCHEMA_ASSERT_FORMATS)) {
			n->format = (uint8_t)f;
			n->kw |= TGI_KW_FORMAT;
		}
	}
	return 0;
}

static int c_array(cstate *cs, tgi_snode *n, const json_t *j, const char *base)
{
	const json_t *items = json_object_get(j, "items");
	int r;
	if (json_object_get(j, "prefixItems")) {
		if (get_list(cs, n, base, j, "prefixItems", &n->prefix) < 0)
			return -1;
	} else if (json_is_array(items) && json_array_size(items)) {
		if (get_list(cs, n, base, j, "items", &n->prefix) < 0)
			return -1;
	}
	if (items && !json_is_array(items)) {
		if (get_sub(cs, n, base, j, "items", &n->items, 1) < 0)
			return -1;
	} else if (json_is_array(items)) {
		if (get_sub(cs, n, base, j, "additionalItems", &n->items, 1) < 0)
			return -1;
	}
	if (n->prefix.n || n->items)
		n->kw |= TGI_KW_ITEMS;

	if ((r = get_sub(cs, n, base, j, "contains", &n->contains, 0)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_CONTAINS : 0;
	n->min_contains = 1;
	n->max_contains = SIZE_MAX;
	if (get_count(cs, n, j, "minContains", &n->min_contains) < 0 ||
	    get_count(cs, n, j, "maxContains", &n->max_contains) < 0)
		return -1;
	if ((r = get_count(cs, n, j, "minItems", &n->min_items)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MIN_ITEMS : 0;
	if ((r = get_count(cs, n, j, "maxItems", &n->max_items)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MAX_ITEMS : 0;
	const json_t *u = json_object_get(j, "uniqueItems");
	if (u && !json_is_boolean(u))
		return kw_fail(cs, n, "uniqueItems", "must be a boolean");
	n->kw |= json_is_true(u) ? TGI_KW_UNIQUE : 0;
	return 0;
}

/* "dependencies", "dependentRequired", "dependentSchemas": a map from a
 * trigger property to names (`names` allowed) or a schema (`schemas`). */
static int c_dependencies(cstate *cs, tgi_snode *n, const json_t *j, const char *base,
                          const char *kw, int names, int schemas, size_t *propcap)
{
	const json_t *m = json_object_get(j, kw);
	const char *key;
	json_t *v;
	if (!m)
		return 0;
	if (!json_is_object(m))
		return kw_fail(cs, n, kw, "must be an object");
	json_object_foreach((json_t *)m, key, v) {
		long t = prop_index(cs, n, key, strlen(key), propcap);
		if (t < 0)
			return -1;
		char *where = ptr_join(n->where, kw, key);
		int rc = 0;
		if (json_is_array(v) && names) {
			/* collected aside: naming new properties may move n->props */
			uint16_t *list = NULL;
			size_t nlist = 0;
			rc = name_list(cs, n, v, where, &list, &nlist, propcap);
			tgi_sprop *p = &n->props[t];
			p->dep_names = tgi_xrealloc(p->dep_names,
			                            (p->ndep_names + nlist) * sizeof *p->dep_names);
			for (size_t k = 0; k < nlist; k++)
				p->dep_names[p->ndep_names++] = list[k];
			free(list);
		} else if ((json_is_object(v) || json_is_boolean(v)) && schemas) {
			if (n->props[t].dep_schema) {
				fail(cs, where, "\"%s\" already has a dependent schema", key);
				rc = -1;
			} else if (!(n->props[t].dep_schema = sub(cs, n, base, v, kw, key, -1))) {
				rc = -1;
			}
		} else {
			fail(cs, where, names && schemas ? "must be an array of property names or a schema"
			                : names ? "must be an array of property names" : "must be a schema");
			rc = -1;
		}
		free(where);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int c_object(cstate *cs, tgi_snode *n, const json_t *j, const char *base)
{
	size_t propcap = 0;
	const json_t *m;
	const char *key;
	json_t *v;
	int r;

	if ((m = json_object_get(j, "properties"))) {
		if (!json_is_object(m))
			return kw_fail(cs, n, "properties", "must be an object");
		json_object_foreach((json_t *)m, key, v) {
			size_t len = json_object_iter_key_len(json_object_key_to_iter(key));
			long i = prop_index(cs, n, key, len, &propcap);
			if (i < 0 || !(n->props[i].schema = sub(cs, n, base, v, "properties", key, -1)))
				return -1;
		}
	}
	if ((m = json_object_get(j, "patternProperties"))) {
		if (!json_is_object(m))
			return kw_fail(cs, n, "patternProperties", "must be an object");
		n->patterns = tgi_xcalloc(json_object_size(m) + 1, sizeof *n->patterns);
		json_object_foreach((json_t *)m, key, v) {
			char err[256];
			tgi_spattern *p = &n->patterns[n->npatterns];
			if (!(p->re = tgi_regex_compile(key, strlen(key), err, sizeof err))) {
				char *where = ptr_join(n->where, "patternProperties", key);
				fail(cs, where, "%s", err);
				free(where);
				return -1;
			}
			n->npatterns++;
			if (!(p->schema = sub(cs, n, base, v, "patternProperties", key, -1)))
				return -1;
		}
	}
	if ((r = get_sub(cs, n, base, j, "additionalProperties", &n->additional, 1)) < 0 ||
	    (r = get_sub(cs, n, base, j, "propertyNames", &n->names, 1)) < 0)
		return -1;
	for (size_t i = 0; i < n->nprops; i++)
		if (n->props[i].schema)
			n->kw |= TGI_KW_WALK;
	if (n->npatterns || n->additional || n->names)
		n->kw |= TGI_KW_WALK;

	if ((m = json_object_get(j, "required"))) {
		char *where = ptr_join(n->where, "required", NULL);
		r = name_list(cs, n, m, where, &n->required, &n->nrequired, &propcap);
		free(where);
		if (r < 0)
			return -1;
		n->kw |= n->nrequired ? TGI_KW_REQUIRED : 0;
		n->required_all_in_mask = 1;
		for (size_t i = 0; i < n->nrequired; i++) {
			if (n->required[i] < 64)
				n->required_mask |= (uint64_t)1 << n->required[i];
			else
				n->required_all_in_mask = 0;
		}
	}
	if (c_dependencies(cs, n, j, base, "dependentRequired", 1, 0, &propcap) < 0 ||
	    c_dependencies(cs, n, j, base, "dependentSchemas", 0, 1, &propcap) < 0 ||
	    c_dependencies(cs, n, j, base, "dependencies", 1, 1, &propcap) < 0)
		return -1;
	for (size_t i = 0; i < n->nprops; i++) {
		if (n->props[i].ndep_names || n->props[i].dep_schema) {
			n->dependents = tgi_xrealloc(n->dependents, (n->ndependents + 1) * sizeof *n->dependents);
			n->dependents[n->ndependents++] = (uint16_t)i;
			n->kw |= TGI_KW_DEPENDENT;
		}
	}
	if ((r = get_count(cs, n, j, "minProperties", &n->min_props)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MIN_PROPS : 0;
	if ((r = get_count(cs, n, j, "maxProperties", &n->max_props)) < 0)
		return -1;
	n->kw |= r ? TGI_KW_MAX_PROPS : 0;
	return 0;
}

static void compile_one(cstate *cs, size_t idx)
{
	const json_t *j = cs->locs[idx].json;
	const char *base = cs->locs[idx].base;
	tgi_snode *n = cs->locs[idx].node;
	const json_t *v;

	if ((v = json_object_get(j, "default")))
		n->dflt = json_deep_copy(v);
	if ((v = json_object_get(j, "$ref"))) {
		if (!json_is_string(v)) {
			kw_fail(cs, n, "$ref", "must be a string (a URI reference)");
			return;
		}
		if (!(n->ref = resolve_ref(cs, n, base, json_string_value(v))))
			return;
		n->kw |= TGI_KW_REF;
		if (cs->draft7)
			return; /* draft 7: everything beside $ref is ignored */
	}
	if (c_type(cs, n, j) < 0 || c_any(cs, n, j, base) < 0 || c_number(cs, n, j) < 0 ||
	    c_string(cs, n, j) < 0 || c_array(cs, n, j, base) < 0 || c_object(cs, n, j, base) < 0)
		return;
}

/* ---- after compiling ------------------------------------------------------------ */

/* Follow nodes that are nothing but a $ref to the node that does the work. */
static const tgi_snode *skip_refs(const tgi_schema *s, const tgi_snode *n)
{
	for (size_t steps = 0; n && n->kw == TGI_KW_REF && !n->dflt; steps++) {
		if (steps > s->nnodes)
			return n; /* a cycle of bare references: validation stops it */
		n = n->ref;
	}
	return n;
}

static void relink_list(const tgi_schema *s, tgi_slist *l)
{
	for (size_t i = 0; i < l->n; i++)
		l->v[i] = skip_refs(s, l->v[i]);
}

static void relink(tgi_schema *s)
{
	for (size_t k = 0; k < s->nnodes; k++) {
		tgi_snode *n = s->nodes[k];
		const tgi_snode **one[] = {&n->ref, &n->not_, &n->if_, &n->then_, &n->else_,
		                           &n->items, &n->contains, &n->additional, &n->names};
		for (size_t i = 0; i < TGI_ARRAY_LEN(one); i++)
			*one[i] = skip_refs(s, *one[i]);
		relink_list(s, &n->all_of);
		relink_list(s, &n->any_of);
		relink_list(s, &n->one_of);
		relink_list(s, &n->prefix);
		for (size_t i = 0; i < n->nprops; i++) {
			n->props[i].schema = skip_refs(s, n->props[i].schema);
			n->props[i].dep_schema = skip_refs(s, n->props[i].dep_schema);
		}
		for (size_t i = 0; i < n->npatterns; i++)
			n->patterns[i].schema = skip_refs(s, n->patterns[i].schema);
	}
	s->root = (tgi_snode *)skip_refs(s, s->root);
}

static int list_has_defaults(const tgi_slist *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i]->has_defaults)
			return 1;
	return 0;
}

/* has_defaults: a `default` of a property schema is reachable through the
 * edges defaults.c follows.  A fixed point, since the graph has cycles. */
static void mark_defaults(tgi_schema *s)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t k = 0; k < s->nnodes; k++) {
			tgi_snode *n = s->nodes[k];
			if (n->has_defaults)
				continue;
			int has = (n->ref && n->ref->has_defaults) || list_has_defaults(&n->all_of) ||
			          list_has_defaults(&n->prefix) || (n->items && n->items->has_defaults) ||
			          (n->additional && n->additional->has_defaults);
			for (size_t i = 0; !has && i < n->nprops; i++)
				has = n->props[i].schema &&
				      (n->props[i].schema->dflt || n->props[i].schema->has_defaults);
			for (size_t i = 0; !has && i < n->npatterns; i++)
				has = n->patterns[i].schema->has_defaults;
			if (has)
				n->has_defaults = changed = 1;
		}
	}
}

/* ---- entry points ------------------------------------------------------------------ */

static int names_draft7(const json_t *schema)
{
	const char *d = json_string_value(json_object_get(schema, "$schema"));
	return d && (strstr(d, "draft-07") || strstr(d, "draft-06") || strstr(d, "draft-04") ||
	             strstr(d, "draft-03"));
}

tgi_schema *tgi_schema_compile(const json_t *schema, unsigned flags, char *err, size_t errlen)
{
	char dummy[1];
	if (!err || !errlen)
		err = dummy, errlen = sizeof dummy;
	err[0] = '\0';
	if (!schema) {
		tgi_snprintf(err, errlen, "no schema given");
		return NULL;
	}
	tgi_schema *s = tgi_xcalloc(1, sizeof *s);
	s->node_false.kw = TGI_KW_FALSE;
	s->node_false.where = tgi_strdup("");
	s->node_true.where = tgi_strdup("");

	cstate cs = {
		.s = s, .flags = flags, .err = err, .errlen = errlen,
		.draft7 = (flags & TGI_SCHEMA_DRAFT7) || names_draft7(schema),
	};
	resource_add(&cs, "", schema);
	scan(&cs, schema, "", "", 0);
	const tgi_snode *root = cs.failed ? NULL : node_for(&cs, schema, "", "");
	while (!cs.failed && cs.nwork)
		compile_one(&cs, cs.work[--cs.nwork]);

	for (size_t i = 0; i < cs.nlocs; i++)
		free(cs.locs[i].ptr);
	free(cs.locs);
	free(cs.map);
	for (size_t i = 0; i < cs.nbases; i++)
		free(cs.bases[i]);
	free(cs.bases);
	for (size_t i = 0; i < cs.nres; i++)
		free(cs.res[i].uri);
	free(cs.res);
	free(cs.work);

	if (cs.failed || !root) {
		if (!err[0])
			tgi_snprintf(err, errlen, "schema root: could not be compiled");
		tgi_schema_free(s);
		return NULL;
	}
	s->root = (tgi_snode *)root;
	relink(s);
	mark_defaults(s);
	return s;
}

static void node_free(tgi_snode *n)
{
	free(n->where);
	free(n->enum_strs);
	json_decref(n->dflt);
	free(n->all_of.v);
	free(n->any_of.v);
	free(n->one_of.v);
	free(n->prefix.v);
	tgi_regex_free(n->pattern);
	for (size_t i = 0; i < n->nprops; i++) {
		free(n->props[i].name);
		free(n->props[i].dep_names);
	}
	free(n->props);
	free(n->slots);
	free(n->required);
	free(n->dependents);
	for (size_t i = 0; i < n->npatterns; i++)
		tgi_regex_free(n->patterns[i].re);
	free(n->patterns);
}

void tgi_schema_free(tgi_schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nnodes; i++) {
		node_free(s->nodes[i]);
		free(s->nodes[i]);
	}
	free(s->nodes);
	tgi_jv_doc_free(s->consts);
	free(s->node_true.where);
	free(s->node_false.where);
	free(s);
}
