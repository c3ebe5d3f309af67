/* SKELETON: replaced by the PostgreSQL store. */
#include "store/impl.h"
#include "util/util.h"

int tgi_pg_open(const char *url, int flags, tgi_store **out, char *err, size_t errlen)
{
	(void)url;
	(void)flags;
	*out = NULL;
	tgi_snprintf(err, errlen, "the PostgreSQL store is not built yet");
	return -1;
}
