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
 * Owns: the compiled form and its compiled regexes.  Must not: fetch remote
 * references, keep global state, or modify a schema it was given.
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
 * Validate `instance`.  Returns 1 if valid, 0 if not (res filled, may be
 * NULL for a yes/no answer, which is faster).  A missing required property
 * is reported at the property's own pointer ("/version") with the message
 * "is required".  With apply_defaults, missing properties that have a
 * `default` in a `properties` schema are added to `instance` (only when the
 * whole instance is valid), so instance is not const.
 */
int tgi_schema_validate(const tgi_schema *s, json_t *instance, int apply_defaults,
                        tgi_schema_result *res);

#endif
