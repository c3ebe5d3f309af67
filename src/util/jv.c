/*
 * jv.c — the JSON parser, arena and DOM helpers declared in jv.h.
 *
 * Shape: recursive descent over the input with the depth capped.  Each
 * array or object gathers its values on the doc's scratch stack and, when
 * it closes, copies them into the arena in one piece, so items and members
 * are contiguous.  Parse functions return the 16-byte value itself (in
 * registers), never through memory the caller then reloads.
 *
 * Strings: plain ASCII without escapes (most keys and values) is copied 16
 * bytes at a time straight into the arena while the closing quote is
 * looked for (SSE2 where the compiler targets it).  Anything else is
 * scanned once in full, refusing raw control characters, invalid UTF-8 and
 * bad escapes, then copied with memcpy or, with escapes, decoded into an
 * arena slice of its raw length whose unused tail is given back.  Numbers
 * take an exact fast path (at most 19 significant digits, a mantissa of at
 * most 2^53 and a power of ten of at most 22, one correctly rounded IEEE
 * operation) and otherwise go to strtod on a NUL-terminated copy.
 *
 * Objects of INDEX_MIN or more members carry a sorted index right after
 * their members (one 16-byte slot per member: key length, first 8 key
 * bytes as a number, position): duplicate keys are found with it when the
 * object closes, and tgi_jv_get() binary searches it.  Smaller objects are
 * checked key by key as they are read, and scanned.
 *
 * Arena invariant: every block's data starts and ends on an 8-byte
 * boundary, so rounding the cursor up to 8 never passes the end.
 *
 * Owns: the doc's blocks and scratch stack.  Must not: allocate per value,
 * keep global state, or read outside [text, text + len).
 */
#include "util/jv.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/util.h"

#define FIRST_BLOCK   (16u << 10) /* bytes; later blocks double the arena */
#define INDEX_MIN     17          /* objects this large get a sorted key index */
#define NUM_BUF       64          /* a number token this short is copied on the stack */

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

_Static_assert(sizeof(tgi_jv) == 16, "a value is 16 bytes");
_Static_assert(sizeof(tgi_jv_member) == 32, "a member is 32 bytes");

/* ---- the arena ---- */

typedef struct block {
	struct block *next;
	size_t        size; /* bytes of data after the header; a multiple of 8 */
} block;

_Static_assert(sizeof(block) % 8 == 0, "block data must start 8-aligned");
#define BLOCK_DATA(b) ((char *)(b) + sizeof(block))

struct tgi_jv_doc {
	char          *cur, *end;   /* the free part of the current (last) block */
	block         *first, *last;
	size_t         held;        /* data bytes in all blocks: at most max */
	size_t         max;         /* the cap, a multiple of 8 */
	unsigned char *stk;         /* scratch stack for open arrays and objects */
	size_t         stk_top, stk_cap; /* stk_cap <= max */
};

static block *block_new(size_t size)
{
	block *b = tgi_xmalloc(sizeof *b + size);
	b->next = NULL;
	b->size = size;
	return b;
}

static void use_block(tgi_jv_doc *d, block *b)
{
	d->cur = BLOCK_DATA(b);
	d->end = d->cur + b->size;
}

tgi_jv_doc *tgi_jv_doc_new(size_t max_bytes)
{
	tgi_jv_doc *d = tgi_xcalloc(1, sizeof *d);
	d->max = (max_bytes ? max_bytes : TGI_JV_DEFAULT_MAX_BYTES) & ~(size_t)7;
	d->held = d->max < FIRST_BLOCK ? d->max : FIRST_BLOCK;
	d->first = d->last = block_new(d->held);
	use_block(d, d->first);
	return d;
}

static void free_blocks(block *b)
{
	while (b) {
		block *next = b->next;
		free(b);
		b = next;
	}
}

void tgi_jv_doc_reset(tgi_jv_doc *d)
{
	if (d->first != d->last) { /* merge: the next parse fits in one block */
		free_blocks(d->first);
		d->first = d->last = block_new(d->held);
	}
	use_block(d, d->first);
	d->stk_top = 0;
}

void tgi_jv_doc_free(tgi_jv_doc *d)
{
	if (!d)
		return;
	free_blocks(d->first);
	free(d->stk);
	free(d);
}

/* Slow path of the allocators: a new block of at least n bytes, doubling
 * the arena when the cap allows.  NULL when n does not fit under the cap. */
static void *arena_grow(tgi_jv_doc *d, size_t n)
{
	size_t room = d->max - d->held;
	size_t want = d->held > n ? d->held : n;
	if (want < FIRST_BLOCK)
		want = FIRST_BLOCK;
	if (want > room)
		want = room;
	want = (want + 7) & ~(size_t)7;
	if (want < n || want > room)
		return NULL;
	block *b = block_new(want);
	d->last->next = b;
	d->last = b;
	d->held += want;
	use_block(d, b);
	d->cur += n;
	return BLOCK_DATA(b);
}

/* n bytes aligned to 8, or NULL when the cap is reached. */
static inline void *arena_alloc(tgi_jv_doc *d, size_t n)
{
	char *p = d->cur + (-(uintptr_t)d->cur & 7);
	if ((size_t)(d->end - p) >= n) {
		d->cur = p + n;
		return p;
	}
	return arena_grow(d, n);
}

/* n bytes, unaligned (string bytes), or NULL when the cap is reached. */
static inline char *arena_bytes(tgi_jv_doc *d, size_t n)
{
	if ((size_t)(d->end - d->cur) >= n) {
		char *p = d->cur;
		d->cur += n;
		return p;
	}
	return arena_grow(d, n);
}

/* Room for n more bytes on the scratch stack; -1 past the cap. */
static int stk_reserve(tgi_jv_doc *d, size_t n)
{
	if (d->stk_cap - d->stk_top >= n)
		return 0;
	if (n > d->max - d->stk_top)
		return -1;
	size_t cap = d->stk_cap ? d->stk_cap * 2 : 1024;
	if (cap < d->stk_top + n)
		cap = d->stk_top + n;
	if (cap > d->max)
		cap = d->max;
	d->stk = tgi_xrealloc(d->stk, cap);
	d->stk_cap = cap;
	return 0;
}

static inline void *stk_push(tgi_jv_doc *d, size_t n)
{
	if (d->stk_cap - d->stk_top < n && stk_reserve(d, n) < 0)
		return NULL;
	void *p = d->stk + d->stk_top;
	d->stk_top += n;
	return p;
}

/* Copy n bytes (a multiple of 16) of values or members: short runs, the
 * common case, without a call. */
static inline void move_values(void *dst, const void *src, size_t n)
{
#if defined(__SSE2__)
	if (n <= 256) {
		for (size_t k = 0; k < n; k += 16)
			_mm_storeu_si128((__m128i *)(void *)((char *)dst + k),
			                 _mm_loadu_si128((const __m128i *)(const void *)((const char *)src + k)));
		return;
	}
#endif
	memcpy(dst, src, n);
}

/* ---- keys and the object index ---- */

static inline int same_key(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || (a[0] == b[0] && memcmp(a, b, alen) == 0));
}

/*
 * The index of a large object: one slot per member, sorted by key length,
 * then the key's first 8 bytes as a big-endian number (zero-padded), then
 * the rest of the key, then position (so equal keys sit together in
 * document order).  Nearly every comparison is two integer compares.
 */
typedef struct index_slot {
	uint64_t pre;   /* the first 8 key bytes, big-endian */
	uint32_t klen;
	uint32_t i;     /* the member's position */
} index_slot;

static inline uint64_t key_prefix(const char *key, size_t klen)
{
	uint64_t pre = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (klen >= 8) {
		memcpy(&pre, key, 8);
		return __builtin_bswap64(pre);
	}
#endif
	for (size_t k = 0; k < 8; k++)
		pre = pre << 8 | (k < klen ? (unsigned char)key[k] : 0);
	return pre;
}

/* <0, 0, >0 as the key of slot a sorts before, with or after key. */
static inline int slot_cmp(const index_slot *a, const tgi_jv_member *m, uint64_t pre,
                           const char *key, size_t klen)
{
	if (a->klen != klen)
		return a->klen < klen ? -1 : 1;
	if (a->pre != pre)
		return a->pre < pre ? -1 : 1;
	return klen > 8 ? memcmp(m[a->i].key + 8, key + 8, klen - 8) : 0;
}

static inline int slot_less(const index_slot *a, const index_slot *b, const tgi_jv_member *m)
{
	int c = slot_cmp(a, m, b->pre, m[b->i].key, b->klen);
	return c < 0 || (c == 0 && a->i < b->i);
}

/* Stable merge sort of a[0..n) (insertion-sorted runs of 8, then merged
 * through tmp): O(n log n) whatever the keys. */
static void sort_slots(index_slot *a, index_slot *tmp, size_t n, const tgi_jv_member *m)
{
	index_slot *src = a, *dst = tmp;
	for (size_t lo = 0; lo < n; lo += 8) {
		size_t hi = lo + 8 < n ? lo + 8 : n;
		for (size_t k = lo + 1; k < hi; k++) {
			index_slot x = a[k];
			size_t j = k;
			for (; j > lo && slot_less(&x, &a[j - 1], m); j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
	}
	for (size_t w = 8; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t x = lo, y = mid, o = lo;
			while (x < mid && y < hi)
				dst[o++] = slot_less(&src[y], &src[x], m) ? src[y++] : src[x++];
			while (x < mid)
				dst[o++] = src[x++];
			while (y < hi)
				dst[o++] = src[y++];
		}
		index_slot *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
}

/* Bytes for an object of n members, with its index when it gets one. */
static size_t object_bytes(size_t n)
{
	return n * sizeof(tgi_jv_member) + (n >= INDEX_MIN ? n * sizeof(index_slot) : 0);
}

static inline const index_slot *object_index(const tgi_jv_member *m, uint32_t n)
{
	return (const index_slot *)(const void *)(m + n);
}

/*
 * Build the index after m[0..n), using the scratch stack above its top as
 * the sort's buffer.  Returns -1 if that does not fit under the cap, else
 * 0 with *dup the position of the first member, in document order, whose
 * key repeats an earlier one (UINT32_MAX if none).
 */
static int index_object(tgi_jv_doc *d, tgi_jv_member *m, uint32_t n, uint32_t *dup)
{
	index_slot *idx = (index_slot *)(void *)(m + n);
	if (stk_reserve(d, n * sizeof(index_slot)) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		idx[i].pre = key_prefix(m[i].key, m[i].klen);
		idx[i].klen = m[i].klen;
		idx[i].i = i;
	}
	sort_slots(idx, (index_slot *)(void *)(d->stk + d->stk_top), n, m);
	*dup = UINT32_MAX;
	for (uint32_t k = 1; k < n; k++)
		if (idx[k].i < *dup &&
		    slot_cmp(&idx[k - 1], m, idx[k].pre, m[idx[k].i].key, idx[k].klen) == 0)
			*dup = idx[k].i;
	return 0;
}

/* ---- the parser ---- */

/*
 * Parse functions return the value they read (16 bytes come back in two
 * registers, so building an array or object never reloads a value from
 * memory it was just written to) or, after fail() said why, `failed`.
 */
#define JV_FAILED UINT32_MAX
static const tgi_jv failed = { JV_FAILED, 0, { 0 } };

typedef struct parser {
	tgi_jv_doc          *d;
	const unsigned char *base; /* the input's first byte: offsets count from here */
	const unsigned char *p;    /* the next byte to read */
	const unsigned char *end;
	char                *err;
	size_t               errlen;
	int                  depth; /* arrays and objects open */
} parser;

static tgi_jv parse_value(parser *ps);

__attribute__((format(printf, 3, 0)))
static void vfail(parser *ps, const unsigned char *at, const char *fmt, va_list ap)
{
	if (!ps->err || !ps->errlen)
		return;
	int k = snprintf(ps->err, ps->errlen, "at byte %zu: ", (size_t)(at - ps->base));
	if (k >= 0 && (size_t)k < ps->errlen)
		vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
}

/* Say what is wrong at `at`; returns -1. */
__attribute__((format(printf, 3, 4)))
static int fail(parser *ps, const unsigned char *at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(ps, at, fmt, ap);
	va_end(ap);
	return -1;
}

/* Say what is wrong at `at`; returns `failed`. */
__attribute__((format(printf, 3, 4)))
static tgi_jv fail_value(parser *ps, const unsigned char *at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(ps, at, fmt, ap);
	va_end(ap);
	return failed;
}

static tgi_jv too_big(parser *ps, const unsigned char *at)
{
	return fail_value(ps, at, "the document does not fit in the cap of %zu bytes", ps->d->max);
}

/* How the byte at `at` reads in a message. */
static const char *found(const parser *ps, const unsigned char *at, char buf[16])
{
	if (at >= ps->end)
		return "the end of the input";
	if (*at == '\'')
		return "a single quote";
	if (*at >= 0x20 && *at < 0x7f)
		snprintf(buf, 16, "'%c'", *at);
	else
		snprintf(buf, 16, "byte 0x%02x", *at);
	return buf;
}

static inline void skip_ws(parser *ps)
{
	const unsigned char *p = ps->p, *end = ps->end;
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	ps->p = p;
}

/* Skip whitespace; the next byte, or -1 at the end of the input. */
static inline int next_byte(parser *ps)
{
	if (ps->p < ps->end && *ps->p > ' ')
		return *ps->p;
	skip_ws(ps);
	return ps->p < ps->end ? *ps->p : -1;
}

static inline int starts(const parser *ps, const unsigned char *at, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(ps->end - at) >= n && memcmp(at, word, n) == 0;
}

/* ---- strings ---- */

/* Length of the valid UTF-8 sequence (2 to 4 bytes) at s, or 0.  RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t n;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if ((s[k] & 0xC0) != 0x80)
			return 0;
	return n;
}

static size_t utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The four hex digits at s (if all inside end) as a number, or -1. */
static long hex4(const unsigned char *s, const unsigned char *end)
{
	long v = 0;
	if (end - s < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		unsigned char c = s[k];
		int h = c >= '0' && c <= '9' ? c - '0'
		      : c >= 'a' && c <= 'f' ? c - 'a' + 10
		      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* A byte that a string holds as itself: printable ASCII but '"' and '\'. */
static inline int plain_byte(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

#if defined(__SSE2__)
static inline unsigned quote_bits(__m128i v)
{
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
}

/* One bit per byte of v that is not plain. */
static inline unsigned special_bits(__m128i v)
{
	/* the signed compare hits both bytes below 0x20 and 0x80..0xff */
	__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
	                                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
	                           _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
	return (unsigned)_mm_movemask_epi8(hit);
}
#endif

/* The first byte in [s, end) that is not plain, or end. */
static inline const unsigned char *find_special(const unsigned char *s, const unsigned char *end)
{
#if defined(__SSE2__)
	for (; end - s >= 16; s += 16) {
		unsigned bits = special_bits(_mm_loadu_si128((const __m128i *)(const void *)s));
		if (bits)
			return s + __builtin_ctz(bits);
	}
#endif
	while (s < end && plain_byte(*s))
		s++;
	return s;
}

/* Check the escape at *sp (a backslash) and step over it. */
static int check_escape(parser *ps, const unsigned char **sp)
{
	const unsigned char *s = *sp, *end = ps->end;
	char buf[16];
	if (end - s < 2)
		return fail(ps, ps->p, "unterminated string");
	switch (s[1]) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
		*sp = s + 2;
		return 0;
	case 'u':
		break;
	default:
		return fail(ps, s, "invalid escape: a backslash followed by %s",
		            found(ps, s + 1, buf));
	}
	long cp = hex4(s + 2, end);
	if (cp < 0)
		return fail(ps, s, "invalid escape: \"\\u\" takes four hex digits");
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return fail(ps, s, "lone low surrogate \"\\u%04lx\" (no high surrogate before it)", cp);
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		long lo = end - s >= 12 && s[6] == '\\' && s[7] == 'u' ? hex4(s + 8, end) : -1;
		if (lo < 0xDC00 || lo > 0xDFFF)
			return fail(ps, s, "lone high surrogate \"\\u%04lx\" (a low surrogate must follow)",
			            cp);
		*sp = s + 12;
		return 0;
	}
	*sp = s + 6;
	return 0;
}

/* Scan the string whose opening quote is at ps->p: on success *close is
 * its closing quote and *escaped says whether it has any escape. */
static int scan_string(parser *ps, const unsigned char **close, int *escaped)
{
	const unsigned char *s = ps->p + 1, *end = ps->end;
	*escaped = 0;
	for (;;) {
		s = find_special(s, end);
		if (s == end)
			return fail(ps, ps->p, "unterminated string");
		unsigned char c = *s;
		if (c == '"') {
			*close = s;
			return 0;
		}
		if (c == '\\') {
			*escaped = 1;
			if (check_escape(ps, &s) < 0)
				return -1;
		} else if (c < 0x20) {
			return fail(ps, s, "control character 0x%02x in a string must be escaped", c);
		} else {
			size_t n = utf8_seq(s, (size_t)(end - s));
			if (!n)
				return fail(ps, s, "invalid UTF-8 in a string");
			s += n;
		}
	}
}

/* Decode the checked string body [s, close) into out; returns its length
 * and writes the NUL after it. */
static size_t unescape(char *out, const unsigned char *s, const unsigned char *close)
{
	char *o = out;
	for (;;) {
		const unsigned char *bs = memchr(s, '\\', (size_t)(close - s));
		size_t run = (size_t)((bs ? bs : close) - s);
		memcpy(o, s, run);
		o += run;
		if (!bs)
			break;
		s = bs + 2;
		switch (bs[1]) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			uint32_t cp = (uint32_t)hex4(bs + 2, close);
			s = bs + 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)hex4(bs + 8, close) - 0xDC00);
				s = bs + 12;
			}
			o += utf8_put(o, cp);
			break;
		}
		default: *o++ = (char)bs[1]; break; /* '"', '\\', '/' */
		}
	}
	*o = '\0';
	return (size_t)(o - out);
}

static inline tgi_jv string_value(const char *s, size_t n)
{
	tgi_jv v;
	v.type = TGI_JV_STRING;
	v.n = (uint32_t)n;
	v.u.s = s;
	return v;
}

/* The string at ps->p, checked in full, then copied or decoded into the
 * arena. */
NOINLINE static tgi_jv string_slow(parser *ps, int is_key)
{
	const unsigned char *open = ps->p, *close = NULL;
	tgi_jv_doc *d = ps->d;
	int escaped;
	if (scan_string(ps, &close, &escaped) < 0)
		return failed;
	size_t raw = (size_t)(close - open - 1), len = raw;
	char *dst = arena_bytes(d, raw + 1);
	if (!dst)
		return too_big(ps, open);
	if (!escaped) {
		memcpy(dst, open + 1, raw);
		dst[raw] = '\0';
	} else {
		len = unescape(dst, open + 1, close);
		d->cur = dst + len + 1; /* dst is the newest allocation: give back the tail */
		if (is_key && memchr(dst, '\0', len))
			return fail_value(ps, open, "keys may not hold \"\\u0000\" (NUL)");
	}
	ps->p = close + 1;
	return string_value(dst, len);
}

/*
 * The string at ps->p, copied into the arena.  The fast path moves 16
 * bytes at a time straight into the arena's free space while it looks for
 * the closing quote, and hands over to string_slow() at the first escape,
 * control character or non-ASCII byte, or when fewer than 16 bytes are
 * left in the input or the block.  The extra bytes it reads are input; the
 * extra bytes it writes are free arena.
 */
static inline tgi_jv parse_string(parser *ps, int is_key)
{
#if defined(__SSE2__)
	const unsigned char *s = ps->p + 1;
	tgi_jv_doc *d = ps->d;
	char *dst = d->cur;
	size_t in = (size_t)(ps->end - s), room = (size_t)(d->end - dst);
	size_t lim = in < room ? in : room;
	for (size_t k = 0; k + 16 <= lim; k += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + k));
		unsigned bits = special_bits(v);
		_mm_storeu_si128((__m128i *)(void *)(dst + k), v);
		if (bits) {
			if (!(bits & -bits & quote_bits(v))) /* the first special byte is no quote */
				break;
			size_t n = k + (size_t)__builtin_ctz(bits);
			dst[n] = '\0';
			d->cur = dst + n + 1;
			ps->p = s + n + 1;
			return string_value(dst, n);
		}
	}
#endif
	return string_slow(ps, is_key);
}

/* ---- numbers ---- */

#if FLT_EVAL_METHOD == 0 /* one double operation rounds once: the fast path is exact */
#define EXACT_FAST_PATH 1
static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};
#endif

static inline int is_digit(const unsigned char *s, const unsigned char *end)
{
	return s < end && *s >= '0' && *s <= '9';
}

/* strtod on a NUL-terminated copy of the checked token [start, stop), with
 * '.' written as the locale's decimal point. */
NOINLINE static int number_slow(parser *ps, const unsigned char *start,
                                const unsigned char *stop, double *out)
{
	const char *dp = localeconv()->decimal_point;
	if (!dp || !*dp)
		dp = ".";
	size_t dplen = strlen(dp), need = (size_t)(stop - start) + dplen + 1;
	char small[NUM_BUF], *buf = small, *o, *endp;
	if (need > sizeof small) {
		if (stk_reserve(ps->d, need) < 0) {
			too_big(ps, start);
			return -1;
		}
		buf = (char *)ps->d->stk + ps->d->stk_top; /* scratch above the stack top */
	}
	o = buf;
	for (const unsigned char *s = start; s < stop; s++) {
		if (*s == '.') {
			memcpy(o, dp, dplen);
			o += dplen;
		} else {
			*o++ = (char)*s;
		}
	}
	*o = '\0';
	errno = 0;
	double v = strtod(buf, &endp);
	if (endp != o)
		return fail(ps, start, "the number cannot be read in this locale");
	if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL))
		return fail(ps, start, "the number is too large for a double");
	*out = v;
	return 0;
}

static tgi_jv parse_number(parser *ps)
{
	const unsigned char *start = ps->p, *s = start, *end = ps->end;
	char buf[16];
	uint64_t m = 0;     /* the first 19 significant digits */
	int nsig = 0;       /* significant digits in m */
	int inexact = 0;    /* more significant digits than m holds */
	long e10 = 0;       /* value = m * 10^e10 when !inexact */
	int integral = 1, neg = 0;
	tgi_jv v;

	v.n = 0;
	v.u.i = 0;
	if (*s == '-') {
		neg = 1;
		s++;
		if (starts(ps, s, "Infinity"))
			return fail_value(ps, start, "NaN and Infinity are not JSON numbers");
		if (!is_digit(s, end))
			return fail_value(ps, s, "expected a digit after '-', found %s", found(ps, s, buf));
	}
	if (*s == '0') {
		s++;
		if (is_digit(s, end))
			return fail_value(ps, s - 1, "numbers may not have leading zeros");
	} else {
		for (; is_digit(s, end); s++) {
			if (nsig < 19) {
				m = m * 10 + (uint64_t)(*s - '0');
				nsig++;
			} else {
				inexact = 1;
			}
		}
	}
	if (s < end && *s == '.') {
		integral = 0;
		s++;
		if (!is_digit(s, end))
			return fail_value(ps, s, "expected a digit after the decimal point, found %s",
			                  found(ps, s, buf));
		for (; is_digit(s, end); s++) {
			if (nsig < 19) {
				m = m * 10 + (uint64_t)(*s - '0');
				nsig += m != 0; /* zeros before the first nonzero digit do not count */
				e10--;
			} else {
				inexact = 1;
			}
		}
	}
	if (s < end && (*s == 'e' || *s == 'E')) {
		long x = 0;
		int xneg = 0;
		integral = 0;
		s++;
		if (s < end && (*s == '+' || *s == '-'))
			xneg = *s++ == '-';
		if (!is_digit(s, end))
			return fail_value(ps, s, "expected a digit in the exponent, found %s",
			                  found(ps, s, buf));
		for (; is_digit(s, end); s++)
			if (x < 100000000)
				x = x * 10 + (*s - '0');
		e10 += xneg ? -x : x;
	}
	ps->p = s;

	if (integral && !inexact) {
		if (!neg && m <= (uint64_t)INT64_MAX) {
			v.type = TGI_JV_INT;
			v.u.i = (int64_t)m;
			return v;
		}
		if (neg && m <= (uint64_t)INT64_MAX + 1) {
			v.type = TGI_JV_INT;
			v.u.i = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
			return v;
		}
	}
	v.type = TGI_JV_REAL;
#if defined(EXACT_FAST_PATH)
	if (!inexact && (m == 0 || (m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22))) {
		double x = (double)m;
		if (m != 0)
			x = e10 < 0 ? x / pow10_exact[-e10] : x * pow10_exact[e10];
		v.u.d = neg ? -x : x;
		return v;
	}
#endif
	return number_slow(ps, start, s, &v.u.d) < 0 ? failed : v;
}

/* ---- values ---- */

static inline tgi_jv literal(parser *ps, const char *word, size_t n, uint32_t type)
{
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail_value(ps, ps->p, "invalid literal (expected \"%s\")", word);
	ps->p += n;
	tgi_jv v;
	v.type = type;
	v.n = 0;
	v.u.i = 0;
	return v;
}

/* A byte that cannot start a value: say why as precisely as we can. */
NOINLINE static tgi_jv bad_value(parser *ps)
{
	const unsigned char *at = ps->p;
	char buf[16];
	if (starts(ps, at, "NaN") || starts(ps, at, "Infinity"))
		return fail_value(ps, at, "NaN and Infinity are not JSON numbers");
	if (*at == '\'')
		return fail_value(ps, at, "strings take double quotes, not single quotes");
	if (*at == '+' || *at == '.')
		return fail_value(ps, at, "a number starts with a digit or '-', not '%c'", *at);
	return fail_value(ps, at, "expected a value, found %s", found(ps, at, buf));
}

NOINLINE static tgi_jv parse_array(parser *ps)
{
	tgi_jv_doc *d = ps->d;
	size_t base = d->stk_top;
	char buf[16];

	if (++ps->depth > TGI_JV_MAX_DEPTH)
		return fail_value(ps, ps->p, "nesting deeper than %d", TGI_JV_MAX_DEPTH);
	ps->p++;
	int c = next_byte(ps);
	if (c == ']') {
		ps->p++;
	} else {
		for (;;) {
			tgi_jv v = parse_value(ps), *slot;
			if (v.type == JV_FAILED)
				return failed;
			if (!(slot = stk_push(d, sizeof v)))
				return too_big(ps, ps->p);
			*slot = v;
			c = next_byte(ps);
			if (c == ']') {
				ps->p++;
				break;
			}
			if (c != ',')
				return fail_value(ps, ps->p, "expected ',' or ']' after an array item, found %s",
				                  found(ps, ps->p, buf));
			ps->p++;
			if (next_byte(ps) == ']')
				return fail_value(ps, ps->p, "trailing comma before ']'");
		}
	}
	tgi_jv a;
	a.type = TGI_JV_ARRAY;
	a.n = (uint32_t)((d->stk_top - base) / sizeof(tgi_jv));
	a.u.items = NULL;
	if (a.n) {
		if (!(a.u.items = arena_alloc(d, a.n * sizeof(tgi_jv))))
			return too_big(ps, ps->p);
		move_values(a.u.items, d->stk + base, a.n * sizeof(tgi_jv));
	}
	d->stk_top = base;
	ps->depth--;
	return a;
}

static tgi_jv duplicate(parser *ps, const unsigned char *at, const char *key)
{
	char shown[64];
	tgi_sanitize(shown, sizeof shown, key);
	return fail_value(ps, at, "duplicate key \"%s\"", shown);
}

NOINLINE static tgi_jv parse_object(parser *ps)
{
	tgi_jv_doc *d = ps->d;
	size_t base = d->stk_top;
	uint64_t seen = 0;
	char buf[16];

	if (++ps->depth > TGI_JV_MAX_DEPTH)
		return fail_value(ps, ps->p, "nesting deeper than %d", TGI_JV_MAX_DEPTH);
	ps->p++;
	int c = next_byte(ps);
	if (c == '}') {
		ps->p++;
	} else {
		for (;;) {
			const unsigned char *kat = ps->p;
			if (c != '"') {
				if (c == '\'')
					return fail_value(ps, kat, "strings take double quotes, not single quotes");
				return fail_value(ps, kat, "expected a string key, found %s",
				                  found(ps, kat, buf));
			}
			tgi_jv k = parse_string(ps, 1);
			if (k.type == JV_FAILED)
				return failed;
			/* the first 16 keys are checked as they come, the rest when the
			 * object closes; `seen` (a bit per key length and first byte)
			 * skips the comparisons for a key like none before it */
			uint64_t bit = UINT64_C(1) << ((k.n + 3u * (unsigned char)k.u.s[0]) & 63);
			size_t have = (d->stk_top - base) / sizeof(tgi_jv_member);
			if ((seen & bit) && have < INDEX_MIN - 1) {
				const tgi_jv_member *prev = (const tgi_jv_member *)(void *)(d->stk + base);
				for (size_t i = 0; i < have; i++)
					if (same_key(prev[i].key, prev[i].klen, k.u.s, k.n))
						return duplicate(ps, kat, k.u.s);
			}
			seen |= bit;
			if (next_byte(ps) != ':')
				return fail_value(ps, ps->p, "expected ':' after the key, found %s",
				                  found(ps, ps->p, buf));
			ps->p++;
			tgi_jv v = next_byte(ps) == '"' ? parse_string(ps, 0) : parse_value(ps);
			if (v.type == JV_FAILED)
				return failed;
			tgi_jv_member *slot = stk_push(d, sizeof *slot);
			if (!slot)
				return too_big(ps, ps->p);
			slot->key = k.u.s;
			slot->klen = k.n;
			slot->pad = (uint32_t)(kat - ps->base); /* where the key was, until the close */
			slot->value = v;
			c = next_byte(ps);
			if (c == '}') {
				ps->p++;
				break;
			}
			if (c != ',')
				return fail_value(ps, ps->p,
				                  "expected ',' or '}' after an object member, found %s",
				                  found(ps, ps->p, buf));
			ps->p++;
			c = next_byte(ps);
			if (c == '}')
				return fail_value(ps, ps->p, "trailing comma before '}'");
		}
	}
	tgi_jv o;
	o.type = TGI_JV_OBJECT;
	o.n = (uint32_t)((d->stk_top - base) / sizeof(tgi_jv_member));
	o.u.members = NULL;
	if (o.n) {
		tgi_jv_member *m = arena_alloc(d, object_bytes(o.n));
		if (!(o.u.members = m))
			return too_big(ps, ps->p);
		move_values(m, d->stk + base, o.n * sizeof *m);
		d->stk_top = base; /* popped: the index sorts above it */
		if (o.n >= INDEX_MIN) {
			uint32_t dup;
			if (index_object(d, m, o.n, &dup) < 0)
				return too_big(ps, ps->p);
			if (dup != UINT32_MAX)
				return duplicate(ps, ps->base + m[dup].pad, m[dup].key);
		}
		for (uint32_t i = 0; i < o.n; i++)
			m[i].pad = 0;
	}
	ps->depth--;
	return o;
}

static tgi_jv parse_value(parser *ps)
{
	char buf[16];
	switch (next_byte(ps)) {
	case -1:
		return fail_value(ps, ps->p, "expected a value, found %s", found(ps, ps->p, buf));
	case '"':
		return parse_string(ps, 0);
	case '{':
		return parse_object(ps);
	case '[':
		return parse_array(ps);
	case 't':
		return literal(ps, "true", 4, TGI_JV_TRUE);
	case 'f':
		return literal(ps, "false", 5, TGI_JV_FALSE);
	case 'n':
		return literal(ps, "null", 4, TGI_JV_NULL);
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return parse_number(ps);
	default:
		return bad_value(ps);
	}
}

const tgi_jv *tgi_jv_parse(tgi_jv_doc *d, const char *text, size_t len, char *err,
                           size_t errlen)
{
	parser ps;
	char buf[16];
	ps.d = d;
	ps.base = ps.p = (const unsigned char *)(text ? text : "");
	ps.end = ps.p + (text ? len : 0);
	ps.err = err;
	ps.errlen = errlen;
	ps.depth = 0;
	if (err && errlen)
		err[0] = '\0';

	if (len > d->max || len > UINT32_MAX) {
		fail(&ps, ps.p, "the input is %zu bytes, over the cap of %zu", len, d->max);
		return NULL;
	}
	d->stk_top = 0;
	skip_ws(&ps);
	if (ps.p == ps.end) {
		fail(&ps, ps.p, "the input is empty%s", len ? " (only whitespace)" : "");
		return NULL;
	}
	tgi_jv v = parse_value(&ps), *root;
	if (v.type == JV_FAILED)
		return NULL;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		fail(&ps, ps.p, "unexpected %s after the value", found(&ps, ps.p, buf));
		return NULL;
	}
	if (!(root = arena_alloc(d, sizeof *root))) {
		too_big(&ps, ps.p);
		return NULL;
	}
	*root = v;
	return root;
}

/* ---- lookup, equality, names ---- */

const tgi_jv *tgi_jv_get(const tgi_jv *obj, const char *key, size_t klen)
{
	if (!obj || obj->type != TGI_JV_OBJECT)
		return NULL;
	const tgi_jv_member *m = obj->u.members;
	uint32_t n = obj->n;
	if (n < INDEX_MIN) {
		for (uint32_t i = 0; i < n; i++)
			if (same_key(m[i].key, m[i].klen, key, klen))
				return &m[i].value;
		return NULL;
	}
	const index_slot *idx = object_index(m, n);
	uint64_t pre = key_prefix(key, klen);
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = slot_cmp(&idx[mid], m, pre, key, klen);
		if (c == 0)
			return &m[idx[mid].i].value;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* An INT and a REAL are equal when the real is exactly that integer. */
static int int_eq_real(int64_t i, double d)
{
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return 0;
	int64_t t = (int64_t)d;
	return (double)t == d && t == i;
}

int tgi_jv_equal(const tgi_jv *a, const tgi_jv *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type) {
		if (a->type == TGI_JV_INT && b->type == TGI_JV_REAL)
			return int_eq_real(a->u.i, b->u.d);
		if (a->type == TGI_JV_REAL && b->type == TGI_JV_INT)
			return int_eq_real(b->u.i, a->u.d);
		return 0;
	}
	switch (a->type) {
	case TGI_JV_INT:
		return a->u.i == b->u.i;
	case TGI_JV_REAL:
		return a->u.d == b->u.d;
	case TGI_JV_STRING:
		return a->n == b->n && (a->n == 0 || memcmp(a->u.s, b->u.s, a->n) == 0);
	case TGI_JV_ARRAY:
		if (a->n != b->n)
			return 0;
		for (uint32_t i = 0; i < a->n; i++)
			if (!tgi_jv_equal(&a->u.items[i], &b->u.items[i]))
				return 0;
		return 1;
	case TGI_JV_OBJECT:
		if (a->n != b->n)
			return 0;
		for (uint32_t i = 0; i < a->n; i++) {
			const tgi_jv_member *ma = &a->u.members[i], *mb = &b->u.members[i];
			const tgi_jv *bv = same_key(ma->key, ma->klen, mb->key, mb->klen)
			                   ? &mb->value : tgi_jv_get(b, ma->key, ma->klen);
			if (!bv || !tgi_jv_equal(&ma->value, bv))
				return 0;
		}
		return 1;
	default: /* null, false, true */
		return 1;
	}
}

const char *tgi_jv_type_name(const tgi_jv *v)
{
	static const char *const names[] = {
		"null", "boolean", "boolean", "integer", "number", "string", "array", "object",
	};
	return v && v->type < TGI_ARRAY_LEN(names) ? names[v->type] : "unknown";
}

/* ---- jansson ---- */

static char *copy_bytes(tgi_jv_doc *d, const char *s, size_t n)
{
	char *p = arena_bytes(d, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static int from_json(tgi_jv_doc *d, const json_t *j, tgi_jv *out, int depth)
{
	out->n = 0;
	out->u.i = 0;
	switch (json_typeof(j)) {
	case JSON_NULL:
		out->type = TGI_JV_NULL;
		return 0;
	case JSON_TRUE:
		out->type = TGI_JV_TRUE;
		return 0;
	case JSON_FALSE:
		out->type = TGI_JV_FALSE;
		return 0;
	case JSON_INTEGER:
		out->type = TGI_JV_INT;
		out->u.i = json_integer_value(j);
		return 0;
	case JSON_REAL:
		out->type = TGI_JV_REAL;
		out->u.d = json_real_value(j);
		return isfinite(out->u.d) ? 0 : -1;
	case JSON_STRING: {
		size_t n = json_string_length(j);
		out->type = TGI_JV_STRING;
		out->n = (uint32_t)n;
		return n <= UINT32_MAX && (out->u.s = copy_bytes(d, json_string_value(j), n)) ? 0 : -1;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		out->type = TGI_JV_ARRAY;
		out->n = (uint32_t)n;
		if (depth >= TGI_JV_MAX_DEPTH || n > UINT32_MAX)
			return -1;
		if (!n)
			return 0;
		tgi_jv *items = arena_alloc(d, n * sizeof *items);
		if (!(out->u.items = items))
			return -1;
		for (size_t i = 0; i < n; i++)
			if (from_json(d, json_array_get(j, i), &items[i], depth + 1) < 0)
				return -1;
		return 0;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(j), i = 0;
		json_t *o = (json_t *)j; /* iteration does not modify it */
		out->type = TGI_JV_OBJECT;
		out->n = (uint32_t)n;
		if (depth >= TGI_JV_MAX_DEPTH || n > UINT32_MAX)
			return -1;
		if (!n)
			return 0;
		tgi_jv_member *m = arena_alloc(d, object_bytes(n));
		if (!(out->u.members = m))
			return -1;
		for (void *it = json_object_iter(o); it && i < n; it = json_object_iter_next(o, it), i++) {
			const char *key = json_object_iter_key(it);
			size_t klen = json_object_iter_key_len(it);
			if (klen > UINT32_MAX || memchr(key, '\0', klen))
				return -1; /* keys here never hold NUL */
			if (!(m[i].key = copy_bytes(d, key, klen)))
				return -1;
			m[i].klen = (uint32_t)klen;
			m[i].pad = 0;
			if (from_json(d, json_object_iter_value(it), &m[i].value, depth + 1) < 0)
				return -1;
		}
		if (i != n)
			return -1;
		uint32_t dup; /* jansson's keys are distinct */
		if (n >= INDEX_MIN && index_object(d, m, (uint32_t)n, &dup) < 0)
			return -1;
		return 0;
	}
	default:
		return -1;
	}
}

const tgi_jv *tgi_jv_from_json(tgi_jv_doc *d, const json_t *j)
{
	tgi_jv *root;
	if (!j || !(root = arena_alloc(d, sizeof *root)) || from_json(d, j, root, 0) < 0)
		return NULL;
	return root;
}

json_t *tgi_jv_to_json(const tgi_jv *v)
{
	if (!v)
		return NULL;
	switch (v->type) {
	case TGI_JV_NULL:
		return json_null();
	case TGI_JV_FALSE:
		return json_false();
	case TGI_JV_TRUE:
		return json_true();
	case TGI_JV_INT:
		return json_integer(v->u.i);
	case TGI_JV_REAL:
		return json_real(v->u.d);
	case TGI_JV_STRING:
		return json_stringn_nocheck(v->u.s, v->n);
	case TGI_JV_ARRAY: {
		json_t *a = json_array();
		for (uint32_t i = 0; a && i < v->n; i++) {
			/* append_new takes the item even when it fails */
			if (json_array_append_new(a, tgi_jv_to_json(&v->u.items[i])) < 0) {
				json_decref(a);
				a = NULL;
			}
		}
		return a;
	}
	case TGI_JV_OBJECT: {
		json_t *o = json_object();
		for (uint32_t i = 0; o && i < v->n; i++) {
			const tgi_jv_member *m = &v->u.members[i];
			if (json_object_setn_new_nocheck(o, m->key, m->klen, tgi_jv_to_json(&m->value)) < 0) {
				json_decref(o);
				o = NULL;
			}
		}
		return o;
	}
	default:
		return NULL;
	}
}
