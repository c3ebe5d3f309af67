/*
 * dl.h — libcurl, libmicrohttpd and libpq, loaded at run time when first
 * needed.
 *
 * Most runs of toolgate (`serve` on stdio, `call`, `dispatch`) never speak
 * HTTP, and these libraries bring some thirty more with them (TLS,
 * Kerberos, LDAP, ssh, p11-kit): megabytes of resident memory for nothing.
 * So the program is not linked with them; the first HTTP client connection
 * loads libcurl, `serve --http` loads libmicrohttpd, and a PostgreSQL
 * ledger (src/store/postgres.c) loads libpq, with dlopen().
 *
 * Each library is one table of function pointers whose types are taken
 * from the library's own header (__typeof__ of the real declaration), so a
 * mismatch is a compile error.  A table is filled once per process, under
 * pthread_once, by its load function; it is read only after that function
 * returned 0 (in this thread, or in one that happened before this one).
 * Variadic functions (curl_easy_setopt, MHD_start_daemon) are called
 * through the pointer as declared, with the same argument types as before:
 * the type-checking macros of curl.h no longer see those calls.
 *
 * Owns: the library handles (never closed) and their tables.  Must not:
 * know MCP, HTTP sessions, the ledger or anything of the callers.
 */
#ifndef TGI_UTIL_DL_H
#define TGI_UTIL_DL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <libpq-fe.h>

/* The libcurl functions we use; member f is curl_<f>. */
#define TGI_CURL_FUNCTIONS(X)                                                     \
	X(global_init) X(free) X(easy_strerror) X(multi_strerror)                 \
	X(easy_init) X(easy_cleanup) X(easy_reset) X(easy_setopt) X(easy_getinfo) \
	X(multi_init) X(multi_cleanup) X(multi_add_handle) X(multi_remove_handle) \
	X(multi_perform) X(multi_poll) X(multi_info_read)                         \
	X(slist_append) X(slist_free_all)                                         \
	X(url) X(url_cleanup) X(url_set) X(url_get)

/* The libmicrohttpd functions we use; member f is MHD_<f>. */
#define TGI_MHD_FUNCTIONS(X)                                                          \
	X(start_daemon) X(stop_daemon)                                                \
	X(get_connection_info) X(lookup_connection_value)                             \
	X(create_response_from_buffer) X(create_response_from_callback)               \
	X(add_response_header) X(queue_response) X(destroy_response)

/* The libpq functions we use; member f is PQ<f>. */
#define TGI_PQ_FUNCTIONS(X)                                                           \
	X(connectdbParams) X(finish) X(status) X(errorMessage) X(transactionStatus)   \
	X(socket) X(setNoticeProcessor) X(host) X(port) X(db)                         \
	X(conninfoParse) X(conninfoFree) X(freemem)                                   \
	X(exec) X(sendQueryParams) X(sendPrepare) X(sendQueryPrepared) X(getResult)   \
	X(setSingleRowMode) X(enterPipelineMode) X(exitPipelineMode) X(pipelineSync) \
	X(resultStatus) X(resultErrorField) X(resultErrorMessage) X(clear)            \
	X(ntuples) X(getvalue) X(getisnull)                                           \
	X(consumeInput) X(notifies) X(getCancel) X(cancel) X(freeCancel)            \
	X(connectStartParams) X(connectPoll) X(isBusy)

#define TGI_DL_CURL_MEMBER(f) __typeof__(curl_##f) *f;
#define TGI_DL_MHD_MEMBER(f)  __typeof__(MHD_##f) *f;
#define TGI_DL_PQ_MEMBER(f)   __typeof__(PQ##f) *f;
typedef struct tgi_curl_api { TGI_CURL_FUNCTIONS(TGI_DL_CURL_MEMBER) } tgi_curl_api;
typedef struct tgi_mhd_api  { TGI_MHD_FUNCTIONS(TGI_DL_MHD_MEMBER) } tgi_mhd_api;
typedef struct tgi_pq_api   { TGI_PQ_FUNCTIONS(TGI_DL_PQ_MEMBER) } tgi_pq_api;
#undef TGI_DL_CURL_MEMBER
#undef TGI_DL_MHD_MEMBER
#undef TGI_DL_PQ_MEMBER

/* The tables: valid once their load function has returned 0; never changed after. */
extern tgi_curl_api tgi_curl;
extern tgi_mhd_api  tgi_mhd;
extern tgi_pq_api   tgi_pq;

/*
 * Load libcurl (libcurl.so.4) and call curl_global_init, libmicrohttpd
 * (libmicrohttpd.so.12), or libpq (libpq.so.5).  The first call in the
 * process does the work (concurrent first calls wait for it); every later
 * call gives the same answer.  0, or -1 with a sentence in err, e.g.
 * "Streamable HTTP needs libmicrohttpd (Debian package libmicrohttpd12):
 * <what the loader said>".  Thread-safe.
 */
int tgi_curl_load(char *err, size_t errlen);
int tgi_mhd_load(char *err, size_t errlen);
int tgi_pq_load(char *err, size_t errlen);

/* Does url name this machine (localhost, 127.0.0.0/8, [::1])?  0 for a URL
 * curl cannot parse.  After tgi_curl_load returned 0. */
int tgi_curl_url_is_loopback(const char *url);

#endif
