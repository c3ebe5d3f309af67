/*
 * fuzz_journal.c — the patch journal's parser (src/patch/journal.c, through
 * tgi_patch_journal_check) on arbitrary bytes: what recovery reads from
 * <workspace>/.toolgate/journal/ after a crash, and what a hostile
 * repository could plant there.
 *
 * Invariants checked (a violation traps):
 *   - the answer is 1 or 2 (the versions read) with a canonical text, or
 *     -1, no text and one printable sentence;
 *   - the canonical text reads back as the same version and is written
 *     back byte for byte the same (what recovery acts on is what it read);
 *   - a journal of any other version is refused, its sentence naming it.
 * Nothing here touches the file system.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512] = "", err2[512] = "", *canon = (char *)1, *again = (char *)1;
	int v = tgi_patch_journal_check((const char *)data, size, &canon, err, sizeof err);
	if (v < 0) {
		check(v == -1 && canon == NULL && err[0] != '\0' && printable(err));
		return 0;
	}
	check((v == 1 || v == 2) && canon != NULL);
	int w = tgi_patch_journal_check(canon, strlen(canon), &again, err2, sizeof err2);
	check(w == v && again != NULL && strcmp(again, canon) == 0);
	free(again);
	free(canon);
	return 0;
}
