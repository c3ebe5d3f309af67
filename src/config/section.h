/*
 * section.h — configuration sections as tables (nginx's ngx_command_t):
 * one const row per key (its name, type, bounds, where its value goes, a
 * line of documentation), one function that reads a mapping through a
 * table, and the one way a configuration error is said:
 *
 *   "toolgate.yaml:12:5: limits.timeout_s: expected an integer from 1 to
 *   86400, got 0"
 *
 * The position comes from the document's source map (util/yaml.c): a
 * scalar's own line:column, else the line:column of the key it is written
 * under.  An unknown key is said at the key, under its mapping's path,
 * naming the keys the table knows.
 *
 * Owns: the rows' types and their checks, and the sentences.  Must not:
 * know a section (each part writes its own table), the registry, the gate,
 * or anything but a parsed document and the struct a table writes into.
 */
#ifndef TGI_CONFIG_SECTION_H
#define TGI_CONFIG_SECTION_H

#include <stdarg.h>
#include <stddef.h>
#include <jansson.h>

struct tgi_srcmap;

/* A parsed document as errors name it. */
typedef struct tgi_conf_doc {
	const char              *file;     /* as messages name it (NULL: "built-in defaults") */
	const json_t            *root;     /* the whole document */
	const struct tgi_srcmap *map;      /* NULL: no positions */
	int                      pointers; /* paths as JSON pointers ("/cases/0"), not key
	                                      paths ("cases[0]") */
} tgi_conf_doc;

/* Reading one document: where errors go, and the caller's own state for
 * its setters. */
typedef struct tgi_conf_ctx {
	const tgi_conf_doc *doc;
	char               *err;
	size_t              errlen;
	void               *user;
} tgi_conf_ctx;

typedef enum {
	TGI_CONF_OWN,      /* known here, read by the caller (only the name is checked) */
	TGI_CONF_BOOL,     /* true | false → int */
	TGI_CONF_INT,      /* an integer lo..hi → int or a 64-bit field (long long, long,
	                      size_t), by the field's size */
	TGI_CONF_DOUBLE,   /* a number dlo..dhi → double */
	TGI_CONF_STRING,   /* a non-empty string without NUL, at most hi bytes (0: any)
	                      → char * (replaced; the caller frees) */
	TGI_CONF_ENUM,     /* one of names → int (its index); the field is an int or an enum */
	TGI_CONF_STRINGS,  /* a list of at most hi (0: any) non-empty strings without NUL;
	                      null: an empty list → tgi_strv (replaced) */
	TGI_CONF_DURATION, /* seconds, or "N" and s, m, h or d ("7d") from lo to hi
	                      seconds → long long */
	TGI_CONF_SECTION,  /* a mapping (null: empty) read through sub, into the struct at
	                      offset */
	TGI_CONF_CUSTOM,   /* set(x, value, its pointer, the struct) */
} tgi_conf_type;

enum { TGI_CONF_REQUIRED = 1u << 0 };   /* absent: "missing required key" */

typedef int (*tgi_conf_set_fn)(const tgi_conf_ctx *x, const json_t *v, const char *ptr,
                               void *obj);

typedef struct tgi_conf_key {
	const char              *key;
	tgi_conf_type            type;
	unsigned                 flags;   /* TGI_CONF_REQUIRED */
	size_t                   offset;  /* of the field in the struct */
	size_t                   size;    /* of the field (INT) */
	long long                lo, hi;  /* INT, DURATION bounds; STRING, STRINGS: max */
	double                   dlo, dhi;
	const char *const       *names;   /* ENUM: nnames of them (or up to a NULL) */
	size_t                   nnames;
	const struct tgi_conf_key *sub;   /* SECTION */
	size_t                   nsub;
	tgi_conf_set_fn          set;     /* CUSTOM */
	const char              *doc;     /* one line for people */
} tgi_conf_key;

#define TGI_CONF_FIELD_(T, f) .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define TGI_CONF_OWN(k, d) { .key = (k), .type = TGI_CONF_OWN, .doc = (d) }
#define TGI_CONF_BOOL(k, T, f, d) { .key = (k), .type = TGI_CONF_BOOL, TGI_CONF_FIELD_(T, f), .doc = (d) }
#define TGI_CONF_INT(k, T, f, l, h, d) \
	{ .key = (k), .type = TGI_CONF_INT, TGI_CONF_FIELD_(T, f), .lo = (l), .hi = (h), .doc = (d) }
#define TGI_CONF_DOUBLE(k, T, f, l, h, d) \
	{ .key = (k), .type = TGI_CONF_DOUBLE, TGI_CONF_FIELD_(T, f), .dlo = (l), .dhi = (h), .doc = (d) }
#define TGI_CONF_STRING(k, T, f, max, d) \
	{ .key = (k), .type = TGI_CONF_STRING, TGI_CONF_FIELD_(T, f), .hi = (max), .doc = (d) }
#define TGI_CONF_ENUM(k, T, f, nm, d) \
	{ .key = (k), .type = TGI_CONF_ENUM, TGI_CONF_FIELD_(T, f), .names = (nm), \
	  .nnames = sizeof(nm) / sizeof((nm)[0]), .doc = (d) }
#define TGI_CONF_STRINGS(k, T, f, max, d) \
	{ .key = (k), .type = TGI_CONF_STRINGS, TGI_CONF_FIELD_(T, f), .hi = (max), .doc = (d) }
#define TGI_CONF_DURATION(k, T, f, l, h, d) \
	{ .key = (k), .type = TGI_CONF_DURATION, TGI_CONF_FIELD_(T, f), .lo = (l), .hi = (h), .doc = (d) }
#define TGI_CONF_SECTION(k, T, f, tab, d) \
	{ .key = (k), .type = TGI_CONF_SECTION, .offset = offsetof(T, f), .sub = (tab), \
	  .nsub = sizeof(tab) / sizeof((tab)[0]), .doc = (d) }
#define TGI_CONF_CUSTOM(k, fn, d) { .key = (k), .type = TGI_CONF_CUSTOM, .set = (fn), .doc = (d) }

/*
 * Read the mapping obj (at JSON pointer ptr) through table into st: first
 * every key must be one of the table's (document order), then each row
 * present is checked and set, in table order; an absent row leaves its
 * field as it was (the caller's default), or is an error when
 * TGI_CONF_REQUIRED.  obj NULL or null: no keys.  Anything else that is no
 * mapping: "expected a mapping, got ...".  0, or -1 with the sentence in
 * x->err (fields set before the error stay set: the caller frees st as it
 * would after success).
 */
int tgi_conf_section_apply(const tgi_conf_ctx *x, const tgi_conf_key *table, size_t n,
                           const json_t *obj, const char *ptr, void *st);

/* v at ptr must be one of the n names (n may count a NULL that ends them):
 * *out its index, or -1 with "expected one of a, b, c, got ...". */
int tgi_conf_enum(const tgi_conf_ctx *x, const json_t *v, const char *ptr,
                  const char *const *names, size_t n, int *out);

/* Only the first step: every key of obj is one of table's.  0 or -1. */
int tgi_conf_known_keys(const tgi_conf_ctx *x, const tgi_conf_key *table, size_t n,
                        const json_t *obj, const char *ptr);

/*
 * The sentence: "where: path: message" into x->err for a problem located
 * at the node loc, named by the path of path (loc and path differ for a
 * key the message names: loc is the key, path its mapping).  The message
 * is made printable.  Returns -1.
 */
int tgi_conf_fail_at(const tgi_conf_ctx *x, const char *loc, const char *path,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int tgi_conf_vfail_at(const tgi_conf_ctx *x, const char *loc, const char *path,
                      const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* The same at one node; and "expected X, got <v described>". */
int tgi_conf_fail(const tgi_conf_ctx *x, const char *ptr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tgi_conf_fail_type(const tgi_conf_ctx *x, const char *ptr, const json_t *v,
                       const char *expected);

/* line:column of the node at ptr as errors point at it (see the top);
 * 0 when the document has no position for it or any parent. */
int tgi_conf_locate(const tgi_conf_doc *d, const char *ptr, int member, int *line, int *col);

/* "file:line:col" of the node at ptr ("file" when unknown); member: the
 * line:column of its key even when it is a scalar. */
void tgi_conf_where(const tgi_conf_doc *d, const char *ptr, int member, char *out, size_t cap);

/* "a, b, c" from the first n names (or up to a NULL), into out. */
const char *tgi_conf_join(const char *const *names, size_t n, char *out, size_t cap);

#endif
