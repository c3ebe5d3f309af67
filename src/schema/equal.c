/*
 * equal.c — JSON equality and hashing as JSON Schema defines them, for
 * enum, const and uniqueItems.
 *
 * Unlike json_equal(), numbers compare by value whatever their JSON form
 * (1 == 1.0, and a 64-bit integer against a double is compared exactly),
 * and objects compare as unordered maps.  The hash agrees with equality, so
 * uniqueItems can sort by hash instead of comparing every pair.
 *
 * Owns: nothing.  Must not: allocate, or recurse deeper than
 * TGI_SCHEMA_MAX_DEPTH (deeper values compare unequal: an enum or const
 * then rejects, which is the safe side).
 */
#include <string.h>

#include "schema/node.h"

static int num_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	/* long double holds every int64 exactly on the platforms we build for;
	 * elsewhere this is the usual double comparison. */
	long double x = json_is_integer(a) ? (long double)json_integer_value(a)
	                                   : (long double)json_real_value(a);
	long double y = json_is_integer(b) ? (long double)json_integer_value(b)
	                                   : (long double)json_real_value(b);
	return x == y;
}

static int equal(const json_t *a, const json_t *b, int depth)
{
	if (a == b)
		return 1;
	if (depth > TGI_SCHEMA_MAX_DEPTH)
		return 0;
	json_type ta = json_typeof(a), tb = json_typeof(b);
	if (ta != tb)
		return json_is_number(a) && json_is_number(b) && num_equal(a, b);
	switch (ta) {
	case JSON_STRING: {
		size_t n = json_string_length(a);
		return n == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), n) == 0;
	}
	case JSON_INTEGER:
	case JSON_REAL:
		return num_equal(a, b);
	case JSON_ARRAY: {
		size_t n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!equal(json_array_get(a, i), json_array_get(b, i), depth + 1))
				return 0;
		return 1;
	}
	case JSON_OBJECT: {
		if (json_object_size(a) != json_object_size(b))
			return 0;
		for (void *it = json_object_iter((json_t *)a); it;
		     it = json_object_iter_next((json_t *)a, it)) {
			json_t *bv = json_object_getn(b, json_object_iter_key(it),
			                              json_object_iter_key_len(it));
			if (!bv || !equal(json_object_iter_value(it), bv, depth + 1))
				return 0;
		}
		return 1;
	}
	default: /* true, false, null: the type is the value */
		return 1;
	}
}

int tgi_schema_equal(const json_t *a, const json_t *b)
{
	return equal(a, b, 0);
}

/* ---- hashing ---------------------------------------------------------------- */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t bytes_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t number_hash(const json_t *v)
{
	if (json_is_integer(v))
		return mix((uint64_t)json_integer_value(v));
	double d = json_real_value(v);
	/* an integral double hashes as the integer it equals */
	if (tgi_is_integral(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
		return mix((uint64_t)(json_int_t)d);
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	return mix(bits);
}

static uint64_t value_hash(const json_t *v, int depth)
{
	if (depth > TGI_SCHEMA_MAX_DEPTH)
		return 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return bytes_hash(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
	case JSON_REAL:
		return number_hash(v);
	case JSON_ARRAY: {
		uint64_t h = 0x9e3779b97f4a7c15ULL;
		for (size_t i = 0; i < json_array_size(v); i++)
			h = mix(h ^ value_hash(json_array_get(v, i), depth + 1));
		return h;
	}
	case JSON_OBJECT: { /* a sum: member order must not matter */
		uint64_t h = 0x51ed270b27a3c3d5ULL;
		for (void *it = json_object_iter((json_t *)v); it;
		     it = json_object_iter_next((json_t *)v, it))
			h += mix(bytes_hash(json_object_iter_key(it), json_object_iter_key_len(it)) ^
			         value_hash(json_object_iter_value(it), depth + 1));
		return h;
	}
	case JSON_TRUE:
		return 1;
	case JSON_FALSE:
		return 2;
	default:
		return 3;
	}
}

uint64_t tgi_schema_value_hash(const json_t *v)
{
	return value_hash(v, 0);
}
