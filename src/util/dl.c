/*
 * dl.c — loads libcurl, libmicrohttpd and libpq on first use (see dl.h).
 *
 * One `library` record per library: its soname, the sentence that names
 * what needs it and which Debian package brings it, and the answer of its
 * one load (0, or -1 with the sentence).  The load runs under the record's
 * pthread_once: dlopen with RTLD_NOW (every symbol bound now, not at some
 * later call) and RTLD_LOCAL (nothing it brings leaks into the global
 * namespace), then dlsym for each member of the table, filled into a local
 * copy and published only when complete.  A library that cannot be opened,
 * or lacks a function, is an answer too: it is never tried again.
 *
 * Owns: the handles (never closed: the tables point into them), the
 * tables, each load's answer.  Must not: call the libraries beyond
 * curl_global_init and the one URL question its two HTTP clients share
 * (tgi_curl_url_is_loopback), or know who needs them (beyond the sentence
 * that names what a missing library takes away).
 */
#include "util/dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

#define WHY_MAX 512

typedef struct library {
	pthread_once_t once;
	const char    *soname;
	const char    *needs;       /* "Streamable HTTP needs X (Debian package Y)" */
	int            rc;          /* the answer: 0 or -1 */
	char           why[WHY_MAX];/* ... with this sentence when -1 */
} library;

static library curl_lib = {
	PTHREAD_ONCE_INIT, "libcurl.so.4",
	"Streamable HTTP needs libcurl (Debian package libcurl4)", -1, "",
};
static library mhd_lib = {
	PTHREAD_ONCE_INIT, "libmicrohttpd.so.12",
	"Streamable HTTP needs libmicrohttpd (Debian package libmicrohttpd12)", -1, "",
};

static library pq_lib = {
	PTHREAD_ONCE_INIT, "libpq.so.5",
	"a PostgreSQL ledger needs libpq 14 or later (Debian package libpq5)", -1, "",
};

tgi_curl_api tgi_curl;
tgi_mhd_api  tgi_mhd;
tgi_pq_api   tgi_pq;

/* The load of l failed: the sentence, with what the dynamic loader said. */
static void failed(library *l, const char *detail)
{
	char shown[WHY_MAX];

	tgi_sanitize(shown, sizeof shown, detail && *detail ? detail : "unknown error");
	tgi_snprintf(l->why, sizeof l->why, "%s: %s", l->needs, shown);
}

static void *open_library(library *l)
{
	void *h;

	dlerror(); /* forget an earlier failure: only this load's is reported */
	h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		failed(l, dlerror());
	return h;
}

/* Resolve sym into *fn; -1 (the sentence set, h closed) when it is missing. */
static int resolve(library *l, void *h, const char *sym, void **fn)
{
	*fn = dlsym(h, sym);
	if (*fn)
		return 0;
	failed(l, dlerror());
	dlclose(h);
	return -1;
}

/* Resolve the symbol prefix f into the member t.f, or end the load (in a
 * load function, with l, h and t in scope). */
#define RESOLVE(prefix, f)                                      \
	{                                                       \
		void *fn;                                       \
		if (resolve(l, h, prefix #f, &fn) < 0)          \
			return;                                 \
		t.f = (__typeof__(t.f))fn;                      \
	}

static void curl_load_once(void)
{
	library *l = &curl_lib;
	tgi_curl_api t;
	CURLcode rc;
	void *h = open_library(l);

	if (!h)
		return;
#define X(f) RESOLVE("curl_", f)
	TGI_CURL_FUNCTIONS(X)
#undef X
	/* once per process, before any other thread can use libcurl; the
	 * library stays loaded, so this is never undone */
	rc = t.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		tgi_snprintf(l->why, sizeof l->why, "libcurl could not be initialised: %s",
		             t.easy_strerror(rc));
		return;
	}
	tgi_curl = t;
	l->rc = 0;
}

static void mhd_load_once(void)
{
	library *l = &mhd_lib;
	tgi_mhd_api t;
	void *h = open_library(l);

	if (!h)
		return;
#define X(f) RESOLVE("MHD_", f)
	TGI_MHD_FUNCTIONS(X)
#undef X
	tgi_mhd = t;
	l->rc = 0;
}

static void pq_load_once(void)
{
	library *l = &pq_lib;
	tgi_pq_api t;
	void *h = open_library(l);

	if (!h)
		return;
#define X(f) RESOLVE("PQ", f)
	TGI_PQ_FUNCTIONS(X)
#undef X
	tgi_pq = t;
	l->rc = 0;
}

/* l's answer, once its load has run. */
static int answer(library *l, char *err, size_t errlen)
{
	if (l->rc < 0)
		tgi_snprintf(err, errlen, "%s", l->why);
	return l->rc;
}

int tgi_curl_load(char *err, size_t errlen)
{
	pthread_once(&curl_lib.once, curl_load_once);
	return answer(&curl_lib, err, errlen);
}

int tgi_mhd_load(char *err, size_t errlen)
{
	pthread_once(&mhd_lib.once, mhd_load_once);
	return answer(&mhd_lib, err, errlen);
}

int tgi_pq_load(char *err, size_t errlen)
{
	pthread_once(&pq_lib.once, pq_load_once);
	return answer(&pq_lib, err, errlen);
}

int tgi_curl_url_is_loopback(const char *url)
{
	const tgi_curl_api *c = &tgi_curl;
	CURLU *u = c->url();
	char *host = NULL;
	int yes = 0;

	if (u && c->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    c->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
		yes = strcasecmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
		      strcmp(host, "[::1]") == 0;
	c->free(host);
	c->url_cleanup(u);
	return yes;
}
