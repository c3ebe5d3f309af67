/*
 * dialect.c — tool names and input schemas in each model API's dialect.
 *
 *   tgi_dialect_name_ok        the tool-name rule of each API
 *   tgi_dialect_openai_strict  a JSON Schema made fit for OpenAI's strict
 *                              mode (Structured Outputs), or NULL
 *   tgi_dialect_gemini_legacy  a JSON Schema as Gemini's OpenAPI-subset
 *                              Schema object (`parameters`)
 *
 * The translations only shape what the model is shown: every call is
 * still validated against the tool's own schema by the validate stage, so
 * a translation may show a looser schema (oneOf as anyOf, a keyword
 * described instead of enforced).  One change goes the other way: under
 * OpenAI strict an optional property is required and nullable, so a
 * model leaves it out by sending null; the caller drops such nulls before
 * validating when the tool's own schema does not take null there.
 *
 * OpenAI strict, as its "Supported schemas" list has it: the root is an
 * object (not anyOf); types string/number/integer/boolean/object/array
 * and null in a type list, enum, const, anyOf, $ref to "#", "#/$defs/x"
 * or "#/definitions/x" (kept, recursion allowed, the definitions made
 * strict too); kept keywords: pattern, format (date-time, time, date,
 * duration, email, hostname, ipv4, ipv6, uuid), minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems,
 * title, description.  Every object is closed and lists every property
 * in required; an optional property becomes nullable.  Other validation
 * keywords (minLength, maxLength, other formats, uniqueItems, contains,
 * minProperties, maxProperties, propertyNames, dependentRequired,
 * default, examples, ...) are written into the description
 * ("maxLength: 100").  A schema is refused (NULL) when strict mode cannot
 * express it: open objects (additionalProperties true or a schema, or no
 * properties and not closed), patternProperties, prefixItems or tuple
 * items, if/then/else, not, dependentSchemas, dependencies, an allOf
 * whose branches disagree, a $ref elsewhere, a subschema with no type,
 * an array without items, a required name that is not a property or is
 * false (a false property that is optional is left out, a false anyOf
 * branch dropped: the closed object says the same), more
 * than 10 levels of object nesting, 5000 properties, 1000 enum values,
 * 120000 characters of names and values, or one enum of more than 250
 * values totalling over 15000 characters (OpenAI's limits), or nesting
 * past WALK_MAX_DEPTH subschemas or OAI_MAX_NODES of them (ours).
 *
 * Gemini legacy, as its Schema object has it: type names uppercase,
 * ["x","null"] becomes type X with nullable:true, $ref inlined (a cycle,
 * a $ref outside the document or a missing target is an error), allOf
 * merged (an error when the branches disagree), oneOf shown as anyOf,
 * {"type":"null"} branches of anyOf folded into nullable, const and enum
 * as string enums (numbers written as strings beside a numeric type, as
 * Gemini's own examples do; booleans, objects and mixed kinds go to the
 * description), format kept only for float/double (NUMBER), int32/int64
 * (INTEGER) and enum/date-time (STRING).  Kept: description, title,
 * properties, required (names of properties only), items, anyOf,
 * minItems, maxItems, minimum, maximum, minLength, maxLength, pattern,
 * minProperties, maxProperties.  Dropped: $schema, $id, $defs,
 * additionalProperties:false, unknown keywords, false properties and
 * anyOf branches; other validation keywords (and a kept keyword whose
 * value is of the wrong kind) go to the description as for OpenAI.  A
 * subschema with no type and nothing to infer one from (properties mean
 * OBJECT, items ARRAY, string enums STRING) stays without one.  A false
 * schema, a $ref that cannot be inlined, an anyOf of false branches, an
 * unknown type name and nesting past WALK_MAX_DEPTH or GEM_MAX_NODES
 * subschemas are errors, each a sentence naming where ("#/properties/a").
 *
 * Owns: nothing beyond the values it returns.  Must not: know about the
 * registry, the wire shapes of the APIs, or change the schema it is given.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "protocol/protocol.h"
#include "util/util.h"

#define NAME_MAX_LEN     64     /* every API */
#define WALK_MAX_DEPTH   48     /* subschemas along one path, either dialect */
#define NOTE_VALUE_MAX   160    /* bytes of one keyword's value in a description */
#define NOTE_MAX         4096   /* bytes of notes added to one description */

/* OpenAI's documented limits for a strict schema. */
#define OAI_MAX_OBJECT_DEPTH 10
#define OAI_MAX_PROPERTIES   5000
#define OAI_MAX_ENUM_VALUES  1000
#define OAI_MAX_STRING_CHARS 120000
#define OAI_BIG_ENUM         250
#define OAI_BIG_ENUM_CHARS   15000
/* Ours: subschemas walked, $refs with siblings inlined (it can multiply them). */
#define OAI_MAX_NODES        50000

/* Gemini: subschemas once $refs are inlined (inlining can multiply them). */
#define GEM_MAX_NODES        5000

/* ---- tool names -------------------------------------------------------- */

static int ascii_alpha(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int name_char_ok(int c, int gemini)
{
	if (ascii_alpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-')
		return 1;
	return gemini && (c == '.' || c == ':');
}

/* A message into err, whole code points only (a name may be cut anywhere). */
static void __attribute__((format(printf, 3, 4))) say(char *err, size_t errlen, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	tgi_sanitize(err, errlen, msg);
}

int tgi_dialect_name_ok(const char *api, const char *name, char *err, size_t errlen)
{
	char shown[NAME_MAX_LEN + 8];
	int gemini;

	if (api && strcmp(api, "gemini") == 0) {
		gemini = 1;
	} else if (api && (strcmp(api, "openai-chat") == 0 || strcmp(api, "openai-responses") == 0 ||
	                   strcmp(api, "anthropic") == 0)) {
		gemini = 0;
	} else {
		tgi_sanitize(shown, sizeof shown, api ? api : "");
		say(err, errlen, "unknown API \"%s\"; expected openai-chat, openai-responses, "
		    "anthropic or gemini", shown);
		return -1;
	}
	size_t len = name ? strlen(name) : 0;
	if (len == 0) {
		say(err, errlen, "tool name \"\" is empty; %s needs 1 to %d characters", api,
		    NAME_MAX_LEN);
		return -1;
	}
	if (len > NAME_MAX_LEN) {
		tgi_sanitize(shown, NAME_MAX_LEN / 2 + 1, name);
		say(err, errlen, "tool name \"%s...\" is too long for %s (%zu bytes; at most %d)",
		    shown, api, len, NAME_MAX_LEN);
		return -1;
	}
	tgi_sanitize(shown, sizeof shown, name);
	for (size_t i = 0; i < len; i++) {
		if (name_char_ok((unsigned char)name[i], gemini))
			continue;
		say(err, errlen, "tool name \"%s\" has a character %s does not accept at byte %zu; "
		    "a name is letters, digits, %s",
		    shown, api, i, gemini ? "'_', '-', '.' and ':'" : "'_' and '-'");
		return -1;
	}
	if (gemini && !ascii_alpha((unsigned char)name[0]) && name[0] != '_') {
		say(err, errlen, "tool name \"%s\" must start with a letter or an underscore for %s",
		    shown, api);
		return -1;
	}
	return 0;
}

/* ---- what both dialects share ------------------------------------------ */

/* What a dialect does with a keyword the walkers do not handle themselves. */
enum kw_action {
	KW_DROP = 0,  /* not shown (annotations, unknown keywords) */
	KW_KEEP,      /* copied as it is */
	KW_NOTE,      /* removed, and written into the description */
	KW_REFUSE     /* cannot be expressed: OpenAI strict gives up */
};

static const struct keyword {
	const char   *name;
	unsigned char openai, gemini;
} keywords[] = {
	{"title", KW_KEEP, KW_KEEP},
	{"pattern", KW_KEEP, KW_KEEP},
	{"minimum", KW_KEEP, KW_KEEP},
	{"maximum", KW_KEEP, KW_KEEP},
	{"exclusiveMinimum", KW_KEEP, KW_NOTE},
	{"exclusiveMaximum", KW_KEEP, KW_NOTE},
	{"multipleOf", KW_KEEP, KW_NOTE},
	{"minItems", KW_KEEP, KW_KEEP},
	{"maxItems", KW_KEEP, KW_KEEP},
	{"minLength", KW_NOTE, KW_KEEP},
	{"maxLength", KW_NOTE, KW_KEEP},
	{"minProperties", KW_NOTE, KW_KEEP},
	{"maxProperties", KW_NOTE, KW_KEEP},
	{"propertyNames", KW_NOTE, KW_NOTE},
	{"uniqueItems", KW_NOTE, KW_NOTE},
	{"contains", KW_NOTE, KW_NOTE},
	{"minContains", KW_NOTE, KW_NOTE},
	{"maxContains", KW_NOTE, KW_NOTE},
	{"unevaluatedItems", KW_NOTE, KW_NOTE},
	{"dependentRequired", KW_NOTE, KW_NOTE},
	{"default", KW_NOTE, KW_NOTE},
	{"examples", KW_NOTE, KW_NOTE},
	{"contentEncoding", KW_NOTE, KW_NOTE},
	{"contentMediaType", KW_NOTE, KW_NOTE},
	{"patternProperties", KW_REFUSE, KW_NOTE},
	{"prefixItems", KW_REFUSE, KW_NOTE},
	{"if", KW_REFUSE, KW_NOTE},
	{"then", KW_REFUSE, KW_NOTE},
	{"else", KW_REFUSE, KW_NOTE},
	{"not", KW_REFUSE, KW_NOTE},
	{"dependentSchemas", KW_REFUSE, KW_NOTE},
	{"dependencies", KW_REFUSE, KW_NOTE},
	{"$dynamicRef", KW_REFUSE, KW_NOTE},
	{"$recursiveRef", KW_REFUSE, KW_NOTE},
};

static enum kw_action keyword_action(const char *name, int gemini)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(keywords); i++)
		if (strcmp(keywords[i].name, name) == 0)
			return gemini ? keywords[i].gemini : keywords[i].openai;
	return KW_DROP;
}

/* Is v a value the kept keyword k can have?  (A wrong one is described.) */
static int keep_ok(const char *k, const json_t *v)
{
	if (strcmp(k, "title") == 0 || strcmp(k, "pattern") == 0)
		return json_is_string(v);
	if (strncmp(k, "min", 3) == 0 || strncmp(k, "max", 3) == 0) {
		if (strcmp(k, "minimum") == 0 || strcmp(k, "maximum") == 0)
			return json_is_number(v);
		return json_is_integer(v) && json_integer_value(v) >= 0; /* counts */
	}
	return json_is_number(v); /* exclusiveMinimum, exclusiveMaximum, multipleOf */
}

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/*
 * "key: value" appended to notes ("; " between two), the value a plain
 * string or compact JSON, cut at NOTE_VALUE_MAX bytes.
 */
static void note_add(tgi_buf *notes, const char *key, const json_t *v)
{
	char val[NOTE_VALUE_MAX + 1];
	char *text = NULL;
	const char *src = json_is_string(v) ? json_string_value(v) : NULL;

	if (!src) {
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		src = text ? text : "?";
	}
	tgi_sanitize(val, sizeof val, src);
	int cut = strlen(val) < strlen(src);
	free(text);
	tgi_buf_printf(notes, "%s%s: %s%s", notes->len ? "; " : "", key, val, cut ? "..." : "");
}

/* out.description = the schema's description with the notes after it. */
static void set_description(json_t *out, const json_t *desc, tgi_buf *notes)
{
	const char *d = json_string_value(desc);
	if (!notes->len) {
		if (d)
			json_object_set_new(out, "description", json_string(d));
		return;
	}
	if (!d || !*d) {
		json_object_set_new(out, "description", tgi_json_text(notes->p, notes->len));
		return;
	}
	size_t dl = strlen(d);
	char *t = tgi_xmalloc(dl + notes->len + 4);
	memcpy(t, d, dl);
	memcpy(t + dl, " (", 2);
	memcpy(t + dl + 2, notes->p, notes->len);
	memcpy(t + dl + 2 + notes->len, ")", 2);
	json_object_set_new(out, "description", tgi_json_text(t, dl + notes->len + 3));
	free(t);
}

/*
 * The target of an in-document $ref, or NULL.  With defs_only, only "#",
 * "#/$defs/NAME" and "#/definitions/NAME" are accepted (what OpenAI
 * strict resolves); otherwise any JSON pointer fragment.
 */
static const json_t *ref_target(const json_t *root, const char *ref, int defs_only)
{
	if (!ref || ref[0] != '#')
		return NULL;
	const char *ptr = ref + 1;
	if (defs_only && *ptr) {
		const char *name;
		if (strncmp(ptr, "/$defs/", 7) == 0)
			name = ptr + 7;
		else if (strncmp(ptr, "/definitions/", 13) == 0)
			name = ptr + 13;
		else
			return NULL;
		if (!*name || strchr(name, '/'))
			return NULL;
	}
	return tgi_json_pointer((json_t *)root, ptr);
}

/*
 * A $ref's target (an object schema) with the $ref's sibling keywords laid
 * over it, without the document-level keywords.  New reference, shallow:
 * its values are shared with the document, which the walkers only read.
 */
static json_t *ref_inline(const json_t *target, const json_t *s)
{
	json_t *m = json_is_object(target) ? json_copy((json_t *)target) : json_object();
	const char *k;
	json_t *v;
	json_object_del(m, "$defs");
	json_object_del(m, "definitions");
	json_object_del(m, "$schema");
	json_object_del(m, "$id");
	json_object_foreach((json_t *)s, k, v)
		if (strcmp(k, "$ref") != 0)
			json_object_set(m, k, v);
	return m;
}

/*
 * s with the branches of its allOf merged into it (allOf removed): the
 * union of properties and required, and any other keyword taken when the
 * branches agree on it.  A branch that is a $ref is resolved first.
 * NULL, with the keyword named in why, when two disagree.  New reference.
 */
static json_t *merge_allof(const json_t *root, const json_t *s, int defs_only, char *why,
                           size_t whylen)
{
	/* Shallow, like ref_inline; properties and required, which the merge
	 * changes, are copies of their own. */
	json_t *out = json_copy((json_t *)s);
	json_t *all = json_object_get(s, "allOf");
	const char *const grown[] = {"properties", "required"};
	size_t i;
	json_t *b;

	json_object_del(out, "allOf");
	for (i = 0; i < TGI_ARRAY_LEN(grown); i++)
		if (json_object_get(s, grown[i]))
			json_object_set_new(out, grown[i], json_copy(json_object_get(s, grown[i])));
	if (!json_is_array(all) || !json_array_size(all)) {
		tgi_snprintf(why, whylen, "it is not a list of schemas");
		goto fail;
	}
	json_array_foreach(all, i, b) {
		json_t *branch;
		const char *k;
		json_t *v;
		if (json_is_true(b))
			continue;
		if (!json_is_object(b)) {
			tgi_snprintf(why, whylen, "a branch is not a schema");
			goto fail;
		}
		if (json_object_get(b, "$ref")) {
			const json_t *t = ref_target(root, json_string_value(json_object_get(b, "$ref")),
			                             defs_only);
			if (!json_is_object(t)) {
				tgi_snprintf(why, whylen, "a branch's $ref cannot be resolved");
				goto fail;
			}
			branch = ref_inline(t, b);
		} else {
			branch = json_incref(b);
		}
		json_object_foreach(branch, k, v) {
			json_t *have = json_object_get(out, k);
			if (strcmp(k, "$defs") == 0 || strcmp(k, "definitions") == 0)
				continue; /* the document's, reached through $ref */
			if (strcmp(k, "description") == 0 || strcmp(k, "title") == 0) {
				if (!have)
					json_object_set(out, k, v); /* the first one says it */
				continue;
			}
			if (!have) {
				json_object_set_new(out, k, json_copy(v));
			} else if (strcmp(k, "properties") == 0 && json_is_object(have) && json_is_object(v)) {
				const char *pk;
				json_t *pv;
				json_object_foreach(v, pk, pv) {
					json_t *ph = json_object_get(have, pk);
					if (ph && !json_equal(ph, pv)) {
						tgi_snprintf(why, whylen, "its branches define property \"%s\" differently", pk);
						json_decref(branch);
						goto fail;
					}
					json_object_set(have, pk, pv);
				}
			} else if (strcmp(k, "required") == 0 && json_is_array(have) && json_is_array(v)) {
				size_t j;
				json_t *r;
				json_array_foreach(v, j, r) {
					size_t m;
					json_t *x;
					int dup = 0;
					json_array_foreach(have, m, x)
						dup |= json_equal(x, r);
					if (!dup)
						json_array_append(have, r);
				}
			} else if (!json_equal(have, v)) {
				tgi_snprintf(why, whylen, "its branches disagree on \"%s\"", k);
				json_decref(branch);
				goto fail;
			}
		}
		json_decref(branch);
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* ---- OpenAI strict ----------------------------------------------------- */

static const char *const oai_formats[] = {
	"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", NULL
};
static const char *const json_types[] = {
	"string", "number", "integer", "boolean", "object", "array", "null", NULL
};

typedef struct oai {
	const json_t *root;
	size_t props;   /* object properties, all objects */
	size_t enums;   /* enum values, all enums */
	size_t chars;   /* property and definition names, enum and const strings */
	size_t nodes;   /* subschemas walked */
} oai;

static int type_has(const json_t *type, const char *name)
{
	if (json_is_string(type))
		return strcmp(json_string_value(type), name) == 0;
	size_t i;
	json_t *t;
	json_array_foreach(type, i, t)
		if (json_is_string(t) && strcmp(json_string_value(t), name) == 0)
			return 1;
	return 0;
}

static int value_in(const json_t *list, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(list, i, x)
		if (json_equal(x, v))
			return 1;
	return 0;
}

/* Does s (already strict) accept null? */
static int oai_nullable(const json_t *s)
{
	json_t *type = json_object_get(s, "type");
	json_t *any = json_object_get(s, "anyOf");
	if (type)
		return type_has(type, "null");
	if (any) {
		size_t i;
		json_t *b;
		json_array_foreach(any, i, b)
			if (oai_nullable(b))
				return 1;
		return 0;
	}
	json_t *en = json_object_get(s, "enum"), *c = json_object_get(s, "const");
	json_t *null = json_null();
	return (en && value_in(en, null)) || json_is_null(c);
}

/*
 * s (strict, taken) made to accept null as well: "null" added to its type
 * (and to its enum), a {"type":"null"} branch added to its anyOf, or s
 * wrapped in anyOf with one.  New reference.
 */
static json_t *oai_make_nullable(json_t *s)
{
	json_t *type = json_object_get(s, "type");
	json_t *any = json_object_get(s, "anyOf");

	if (oai_nullable(s))
		return s;
	if (type && !json_object_get(s, "const")) {
		if (json_is_string(type)) {
			json_t *list = json_pack("[Os]", type, "null");
			json_object_set_new(s, "type", list);
		} else {
			json_array_append_new(type, json_string("null"));
		}
		json_t *en = json_object_get(s, "enum");
		if (en)
			json_array_append_new(en, json_null());
		return s;
	}
	if (any && !type && !json_object_get(s, "$ref")) {
		json_array_append_new(any, json_pack("{ss}", "type", "null"));
		return s;
	}
	json_t *w = json_object();
	const char *const outer[] = {"title", "description"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(outer); i++) {
		json_t *v = json_object_get(s, outer[i]);
		if (v) {
			json_object_set(w, outer[i], v);
			json_object_del(s, outer[i]);
		}
	}
	json_object_set_new(w, "anyOf", json_pack("[o{ss}]", s, "type", "null"));
	return w;
}

static json_t *oai_node(oai *c, const json_t *s, int depth, int objdepth);

/* Each of list's schemas made strict, as a new array (false ones left
 * out), or NULL. */
static json_t *oai_list(oai *c, const json_t *list, int depth, int objdepth)
{
	if (!json_is_array(list) || !json_array_size(list))
		return NULL;
	json_t *out = json_array();
	size_t i;
	json_t *b;
	json_array_foreach(list, i, b) {
		if (json_is_false(b))
			continue; /* a branch that accepts nothing adds nothing */
		json_t *x = oai_node(c, b, depth + 1, objdepth);
		if (!x) {
			json_decref(out);
			return NULL;
		}
		json_array_append_new(out, x);
	}
	if (!json_array_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* Counts an enum's values against the limits; 0 or -1. */
static int oai_count_enum(oai *c, const json_t *en)
{
	size_t i, chars = 0;
	json_t *v;
	if (!json_is_array(en) || !json_array_size(en))
		return -1;
	json_array_foreach(en, i, v)
		if (json_is_string(v))
			chars += tgi_utf8_len(json_string_value(v), json_string_length(v));
	c->enums += json_array_size(en);
	c->chars += chars;
	if (json_array_size(en) > OAI_BIG_ENUM && chars > OAI_BIG_ENUM_CHARS)
		return -1;
	return 0;
}

/* The properties of an object made strict into out: all required, the
 * optional ones nullable, closed.  level: this object's nesting, the root
 * object's being 1.  0 or -1. */
static int oai_object(oai *c, const json_t *s, json_t *out, int depth, int level)
{
	json_t *props = json_object_get(s, "properties");
	json_t *req = json_object_get(s, "required");
	json_t *addl = json_object_get(s, "additionalProperties");
	const char *k;
	json_t *v;
	size_t i;

	if (level > OAI_MAX_OBJECT_DEPTH)
		return -1;
	if (props && !json_is_object(props))
		return -1;
	if (!props && !json_is_false(addl))
		return -1; /* an open map */
	if (req && !json_is_array(req))
		return -1;
	json_array_foreach(req, i, v)
		if (!json_is_string(v) || !json_object_get(props, json_string_value(v)))
			return -1; /* closing the object would make it unsatisfiable */

	json_t *oprops = json_object(), *oreq = json_array();
	json_object_set_new(out, "properties", oprops);
	json_object_set_new(out, "required", oreq);
	json_object_set_new(out, "additionalProperties", json_false());
	json_object_foreach(props, k, v) {
		json_t *name = json_string(k);
		int required = value_in(req, name);
		json_t *x = json_is_false(v) ? NULL : oai_node(c, v, depth + 1, level);
		if (!x) {
			json_decref(name);
			if (json_is_false(v) && !required)
				continue; /* forbidden: closing the object says so */
			return -1;
		}
		if (!required)
			x = oai_make_nullable(x);
		json_object_set_new(oprops, k, x);
		json_array_append_new(oreq, name);
		c->props++;
		c->chars += tgi_utf8_len(k, strlen(k));
	}
	return 0;
}

/*
 * One subschema made strict.  NULL when it cannot be.  depth counts
 * subschemas along the path, objdepth the objects around it.  New reference.
 */
static json_t *oai_node(oai *c, const json_t *s, int depth, int objdepth)
{
	const char *k;
	json_t *v;

	if (depth > WALK_MAX_DEPTH || ++c->nodes > OAI_MAX_NODES || !json_is_object(s))
		return NULL; /* too deep, too many, or true, false, not a schema */

	json_t *ref = json_object_get(s, "$ref");
	if (ref) {
		const json_t *t = ref_target(c->root, json_string_value(ref), 1);
		if (!json_is_object(t))
			return NULL;
		if (json_object_size(s) == 1)
			return json_pack("{sO}", "$ref", ref);
		/* Strict mode takes no keyword beside $ref: inline the target. */
		json_t *m = ref_inline(t, s);
		json_t *x = oai_node(c, m, depth + 1, objdepth);
		json_decref(m);
		return x;
	}
	if (json_object_get(s, "allOf")) {
		char why[128];
		json_t *m = merge_allof(c->root, s, 1, why, sizeof why);
		json_t *x = m ? oai_node(c, m, depth + 1, objdepth) : NULL;
		json_decref(m);
		return x;
	}
	if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf"))
		return NULL;

	json_t *out = json_object();
	json_t *desc = NULL, *format = NULL;
	int nullable = 0;
	tgi_buf notes;
	tgi_buf_init(&notes, NOTE_MAX);

	json_object_foreach((json_t *)s, k, v) {
		if (strcmp(k, "type") == 0) {
			size_t i;
			json_t *t;
			if (json_is_string(v) && in_list(json_string_value(v), json_types)) {
				json_object_set_new(out, k, json_deep_copy(v));
				continue;
			}
			if (!json_is_array(v) || !json_array_size(v))
				goto refuse;
			json_array_foreach(v, i, t)
				if (!json_is_string(t) || !in_list(json_string_value(t), json_types))
					goto refuse;
			json_object_set_new(out, k, json_deep_copy(v));
		} else if (strcmp(k, "properties") == 0 || strcmp(k, "required") == 0) {
			/* oai_object */
		} else if (strcmp(k, "additionalProperties") == 0 ||
		           strcmp(k, "unevaluatedProperties") == 0) {
			if (!json_is_false(v))
				goto refuse;
		} else if (strcmp(k, "items") == 0) {
			json_t *x = oai_node(c, v, depth + 1, objdepth);
			if (!x)
				goto refuse;
			json_object_set_new(out, k, x);
		} else if (strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0) {
			/* oneOf is shown as anyOf: the tool's own schema still decides. */
			json_t *x = oai_list(c, v, depth, objdepth);
			if (!x)
				goto refuse;
			json_object_set_new(out, "anyOf", x);
		} else if (strcmp(k, "enum") == 0) {
			if (oai_count_enum(c, v) < 0)
				goto refuse;
			json_object_set_new(out, k, json_deep_copy(v));
		} else if (strcmp(k, "const") == 0) {
			if (json_is_string(v))
				c->chars += tgi_utf8_len(json_string_value(v), json_string_length(v));
			json_object_set_new(out, k, json_deep_copy(v));
		} else if (strcmp(k, "$defs") == 0 || strcmp(k, "definitions") == 0) {
			/* the root's are made strict by oai_defs; others are unreachable */
		} else if (strcmp(k, "format") == 0) {
			format = v;
		} else if (strcmp(k, "description") == 0) {
			desc = v;
		} else if (strcmp(k, "nullable") == 0) {
			nullable = json_is_true(v);
		} else {
			switch (keyword_action(k, 0)) {
			case KW_KEEP:
				if (keep_ok(k, v)) {
					json_object_set_new(out, k, json_deep_copy(v));
					break;
				}
				/* fall through */
			case KW_NOTE:
				note_add(&notes, k, v);
				break;
			case KW_REFUSE:
				goto refuse;
			case KW_DROP:
				break;
			}
		}
	}

	json_t *type = json_object_get(out, "type");
	if (!type && json_object_get(s, "properties")) {
		type = json_string("object");
		json_object_set_new(out, "type", type);
	}
	if (type && type_has(type, "object") && oai_object(c, s, out, depth, objdepth + 1) < 0)
		goto refuse;
	if (type && type_has(type, "array") && !json_object_get(out, "items"))
		goto refuse;
	if (!type && !json_object_get(out, "anyOf") && !json_object_get(out, "enum") &&
	    !json_object_get(out, "const"))
		goto refuse; /* a subschema with no type */
	if (format) {
		/* the string formats strict mode knows, on a string */
		if (json_is_string(format) && in_list(json_string_value(format), oai_formats) &&
		    (!type || type_has(type, "string")))
			json_object_set_new(out, "format", json_deep_copy(format));
		else
			note_add(&notes, "format", format);
	}
	set_description(out, desc, &notes);
	tgi_buf_free(&notes);
	return nullable ? oai_make_nullable(out) : out;

refuse:
	tgi_buf_free(&notes);
	json_decref(out);
	return NULL;
}

/* The root's $defs and definitions made strict into out.  0 or -1. */
static int oai_defs(oai *c, json_t *out)
{
	static const char *const keys[] = {"$defs", "definitions"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(keys); i++) {
		json_t *defs = json_object_get(c->root, keys[i]);
		const char *k;
		json_t *v;
		if (!defs)
			continue;
		if (!json_is_object(defs))
			return -1;
		json_t *o = json_object();
		json_object_set_new(out, keys[i], o);
		json_object_foreach(defs, k, v) {
			json_t *x = oai_node(c, v, 1, 0);
			if (!x)
				return -1;
			json_object_set_new(o, k, x);
			c->chars += tgi_utf8_len(k, strlen(k));
		}
	}
	return 0;
}

json_t *tgi_dialect_openai_strict(const json_t *schema)
{
	oai c = {.root = schema};
	if (!json_is_object(schema) || json_object_get(schema, "anyOf") ||
	    json_object_get(schema, "oneOf"))
		return NULL;
	json_t *out = oai_node(&c, schema, 0, 0);
	if (!out)
		return NULL;
	json_t *type = json_object_get(out, "type");
	if (!json_is_string(type) || strcmp(json_string_value(type), "object") != 0 ||
	    oai_defs(&c, out) < 0 || c.props > OAI_MAX_PROPERTIES ||
	    c.enums > OAI_MAX_ENUM_VALUES || c.chars > OAI_MAX_STRING_CHARS) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* ---- Gemini legacy ----------------------------------------------------- */

typedef struct gem {
	const json_t *root;
	const json_t *inlining[WALK_MAX_DEPTH + 1]; /* $ref targets being inlined */
	size_t        ninlining;
	size_t        nodes;
	char         *err;
	size_t        errlen;
} gem;

static const char *const gem_types[][2] = {
	{"string", "STRING"}, {"number", "NUMBER"},   {"integer", "INTEGER"},
	{"boolean", "BOOLEAN"}, {"array", "ARRAY"}, {"object", "OBJECT"},
};

/* The Gemini name of a JSON Schema type ("null" gives ""), or NULL. */
static const char *gem_type_name(const json_t *t)
{
	const char *s = json_string_value(t);
	if (!s)
		return NULL;
	if (strcasecmp(s, "null") == 0)
		return "";
	for (size_t i = 0; i < TGI_ARRAY_LEN(gem_types); i++)
		if (strcasecmp(s, gem_types[i][0]) == 0)
			return gem_types[i][1];
	return NULL;
}

static int gem_format_ok(const char *type, const char *format)
{
	if (!type || !format)
		return 0;
	if (strcmp(type, "NUMBER") == 0)
		return strcmp(format, "float") == 0 || strcmp(format, "double") == 0;
	if (strcmp(type, "INTEGER") == 0)
		return strcmp(format, "int32") == 0 || strcmp(format, "int64") == 0;
	if (strcmp(type, "STRING") == 0)
		return strcmp(format, "enum") == 0 || strcmp(format, "date-time") == 0;
	return 0;
}

static json_t *gem_node(gem *c, const json_t *s, const char *ptr, int depth);

/*
 * enum (or a const as one value) into out: strings as they are; numbers
 * as strings beside a numeric type; null as nullable; anything else into
 * the notes.  *type is set when the schema had none.
 */
static void gem_enum(json_t *out, const json_t *values, const char *key, const char **type,
                     int *nullable, tgi_buf *notes)
{
	size_t i, nstr = 0, nnum = 0, nint = 0, nother = 0;
	json_t *v;
	json_array_foreach(values, i, v) {
		if (json_is_null(v))
			*nullable = 1;
		else if (json_is_string(v))
			nstr++;
		else if (json_is_integer(v))
			nnum++, nint++;
		else if (json_is_real(v))
			nnum++;
		else
			nother++;
	}
	if (nother || (nstr && nnum)) {
		note_add(notes, key, values);
		return;
	}
	if (!nstr && !nnum)
		return; /* only null */
	json_t *en = json_array();
	json_array_foreach(values, i, v) {
		if (json_is_string(v)) {
			json_array_append(en, v);
		} else if (json_is_number(v)) {
			char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			json_array_append_new(en, json_string(t ? t : "0"));
			free(t);
		}
	}
	json_object_set_new(out, "enum", en);
	if (!*type)
		*type = nstr ? "STRING" : nint == nnum ? "INTEGER" : "NUMBER";
}

/* anyOf/oneOf branches into out.anyOf; {"type":"null"} ones set *nullable. */
static int gem_anyof(gem *c, const json_t *list, const char *key, json_t *out, const char *ptr,
                     int depth, int *nullable)
{
	char at[512];
	size_t i;
	json_t *b;
	if (!json_is_array(list) || !json_array_size(list)) {
		tgi_snprintf(c->err, c->errlen, "the schema's %s at \"%s\" is not a list of schemas", key, ptr);
		return -1;
	}
	json_t *any = json_array();
	json_object_set_new(out, "anyOf", any);
	json_array_foreach(list, i, b) {
		char idx[24];
		if (json_is_false(b))
			continue; /* a branch that accepts nothing adds nothing */
		snprintf(idx, sizeof idx, "%zu", i);
		tgi_json_pointer_join(at, sizeof at, ptr, key);
		tgi_json_pointer_join(at, sizeof at, at, idx);
		json_t *x = gem_node(c, b, at, depth + 1);
		if (!x)
			return -1;
		if (json_object_size(x) == 1 && json_is_true(json_object_get(x, "nullable"))) {
			*nullable = 1; /* {"type":"null"} */
			json_decref(x);
			continue;
		}
		json_array_append_new(any, x);
	}
	if (!json_array_size(any) && !*nullable) {
		tgi_snprintf(c->err, c->errlen, "the schema's %s at \"%s\" accepts nothing; "
		             "Gemini's legacy schema cannot express it", key, ptr);
		return -1;
	}
	return 0;
}

static int gem_properties(gem *c, const json_t *props, json_t *out, const char *ptr, int depth)
{
	char at[512];
	const char *k;
	json_t *v;
	if (!json_is_object(props)) {
		tgi_snprintf(c->err, c->errlen, "the schema's properties at \"%s\" are not an object", ptr);
		return -1;
	}
	json_t *o = json_object();
	json_object_set_new(out, "properties", o);
	json_object_foreach((json_t *)props, k, v) {
		if (json_is_false(v))
			continue; /* forbidden: left out (and out of required) */
		tgi_json_pointer_join(at, sizeof at, ptr, "properties");
		tgi_json_pointer_join(at, sizeof at, at, k);
		json_t *x = gem_node(c, v, at, depth + 1);
		if (!x)
			return -1;
		json_object_set_new(o, k, x);
	}
	return 0;
}

/* required, keeping the names of properties out has, once each. */
static void gem_required(const json_t *req, json_t *out)
{
	json_t *props = json_object_get(out, "properties");
	size_t i;
	json_t *v;
	if (!json_is_array(req) || !props)
		return;
	json_t *r = json_array();
	json_array_foreach(req, i, v)
		if (json_is_string(v) && json_object_get(props, json_string_value(v)) && !value_in(r, v))
			json_array_append(r, v);
	if (json_array_size(r))
		json_object_set_new(out, "required", r);
	else
		json_decref(r);
}

/*
 * An anyOf left with one branch (the others were {"type":"null"} or false)
 * is that branch, when out says nothing the branch also says: its
 * keywords move into out, its description too when *desc is NULL.
 * Returns the branch, for *desc to stay valid: the caller drops it with
 * json_decref() (NULL when nothing was collapsed).
 */
static json_t *gem_collapse(json_t *out, json_t **desc, int *nullable)
{
	json_t *any = json_object_get(out, "anyOf");
	json_t *only = json_array_get(any, 0);
	const char *k;
	json_t *v;
	if (any && !json_array_size(any)) {
		json_object_del(out, "anyOf"); /* nothing but null: nullable says it */
		return NULL;
	}
	if (json_array_size(any) != 1)
		return NULL;
	json_object_foreach(only, k, v)
		if (strcmp(k, "description") != 0 && strcmp(k, "nullable") != 0 &&
		    json_object_get(out, k))
			return NULL; /* both say it: the branch stays a branch */
	json_incref(only);
	json_object_del(out, "anyOf");
	json_object_foreach(only, k, v) {
		if (strcmp(k, "description") == 0) {
			if (!*desc)
				*desc = v;
		} else if (strcmp(k, "nullable") == 0) {
			*nullable |= json_is_true(v);
		} else {
			json_object_set(out, k, v);
		}
	}
	return only;
}

/* out with its keywords in a reading order (type first), taken.  New reference. */
static json_t *gem_order(json_t *out)
{
	static const char *const first[] = {
		"type", "format", "title", "description", "nullable", "enum", "properties", "required",
		"items", "anyOf",
	};
	json_t *o = json_object();
	const char *k;
	json_t *v;
	for (size_t i = 0; i < TGI_ARRAY_LEN(first); i++)
		if ((v = json_object_get(out, first[i])))
			json_object_set(o, first[i], v);
	json_object_foreach(out, k, v)
		if (!json_object_get(o, k))
			json_object_set(o, k, v);
	json_decref(out);
	return o;
}

/* A $ref inlined, refusing cycles.  New reference or NULL with c->err. */
static json_t *gem_ref(gem *c, const json_t *s, const char *ptr, int depth)
{
	char shown[128];
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	tgi_sanitize(shown, sizeof shown, ref ? ref : "");
	if (!ref || ref[0] != '#') {
		tgi_snprintf(c->err, c->errlen,
		             "the schema has a $ref to outside the document at \"%s\" (\"%s\"); "
		             "Gemini's legacy schema cannot express it", ptr, shown);
		return NULL;
	}
	const json_t *t = ref_target(c->root, ref, 0);
	if (!t || !(json_is_object(t) || json_is_boolean(t))) {
		tgi_snprintf(c->err, c->errlen, "the schema's $ref \"%s\" at \"%s\" points to no schema",
		             shown, ptr);
		return NULL;
	}
	for (size_t i = 0; i < c->ninlining; i++) {
		if (c->inlining[i] == t) {
			tgi_snprintf(c->err, c->errlen,
			             "the schema has a $ref cycle at \"%s\" (\"%s\"); "
			             "Gemini's legacy schema cannot express it", ptr, shown);
			return NULL;
		}
	}
	json_t *m = ref_inline(t, s);
	c->inlining[c->ninlining++] = t;
	json_t *x = gem_node(c, m, ref, depth + 1);
	c->ninlining--;
	json_decref(m);
	return x;
}

/*
 * One subschema in Gemini's legacy shape.  ptr is where it is in the
 * document, as a URI fragment ("#/properties/a", for messages).  New reference, or NULL with c->err.
 */
static json_t *gem_node(gem *c, const json_t *s, const char *ptr, int depth)
{
	const char *k;
	json_t *v;

	if (depth > WALK_MAX_DEPTH) {
		tgi_snprintf(c->err, c->errlen, "the schema is nested deeper than %d levels at \"%s\"",
		             WALK_MAX_DEPTH, ptr);
		return NULL;
	}
	if (++c->nodes > GEM_MAX_NODES) {
		tgi_snprintf(c->err, c->errlen,
		             "the schema has more than %d subschemas once its $refs are inlined",
		             GEM_MAX_NODES);
		return NULL;
	}
	if (json_is_true(s))
		return json_object();
	if (!json_is_object(s)) {
		tgi_snprintf(c->err, c->errlen, "the schema at \"%s\" is %s; Gemini's legacy schema "
		             "cannot express it", ptr, json_is_false(s) ? "false (it accepts nothing)"
		             : "not a schema");
		return NULL;
	}
	if (json_object_get(s, "$ref"))
		return gem_ref(c, s, ptr, depth);
	if (json_object_get(s, "allOf")) {
		char why[160];
		json_t *m = merge_allof(c->root, s, 0, why, sizeof why);
		if (!m) {
			tgi_snprintf(c->err, c->errlen, "the schema's allOf at \"%s\" cannot be merged: %s; "
			             "Gemini's legacy schema cannot express it", ptr, why);
			return NULL;
		}
		json_t *x = gem_node(c, m, ptr, depth + 1);
		json_decref(m);
		return x;
	}
	if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf")) {
		tgi_snprintf(c->err, c->errlen, "the schema at \"%s\" has both anyOf and oneOf; "
		             "Gemini's legacy schema cannot express it", ptr);
		return NULL;
	}

	json_t *out = json_object();
	const char *type = NULL;
	json_t *types = NULL;  /* several non-null types */
	json_t *desc = NULL, *format = NULL, *en = NULL, *cst = NULL;
	int nullable = 0;
	tgi_buf notes;
	tgi_buf_init(&notes, NOTE_MAX);

	json_object_foreach((json_t *)s, k, v) {
		if (strcmp(k, "type") == 0) {
			size_t i;
			json_t *t;
			json_t *list = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
			json_array_foreach(list, i, t) {
				const char *g = gem_type_name(t);
				if (!g) {
					char shown[64];
					char *txt = json_dumps(t, JSON_COMPACT | JSON_ENCODE_ANY);
					tgi_sanitize(shown, sizeof shown, txt ? txt : "?");
					free(txt);
					tgi_snprintf(c->err, c->errlen, "the schema at \"%s\" has an unknown type %s",
					             ptr, shown);
					json_decref(list);
					goto fail;
				}
				if (!*g) {
					nullable = 1;
				} else if (!type) {
					type = g;
				} else {
					if (!types)
						types = json_pack("[{ss}]", "type", type);
					json_array_append_new(types, json_pack("{ss}", "type", g));
				}
			}
			json_decref(list);
		} else if (strcmp(k, "properties") == 0) {
			if (gem_properties(c, v, out, ptr, depth) < 0)
				goto fail;
		} else if (strcmp(k, "required") == 0) {
			/* after properties */
		} else if (strcmp(k, "items") == 0) {
			char at[512];
			if (json_is_array(v) || json_is_false(v)) {
				note_add(&notes, k, v); /* a tuple, or no items at all */
				continue;
			}
			tgi_json_pointer_join(at, sizeof at, ptr, k);
			json_t *x = gem_node(c, v, at, depth + 1);
			if (!x)
				goto fail;
			json_object_set_new(out, k, x);
		} else if (strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0) {
			if (gem_anyof(c, v, k, out, ptr, depth, &nullable) < 0)
				goto fail;
		} else if (strcmp(k, "enum") == 0) {
			if (json_is_array(v))
				en = v;
		} else if (strcmp(k, "const") == 0) {
			cst = v;
		} else if (strcmp(k, "format") == 0) {
			format = v;
		} else if (strcmp(k, "description") == 0) {
			desc = v;
		} else if (strcmp(k, "nullable") == 0) {
			nullable |= json_is_true(v);
		} else if (strcmp(k, "additionalProperties") == 0 ||
		           strcmp(k, "unevaluatedProperties") == 0) {
			if (!json_is_false(v))
				note_add(&notes, k, v);
		} else {
			switch (keyword_action(k, 1)) {
			case KW_KEEP:
				if (keep_ok(k, v)) {
					json_object_set_new(out, k, json_deep_copy(v));
					break;
				}
				/* fall through */
			case KW_NOTE:
			case KW_REFUSE:
				note_add(&notes, k, v);
				break;
			case KW_DROP:
				break;
			}
		}
	}

	if (en)
		gem_enum(out, en, "enum", &type, &nullable, &notes);
	if (cst) {
		json_t *one = json_pack("[O]", cst);
		if (en)
			note_add(&notes, "const", cst);
		else
			gem_enum(out, one, "const", &type, &nullable, &notes);
		json_decref(one);
	}
	if (!type && !types) {
		if (json_object_get(out, "properties"))
			type = "OBJECT";
		else if (json_object_get(out, "items"))
			type = "ARRAY";
	}
	if (types) {
		/* several types: one anyOf branch each (unless anyOf is taken);
		 * what applies to objects (properties, required) or arrays (items)
		 * only goes with that branch, and is dropped when there is none,
		 * as it constrains no other type (left beside the branches, it
		 * would read as an object's on the way back) */
		if (json_object_get(out, "anyOf")) {
			note_add(&notes, "type", json_object_get(s, "type"));
		} else {
			size_t i;
			json_t *b;
			json_array_foreach(types, i, b) {
				const char *bt = json_string_value(json_object_get(b, "type"));
				json_t *props = json_object_get(out, "properties");
				json_t *items = json_object_get(out, "items");
				if (!strcmp(bt, "OBJECT") && props) {
					json_object_set(b, "properties", props);
					gem_required(json_object_get(s, "required"), b);
				} else if (!strcmp(bt, "ARRAY") && items) {
					json_object_set(b, "items", items);
				}
			}
			json_object_del(out, "properties");
			json_object_del(out, "items");
			json_object_set(out, "anyOf", types);
		}
		json_decref(types);
		type = NULL;
	} else if (type) {
		json_object_set_new(out, "type", json_string(type));
	}
	if (format) {
		if (gem_format_ok(type, json_string_value(format)))
			json_object_set_new(out, "format", json_deep_copy(format));
		else
			note_add(&notes, "format", format);
	}
	gem_required(json_object_get(s, "required"), out);
	json_t *branch = gem_collapse(out, &desc, &nullable);
	set_description(out, desc, &notes);
	json_decref(branch);
	if (nullable)
		json_object_set_new(out, "nullable", json_true());
	tgi_buf_free(&notes);
	return gem_order(out);

fail:
	json_decref(types);
	tgi_buf_free(&notes);
	json_decref(out);
	return NULL;
}

json_t *tgi_dialect_gemini_legacy(const json_t *schema, char *err, size_t errlen)
{
	char msg[512];
	gem c = {.root = schema, .err = msg, .errlen = sizeof msg};
	json_t *out = schema ? gem_node(&c, schema, "#", 0) : NULL;
	if (!schema)
		tgi_snprintf(msg, sizeof msg, "the schema is missing");
	if (!out)
		tgi_sanitize(err, errlen, msg); /* names and pointers come from the schema */
	return out;
}
