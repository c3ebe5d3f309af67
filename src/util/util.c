/*
 * util.c — capped buffers, ids (UUIDv7), sha256, time, JSON helpers.
 *
 * Owns: the helpers declared in util.h.  Must not: keep global state
 * beyond what the kernel's random source needs (none).
 */
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>


/* ---- allocation ---- */

static void oom(void)
{
	fputs("toolgate: out of memory\n", stderr);
	abort();
}

void *tgi_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *tgi_xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		oom();
	return p;
}

void *tgi_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

char *tgi_strdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = tgi_xmalloc(n);
	memcpy(p, s, n);
	return p;
}

void tgi_strv_push(tgi_strv *sv, char *s)
{
	sv->v = tgi_xrealloc(sv->v, (sv->n + 2) * sizeof *sv->v);
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void tgi_strv_free(tgi_strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}

char *tgi_strndup(const char *s, size_t n)
{
	char *p = tgi_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void tgi_snprintf(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	if (!cap)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0)
		out[0] = '\0';
}

/* ---- buffers ---- */

void tgi_buf_init(tgi_buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->over = 0;
}

static int buf_reserve(tgi_buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra) {
		b->over = 1;
		return -1;
	}
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	b->p = tgi_xrealloc(b->p, cap);
	b->cap = cap;
	return 0;
}

int tgi_buf_append(tgi_buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int tgi_buf_puts(tgi_buf *b, const char *s)
{
	return tgi_buf_append(b, s, strlen(s));
}

int tgi_buf_printf(tgi_buf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_reserve(b, (size_t)n) < 0) {
		va_end(ap2);
		return -1;
	}
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	b->len += (size_t)n;
	return 0;
}

char *tgi_buf_steal(tgi_buf *b)
{
	char *p = b->p ? b->p : tgi_strdup("");
	b->p = NULL;
	b->len = b->cap = 0;
	b->over = 0;
	return p;
}

void tgi_buf_free(tgi_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->over = 0;
}

/* ---- ids and hashing ---- */

static void fill_random(void *p, size_t n)
{
	unsigned char *c = p;
	while (n) {
		ssize_t r = getrandom(c, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fputs("toolgate: no kernel randomness\n", stderr);
			abort();
		}
		c += r;
		n -= (size_t)r;
	}
}

static const char hexdig[] = "0123456789abcdef";

void tgi_hex(const unsigned char *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexdig[in[i] >> 4];
		out[2 * i + 1] = hexdig[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Each hex digit's value + 1 (0: not one); a table, as loop windows read
 * two digests per entry on every call. */
static const unsigned char hexval1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
	['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
	['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
	['F'] = 16,
};

int tgi_hex_value(int c)
{
	return (int)hexval1[(unsigned char)c] - 1;
}

int tgi_unhex(const char *in, size_t n, unsigned char *out)
{
	const unsigned char *p = (const unsigned char *)in;
	for (size_t i = 0; i < n; i++) {
		unsigned hi = hexval1[p[2 * i]], lo = hexval1[p[2 * i + 1]];
		if (!hi || !lo)
			return -1;
		out[i] = (unsigned char)((hi - 1) << 4 | (lo - 1));
	}
	return 0;
}

/*
 * RFC 9562 UUIDv7: 48-bit unix ms, version 7, 12 bits of rand_a, variant
 * 10, 62 random bits.  rand_a is a counter (RFC 9562 §6.2, method 1) so
 * ids made by one process are strictly increasing even within one
 * millisecond: it starts at a random value below 2^11 each new ms and
 * counts up; if it overflows, the timestamp is borrowed from the next ms.
 */
static pthread_mutex_t uuid_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t uuid_last_ms;
static unsigned uuid_counter;

void tgi_uuidv7(char out[37])
{
	unsigned char u[16];
	uint64_t ms = (uint64_t)tgi_unix_ms();
	unsigned ctr;
	fill_random(u + 6, 10);

	pthread_mutex_lock(&uuid_mu);
	if (ms > uuid_last_ms) {
		uuid_last_ms = ms;
		uuid_counter = ((unsigned)u[6] << 8 | u[7]) & 0x7ff;
	} else if (++uuid_counter > 0xfff) {
		uuid_last_ms++;
		uuid_counter = 0;
	}
	ms = uuid_last_ms;
	ctr = uuid_counter;
	pthread_mutex_unlock(&uuid_mu);

	for (int i = 0; i < 6; i++)
		u[i] = (unsigned char)(ms >> (40 - 8 * i));
	u[6] = (unsigned char)(0x70 | (ctr >> 8));
	u[7] = (unsigned char)(ctr & 0xff);
	u[8] = (unsigned char)(0x80 | (u[8] & 0x3f));
	char h[33];
	tgi_hex(u, 16, h);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

void tgi_sha256_hex(const void *data, size_t n, char out[65])
{
	unsigned char md[32];
	tgi_sha256 s;
	tgi_sha256_init(&s);
	tgi_sha256_update(&s, data, n);
	tgi_sha256_final(&s, md);
	tgi_hex(md, sizeof md, out);
}

void tgi_sha256_lines(const char *const *parts, size_t n, char out[65])
{
	unsigned char md[32];
	tgi_sha256 s;
	tgi_sha256_init(&s);
	for (size_t i = 0; i < n; i++) {
		if (i)
			tgi_sha256_update(&s, "\n", 1);
		tgi_sha256_update(&s, parts[i], strlen(parts[i]));
	}
	tgi_sha256_final(&s, md);
	tgi_hex(md, sizeof md, out);
}

void tgi_random_hex(char *out, size_t nbytes)
{
	unsigned char buf[64];
	if (nbytes > sizeof buf)
		nbytes = sizeof buf;
	fill_random(buf, nbytes);
	tgi_hex(buf, nbytes, out);
}

/* ---- time ---- */

void tgi_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

int tgi_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline_ms)
{
	if (deadline_ms < 0)
		deadline_ms = 0;
	struct timespec ts = {.tv_sec = (time_t)(deadline_ms / 1e3)};
	ts.tv_nsec = (long)((deadline_ms - (double)ts.tv_sec * 1e3) * 1e6);
	if (ts.tv_nsec < 0)
		ts.tv_nsec = 0;
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
	return pthread_cond_clockwait(cv, mu, CLOCK_MONOTONIC, &ts);
#else
	return pthread_cond_timedwait(cv, mu, &ts);   /* cv from tgi_cond_init: CLOCK_MONOTONIC */
#endif
}

int tgi_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
	return tgi_cond_wait_until(cv, mu, tgi_now_ms() + (double)(ms > 0 ? ms : 0));
}

double tgi_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int64_t tgi_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tgi_days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void tgi_iso8601(int64_t unix_ms, char out[32])
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char date[24];
	gmtime_r(&t, &tm);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%.19s.%03uZ", date, (unsigned)(unix_ms % 1000) % 1000u);
}

/* ---- JSON ---- */

char *tgi_json_canonical(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	if (!s)
		oom();
	return s;
}

/* Decode one pointer token (~1 → /, ~0 → ~) into out. */
static int pointer_token(const char *p, size_t n, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '~') {
			if (i + 1 >= n)
				return -1;
			c = p[++i] == '1' ? '/' : p[i] == '0' ? '~' : 0;
			if (!c)
				return -1;
		}
		if (j + 1 >= cap)
			return -1;
		out[j++] = c;
	}
	out[j] = '\0';
	return 0;
}

json_t *tgi_json_pointer(json_t *root, const char *ptr)
{
	char tok[512];
	if (!ptr || !*ptr)
		return root;
	if (*ptr != '/')
		return NULL;
	json_t *cur = root;
	const char *p = ptr + 1;
	for (;;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (pointer_token(p, n, tok, sizeof tok) < 0)
			return NULL;
		if (json_is_object(cur)) {
			cur = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			char *e;
			if (!tok[0] || (tok[0] == '0' && tok[1]))
				return NULL;
			errno = 0;
			unsigned long idx = strtoul(tok, &e, 10);
			if (*e || errno)
				return NULL;
			cur = json_array_get(cur, idx);
		} else {
			return NULL;
		}
		if (!cur || !end)
			return cur;
		p = end + 1;
	}
}

void tgi_json_pointer_join(char *out, size_t cap, const char *base, const char *token)
{
	size_t j = 0;
	if (!cap)
		return;
	for (const char *s = base ? base : ""; *s && j + 1 < cap; s++)
		out[j++] = *s;
	if (j + 1 < cap)
		out[j++] = '/';
	for (const char *s = token; *s && j + 1 < cap; s++) {
		if (*s == '~' || *s == '/') {
			if (j + 2 >= cap)
				break;
			out[j++] = '~';
			out[j++] = *s == '~' ? '0' : '1';
		} else {
			out[j++] = *s;
		}
	}
	out[j] = '\0';
}

static size_t utf8_seq(const unsigned char *s, size_t n);

/* Code points that must not reach a terminal or a model raw: C0 and C1
 * controls, DEL, and the bidirectional overrides/isolates that can make a
 * message read differently from what it says. */
static int unsafe_cp(const unsigned char *p, size_t len)
{
	if (len == 1)
		return p[0] < 0x20 || p[0] == 0x7f;
	if (len == 2)
		return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F;
	if (len == 3 && p[0] == 0xE2 && p[1] == 0x80)
		return p[2] >= 0xAA && p[2] <= 0xAE;               /* U+202A..U+202E */
	if (len == 3 && p[0] == 0xE2 && p[1] == 0x81)
		return p[2] >= 0xA6 && p[2] <= 0xA9;               /* U+2066..U+2069 */
	return 0;
}

static int fold_case(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

size_t tgi_edit_distance(const char *a, const char *b)
{
	enum { MAXLEN = 256 };
	size_t n = strlen(a), m = strlen(b);
	if (n > MAXLEN || m > MAXLEN)
		return SIZE_MAX;
	/* three rows of the table: i-2, i-1, i */
	size_t rows[3][MAXLEN + 1];
	for (size_t j = 0; j <= m; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= n; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i + 2) % 3], *prev2 = rows[(i + 1) % 3];
		cur[0] = i;
		for (size_t j = 1; j <= m; j++) {
			int same = fold_case((unsigned char)a[i - 1]) == fold_case((unsigned char)b[j - 1]);
			size_t d = prev[j - 1] + !same;
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 &&
			    fold_case((unsigned char)a[i - 1]) == fold_case((unsigned char)b[j - 2]) &&
			    fold_case((unsigned char)a[i - 2]) == fold_case((unsigned char)b[j - 1]) &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
	}
	return rows[n % 3][m];
}

const char *tgi_closest(const char *word, const char *const *cands, size_t n)
{
	size_t len = strlen(word), limit = len / 3, best = SIZE_MAX;
	const char *pick = NULL;
	if (limit < 1)
		limit = 1;
	for (size_t i = 0; i < n; i++) {
		if (!cands[i] || !strcmp(cands[i], word))
			continue;
		size_t d = tgi_edit_distance(word, cands[i]);
		if (d <= limit && d < len && d < best) {
			best = d;
			pick = cands[i];
		}
	}
	return pick;
}

void tgi_sanitize(char *out, size_t cap, const char *s)
{
	static const char repl[] = "\xEF\xBF\xBD"; /* U+FFFD for invalid bytes */
	const unsigned char *u = (const unsigned char *)s;
	size_t j = 0, n = s ? strlen(s) : 0;
	if (!cap)
		return;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_seq(u + i, n - i);
		const char *piece = (const char *)u + i;
		size_t plen = len;
		if (!len) {
			piece = repl;
			plen = 3;
			len = 1;
		} else if (unsafe_cp(u + i, len)) {
			piece = " ";
			plen = 1;
		}
		if (j + plen >= cap)
			break; /* whole code points only */
		memcpy(out + j, piece, plen);
		j += plen;
		i += len;
	}
	out[j] = '\0';
}

void tgi_sanitize_n(char *out, size_t cap, const char *s, size_t n, size_t max)
{
	size_t k = 0;
	while (k < n && k < max && s[k])
		k++;
	char *tmp = tgi_strndup(s, k);
	tgi_sanitize(out, cap, tmp);
	free(tmp);
	if (k < n && s[k] && cap && strlen(out) + 4 <= cap)
		strcat(out, "...");
}

const char *tgi_names_join(char *out, size_t cap, const char *const *names, size_t n)
{
	size_t len = 0, shown = 0;
	if (!cap)
		return out;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t need = strlen(names[i]) + (shown ? 2 : 0);
		size_t keep = i + 1 < n ? 24 : 0;   /* room for " and N more" while more follow */
		if (len + need + keep >= cap)
			break;
		len += (size_t)snprintf(out + len, cap - len, "%s%s", shown ? ", " : "", names[i]);
		shown++;
	}
	if (!shown && !n)
		snprintf(out, cap, "none");
	else if (shown < n)
		snprintf(out + len, cap - len, "%s%zu more", shown ? " and " : "", n - shown);
	return out;
}

/* ---- UTF-8 ---- */

size_t tgi_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len;
	uint32_t c;
	if (!n)
		return 0;
	c = u[0];
	if (c < 0x80)
		len = 1;
	else if (c >= 0xC2 && c <= 0xDF)
		len = 2, c &= 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, c &= 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, c &= 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (u[i] & 0x3F);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
	    (len == 4 && (c < 0x10000 || c > 0x10FFFF)))
		return 0;
	if (cp)
		*cp = c;
	return len;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	return tgi_utf8_decode((const char *)s, n, NULL);
}

size_t tgi_utf8_bad(const char *s, size_t n, size_t *first)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t bad = 0;
	for (size_t i = 0; i < n;) {
		size_t l = u[i] ? utf8_seq(u + i, n - i) : 0;
		if (!l && !bad++ && first)
			*first = i;
		i += l ? l : 1;
	}
	return bad;
}

json_t *tgi_json_text(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	if (!tgi_utf8_bad(s, n, &i))
		return json_stringn_nocheck(s, n);
	tgi_buf b;
	tgi_buf_init(&b, SIZE_MAX / 2);
	tgi_buf_append(&b, s, i);
	while (i < n) {
		size_t l = u[i] ? utf8_seq(u + i, n - i) : 0;
		if (l) {
			tgi_buf_append(&b, s + i, l);
			i += l;
		} else {
			tgi_buf_append(&b, "\xEF\xBF\xBD", 3);
			i++;
		}
	}
	json_t *j = json_stringn_nocheck(b.p ? b.p : "", b.len);
	tgi_buf_free(&b);
	return j;
}

json_t *tgi_json_str_or_null(const char *s)
{
	return s && *s ? tgi_json_text(s, strlen(s)) : json_null();
}

size_t tgi_utf8_len(const char *s, size_t n)
{
	size_t cps = 0;
	for (size_t i = 0; i < n; cps++) {
		size_t l = utf8_seq((const unsigned char *)s + i, n - i);
		i += l ? l : 1;
	}
	return cps;
}

size_t tgi_utf8_offset(const char *s, size_t n, size_t cp)
{
	size_t i = 0;
	while (i < n && cp--) {
		size_t l = utf8_seq((const unsigned char *)s + i, n - i);
		i += l ? l : 1;
	}
	return i;
}

const char *tgi_json_describe(const json_t *v, char *out, size_t cap)
{
	char s[52];
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		tgi_snprintf(out, cap, json_object_size(v) ? "a mapping" : "an empty mapping");
		break;
	case JSON_ARRAY:
		tgi_snprintf(out, cap, json_array_size(v) ? "a list" : "an empty list");
		break;
	case JSON_INTEGER: tgi_snprintf(out, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
	case JSON_REAL:    tgi_snprintf(out, cap, "%g", json_real_value(v)); break;
	case JSON_TRUE:    tgi_snprintf(out, cap, "true"); break;
	case JSON_FALSE:   tgi_snprintf(out, cap, "false"); break;
	case JSON_NULL:    tgi_snprintf(out, cap, "null (an empty value)"); break;
	case JSON_STRING:
		tgi_sanitize(s, sizeof s, json_string_value(v));
		tgi_snprintf(out, cap, "\"%s%s\"", s,
		             json_string_length(v) >= sizeof s ? "..." : "");
		break;
	}
	return out;
}

/* ---- URL authorities ---- */

int tgi_split_authority(const char *a, size_t n, char *host, size_t cap, unsigned *port)
{
	const char *h = a, *p = NULL;
	size_t hl;
	if (n && a[0] == '[') {
		const char *end = memchr(a, ']', n);
		if (!end)
			return -1;
		h = a + 1;
		hl = (size_t)(end - h);
		if (end + 1 < a + n) {
			if (end[1] != ':')
				return -1;
			p = end + 2;
		}
	} else {
		const char *colon = memchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
		p = colon ? colon + 1 : NULL;
	}
	if (hl == 0 || hl >= cap)
		return -1;
	unsigned v = 0;
	if (p) {
		size_t pl = (size_t)(a + n - p);
		if (pl == 0 || pl > 5)
			return -1;
		for (size_t i = 0; i < pl; i++) {
			if (p[i] < '0' || p[i] > '9')
				return -1;
			v = v * 10 + (unsigned)(p[i] - '0');
		}
		if (v > 65535)
			return -1;
	}
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)h[i] <= ' ' || h[i] == '/' || h[i] == '@' || h[i] == 0x7f)
			return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (port)
		*port = v;
	return 0;
}

int tgi_loopback_name(const char *host)
{
	return !strcasecmp(host, "localhost") || !strcmp(host, "127.0.0.1") || !strcmp(host, "::1");
}

int tgi_media_type_is(const char *v, const char *type)
{
	v += strspn(v, " \t");
	size_t n = strcspn(v, ";");
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == strlen(type) && !strncasecmp(v, type, n);
}

/* The passwd entry's home does not change while the process runs: looked
 * up once (getpwuid_r reads /etc/passwd, far too slow for every call, and
 * getpwuid is not thread-safe). */
static pthread_once_t pw_once = PTHREAD_ONCE_INIT;
static char pw_home[PATH_MAX];

static void pw_home_lookup(void)
{
	struct passwd pw, *res = NULL;
	size_t size = 4096;

	for (;;) {
		char *buf = tgi_xmalloc(size);
		int rc = getpwuid_r(getuid(), &pw, buf, size, &res);
		if (rc == 0 && res && res->pw_dir && strlen(res->pw_dir) < sizeof pw_home)
			memcpy(pw_home, res->pw_dir, strlen(res->pw_dir) + 1);
		free(buf);
		if (rc != ERANGE || size >= (1u << 20))
			break;
		size *= 2;
	}
}

const char *tgi_passwd_home(void)
{
	pthread_once(&pw_once, pw_home_lookup);
	return pw_home[0] ? pw_home : NULL;
}

int tgi_fail(char **errmsg, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (errmsg)
		*errmsg = tgi_strdup(buf);
	return -1;
}
