/*
 * regex.c — the `pattern` / `patternProperties` regexes of a schema, on PCRE2.
 *
 * JSON Schema patterns are ECMA-262 regexes.  They are compiled once, in
 * UTF mode and JIT-compiled where the platform allows, after a light
 * translation towards ECMA semantics: `$` anchors only at the very end,
 * `\uXXXX` and `\u{...}` are code points, `[]` and `[^]` work, `\v` is U+000B, `\s` includes
 * the Unicode spaces ECMA counts, and PCRE-only escapes (`\A`, `\Z`, `\z`,
 * `\h`, `\R`, `\K`, `\Q`...) are compile errors instead of silently
 * meaning something else.  Matching is a search (unanchored), as in ECMA.
 *
 * Owns: compiled codes and their match limits, and the per-call scratch
 * that gives each validation its own match data without a heap allocation.
 * Must not: keep per-thread or global state; share match data across calls.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema/node.h"
#include "util/util.h"

/* A pattern the model's input can make backtrack for a long time is cut off
 * here and treated as a failed match (fail closed). */
#define REGEX_MATCH_LIMIT  1000000u
#define REGEX_DEPTH_LIMIT  10000u
#define REGEX_MAX_SOURCE   (64 * 1024)

struct tgi_regex {
	pcre2_code          *code;
	pcre2_match_context *mctx;
	char                *source;   /* as written in the schema */
	int                  jit;      /* JIT-compiled: the fast entry point applies */
};

/* ECMA's \s beyond ASCII white space: the other Zs (NBSP, U+1680,
 * U+2000..U+200A, U+202F, U+205F, U+3000), LS, PS and the BOM.  Spelled out
 * rather than \p{Zs} so that JIT code tests ASCII with a bitmap. */
#define ECMA_SPACE_EXTRA "\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"

/*
 * Rewrite an ECMA-262 pattern into PCRE2 syntax (see the file comment).
 * Returns 0, or -1 with a sentence in err for an escape ECMA does not have.
 */
static int translate(const char *src, size_t len, tgi_buf *out, char *err, size_t errlen)
{
	int in_class = 0;
	for (size_t i = 0; i < len; i++) {
		char c = src[i];
		if (c == '[' && !in_class) {
			in_class = 1;
			if (tgi_buf_append(out, src + i, 1) < 0)
				return -1;
			if (i + 1 < len && src[i + 1] == '^')
				if (tgi_buf_append(out, src + ++i, 1) < 0)
					return -1;
			if (i + 1 < len && src[i + 1] == ']') { /* "[]" and "[^]" */
				if (tgi_buf_append(out, src + ++i, 1) < 0)
					return -1;
				in_class = 0;
			}
			continue;
		}
		if (c == ']' && in_class)
			in_class = 0;
		if (c != '\\' || i + 1 >= len) {
			if (tgi_buf_append(out, &c, 1) < 0)
				return -1;
			continue;
		}
		char e = src[++i];
		int r = 0;
		switch (e) {
		case 'A': case 'Z': case 'z': case 'G': case 'h': case 'H': case 'R':
		case 'K': case 'X': case 'Q': case 'E': case 'C': case 'N': case 'g':
		case 'o': case 'a': case 'e':
			tgi_snprintf(err, errlen, "invalid regular expression: \\%c is not an "
			             "ECMA-262 escape", e);
			return -1;
		case 'v':
			r = tgi_buf_puts(out, "\\u000B");
			break;
		case 's':
			r = tgi_buf_puts(out, in_class ? "\\s" ECMA_SPACE_EXTRA
			                               : "[\\s" ECMA_SPACE_EXTRA "]");
			break;
		case 'S':
			r = tgi_buf_puts(out, in_class ? "\\S" : "[^\\s" ECMA_SPACE_EXTRA "]");
			break;
		default:
			r = tgi_buf_append(out, src + i - 1, 2);
			break;
		}
		if (r < 0)
			return -1;
	}
	return 0;
}

tgi_regex *tgi_regex_compile(const char *src, size_t len, char *err, size_t errlen)
{
	tgi_buf pat;
	tgi_buf_init(&pat, 4 * REGEX_MAX_SOURCE);
	if (len > REGEX_MAX_SOURCE) {
		tgi_snprintf(err, errlen, "invalid regular expression: longer than %d bytes",
		             REGEX_MAX_SOURCE);
		return NULL;
	}
	err[0] = '\0';
	if (translate(src, len, &pat, err, errlen) < 0) {
		if (!err[0])
			tgi_snprintf(err, errlen, "invalid regular expression: too long");
		tgi_buf_free(&pat);
		return NULL;
	}

	pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
	if (!cctx) {
		tgi_buf_free(&pat);
		tgi_snprintf(err, errlen, "out of memory compiling a regular expression");
		return NULL;
	}
	pcre2_set_compile_extra_options(cctx, PCRE2_EXTRA_ALT_BSUX);
	int code_err;
	PCRE2_SIZE off;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)(pat.p ? pat.p : ""), pat.len,
	                                 PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX |
	                                 PCRE2_ALLOW_EMPTY_CLASS,
	                                 &code_err, &off, cctx);
	pcre2_compile_context_free(cctx);
	int rewritten = pat.len != len || (len && memcmp(pat.p, src, len) != 0);
	tgi_buf_free(&pat);
	if (!code) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(code_err, msg, sizeof msg) < 0)
			tgi_snprintf((char *)msg, sizeof msg, "error %d", code_err);
		if (rewritten)
			tgi_snprintf(err, errlen, "invalid regular expression: %s", (char *)msg);
		else
			tgi_snprintf(err, errlen, "invalid regular expression: %s at offset %zu",
			             (char *)msg, (size_t)off);
		return NULL;
	}
	tgi_regex *re = tgi_xcalloc(1, sizeof *re);
	re->code = code;
	/* Without JIT (some platforms, hardened kernels) the interpreter runs. */
	re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
	re->mctx = pcre2_match_context_create(NULL);
	if (!re->mctx) {
		tgi_regex_free(re);
		tgi_snprintf(err, errlen, "out of memory compiling a regular expression");
		return NULL;
	}
	pcre2_set_match_limit(re->mctx, REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(re->mctx, REGEX_DEPTH_LIMIT);
	re->source = tgi_xmalloc(len + 1);
	memcpy(re->source, src, len);
	re->source[len] = '\0';
	return re;
}

void tgi_regex_free(tgi_regex *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	pcre2_match_context_free(re->mctx);
	free(re->source);
	free(re);
}

const char *tgi_regex_source(const tgi_regex *re)
{
	return re->source;
}

/* ---- per-call scratch ------------------------------------------------------ */

/* PCRE2's allocator hooks: hand out the scratch arena first, the heap after
 * (only the interpreter's backtracking frames ever get that far). */
static void *arena_malloc(PCRE2_SIZE n, void *data)
{
	tgi_rscratch *rx = data;
	size_t need = (n + 15) & ~(size_t)15;
	if (need <= sizeof rx->arena - rx->used) {
		void *p = rx->arena + rx->used;
		rx->used += need;
		return p;
	}
	return malloc(n);
}

static void arena_free(void *p, void *data)
{
	tgi_rscratch *rx = data;
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)rx->arena;
	if (a >= lo && a < lo + sizeof rx->arena)
		return;
	free(p);
}

void tgi_rscratch_init(tgi_rscratch *rx)
{
	rx->gctx = NULL;
	rx->md = NULL;
	rx->used = 0;
}

void tgi_rscratch_fini(tgi_rscratch *rx)
{
	pcre2_match_data_free(rx->md);
	pcre2_general_context_free(rx->gctx);
	tgi_rscratch_init(rx);
}

static int is_ascii(const char *s, size_t n)
{
	uint64_t any = 0, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		any |= w;
	}
	for (; i < n; i++)
		any |= (unsigned char)s[i];
	return (any & 0x8080808080808080ULL) == 0;
}

int tgi_regex_match(const tgi_regex *re, tgi_rscratch *rx, const char *s, size_t n)
{
	if (!rx->md) {
		rx->gctx = pcre2_general_context_create(arena_malloc, arena_free, rx);
		if (rx->gctx)
			rx->md = pcre2_match_data_create(1, rx->gctx);
		if (!rx->md)
			return -1;
	}
	int rc;
	if (re->jit && is_ascii(s, n)) /* trivially valid UTF-8: no check needed */
		rc = pcre2_jit_match(re->code, (PCRE2_SPTR)s, n, 0, 0, rx->md, re->mctx);
	else
		rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, rx->md, re->mctx);
	if (rc >= 0)
		return 1; /* 0: matched, ovector too small for the groups; fine */
	return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}
