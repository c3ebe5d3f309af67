/*
 * fuzz_yaml.c — arbitrary bytes into tgi_yaml_parse, and whatever parses
 * into the semantic config check (tgi_config_from_json).
 *
 * Owns: nothing.  Must not: write files; every input must end in a value or
 * a "line:col: sentence" error, never a crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	tgi_srcmap *map = NULL;
	int line, col;

	if (size > (1u << 20))
		return 0;
	err[0] = '\0';
	json_t *root = tgi_yaml_parse((const char *)data, size, &map, err, sizeof err);
	if (!root) {
		/* every error says where: "line:col: ..." */
		if (map || !err[0] || strspn(err, "0123456789") == 0)
			abort();
		return 0;
	}

	/* every top-level node is in the map, and the map answers bad pointers */
	if (tgi_srcmap_lookup(map, "", &line, &col) < 0 || line < 1 || col < 1)
		abort();
	if (json_is_object(root)) {
		const char *key;
		json_t *v;
		json_object_foreach(root, key, v) {
			char ptr[256];
			tgi_json_pointer_join(ptr, sizeof ptr, "", key);
			if (strlen(key) < 100 && tgi_srcmap_lookup(map, ptr, &line, &col) < 0)
				abort();
		}
	}
	tgi_srcmap_lookup(map, "/a/0/~1/~0/~", &line, &col);
	tgi_srcmap_lookup(map, "no-slash", &line, &col);

	tgi_config *c = NULL;
	if (tgi_config_from_json(root, map, "fuzz.yaml", "/nonexistent", &c, err, sizeof err) == 0) {
		char where[128];
		tgi_config_where(c, "/tools", where, sizeof where);
		tgi_config_free(c);
	} else if (!err[0]) {
		abort();
	}
	return 0;
}
