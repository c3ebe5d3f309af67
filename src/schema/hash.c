/*
 * hash.c — a hash of JSON values consistent with JSON Schema's equality,
 * for uniqueItems.
 *
 * Equality itself is tgi_jv_equal() (util/jv.h): numbers compare by value
 * whatever their JSON form (1 == 1.0, an int64 against a double exactly),
 * objects as unordered maps.  The hash agrees with it, so uniqueItems can
 * sort items by hash instead of comparing every pair.
 *
 * Owns: nothing.  Must not: allocate, or recurse deeper than
 * TGI_SCHEMA_MAX_DEPTH (deeper values all hash alike, which is still
 * consistent).
 */
#include <string.h>

#include "schema/node.h"

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

static uint64_t real_hash(double d)
{
	/* an integral double hashes as the integer it equals (and -0.0 as 0) */
	if (tgi_is_integral(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
		return mix((uint64_t)(int64_t)d);
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	return mix(bits);
}

static uint64_t value_hash(const tgi_jv *v, int depth)
{
	if (depth > TGI_SCHEMA_MAX_DEPTH)
		return 0;
	switch (v->type) {
	case TGI_JV_STRING:
		return bytes_hash(v->u.s, v->n);
	case TGI_JV_INT:
		return mix((uint64_t)v->u.i);
	case TGI_JV_REAL:
		return real_hash(v->u.d);
	case TGI_JV_ARRAY: {
		uint64_t h = 0x9e3779b97f4a7c15ULL;
		for (uint32_t i = 0; i < v->n; i++)
			h = mix(h ^ value_hash(&v->u.items[i], depth + 1));
		return h;
	}
	case TGI_JV_OBJECT: { /* a sum: member order must not matter */
		uint64_t h = 0x51ed270b27a3c3d5ULL;
		for (uint32_t i = 0; i < v->n; i++) {
			const tgi_jv_member *m = &v->u.members[i];
			h += mix(bytes_hash(m->key, m->klen) ^ value_hash(&m->value, depth + 1));
		}
		return h;
	}
	case TGI_JV_TRUE:
		return 1;
	case TGI_JV_FALSE:
		return 2;
	default:
		return 3;
	}
}

uint64_t tgi_schema_value_hash(const tgi_jv *v)
{
	return value_hash(v, 0);
}
