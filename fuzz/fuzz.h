/*
 * fuzz.h — what the fuzz targets share: a check that stops the fuzzer with
 * a crash it reports, and the test that a message is one printable line.
 */
#ifndef TG_FUZZ_H
#define TG_FUZZ_H

/* A property that must hold: a trap, which libFuzzer reports as a crash. */
static inline void check(int ok)
{
	if (!ok)
		__builtin_trap();
}

/* No control characters: a message fit for a log line or a model. */
static inline int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

#endif
