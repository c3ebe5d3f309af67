/*
 * fuzz_sbmask.c — libFuzzer target for the read-mask cache file's reader
 * (src/exec/sbmask.c, tgi_sbmask_store_check).
 *
 * The input is the file's text, read for root "/ws" and a fixed key
 * digest.  A text it takes must give at least one directory; one it
 * refuses gives no counts.  Any crash, leak, hang or sanitizer report is a
 * bug; a refusal is an ordinary outcome (a cache miss).
 *
 * Owns: nothing beyond one input.  Must not: touch the filesystem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/sbmask.h"

#define KEY "5bd6d5d1d0a7b3ef1b0e2a4c3d9f8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nd = 1, np = 1;
	if (size > (1u << 20))
		size = 1u << 20;
	int r = tgi_sbmask_store_check((const char *)data, size, "/ws", KEY, &nd, &np);
	if (r == 0 && nd == 0)
		abort();
	if (r != 0 && (r != -1 || nd || np))
		abort();
	return 0;
}
