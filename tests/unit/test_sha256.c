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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fips_examples),
		cmocka_unit_test(test_against_sha256sum),
		cmocka_unit_test(test_incremental),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
