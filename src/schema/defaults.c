/*
 * defaults.c — fill in `default` values for properties a valid instance
 * leaves out.
 *
 * Runs only after the whole instance validated.  A missing property whose
 * schema (under "properties") has a `default` gets a deep copy of it; then
 * the walk descends into every member and item the schema describes
 * unconditionally — properties, patternProperties, additionalProperties,
 * items/prefixItems, `$ref` and allOf — including members just added, so
 * a default object picks up its own nested defaults.  Conditional branches
 * (anyOf, oneOf, not, if/then/else) are not followed: which branch "owns"
 * a default is not well defined there.
 *
 * Owns: nothing.  Must not: validate, report errors, or touch instance
 * values the schema does not describe.
 */
#include "schema/node.h"

static void apply(const tgi_snode *n, json_t *x, tgi_rscratch *rx, int depth)
{
	if (!n || !n->has_defaults || depth > TGI_SCHEMA_MAX_DEPTH)
		return;
	if (n->ref)
		apply(n->ref, x, rx, depth + 1);
	for (size_t i = 0; i < n->all_of.n; i++)
		apply(n->all_of.v[i], x, rx, depth + 1);

	if (json_is_object(x)) {
		for (size_t i = 0; i < n->nprops; i++) {
			const tgi_sprop *p = &n->props[i];
			if (p->schema && p->schema->dflt && !json_object_getn(x, p->name, p->len))
				json_object_setn_new(x, p->name, p->len, json_deep_copy(p->schema->dflt));
		}
		for (void *it = json_object_iter(x); it; it = json_object_iter_next(x, it)) {
			const char *key = json_object_iter_key(it);
			size_t klen = json_object_iter_key_len(it);
			json_t *v = json_object_iter_value(it);
			int known = 0, i = tgi_snode_prop(n, key, klen);
			if (i >= 0 && n->props[i].schema) {
				known = 1;
				apply(n->props[i].schema, v, rx, depth + 1);
			}
			for (size_t k = 0; k < n->npatterns; k++) {
				if (tgi_regex_match(n->patterns[k].re, rx, key, klen) == 1) {
					known = 1;
					apply(n->patterns[k].schema, v, rx, depth + 1);
				}
			}
			if (!known)
				apply(n->additional, v, rx, depth + 1);
		}
	} else if (json_is_array(x)) {
		size_t len = json_array_size(x);
		for (size_t i = 0; i < len; i++) {
			const tgi_snode *s = i < n->prefix.n ? n->prefix.v[i] : n->items;
			if (!s && i >= n->prefix.n)
				break;
			apply(s, json_array_get(x, i), rx, depth + 1);
		}
	}
}

void tgi_schema_apply_defaults(const tgi_snode *root, json_t *instance, tgi_rscratch *rx)
{
	apply(root, instance, rx, 0);
}
