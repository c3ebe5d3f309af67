/*
 * node.h — the compiled form of a JSON Schema, private to src/schema/.
 *
 * compile.c turns a schema document (jansson) into a graph of tgi_snode
 * (one per schema object; `$ref` already resolved to a node pointer, so
 * recursive schemas are cycles in the graph).  evaluate.c walks an
 * instance held as a tgi_jv DOM (util/jv.h) against it; instance.c holds
 * the public entry points, the per-thread documents instances are parsed
 * or copied into, and the jansson bridge; defaults.c fills `default`s into
 * a jansson instance.  All of them only read the graph, so one compiled
 * schema serves any number of threads.  The other files here are the leaf
 * helpers: regexes (regex.c), formats (format.c), value hashing (hash.c)
 * and URI references (uri.c).
 *
 * Owns: the node layout and the helper prototypes.  Must not: be included
 * outside src/schema/ (schema.h is the contract), or hold references into
 * the document a schema was compiled from.
 */
#ifndef TGI_SCHEMA_NODE_H
#define TGI_SCHEMA_NODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <jansson.h>

#include "schema/schema.h"
#include "util/jv.h"

/* Nesting limit for schema documents (compile) and for schema-over-instance
 * evaluation (validate); past it the answer is an error, never a deep stack. */
#define TGI_SCHEMA_MAX_DEPTH 128

/*
 * Instance types as bits.  An instance has one bit, except numbers with no
 * fractional part, which have TGI_ST_INTEGER | TGI_ST_NUMBER (1.0 is an
 * integer).  A node's `types` is the union of the names in its "type".
 */
enum {
	TGI_ST_NULL    = 1 << 0,
	TGI_ST_BOOLEAN = 1 << 1,
	TGI_ST_OBJECT  = 1 << 2,
	TGI_ST_ARRAY   = 1 << 3,
	TGI_ST_NUMBER  = 1 << 4,
	TGI_ST_STRING  = 1 << 5,
	TGI_ST_INTEGER = 1 << 6,
};

/*
 * Keyword bits: which checks a node carries.  A node with kw == 0 accepts
 * everything (`true`, `{}`); TGI_KW_FALSE rejects everything.  The
 * *_MASK groups let the validator skip a whole instance type in one test.
 *
 *   WALK       the object's members are visited one by one: set when the
 *              node has properties, patternProperties, additionalProperties
 *              or propertyNames
 *   ITEMS      prefixItems / array-form items / items / additionalItems
 *   DEPENDENT  dependentRequired, dependentSchemas or draft 7 dependencies
 */
enum {
	TGI_KW_FALSE       = 1u << 0,
	TGI_KW_REF         = 1u << 1,
	TGI_KW_TYPE        = 1u << 2,
	TGI_KW_ENUM        = 1u << 3,
	TGI_KW_CONST       = 1u << 4,
	TGI_KW_MINIMUM     = 1u << 5,
	TGI_KW_MAXIMUM     = 1u << 6,
	TGI_KW_XMINIMUM    = 1u << 7,
	TGI_KW_XMAXIMUM    = 1u << 8,
	TGI_KW_MULTIPLE_OF = 1u << 9,
	TGI_KW_MIN_LENGTH  = 1u << 10,
	TGI_KW_MAX_LENGTH  = 1u << 11,
	TGI_KW_PATTERN     = 1u << 12,
	TGI_KW_FORMAT      = 1u << 13,
	TGI_KW_ITEMS       = 1u << 14,
	TGI_KW_MIN_ITEMS   = 1u << 15,
	TGI_KW_MAX_ITEMS   = 1u << 16,
	TGI_KW_UNIQUE      = 1u << 17,
	TGI_KW_CONTAINS    = 1u << 18,
	TGI_KW_WALK        = 1u << 19,
	TGI_KW_REQUIRED    = 1u << 20,
	TGI_KW_MIN_PROPS   = 1u << 21,
	TGI_KW_MAX_PROPS   = 1u << 22,
	TGI_KW_DEPENDENT   = 1u << 23,
	TGI_KW_ALL_OF      = 1u << 24,
	TGI_KW_ANY_OF      = 1u << 25,
	TGI_KW_ONE_OF      = 1u << 26,
	TGI_KW_NOT         = 1u << 27,
	TGI_KW_IF          = 1u << 28,
};

#define TGI_KW_NUMBER_MASK (TGI_KW_MINIMUM | TGI_KW_MAXIMUM | TGI_KW_XMINIMUM | \
                            TGI_KW_XMAXIMUM | TGI_KW_MULTIPLE_OF)
#define TGI_KW_STRING_MASK (TGI_KW_MIN_LENGTH | TGI_KW_MAX_LENGTH | TGI_KW_PATTERN | \
                            TGI_KW_FORMAT)
#define TGI_KW_ARRAY_MASK  (TGI_KW_ITEMS | TGI_KW_MIN_ITEMS | TGI_KW_MAX_ITEMS | \
                            TGI_KW_UNIQUE | TGI_KW_CONTAINS)
#define TGI_KW_OBJECT_MASK (TGI_KW_WALK | TGI_KW_REQUIRED | TGI_KW_MIN_PROPS | \
                            TGI_KW_MAX_PROPS | TGI_KW_DEPENDENT)
#define TGI_KW_APPLY_MASK  (TGI_KW_ALL_OF | TGI_KW_ANY_OF | TGI_KW_ONE_OF | \
                            TGI_KW_NOT | TGI_KW_IF)

typedef struct tgi_snode tgi_snode;
typedef struct tgi_regex tgi_regex;

/* A numeric limit, kept exactly when the schema wrote an integer. */
typedef struct tgi_snum {
	double     d;
	json_int_t i;
	int        is_int;
} tgi_snum;

/*
 * One property name a node knows: from "properties", "required" or a
 * dependency.  Index i < 64 doubles as bit i of the "seen" mask the object
 * walk fills, so required/dependency checks need no second lookup.
 */
typedef struct tgi_sprop {
	char            *name;       /* owned, NUL-terminated (len excludes it) */
	size_t           len;
	uint32_t         hash;
	const tgi_snode *schema;     /* from "properties"; NULL if only named elsewhere */
	uint16_t        *dep_names;  /* required when this property is present; owned */
	size_t           ndep_names;
	const tgi_snode *dep_schema; /* applies to the object when this one is present */
} tgi_sprop;

typedef struct tgi_spattern {
	tgi_regex       *re;         /* owned */
	const tgi_snode *schema;
} tgi_spattern;

typedef struct tgi_sstr {     /* a borrowed string and its length */
	const char *s;
	size_t      n;
} tgi_sstr;

typedef struct tgi_slist {
	const tgi_snode **v;         /* owned array of borrowed nodes */
	size_t            n;
} tgi_slist;

struct tgi_snode {
	uint32_t kw;                 /* TGI_KW_* */
	uint8_t  types;              /* TGI_ST_*, with TGI_KW_TYPE */
	uint8_t  format;             /* TGI_FMT_*, with TGI_KW_FORMAT */
	uint8_t  has_defaults;       /* a `default` is reachable for defaults.c */
	char    *where;              /* schema pointer of this node; owned */

	const tgi_snode *ref;

	/* any type; enum and const values live in the schema's `consts` doc */
	const tgi_jv *enumv;         /* nenum values, contiguous */
	size_t        nenum;
	tgi_sstr     *enum_strs;     /* the strings among enumv, for a quick scan; owned */
	size_t        nenum_strs;
	const tgi_jv *constv;
	tgi_sstr      const_str;     /* constv's text when it is a string */
	json_t       *dflt;          /* "default", owned reference, or NULL (defaults.c
	                                applies it to jansson instances) */
	tgi_slist all_of, any_of, one_of;
	const tgi_snode *not_, *if_, *then_, *else_;

	/* numbers */
	tgi_snum minimum, maximum, xminimum, xmaximum, multiple_of;

	/* strings (lengths in code points) */
	size_t     min_length, max_length;
	tgi_regex *pattern;          /* owned */

	/* arrays */
	size_t           min_items, max_items;
	tgi_slist        prefix;     /* prefixItems, or draft 7 array-form items */
	const tgi_snode *items;      /* for items past the prefix; NULL: anything */
	const tgi_snode *contains;
	size_t           min_contains, max_contains;

	/* objects */
	size_t           min_props, max_props;
	tgi_sprop       *props;      /* owned, in first-mention order */
	size_t           nprops;
	uint16_t        *slots;      /* hash table over props: index + 1, 0 empty */
	uint32_t         slot_mask;
	uint16_t        *required;   /* indexes into props; owned */
	size_t           nrequired;
	uint64_t         required_mask; /* the required indexes below 64, as bits */
	int              required_all_in_mask; /* every required index is below 64 */
	uint16_t        *dependents; /* props with dep_names or dep_schema; owned */
	size_t           ndependents;
	tgi_spattern    *patterns;   /* patternProperties; owned */
	size_t           npatterns;
	const tgi_snode *additional; /* additionalProperties; NULL: anything */
	const tgi_snode *names;      /* propertyNames */
};

struct tgi_schema {
	tgi_snode  *root;
	tgi_jv_doc *consts;          /* enum and const values; owned, NULL if none */
	tgi_snode **nodes;           /* every compiled node, owned */
	size_t      nnodes;
	tgi_snode   node_true;       /* shared by every `true` in the document */
	tgi_snode   node_false;      /* and every `false` */
};

/* d has no fractional part.  Written without libm (the library does not
 * link it); every double of magnitude 2^52 or more is an integer. */
static inline int tgi_is_integral(double d)
{
	if (d != d)
		return 0;
	if (d >= 4503599627370496.0 || d <= -4503599627370496.0)
		return 1;
	return d == (double)(long long)d;
}

/*
 * The property-name hash: length and three sample bytes, mixed.  Constant
 * time, because most lookups are of short names that are present; names
 * that collide only cost a probe and a compare.
 */
static inline uint32_t tgi_schema_hash(const char *s, size_t n)
{
	uint32_t h = (uint32_t)n * 0x9E3779B1u;
	if (n)
		h ^= (uint32_t)(unsigned char)s[0] | (uint32_t)(unsigned char)s[n - 1] << 8 |
		     (uint32_t)(unsigned char)s[n >> 1] << 16;
	h *= 0x85EBCA6Bu;
	return h ^ (h >> 15);
}

/* Cut s (in place) before a UTF-8 sequence that a truncation left
 * incomplete, so that messages stay valid JSON strings. */
static inline void tgi_utf8_trim(char *s)
{
	size_t n = strlen(s), i = n, cont = 0;
	while (i > 0 && cont < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--, cont++;
	if (i == 0 || cont >= 4)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t want = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
	if (lead >= 0x80 && cont < want)
		s[i - 1] = '\0';
}

/* a[0..n) == b[0..n), for the short strings property names are: fixed-size
 * loads that may overlap, never a byte loop or a library call. */
static inline int tgi_same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y;
	uint32_t u, v;
	if (n >= 8) {
		for (size_t k = 0; k + 8 < n; k += 8) {
			memcpy(&x, a + k, 8);
			memcpy(&y, b + k, 8);
			if (x != y)
				return 0;
		}
		memcpy(&x, a + n - 8, 8);
		memcpy(&y, b + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		if (u != v)
			return 0;
		memcpy(&u, a + n - 4, 4);
		memcpy(&v, b + n - 4, 4);
		return u == v;
	}
	/* 0..3 bytes: first, middle and last cover them all */
	return n == 0 || (a[0] == b[0] && a[n >> 1] == b[n >> 1] && a[n - 1] == b[n - 1]);
}

/* Property lookup in a node's table: index or -1. */
static inline int tgi_snode_prop(const tgi_snode *n, const char *key, size_t len)
{
	if (!n->nprops)
		return -1;
	uint32_t h = tgi_schema_hash(key, len);
	for (uint32_t i = h & n->slot_mask;; i = (i + 1) & n->slot_mask) {
		unsigned s = n->slots[i];
		if (!s)
			return -1;
		const tgi_sprop *p = &n->props[s - 1];
		if (p->hash == h && p->len == len && tgi_same_bytes(p->name, key, len))
			return (int)(s - 1);
	}
}

/* The same, trying index `guess` first: instances tend to list properties
 * in the schema's order, so the walk guesses "the one after the last". */
static inline int tgi_snode_prop_near(const tgi_snode *n, const char *key, size_t len,
                                      size_t guess)
{
	if (guess < n->nprops) {
		const tgi_sprop *p = &n->props[guess];
		if (p->len == len && tgi_same_bytes(p->name, key, len))
			return (int)guess;
	}
	return tgi_snode_prop(n, key, len);
}

/* ---- regex.c: ECMA-262-flavoured patterns on PCRE2 ----------------------- */

/*
 * Per-validation match state.  Lives on the validating thread's stack; the
 * PCRE2 match data is carved from `arena` on first use, so matching neither
 * allocates nor shares anything between threads.
 */
typedef struct tgi_rscratch {
	void  *gctx;                 /* pcre2_general_context *, or NULL */
	void  *md;                   /* pcre2_match_data *, or NULL */
	size_t used;
	_Alignas(16) unsigned char arena[512];
} tgi_rscratch;

tgi_regex  *tgi_regex_compile(const char *src, size_t len, char *err, size_t errlen);
void        tgi_regex_free(tgi_regex *re);
const char *tgi_regex_source(const tgi_regex *re);
void        tgi_rscratch_init(tgi_rscratch *rx);
void        tgi_rscratch_fini(tgi_rscratch *rx);
/* 1 match, 0 no match, -1 could not decide (match limit, internal error). */
int         tgi_regex_match(const tgi_regex *re, tgi_rscratch *rx, const char *s, size_t n);

/* ---- defaults.c: `default` for missing properties ------------------------ */

/* Add the defaults of missing properties to instance, following properties,
 * patternProperties, additionalProperties, items, $ref and allOf. */
void tgi_schema_apply_defaults(const tgi_snode *root, json_t *instance, tgi_rscratch *rx);

/* ---- format.c: `format` assertions --------------------------------------- */

enum {
	TGI_FMT_DATE_TIME = 1, TGI_FMT_DATE, TGI_FMT_TIME, TGI_FMT_DURATION,
	TGI_FMT_EMAIL, TGI_FMT_HOSTNAME, TGI_FMT_IPV4, TGI_FMT_IPV6,
	TGI_FMT_URI, TGI_FMT_UUID,
};

int         tgi_format_lookup(const char *name);       /* TGI_FMT_* or 0 (unknown) */
int         tgi_format_check(int fmt, const char *s, size_t n); /* 1 valid, 0 not */
const char *tgi_format_describe(int fmt);              /* "date-time (RFC 3339)" */

/* ---- hash.c: a value hash for uniqueItems --------------------------------- */

/* A hash consistent with tgi_jv_equal (JSON Schema's equality: 1 == 1.0,
 * objects regardless of member order). */
uint64_t tgi_schema_value_hash(const tgi_jv *v);

/* ---- uri.c: RFC 3986 reference resolution for $id and $ref --------------- */

/* Resolve ref against base (either may be relative or empty).  Returns a
 * malloc'd string the caller frees, or NULL if ref is not a URI reference. */
char *tgi_uri_resolve(const char *base, const char *ref);
/* Decode %XX escapes of s[0..n) into a malloc'd string; NULL on a bad escape
 * or an encoded NUL. */
char *tgi_uri_unescape(const char *s, size_t n);

#endif
