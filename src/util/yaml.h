/*
 * yaml.h — YAML text to JSON, with a source map from each node's JSON
 * pointer to its line:column (src/util/yaml.c).
 *
 * Owns: the parse and the source map it returns.  Must not: know what a
 * configuration means (config.h does), read files, or keep state.
 */
#ifndef TGI_YAML_H
#define TGI_YAML_H

#include <stddef.h>
#include <jansson.h>

typedef struct tgi_srcmap tgi_srcmap;

/*
 * Parse YAML (a JSON document is valid YAML) from text into JSON.  Scalars:
 * plain null/~/true/false/ints/floats become JSON scalars, quoted scalars
 * stay strings.  Anchors and aliases are refused, as are duplicate keys and
 * non-scalar keys.  map (if not NULL) receives a map from each node's JSON
 * pointer to its line:column (caller frees with tgi_srcmap_free).  On error
 * returns NULL with "line:col: what was expected" in err.
 */
json_t *tgi_yaml_parse(const char *text, size_t len, tgi_srcmap **map, char *err, size_t errlen);
int     tgi_srcmap_lookup(const tgi_srcmap *m, const char *ptr, int *line, int *col);
/* The same, but for a mapping's member the line:column of its key (a
 * sequence's item: the item), where a configuration error points. */
int     tgi_srcmap_lookup_key(const tgi_srcmap *m, const char *ptr, int *line, int *col);
void    tgi_srcmap_free(tgi_srcmap *m);

#endif
