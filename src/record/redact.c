/*
 * redact.c — what may be persisted or streamed (mw.h, "redaction").
 *
 * Three things are masked as «redacted:<first 8 hex of an HMAC>»:
 *   - the value under a sensitive key, whole, at any depth of a JSON value:
 *     `redact.keys` (a default list when the section is absent) and a
 *     tool's x-sensitive properties.  A key matches a listed name when it
 *     equals it, or ends with it after `_`, `-`, `.` or a camelCase hump
 *     ("DB_PASSWORD", "x-api-key", "dbPassword" all match "password"),
 *     case-insensitively, `-` and `_` alike.  The HMAC is of the string
 *     itself, or of the canonical JSON text of any other value; null is
 *     left as it is.
 *   - every match of the secret patterns in a string (values and object
 *     keys) or a log line: the built-in ones below, always on, and
 *     `redact.patterns`.  A pattern masks its capture group when it names
 *     one `secret` (built-ins: the part that is the secret, such as only
 *     the password of a URL), else the whole match.
 *   - when a pattern cannot finish (its match limit), the whole string:
 *     a secret we could not rule out is masked (fail closed).
 * The HMAC's key is the gate's ledger's mask key (store.h,
 * tgi_store_mask_key: derived from the machine key and the ledger's id), so
 * equal secrets give equal masks within one ledger, two ledgers mask one
 * secret differently, and a guessed password cannot be confirmed from the
 * ledger (an unsalted hash could be).  A redactor no ledger gave its key
 * (a library user's, the built-in one of callers without a gate) uses a
 * random key made once per process: its masks are stable in this process
 * only.
 * A string that is already exactly a mask is left alone, and masked text
 * is searched again until nothing more is found (a mask can complete a
 * pattern), so redacting twice changes nothing.
 *
 * Speed: this runs on every call (the envelope, the events, the args), so
 * the built-in patterns sit behind a prefilter — one pass over the bytes
 * looking for the literal each pattern needs (`AKIA`, `sk-`, `://`,
 * `password=`...) — and a value with nothing to mask is returned as it is
 * (a new reference, no copy).  Patterns are compiled once, JIT where the
 * platform allows.
 *
 * Owns: the compiled patterns and key lists of one gate, read-only once
 * built (any thread may use them; match data is per call).  Must not:
 * change what the model gets, or decide anything.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "util/util.h"

#define MASK_PREFIX      "\xC2\xABredacted:"   /* «redacted: */
#define MASK_PREFIX_LEN  11
#define MASK_SUFFIX      "\xC2\xBB"            /* » */
#define MASK_LEN         (MASK_PREFIX_LEN + 8 + 2)

#define MAX_DEPTH        128      /* deeper JSON is masked whole */
#define MIN_SECRET       6        /* no built-in pattern matches fewer bytes */
#define MATCH_LIMIT      2000000u
#define DEPTH_LIMIT      10000u
#define MAX_PATTERNS     64       /* in redact.patterns */
#define MAX_PATTERN_LEN  4096
#define MAX_KEYS         256      /* in redact.keys */
#define MAX_KEY_LEN      128

#define LOG_STRING_MAX   4096     /* logged args: longer strings are cut ... */
#define LOG_STRING_KEEP  256      /* ... to this many code points + length + sha256 */

/* ---- the built-in patterns ----------------------------------------------- */

enum {
	P_AWS_ID, P_ASSIGN, P_AUTH, P_BEARER, P_PEM, P_SK, P_GITHUB, P_SLACK, P_JWT, P_URL,
	P_STRIPE, P_GOOGLE, P_GITLAB, P_NPM, P_HF, NBUILTIN
};

/* Each names the part to mask `secret`.  They are ASCII and run on bytes
 * (not in UTF mode): a mask never splits a character, as every span
 * starts and ends at an ASCII byte or at an end of the text. */
static const char *const builtin_re[NBUILTIN] = {
	[P_AWS_ID] = "(?<![A-Z0-9])(?<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Z0-9])",
	/* password=..., "api_key": "...", aws_secret_access_key = ...: the value */
	[P_ASSIGN] = "(?i)(?:password|passwd|passphrase|secret|token|api[_-]?key|"
	             "access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key|credentials?)"
	             "\\\\?[\"']?[ \\t]{0,8}(?::=|=>|=|:)[ \\t]{0,8}"
	             "(?|\\\\?\"(?<secret>[^\"\\r\\n]{3,512}?)\\\\?\"|'(?<secret>[^'\\r\\n]{3,512})'|"
	             "(?<secret>[^\\s\"'`]{4,}))",
	/* Authorization: Basic dXNlcjpwYXNz (the scheme kept); without a
	 * scheme, a value of 8+ characters with a digit */
	[P_AUTH] = "(?i)(?:proxy-)?authorization\\\\?[\"']?[ \\t]{0,8}[:=][ \\t]{0,8}\\\\?[\"']?"
	           "(?|(?:basic|bearer|token|digest|negotiate|ntlm|apikey)[ \\t]+"
	           "(?<secret>[^\\s\"'\\\\]{4,})|"
	           "(?<secret>(?=[^\\s\"'\\\\]{0,64}?[0-9])[^\\s\"'\\\\]{8,}))",
	[P_BEARER] = "(?i)\\bbearer[ \\t]+(?<secret>(?=[A-Za-z0-9._~+/-]{0,64}?[0-9])"
	             "[A-Za-z0-9._~+/-]{8,}=*|[A-Za-z0-9._~+/-]{20,}=*)",
	/* a PEM private key block; one that is not closed runs to the end */
	[P_PEM] = "(?<secret>-----BEGIN[A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----"
	          "(?:[\\s\\S]*?-----END[A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----|[\\s\\S]*))",
	/* OpenAI sk-..., sk-proj-..., Anthropic sk-ant-...: 20+ characters
	 * with a digit and a capital (so that sk-learn-style words pass) */
	[P_SK] = "(?<![A-Za-z0-9_-])(?<secret>sk-(?=[A-Za-z0-9_-]{0,300}?[0-9])"
	         "(?=[A-Za-z0-9_-]{0,300}?[A-Z])[A-Za-z0-9_-]{20,})",
	[P_GITHUB] = "(?<![A-Za-z0-9_])(?<secret>gh[pousr]_[A-Za-z0-9]{36,}|"
	             "github_pat_[A-Za-z0-9_]{22,})",
	[P_SLACK] = "(?<![A-Za-z0-9-])(?<secret>xox[abposre]-[A-Za-z0-9-]{10,})",
	[P_JWT] = "(?<![A-Za-z0-9_-])(?<secret>eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\."
	          "[A-Za-z0-9_-]*)",
	/* scheme://user:PASSWORD@host: the password only */
	[P_URL] = "://[^\\s/?#@:'\"<>]{0,256}:(?<secret>[^\\s/?#'\"<>]{1,256})@",
	[P_STRIPE] = "(?<![A-Za-z0-9])(?<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
	[P_GOOGLE] = "(?<![A-Za-z0-9_-])(?<secret>AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])",
	[P_GITLAB] = "(?<![A-Za-z0-9_-])(?<secret>glpat-[A-Za-z0-9_-]{20,})",
	[P_NPM] = "(?<![A-Za-z0-9_])(?<secret>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9])",
	[P_HF] = "(?<![A-Za-z0-9_])(?<secret>hf_[A-Za-z]{34})(?![A-Za-z0-9])",
};

/*
 * The prefilter: a literal each built-in pattern cannot match without,
 * looked for by its first two bytes (a bigram table, hashed: a collision
 * costs a compare, never a miss); `ci` needles match in any case.  The
 * assignment and Authorization patterns are found instead by looking back
 * from each `:` and `=` (assign_before).
 */
static const struct needle {
	const char   *text;
	unsigned char len, ci, pat;
} needles[] = {
	{"AKIA", 4, 0, P_AWS_ID},
	{"ASIA", 4, 0, P_AWS_ID},
	{"bearer", 6, 1, P_BEARER},
	{"-----BEGIN", 10, 0, P_PEM},
	{"sk-", 3, 0, P_SK},
	{"ghp_", 4, 0, P_GITHUB},
	{"gho_", 4, 0, P_GITHUB},
	{"ghu_", 4, 0, P_GITHUB},
	{"ghs_", 4, 0, P_GITHUB},
	{"ghr_", 4, 0, P_GITHUB},
	{"github_pat_", 11, 0, P_GITHUB},
	{"xox", 3, 0, P_SLACK},
	{"eyJ", 3, 0, P_JWT},
	{"://", 3, 0, P_URL},
	{"sk_live_", 8, 0, P_STRIPE},
	{"sk_test_", 8, 0, P_STRIPE},
	{"rk_live_", 8, 0, P_STRIPE},
	{"rk_test_", 8, 0, P_STRIPE},
	{"AIza", 4, 0, P_GOOGLE},
	{"glpat-", 6, 0, P_GITLAB},
	{"npm_", 4, 0, P_NPM},
	{"hf_", 3, 0, P_HF},
};
_Static_assert(TGI_ARRAY_LEN(needles) < 31 && NBUILTIN < 31, "one bit each in a uint32_t");

#define BIGRAMS        4096
#define BIGRAM(a, b)   ((((unsigned)(a) << 4) ^ (unsigned)(b)) & (BIGRAMS - 1))
/* In the bigram table: the first byte may be `:` or `=`; look back from it
 * for a secret's name. */
#define LOOKBACK       (1u << 31)
#define LOOKBACK_PATS  ((1u << P_ASSIGN) | (1u << P_AUTH))

/* Key words an assignment's name ends with (P_ASSIGN), lowercase. */
static const struct word {
	const char   *text;
	unsigned char len;
} assign_words[] = {
	{"password", 8}, {"passwd", 6}, {"passphrase", 10}, {"secret", 6}, {"token", 5},
	{"apikey", 6}, {"api_key", 7}, {"api-key", 7}, {"accesskey", 9}, {"access_key", 10},
	{"access-key", 10}, {"secretkey", 9}, {"secret_key", 10}, {"secret-key", 10},
	{"privatekey", 10}, {"private_key", 11}, {"private-key", 11}, {"authkey", 7},
	{"auth_key", 8}, {"auth-key", 8}, {"credential", 10}, {"credentials", 11},
};

/* The keys masked when the config has no redact.keys. */
static const char *const default_keys[] = {
	"password", "passwd", "passphrase", "secret", "token", "api_key", "apikey",
	"access_key", "secret_key", "private_key", "access_token", "refresh_token",
	"client_secret", "authorization", "cookie", "credentials",
};

typedef struct pattern {
	pcre2_code *code;
	int         jit;
	uint32_t    group;   /* the capture group to mask; 0: the whole match */
} pattern;

struct tgi_redactor {
	pattern             *pats;      /* NBUILTIN built-ins, then redact.patterns */
	size_t               npats;
	uint32_t             groups;    /* most capture groups of any pattern */
	pcre2_match_context *mctx;
	char               **keys;      /* folded (lowercase, '-' as '_') */
	size_t              *klen;
	size_t               nkeys;
	uint64_t             by_last[256];  /* folded last byte -> keys[0..63] ending so (bits) */
	uint32_t             bigram[BIGRAMS]; /* BIGRAM(b0, b1) -> needles starting so (bits) */
	unsigned char        key[32];   /* masks are HMACs under it: the ledger's mask key
	                                 * (tgi_redactor_key), else random at creation */
};

/* ---- keys ------------------------------------------------------------------ */

static unsigned char fold(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c | 0x20;
	return c == '-' ? '_' : c;
}

/* Does key (n bytes) match the folded name w (wn bytes)? */
static int key_is(const char *key, size_t n, const char *w, size_t wn)
{
	if (wn == 0 || n < wn)
		return 0;
	const char *tail = key + (n - wn);
	for (size_t i = wn; i-- > 0;)  /* from the end: most keys differ in their last byte */
		if (fold((unsigned char)tail[i]) != (unsigned char)w[i])
			return 0;
	if (n == wn)
		return 1;
	unsigned char before = (unsigned char)tail[-1], first = (unsigned char)tail[0];
	if (before == '_' || before == '-' || before == '.')
		return 1;
	/* camelCase: dbPassword, X-ApiKey */
	return first >= 'A' && first <= 'Z' && before >= 'a' && before <= 'z';
}

/* The same against a name that is not folded yet (a tool's x-sensitive). */
static int key_is_raw(const char *key, size_t n, const char *name)
{
	char w[MAX_KEY_LEN + 1];
	size_t wn = strlen(name);
	if (wn > MAX_KEY_LEN)
		return n == wn && memcmp(key, name, n) == 0;
	for (size_t i = 0; i < wn; i++)
		w[i] = (char)fold((unsigned char)name[i]);
	return key_is(key, n, w, wn);
}

static int key_listed(const tgi_redactor *r, const tgi_strv *extra, const char *key, size_t n)
{
	if (n) {
		/* only the listed names that end as this key does */
		for (uint64_t m = r->by_last[fold((unsigned char)key[n - 1])]; m; m &= m - 1) {
			size_t i = (size_t)__builtin_ctzll(m);
			if (key_is(key, n, r->keys[i], r->klen[i]))
				return 1;
		}
	}
	for (size_t i = 64; i < r->nkeys; i++)
		if (key_is(key, n, r->keys[i], r->klen[i]))
			return 1;
	for (size_t i = 0; extra && i < extra->n; i++)
		if (key_is_raw(key, n, extra->v[i]))
			return 1;
	return 0;
}

static void add_key(tgi_redactor *r, const char *name)
{
	size_t n = strlen(name);
	char *f = tgi_xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		f[i] = (char)fold((unsigned char)name[i]);
	f[n] = '\0';
	r->keys = tgi_xrealloc(r->keys, (r->nkeys + 1) * sizeof *r->keys);
	r->klen = tgi_xrealloc(r->klen, (r->nkeys + 1) * sizeof *r->klen);
	if (r->nkeys < 64 && n)
		r->by_last[(unsigned char)f[n - 1]] |= 1ull << r->nkeys;
	r->keys[r->nkeys] = f;
	r->klen[r->nkeys++] = n;
}

/* ---- masks ----------------------------------------------------------------- */

static const tgi_redactor *or_builtin(const tgi_redactor *r);

void tgi_redactor_key(tgi_redactor *r, const unsigned char key[32])
{
	if (r && key)
		memcpy(r->key, key, sizeof r->key);
}

void tgi_redact_mask(const tgi_redactor *r, const char *secret, size_t len, char out[32])
{
	unsigned char mac[32];
	char hex[65];
	r = or_builtin(r);
	tgi_hmac_sha256(r->key, sizeof r->key, secret ? secret : "", secret ? len : 0, mac);
	tgi_hex(mac, 4, hex);
	memcpy(out, MASK_PREFIX, MASK_PREFIX_LEN);
	memcpy(out + MASK_PREFIX_LEN, hex, 8);
	memcpy(out + MASK_PREFIX_LEN + 8, MASK_SUFFIX, 2);
	out[MASK_LEN] = '\0';
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int is_mask(const char *s, size_t n)
{
	if (n != MASK_LEN || memcmp(s, MASK_PREFIX, MASK_PREFIX_LEN) != 0 ||
	    memcmp(s + MASK_LEN - 2, MASK_SUFFIX, 2) != 0)
		return 0;
	for (size_t i = MASK_PREFIX_LEN; i < MASK_PREFIX_LEN + 8; i++)
		if (!is_hex(s[i]))
			return 0;
	return 1;
}

/* A JSON value masked whole: a string by its bytes, anything else by its
 * canonical text.  New reference. */
static json_t *mask_value(const tgi_redactor *r, json_t *v)
{
	char m[32];
	if (json_is_string(v)) {
		tgi_redact_mask(r, json_string_value(v), json_string_length(v), m);
	} else {
		char *text = tgi_json_canonical(v);
		tgi_redact_mask(r, text, strlen(text), m);
		free(text);
	}
	return json_string(m);
}

/* ---- finding secrets in text ----------------------------------------------- */

typedef struct span {
	size_t a, b;  /* [a, b) */
} span;

typedef struct spans {
	span  *v;
	size_t n, cap;
} spans;

static void spans_add(spans *sp, size_t a, size_t b)
{
	if (sp->n == sp->cap) {
		sp->cap = sp->cap ? sp->cap * 2 : 8;
		sp->v = tgi_xrealloc(sp->v, sp->cap * sizeof *sp->v);
	}
	sp->v[sp->n++] = (span){a, b};
}

/* One reusable set of match data for a walk or a line (made on first use). */
typedef struct scratch {
	pcre2_match_data *md;
	spans             sp;
} scratch;

static void scratch_fini(scratch *x)
{
	pcre2_match_data_free(x->md);
	free(x->sp.v);
}

static unsigned char upper(unsigned char c)
{
	return c >= 'a' && c <= 'z' ? c & ~0x20u : c;
}

static int ci_eq(const unsigned char *s, const char *lower, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c |= 0x20;
		if (c != (unsigned char)lower[i])
			return 0;
	}
	return 1;
}

/* Does a `:` or `=` at i follow a secret's name ("password", "Authorization"),
 * maybe quoted, maybe with spaces?  Sets the pattern bits in *want. */
static void assign_before(const unsigned char *u, size_t i, uint32_t *want)
{
	size_t j = i, sp = 0;
	while (j > 0 && (u[j - 1] == ' ' || u[j - 1] == '\t') && sp++ < 8)
		j--;
	if (j > 0 && (u[j - 1] == '"' || u[j - 1] == '\''))
		j--;
	if (j > 0 && u[j - 1] == '\\')
		j--;
	if (j < 5)
		return;
	unsigned char last = u[j - 1] | 0x20;
	if (last == 'n' && j >= 13 && ci_eq(u + j - 13, "authorization", 13))
		*want |= 1u << P_AUTH;
	if (!(last == 'd' || last == 'e' || last == 't' || last == 'n' || last == 'y' ||
	      last == 'l' || last == 's'))
		return;
	for (size_t k = 0; k < TGI_ARRAY_LEN(assign_words); k++) {
		size_t n = assign_words[k].len;
		if (n <= j && ci_eq(u + j - n, assign_words[k].text, n)) {
			*want |= 1u << P_ASSIGN;
			return;
		}
	}
}

/* Which built-in patterns could match s: one pass over its bytes. */
static uint32_t candidates(const tgi_redactor *r, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t want = 0;
	if (n < MIN_SECRET)
		return 0;
	const uint32_t *bigram = r->bigram;
	unsigned a = u[0];
	for (size_t i = 0; i + 1 < n; i++) {
		unsigned b = u[i + 1];
		uint32_t m = bigram[BIGRAM(a, b)];
		a = b;
		if (__builtin_expect(!m, 1))
			continue;
		if (m & LOOKBACK) {
			if ((u[i] == ':' || u[i] == '=') && (want & LOOKBACK_PATS) != LOOKBACK_PATS)
				assign_before(u, i, &want);
			m &= ~LOOKBACK;
		}
		for (; m; m &= m - 1) {
			const struct needle *nd = &needles[__builtin_ctz(m)];
			if (want & (1u << nd->pat) || i + nd->len > n)
				continue;
			if (nd->ci ? ci_eq(u + i, nd->text, nd->len)
			           : memcmp(u + i, nd->text, nd->len) == 0)
				want |= 1u << nd->pat;
		}
	}
	return want;
}

/* Every match of p in s into x->sp.  -1 when the pattern could not finish
 * (the caller masks the whole text). */
static int run_pattern(const tgi_redactor *r, const pattern *p, scratch *x, const char *s,
                       size_t n)
{
	if (!x->md) {
		x->md = pcre2_match_data_create(r->groups + 1, NULL);
		if (!x->md)
			return -1;
	}
	size_t off = 0;
	while (off <= n) {
		int rc = p->jit ? pcre2_jit_match(p->code, (PCRE2_SPTR)s, n, off, 0, x->md, r->mctx)
		                : pcre2_match(p->code, (PCRE2_SPTR)s, n, off, 0, x->md, r->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			return 0;
		if (rc < 0)
			return -1;
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(x->md);
		PCRE2_SIZE a = ov[2 * p->group], b = ov[2 * p->group + 1];
		if (a != PCRE2_UNSET && b > a && !is_mask(s + a, b - a))
			spans_add(&x->sp, a, b);
		if (ov[1] > off && ov[1] > ov[0]) {
			off = ov[1];
		} else {
			/* an empty match: step one character on */
			off = (ov[0] > off ? ov[0] : off) + 1;
			while (off < n && ((unsigned char)s[off] & 0xC0) == 0x80)
				off++;
		}
	}
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const span *x = a, *y = b;
	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/*
 * The secrets of s as sorted, disjoint spans in x->sp (overlapping ones
 * merged).  0 when there is none.  A pattern that could not finish makes
 * the whole of s one span.
 */
static size_t find_secrets(const tgi_redactor *r, scratch *x, const char *s, size_t n)
{
	x->sp.n = 0;
	uint32_t want = candidates(r, s, n);
	if (!want && r->npats == NBUILTIN)
		return 0;
	for (size_t i = want ? (size_t)__builtin_ctz(want) : NBUILTIN; i < r->npats; i++) {
		if (i < NBUILTIN && !(want & (1u << i)))
			continue;
		if (run_pattern(r, &r->pats[i], x, s, n) < 0) {
			x->sp.n = 0;
			if (n && !is_mask(s, n))
				spans_add(&x->sp, 0, n);
			return x->sp.n;
		}
	}
	if (x->sp.n < 2)
		return x->sp.n;
	qsort(x->sp.v, x->sp.n, sizeof *x->sp.v, span_cmp);
	size_t k = 0;
	for (size_t i = 1; i < x->sp.n; i++) {
		if (x->sp.v[i].a < x->sp.v[k].b) {
			if (x->sp.v[i].b > x->sp.v[k].b)
				x->sp.v[k].b = x->sp.v[i].b;
		} else {
			x->sp.v[++k] = x->sp.v[i];
		}
	}
	x->sp.n = k + 1;
	return x->sp.n;
}

/* s with x->sp masked, into b. */
static void apply_spans(const tgi_redactor *r, const scratch *x, const char *s, size_t n,
                        tgi_buf *b)
{
	size_t at = 0;
	char m[32];
	for (size_t i = 0; i < x->sp.n; i++) {
		const span *sp = &x->sp.v[i];
		tgi_buf_append(b, s + at, sp->a - at);
		tgi_redact_mask(r, s + sp->a, sp->b - sp->a, m);
		tgi_buf_append(b, m, MASK_LEN);
		at = sp->b;
	}
	tgi_buf_append(b, s + at, n - at);
}

static size_t masked_cap(size_t n, size_t nspans)
{
	return n + nspans * MASK_LEN + 64;
}

/*
 * s with its secrets masked, or NULL when it has none (caller frees).
 * The result is a fixed point: a mask can complete a pattern the text
 * alone did not (its hex has digits; `»` ends a word), so the masked text
 * is searched again until nothing more is found; text that has not
 * settled after MASK_ROUNDS is masked whole (fail closed).
 */
#define MASK_ROUNDS 8

static char *mask_secrets(const tgi_redactor *r, scratch *x, const char *s, size_t n,
                          size_t *outlen)
{
	char *cur = NULL;
	size_t len = n;
	for (int round = 0; round < MASK_ROUNDS; round++) {
		const char *in = cur ? cur : s;
		size_t nspans = find_secrets(r, x, in, len);
		if (!nspans)
			break;
		tgi_buf b;
		tgi_buf_init(&b, masked_cap(len, nspans));
		apply_spans(r, x, in, len, &b);
		free(cur);
		len = b.len;
		cur = tgi_buf_steal(&b);
		if (round == MASK_ROUNDS - 1) {
			free(cur);
			cur = tgi_xmalloc(32);
			tgi_redact_mask(r, s, n, cur);
			len = MASK_LEN;
		}
	}
	*outlen = len;
	return cur;
}

/* ---- building -------------------------------------------------------------- */

static int compile(const char *src, size_t len, uint32_t opts, pattern *p, char *why,
                   size_t whylen)
{
	int code_err;
	PCRE2_SIZE off;
	p->code = pcre2_compile((PCRE2_SPTR)src, len, opts, &code_err, &off, NULL);
	if (!p->code) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(code_err, msg, sizeof msg) < 0)
			tgi_snprintf((char *)msg, sizeof msg, "error %d", code_err);
		tgi_snprintf(why, whylen, "does not compile: %s at offset %zu", (char *)msg,
		             (size_t)off);
		return -1;
	}
	/* Without JIT (some platforms, hardened kernels) the interpreter runs. */
	p->jit = pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE) == 0;
	int g = pcre2_substring_number_from_name(p->code, (PCRE2_SPTR) "secret");
	p->group = g > 0 ? (uint32_t)g : 0;
	return 0;
}

static int add_pattern(tgi_redactor *r, const tgi_config *cfg, size_t i, const char *src,
                       char *err, size_t errlen)
{
	char ptr[64], why[400];
	pattern *p = &r->pats[r->npats];
	tgi_snprintf(ptr, sizeof ptr, "/redact/patterns/%zu", i);
	if (compile(src, strlen(src), PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, p, why, sizeof why) < 0)
		return tgi_config_fail(cfg, ptr, err, errlen, "%s", why);
	r->npats++;
	/* one that matches nothing at all would mask between every character */
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->code, NULL);
	int rc = md ? pcre2_match(p->code, (PCRE2_SPTR) "", 0, 0, 0, md, r->mctx) : -1;
	pcre2_match_data_free(md);
	if (rc >= 0)
		return tgi_config_fail(cfg, ptr, err, errlen, "matches the empty string; a pattern "
		                       "must match the secret itself");
	uint32_t groups = 0;
	pcre2_pattern_info(p->code, PCRE2_INFO_CAPTURECOUNT, &groups);
	if (groups > r->groups)
		r->groups = groups;
	return 0;
}

/* What the section gives: its lists, checked (NULL: absent or null). */
typedef struct redact_conf {
	const json_t *keys, *pats;
} redact_conf;

static int set_list(const tgi_conf_ctx *x, const json_t *v, const char *ptr, size_t max,
                    size_t maxlen, const json_t **out)
{
	if (json_is_null(v))
		return 0;
	if (tgi_config_strings(x->user, v, ptr, max, maxlen, 0, x->err, x->errlen) < 0)
		return -1;
	*out = v;
	return 0;
}

static int set_keys(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	return set_list(x, v, ptr, MAX_KEYS, MAX_KEY_LEN, &((redact_conf *)obj)->keys);
}

static int set_patterns(const tgi_conf_ctx *x, const json_t *v, const char *ptr, void *obj)
{
	return set_list(x, v, ptr, MAX_PATTERNS, MAX_PATTERN_LEN, &((redact_conf *)obj)->pats);
}

static const tgi_conf_key redact_keys[] = {
	TGI_CONF_CUSTOM("keys", set_keys, "argument names whose values are masked (replaces the "
	                "built-in list)"),
	TGI_CONF_CUSTOM("patterns", set_patterns, "more PCRE2 patterns of secrets"),
};

static int configure(tgi_redactor *r, const tgi_config *cfg, char *err, size_t errlen)
{
	redact_conf rc = { NULL, NULL };
	if (cfg) {
		tgi_conf_doc d = tgi_config_doc(cfg);
		tgi_conf_ctx x = { &d, err, errlen, (void *)cfg };
		if (tgi_conf_section_apply(&x, redact_keys, TGI_ARRAY_LEN(redact_keys), cfg->redact,
		                           "/redact", &rc) < 0)
			return -1;
	}
	const json_t *keys = rc.keys, *pats = rc.pats;

	if (keys) {
		size_t i;
		const json_t *k;
		json_array_foreach(keys, i, k)
			add_key(r, json_string_value(k));
	} else {
		for (size_t i = 0; i < TGI_ARRAY_LEN(default_keys); i++)
			add_key(r, default_keys[i]);
	}
	r->pats = tgi_xcalloc(NBUILTIN + json_array_size(pats), sizeof *r->pats);
	for (size_t i = 0; i < NBUILTIN; i++) {
		char why[400];
		if (compile(builtin_re[i], PCRE2_ZERO_TERMINATED, 0, &r->pats[i], why, sizeof why) < 0) {
			tgi_snprintf(err, errlen, "built-in redaction pattern %zu %s", i, why);
			return -1;
		}
		r->npats++;
		uint32_t groups = 0;
		pcre2_pattern_info(r->pats[i].code, PCRE2_INFO_CAPTURECOUNT, &groups);
		if (groups > r->groups)
			r->groups = groups;
	}
	size_t i;
	const json_t *p;
	json_array_foreach(pats, i, p)
		if (add_pattern(r, cfg, i, json_string_value(p), err, errlen) < 0)
			return -1;
	return 0;
}

/* The mask key of redactors no ledger keyed: random, made once per process,
 * so that their masks agree with one another here and confirm no guess. */
static unsigned char process_key[32];
static pthread_once_t process_key_once = PTHREAD_ONCE_INIT;

static void process_key_init(void)
{
	char hex[65];
	tgi_random_hex(hex, sizeof process_key);
	tgi_hmac_sha256(hex, strlen(hex), "toolgate mask", 13, process_key);
	explicit_bzero(hex, sizeof hex);
}

int tgi_redactor_new(const tgi_config *cfg, tgi_redactor **out, char *err, size_t errlen)
{
	tgi_redactor *r = tgi_xcalloc(1, sizeof *r);
	*out = NULL;
	r->mctx = pcre2_match_context_create(NULL);
	if (!r->mctx) {
		tgi_snprintf(err, errlen, "out of memory building the redaction patterns");
		free(r);
		return -1;
	}
	/* until a ledger gives its mask key: this process's random one */
	pthread_once(&process_key_once, process_key_init);
	memcpy(r->key, process_key, sizeof r->key);
	pcre2_set_match_limit(r->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(r->mctx, DEPTH_LIMIT);
	for (size_t i = 0; i < TGI_ARRAY_LEN(needles); i++) {
		unsigned char a = (unsigned char)needles[i].text[0], b = (unsigned char)needles[i].text[1];
		for (int v = 0; v < (needles[i].ci ? 4 : 1); v++)  /* every case of the two */
			r->bigram[BIGRAM(v & 1 ? upper(a) : a, v & 2 ? upper(b) : b)] |= 1u << i;
	}
	for (unsigned b = 0; b < 256; b++) {
		r->bigram[BIGRAM(':', b)] |= LOOKBACK;
		r->bigram[BIGRAM('=', b)] |= LOOKBACK;
	}
	if (configure(r, cfg, err, errlen) < 0) {
		tgi_redactor_free(r);
		return -1;
	}
	*out = r;
	return 0;
}

void tgi_redactor_free(tgi_redactor *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->npats; i++)
		pcre2_code_free(r->pats[i].code);
	free(r->pats);
	for (size_t i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	free(r->keys);
	free(r->klen);
	pcre2_match_context_free(r->mctx);
	free(r);
}

/* The built-in redactor (default keys, built-in patterns), for callers
 * without a gate's: built once, kept for the life of the process. */
static tgi_redactor *builtin_redactor;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_init(void)
{
	char err[256];
	if (tgi_redactor_new(NULL, &builtin_redactor, err, sizeof err) < 0)
		abort(); /* the built-in patterns always compile */
}

static const tgi_redactor *or_builtin(const tgi_redactor *r)
{
	if (r)
		return r;
	pthread_once(&builtin_once, builtin_init);
	return builtin_redactor;
}

/* ---- text ------------------------------------------------------------------ */

char *tgi_redact_text(const tgi_redactor *r, const char *text, size_t len)
{
	scratch x = {0};
	size_t n = 0;
	if (!text)
		return tgi_strdup("");
	char *out = mask_secrets(or_builtin(r), &x, text, len, &n);
	scratch_fini(&x);
	return out ? out : tgi_strndup(text, len);
}

/* ---- JSON ------------------------------------------------------------------ */

typedef struct walk {
	const tgi_redactor *r;
	const tgi_strv     *extra;  /* more key names, may be NULL */
	int                 cut;    /* cut strings over LOG_STRING_MAX (the logged args) */
	scratch             x;
} walk;

/* A long string as the logged args keep it: its first LOG_STRING_KEEP
 * code points (secrets masked, no mask cut in two) and then its length
 * and sha256.  m is s with its secrets masked. */
static json_t *shorten(const char *s, size_t n, const char *m, size_t mn)
{
	char sha[65], tail[160];
	tgi_sha256_hex(s, n, sha);
	tgi_snprintf(tail, sizeof tail, "…[%zu bytes, sha256 %s]", n, sha);
	size_t keep = tgi_utf8_offset(m, mn, LOG_STRING_KEEP);
	for (const char *p = m; (p = memmem(p, keep - (size_t)(p - m), MASK_PREFIX,
	                                    MASK_PREFIX_LEN)); p += MASK_PREFIX_LEN) {
		if ((size_t)(p - m) + MASK_LEN > keep) {
			keep = (size_t)(p - m);
			break;
		}
	}
	tgi_buf b;
	tgi_buf_init(&b, keep + sizeof tail);
	tgi_buf_append(&b, m, keep);
	tgi_buf_puts(&b, tail);
	json_t *j = tgi_json_text(b.p ? b.p : "", b.len);
	tgi_buf_free(&b);
	return j;
}

/* The masked text of s, or NULL when it has nothing to mask (caller frees). */
static char *mask_text(walk *w, const char *s, size_t n, size_t *outlen)
{
	return mask_secrets(w->r, &w->x, s, n, outlen);
}

static json_t *walk_string(walk *w, json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), mn = 0;
	char *m = mask_text(w, s, n, &mn);
	json_t *out = NULL;
	if (w->cut && n > LOG_STRING_MAX)
		out = m ? shorten(s, n, m, mn) : shorten(s, n, s, n);
	else if (m)
		out = tgi_json_text(m, mn);
	free(m);
	return out;
}

static json_t *walk_value(walk *w, json_t *v, int depth);

/* An object's member: its value (masked, walked, or NULL: as it was) and
 * its key (masked, or NULL: as it was). */
static json_t *walk_member(walk *w, const char *key, size_t klen, json_t *child, int depth,
                           char **newkey, size_t *newklen)
{
	*newkey = mask_text(w, key, klen, newklen);
	if (key_listed(w->r, w->extra, key, klen) && !json_is_null(child) &&
	    !(json_is_string(child) && is_mask(json_string_value(child), json_string_length(child))))
		return mask_value(w->r, child);
	return walk_value(w, child, depth + 1);
}

static json_t *walk_object(walk *w, json_t *v, int depth)
{
	json_t *out = NULL;
	size_t done = 0;
	for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it), done++) {
		const char *key = json_object_iter_key(it);
		size_t klen = json_object_iter_key_len(it);
		json_t *child = json_object_iter_value(it);
		char *nk;
		size_t nkl = 0;
		json_t *nv = walk_member(w, key, klen, child, depth, &nk, &nkl);
		if ((nv || nk) && !out) {
			/* the first change: what came before is copied as it is */
			out = json_object();
			void *p = json_object_iter(v);
			for (size_t i = 0; i < done; i++, p = json_object_iter_next(v, p))
				json_object_setn_new(out, json_object_iter_key(p),
				                     json_object_iter_key_len(p),
				                     json_deep_copy(json_object_iter_value(p)));
		}
		if (out)
			json_object_setn_new(out, nk ? nk : key, nk ? nkl : klen,
			                     nv ? nv : json_deep_copy(child));
		free(nk);
	}
	return out;
}

static json_t *walk_array(walk *w, json_t *v, int depth)
{
	json_t *out = NULL;
	size_t n = json_array_size(v);
	for (size_t i = 0; i < n; i++) {
		json_t *child = json_array_get(v, i);
		json_t *nv = walk_value(w, child, depth + 1);
		if (nv && !out) {
			out = json_array();
			for (size_t j = 0; j < i; j++)
				json_array_append_new(out, json_deep_copy(json_array_get(v, j)));
		}
		if (out)
			json_array_append_new(out, nv ? nv : json_deep_copy(child));
	}
	return out;
}

/* v's masked copy, or NULL when nothing in v needs masking. */
static json_t *walk_value(walk *w, json_t *v, int depth)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return walk_string(w, v);
	case JSON_OBJECT:
		if (depth >= MAX_DEPTH)
			return json_object_size(v) ? mask_value(w->r, v) : NULL;
		return walk_object(w, v, depth);
	case JSON_ARRAY:
		if (depth >= MAX_DEPTH)
			return json_array_size(v) ? mask_value(w->r, v) : NULL;
		return walk_array(w, v, depth);
	default:
		return NULL;
	}
}

json_t *tgi_redact_json(const tgi_redactor *r, json_t *v, const tgi_strv *keys)
{
	if (!v)
		return NULL;
	walk w = {.r = or_builtin(r), .extra = keys};
	json_t *out = walk_value(&w, v, 0);
	scratch_fini(&w.x);
	return out ? out : json_incref(v);
}

char *tgi_redacted_args(const tgi_call *c)
{
	if (!c->args)
		return tgi_strdup("null");
	walk w = {.r = or_builtin(c->g ? c->g->redact : NULL),
	          .extra = c->entry ? &c->entry->sensitive : NULL, .cut = 1};
	json_t *out = walk_value(&w, c->args, 0);
	scratch_fini(&w.x);
	/* the idempotency key is the model's text and may hold a secret: masked
	 * wherever the args are kept or shown (the claim keeps its digest) */
	const json_t *k = json_object_get(out ? out : c->args, "idempotency_key");
	if (json_is_string(k) && !is_mask(json_string_value(k), json_string_length(k))) {
		json_t *top = json_copy(out ? out : c->args);
		json_object_set_new(top, "idempotency_key", mask_value(w.r, (json_t *)k));
		json_decref(out);
		out = top;
	}
	if (!out)
		return c->args_canon ? tgi_strdup(c->args_canon) : tgi_json_canonical(c->args);
	char *s = tgi_json_canonical(out);
	json_decref(out);
	return s;
}

/* Does the JSON pointer ptr go through a masked key (listed or extra)? */
static int pointer_sensitive(const tgi_redactor *r, const tgi_strv *extra, const char *ptr)
{
	char tok[sizeof ((tgi_call *)0)->field];   /* a token is shorter than its pointer */
	while (*ptr == '/') {
		size_t n = 0;
		for (ptr++; *ptr && *ptr != '/'; ptr++) {
			char ch = *ptr;
			if (ch == '~' && (ptr[1] == '0' || ptr[1] == '1'))
				ch = *++ptr == '0' ? '~' : '/';
			if (n < sizeof tok)
				tok[n++] = ch;
		}
		if (n < sizeof tok && key_listed(r, extra, tok, n))
			return 1;
	}
	return 0;
}

char *tgi_redacted_message(const tgi_call *c)
{
	if (c->kind == TG_ERR_NONE || !c->message[0])
		return NULL;
	const tgi_redactor *r = or_builtin(c->g ? c->g->redact : NULL);
	const tgi_strv *extra = c->entry ? &c->entry->sensitive : NULL;
	if (c->has_field && pointer_sensitive(r, extra, c->field)) {
		char *m = tgi_xmalloc(32);
		tgi_redact_mask(r, c->message, strlen(c->message), m);
		return m;
	}
	return tgi_redact_text(r, c->message, strlen(c->message));
}
