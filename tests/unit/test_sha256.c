/*
 * test_sha256.c — SHA-256 (src/util/sha256.c): the FIPS 180-4 examples
 * (empty, "abc", the two-block message, a million 'a'), every length from
 * 0 to 300 bytes against the system's sha256sum, and incremental updates
 * split at every point giving the one-shot digest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

static void hex_of(const void *p, size_t n, char out[65])
{
	tgi_sha256_hex(p, n, out);
}

static void test_fips_examples(void **state)
{
	char h[65];
	hex_of("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(two, strlen(two), h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	char *million = malloc(1000000);
	memset(million, 'a', 1000000);
	hex_of(million, 1000000, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
	/* the lines form hashes the joined text */
	const char *parts[] = {"read_file", "{\"path\":\"a\"}"};
	char joined[65];
	tgi_sha256_lines(parts, 2, h);
	hex_of("read_file\n{\"path\":\"a\"}", strlen("read_file\n{\"path\":\"a\"}"), joined);
	assert_string_equal(h, joined);
}

/* Every length 0..300 of a byte pattern, against sha256sum. */
static void test_against_sha256sum(void **state)
{
	unsigned char data[300];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 37 + 11);
	char path[] = "/tmp/tg-sha.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	for (size_t n = 0; n <= sizeof data; n++) {
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, data, n, 0), (ssize_t)n);
		char cmd[64], want[80] = "", got[65];
		snprintf(cmd, sizeof cmd, "sha256sum %s", path);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(want, sizeof want, p));
		pclose(p);
		want[64] = '\0';
		hex_of(data, n, got);
		assert_string_equal(got, want);
	}
	close(fd);
	unlink(path);
}

static void test_incremental(void **state)
{
	unsigned char data[200], md[32];
	char one[65], inc[65];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(255 - i);
	hex_of(data, sizeof data, one);
	for (size_t a = 0; a <= sizeof data; a++) {
		size_t b = a + (sizeof data - a) / 2;
		tgi_sha256 s;
		tgi_sha256_init(&s);
		tgi_sha256_update(&s, data, a);
		tgi_sha256_update(&s, data + a, b - a);
		tgi_sha256_update(&s, data + b, sizeof data - b);
		tgi_sha256_final(&s, md);
		for (int i = 0; i < 32; i++)
			snprintf(inc + 2 * i, 3, "%02x", md[i]);
		assert_string_equal(inc, one);
	}
}

/* RFC 4231's test cases 1, 2, 3 and 6 (a key longer than a block). */
static void test_hmac_rfc4231(void **state)
{
	(void)state;
	static const struct {
		unsigned char key[131];
		size_t        klen;
		const char   *data;
		size_t        dlen;
		const char   *mac;
	} cases[] = {
		{{[0 ... 19] = 0x0b}, 20, "Hi There", 8,
		 "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"Jefe", 4, "what do ya want for nothing?", 28,
		 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{{[0 ... 19] = 0xaa}, 20, NULL, 50,
		 "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
		{{[0 ... 130] = 0xaa}, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	};
	unsigned char dd[50], mac[32];
	char hex[65];
	memset(dd, 0xdd, sizeof dd);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const void *data = cases[i].data ? (const void *)cases[i].data : dd;
		tgi_hmac_sha256(cases[i].key, cases[i].klen, data, cases[i].dlen, mac);
		tgi_hex(mac, sizeof mac, hex);
		assert_string_equal(hex, cases[i].mac);
		/* in pieces, the same */
		tgi_hmac h;
		tgi_hmac_init(&h, cases[i].key, cases[i].klen);
		tgi_hmac_update(&h, data, 3);
		tgi_hmac_update(&h, (const char *)data + 3, cases[i].dlen - 3);
		tgi_hmac_final(&h, mac);
		tgi_hex(mac, sizeof mac, hex);
		assert_string_equal(hex, cases[i].mac);
	}
	assert_int_equal(tgi_ct_equal("abc", "abc", 3), 1);
	assert_int_equal(tgi_ct_equal("abc", "abd", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fips_examples),
		cmocka_unit_test(test_against_sha256sum),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_hmac_rfc4231),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
