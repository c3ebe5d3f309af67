/*
 * test_redact.c — redaction (src/record/redact.c): every built-in secret
 * pattern (what it masks, and the near misses it must leave alone), keys
 * at any depth, x-sensitive properties, the no-copy fast path, the 4 KiB
 * cut of the logged args, configured keys and patterns (and the file:line
 * of a bad one), fail-closed on a pattern that cannot finish, odd input,
 * and several threads sharing one redactor.
 *
 * The secrets here are made up; none is live.
 *
 * Owns: the temporary directories it makes.  Must not: touch the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "gate/gate.h"
#include "mw/mw.h"
#include "schema/schema.h"
#include "util/util.h"

/* ---- helpers ---- */

static char *mask_of(const char *secret)
{
	char m[32];
	tgi_redact_mask(NULL, secret, strlen(secret), m);
	return tgi_strdup(m);
}

static char *redact(const tgi_redactor *r, const char *text)
{
	return tgi_redact_text(r, text, strlen(text));
}

/* text with secret replaced by its mask, exactly. */
static void masks_to(const char *text, const char *secret)
{
	char *m = mask_of(secret);
	const char *at = strstr(text, secret);
	assert_non_null(at);
	char want[8192];
	snprintf(want, sizeof want, "%.*s%s%s", (int)(at - text), text, m, at + strlen(secret));
	char *out = redact(NULL, text);
	if (strcmp(out, want))
		fail_msg("redacting\n  %s\ngave\n  %s\nwanted\n  %s", text, out, want);
	free(out);
	free(m);
}

/* text comes back as it was. */
static void kept(const char *text)
{
	char *out = redact(NULL, text);
	if (strcmp(out, text))
		fail_msg("\"%s\" must not be masked, got \"%s\"", text, out);
	free(out);
}

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, je.text);
	return v;
}

static tgi_config *config_json(const char *text, char *err, size_t errlen)
{
	tgi_config *cfg = NULL;
	if (tgi_config_from_json(J(text), NULL, "toolgate.yaml", NULL, &cfg, err, errlen) < 0)
		fail_msg("config %s: %s", text, err);
	return cfg;
}

/* A redactor from a config document, or NULL with err. */
static tgi_redactor *redactor_of(const char *doc, char *err, size_t errlen)
{
	tgi_config *cfg = config_json(doc, err, errlen);
	tgi_redactor *r = NULL;
	int rc = tgi_redactor_new(cfg, &r, err, errlen);
	tgi_config_free(cfg);
	if (rc < 0)
		assert_null(r);
	else
		assert_non_null(r);
	return r;
}

/* ---- the mask ---- */

static void test_mask_format(void **state)
{
	char m[32], hex[65], again[32];
	tgi_redact_mask(NULL, "hunter2", 7, m);
	assert_int_equal(strlen(m), 21);
	assert_memory_equal(m, "\xC2\xABredacted:", 11);
	assert_memory_equal(m + 19, "\xC2\xBB", 2);
	/* keyed: not the unsalted sha256 a guessed password could be checked
	 * against, and the same for the same secret */
	tgi_sha256_hex("hunter2", 7, hex);
	assert_memory_not_equal(m + 11, hex, 8);
	tgi_redact_mask(NULL, "hunter2", 7, again);
	assert_string_equal(m, again);
}

/* A redactor keyed by a ledger's mask key masks under it: equal secrets
 * alike in one ledger, differently in two. */
static void test_mask_keyed(void **state)
{
	unsigned char k1[32], k2[32];
	char a[32], b[32], c[32], d[32], *s1, *s2;
	tgi_redactor *r1, *r2;
	char err[256];
	memset(k1, 1, sizeof k1);
	memset(k2, 2, sizeof k2);
	assert_int_equal(tgi_redactor_new(NULL, &r1, err, sizeof err), 0);
	assert_int_equal(tgi_redactor_new(NULL, &r2, err, sizeof err), 0);
	tgi_redactor_key(r1, k1);
	tgi_redactor_key(r2, k2);
	tgi_redact_mask(r1, "hunter2", 7, a);
	tgi_redact_mask(r1, "hunter2", 7, b);
	tgi_redact_mask(r2, "hunter2", 7, c);
	tgi_redact_mask(NULL, "hunter2", 7, d);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_string_not_equal(a, d);
	s1 = tgi_redact_text(r1, "postgres://u:hunter2@db/x", 25);
	s2 = tgi_redact_text(r1, "mysql://v:hunter2@db/y", 22);
	assert_non_null(strstr(s1, a));
	assert_non_null(strstr(s2, a));
	free(s1);
	free(s2);
	tgi_redactor_free(r1);
	tgi_redactor_free(r2);
}

/* ---- each built-in pattern: what it masks ---- */

static void test_aws(void **state)
{
	masks_to("key id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE");
	masks_to("ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A");
	masks_to("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	         "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	masks_to("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
	         "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
}

static void test_bearer_and_authorization(void **state)
{
	masks_to("curl -H 'Authorization: Bearer abc123def456ghi789' x",
	         "abc123def456ghi789");
	masks_to("authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==");
	masks_to("{\"Authorization\": \"token 9f8e7d6c5b4a\"}", "9f8e7d6c5b4a");
	masks_to("bearer eyJraWQiOiJrMSJ9xyzxyzxyzxyz", "eyJraWQiOiJrMSJ9xyzxyzxyzxyz");
	masks_to("Proxy-Authorization: Basic Zm9vOmJhcg==", "Zm9vOmJhcg==");
	masks_to("Authorization: lin_api_0123456789abcdef", "lin_api_0123456789abcdef");
}

static void test_pem(void **state)
{
	const char *block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7v1Zp\n"
	                    "q1w2e3r4t5y6\n-----END RSA PRIVATE KEY-----";
	char text[512];
	snprintf(text, sizeof text, "before\n%s\nafter", block);
	masks_to(text, block);
	masks_to("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
	         "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----");
	masks_to("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
	         "-----END OPENSSH PRIVATE KEY----- y",
	         "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
	         "-----END OPENSSH PRIVATE KEY-----");
	/* cut short (a capped output): masked to the end */
	masks_to("key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI",
	         "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI");
	/* a public key or a certificate is not a secret */
	kept("-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----");
	kept("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
}

static void test_api_keys(void **state)
{
	masks_to("OPENAI_KEY sk-proj-4fJ9kLm2Qx7Rt0Vb8Nc3Hy6Wp1Zs5Ug0Ae2Id9Of7 set",
	         "sk-proj-4fJ9kLm2Qx7Rt0Vb8Nc3Hy6Wp1Zs5Ug0Ae2Id9Of7");
	masks_to("sk-ant-api03-Xy7Qw2Er5Ty8Ui1Op4As6Df9Gh3Jk0LzXcVbNm-AbCdEf_GhIjKlAA",
	         "sk-ant-api03-Xy7Qw2Er5Ty8Ui1Op4As6Df9Gh3Jk0LzXcVbNm-AbCdEf_GhIjKlAA");
	masks_to("(sk-T3BlbkFJa8Kd02Lm9Qp7Rs5Tu3Vw1Xy9Za7Bc5De3Fg1Hi9J)",
	         "sk-T3BlbkFJa8Kd02Lm9Qp7Rs5Tu3Vw1Xy9Za7Bc5De3Fg1Hi9J");
	masks_to("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5");
	masks_to("token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end",
	         "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz");
	masks_to("SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
	         "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx");
	masks_to("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc");
	masks_to("key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&q=1",
	         "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI");
	masks_to("glpat-xYz12345678901234567AbC", "glpat-xYz12345678901234567AbC");
	masks_to("//registry/:_authToken npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
	         "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5");
	masks_to("hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH");
}

static void test_jwt(void **state)
{
	const char *jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
	                  "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
	char text[512];
	snprintf(text, sizeof text, "cookie session=%s; path=/", jwt);
	/* the cookie assignment and the JWT are the same span */
	masks_to(text, jwt);
	snprintf(text, sizeof text, "id %s.", jwt);
	masks_to(text, jwt);
}

static void test_url_password(void **state)
{
	masks_to("postgres://admin:s3cr3tPW@db.internal:5432/app", "s3cr3tPW");
	masks_to("git clone https://bob:p%40ss@github.com/x/y", "p%40ss");
	masks_to("redis://:only-a-password@cache:6379", "only-a-password");
	/* an '@' inside the password: up to the last one before the host */
	masks_to("amqp://u:p@ss@mq/", "p@ss");
}

static void test_assignments(void **state)
{
	masks_to("DB_PASSWORD=hunter22", "hunter22");
	masks_to("{\"password\": \"hunter2\", \"user\": \"ann\"}", "hunter2");
	masks_to("x-api-key: 0123abcd4567", "0123abcd4567");
	masks_to("client_secret => 'ab cd ef gh'", "ab cd ef gh");
	masks_to("GITHUB_TOKEN := abcdefgh1234", "abcdefgh1234");
	masks_to("{\\\"password\\\":\\\"hunter2\\\"}", "hunter2");
}

/* ---- near misses: left as they are ---- */

static void test_near_misses(void **state)
{
	kept("the password is wrong; reset your token and try again");
	kept("a token bucket refills at 10/min");
	kept("sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	kept("op 0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77 done");
	kept("pip install scikit-learn; import sklearn; sk-learn is a nickname");
	kept("sk-learn-compatible-estimators-for-everyone");
	kept("task-force-alpha-2024-q3-roadmap-draft");
	kept("Bearer of bad news");
	kept("max_tokens=4096, tokens: 12");
	kept("password: abc");
	kept("https://example.com:8080/path/a@b?x=1");
	kept("ssh://git@github.com/org/repo.git and git@github.com:org/repo.git");
	kept("eyJhbGciOiJIUzI1NiJ9 is only a header");
	kept("XAKIAIOSFODNN7EXAMPLE1 and AKIA1234");
	kept("ghp_short gho_ ghs_x");
	kept("AIzaShort");
	kept("xoxb- is how a Slack bot token starts");
	kept("the authorization: required");
	kept("");
	kept("\xC2\xABredacted:0123abcd\xC2\xBB");
}

/* Masking twice changes nothing more. */
static void test_idempotent(void **state)
{
	const char *texts[] = {
		"password=hunter22 and token: «redacted:0123abcd»",
		"postgres://a:b@c/ Bearer abcdefgh12345678 AKIAIOSFODNN7EXAMPLE",
		"-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY----- sk-proj-4fJ9kLm2Qx7Rt0Vb8Nc3Hy6",
		/* a mask completes a pattern (its hex has the digit an
		 * Authorization value needs; » ends a word before eyJ) */
		"_PASSWORD=hu-H \"Authorization:tion-:-DB_PASSWORD=hu-H \"Authorization:tion-:- B",
		"AKIAIOSFODNN7EXAMPLEeyJhbGciOiJI.eyJzdWIiOiIx.abcdefgh",
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(texts); i++) {
		char *once = redact(NULL, texts[i]);
		char *twice = redact(NULL, once);
		assert_string_equal(once, twice);
		assert_string_not_equal(once, texts[i]);
		free(once);
		free(twice);
	}
}

static void test_text_odd_input(void **state)
{
	/* NUL bytes and invalid UTF-8 around a secret */
	const char raw[] = "a\0b\xff\xfe AKIAIOSFODNN7EXAMPLE \xc3";
	char *out = tgi_redact_text(NULL, raw, sizeof raw - 1);
	assert_null(memmem(out, sizeof raw + 32, "AKIAIOSFODNN7EXAMPLE", 20));
	free(out);
	out = tgi_redact_text(NULL, NULL, 0);
	assert_string_equal(out, "");
	free(out);
	/* a very long line with many candidates, none real */
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = "sk-:=AKIA_ghp_xox://eyJ bearer "[i % 31];
	big[n] = '\0';
	out = tgi_redact_text(NULL, big, n);
	assert_non_null(out);
	free(out);
	/* a private key block that never ends, in a long text */
	memcpy(big, "-----BEGIN PRIVATE KEY-----", 27);
	out = tgi_redact_text(NULL, big, n);
	assert_int_equal(strlen(out), 21);
	free(out);
	free(big);
}

/* ---- JSON ---- */

static void test_json_no_copy(void **state)
{
	json_t *v = J("{\"op_id\":\"0193a5f0-7c1e-7d2a-9b1e-4f0c2a9d1e77\",\"status\":\"persisted\","
	              "\"output\":{\"lines\":[\"a\",\"b\"],\"n\":2,\"x\":null},"
	              "\"stages\":[{\"stage\":\"decode\",\"ok\":true}],\"duration_ms\":0.2}");
	size_t before = v->refcount;
	json_t *out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_equal(out, v);
	assert_int_equal(v->refcount, before + 1);
	json_decref(out);
	assert_int_equal(v->refcount, before);
	json_decref(v);
	assert_null(tgi_redact_json(NULL, NULL, NULL));
}

static void test_json_keys_at_depth(void **state)
{
	json_t *v = J("{\"a\":{\"b\":[{\"Password\":\"hunter2\",\"keep\":\"x\"}]},"
	              "\"DB_PASSWORD\":\"pw1\",\"x-api-key\":\"k1\",\"dbPassword\":\"pw2\","
	              "\"password_policy\":\"strict\",\"tokens\":3,\"pin\":1234,"
	              "\"secret\":{\"nested\":true},\"token\":null,\"cookie\":\"c=1\"}");
	json_t *copy = json_deep_copy(v);
	json_t *out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_not_equal(out, v);
	assert_true(json_equal(v, copy)); /* the input is not touched */
	char *m;
	const json_t *inner = json_array_get(json_object_get(json_object_get(out, "a"), "b"), 0);
	assert_string_equal(json_string_value(json_object_get(inner, "Password")), m = mask_of("hunter2"));
	free(m);
	assert_string_equal(json_string_value(json_object_get(inner, "keep")), "x");
	assert_string_equal(json_string_value(json_object_get(out, "DB_PASSWORD")), m = mask_of("pw1"));
	free(m);
	assert_string_equal(json_string_value(json_object_get(out, "x-api-key")), m = mask_of("k1"));
	free(m);
	assert_string_equal(json_string_value(json_object_get(out, "dbPassword")), m = mask_of("pw2"));
	free(m);
	assert_string_equal(json_string_value(json_object_get(out, "password_policy")), "strict");
	assert_int_equal(json_integer_value(json_object_get(out, "tokens")), 3);
	assert_int_equal(json_integer_value(json_object_get(out, "pin")), 1234);
	/* a whole object under a key: by its canonical text */
	assert_string_equal(json_string_value(json_object_get(out, "secret")),
	                    m = mask_of("{\"nested\":true}"));
	free(m);
	assert_true(json_is_null(json_object_get(out, "token")));
	assert_string_equal(json_string_value(json_object_get(out, "cookie")), m = mask_of("c=1"));
	free(m);
	/* redacting the result again gives the same value back */
	json_t *again = tgi_redact_json(NULL, out, NULL);
	assert_ptr_equal(again, out);
	json_decref(again);
	json_decref(out);
	json_decref(copy);
	json_decref(v);
}

static void test_json_patterns_in_strings_and_keys(void **state)
{
	json_t *v = J("{\"output\":\"url postgres://u:pw12345@h/db ok\","
	              "\"headers\":{\"ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\":\"owner\"},"
	              "\"list\":[1,\"AKIAIOSFODNN7EXAMPLE\",{\"k\":\"v\"}]}");
	json_t *out = tgi_redact_json(NULL, v, NULL);
	char *text = json_dumps(out, JSON_COMPACT);
	assert_null(strstr(text, "pw12345"));
	assert_null(strstr(text, "ghp_aB3d"));
	assert_null(strstr(text, "AKIAIOSFODNN7EXAMPLE"));
	assert_non_null(strstr(text, "postgres://u:\xC2\xABredacted:"));
	char *m = mask_of("ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5");
	assert_string_equal(json_string_value(json_object_get(json_object_get(out, "headers"), m)),
	                    "owner");
	free(m);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(out, "list"), 0)), 1);
	json_t *kv = J("{\"k\":\"v\"}");
	assert_true(json_equal(json_array_get(json_object_get(out, "list"), 2), kv));
	json_decref(kv);
	free(text);
	json_decref(out);
	json_decref(v);
}

/* The same secret has the same mask under a key and inside a text. */
static void test_mask_consistent(void **state)
{
	json_t *v = J("{\"password\":\"Tr0ub4dor&3xyz\",\"log\":\"password=Tr0ub4dor&3xyz\"}");
	json_t *out = tgi_redact_json(NULL, v, NULL);
	const char *a = json_string_value(json_object_get(out, "password"));
	const char *b = json_string_value(json_object_get(out, "log"));
	assert_non_null(strstr(b, a));
	json_decref(out);
	json_decref(v);
}

static void test_json_extra_keys(void **state)
{
	tgi_strv keys = {0};
	tgi_strv_push(&keys, tgi_strdup("note"));
	tgi_strv_push(&keys, tgi_strdup("Pin-Code"));
	json_t *v = J("{\"note\":\"dear diary\",\"pin_code\":1234,\"other\":\"x\"}");
	json_t *out = tgi_redact_json(NULL, v, &keys);
	char *m = mask_of("dear diary");
	assert_string_equal(json_string_value(json_object_get(out, "note")), m);
	free(m);
	m = mask_of("1234");
	assert_string_equal(json_string_value(json_object_get(out, "pin_code")), m);
	free(m);
	assert_string_equal(json_string_value(json_object_get(out, "other")), "x");
	json_decref(out);
	/* without the extra keys nothing is masked */
	out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_equal(out, v);
	json_decref(out);
	json_decref(v);
	tgi_strv_free(&keys);
}

static void test_json_deep(void **state)
{
	/* deeper than the walk goes: masked whole, never a crash */
	json_t *v = json_string("AKIAIOSFODNN7EXAMPLE");
	for (int i = 0; i < 1500; i++)
		v = i % 2 ? json_pack("[o]", v) : json_pack("{s:o}", "k", v);
	json_t *out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_not_equal(out, v);
	char *text = json_dumps(out, JSON_COMPACT);
	assert_null(strstr(text, "AKIAIOSFODNN7EXAMPLE"));
	free(text);
	json_decref(out);
	json_decref(v);
	/* clean but deeper than the walk: masked too (it was not looked at) */
	v = json_object();
	for (int i = 0; i < 300; i++)
		v = json_pack("[o]", v);
	out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_not_equal(out, v);
	json_decref(out);
	json_decref(v);
	/* clean within the limit, and an empty container at the limit: as they were */
	v = json_string("plain");
	for (int i = 0; i < 100; i++)
		v = json_pack("[o]", v);
	out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_equal(out, v);
	json_decref(out);
	json_decref(v);
	v = json_array();
	for (int i = 0; i < 300; i++)
		v = json_pack("{s:o}", "k", v);
	json_t *inner = v;
	for (int i = 0; i < 128; i++)
		inner = json_object_get(inner, "k");
	assert_true(json_is_object(inner));
	out = tgi_redact_json(NULL, v, NULL);
	assert_ptr_not_equal(out, v);
	json_decref(out);
	json_decref(v);
}

/* ---- the logged args ---- */

static char *logged(json_t *args, const tgi_entry *e)
{
	tgi_call c;
	memset(&c, 0, sizeof c);
	c.args = args;
	c.entry = e;
	c.args_canon = tgi_json_canonical(args);
	char *s = tgi_redacted_args(&c);
	free(c.args_canon);
	return s;
}

static void test_args_cut(void **state)
{
	size_t n = 9000;
	char *note = malloc(n + 1);
	memset(note, 'n', n);
	note[n] = '\0';
	/* a secret in the kept prefix, one across the cut, one past it */
	memcpy(note + 10, " AKIAIOSFODNN7EXAMPLE ", 22);
	memcpy(note + 250, " sk-proj-4fJ9kLm2Qx7Rt0Vb8Nc3Hy6Wp1Zs5Ug0Ae2Id9Of7 ", 50);
	memcpy(note + 5000, " ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 ", 42);
	char sha[65];
	tgi_sha256_hex(note, n, sha);
	json_t *args = json_pack("{s:s, s:s, s:s}", "note", note, "user", "ann", "password",
	                         "short");
	char *s = logged(args, NULL);
	json_t *row = J(s);
	const char *cut = json_string_value(json_object_get(row, "note"));
	char tail[128];
	snprintf(tail, sizeof tail, "…[9000 bytes, sha256 %s]", sha);
	assert_non_null(strstr(cut, tail));
	assert_true(strlen(cut) < 600);
	assert_null(strstr(s, "AKIAIOSFODNN7EXAMPLE"));
	assert_null(strstr(s, "sk-proj"));
	assert_null(strstr(s, "4fJ9"));
	assert_null(strstr(s, "ghp_"));
	char *m = mask_of("AKIAIOSFODNN7EXAMPLE");
	assert_non_null(strstr(cut, m));
	free(m);
	/* no mask is cut in two */
	const char *last = NULL;
	for (const char *p = cut; (p = strstr(p, "\xC2\xABredacted:")); p++)
		last = p;
	assert_non_null(last);
	assert_non_null(strstr(last, "\xC2\xBB"));
	assert_true(strstr(last, "\xC2\xBB") < strstr(cut, "…["));
	assert_string_equal(json_string_value(json_object_get(row, "user")), "ann");
	m = mask_of("short");
	assert_string_equal(json_string_value(json_object_get(row, "password")), m);
	free(m);
	json_decref(row);
	free(s);
	json_decref(args);

	/* a long secret under a key is masked whole, not cut */
	memset(note, 'S', n);
	args = json_pack("{s:s}", "token", note);
	s = logged(args, NULL);
	m = mask_of(note);
	char want[64];
	snprintf(want, sizeof want, "{\"token\":\"%s\"}", m);
	assert_string_equal(s, want);
	free(m);
	free(s);
	json_decref(args);
	free(note);

	/* nothing to mask: the canonical args as they are */
	args = J("{\"b\":1,\"a\":\"x\"}");
	s = logged(args, NULL);
	assert_string_equal(s, "{\"a\":\"x\",\"b\":1}");
	free(s);
	json_decref(args);
	tgi_call c;
	memset(&c, 0, sizeof c);
	s = tgi_redacted_args(&c);
	assert_string_equal(s, "null");
	free(s);
}

static void test_args_sensitive_entry(void **state)
{
	tgi_entry e;
	memset(&e, 0, sizeof e);
	json_t *schema = J("{\"type\":\"object\",\"properties\":{"
	                   "\"card\":{\"type\":\"string\",\"x-sensitive\":true},"
	                   "\"memo\":{\"type\":\"string\"}}}");
	tgi_schema_sensitive_keys(schema, &e.sensitive);
	json_t *args = J("{\"card\":\"4111111111111111\",\"memo\":\"lunch\"}");
	char *s = logged(args, &e);
	assert_null(strstr(s, "4111111111111111"));
	assert_non_null(strstr(s, "lunch"));
	free(s);
	json_decref(args);
	json_decref(schema);
	tgi_strv_free(&e.sensitive);
}

/* The kept error message of a call that stopped with msg at field (NULL:
 * no field), under the default keys and e's x-sensitive ones.  Caller frees. */
static char *kept_message(const tgi_entry *e, const char *field, const char *msg)
{
	tgi_call c;
	memset(&c, 0, sizeof c);
	c.entry = e;
	c.kind = TG_ERR_INVALID_INPUT;
	snprintf(c.message, sizeof c.message, "%s", msg);
	if (field) {
		snprintf(c.field, sizeof c.field, "%s", field);
		c.has_field = 1;
	}
	return tgi_redacted_message(&c);
}

/* Validation quotes the value it refused: under a masked key the kept
 * message is masked whole, as no pattern need match the value. */
static void test_message_under_sensitive_field(void **state)
{
	static const char quoted[] = "must be one of \"a\"; got \"hunter2xyz\"";
	char m[32], *s;
	tgi_redact_mask(NULL, quoted, strlen(quoted), m);
	const char *masked[] = {"/password", "/db/password", "/creds/0/api_key", "/x~1y/token",
	                        "/card"};
	tgi_entry e;
	memset(&e, 0, sizeof e);
	tgi_strv_push(&e.sensitive, strdup("card"));
	for (size_t i = 0; i < sizeof masked / sizeof *masked; i++) {
		s = kept_message(&e, masked[i], quoted);
		if (strcmp(s, m))
			fail_msg("at %s the kept message is \"%s\"", masked[i], s);
		free(s);
	}
	/* elsewhere, or with no field, only the patterns apply */
	const char *kept[] = {"/user", "/password_hint/x~0", NULL};
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		s = kept_message(&e, kept[i], quoted);
		assert_string_equal(s, quoted);
		free(s);
	}
	s = kept_message(&e, "/user", "got \"AKIAIOSFODNN7EXAMPLE\"");
	assert_null(strstr(s, "AKIAIOSFODNN7EXAMPLE"));
	free(s);
	/* no error, no message */
	tgi_call c;
	memset(&c, 0, sizeof c);
	assert_null(tgi_redacted_message(&c));
	tgi_strv_free(&e.sensitive);
}

/* ---- x-sensitive ---- */

static int has(const tgi_strv *v, const char *name)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], name))
			return 1;
	return 0;
}

static void test_schema_sensitive(void **state)
{
	json_t *schema = J(
		"{\"type\":\"object\",\"properties\":{"
		"  \"pw\":{\"type\":\"string\",\"x-sensitive\":true},"
		"  \"plain\":{\"type\":\"string\",\"x-sensitive\":false},"
		"  \"creds\":{\"type\":\"object\",\"properties\":{\"otp\":{\"x-sensitive\":true}}},"
		"  \"list\":{\"type\":\"array\",\"items\":{\"properties\":{\"cvv\":{\"x-sensitive\":true}}}},"
		"  \"map\":{\"additionalProperties\":{\"properties\":{\"pin\":{\"x-sensitive\":true}}}},"
		"  \"ref\":{\"$ref\":\"#/$defs/Secret\"},"
		"  \"again\":{\"type\":\"string\",\"x-sensitive\":true}},"
		" \"allOf\":[{\"properties\":{\"a1\":{\"x-sensitive\":true}}}],"
		" \"anyOf\":[{\"properties\":{\"a2\":{\"x-sensitive\":true}}}],"
		" \"oneOf\":[{\"properties\":{\"a3\":{\"x-sensitive\":true}}}],"
		" \"$defs\":{\"Secret\":{\"type\":\"string\",\"x-sensitive\":true},"
		"   \"Box\":{\"properties\":{\"inbox\":{\"x-sensitive\":true}}}},"
		" \"definitions\":{\"Old\":{\"properties\":{\"legacy\":{\"x-sensitive\":true}}}},"
		" \"x-sensitive\":true}");
	tgi_strv out = {0};
	tgi_schema_sensitive_keys(schema, &out);
	const char *want[] = {"pw", "otp", "cvv", "pin", "ref", "again", "a1", "a2", "a3", "inbox",
	                      "legacy"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(want); i++)
		if (!has(&out, want[i]))
			fail_msg("x-sensitive \"%s\" not found", want[i]);
	assert_int_equal(out.n, TGI_ARRAY_LEN(want));
	assert_false(has(&out, "plain"));
	tgi_strv_free(&out);
	json_decref(schema);

	/* odd schemas: nothing, and no crash */
	const char *odd[] = {"true", "null", "[]", "{\"properties\":[1]}",
	                     "{\"properties\":{\"a\":true}}", "{\"items\":[{\"properties\":1}]}",
	                     "{\"properties\":{\"r\":{\"$ref\":\"#/nowhere\"}}}",
	                     "{\"properties\":{\"r\":{\"$ref\":\"http://x/y\"}}}"};
	for (size_t i = 0; i < TGI_ARRAY_LEN(odd); i++) {
		json_t *s = J(odd[i]);
		tgi_schema_sensitive_keys(s, &out);
		assert_int_equal(out.n, 0);
		json_decref(s);
	}
	/* deep */
	json_t *deep = J("{\"x-sensitive\":true}");
	for (int i = 0; i < 1000; i++)
		deep = json_pack("{s:o}", "items", deep);
	tgi_schema_sensitive_keys(deep, &out);
	json_decref(deep);
	tgi_strv_free(&out);
}

/* ---- configuration ---- */

/* Redact the object doc with r: its member key holds the mask of secret,
 * or (secret NULL) doc comes back as it was, no copy made. */
static void member_masked(const tgi_redactor *r, const char *doc, const char *key,
                          const char *secret)
{
	json_t *v = J(doc);
	json_t *out = tgi_redact_json(r, v, NULL);
	if (!secret) {
		assert_ptr_equal(out, v);
	} else {
		char *m = mask_of(secret);
		assert_string_equal(json_string_value(json_object_get(out, key)), m);
		free(m);
	}
	json_decref(out);
	json_decref(v);
}

static void test_config_keys_replace_defaults(void **state)
{
	char err[1024];
	tgi_redactor *r = redactor_of("{\"redact\":{\"keys\":[\"pin\"]}}", err, sizeof err);
	member_masked(r, "{\"pin\":\"0000\"}", "pin", "0000");
	member_masked(r, "{\"password\":\"hunter2\"}", "password", NULL);
	/* the patterns stay on */
	char *t = redact(r, "AKIAIOSFODNN7EXAMPLE");
	assert_null(strstr(t, "AKIA"));
	free(t);
	tgi_redactor_free(r);

	/* an empty list: no key is masked */
	r = redactor_of("{\"redact\":{\"keys\":[]}}", err, sizeof err);
	member_masked(r, "{\"password\":\"hunter2\"}", "password", NULL);
	tgi_redactor_free(r);

	/* absent section, an empty one and a null list: the defaults */
	static const char *const defaults[] = {"{}", "{\"redact\":null}",
	                                       "{\"redact\":{\"keys\":null}}"};
	for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++) {
		r = redactor_of(defaults[i], err, sizeof err);
		member_masked(r, "{\"api_key\":\"k\"}", "api_key", "k");
		member_masked(r, "{\"client_secret\":\"s3\"}", "client_secret", "s3");
		member_masked(r, "{\"pin\":\"0000\"}", "pin", NULL);
		tgi_redactor_free(r);
	}
	tgi_redactor_free(NULL);
}

static void test_config_patterns(void **state)
{
	char err[1024];
	tgi_redactor *r = redactor_of("{\"redact\":{\"patterns\":[\"ACME-[0-9]{6}\","
	                              "\"employee (?<secret>E[0-9]{5})\"]}}", err, sizeof err);
	char *m1 = mask_of("ACME-123456"), *m2 = mask_of("E12345");
	char *t = redact(r, "id ACME-123456 and employee E12345 and ACME-12");
	char want[256];
	snprintf(want, sizeof want, "id %s and employee %s and ACME-12", m1, m2);
	assert_string_equal(t, want);
	free(t);
	/* in JSON too, and in text that is not valid UTF-8 */
	member_masked(r, "{\"id\":\"ACME-999999\"}", "id", "ACME-999999");
	t = tgi_redact_text(r, "\xff ACME-123456 \xfe", 15);
	assert_null(strstr(t, "ACME-123456"));
	free(t);
	free(m1);
	free(m2);
	tgi_redactor_free(r);
}

/* A pattern that cannot finish masks the whole string (fail closed). */
static void test_match_limit_fails_closed(void **state)
{
	char err[1024];
	tgi_redactor *r = redactor_of("{\"redact\":{\"patterns\":[\"^(a|aa)+$\"]}}", err,
	                              sizeof err);
	char text[4096];
	memset(text, 'a', sizeof text - 2);
	text[sizeof text - 2] = 'b';
	text[sizeof text - 1] = '\0';
	char *t = redact(r, text);
	assert_int_equal(strlen(t), 21);
	free(t);
	tgi_redactor_free(r);
}

static void bad_config(const char *doc, const char *want)
{
	char err[1024] = "";
	tgi_config *cfg = NULL;
	if (tgi_config_from_json(J(doc), NULL, "toolgate.yaml", NULL, &cfg, err, sizeof err) < 0) {
		if (!strstr(err, want))
			fail_msg("%s: wanted \"%s\", got \"%s\"", doc, want, err);
		return;
	}
	tgi_redactor *r = NULL;
	int rc = tgi_redactor_new(cfg, &r, err, sizeof err);
	tgi_config_free(cfg);
	if (rc == 0) {
		tgi_redactor_free(r);
		fail_msg("%s was accepted", doc);
	}
	assert_null(r);
	if (!strstr(err, want))
		fail_msg("%s: wanted \"%s\", got \"%s\"", doc, want, err);
	for (const char *p = err; *p; p++)
		assert_true((unsigned char)*p >= 0x20);
}

static void test_config_errors(void **state)
{
	bad_config("{\"redact\":[\"password\"]}", "redact: expected a mapping");
	bad_config("{\"redact\":{\"key\":[\"password\"]}}",
	           "redact: unknown key \"key\"; expected one of keys, patterns");
	bad_config("{\"redact\":{\"keys\":\"password\"}}", "redact.keys: expected a list of strings");
	bad_config("{\"redact\":{\"keys\":[\"a\", 3]}}", "redact.keys[1]: expected a non-empty string");
	bad_config("{\"redact\":{\"keys\":[\"\"]}}", "redact.keys[0]: expected a non-empty string");
	bad_config("{\"redact\":{\"patterns\":[\"(unclosed\"]}}",
	           "toolgate.yaml: redact.patterns[0]: does not compile: missing closing parenthesis");
	bad_config("{\"redact\":{\"patterns\":[\"ok\", \"a*\"]}}",
	           "redact.patterns[1]: matches the empty string");
	bad_config("{\"redact\":{\"patterns\":{\"a\":1}}}", "redact.patterns: expected a list");
	bad_config("{\"redact\":{\"patterns\":[null]}}", "redact.patterns[0]: expected a non-empty");
}

/* The error names the file, line and column of the bad entry. */
static void test_config_error_where(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], err[1024];
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/tg-redact-XXXXXX", t && *t ? t : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/toolgate.yaml", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("mode: default\nredact:\n  keys: [password]\n  patterns: [\"ok-[0-9]+\", \"(x\"]\n", f);
	fclose(f);
	tgi_config *cfg = NULL;
	assert_int_equal(tgi_config_load(path, &cfg, err, sizeof err), 0);
	tgi_redactor *r = NULL;
	assert_int_equal(tgi_redactor_new(cfg, &r, err, sizeof err), -1);
	if (!strstr(err, "toolgate.yaml:4:") || !strstr(err, ": redact.patterns[1]: does not compile"))
		fail_msg("got \"%s\"", err);
	tgi_config_free(cfg);
	unlink(path);
	rmdir(dir);
}

/* ---- threads ---- */

static tgi_redactor *shared;

static void *worker(void *arg)
{
	for (int i = 0; i < 200; i++) {
		char *t = redact(i % 2 ? shared : NULL, "x AKIAIOSFODNN7EXAMPLE password=hunter22");
		if (strstr(t, "AKIA") || strstr(t, "hunter22"))
			abort();
		free(t);
		json_t *v = json_pack("{s:s, s:[s]}", "token", "abc", "l", "postgres://a:bcdefg@h/");
		json_t *out = tgi_redact_json(shared, v, NULL);
		if (out == v)
			abort();
		json_decref(out);
		json_decref(v);
	}
	return arg;
}

static void test_threads(void **state)
{
	char err[256];
	assert_int_equal(tgi_redactor_new(NULL, &shared, err, sizeof err), 0);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	tgi_redactor_free(shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_format),
		cmocka_unit_test(test_mask_keyed),
		cmocka_unit_test(test_aws),
		cmocka_unit_test(test_bearer_and_authorization),
		cmocka_unit_test(test_pem),
		cmocka_unit_test(test_api_keys),
		cmocka_unit_test(test_jwt),
		cmocka_unit_test(test_url_password),
		cmocka_unit_test(test_assignments),
		cmocka_unit_test(test_near_misses),
		cmocka_unit_test(test_idempotent),
		cmocka_unit_test(test_text_odd_input),
		cmocka_unit_test(test_json_no_copy),
		cmocka_unit_test(test_json_keys_at_depth),
		cmocka_unit_test(test_json_patterns_in_strings_and_keys),
		cmocka_unit_test(test_mask_consistent),
		cmocka_unit_test(test_json_extra_keys),
		cmocka_unit_test(test_json_deep),
		cmocka_unit_test(test_args_cut),
		cmocka_unit_test(test_args_sensitive_entry),
		cmocka_unit_test(test_message_under_sensitive_field),
		cmocka_unit_test(test_schema_sensitive),
		cmocka_unit_test(test_config_keys_replace_defaults),
		cmocka_unit_test(test_config_patterns),
		cmocka_unit_test(test_match_limit_fails_closed),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_error_where),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
