/*
 * fuzz_key.c — libFuzzer target for reading the machine key from the
 * environment (src/store/key.c, ledger.key_env): the text of a variable.
 *
 * Input: the variable's value (up to its first NUL, as an environment
 * holds it).  A key is read exactly when the text, less trailing white
 * space, is 64 hex digits, and it is their bytes; anything else is one
 * printable sentence naming the variable; never a crash, leak or hang.
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/impl.h"
#include "util/util.h"
#include "fuzz.h"

#define INPUT_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[INPUT_MAX + 1], err[512] = "";
	unsigned char key[TGI_KEY_BYTES], want[TGI_KEY_BYTES];
	if (size > INPUT_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	size_t n = strlen(text), t = n;
	if (setenv("TG_FUZZ_KEY", text, 1) < 0)
		return 0;
	while (t && strchr(" \t\r\n", text[t - 1]))
		t--;
	int valid = t == 2 * TGI_KEY_BYTES && tgi_unhex(text, TGI_KEY_BYTES, want) == 0;
	tgi_key_source src = { .env = "TG_FUZZ_KEY" };
	int rc = tgi_key_load(&src, key, err, sizeof err);
	check((rc == 0) == valid);
	if (rc == 0)
		check(!memcmp(key, want, sizeof key));
	else
		check(err[0] && printable(err) && strstr(err, "TG_FUZZ_KEY"));
	/* still there for a second reader (another gate in this process) */
	const char *v = getenv("TG_FUZZ_KEY");
	check(v && strlen(v) == n);
	return 0;
}
