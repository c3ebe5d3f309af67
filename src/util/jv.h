/*
 * jv.h — a fast JSON parser into a compact, read-only DOM held in an arena.
 *
 * The validator's hot path parses tool arguments here instead of into
 * jansson: one pass, no malloc per value, no hash tables.  A document
 * (tgi_jv_doc) is an arena that owns every node and string made in it;
 * tgi_jv_doc_reset() empties it and keeps its memory, so a loop that parses
 * one call after another does no malloc at all once warm.
 *
 * Ownership, one rule for the whole API: every tgi_jv, member array, item
 * array and string belongs to the doc it was made in and stays valid until
 * that doc is reset or freed.  Nothing here is freed on its own, and
 * nothing returned is owned by the caller except tgi_jv_to_json()'s new
 * jansson reference.  A doc is used by one thread at a time; different docs
 * are independent.
 *
 * What is accepted (RFC 8259, strictly):
 *   - any value at the root, with RFC 8259 whitespace (space, tab, LF, CR)
 *     around it and nothing after it;
 *   - strings: valid UTF-8 (no overlongs, no encoded surrogates, nothing
 *     above U+10FFFF), no raw control characters, the eight escapes and
 *     \uXXXX; a surrogate pair becomes one code point and a lone surrogate
 *     is refused.  Decoded strings may hold NUL (\u0000): n is
 *     authoritative, and a NUL terminator follows the n bytes;
 *   - object keys: as strings, except that a key holding NUL is refused
 *     (as the gate's jansson decoder does); duplicate keys (compared after
 *     unescaping) are refused: ambiguous input is never guessed at.  The
 *     error names the second occurrence; in an object of more than 16
 *     members it is raised when the object closes, so a syntax error later
 *     inside that object is reported first;
 *   - numbers: an integer (no fraction, no exponent) that fits int64 is
 *     TGI_JV_INT; any other number is TGI_JV_REAL, converted exactly as
 *     strtod would (correctly rounded).  "1.0" is REAL 1.0; "-0" is INT 0;
 *     "-0.0" is REAL -0.0; a number too large for a double ("1e400") is
 *     refused; one too small becomes 0 or a subnormal.  Leading zeros,
 *     "+1", ".5", "1.", NaN and Infinity are refused;
 *   - nesting at most TGI_JV_MAX_DEPTH arrays/objects deep.
 * Against jansson (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
 * JSON_ALLOW_NUL) the only differences are: integers outside int64 are
 * REAL here and refused by jansson; nesting deeper than TGI_JV_MAX_DEPTH
 * (jansson allows 2048) and documents over the doc's cap are refused here;
 * jansson drops a NUL byte right after a number or true/false/null
 * ("[1\0]" reads as [1]), which is an error here.
 *
 * Errors are one sentence, "at byte N: ..." where N is the 0-based offset
 * of the offending byte in the input, e.g.
 *   at byte 9: trailing comma before '}'
 *   at byte 4: lone high surrogate "\ud800" (a low surrogate must follow)
 *
 * Owns: the arena, its blocks and its scratch stack.  Must not: keep global
 * state, read files, or accept anything jansson's strict mode would refuse
 * beyond the differences listed above.
 */
#ifndef TGI_JV_H
#define TGI_JV_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define TGI_JV_MAX_DEPTH         128          /* arrays/objects inside each other */
#define TGI_JV_DEFAULT_MAX_BYTES (8u << 20)   /* the cap tgi_jv_doc_new(0) picks */

typedef enum {
	TGI_JV_NULL, TGI_JV_FALSE, TGI_JV_TRUE, TGI_JV_INT, TGI_JV_REAL,
	TGI_JV_STRING, TGI_JV_ARRAY, TGI_JV_OBJECT
} tgi_jv_type;

typedef struct tgi_jv tgi_jv;
typedef struct tgi_jv_member tgi_jv_member;
typedef struct tgi_jv_doc tgi_jv_doc;

/* One value: 16 bytes.  Read the fields directly; do not build or change
 * values by hand: only tgi_jv_parse() and tgi_jv_from_json() make them (an
 * object of more than 16 members keeps a lookup index after its members
 * that tgi_jv_get() relies on). */
struct tgi_jv {
	uint32_t type;  /* tgi_jv_type */
	uint32_t n;     /* STRING: bytes (without the NUL); ARRAY: items; OBJECT: members */
	union {
		int64_t        i;        /* INT */
		double         d;        /* REAL (always finite) */
		const char    *s;        /* STRING: n bytes of UTF-8, then a NUL */
		tgi_jv        *items;    /* ARRAY: n values, contiguous */
		tgi_jv_member *members;  /* OBJECT: n members in document order */
	} u;
};

/* An object member: the key (klen bytes of UTF-8 without NUL, then a NUL
 * terminator) and its value.  Keys of one object are distinct. */
struct tgi_jv_member {
	const char *key;
	uint32_t    klen;
	uint32_t    pad;   /* reserved, 0 */
	tgi_jv      value;
};

/*
 * A new, empty document whose arena may hold at most max_bytes (nodes and
 * strings; 0 picks TGI_JV_DEFAULT_MAX_BYTES).  The scratch stack used while
 * building arrays and objects has the same cap.  Aborts on out of memory,
 * like tgi_xmalloc.  Free with tgi_jv_doc_free().
 */
tgi_jv_doc *tgi_jv_doc_new(size_t max_bytes);

/* Forget every value made in d (all pointers into it become invalid) but
 * keep its memory: blocks from a parse that outgrew the first one are
 * merged into one block here, so the next parse of a similar document
 * allocates nothing. */
void tgi_jv_doc_reset(tgi_jv_doc *d);

/* Free d and everything made in it.  NULL is a no-op. */
void tgi_jv_doc_free(tgi_jv_doc *d);

/*
 * Parse len bytes of JSON text (borrowed; need not be NUL-terminated) into
 * d.  Returns the root, owned by d, or NULL with "at byte N: sentence" in
 * err (errlen bytes, always terminated; err may be NULL).  Input longer
 * than the cap, or needing more arena than the cap, is refused.  Values
 * already in d stay valid: several documents may share one arena.  After
 * a failure d holds some unreachable bytes until the next reset.
 */
const tgi_jv *tgi_jv_parse(tgi_jv_doc *d, const char *text, size_t len, char *err,
                           size_t errlen);

/*
 * The value of member key (klen bytes) in obj, or NULL if obj is NULL, not
 * an object, or has no such member.  Borrowed from obj's doc.  Objects of
 * more than 16 members carry a sorted index and are searched in O(log n);
 * smaller ones are scanned.
 */
const tgi_jv *tgi_jv_get(const tgi_jv *obj, const char *key, size_t klen);

/*
 * JSON equality: 1 if a and b are the same JSON value, else 0.  Numbers
 * compare by value across INT and REAL (1 == 1.0, 0 == -0.0; exact, no
 * rounding through double); objects compare members regardless of order;
 * strings compare bytes.  NULL equals only NULL.
 */
int tgi_jv_equal(const tgi_jv *a, const tgi_jv *b);

/* "null", "boolean", "integer", "number", "string", "array" or "object"
 * (JSON Schema's names; a REAL is "number").  Static storage. */
const char *tgi_jv_type_name(const tgi_jv *v);

/*
 * Copy a jansson value (borrowed, not kept) into d.  Walks jansson's
 * ordered member lists, never its hash tables.  Returns the copy, owned by
 * d, or NULL when the value nests deeper than TGI_JV_MAX_DEPTH, has a key
 * holding NUL, or does not fit in d's cap (d then holds unreachable bytes
 * until the next reset, as after a failed parse).
 */
const tgi_jv *tgi_jv_from_json(tgi_jv_doc *d, const json_t *j);

/* A new jansson value equal to v (INT → integer, REAL → real, members in
 * order); the caller owns the reference.  NULL on out of memory. */
json_t *tgi_jv_to_json(const tgi_jv *v);

#endif
