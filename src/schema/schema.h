/*
 * schema.h — JSON Schema compiler and validator.
 *
 * A schema is compiled once (at config load) into an immutable tree that
 * any number of threads may validate against concurrently.  Supported:
 * draft 7 and the 2019-09/2020-12 keywords named in the issue (prefixItems,
 * dependentRequired, $defs), local $ref with recursion, boolean schemas,
 * format assertion (switchable), and `default` applied to missing
 * properties.
 *
 * Owns: the compiled form and its compiled regexes, each validating
 * thread's instance document, and the walk for x-sensitive property names.
 * Must not: fetch remote references, keep global state beyond those
 * per-thread documents, or modify a schema it was given.
 */
#ifndef TGI_SCHEMA_H
#define TGI_SCHEMA_H

#include <stddef.h>
#include <jansson.h>

typedef struct tgi_schema tgi_schema;

enum {
	TGI_SCHEMA_ASSERT_FORMATS = 1 << 0, /* `format` is an assertion (else annotation) */
	TGI_SCHEMA_DRAFT7         = 1 << 1, /* draft 7 `$ref`: siblings ignored; also chosen
	                                       by a "$schema" naming draft 7 or older */
};

/*
 * Compile `schema` (borrowed; not kept).  Returns NULL on error with a
 * sentence in err naming the JSON pointer of the offending keyword, e.g.
 * "/properties/env/pattern: invalid regular expression: missing )".
 * A remote (non-local) $ref is a compile error.
 */
tgi_schema *tgi_schema_compile(const json_t *schema, unsigned flags, char *err, size_t errlen);
void        tgi_schema_free(tgi_schema *s);

/* One validation error: where (instance JSON pointer) and a sentence. */
typedef struct tgi_schema_error {
	char pointer[256];  /* "/env", "/attendees/1/email", "" for the root */
	char message[384];  /* "must be one of \"staging\", \"prod\"; got \"qa\"" */
} tgi_schema_error;

#define TGI_SCHEMA_MAX_ERRORS 8

typedef struct tgi_schema_result {
	int              nerrors;  /* errors stored (<= TGI_SCHEMA_MAX_ERRORS) */
	int              truncated; /* more errors existed */
	tgi_schema_error errors[TGI_SCHEMA_MAX_ERRORS];
} tgi_schema_result;

/*
 * The core: validate an instance held as a tgi_jv DOM (borrowed, not kept,
 * not modified).  Returns 1 if valid, 0 if not (res filled; res may be NULL
 * for a yes/no answer, which is faster).  A missing required property is
 * reported at the property's own pointer ("/version") with the message
 * "is required".  A pattern too expensive to decide (PCRE2's match or
 * depth limit) makes the answer 0 whatever keyword holds it, with the one
 * error "pattern too expensive to check (...)" at the value's pointer.
 * Allocates nothing on the valid path (uniqueItems over more than 16 items
 * aside).  Safe to call from any number of threads on one schema.
 */
typedef struct tgi_jv tgi_jv;
int tgi_schema_validate_jv(const tgi_schema *s, const tgi_jv *instance, tgi_schema_result *res);

/*
 * Parse len bytes of JSON text (borrowed) and validate it.  The text is
 * parsed (util/jv.h rules: strict RFC 8259, duplicate keys refused, NUL
 * allowed in strings but not in keys, at most TGI_JV_MAX_DEPTH levels, at
 * most TGI_SCHEMA_DOC_MAX bytes of text and of DOM) into a document private to the calling
 * thread, reset on every call and freed when the thread exits.  Returns
 * 1 valid, 0 invalid (res filled as above), or -1 when the text is not
 * JSON, with "at byte N: ..." in err (errlen bytes; err may be NULL) and
 * res holding that sentence as its one error at the root pointer.
 */
#define TGI_SCHEMA_DOC_MAX (16u << 20) /* bytes of text, and of DOM arena */
int tgi_schema_validate_text(const tgi_schema *s, const char *text, size_t len,
                             tgi_schema_result *res, char *err, size_t errlen);

/*
 * Validate a jansson `instance`: it is copied into the calling thread's
 * document and validated as above.  An instance the document cannot hold
 * (nested deeper than TGI_JV_MAX_DEPTH, a property name holding NUL, over
 * TGI_SCHEMA_DOC_MAX of DOM) is invalid, with the pointer of the place at fault.
 * With apply_defaults, missing properties that have a `default` in a
 * `properties` schema are added to `instance` (only when the whole
 * instance is valid), so instance is not const.
 */
int tgi_schema_validate(const tgi_schema *s, json_t *instance, int apply_defaults,
                        tgi_schema_result *res);

/* The property names a JSON Schema marks x-sensitive: true, at any depth
 * (properties, items, $defs, combinators), appended to out once each
 * (sensitive.c).  Works on the JSON, compiled or not. */
struct tgi_strv;
void tgi_schema_sensitive_keys(const json_t *schema, struct tgi_strv *out);

#endif
