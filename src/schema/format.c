/*
 * format.c — the `format` values toolgate asserts: date-time, date, time,
 * duration (RFC 3339 and its appendix A), email (RFC 5321 mailbox),
 * hostname (RFC 1123), ipv4, ipv6 (RFC 4291 text forms), uri (RFC 3986,
 * with a scheme) and uuid (RFC 9562 text form).
 *
 * Each checker is a small hand-written parser over (pointer, length): no
 * allocation, no locale, no regex, ASCII only where the RFC says so.
 *
 * Owns: the format table (name, checker, description).  Must not: decide
 * whether formats are asserted (that is the compile flag) or build messages.
 */
#include <stddef.h>
#include <string.h>

#include "schema/node.h"

/* ---- small scanners ---------------------------------------------------- */

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_alnum(int c) { return is_digit(c) || is_alpha(c); }

static int is_hex(int c)
{
	return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Exactly n digits at s; their value, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* ---- dates and times (RFC 3339 §5.6) ------------------------------------ */

static int days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dm[m - 1];
}

/* full-date = YYYY-MM-DD */
static int check_date(const char *s, size_t n)
{
	if (n != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	int y = digits(s, 4), m = digits(s + 5, 2), d = digits(s + 8, 2);
	return y >= 0 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m);
}

/*
 * full-time = HH:MM:SS[.frac](Z|±HH:MM).  A leap second (:60) is only
 * valid where it can happen: at 23:59:60 UTC once the offset is applied.
 */
static int check_time(const char *s, size_t n)
{
	if (n < 9 || s[2] != ':' || s[5] != ':')
		return 0;
	int h = digits(s, 2), mi = digits(s + 3, 2), sec = digits(s + 6, 2);
	if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return 0;
	size_t i = 8;
	if (s[i] == '.') {
		size_t start = ++i;
		while (i < n && is_digit((unsigned char)s[i]))
			i++;
		if (i == start)
			return 0;
	}
	if (i >= n)
		return 0; /* the offset is not optional */
	int off = 0;
	if ((s[i] | 0x20) == 'z') {
		if (i + 1 != n)
			return 0;
	} else if (s[i] == '+' || s[i] == '-') {
		if (n - i != 6 || s[i + 3] != ':')
			return 0;
		int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return 0;
		off = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
	} else {
		return 0;
	}
	if (sec == 60) {
		int utc = ((h * 60 + mi - off) % 1440 + 1440) % 1440;
		if (utc != 23 * 60 + 59)
			return 0;
	}
	return 1;
}

static int check_date_time(const char *s, size_t n)
{
	return n > 11 && (s[10] | 0x20) == 't' && check_date(s, 10) &&
	       check_time(s + 11, n - 11);
}

/*
 * duration = "P" (date [time] | time | week), components in order, each
 * at most once, at least one, and a "T" only before a time component:
 * P3Y6M4DT12H30M5S, PT36H, P2W.  Weeks do not combine with anything.
 */
static int check_duration(const char *s, size_t n)
{
	static const char units[] = "YMDHMS"; /* date part 0..2, time part 3..5 */
	size_t i = 1;
	int next = 0, any = 0, in_time = 0;
	if (n < 3 || s[0] != 'P')
		return 0;
	while (i < n) {
		if (s[i] == 'T') {
			if (in_time || i + 1 >= n)
				return 0;
			in_time = 1;
			next = 3;
			i++;
			continue;
		}
		size_t start = i;
		while (i < n && is_digit((unsigned char)s[i]))
			i++;
		if (i == start || i >= n)
			return 0;
		if (s[i] == 'W')
			return start == 1 && i + 1 == n;
		int u = next;
		while (u < 6 && units[u] != s[i])
			u++;
		if (u >= 6 || (in_time ? u < 3 : u >= 3))
			return 0;
		next = u + 1;
		any = 1;
		i++;
	}
	return any;
}

/* ---- network names ------------------------------------------------------- */

/* RFC 1123 host name: dot-separated labels of letters, digits and hyphens,
 * 1..63 each, not starting or ending with a hyphen, 253 at most in all; a
 * single trailing dot (the root) is allowed. */
static int check_hostname(const char *s, size_t n)
{
	if (n && s[n - 1] == '.')
		n--;
	if (n == 0 || n > 253)
		return 0;
	size_t label = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		unsigned char c = (unsigned char)s[i];
		if (!is_alnum(c) && !(c == '-' && label > 0))
			return 0;
		label++;
	}
	return 1;
}

/* Dotted quad, decimal, 0..255, no leading zeros. */
static int check_ipv4(const char *s, size_t n)
{
	size_t i = 0;
	for (int part = 0; part < 4; part++) {
		if (part && (i >= n || s[i++] != '.'))
			return 0;
		size_t start = i;
		int v = 0;
		while (i < n && is_digit((unsigned char)s[i]) && i - start < 3)
			v = v * 10 + (s[i++] - '0');
		if (i == start || v > 255 || (s[start] == '0' && i - start > 1))
			return 0;
	}
	return i == n;
}

/* RFC 4291 §2.2: eight groups of 1..4 hex digits, one "::" standing for one
 * or more zero groups, optionally ending in a dotted quad (two groups).
 * Zone identifiers ("%eth0") are not part of an address. */
static int check_ipv6(const char *s, size_t n)
{
	int groups = 0, gap = 0;
	size_t i = 0;
	if (n < 2 || n > 45)
		return 0;
	if (s[0] == ':') {
		if (s[1] != ':')
			return 0;
		gap = 1;
		i = 2;
		if (i == n)
			return 1; /* "::" */
	}
	while (i < n) {
		size_t start = i;
		while (i < n && is_hex((unsigned char)s[i]) && i - start < 5)
			i++;
		if (i < n && s[i] == '.') { /* trailing IPv4 */
			if (groups > 6 || !check_ipv4(s + start, n - start))
				return 0;
			groups += 2;
			i = n;
			break;
		}
		if (i == start || i - start > 4)
			return 0;
		groups++;
		if (i == n)
			break;
		if (s[i] != ':' || ++i == n)
			return 0;
		if (s[i] == ':') {
			if (gap)
				return 0;
			gap = 1;
			if (++i == n)
				break;
		}
	}
	return gap ? groups <= 7 : groups == 8;
}

/* ---- email (RFC 5321 §4.1.2 mailbox, without the source route) ---------- */

static int is_atext(int c)
{
	return is_alnum(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL);
}

static int check_email(const char *s, size_t n)
{
	const char *at = NULL;
	size_t i = 0;
	if (n == 0 || n > 320)
		return 0;
	if (s[0] == '"') { /* quoted-string local part */
		for (i = 1; i < n && s[i] != '"'; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c == '\\') {
				if (++i >= n || (unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
					return 0;
			} else if (c < 0x20 || c > 0x7e) {
				return 0;
			}
		}
		if (i >= n || i + 1 >= n || s[i + 1] != '@')
			return 0;
		at = s + i + 1;
	} else { /* dot-atom: no leading, trailing or doubled dot */
		for (i = 0; i < n && s[i] != '@'; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c == '.') {
				if (i == 0 || s[i - 1] == '.')
					return 0;
			} else if (!is_atext(c)) {
				return 0;
			}
		}
		if (i == 0 || i >= n || s[i - 1] == '.' || i > 64)
			return 0;
		at = s + i;
	}
	const char *d = at + 1;
	size_t dn = n - (size_t)(d - s);
	if (dn >= 2 && d[0] == '[' && d[dn - 1] == ']') { /* address literal */
		if (dn > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
			return check_ipv6(d + 6, dn - 7);
		return check_ipv4(d + 1, dn - 2);
	}
	return check_hostname(d, dn);
}

/* ---- uri (RFC 3986 §3, absolute: a scheme is required) ------------------ */

static int is_unreserved(int c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int is_subdelim(int c)
{
	return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* Scan s[i..n) while characters are unreserved, sub-delims, %XX, or in
 * `extra`; returns the index of the first other character, or -1 on a
 * broken %-escape. */
static long scan_chars(const char *s, size_t i, size_t n, const char *extra)
{
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n || !is_hex((unsigned char)s[i + 1]) ||
			    !is_hex((unsigned char)s[i + 2]))
				return -1;
			i += 3;
		} else if (is_unreserved(c) || is_subdelim(c) || (c && strchr(extra, c))) {
			i++;
		} else {
			break;
		}
	}
	return (long)i;
}

static int check_authority(const char *s, size_t n)
{
	const char *at = memchr(s, '@', n);
	if (at) {
		if (scan_chars(s, 0, (size_t)(at - s), ":") != at - s)
			return 0;
		n -= (size_t)(at + 1 - s);
		s = at + 1;
	}
	size_t host_end;
	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return 0;
		size_t hn = (size_t)(close - s) - 1;
		if (hn && (s[1] | 0x20) == 'v') { /* IPvFuture */
			size_t j = 2;
			while (j < hn + 1 && is_hex((unsigned char)s[j]))
				j++;
			if (j == 2 || j >= hn + 1 || s[j] != '.' ||
			    scan_chars(s, j + 1, hn + 1, ":") != (long)(hn + 1) || j + 1 == hn + 1)
				return 0;
		} else if (!check_ipv6(s + 1, hn)) {
			return 0;
		}
		host_end = (size_t)(close - s) + 1;
	} else {
		long e = scan_chars(s, 0, n, "");
		if (e < 0)
			return 0;
		host_end = (size_t)e;
	}
	if (host_end == n)
		return 1;
	if (s[host_end] != ':')
		return 0;
	for (size_t i = host_end + 1; i < n; i++)
		if (!is_digit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int check_uri(const char *s, size_t n)
{
	size_t i = 0;
	if (n == 0 || !is_alpha((unsigned char)s[0]))
		return 0;
	while (i < n && (is_alnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	if (i >= n || s[i] != ':')
		return 0;
	i++;
	if (n - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
		size_t a = i + 2, e = a;
		while (e < n && s[e] != '/' && s[e] != '?' && s[e] != '#')
			e++;
		if (!check_authority(s + a, e - a))
			return 0;
		i = e;
	}
	long p = scan_chars(s, i, n, ":@/");             /* path */
	if (p >= 0 && (size_t)p < n && s[p] == '?')
		p = scan_chars(s, (size_t)p + 1, n, ":@/?"); /* query */
	if (p >= 0 && (size_t)p < n && s[p] == '#')
		p = scan_chars(s, (size_t)p + 1, n, ":@/?"); /* fragment */
	return p == (long)n;
}

/* ---- uuid ---------------------------------------------------------------- */

static int check_uuid(const char *s, size_t n)
{
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !is_hex((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

/* ---- the table ----------------------------------------------------------- */

static const struct format {
	const char *name;
	int (*check)(const char *s, size_t n);
	const char *describe;
} formats[] = {
	[TGI_FMT_DATE_TIME] = {"date-time", check_date_time, "date-time (RFC 3339)"},
	[TGI_FMT_DATE]      = {"date",      check_date,      "date (YYYY-MM-DD)"},
	[TGI_FMT_TIME]      = {"time",      check_time,      "time (HH:MM:SS with a Z or +HH:MM offset)"},
	[TGI_FMT_DURATION]  = {"duration",  check_duration,  "duration (ISO 8601, e.g. P1DT2H)"},
	[TGI_FMT_EMAIL]     = {"email",     check_email,     "email address"},
	[TGI_FMT_HOSTNAME]  = {"hostname",  check_hostname,  "hostname"},
	[TGI_FMT_IPV4]      = {"ipv4",      check_ipv4,      "IPv4 address"},
	[TGI_FMT_IPV6]      = {"ipv6",      check_ipv6,      "IPv6 address"},
	[TGI_FMT_URI]       = {"uri",       check_uri,       "URI with a scheme (RFC 3986)"},
	[TGI_FMT_UUID]      = {"uuid",      check_uuid,      "UUID"},
};

int tgi_format_lookup(const char *name)
{
	for (size_t i = 1; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(formats[i].name, name) == 0)
			return (int)i;
	return 0;
}

int tgi_format_check(int fmt, const char *s, size_t n)
{
	if (fmt <= 0 || (size_t)fmt >= sizeof formats / sizeof formats[0])
		return 1;
	return formats[fmt].check(s, n);
}

const char *tgi_format_describe(int fmt)
{
	if (fmt <= 0 || (size_t)fmt >= sizeof formats / sizeof formats[0])
		return "value";
	return formats[fmt].describe;
}
