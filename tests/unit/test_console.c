/*
 * test_console.c — the console's server core without a socket (console.h):
 * the router (every route, the ids each checks, methods, percent-decoding,
 * '+' in queries and forms, UTF-8, NULs, bounds, hostile targets), the
 * form parser, auth (the token, one-use login codes and their 10 minutes,
 * sessions signed with the token: 12 hours, tampering, another token, a
 * restart with the same token, the cookie header's shapes; CSRF; codes
 * spent from many threads at once), the `console:` config section, and
 * the live stream on a real gate (tgc_live_row and tgc_stream_*).
 *
 * Owns: its temporary workspace.  Must not: listen on the network.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "console/console.h"

#define UUID  "01a22d50-ec7e-7476-b51b-62450d5758e3"
#define UUIDU "01A22D50-EC7E-7476-B51B-62450D5758E3"

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int is_hex64(const char *s)
{
	return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* ---- routing ---- */

typedef struct route_case {
	const char *method, *target;
	int         rc;           /* 0, -1 (400), -2 (405) */
	tgc_route   route;
	const char *arg;          /* NULL: none */
	int         approve;
} route_case;

static const route_case routes[] = {
	{"GET", "/", 0, TGC_ROOT, NULL, 0},
	{"HEAD", "/", 0, TGC_ROOT, NULL, 0},
	{"GET", "/login", 0, TGC_LOGIN, NULL, 0},
	{"POST", "/login", 0, TGC_LOGIN, NULL, 0},
	{"GET", "/live", 0, TGC_LIVE, NULL, 0},
	{"GET", "/events", 0, TGC_EVENTS, NULL, 0},
	{"GET", "/approvals", 0, TGC_APPROVALS, NULL, 0},
	{"GET", "/stats?window=day", 0, TGC_STATS, NULL, 0},
	{"GET", "/sessions", 0, TGC_SESSIONS, NULL, 0},
	{"POST", "/approvals/" UUID "/approve", 0, TGC_DECIDE, UUID, 1},
	{"POST", "/approvals/" UUIDU "/deny", 0, TGC_DECIDE, UUID, 0},
	{"GET", "/calls/" UUID, 0, TGC_CALL, UUID, 0},
	{"GET", "/spill/" UUIDU, 0, TGC_SPILL, UUID, 0},
	{"GET", "/sessions/agent-1", 0, TGC_SESSION, "agent-1", 0},
	{"GET", "/sessions/a%2Fb%20c", 0, TGC_SESSION, "a/b c", 0},
	{"GET", "/sessions/a+b", 0, TGC_SESSION, "a+b", 0},        /* '+' is itself in a path */
	{"GET", "/sessions/%C3%A9t%C3%A9", 0, TGC_SESSION, "\xc3\xa9t\xc3\xa9", 0},
	{"GET", "/static/console.css", 0, TGC_ASSET, "console.css", 0},
	{"GET", "/static/console.js", 0, TGC_ASSET, "console.js", 0},
	/* no such page: 404 */
	{"GET", "/static/other.js", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/static/..%2Fconsole.js", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/nope", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live/", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "//live", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/calls", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/a/b/c/d/e/f", 0, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/approvals/" UUID "/maybe", 0, TGC_NOT_FOUND, NULL, 0},
	/* methods: 405 */
	{"GET", "/approvals/" UUID "/approve", -2, TGC_DECIDE, UUID, 1},
	{"POST", "/live", -2, TGC_LIVE, NULL, 0},
	{"POST", "/", -2, TGC_ROOT, NULL, 0},
	{"PUT", "/live", -2, TGC_LIVE, NULL, 0},
	{"DELETE", "/approvals/" UUID "/deny", -2, TGC_DECIDE, UUID, 0},
	{"BREW", "/nope", -2, TGC_NOT_FOUND, NULL, 0},
	{"get", "/live", -2, TGC_LIVE, NULL, 0},
	/* ids that are not what the route names: 400 */
	{"GET", "/calls/xyz", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/calls/" UUID "0", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/calls/01a22d50_ec7e-7476-b51b-62450d5758e3", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/spill/..%2F..%2Fetc%2Fpasswd", -1, TGC_NOT_FOUND, NULL, 0},
	{"POST", "/approvals/1/approve", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/sessions/a%0Ab", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/sessions/a%7Fb", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/sessions/a%C2%85b", -1, TGC_NOT_FOUND, NULL, 0},   /* U+0085, a C1 control */
	{"GET", "/sessions/", -1, TGC_NOT_FOUND, NULL, 0},
	/* targets that are not one: 400 */
	{"GET", "live", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "http://evil.example/live", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=a b", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live\t", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live#x", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=%zz", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=%4", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=%", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=a%00b", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/live?tool=%C3%28", -1, TGC_NOT_FOUND, NULL, 0},         /* a cut sequence */
	{"GET", "/live?tool=%C0%AF", -1, TGC_NOT_FOUND, NULL, 0},         /* overlong '/' */
	{"GET", "/live?tool=%ED%A0%80", -1, TGC_NOT_FOUND, NULL, 0},      /* a surrogate */
	{"GET", "/live?tool=%F4%90%80%80", -1, TGC_NOT_FOUND, NULL, 0},   /* past U+10FFFF */
	{"GET", "/live?tool=%FF", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/calls/%00", -1, TGC_NOT_FOUND, NULL, 0},
	{"GET", "/sess%FFions", -1, TGC_NOT_FOUND, NULL, 0},
	/* a bad target is 400 before a bad method is 405 */
	{"PUT", "/live?x=%zz", -1, TGC_NOT_FOUND, NULL, 0},
};

static void test_routes(void **state)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const route_case *c = &routes[i];
		tgc_request r;
		char err[256] = "";
		int rc = tgc_route_parse(c->method, c->target, &r, err, sizeof err);
		if (rc != c->rc || r.route != c->route)
			fail_msg("%s %s: rc %d route %d, want rc %d route %d (%s)", c->method, c->target,
			         rc, r.route, c->rc, c->route, err);
		if (c->arg)
			assert_string_equal(r.arg, c->arg);
		else
			assert_null(r.arg);
		if (c->route == TGC_DECIDE)
			assert_int_equal(r.approve, c->approve);
		assert_int_equal(r.post, !strcmp(c->method, "POST"));
		if (rc == -1) {
			/* a printable sentence, naming what was wrong */
			assert_true(strlen(err) > 10);
			assert_true(printable(err));
			assert_int_equal(r.query.n, 0);
		}
		tgc_request_free(&r);
		tgc_request_free(&r);   /* twice: nothing left to free */
	}
}

static void test_query(void **state)
{
	tgc_request r;
	char err[256];
	assert_int_equal(tgc_route_parse("GET", "/live?tool=read_file&status=denied&session=a+b%2Bc"
	                                 "&&=skipped&principal&x=1&x=2&%C3%A9=%E2%9C%93", &r, err,
	                                 sizeof err), 0);
	assert_int_equal(r.route, TGC_LIVE);
	assert_int_equal(r.query.n, 7);
	assert_string_equal(tgc_param_get(&r.query, "tool"), "read_file");
	assert_string_equal(tgc_param_get(&r.query, "status"), "denied");
	assert_string_equal(tgc_param_get(&r.query, "session"), "a b+c");
	assert_string_equal(tgc_param_get(&r.query, "principal"), "");
	assert_string_equal(tgc_param_get(&r.query, "x"), "1");       /* the first one */
	assert_string_equal(tgc_param_get(&r.query, "\xc3\xa9"), "\xe2\x9c\x93");
	assert_null(tgc_param_get(&r.query, "missing"));
	assert_null(tgc_param_get(&r.query, ""));
	assert_null(tgc_param_get(&r.query, NULL));
	assert_null(tgc_param_get(NULL, "tool"));
	tgc_request_free(&r);

	/* an empty query, a lone '?' */
	assert_int_equal(tgc_route_parse("GET", "/live?", &r, err, sizeof err), 0);
	assert_int_equal(r.query.n, 0);
	tgc_request_free(&r);
}

static void test_bounds(void **state)
{
	tgc_request r;
	char err[256];
	char *t = malloc(16384);

	/* 16 parameters are fine, 17 are not */
	strcpy(t, "/live?");
	for (int i = 0; i < 16; i++)
		sprintf(t + strlen(t), "p%d=%d&", i, i);
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), 0);
	assert_int_equal(r.query.n, 16);
	tgc_request_free(&r);
	strcat(t, "p16=16");
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "more than 16 parameters"));
	assert_int_equal(r.query.n, 0);
	tgc_request_free(&r);

	/* a decoded value of TGC_MAX_VALUE bytes is fine, one more is not */
	strcpy(t, "/live?tool=");
	memset(t + strlen(t), 'a', TGC_MAX_VALUE);
	t[11 + TGC_MAX_VALUE] = '\0';
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), 0);
	assert_int_equal(strlen(tgc_param_get(&r.query, "tool")), TGC_MAX_VALUE);
	tgc_request_free(&r);
	strcat(t, "a");
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), -1);
	assert_true(printable(err));
	assert_true(strlen(err) < 200);   /* the value is cut when echoed */
	tgc_request_free(&r);

	/* a target over 8 KiB */
	strcpy(t, "/live?tool=");
	memset(t + strlen(t), 'b', 9000);
	t[11 + 9000] = '\0';
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "longer than"));
	tgc_request_free(&r);

	/* a session id of 200 bytes is one, 201 is not */
	strcpy(t, "/sessions/");
	memset(t + 10, 's', 200);
	t[210] = '\0';
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), 0);
	assert_int_equal(r.route, TGC_SESSION);
	assert_int_equal(strlen(r.arg), 200);
	tgc_request_free(&r);
	strcat(t, "s");
	assert_int_equal(tgc_route_parse("GET", t, &r, err, sizeof err), -1);
	tgc_request_free(&r);

	/* NULLs are refused, not followed */
	assert_int_equal(tgc_route_parse("GET", NULL, &r, err, sizeof err), -1);
	tgc_request_free(&r);
	assert_int_equal(tgc_route_parse(NULL, "/live", &r, err, sizeof err), -1);
	tgc_request_free(&r);
	free(t);
}

static void test_form(void **state)
{
	tgc_params f;
	char err[256];
	memset(&f, 0, sizeof f);
	const char body[] = "csrf=abc&reason=no+way%21+%E2%80%94+not+now&token=x%3Dy";
	assert_int_equal(tgc_form_parse(body, strlen(body), &f, err, sizeof err), 0);
	assert_int_equal(f.n, 3);
	assert_string_equal(tgc_param_get(&f, "reason"), "no way! \xe2\x80\x94 not now");
	assert_string_equal(tgc_param_get(&f, "token"), "x=y");

	/* a second parse replaces what the first gave */
	assert_int_equal(tgc_form_parse("a=1", 3, &f, err, sizeof err), 0);
	assert_int_equal(f.n, 1);
	assert_null(tgc_param_get(&f, "csrf"));

	/* only len bytes are read: the rest is not the form's */
	assert_int_equal(tgc_form_parse("a=1&b=2", 3, &f, err, sizeof err), 0);
	assert_int_equal(f.n, 1);
	assert_null(tgc_param_get(&f, "b"));

	/* an empty body, or none */
	assert_int_equal(tgc_form_parse("", 0, &f, err, sizeof err), 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(tgc_form_parse(NULL, 0, &f, err, sizeof err), 0);
	assert_int_equal(f.n, 0);

	/* a raw NUL, a bad escape, text that is not UTF-8: refused, nothing kept */
	assert_int_equal(tgc_form_parse("a=1&b=x\0y", 9, &f, err, sizeof err), -1);
	assert_non_null(strstr(err, "NUL"));
	assert_int_equal(f.n, 0);
	assert_int_equal(tgc_form_parse("a=1&b=%G1", 9, &f, err, sizeof err), -1);
	assert_int_equal(f.n, 0);
	assert_int_equal(tgc_form_parse("reason=%C3", 10, &f, err, sizeof err), -1);
	assert_non_null(strstr(err, "UTF-8"));
	assert_true(printable(err));
	assert_int_equal(f.n, 0);

	/* a control character is text (a reason may hold a line break) */
	assert_int_equal(tgc_form_parse("reason=a%0Ab", 12, &f, err, sizeof err), 0);
	assert_string_equal(tgc_param_get(&f, "reason"), "a\nb");

	/* the form goes into a request and is freed with it */
	tgc_request r;
	assert_int_equal(tgc_route_parse("POST", "/approvals/" UUID "/deny", &r, err, sizeof err), 0);
	assert_int_equal(tgc_form_parse("csrf=c&reason=r", 15, &r.form, err, sizeof err), 0);
	assert_string_equal(tgc_param_get(&r.form, "csrf"), "c");
	tgc_request_free(&r);
	tgc_request_free(NULL);
	for (size_t i = 0; i < f.n; i++) {
		free(f.v[i].name);
		free(f.v[i].value);
	}
}

/* ---- auth ---- */

static int64_t fake_now = 1800000000000LL;
static int64_t fake_clock(void)
{
	return fake_now;
}

static void test_auth_token(void **state)
{
	char sid[65];
	tgc_auth *a = tgc_auth_new("a-long-enough-secret-token");
	assert_string_equal(tgc_auth_token(a), "a-long-enough-secret-token");
	assert_int_equal(tgc_auth_login_token(a, "a-long-enough-secret-token", sid), 1);
	assert_true(is_hex64(sid));
	assert_int_equal(tgc_auth_login_token(a, "a-long-enough-secret-toke", sid), 0);
	assert_int_equal(tgc_auth_login_token(a, "a-long-enough-secret-tokenX", sid), 0);
	assert_int_equal(tgc_auth_login_token(a, "", sid), 0);
	assert_int_equal(tgc_auth_login_token(a, NULL, sid), 0);
	tgc_auth_free(a);

	/* a random token: 32 bytes in hex, another each time */
	tgc_auth *b = tgc_auth_new(NULL), *c = tgc_auth_new("");
	assert_true(is_hex64(tgc_auth_token(b)));
	assert_true(is_hex64(tgc_auth_token(c)));
	assert_string_not_equal(tgc_auth_token(b), tgc_auth_token(c));
	assert_int_equal(tgc_auth_login_token(b, tgc_auth_token(b), sid), 1);
	assert_int_equal(tgc_auth_login_token(b, tgc_auth_token(c), sid), 0);
	tgc_auth_free(b);
	tgc_auth_free(c);
	tgc_auth_free(NULL);
}

static void test_auth_codes(void **state)
{
	char sid[65], code[65], first[65];
	tgc_auth *a = tgc_auth_new(NULL);
	tgc_auth_clock(a, fake_clock);

	strcpy(code, tgc_auth_code(a));
	assert_true(is_hex64(code));
	assert_string_not_equal(code, tgc_auth_token(a));
	assert_int_equal(tgc_auth_login_code(a, "0000", sid), 0);
	assert_int_equal(tgc_auth_login_code(a, NULL, sid), 0);
	assert_int_equal(tgc_auth_login_code(a, tgc_auth_token(a), sid), 0);  /* not a code */
	assert_int_equal(tgc_auth_login_code(a, code, sid), 1);
	assert_true(is_hex64(sid));
	/* one use */
	assert_int_equal(tgc_auth_login_code(a, code, sid), 0);

	/* ten minutes */
	strcpy(code, tgc_auth_code(a));
	fake_now += 10 * 60 * 1000 - 1;
	assert_int_equal(tgc_auth_login_code(a, code, sid), 1);
	strcpy(code, tgc_auth_code(a));
	fake_now += 10 * 60 * 1000;
	assert_int_equal(tgc_auth_login_code(a, code, sid), 0);

	/* sixteen out at once: a seventeenth drops the oldest */
	strcpy(first, tgc_auth_code(a));
	for (int i = 0; i < 15; i++)
		tgc_auth_code(a);
	strcpy(code, tgc_auth_code(a));
	assert_int_equal(tgc_auth_login_code(a, first, sid), 0);
	assert_int_equal(tgc_auth_login_code(a, code, sid), 1);
	tgc_auth_free(a);
}

static void test_auth_sessions(void **state)
{
	char sid[65], sid2[65], csrf[65], csrf2[65], cookie[256];
	fake_now = 1800000000000LL;
	tgc_auth *a = tgc_auth_new("the-token-of-this-console");
	tgc_auth_clock(a, fake_clock);
	assert_int_equal(tgc_auth_login_token(a, "the-token-of-this-console", sid), 1);
	assert_int_equal(tgc_auth_login_token(a, "the-token-of-this-console", sid2), 1);
	assert_string_not_equal(sid, sid2);

	snprintf(cookie, sizeof cookie, "tgc_session=%s", sid);
	assert_int_equal(tgc_auth_session(a, cookie, csrf), 1);
	assert_true(is_hex64(csrf));
	/* the same session has the same CSRF token; another has its own */
	snprintf(cookie, sizeof cookie, "theme=dark; tgc_session=%s; other=1", sid);
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 1);
	assert_string_equal(csrf, csrf2);
	snprintf(cookie, sizeof cookie, "tgc_session=%s", sid2);
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 1);
	assert_string_not_equal(csrf, csrf2);
	assert_string_not_equal(csrf, sid);

	/* a tampered id, each half */
	for (int at = 0; at < 64; at += 21) {
		char bad[65];
		strcpy(bad, sid);
		bad[at] = bad[at] == '0' ? '1' : '0';
		snprintf(cookie, sizeof cookie, "tgc_session=%s", bad);
		assert_int_equal(tgc_auth_session(a, cookie, csrf2), 0);
	}
	/* shapes that are not a session */
	const char *const junk[] = {
		NULL, "", "tgc_session=", "tgc_session", "tgc_session=zz", "xtgc_session=",
		"tgc_sessionx=1", ";;;", "tgc_session=" "0000000000000000000000000000000000000000000000"
		"000000000000000000",
	};
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
		assert_int_equal(tgc_auth_session(a, junk[i], csrf2), 0);
	/* upper-case hex is not what we gave */
	char upper[65];
	for (int i = 0; i < 65; i++)
		upper[i] = (char)(sid[i] >= 'a' && sid[i] <= 'f' ? sid[i] - 32 : sid[i]);
	snprintf(cookie, sizeof cookie, "tgc_session=%s", upper);
	if (strcmp(upper, sid))
		assert_int_equal(tgc_auth_session(a, cookie, csrf2), 0);
	/* quoted, spaced, and a bad one before the good one */
	snprintf(cookie, sizeof cookie, "tgc_session=bad; tgc_session = \"%s\" ", sid);
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 1);
	assert_string_equal(csrf, csrf2);

	/* another token knows none of them; the same token (a restart) does */
	tgc_auth *other = tgc_auth_new("another-token-entirely!!");
	tgc_auth *again = tgc_auth_new("the-token-of-this-console");
	tgc_auth_clock(other, fake_clock);
	tgc_auth_clock(again, fake_clock);
	snprintf(cookie, sizeof cookie, "tgc_session=%s", sid);
	assert_int_equal(tgc_auth_session(other, cookie, csrf2), 0);
	assert_int_equal(tgc_auth_session(again, cookie, csrf2), 1);
	assert_string_equal(csrf, csrf2);

	/* twelve hours */
	fake_now += 12LL * 3600 * 1000 - 1;
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 1);
	fake_now += 1;
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 0);
	/* a session issued well ahead of the clock is not one */
	fake_now -= 12LL * 3600 * 1000 + 5 * 60 * 1000;
	assert_int_equal(tgc_auth_session(a, cookie, csrf2), 0);
	tgc_auth_free(other);
	tgc_auth_free(again);
	tgc_auth_free(a);
}

static void test_csrf(void **state)
{
	const char *t = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	assert_int_equal(tgc_auth_csrf_ok(t, t), 1);
	char copy[65];
	strcpy(copy, t);
	assert_int_equal(tgc_auth_csrf_ok(t, copy), 1);
	copy[63] = '0';
	assert_int_equal(tgc_auth_csrf_ok(t, copy), 0);
	copy[63] = '\0';
	assert_int_equal(tgc_auth_csrf_ok(t, copy), 0);           /* a prefix */
	assert_int_equal(tgc_auth_csrf_ok(t, ""), 0);
	assert_int_equal(tgc_auth_csrf_ok(t, NULL), 0);
	assert_int_equal(tgc_auth_csrf_ok(NULL, t), 0);
	assert_int_equal(tgc_auth_csrf_ok("", ""), 0);            /* no session: nothing matches */
	char longer[80];
	snprintf(longer, sizeof longer, "%sff", t);
	assert_int_equal(tgc_auth_csrf_ok(t, longer), 0);
}

/* Many threads race to spend the same codes: each is spent once. */
#define RACERS 8
#define CODES  16
static char race_codes[CODES][65];
static int race_wins[RACERS];
static tgc_auth *race_auth;

static void *racer(void *arg)
{
	tgc_auth *a = race_auth;
	int me = (int)(intptr_t)arg;
	char sid[65], csrf[65], cookie[96];
	for (int i = 0; i < CODES; i++)
		if (tgc_auth_login_code(a, race_codes[i], sid)) {
			race_wins[me]++;
			snprintf(cookie, sizeof cookie, "tgc_session=%s", sid);
			assert_int_equal(tgc_auth_session(a, cookie, csrf), 1);
		}
	return NULL;
}

static void test_auth_threads(void **state)
{
	tgc_auth *a = race_auth = tgc_auth_new(NULL);
	for (int i = 0; i < CODES; i++)
		strcpy(race_codes[i], tgc_auth_code(a));
	pthread_t th[RACERS];
	for (int i = 0; i < RACERS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i), 0);
	int total = 0;
	for (int i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		total += race_wins[i];
	}
	assert_int_equal(total, CODES);
	tgc_auth_free(a);
}

/* ---- the console: section ---- */

static int load(const char *json, tgi_config **c, char *err, size_t errlen)
{
	json_t *root = json_loads(json, 0, NULL);
	assert_non_null(root);
	return tgi_config_from_json(root, NULL, "inline.yaml", "/tmp", c, err, errlen);
}

static void test_config(void **state)
{
	tgi_config *c;
	char err[512];
	assert_int_equal(load("{}", &c, err, sizeof err), 0);
	assert_null(c->console_listen);
	assert_null(c->console_token_env);
	tgi_config_free(c);

	assert_int_equal(load("{\"console\": {\"listen\": \"127.0.0.1:9000\", \"token_env\": "
	                      "\"TG_CONSOLE_TOKEN\"}}", &c, err, sizeof err), 0);
	assert_string_equal(c->console_listen, "127.0.0.1:9000");
	assert_string_equal(c->console_token_env, "TG_CONSOLE_TOKEN");
	tgi_config_free(c);
	assert_int_equal(load("{\"console\": {\"listen\": \"[::1]:0\"}}", &c, err, sizeof err), 0);
	tgi_config_free(c);
	assert_int_equal(load("{\"console\": null}", &c, err, sizeof err), 0);
	tgi_config_free(c);

	static const struct {
		const char *json, *says;
	} bad[] = {
		{"{\"console\": {\"port\": 80}}", "unknown key \"port\""},
		{"{\"console\": [1]}", "console: expected a mapping"},
		{"{\"console\": {\"listen\": \"localhost\"}}", "HOST:PORT"},
		{"{\"console\": {\"listen\": \"127.0.0.1:99999\"}}", "HOST:PORT"},
		{"{\"console\": {\"listen\": \"::1:80\"}}", "HOST:PORT"},
		{"{\"console\": {\"listen\": \":80\"}}", "HOST:PORT"},
		{"{\"console\": {\"listen\": 8760}}", "console.listen: expected a string"},
		{"{\"console\": {\"token_env\": \"1BAD\"}}", "environment variable name"},
		{"{\"console\": {\"token_env\": \"\"}}", "console.token_env"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (load(bad[i].json, &c, err, sizeof err) != -1 || !strstr(err, bad[i].says))
			fail_msg("%s: want an error saying '%s', got '%s'", bad[i].json, bad[i].says, err);
	}
}

/* ---- the live stream on a real gate ---- */

static char ws[64];

static tg_gate *open_gate(void)
{
	strcpy(ws, "/tmp/tg-console.XXXXXX");
	assert_non_null(mkdtemp(ws));
	char p[128];
	snprintf(p, sizeof p, "%s/hello.txt", ws);
	FILE *f = fopen(p, "w");
	fputs("hello\n", f);
	fclose(f);
	unsetenv("TOOLGATE_CONFIG");
	unsetenv("TOOLGATE_STORE");
	unsetenv("TOOLGATE_PRINCIPAL");
	unsetenv("TOOLGATE_TOKEN");
	tg_options o = {.workspace = ws, .sync_full = 0};
	tg_gate *g = NULL;
	char *err = NULL;
	if (tg_gate_open(&o, &g, &err))
		fail_msg("open: %s", err);
	return g;
}

static void close_gate(tg_gate *g)
{
	char cmd[128];
	tg_gate_close(g);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", ws);
	assert_int_equal(system(cmd), 0);
}

static void call(tg_gate *g, const char *tool, const char *args, const char *session,
                 char op_id[37])
{
	tg_request req = {.tool = tool, .args = args, .session = session};
	tg_result *res = NULL;
	tg_call(g, &req, &res);
	snprintf(op_id, 37, "%s", tg_result_op_id(res));
	tg_result_free(res);
}

typedef struct lines {
	json_t *all;      /* the event lines */
	size_t  want;     /* stop after this many */
} lines;

static int collect(void *arg, const char *line)
{
	lines *l = arg;
	json_array_append_new(l->all, json_string(line));
	return json_array_size(l->all) >= l->want;
}

static void test_live_row(void **state)
{
	tg_gate *g = open_gate();
	char ok[37], bad[37];
	call(g, "read_file", "{\"path\":\"hello.txt\"}", "s-1", ok);
	call(g, "read_file", "{\"path\":\"../outside\"}", "s-2", bad);

	/* every event of both calls */
	char *text = tg_log(g, &(tg_log_query){0}, NULL);
	json_t *ops = json_loads(text, 0, NULL);
	free(text);
	size_t nev = 0;
	for (size_t i = 0; i < json_array_size(ops); i++)
		nev += json_array_size(json_object_get(json_array_get(ops, i), "events"));
	json_decref(ops);
	lines l = {json_array(), nev};
	assert_int_equal(tg_log_follow(g, NULL, 0, collect, &l, NULL, NULL), 0);

	tgc_params none;
	memset(&none, 0, sizeof none);
	int rows = 0;
	for (size_t i = 0; i < json_array_size(l.all); i++) {
		const char *line = json_string_value(json_array_get(l.all, i));
		json_t *row = tgc_live_row(g, line, &none);
		if (!row)
			continue;
		rows++;
		const char *op = json_string_value(json_object_get(row, "op_id"));
		const char *status = json_string_value(json_object_get(row, "status"));
		assert_non_null(op);
		assert_string_equal(json_string_value(json_object_get(row, "tool")), "read_file");
		assert_string_equal(json_string_value(json_object_get(row, "principal")), "local");
		assert_true(json_is_integer(json_object_get(row, "seq")));
		assert_true(json_is_string(json_object_get(row, "ts")));
		assert_true(json_is_number(json_object_get(row, "duration_ms")));
		const char *summary = json_string_value(json_object_get(row, "summary"));
		if (!strcmp(op, ok)) {
			assert_string_equal(status, "persisted");
			assert_string_equal(json_string_value(json_object_get(row, "session")), "s-1");
			assert_string_equal(json_string_value(json_object_get(row, "stage")), "");
			assert_non_null(strstr(summary, "hello.txt"));
		} else {
			assert_string_equal(op, bad);
			assert_string_not_equal(status, "persisted");
			assert_string_not_equal(json_string_value(json_object_get(row, "stage")), "");
		}
		json_decref(row);
	}
	assert_int_equal(rows, 2);   /* one row per call: the event that ends it */

	/* the filters */
	static const struct {
		const char *name, *value;
		int         rows;
	} filters[] = {
		{"tool", "read_file", 2}, {"tool", "write_file", 0}, {"session", "s-1", 1},
		{"session", "s-3", 0},    {"principal", "local", 2}, {"principal", "ci", 0},
		{"status", "persisted", 1}, {"status", "", 2},       {"other", "x", 2},
	};
	for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++) {
		tgc_params f;
		f.n = 1;
		f.v[0].name = (char *)filters[k].name;
		f.v[0].value = (char *)filters[k].value;
		int n = 0;
		for (size_t i = 0; i < json_array_size(l.all); i++) {
			json_t *row = tgc_live_row(g, json_string_value(json_array_get(l.all, i)), &f);
			n += row != NULL;
			json_decref(row);
		}
		if (n != filters[k].rows)
			fail_msg("filter %s=%s: %d rows, want %d", filters[k].name, filters[k].value, n,
			         filters[k].rows);
	}

	/* what is not a call's end */
	assert_null(tgc_live_row(g, "not json", &none));
	assert_null(tgc_live_row(g, NULL, &none));
	assert_null(tgc_live_row(g, "{\"type\":\"tool.call.persisted\"}", &none));
	assert_null(tgc_live_row(g, "{\"type\":\"tool.call.received\",\"status\":\"persisted\","
	                            "\"op_id\":\"" UUID "\"}", &none));
	/* an op the ledger does not have: the event alone */
	json_t *row = tgc_live_row(g, "{\"seq\":9,\"type\":\"tool.call.denied\",\"status\":\"denied\","
	                              "\"op_id\":\"" UUID "\",\"tool\":\"x\"}", &none);
	assert_non_null(row);
	assert_true(json_is_null(json_object_get(row, "duration_ms")));
	assert_string_equal(json_string_value(json_object_get(row, "summary")), "");
	json_decref(row);
	json_decref(l.all);
	close_gate(g);
}

/* Read the stream until its bytes hold want (or 5 s pass); the bytes. */
static char *read_until(tgc_stream *s, const char *want)
{
	static char got[65536];
	size_t n = 0;
	double t0 = tgi_now_ms();
	got[0] = '\0';
	while (!strstr(got, want) && tgi_now_ms() - t0 < 5000) {
		long k = tgc_stream_read(s, got + n, sizeof got - n - 1);
		if (k <= 0)
			break;
		n += (size_t)k;
		got[n] = '\0';
	}
	return got;
}

static void test_stream(void **state)
{
	tg_gate *g = open_gate();
	char first[37], second[37], err[256];
	volatile int stop = 0;
	call(g, "read_file", "{\"path\":\"hello.txt\"}", "s-1", first);

	/* from now: the call before is not sent, the one after is */
	tgc_params none;
	memset(&none, 0, sizeof none);
	tgc_stream *s = tgc_stream_open(g, &none, -1, -1, &stop, err, sizeof err);
	assert_non_null(s);
	char *got = read_until(s, "retry: ");
	assert_non_null(strstr(got, "retry: 1000\n\n"));
	usleep(100 * 1000);
	call(g, "read_file", "{\"path\":\"hello.txt\"}", "s-2", second);
	got = read_until(s, second);
	assert_non_null(strstr(got, "event: call\ndata: {"));
	assert_non_null(strstr(got, second));
	assert_null(strstr(got, first));
	assert_non_null(strstr(got, "id: "));
	tgc_stream_close(s);

	/* resumed after seq 0, for one session: the first call only */
	tgc_params only;
	only.n = 1;
	only.v[0].name = "session";
	only.v[0].value = "s-1";
	s = tgc_stream_open(g, &only, 0, -1, &stop, err, sizeof err);
	assert_non_null(s);
	got = read_until(s, first);
	assert_non_null(strstr(got, first));
	assert_null(strstr(got, second));     /* filtered out */
	/* the console stops: the stream ends */
	stop = 1;
	char buf[64];
	assert_int_equal(tgc_stream_read(s, buf, sizeof buf), 0);
	tgc_stream_close(s);
	tgc_stream_close(NULL);
	close_gate(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_form),
		cmocka_unit_test(test_auth_token),
		cmocka_unit_test(test_auth_codes),
		cmocka_unit_test(test_auth_sessions),
		cmocka_unit_test(test_csrf),
		cmocka_unit_test(test_auth_threads),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_live_row),
		cmocka_unit_test(test_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
