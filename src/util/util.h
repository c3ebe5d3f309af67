/*
 * util.h — small shared helpers: capped buffers, ids, hashing, time, JSON.
 *
 * Owns: nothing global.  Must not: know about tools, policy or the ledger.
 */
#ifndef TGI_UTIL_H
#define TGI_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define TGI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * A growable byte buffer with a hard maximum (every buffer that holds
 * outside bytes has one).  An append past max fails with -1 and leaves the
 * buffer as it was; the caller decides whether that is an error.  p is
 * always NUL-terminated when non-NULL.
 */
typedef struct tgi_buf {
	char  *p;
	size_t len;
	size_t cap;
	size_t max;
	int    over;   /* an append was refused for max: what it holds is incomplete */
} tgi_buf;

void tgi_buf_init(tgi_buf *b, size_t max);
int  tgi_buf_append(tgi_buf *b, const void *data, size_t n);
int  tgi_buf_puts(tgi_buf *b, const char *s);
int  tgi_buf_printf(tgi_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *tgi_buf_steal(tgi_buf *b); /* caller frees; buffer is reset */
void tgi_buf_free(tgi_buf *b);

/* A list of strings, NULL-terminated; n excludes the NULL. */
typedef struct tgi_strv {
	char  **v;
	size_t  n;
} tgi_strv;

void tgi_strv_push(tgi_strv *sv, char *s);   /* takes s */
void tgi_strv_free(tgi_strv *sv);

/* ids and hashing */
void tgi_uuidv7(char out[37]);
/* A short description of a JSON value for messages ("a list", "\"yolo\"",
 * "null (an empty value)"), into out; returns out. */
const char *tgi_json_describe(const json_t *v, char *out, size_t cap);

/* SHA-256 (src/util/sha256.c), incrementally or at once. */
typedef struct tgi_sha256 {
	uint32_t      h[8];
	uint64_t      len;      /* bytes hashed so far */
	unsigned char buf[64];
	size_t        fill;     /* bytes waiting in buf */
} tgi_sha256;
void tgi_sha256_init(tgi_sha256 *s);
void tgi_sha256_update(tgi_sha256 *s, const void *data, size_t n);
void tgi_sha256_final(tgi_sha256 *s, unsigned char md[32]);

void tgi_sha256_hex(const void *data, size_t n, char out[65]);
/* sha256 of the n strings joined by "\n", without building the joined text. */
void tgi_sha256_lines(const char *const *parts, size_t n, char out[65]);
/* HMAC-SHA256 (RFC 2104) under key (any length), incrementally or at once. */
typedef struct tgi_hmac {
	tgi_sha256    inner;
	unsigned char opad[64];
} tgi_hmac;
void tgi_hmac_init(tgi_hmac *h, const void *key, size_t klen);
void tgi_hmac_update(tgi_hmac *h, const void *data, size_t n);
void tgi_hmac_final(tgi_hmac *h, unsigned char mac[32]);
void tgi_hmac_sha256(const void *key, size_t klen, const void *data, size_t n,
                     unsigned char mac[32]);
/* Compare n bytes in time that depends on n alone: 1 equal, 0 not. */
int  tgi_ct_equal(const void *a, const void *b, size_t n);
void tgi_random_hex(char *out, size_t nbytes); /* writes 2*nbytes hex + NUL */
/* n bytes as 2n lowercase hex digits + NUL into out. */
void tgi_hex(const unsigned char *in, size_t n, char *out);
/* The value of a hex digit (either case), or -1 for any other char. */
int  tgi_hex_value(int c);
/* 2n hex digits at in (either case) into n bytes: 0, or -1 when one is
 * not a hex digit (out then undefined). */
int  tgi_unhex(const char *in, size_t n, unsigned char *out);

/* time */
double  tgi_now_ms(void);        /* monotonic, milliseconds */
/* Timed condition-variable waits, all on tgi_now_ms's clock (CLOCK_MONOTONIC).
 * Every condition variable waited with a timeout is made by tgi_cond_init
 * (a CLOCK_MONOTONIC condattr), and the waits name their clock at each wait
 * (pthread_cond_clockwait), so a deadline and a condition variable cannot
 * disagree on the clock.  Both wait with mu held and give the wait's answer
 * (0, or ETIMEDOUT once the time is up); callers loop on their condition. */
void    tgi_cond_init(pthread_cond_t *cv);
/* Wait on cv for at most ms milliseconds (<= 0: the time is already up). */
int     tgi_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms);
/* Wait on cv until tgi_now_ms() reaches deadline_ms. */
int     tgi_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline_ms);
int64_t tgi_unix_ms(void);       /* wall clock, milliseconds since the epoch */
void    tgi_iso8601(int64_t unix_ms, char out[32]); /* 2026-11-30T03:49:36.123Z */
/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (m 1..12). */
int64_t tgi_days_from_civil(int64_t y, int64_t m, int64_t d);

/* the user */
/* This user's home directory from the user database (not $HOME), looked up
 * once per process, thread-safe; NULL when it has none.  Borrowed. */
const char *tgi_passwd_home(void);

/* JSON */
/* A JSON string from bytes that may not be valid UTF-8: invalid sequences
 * (and NULs) become U+FFFD.  New reference. */
json_t *tgi_json_text(const char *s, size_t n);
/* s as by tgi_json_text, or JSON null when s is NULL or empty.  New reference. */
json_t *tgi_json_str_or_null(const char *s);
/* The bytes of s that tgi_json_text shows as U+FFFD: each byte not part
 * of a valid UTF-8 sequence, and NUL.  *first (may be NULL) gets the
 * offset of the first when there is one. */
size_t tgi_utf8_bad(const char *s, size_t n, size_t *first);
/* Number of UTF-8 code points in s (invalid bytes count one each). */
size_t tgi_utf8_len(const char *s, size_t n);
/* Byte offset of code point index cp in s (n if past the end). */
size_t tgi_utf8_offset(const char *s, size_t n, size_t cp);
/* The UTF-8 sequence at s (n bytes left): its length (1 to 4) with its code
 * point in *cp (when cp is not NULL), or 0 when it is invalid: n is 0, a
 * stray or cut sequence, an overlong form, a surrogate, or past U+10FFFF.
 * A NUL byte is U+0000, length 1. */
size_t tgi_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Canonical text: compact, keys sorted.  Caller frees with free(). */
char *tgi_json_canonical(const json_t *v);
/* Resolve an RFC 6901 pointer ("" is the root).  Borrowed reference or NULL. */
json_t *tgi_json_pointer(json_t *root, const char *ptr);
/* Append ptr + "/" + escaped token into out (cap bytes); truncates safely. */
void tgi_json_pointer_join(char *out, size_t cap, const char *base, const char *token);
/* Copy s into out (cap) with control characters replaced by spaces and
 * the result cut at cap-1 bytes on a UTF-8 boundary. */
void tgi_sanitize(char *out, size_t cap, const char *s);
/* The same for the first bytes of s: at most n, at most max, stopping at a
 * NUL; "..." appended when s went on. */
void tgi_sanitize_n(char *out, size_t cap, const char *s, size_t n, size_t max);

/* strings */
/* n names as "a, b, c" into out (cap bytes): as many as fit, then " and N
 * more"; "none" when n is 0.  For a sentence that lists the valid values. */
const char *tgi_names_join(char *out, size_t cap, const char *const *names, size_t n);
char *tgi_strdup(const char *s);   /* NULL-safe; aborts on OOM */
/* The optimal string alignment distance between a and b (insertions,
 * deletions, substitutions, swaps of two neighbours; ASCII letters
 * compared without case), or SIZE_MAX when either is longer than 256
 * bytes. */
size_t tgi_edit_distance(const char *a, const char *b);
/* Of the n candidates, the one nearest to word (tgi_edit_distance) when
 * it is near enough to be a typo of it (at most a third of word's length,
 * at least 1 edit, fewer than its length), else NULL; the first on a tie.
 * Borrowed from cands. */
const char *tgi_closest(const char *word, const char *const *cands, size_t n);
char *tgi_strndup(const char *s, size_t n); /* n bytes of s (no NUL among them) + NUL */
/* A cancel flag set by one thread and polled by others (atomic, so that
 * ThreadSanitizer agrees).  f may be NULL: never set. */
static inline int  tgi_flag_get(volatile const int *f) { return f && __atomic_load_n(f, __ATOMIC_ACQUIRE); }
static inline void tgi_flag_set(volatile int *f) { __atomic_store_n(f, 1, __ATOMIC_RELEASE); }
/* The flag's value itself (a cancel's reason, toolgate.h TG_CANCEL_SIGNAL); 0 for NULL. */
static inline int  tgi_flag_value(volatile const int *f) { return f ? __atomic_load_n(f, __ATOMIC_ACQUIRE) : 0; }
static inline void tgi_flag_set_to(volatile int *f, int v) { __atomic_store_n(f, v, __ATOMIC_RELEASE); }

void *tgi_xmalloc(size_t n);       /* aborts on OOM */
void *tgi_xcalloc(size_t n, size_t sz);
void *tgi_xrealloc(void *p, size_t n);
/* snprintf into a fixed buffer; never overflows, always terminates. */
void tgi_snprintf(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Set *errmsg (if not NULL) to a new copy of the sentence; returns -1:
 * the public API's error tier (`return tgi_fail(errmsg, ...)`). */
int tgi_fail(char **errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Split an authority, "host", "host:port", "[v6]" or "[v6]:port" (n bytes),
 * into host (brackets dropped, at most cap - 1 bytes, no blanks, controls,
 * '/' or '@') and *port (0 when absent; port may be NULL).  0, or -1 when it
 * is none of these. */
int tgi_split_authority(const char *a, size_t n, char *host, size_t cap, unsigned *port);
/* Is the media type of Content-Type value v (parameters aside, case
 * ignored) type? */
int tgi_media_type_is(const char *v, const char *type);
/* Is host (as split) localhost, 127.0.0.1 or ::1? */
int tgi_loopback_name(const char *host);

#endif
