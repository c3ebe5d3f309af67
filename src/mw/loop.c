/*
 * loop.c — loop detection (mw.h, part.h): a model that repeats itself is told so,
 * then stopped.
 *
 * Every call of a session that ran to an answer goes into the session's
 * window: a signature (sha256 of the tool name, "\n" and the arguments as
 * the model sent them) and an outcome (sha256 of the status, error kind
 * and message, or of the output for a success; timestamps, durations and
 * ids left out, so two answers that differ only in when or under which op
 * they were made are the same answer).  Calls that were told to come
 * back later (pending, transient, rate_limited: anything with
 * retry_after_s) and dry runs are not counted.  Calls without a session
 * are not tracked at all: they come from people and scripts (`toolgate
 * call` by hand, CI jobs), and one window per principal would mix
 * independent agents of one principal (parallel jobs) and block them for
 * one another's calls.
 *
 * Two patterns count, walking back from the newest entry:
 *
 *   repeat     the same signature with the same outcome.  The same
 *              signature with another outcome ends it (the world changed),
 *              and so does a call of another signature that had side
 *              effects and succeeded (reading a file again after writing
 *              it is not a loop, whatever the file holds).
 *   ping-pong  A, B, A, B, ... with no other call between, every A with one
 *              outcome and every B with one outcome, and A or B not
 *              read-only (two reads never trip it).
 *
 * A call's count is the number of times it appears in its pattern, itself
 * included.  Record (before persist): count >= warn adds a hint to the
 * result and an event tool.loop.warning.  Check (admit, after identify,
 * before hooks rewrite the arguments): count >= block denies the call
 * loop_detected, event tool.loop.blocked, and the block goes into the
 * window with the pattern's outcome, so the next try is blocked too.  In
 * observe mode both only leave their event.
 *
 * A window is the last `window` counted calls of the session, in every
 * process: it lives in the ledger (ops.loop, which persist writes from
 * c->loop_entry) and nowhere else, read back at each call's check (and
 * kept in c->loop_window for its record, which counts it again with the
 * call's own entry in front; a call stopped before the check reads it at
 * its record), so `toolgate call` processes, long-lived servers and gates
 * on other hosts that serve one session each see the others' calls as
 * soon as they are persisted.  A window that cannot be read counts as
 * empty (loop detection guides a model; it guards no authority).
 *
 * The window entry as the ledger keeps it, one line:
 *   v1 <sig: 64 hex> <outcome: 64 hex> <flags> <tool>
 * flags: any of r (read-only), w (had side effects and succeeded), b (was
 * blocked), in that order, or "-" for none.
 *
 * Owns: the settings, c->loop_sig, c->loop_entry, c->loop_window (freed by
 * the record, which every call that was checked reaches) and c->hint.
 * Must not: decide permission, look at what a tool did beyond its answer,
 * keep a window of its own between calls, or touch the ledger except to
 * read a window back.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate/gate.h"
#include "mw/mw.h"
#include "mw/part.h"
#include "util/util.h"

#define LOOP_MAX_WINDOW   1000   /* loop_detection.window at most */
#define LOOP_MAX_DEPTH    128    /* JSON nesting the outcome walks; deeper is hashed whole */
#define LOOP_TOOL_MAX     128    /* bytes of a tool name an entry keeps */

enum {
	LE_READ_ONLY = 1u << 0,   /* the call's contract was read-only */
	LE_WROTE     = 1u << 1,   /* it had side effects and succeeded */
	LE_BLOCKED   = 1u << 2,   /* it was a block (its outcome: the pattern's) */
};

typedef struct loop_entry {
	unsigned char sig[32], out[32];
	unsigned      flags;
	const char   *tool;        /* borrowed: the window's rows, or the call's */
} loop_entry;

/* A session's window as one call sees it: e[0] is the call's own place
 * (empty until its record), e[1] the newest entry before it. */
typedef struct tgi_loop_window {
	loop_entry *e;     /* owned */
	size_t      n;     /* with e[0] */
	tgi_strv    rows;  /* the ledger's texts, which the entries' tools point into */
} loop_window;

struct tgi_loop {
	int window, warn, block, observe;
};

/* ---- configuration ---- */

static const char *const loop_modes[] = {"enforce", "observe"};

/* What the section sets: the settings, and whether it is on. */
typedef struct loop_conf {
	int      enabled;
	tgi_loop l;
} loop_conf;

static const tgi_conf_key loop_keys[] = {
	TGI_CONF_BOOL("enabled", loop_conf, enabled, "false: no loop detection"),
	TGI_CONF_INT("window", loop_conf, l.window, 2, LOOP_MAX_WINDOW,
	             "the session's last calls that count"),
	TGI_CONF_INT("warn", loop_conf, l.warn, 2, LOOP_MAX_WINDOW, "a repeat this often: a hint"),
	TGI_CONF_INT("block", loop_conf, l.block, 2, LOOP_MAX_WINDOW, "this often: denied"),
	TGI_CONF_ENUM("mode", loop_conf, l.observe, loop_modes, "observe: events only"),
};

/* lo_key must not exceed hi_key: said at hi_key when the file sets it,
 * else at lo_key (hi_key then has its default). */
static int order(const tgi_config *cfg, const json_t *sec, const char *lo_key, int lo,
                 const char *hi_key, int hi, char *err, size_t errlen)
{
	char ptr[64];
	if (json_object_get(sec, hi_key)) {
		tgi_json_pointer_join(ptr, sizeof ptr, "/loop_detection", hi_key);
		return tgi_config_fail(cfg, ptr, err, errlen, "must be at least %s (%d), got %d",
		                       lo_key, lo, hi);
	}
	tgi_json_pointer_join(ptr, sizeof ptr, "/loop_detection", lo_key);
	return tgi_config_fail(cfg, ptr, err, errlen, "must be at most %s (%d, its default), "
	                       "got %d", hi_key, hi, lo);
}

/* The settings of cfg->loop_detection (absent: the defaults, on).
 * *enabled 0 when the section turns it off. */
static int settings(const tgi_config *cfg, tgi_loop *l, int *enabled, char *err, size_t errlen)
{
	const json_t *sec = cfg->loop_detection;
	tgi_conf_doc d = tgi_config_doc(cfg);
	tgi_conf_ctx x = { &d, err, errlen, NULL };
	loop_conf lc = { .enabled = 1, .l = { .window = 30, .warn = 3, .block = 5, .observe = 0 } };
	if (tgi_conf_section_apply(&x, loop_keys, TGI_ARRAY_LEN(loop_keys), sec, "/loop_detection",
	                           &lc) < 0)
		return -1;
	*l = lc.l;
	*enabled = lc.enabled;
	if (l->block < l->warn)
		return order(cfg, sec, "warn", l->warn, "block", l->block, err, errlen);
	if (l->window < l->block)
		return order(cfg, sec, "block", l->block, "window", l->window, err, errlen);
	return 0;
}

int tgi_loop_new(const tgi_config *cfg, tgi_loop **out, char *err, size_t errlen)
{
	tgi_loop probe;
	int enabled;
	*out = NULL;
	if (settings(cfg, &probe, &enabled, err, errlen) < 0)
		return -1;
	if (!enabled)
		return 0;
	tgi_loop *l = tgi_xcalloc(1, sizeof *l);
	l->window = probe.window;
	l->warn = probe.warn;
	l->block = probe.block;
	l->observe = probe.observe;
	*out = l;
	return 0;
}

void tgi_loop_free(tgi_loop *l)
{
	free(l);
}

/* ---- the outcome: what a call came back with, without its volatile parts ---- */

/* Markers for what was left out: bytes that never occur in UTF-8. */
static const char MARK_TIME[] = "\xfe" "T", MARK_UUID[] = "\xfe" "U", MARK_END[] = "\xff";

static int is_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* n digits at s (s has at least n bytes left: checked by the caller). */
static int digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return 0;
	return 1;
}

/* Length of a UUID (8-4-4-4-12 hex) at s[0..n), or 0. */
static size_t uuid_at(const char *s, size_t n)
{
	static const unsigned char groups[] = {8, 4, 4, 4, 12};
	size_t i = 0;
	if (n < 36)
		return 0;
	for (size_t g = 0; g < TGI_ARRAY_LEN(groups); g++) {
		if (g && s[i++] != '-')
			return 0;
		for (size_t k = 0; k < groups[g]; k++)
			if (!is_hex(s[i++]))
				return 0;
	}
	return 36;
}

/* Length of an ISO-8601 date and time at s[0..n), or 0:
 * YYYY-MM-DD(T| )hh:mm[:ss[(.|,)fraction]][Z|±hh[:]mm|±hh]. */
static size_t timestamp_at(const char *s, size_t n)
{
	size_t i;
	if (n < 16 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
	    !digits(s + 8, 2) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !digits(s + 11, 2) || s[13] != ':' || !digits(s + 14, 2))
		return 0;
	i = 16;
	if (i + 3 <= n && s[i] == ':' && digits(s + i + 1, 2)) {
		i += 3;
		if (i + 1 < n && (s[i] == '.' || s[i] == ',') && is_digit(s[i + 1]))
			for (i++; i < n && is_digit(s[i]); i++)
				;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z'))
		return i + 1;
	if (i + 3 <= n && (s[i] == '+' || s[i] == '-') && digits(s + i + 1, 2)) {
		size_t z = i + 3;
		if (z + 3 <= n && s[z] == ':' && digits(s + z + 1, 2))
			return z + 3;
		if (z + 2 <= n && digits(s + z, 2))
			return z + 2;
		return z;
	}
	return i;
}

/* Hash s[0..n) with every timestamp and UUID in it replaced by a marker. */
static void hash_text(tgi_sha256 *h, const char *s, size_t n)
{
	size_t run = 0, i = 0;
	while (i < n) {
		size_t m = 0;
		const char *mark = NULL;
		if (is_digit(s[i]) && (i == 0 || !is_digit(s[i - 1])) &&
		    (m = timestamp_at(s + i, n - i)))
			mark = MARK_TIME;
		else if (is_hex(s[i]) && (i == 0 || !is_hex(s[i - 1])) && (m = uuid_at(s + i, n - i)))
			mark = MARK_UUID;
		if (!mark) {
			i++;
			continue;
		}
		tgi_sha256_update(h, s + run, i - run);
		tgi_sha256_update(h, mark, 2);
		i += m;
		run = i;
	}
	tgi_sha256_update(h, s + run, n - run);
	tgi_sha256_update(h, MARK_END, 1);
}

static int has_prefix_word(const char *k, const char *p)
{
	size_t n = strlen(p);
	if (strncasecmp(k, p, n))
		return 0;
	/* the word ends there: durationMs, duration_ms, elapsed, not durations_list */
	return !k[n] || k[n] == '_' || k[n] == '-' || (k[n] >= 'A' && k[n] <= 'Z');
}

/* Does the key end in `_sfx` (snake) or `Sfx` after a lower-case letter (camel)? */
static int has_suffix_word(const char *k, const char *sfx)
{
	size_t kn = strlen(k), n = strlen(sfx);
	if (kn <= n + 1)
		return 0;
	const char *t = k + kn - n;
	if ((t[-1] == '_' || t[-1] == '-') && !strcasecmp(t, sfx))
		return 1;
	return t[-1] >= 'a' && t[-1] <= 'z' && t[0] == (sfx[0] & ~0x20) && !strcmp(t + 1, sfx + 1);
}

/*
 * Keys whose values say when, how long or under which id a call ran, not
 * what it found: left out of the outcome.  Compared without case, '_' and
 * '-' (opId, op_id, op-id):
 *   ts time timestamp date datetime now uptime took nonce
 *   opid requestid traceid spanid correlationid callid runid
 * and any key that starts with the word duration or elapsed, or ends in
 * the word at, ms, ts or time (created_at, updatedAt, took_ms, start_time).
 */
static int volatile_key(const char *key)
{
	static const char *const exact[] = {
		"ts", "time", "timestamp", "date", "datetime", "now", "uptime", "took", "nonce",
		"opid", "requestid", "traceid", "spanid", "correlationid", "callid", "runid",
	};
	static const char *const suffixes[] = {"at", "ms", "ts", "time"};
	char folded[32];
	size_t j = 0;
	for (const char *p = key; *p && j + 1 < sizeof folded; p++)
		if (*p != '_' && *p != '-')
			folded[j++] = (char)(*p >= 'A' && *p <= 'Z' ? *p | 0x20 : *p);
	folded[j] = '\0';
	if (strlen(key) < sizeof folded)
		for (size_t i = 0; i < TGI_ARRAY_LEN(exact); i++)
			if (!strcmp(folded, exact[i]))
				return 1;
	if (has_prefix_word(key, "duration") || has_prefix_word(key, "elapsed"))
		return 1;
	for (size_t i = 0; i < TGI_ARRAY_LEN(suffixes); i++)
		if (has_suffix_word(key, suffixes[i]))
			return 1;
	return 0;
}

typedef struct member {
	const char   *key;
	const json_t *val;
} member;

static int cmp_member(const void *a, const void *b)
{
	return strcmp(((const member *)a)->key, ((const member *)b)->key);
}

static void hash_json(tgi_sha256 *h, const json_t *v, int depth);

/* The members in key order, the volatile ones left out. */
static void hash_object(tgi_sha256 *h, const json_t *v, int depth)
{
	size_t n = json_object_size(v), k = 0;
	member *m = tgi_xcalloc(n ? n : 1, sizeof *m);
	const char *key;
	json_t *val;
	json_object_foreach((json_t *)v, key, val)
		if (!volatile_key(key))
			m[k++] = (member){key, val};
	qsort(m, k, sizeof *m, cmp_member);
	tgi_sha256_update(h, "{", 1);
	for (size_t i = 0; i < k; i++) {
		hash_text(h, m[i].key, strlen(m[i].key));
		hash_json(h, m[i].val, depth + 1);
	}
	tgi_sha256_update(h, "}", 1);
	free(m);
}

static void hash_json(tgi_sha256 *h, const json_t *v, int depth)
{
	char num[64];
	if (depth > LOOP_MAX_DEPTH) {
		char *text = tgi_json_canonical(v);
		tgi_sha256_update(h, "~", 1);
		hash_text(h, text, strlen(text));
		free(text);
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		hash_object(h, v, depth);
		return;
	case JSON_ARRAY:
		tgi_sha256_update(h, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++)
			hash_json(h, json_array_get(v, i), depth + 1);
		tgi_sha256_update(h, "]", 1);
		return;
	case JSON_STRING:
		tgi_sha256_update(h, "s", 1);
		hash_text(h, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		tgi_snprintf(num, sizeof num, "i%lld;", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		tgi_snprintf(num, sizeof num, "r%.17g;", json_real_value(v));
		break;
	case JSON_TRUE:
		tgi_snprintf(num, sizeof num, "t");
		break;
	case JSON_FALSE:
		tgi_snprintf(num, sizeof num, "f");
		break;
	default:
		tgi_snprintf(num, sizeof num, "n");
		break;
	}
	tgi_sha256_update(h, num, strlen(num));
}

static int succeeded(tg_status st)
{
	return st == TG_PERSISTED || st == TG_COMMITTED || st == TG_REPLAYED;
}

static void outcome_raw(tg_status st, tg_errkind kind, const char *message, const json_t *output,
                        unsigned char md[32])
{
	tgi_sha256 h;
	tgi_sha256_init(&h);
	if (succeeded(st)) {
		tgi_sha256_update(&h, "ok\n", 3);
		hash_json(&h, output ? output : json_null(), 0);
	} else {
		const char *s = tg_status_name(st), *k = tg_errkind_name(kind);
		const char *m = message ? message : "";
		tgi_sha256_update(&h, s, strlen(s));
		tgi_sha256_update(&h, "\n", 1);
		tgi_sha256_update(&h, k, strlen(k));
		tgi_sha256_update(&h, "\n", 1);
		hash_text(&h, m, strlen(m));
	}
	tgi_sha256_final(&h, md);
}

void tgi_loop_outcome(tg_status st, tg_errkind kind, const char *message, const json_t *output,
                      char out[65])
{
	unsigned char md[32];
	outcome_raw(st, kind, message, output, md);
	tgi_hex(md, sizeof md, out);
}

/* ---- window entries as the ledger keeps them ---- */

static void flags_text(unsigned f, char out[4])
{
	size_t j = 0;
	if (f & LE_READ_ONLY)
		out[j++] = 'r';
	if (f & LE_WROTE)
		out[j++] = 'w';
	if (f & LE_BLOCKED)
		out[j++] = 'b';
	if (!j)
		out[j++] = '-';
	out[j] = '\0';
}

static int flags_parse(const char *s, size_t n, unsigned *out)
{
	static const char order[] = "rwb";
	size_t at = 0;
	*out = 0;
	if (n == 1 && s[0] == '-')
		return 0;
	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *p = memchr(order + at, s[i], sizeof order - 1 - at);
		if (!p)
			return -1; /* unknown, repeated or out of order */
		*out |= 1u << (p - order);
		at = (size_t)(p - order) + 1;
	}
	return 0;
}

static int tool_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > LOOP_TOOL_MAX)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* Parse "v1 SIG OUT FLAGS TOOL" strictly: what entry_text writes and nothing else. */
static int entry_parse(const char *text, unsigned char sig[32], unsigned char out[32],
                       unsigned *flags, const char **tool)
{
	if (strncmp(text, "v1 ", 3))
		return -1;
	static const char lower[] = "0123456789abcdef";   /* as tgi_hex writes them */
	const char *p = text + 3;
	if (strspn(p, lower) != 64 || p[64] != ' ' || strspn(p + 65, lower) != 64 ||
	    p[129] != ' ' || tgi_unhex(p, 32, sig) < 0 || tgi_unhex(p + 65, 32, out) < 0)
		return -1;
	p += 130;
	const char *sp = strchr(p, ' ');
	if (!sp || flags_parse(p, (size_t)(sp - p), flags) < 0 || !tool_ok(sp + 1))
		return -1;
	*tool = sp + 1;
	return 0;
}

int tgi_loop_entry_parse(const char *text, char sig[65], char outcome[65], char flags[4],
                         char tool[129])
{
	unsigned char s[32], o[32];
	unsigned f;
	const char *t;
	if (!text || entry_parse(text, s, o, &f, &t) < 0)
		return -1;
	tgi_hex(s, 32, sig);
	tgi_hex(o, 32, outcome);
	flags_text(f, flags);
	tgi_snprintf(tool, LOOP_TOOL_MAX + 1, "%s", t);
	return 0;
}

/* A tool name fit for an entry and a sentence: no control characters, cut. */
static void clean_tool(const char *tool, char out[LOOP_TOOL_MAX + 1])
{
	tgi_sanitize(out, LOOP_TOOL_MAX + 1, tool);
	if (!out[0])
		tgi_snprintf(out, LOOP_TOOL_MAX + 1, "?");
}

static char *entry_text(const loop_entry *e)
{
	char sig[65], out[65], fl[4];
	tgi_hex(e->sig, 32, sig);
	tgi_hex(e->out, 32, out);
	flags_text(e->flags, fl);
	size_t n = 3 + 65 + 65 + strlen(fl) + 1 + strlen(e->tool) + 1;
	char *s = tgi_xmalloc(n);
	snprintf(s, n, "v1 %s %s %s %s", sig, out, fl, e->tool);
	return s;
}

/* ---- windows ---- */

/*
 * The session's window as the ledger has it now, behind the call's own
 * place: the newest `limit` entries of the session's calls, whichever
 * process made them, newest first.  Entries that do not parse (not ours,
 * or damaged) are left out; a ledger that cannot be read gives none.
 */
static loop_window *window_read(tgi_call *c, size_t limit)
{
	tg_gate *g = c->g;
	loop_window *w = tgi_xcalloc(1, sizeof *w);
	char err[256];
	int rc = 0;
	if (limit)
		rc = tgi_store_loop_window(g->store, c->session, limit, &w->rows, err, sizeof err);
	if (rc < 0)
		tgi_strv_free(&w->rows);
	w->e = tgi_xcalloc(1 + w->rows.n, sizeof *w->e);
	w->n = 1;
	for (size_t i = 0; i < w->rows.n; i++) {
		loop_entry *e = &w->e[w->n];
		if (entry_parse(w->rows.v[i], e->sig, e->out, &e->flags, &e->tool) == 0)
			w->n++;
	}
	return w;
}

static void window_free(loop_window *w)
{
	if (!w)
		return;
	free(w->e);
	tgi_strv_free(&w->rows);
	free(w);
}

/* ---- the patterns ---- */

typedef struct loop_count {
	int           n;          /* times the call appears in its pattern, itself included */
	int           ping_pong;  /* the count is an alternation's */
	char          other[LOOP_TOOL_MAX + 1]; /* the alternation's other tool */
	unsigned char out[32];    /* the pattern's outcome for this signature */
} loop_count;

/*
 * The repeat streak of sig among entries from..w->n-1: entries of sig with
 * one outcome (`out` when given, else the newest one's, copied back),
 * skipping other reads, ended by an entry of sig with another outcome or
 * one of another signature that wrote.
 */
static int repeat_streak(const loop_window *w, size_t from,
                         const unsigned char sig[32], unsigned char out[32], int have_out)
{
	int n = 0;
	for (size_t i = from; i < w->n; i++) {
		const loop_entry *e = &w->e[i];
		if (memcmp(e->sig, sig, 32)) {
			if (e->flags & LE_WROTE)
				break;
			continue;
		}
		if (!have_out) {
			memcpy(out, e->out, 32);
			have_out = 1;
		}
		if (memcmp(e->out, out, 32))
			break;
		n++;
	}
	return n;
}

/*
 * The alternation before the call: entries from, from+1, ... are B, A, B,
 * A, ... (A = sig, B the signature of entry `from`) with one outcome for
 * all the A (out, or the newest A's when !have_out) and one for all the B.
 * Returns how many A it holds (0: no alternation); other gets B's tool.
 * read_only: the call's own contract.
 */
static int alternation(const loop_window *w, size_t from,
                       const unsigned char sig[32], unsigned char out[32], int have_out,
                       int read_only, char other[LOOP_TOOL_MAX + 1])
{
	if (from >= w->n)
		return 0;
	const loop_entry *b = &w->e[from];
	if (!memcmp(b->sig, sig, 32) || (read_only && (b->flags & LE_READ_ONLY)))
		return 0;
	int na = 0;
	for (size_t i = from; i < w->n; i++) {
		const loop_entry *e = &w->e[i];
		if ((i - from) % 2 == 0) {
			if (memcmp(e->sig, b->sig, 32) || memcmp(e->out, b->out, 32))
				break;
			continue;
		}
		if (memcmp(e->sig, sig, 32))
			break;
		if (!have_out) {
			memcpy(out, e->out, 32);
			have_out = 1;
		}
		if (memcmp(e->out, out, 32))
			break;
		na++;
	}
	if (na)
		tgi_snprintf(other, LOOP_TOOL_MAX + 1, "%s", b->tool);
	return na;
}

/*
 * Count the call in its patterns: the entries before it, from w->e[1] on.
 * At check its outcome is not known yet (have_out 0: the pattern's is
 * copied to cnt->out); at record it is given in cnt->out.
 */
static void count(const loop_window *w, const unsigned char sig[32], int have_out,
                  int read_only, loop_count *cnt)
{
	const size_t from = 1;
	unsigned char rep_out[32], alt_out[32];
	memcpy(rep_out, cnt->out, 32);
	memcpy(alt_out, cnt->out, 32);
	int rep = repeat_streak(w, from, sig, rep_out, have_out) + 1;
	int alt = alternation(w, from, sig, alt_out, have_out, read_only, cnt->other) + 1;
	cnt->ping_pong = alt > 1 && alt >= rep;
	cnt->n = cnt->ping_pong ? alt : rep;
	memcpy(cnt->out, cnt->ping_pong ? alt_out : rep_out, 32);
}

/* ---- the steps ---- */

static void signature(tgi_call *c, unsigned char md[32])
{
	tgi_sha256 h;
	const char *args = c->args_canon;
	size_t n = args ? strlen(args) : 0;
	if (!args && c->req && c->req->args) {   /* stopped before validate: what was sent */
		args = c->req->args;
		n = c->req->args_len ? c->req->args_len : strlen(args);
	} else if (!args) {
		args = "{}", n = 2;                   /* no arguments means {} */
	}
	tgi_sha256_init(&h);
	tgi_sha256_update(&h, c->tool, strlen(c->tool));
	tgi_sha256_update(&h, "\n", 1);
	tgi_sha256_update(&h, args, n);
	tgi_sha256_final(&h, md);
	tgi_hex(md, 32, c->loop_sig);
}

/* The call's signature: set once, from the arguments as they arrived. */
static void call_sig(tgi_call *c, unsigned char md[32])
{
	if (!c->loop_sig[0] || tgi_unhex(c->loop_sig, 32, md) < 0)
		signature(c, md);
}

static json_t *event_data(const loop_count *cnt, int limit, int enforced)
{
	json_t *d = json_pack("{s:i, s:i, s:s, s:b}", "count", cnt->n, "limit", limit, "pattern",
	                      cnt->ping_pong ? "ping_pong" : "repeat", "enforced", enforced);
	if (cnt->ping_pong)
		json_object_set_new(d, "with", json_string(cnt->other));
	return d;
}

static void block_call(tgi_call *c, const tgi_loop *l, const loop_count *cnt, const char *tool)
{
	tgi_snprintf(c->error_rule, sizeof c->error_rule, "loop_detection: block %d", l->block);
	tgi_trace(c, "loop", 0, json_pack("{s:i, s:s}", "count", cnt->n, "pattern",
	                                  cnt->ping_pong ? "ping_pong" : "repeat"));
	tgi_event_add(c, "tool.loop.blocked", "loop", event_data(cnt, l->block, 1));
	if (cnt->ping_pong && strcmp(cnt->other, tool))
		tgi_stop(c, TG_DENIED, TG_ERR_LOOP_DETECTED, NULL,
		         "you have alternated between %s and %s %d times with the same results, so "
		         "this call was not run; stop repeating them and try something else",
		         tool, cnt->other, cnt->n);
	else if (cnt->ping_pong)
		tgi_stop(c, TG_DENIED, TG_ERR_LOOP_DETECTED, NULL,
		         "you have alternated between two calls of %s %d times with the same results, "
		         "so this call was not run; stop repeating them and try something else",
		         tool, cnt->n);
	else
		tgi_stop(c, TG_DENIED, TG_ERR_LOOP_DETECTED, NULL,
		         "you have called %s with these arguments %d times with the same result, so "
		         "this call was not run; do not repeat it: change the arguments or try "
		         "something else", tool, cnt->n);
}

static tgi_verdict loop_check(tgi_call *c, void *state)
{
	tgi_loop *l = state;
	unsigned char sig[32];
	char tool[LOOP_TOOL_MAX + 1];
	loop_count cnt = {0};
	if (!c->session[0])           /* not tracked: see the header */
		return TGI_NEXT;
	signature(c, sig);            /* before a hook may rewrite the arguments */
	c->loop_window = window_read(c, (size_t)l->window);
	count(c->loop_window, sig, 0, (c->contract & TGI_T_READ_ONLY) != 0, &cnt);
	int over = cnt.n >= l->block;
	clean_tool(c->tool, tool);
	if (over && !l->observe && !c->dry_run) {
		/* the block counts: it goes in with the pattern's outcome */
		loop_entry e = {.flags = LE_BLOCKED |
		                         ((c->contract & TGI_T_READ_ONLY) ? LE_READ_ONLY : 0),
		                .tool = tool};
		memcpy(e.sig, sig, 32);
		memcpy(e.out, cnt.out, 32);
		c->loop_entry = entry_text(&e);
	}
	if (!over)
		return TGI_NEXT;
	if (l->observe) {
		tgi_event_add(c, "tool.loop.blocked", "loop", event_data(&cnt, l->block, 0));
		return TGI_NEXT;
	}
	block_call(c, l, &cnt, tool);
	return TGI_STOP;
}

/* Calls that do not count: told to come back later, or not really run. */
static int counted(const tgi_call *c)
{
	if (c->dry_run || c->status == TG_DRY_RUN || c->status == TG_PENDING)
		return 0;
	if (c->kind == TG_ERR_TRANSIENT || c->kind == TG_ERR_RATE_LIMITED || c->retry_after_s > 0)
		return 0;
	return c->tool[0] != '\0';
}

static void warn_call(tgi_call *c, const tgi_loop *l, const loop_count *cnt, const char *tool)
{
	char hint[600];
	tgi_event_add(c, "tool.loop.warning", "loop", event_data(cnt, l->warn, !l->observe));
	if (l->observe)
		return;
	if (cnt->ping_pong && strcmp(cnt->other, tool))
		tgi_snprintf(hint, sizeof hint, "you are alternating between %s and %s with the same "
		             "results (%d times); try something else", tool, cnt->other, cnt->n);
	else if (cnt->ping_pong)
		tgi_snprintf(hint, sizeof hint, "you are alternating between two calls of %s with the "
		             "same results (%d times); try something else", tool, cnt->n);
	else
		tgi_snprintf(hint, sizeof hint, "you have called %s with these arguments %d times with "
		             "the same result; try something else", tool, cnt->n);
	free(c->hint);
	c->hint = tgi_strdup(hint);
}

static void loop_record(tgi_call *c, void *state)
{
	tgi_loop *l = state;
	unsigned char sig[32];
	char tool[LOOP_TOOL_MAX + 1];
	loop_count cnt = {0};
	loop_window *w = c->loop_window;    /* the check's, if it ran: freed here */
	c->loop_window = NULL;
	/* not tracked (see the header); a block was recorded when it was made */
	if (!c->session[0] || c->loop_entry || !counted(c)) {
		window_free(w);
		return;
	}
	call_sig(c, sig);
	clean_tool(c->tool, tool);
	int read_only = (c->contract & TGI_T_READ_ONLY) != 0;
	loop_entry e = {.flags = (read_only ? LE_READ_ONLY : 0) |
	                         (!read_only && (c->status == TG_PERSISTED ||
	                                         c->status == TG_COMMITTED) ? LE_WROTE : 0)};
	memcpy(e.sig, sig, 32);
	outcome_raw(c->status, c->kind, c->message, c->output, e.out);
	memcpy(cnt.out, e.out, 32);
	e.tool = tool;
	c->loop_entry = entry_text(&e);
	/* the call in front of the window - 1 calls before it */
	if (!w)
		w = window_read(c, (size_t)l->window - 1);
	else if (w->n > (size_t)l->window)
		w->n = (size_t)l->window;
	w->e[0] = e;
	count(w, sig, 1, read_only, &cnt);
	window_free(w);
	if (cnt.n >= l->warn)
		warn_call(c, l, &cnt, tool);
}

static int loop_open(tg_gate *g, const tg_options *o, void **state, char *err, size_t errlen)
{
	return tgi_loop_new(g->cfg, (tgi_loop **)state, err, errlen);
}

static void loop_close(void *state)
{
	tgi_loop_free(state);
}

const tgi_part tgi_part_loop = {
	.name = "loop", .after = TGI_PHASE_IDENTIFY, .open = loop_open, .close = loop_close,
	.step = loop_check, .before_persist = loop_record,
};
