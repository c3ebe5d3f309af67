/*
 * stats.c — the Stats page (GET /stats?window=hour|day|all): from
 * tg_stats, per-tool calls by status, p50/p99 duration per tool and
 * denials by rule, each as a small SVG bar chart drawn here (horizontal
 * bars with labels; no script), then the numbers as table#tools.
 *
 * Each chart is an svg.chart holding one g.bar per row (a tool, or a
 * rule): its label, its bar(s) as rects whose classes the stylesheet
 * colours, its value, and a <title> with the full text.
 *
 * Owns: the Stats markup and the charts' geometry.  Must not: write
 * anything.
 */
#include <stdlib.h>
#include <string.h>

#include "console/console.h"

#define CHART_W    720
#define LABEL_W    200   /* the label column (text anchored at its right end) */
#define BAR_X      210
#define BAR_W      320   /* the longest bar (room after it for its value) */
#define ROW_H      24
#define BAR_H      16
#define LABEL_CPS  28    /* code points of a label before it is cut */

static const struct {
	const char *name, *label;
	long long   ms;      /* how far back it starts; 0: all */
} windows[] = {
	{"hour", "Last hour", 3600LL * 1000},
	{"day", "Last day", 86400LL * 1000},
	{"all", "All time", 0},
};

/* A label cut to LABEL_CPS code points with "…", escaped. */
static void label(tgi_buf *b, const char *text)
{
	size_t n = strlen(text), cut = tgi_utf8_offset(text, n, LABEL_CPS);
	char *s = tgi_strndup(text, cut);
	tgc_html_text(b, s);
	if (cut < n)
		tgi_buf_puts(b, "\xe2\x80\xa6");
	free(s);
}

/* An svg.chart of rows bars (none: a line saying so). */
static void chart_begin(tgi_buf *b, const char *id, const char *title, size_t rows,
                        const char *none)
{
	unsigned h = (unsigned)((rows ? rows : 1) * ROW_H + 8);
	tgi_buf_printf(b, "<figure>\n<figcaption>%s</figcaption>\n<svg class=\"chart\" id=\"%s\" "
	                  "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %u\" width=\"%d\" "
	                  "height=\"%u\" role=\"img\" aria-label=\"%s\">\n",
	               title, id, CHART_W, h, CHART_W, h, title);
	if (!rows)
		tgi_buf_printf(b, "<text class=\"none\" x=\"%d\" y=\"%d\">%s</text>\n", BAR_X,
		               4 + BAR_H - 3, none);
}

static void chart_end(tgi_buf *b)
{
	tgi_buf_puts(b, "</svg>\n</figure>\n");
}

/* The start of row i's g.bar: data-name, <title>, the label. */
static void bar_begin(tgi_buf *b, size_t i, const char *name, const char *title)
{
	tgi_buf_puts(b, "<g class=\"bar\" data-name=\"");
	tgc_html_text(b, name);
	tgi_buf_puts(b, "\"><title>");
	tgc_html_text(b, title);
	tgi_buf_printf(b, "</title><text class=\"label\" x=\"%d\" y=\"%zu\" text-anchor=\"end\">",
	               LABEL_W, i * ROW_H + 4 + BAR_H - 3);
	label(b, name);
	tgi_buf_puts(b, "</text>");
}

static double width_of(double v, double max)
{
	if (!(v > 0) || !(max > 0))
		return 0;
	double w = v / max * BAR_W;
	return w < 1 ? 1 : w;
}

static void rect(tgi_buf *b, const char *cls, double x, size_t i, double w, int h, int dy)
{
	tgi_buf_printf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%zu\" width=\"%.1f\" height=\"%d\"/>",
	               cls, x, i * ROW_H + 4 + (size_t)dy, w, h);
}

static void value(tgi_buf *b, double x, size_t i, const char *text)
{
	tgi_buf_printf(b, "<text class=\"value\" x=\"%.1f\" y=\"%zu\">", x + 6,
	               i * ROW_H + 4 + BAR_H - 3);
	tgc_html_text(b, text);
	tgi_buf_puts(b, "</text></g>\n");
}

/* Calls by tool, one bar per tool in segments by status. */
static void chart_calls(tgi_buf *b, const json_t *tools)
{
	double max = 0;
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
		if (json_number_value(json_object_get(t, "calls")) > max)
			max = json_number_value(json_object_get(t, "calls"));
	chart_begin(b, "chart-calls", "Calls by tool and status", json_array_size(tools),
	            "No calls in this window.");
	json_array_foreach(tools, i, t) {
		const char *tool = json_string_value(json_object_get(t, "tool"));
		const json_t *by = json_object_get(t, "by_status");
		long long calls = (long long)json_number_value(json_object_get(t, "calls"));
		char title[512], part[96];
		tgi_snprintf(title, sizeof title, "%s: %lld calls", tool ? tool : "?", calls);
		for (int s = 0; s < TG_STATUS__COUNT; s++) {
			json_int_t n = json_integer_value(json_object_get(by, tg_status_name((tg_status)s)));
			if (n > 0) {
				tgi_snprintf(part, sizeof part, ", %s %lld", tg_status_name((tg_status)s),
				             (long long)n);
				strncat(title, part, sizeof title - strlen(title) - 1);
			}
		}
		bar_begin(b, i, tool ? tool : "?", title);
		double x = BAR_X;
		for (int s = 0; s < TG_STATUS__COUNT; s++) {
			json_int_t n = json_integer_value(json_object_get(by, tg_status_name((tg_status)s)));
			if (n <= 0)
				continue;
			char cls[48];
			tgi_snprintf(cls, sizeof cls, "seg seg-%s", tg_status_name((tg_status)s));
			double w = width_of((double)n, max);
			rect(b, cls, x, i, w, BAR_H, 0);
			x += w;
		}
		char v[32];
		tgi_snprintf(v, sizeof v, "%lld", calls);
		value(b, x, i, v);
	}
	chart_end(b);
}

static void ms_text(char *out, size_t cap, const json_t *v)
{
	if (!json_is_number(v))
		tgi_snprintf(out, cap, "\xe2\x80\x94");
	else if (json_number_value(v) < 1000)
		tgi_snprintf(out, cap, "%.1f ms", json_number_value(v));
	else
		tgi_snprintf(out, cap, "%.2f s", json_number_value(v) / 1000);
}

/* p50 and p99 per tool: the p99 bar with the p50 bar over it. */
static void chart_latency(tgi_buf *b, const json_t *tools)
{
	double max = 0;
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
		if (json_number_value(json_object_get(t, "p99_ms")) > max)
			max = json_number_value(json_object_get(t, "p99_ms"));
	chart_begin(b, "chart-latency", "Duration per tool: p50 (dark) and p99",
	            json_array_size(tools), "No calls in this window.");
	json_array_foreach(tools, i, t) {
		const char *tool = json_string_value(json_object_get(t, "tool"));
		json_t *p50 = json_object_get(t, "p50_ms"), *p99 = json_object_get(t, "p99_ms");
		char a[32], z[32], title[512], v[80];
		ms_text(a, sizeof a, p50);
		ms_text(z, sizeof z, p99);
		if (json_is_number(p99)) {
			tgi_snprintf(v, sizeof v, "p50 %s \xc2\xb7 p99 %s", a, z);
		} else {
			tgi_snprintf(v, sizeof v, "did not run");
		}
		tgi_snprintf(title, sizeof title, "%s: %s", tool ? tool : "?", v);
		bar_begin(b, i, tool ? tool : "?", title);
		double w99 = width_of(json_number_value(p99), max);
		double w50 = width_of(json_number_value(p50), max);
		if (w99 > 0)
			rect(b, "p99", BAR_X, i, w99, BAR_H, 0);
		if (w50 > 0)
			rect(b, "p50", BAR_X, i, w50, BAR_H - 8, 4);
		value(b, BAR_X + w99, i, v);
	}
	chart_end(b);
}

/* Denials by rule (and kind). */
static void chart_denials(tgi_buf *b, const json_t *denials)
{
	double max = 0;
	size_t i;
	json_t *d;
	json_array_foreach(denials, i, d)
		if (json_number_value(json_object_get(d, "count")) > max)
			max = json_number_value(json_object_get(d, "count"));
	chart_begin(b, "chart-denials", "Denials by rule", json_array_size(denials),
	            "No denials in this window.");
	json_array_foreach(denials, i, d) {
		const char *rule = json_string_value(json_object_get(d, "rule"));
		const char *kind = json_string_value(json_object_get(d, "kind"));
		long long n = (long long)json_number_value(json_object_get(d, "count"));
		char title[768], v[32];
		tgi_snprintf(title, sizeof title, "%s (%s): %lld", rule ? rule : "(no rule)",
		             kind ? kind : "?", n);
		bar_begin(b, i, rule ? rule : "(no rule)", title);
		double w = width_of((double)n, max);
		rect(b, "seg seg-denied", BAR_X, i, w, BAR_H, 0);
		tgi_snprintf(v, sizeof v, "%lld", n);
		value(b, BAR_X + w, i, v);
	}
	chart_end(b);
}

static void legend(tgi_buf *b)
{
	tgi_buf_puts(b, "<ul class=\"legend\">\n");
	for (int s = 0; s < TG_STATUS__COUNT; s++)
		tgi_buf_printf(b, "<li><span class=\"swatch swatch-%s\"></span>%s</li>\n",
		               tg_status_name((tg_status)s), tg_status_name((tg_status)s));
	tgi_buf_puts(b, "</ul>\n");
}

static void tools_table(tgi_buf *b, const json_t *tools)
{
	tgi_buf_puts(b, "<table id=\"tools\">\n<thead><tr><th>Tool</th><th class=\"num\">Calls</th>");
	for (int s = 0; s < TG_STATUS__COUNT; s++)
		tgi_buf_printf(b, "<th class=\"num\">%s</th>", tg_status_name((tg_status)s));
	tgi_buf_puts(b, "<th class=\"num\">p50</th><th class=\"num\">p99</th></tr></thead>\n<tbody>\n");
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		const json_t *by = json_object_get(t, "by_status");
		tgi_buf_puts(b, "<tr><td class=\"tool\">");
		tgc_html_text(b, json_string_value(json_object_get(t, "tool")));
		tgi_buf_printf(b, "</td><td class=\"num\">%lld</td>",
		               (long long)json_number_value(json_object_get(t, "calls")));
		for (int s = 0; s < TG_STATUS__COUNT; s++)
			tgi_buf_printf(b, "<td class=\"num\">%lld</td>",
			               (long long)json_integer_value(
			                   json_object_get(by, tg_status_name((tg_status)s))));
		char a[32], z[32];
		ms_text(a, sizeof a, json_object_get(t, "p50_ms"));
		ms_text(z, sizeof z, json_object_get(t, "p99_ms"));
		tgi_buf_printf(b, "<td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n", a, z);
	}
	tgi_buf_puts(b, "</tbody>\n</table>\n");
}

void tgc_page_stats(const tgc_ctx *c, const tgc_request *r, tgc_reply *rep)
{
	const char *want = tgc_param_get(&r->query, "window");
	size_t w = 0;
	while (want && *want && w < TGI_ARRAY_LEN(windows) && strcmp(want, windows[w].name))
		w++;
	if (w == TGI_ARRAY_LEN(windows)) {
		tgc_page_error(c, 400, "window must be hour, day or all", rep);
		return;
	}
	long long now = c->now_ms > 0 ? c->now_ms : tgi_unix_ms();
	long long since = windows[w].ms ? now - windows[w].ms : 0;
	char *err = NULL;
	char *text = tg_stats(c->g, since, &err);
	json_t *st = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	if (!json_is_object(st)) {
		json_decref(st);
		tgc_page_error(c, 500, err ? err : "the ledger's stats could not be read", rep);
		free(err);
		return;
	}

	tgc_reply_html(rep, 200);
	tgi_buf *b = &rep->body;
	tgc_html_begin(b, c, "Stats", TGC_STATS);
	tgi_buf_puts(b, "<h1>Stats</h1>\n<nav class=\"windows\">\n");
	for (size_t i = 0; i < TGI_ARRAY_LEN(windows); i++)
		tgi_buf_printf(b, "<a href=\"/stats?window=%s\"%s>%s</a>\n", windows[i].name,
		               i == w ? " class=\"active\" aria-current=\"page\"" : "", windows[i].label);
	tgi_buf_puts(b, "</nav>\n");
	const json_t *tools = json_object_get(st, "tools");
	const json_t *denials = json_object_get(st, "denials");
	tgi_buf_printf(b, "<p class=\"total\">%lld calls", 
	               (long long)json_number_value(json_object_get(st, "calls")));
	if (since) {
		char iso[32];
		tgi_iso8601(since, iso);
		tgi_buf_puts(b, " since ");
		tgc_html_time(b, iso, NULL);
	}
	tgi_buf_puts(b, ".</p>\n");
	if (!json_array_size(tools))
		tgi_buf_puts(b, "<p class=\"empty\">No calls in this window.</p>\n");
	chart_calls(b, tools);
	legend(b);
	chart_latency(b, tools);
	chart_denials(b, denials);
	tools_table(b, tools);
	tgc_html_end(b);
	json_decref(st);
}
