/*
 * auth.c — who may use the console: the access token, one-use login codes,
 * browser sessions and their CSRF tokens (console.h).
 *
 * The access token is given (console.token_env, tg_console_options.token)
 * or 32 random bytes in hex.  A login code is 32 random bytes in hex,
 * good for one login within CODE_TTL_MS; at most CODES_MAX are out at
 * once (the oldest is dropped for a new one).
 *
 * A session is not kept here: its id (the cookie's value) carries its own
 * proof, so it outlives a restart of the console that keeps its token
 * (console.token_env), and a console started with another token knows
 * none of the sessions before it:
 *
 *     id   = hex(issued_ms: 8 bytes big-endian | 8 random bytes)     32 digits
 *          + hex(HMAC-SHA256(key, "session" | those 16 bytes)[0..16])  32 digits
 *     csrf = hex(HMAC-SHA256(key, "csrf" | those 16 bytes))           64 digits
 *     key  = HMAC-SHA256(token, "toolgate console")
 *
 * A session is good for SESSION_TTL_MS from its issue (on the wall clock,
 * which a restart keeps).  Every comparison of a secret runs in time that
 * does not depend on where it differs.
 *
 * Threads: the codes are under a.mu; the token and key never change after
 * tgc_auth_new, so sessions are checked without it.
 *
 * Owns: the token, the key, the codes.  Must not: read requests or
 * headers beyond the cookie value it is handed, or write anything.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "console/console.h"

#define CODES_MAX      16
#define CODE_TTL_MS    (10 * 60 * 1000LL)
#define SESSION_TTL_MS (12 * 3600 * 1000LL)
#define CLOCK_SKEW_MS  (60 * 1000LL)    /* a session issued this far ahead of now is still good */
#define COOKIE_NAME    "tgc_session"

typedef struct login_code {
	char    hex[65];
	int64_t expires_ms;
} login_code;

struct tgc_auth {
	char            *token;
	unsigned char    key[32];
	int64_t        (*now_ms)(void);   /* the wall clock (a test's own) */
	pthread_mutex_t  mu;              /* the codes */
	login_code       codes[CODES_MAX];
	size_t           ncodes;
	char             last[65];        /* the code tgc_auth_code gave last */
};

/* ---- primitives ---- */

static void random_bytes(unsigned char *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			abort();                   /* no kernel randomness: nothing safe to give */
		}
		p += r;
		n -= (size_t)r;
	}
}

/* HMAC-SHA256 (RFC 2104) of the two parts a | b under key. */
static void hmac(const void *key, size_t klen, const void *a, size_t alen, const void *b,
                 size_t blen, unsigned char out[32])
{
	unsigned char k[64], pad[64], inner[32];
	tgi_sha256 s;
	memset(k, 0, sizeof k);
	if (klen > sizeof k) {
		tgi_sha256_init(&s);
		tgi_sha256_update(&s, key, klen);
		tgi_sha256_final(&s, k);
	} else {
		memcpy(k, key, klen);
	}
	for (size_t i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, pad, 64);
	tgi_sha256_update(&s, a, alen);
	tgi_sha256_update(&s, b, blen);
	tgi_sha256_final(&s, inner);
	for (size_t i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, pad, 64);
	tgi_sha256_update(&s, inner, sizeof inner);
	tgi_sha256_final(&s, out);
}

/* n bytes equal, in time that depends on n only. */
static int same_bytes(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/* Equal strings, compared through their digests: the time depends on
 * neither where they differ nor the secret's length. */
static int same_secret(const char *want, const char *got)
{
	unsigned char a[32], b[32];
	tgi_sha256 s;
	if (!want || !got || !*want)
		return 0;
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, want, strlen(want));
	tgi_sha256_final(&s, a);
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, got, strlen(got));
	tgi_sha256_final(&s, b);
	return same_bytes(a, b, sizeof a);
}

static int unhex(const char *s, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;
		for (int j = 0; j < 2; j++) {
			char c = s[2 * i + j];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v << 4 | d;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

/* ---- the handle ---- */

tgc_auth *tgc_auth_new(const char *token)
{
	tgc_auth *a = tgi_xcalloc(1, sizeof *a);
	if (token && *token) {
		a->token = tgi_strdup(token);
	} else {
		a->token = tgi_xmalloc(65);
		tgi_random_hex(a->token, 32);
	}
	static const char label[] = "toolgate console";
	hmac(a->token, strlen(a->token), label, sizeof label - 1, "", 0, a->key);
	a->now_ms = tgi_unix_ms;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void tgc_auth_free(tgc_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->mu);
	memset(a->key, 0, sizeof a->key);
	free(a->token);
	free(a);
}

void tgc_auth_clock(tgc_auth *a, int64_t (*now_ms)(void))
{
	a->now_ms = now_ms ? now_ms : tgi_unix_ms;
}

const char *tgc_auth_token(const tgc_auth *a)
{
	return a->token;
}

/* ---- login codes ---- */

/* Drop the codes that expired (a->mu held). */
static void codes_prune(tgc_auth *a, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < a->ncodes; i++)
		if (a->codes[i].expires_ms > now)
			a->codes[k++] = a->codes[i];
	a->ncodes = k;
}

const char *tgc_auth_code(tgc_auth *a)
{
	int64_t now = a->now_ms();
	pthread_mutex_lock(&a->mu);
	codes_prune(a, now);
	if (a->ncodes == CODES_MAX) {          /* the oldest makes room */
		memmove(a->codes, a->codes + 1, (CODES_MAX - 1) * sizeof a->codes[0]);
		a->ncodes--;
	}
	login_code *c = &a->codes[a->ncodes++];
	tgi_random_hex(c->hex, 32);
	c->expires_ms = now + CODE_TTL_MS;
	memcpy(a->last, c->hex, sizeof a->last);
	pthread_mutex_unlock(&a->mu);
	return a->last;
}

/* ---- sessions ---- */

/* A new session id into sid[65]. */
static void session_new(const tgc_auth *a, char sid[65])
{
	unsigned char body[16], mac[32];
	uint64_t t = (uint64_t)a->now_ms();
	for (int i = 0; i < 8; i++)
		body[i] = (unsigned char)(t >> (56 - 8 * i));
	random_bytes(body + 8, 8);
	hmac(a->key, sizeof a->key, "session", 7, body, sizeof body, mac);
	tgi_hex(body, sizeof body, sid);
	tgi_hex(mac, 16, sid + 32);
}

int tgc_auth_login_code(tgc_auth *a, const char *code, char sid[65])
{
	int found = 0;
	if (!code)
		return 0;
	int64_t now = a->now_ms();
	pthread_mutex_lock(&a->mu);
	codes_prune(a, now);
	for (size_t i = 0; i < a->ncodes; i++) {
		int hit = same_secret(a->codes[i].hex, code);
		if (hit && !found) {
			found = 1;
			memmove(a->codes + i, a->codes + i + 1, (a->ncodes - i - 1) * sizeof a->codes[0]);
			a->ncodes--;
			i--;
		}
	}
	pthread_mutex_unlock(&a->mu);
	if (found)
		session_new(a, sid);
	return found;
}

int tgc_auth_login_token(tgc_auth *a, const char *token, char sid[65])
{
	if (!same_secret(a->token, token))
		return 0;
	session_new(a, sid);
	return 1;
}

/* Is v (n bytes) a session id of ours that has not expired?  1 with its
 * CSRF token in csrf[65]. */
static int session_check(tgc_auth *a, const char *v, size_t n, char csrf[65])
{
	unsigned char body[16], mac[16], want[32];
	if (n != 64 || unhex(v, body, 16) < 0 || unhex(v + 32, mac, 16) < 0)
		return 0;
	hmac(a->key, sizeof a->key, "session", 7, body, sizeof body, want);
	if (!same_bytes(want, mac, sizeof mac))
		return 0;
	int64_t issued = 0;
	for (int i = 0; i < 8; i++)
		issued = (int64_t)((uint64_t)issued << 8 | body[i]);
	int64_t now = a->now_ms();
	if (issued > now + CLOCK_SKEW_MS || now - issued >= SESSION_TTL_MS)
		return 0;
	hmac(a->key, sizeof a->key, "csrf", 4, body, sizeof body, want);
	tgi_hex(want, sizeof want, csrf);
	return 1;
}

int tgc_auth_session(tgc_auth *a, const char *cookie_header, char csrf[65])
{
	const char *p = cookie_header;
	while (p && *p) {
		p += strspn(p, " \t;");
		size_t n = strcspn(p, ";");
		const char *eq = memchr(p, '=', n);
		size_t nl = eq ? (size_t)(eq - p) : n;
		while (nl && (p[nl - 1] == ' ' || p[nl - 1] == '\t'))
			nl--;
		if (eq && nl == sizeof COOKIE_NAME - 1 && !memcmp(p, COOKIE_NAME, nl)) {
			const char *v = eq + 1;
			while (v < p + n && (*v == ' ' || *v == '\t'))
				v++;
			size_t vl = (size_t)(p + n - v);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
				v++, vl -= 2;
			if (session_check(a, v, vl, csrf))
				return 1;
		}
		p += n;
	}
	return 0;
}

int tgc_auth_csrf_ok(const char *want, const char *got)
{
	if (!want || !got || !*want)
		return 0;
	size_t n = strlen(want);
	if (strnlen(got, n + 1) != n)
		return 0;
	return same_bytes(want, got, n);
}
