/*
 * html.c — the HTML every console page shares: escaping, the page shell
 * and its navigation, status badges, times, durations, the one-line
 * argument summary, and the login and error pages.
 *
 * Everything a page shows that came from a call (tool names, arguments,
 * outputs, messages, ids) is attacker-controlled text: it reaches the page
 * only through tgc_html_text (escaped, control characters and invalid
 * UTF-8 replaced) or tgc_html_url (percent-encoded).  Pages carry no
 * inline script or style: the shell links the one stylesheet and the one
 * deferred script.
 *
 * Owns: the shell's markup (data-page, nav, csrf meta).  Must not: read
 * the ledger, or let any text through unescaped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/console.h"

/* ---- escaping ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 when the
 * bytes there are not one (overlong, surrogate, past U+10FFFF, cut). */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, min = 0x80, c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, min = 0x800, c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, min = 0x10000, c &= 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* What stands for a code point that must not reach the page as it is, or
 * NULL when it may. */
static const char *html_replacement(unsigned cp)
{
	switch (cp) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&#39;";
	case '\t':
	case '\n': return NULL;
	}
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
		return "\xef\xbf\xbd";   /* U+FFFD: controls are not text */
	return NULL;
}

void tgc_html_text(tgi_buf *b, const char *text)
{
	if (!text)
		return;
	const unsigned char *s = (const unsigned char *)text;
	size_t n = strlen(text), run = 0, i = 0;
	while (i < n) {
		unsigned cp;
		size_t len = utf8_seq(s + i, n - i, &cp);
		const char *rep = len ? html_replacement(cp) : "\xef\xbf\xbd";
		if (!rep) {
			i += len;
			continue;
		}
		tgi_buf_append(b, s + run, i - run);
		tgi_buf_puts(b, rep);
		i += len ? len : 1;
		run = i;
	}
	tgi_buf_append(b, s + run, n - run);
}

void tgc_html_url(tgi_buf *b, const char *text)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!text)
		return;
	for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
		unsigned char c = *s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			tgi_buf_append(b, s, 1);
		} else {
			char pct[3] = {'%', hex[c >> 4], hex[c & 15]};
			tgi_buf_append(b, pct, 3);
		}
	}
}

/* ---- the shell ---- */

static const struct {
	tgc_route   route;
	const char *page;   /* body[data-page] */
} pages[] = {
	{TGC_LIVE, "live"},         {TGC_APPROVALS, "approvals"}, {TGC_CALL, "call"},
	{TGC_STATS, "stats"},       {TGC_SESSIONS, "sessions"},   {TGC_SESSION, "session"},
	{TGC_LOGIN, "login"},
};

static const struct {
	const char *href, *label;
	tgc_route   route, also;    /* the page is under this entry */
} nav[] = {
	{"/live", "Live", TGC_LIVE, TGC_CALL},
	{"/approvals", "Approvals", TGC_APPROVALS, TGC_APPROVALS},
	{"/stats", "Stats", TGC_STATS, TGC_STATS},
	{"/sessions", "Sessions", TGC_SESSIONS, TGC_SESSION},
};

static const char *page_name(tgc_route r)
{
	for (size_t i = 0; i < TGI_ARRAY_LEN(pages); i++)
		if (pages[i].route == r)
			return pages[i].page;
	return "error";
}

void tgc_html_begin(tgi_buf *b, const tgc_ctx *c, const char *title, tgc_route active)
{
	tgi_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	                "<meta name=\"referrer\" content=\"same-origin\">\n");
	if (c && c->csrf && *c->csrf) {
		tgi_buf_puts(b, "<meta name=\"csrf-token\" content=\"");
		tgc_html_text(b, c->csrf);
		tgi_buf_puts(b, "\">\n");
	}
	tgi_buf_puts(b, "<title>");
	tgc_html_text(b, title);
	tgi_buf_puts(b, " \xc2\xb7 toolgate</title>\n"
	                "<link rel=\"stylesheet\" href=\"/static/console.css\">\n"
	                "<script src=\"/static/console.js\" defer></script>\n</head>\n");
	tgi_buf_printf(b, "<body data-page=\"%s\">\n<header class=\"top\">\n"
	                  "<a class=\"brand\" href=\"/live\">toolgate</a>\n<nav>\n",
	               page_name(active));
	for (size_t i = 0; i < TGI_ARRAY_LEN(nav); i++) {
		int on = active == nav[i].route || active == nav[i].also;
		tgi_buf_printf(b, "<a href=\"%s\"%s>%s</a>\n", nav[i].href,
		               on ? " class=\"active\" aria-current=\"page\"" : "", nav[i].label);
	}
	tgi_buf_puts(b, "</nav>\n<span id=\"stream-note\" class=\"stream-note\" hidden></span>\n"
	                "</header>\n<main>\n");
}

void tgc_html_end(tgi_buf *b)
{
	tgi_buf_puts(b, "</main>\n</body>\n</html>\n");
}

void tgc_reply_html(tgc_reply *rep, int status)
{
	tgi_buf_free(&rep->body);
	tgi_buf_init(&rep->body, TGC_PAGE_MAX);
	free(rep->location);
	rep->location = NULL;
	rep->status = status;
	rep->type = "text/html; charset=utf-8";
}

/* ---- small parts ---- */

void tgc_html_badge(tgi_buf *b, const char *status)
{
	const char *cls = "unknown";
	for (int s = 0; s < TG_STATUS__COUNT; s++)
		if (status && !strcmp(status, tg_status_name((tg_status)s)))
			cls = status;
	tgi_buf_printf(b, "<span class=\"badge badge-%s\">", cls);
	tgc_html_text(b, status && *status ? status : "unknown");
	tgi_buf_puts(b, "</span>");
}

/* Is iso shaped like the ledger's times (2026-11-30T03:49:36.123Z)? */
static int iso_ok(const char *iso)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	if (!iso || strlen(iso) < sizeof shape - 1 || strlen(iso) > 40)
		return 0;
	for (size_t i = 0; i < sizeof shape - 1; i++)
		if (shape[i] == 'd' ? iso[i] < '0' || iso[i] > '9' : iso[i] != shape[i])
			return 0;
	return 1;
}

void tgc_html_time(tgi_buf *b, const char *iso, const char *cls)
{
	if (!iso_ok(iso)) {
		tgc_html_text(b, iso);
		return;
	}
	tgi_buf_puts(b, "<time");
	if (cls)
		tgi_buf_printf(b, " class=\"%s\"", cls);
	tgi_buf_puts(b, " datetime=\"");
	tgc_html_text(b, iso);
	tgi_buf_puts(b, "\" title=\"");
	tgc_html_text(b, iso);
	tgi_buf_puts(b, "\">");
	tgi_buf_append(b, iso + 11, 8);   /* HH:MM:SS, UTC until the script shows it local */
	tgi_buf_puts(b, "</time>");
}

void tgc_html_duration(tgi_buf *b, double ms)
{
	if (!(ms >= 0))
		return;
	if (ms < 1000)
		tgi_buf_printf(b, "%.1f ms", ms);
	else
		tgi_buf_printf(b, "%.2f s", ms / 1000);
}

char *tgc_args_summary(const char *args)
{
	if (!args || !*args || !strcmp(args, "null"))
		return tgi_strdup("");
	size_t n = strlen(args);
	size_t cut = tgi_utf8_offset(args, n, TGC_SUMMARY_CPS);
	char *out = tgi_xmalloc(cut + 4);
	memcpy(out, args, cut);
	for (size_t i = 0; i < cut; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = ' ';
	strcpy(out + cut, cut < n ? "\xe2\x80\xa6" : "");
	return out;
}

const char *tgc_stop_stage(const json_t *envelope)
{
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(envelope, "stages"), i, st) {
		const char *name = json_string_value(json_object_get(st, "stage"));
		if (name && json_is_false(json_object_get(st, "ok")))
			return name;
	}
	return "";
}

/* ---- the login and error pages ---- */

void tgc_page_login(const tgc_ctx *c, const char *error, tgc_reply *rep)
{
	tgc_reply_html(rep, error ? 401 : 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, "Sign in", TGC_LOGIN);
	tgi_buf_puts(b, "<h1>Sign in</h1>\n<p>Open the link <code>toolgate console</code> printed "
	                "when it started, or paste its access token here.</p>\n");
	if (error) {
		tgi_buf_puts(b, "<p class=\"error\">");
		tgc_html_text(b, error);
		tgi_buf_puts(b, "</p>\n");
	}
	tgi_buf_puts(b, "<form id=\"login\" method=\"post\" action=\"/login\">\n"
	                "<label>Access token <input type=\"password\" name=\"token\" "
	                "autocomplete=\"current-password\" required autofocus></label>\n"
	                "<button type=\"submit\">Sign in</button>\n</form>\n");
	tgc_html_end(b);
}

static const char *status_text(int status)
{
	static const struct {
		int         code;
		const char *text;
	} texts[] = {
		{400, "Bad Request"},     {401, "Unauthorized"},         {403, "Forbidden"},
		{404, "Not Found"},       {405, "Method Not Allowed"},   {409, "Conflict"},
		{413, "Payload Too Large"}, {414, "URI Too Long"},       {500, "Internal Server Error"},
		{503, "Service Unavailable"},
	};
	for (size_t i = 0; i < TGI_ARRAY_LEN(texts); i++)
		if (texts[i].code == status)
			return texts[i].text;
	return "Error";
}

void tgc_page_error(const tgc_ctx *c, int status, const char *sentence, tgc_reply *rep)
{
	tgc_reply_html(rep, status);
	tgi_buf *b = &rep->body;
	char title[64];
	tgi_snprintf(title, sizeof title, "%d %s", status, status_text(status));
	tgc_html_begin(b, c, title, TGC_NOT_FOUND);
	tgi_buf_puts(b, "<h1>");
	tgc_html_text(b, title);
	tgi_buf_puts(b, "</h1>\n<p>");
	tgc_html_text(b, sentence ? sentence : status_text(status));
	tgi_buf_puts(b, "</p>\n");
	tgc_html_end(b);
}
