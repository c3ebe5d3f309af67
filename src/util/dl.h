/*
 * dl.h — libcurl and libmicrohttpd, loaded at run time when first needed.
 *
 * Most runs of toolgate (`serve` on stdio, `call`, `dispatch`) never speak
 * HTTP, and these two libraries bring some thirty more with them (TLS,
 * Kerberos, LDAP, ssh, p11-kit): megabytes of resident memory for nothing.
 * So the program is not linked with them; the first HTTP client connection
 * loads libcurl, and `serve --http` loads libmicrohttpd, with dlopen().
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
 * Owns: the two library handles (never closed) and their tables.  Must
 * not: know MCP, HTTP sessions or anything of the callers.
 */
#ifndef TGI_UTIL_DL_H
#define TGI_UTIL_DL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <microhttpd.h>

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

#define TGI_DL_CURL_MEMBER(f) __typeof__(curl_##f) *f;
#define TGI_DL_MHD_MEMBER(f)  __typeof__(MHD_##f) *f;
typedef struct tgi_curl_api { TGI_CURL_FUNCTIONS(TGI_DL_CURL_MEMBER) } tgi_curl_api;
typedef struct tgi_mhd_api  { TGI_MHD_FUNCTIONS(TGI_DL_MHD_MEMBER) } tgi_mhd_api;
#undef TGI_DL_CURL_MEMBER
#undef TGI_DL_MHD_MEMBER

/* The tables: valid once their load function has returned 0; never changed after. */
extern tgi_curl_api tgi_curl;
extern tgi_mhd_api  tgi_mhd;

/*
 * Load libcurl (libcurl.so.4) and call curl_global_init, or libmicrohttpd
 * (libmicrohttpd.so.12).  The first call in the process does the work
 * (concurrent first calls wait for it); every later call gives the same
 * answer.  0, or -1 with a sentence in err, e.g. "Streamable HTTP needs
 * libmicrohttpd (Debian package libmicrohttpd12): <what the loader said>".
 * Thread-safe.
 */
int tgi_curl_load(char *err, size_t errlen);
int tgi_mhd_load(char *err, size_t errlen);

/* Does url name this machine (localhost, 127.0.0.0/8, [::1])?  0 for a URL
 * curl cannot parse.  After tgi_curl_load returned 0. */
int tgi_curl_url_is_loopback(const char *url);

#endif
