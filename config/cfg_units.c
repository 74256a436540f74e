/* SPDX-License-Identifier: MIT */
/*
 * Units of the config: sizes, durations, socket addresses, prefixes, modes.
 *
 * Sizes: digits, optional blanks, optional unit. Units are matched without
 * regard to case. B is bytes; K, KiB, M, MiB, G, GiB, T, TiB are binary
 * (powers of 1024) because buffers and rings are; KB, MB, GB, TB are decimal
 * (powers of 1000), as the SI and IEC prefixes say. No unit means bytes.
 *
 * Durations: one or more of <digits><unit>, optionally blank-separated
 * ("1h 30m", "1m30s"), units ms, s, m or min, h, d, lower case only (so
 * that "M" cannot be mistaken for months). "0" alone needs no unit; any
 * other number without a unit is refused, because "30" might mean seconds
 * to one reader and milliseconds to another. (A JSON integer, not a string,
 * is milliseconds; that is decided in cfg.c.)
 *
 * Nothing here accepts a sign, a fraction or trailing junk, and overflow is
 * -ERANGE, never a wrapped value.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "cfg-int.h"

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)
#define TiB (1024ULL * GiB)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Reads decimal digits at *p into *v. Returns 0, -EINVAL when there is no
 * digit, or -ERANGE on overflow (*p then still advances past the digits). */
static int read_digits(const char **p, uint64_t *v)
{
	const char *s = *p;
	bool overflow = false;
	uint64_t n = 0;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (__builtin_mul_overflow(n, 10, &n) ||
		    __builtin_add_overflow(n, (uint64_t)(*s - '0'), &n))
			overflow = true;
	}
	*p = s;
	*v = n;
	return overflow ? -ERANGE : 0;
}

static int fail(const char **why, const char *msg, int err)
{
	if (why)
		*why = msg;
	return err;
}

static const struct {
	const char *name;
	uint64_t mult;
} size_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "K", KiB }, { "KiB", KiB }, { "KB", 1000ULL },
	{ "M", MiB }, { "MiB", MiB }, { "MB", 1000ULL * 1000 },
	{ "G", GiB }, { "GiB", GiB }, { "GB", 1000ULL * 1000 * 1000 },
	{ "T", TiB }, { "TiB", TiB }, { "TB", 1000ULL * 1000 * 1000 * 1000 },
};

int cfg__parse_size(const char *s, uint64_t *out, const char **why)
{
	const char *p = s;
	uint64_t n, v;
	size_t i;
	int r;

	if (!s || !*s)
		return fail(why, "empty string is not a size", -EINVAL);
	if (*p == '-')
		return fail(why, "a size cannot be negative", -EINVAL);
	r = read_digits(&p, &n);
	if (r == -EINVAL)
		return fail(why, "a size starts with digits, like \"64KiB\"", -EINVAL);
	if (*p == '.' || *p == ',')
		return fail(why, "fractions are not supported (write \"1536KiB\", not \"1.5MiB\")",
			    -EINVAL);
	if (*skip_blanks(p) == '\0' && *p)
		return fail(why, "trailing blanks after the number", -EINVAL);
	p = skip_blanks(p);
	for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
		if (strcasecmp(p, size_units[i].name) == 0)
			break;
	}
	if (i == sizeof(size_units) / sizeof(size_units[0]))
		return fail(why, "unknown unit (use B, KiB, MiB, GiB, TiB; K, M, G, T are binary "
			    "too; KB, MB, GB, TB are decimal)", -EINVAL);
	if (r == -ERANGE || __builtin_mul_overflow(n, size_units[i].mult, &v))
		return fail(why, "too large (above 2^64-1 bytes)", -ERANGE);
	*out = v;
	return 0;
}

int cfg_parse_size(const char *s, uint64_t *out)
{
	return cfg__parse_size(s, out, NULL);
}

static const struct {
	const char *name;
	uint64_t ms;
} duration_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "min", 60 * 1000 }, { "m", 60 * 1000 },
	{ "h", 60 * 60 * 1000 }, { "d", 24 * 60 * 60 * 1000 },
};

int cfg__parse_duration(const char *s, uint64_t *out_ms, const char **why)
{
	const char *p = s;
	uint64_t total = 0, n, part;
	size_t i, len;
	int r;

	if (!s || !*s)
		return fail(why, "empty string is not a duration", -EINVAL);
	if (*p == '-')
		return fail(why, "a duration cannot be negative", -EINVAL);
	if (strspn(s, "0") == strlen(s)) {
		*out_ms = 0;
		return 0;
	}
	while (*p) {
		r = read_digits(&p, &n);
		if (r == -EINVAL)
			return fail(why, "expected a number, like \"30s\" or \"1h 30m\"", -EINVAL);
		if (*p == '.' || *p == ',')
			return fail(why, "fractions are not supported (write \"1500ms\", not \"1.5s\")",
				    -EINVAL);
		p = skip_blanks(p);
		len = strcspn(p, "0123456789 \t");
		if (len == 0)
			return fail(why, "missing unit (ms, s, m, h or d)", -EINVAL);
		for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
			if (strlen(duration_units[i].name) == len &&
			    strncmp(p, duration_units[i].name, len) == 0)
				break;
		}
		if (i == sizeof(duration_units) / sizeof(duration_units[0]))
			return fail(why, "unknown unit (use ms, s, m or min, h, d; lower case)",
				    -EINVAL);
		if (r == -ERANGE || __builtin_mul_overflow(n, duration_units[i].ms, &part) ||
		    __builtin_add_overflow(total, part, &total))
			return fail(why, "too large (above 2^64-1 milliseconds)", -ERANGE);
		p += len;
		if (*p == ' ' || *p == '\t') {
			p = skip_blanks(p);
			if (!*p)
				return fail(why, "trailing blanks after the unit", -EINVAL);
		}
	}
	*out_ms = total;
	return 0;
}

int cfg_parse_duration(const char *s, uint64_t *out_ms)
{
	return cfg__parse_duration(s, out_ms, NULL);
}

/* A port: decimal digits only, 1..65535. */
static int parse_port(const char *s, uint16_t *port, const char **why)
{
	const char *p = s;
	uint64_t v;

	if (!*p)
		return fail(why, "missing port after ':'", -EINVAL);
	if (read_digits(&p, &v) < 0 || *p || v > 65535)
		return fail(why, "the port must be a number from 1 to 65535", -EINVAL);
	if (v == 0)
		return fail(why, "port 0 is not allowed", -EINVAL);
	*port = (uint16_t)v;
	return 0;
}

/* "PORT" or "LO-HI", each 1-65535, LO <= HI. */
static int parse_port_range(const char *s, uint16_t *lo, uint16_t *hi, const char **why)
{
	char buf[16];
	const char *dash = strchr(s, '-');
	size_t n = dash ? (size_t)(dash - s) : strlen(s);

	if (n >= sizeof(buf))
		return fail(why, "the port must be a number from 1 to 65535", -EINVAL);
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (parse_port(buf, lo, why) < 0)
		return -EINVAL;
	*hi = *lo;
	if (!dash)
		return 0;
	if (parse_port(dash + 1, hi, why) < 0)
		return -EINVAL;
	if (*hi < *lo)
		return fail(why, "a port range must go up, like 8000-8100", -EINVAL);
	return 0;
}

int cfg__parse_allow(const char *s, struct cfg_allow *out, const char **why)
{
	struct cfg_allow a;
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *close, *ports = s;
	size_t n;

	memset(&a, 0, sizeof(a));
	if (!s || !*s)
		return fail(why, "empty (write a port, lo-hi, ip:port or [ip6]:port)", -EINVAL);
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close || close[1] != ':')
			return fail(why, "write [ip6]:port or [ip6]:lo-hi", -EINVAL);
		n = (size_t)(close - s - 1);
		if (n >= sizeof(host))
			return fail(why, "not an IPv6 address", -EINVAL);
		memcpy(host, s + 1, n);
		host[n] = '\0';
		if (inet_pton(AF_INET6, host, a.addr) != 1)
			return fail(why, "not an IPv6 address", -EINVAL);
		a.family = AF_INET6;
		ports = close + 2;
	} else if ((colon = strchr(s, ':'))) {
		n = (size_t)(colon - s);
		if (strchr(colon + 1, ':'))
			return fail(why, "an IPv6 address needs brackets: [ip6]:port", -EINVAL);
		if (n >= sizeof(host))
			return fail(why, "not a numeric IPv4 address", -EINVAL);
		memcpy(host, s, n);
		host[n] = '\0';
		if (inet_pton(AF_INET, host, a.addr) != 1)
			return fail(why, "not a numeric IPv4 address", -EINVAL);
		a.family = AF_INET;
		ports = colon + 1;
	}
	if (parse_port_range(ports, &a.lo, &a.hi, why) < 0)
		return -EINVAL;
	*out = a;
	return 0;
}

bool cfg__allow_equal(const struct cfg_allow *a, const struct cfg_allow *b)
{
	return a->family == b->family && a->lo == b->lo && a->hi == b->hi &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/*
 * "ip:port" or "[ip6]:port", numeric only: host names are not resolved (a
 * config must mean the same thing whatever DNS says at start-up) and IPv6
 * scope ids ("%eth0") are not supported.
 */
int cfg__parse_addr(const char *s, struct cfg_addr *out, const char **why)
{
	struct sockaddr_in6 *sin6;
	struct sockaddr_in *sin;
	struct cfg_addr a;
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *close;
	uint16_t port;
	size_t n;

	memset(&a, 0, sizeof(a));
	if (!s || !*s)
		return fail(why, "empty address (write ip:port or [ip6]:port)", -EINVAL);
	if (*s == '[') {
		close = strchr(s, ']');
		if (!close)
			return fail(why, "missing ']' after the IPv6 address", -EINVAL);
		n = (size_t)(close - s - 1);
		if (n >= sizeof(host))
			return fail(why, "not an IPv6 address", -EINVAL);
		memcpy(host, s + 1, n);
		host[n] = '\0';
		if (close[1] != ':')
			return fail(why, "missing port (write [ip6]:port)", -EINVAL);
		if (parse_port(close + 2, &port, why) < 0)
			return -EINVAL;
		sin6 = (struct sockaddr_in6 *)&a.ss;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return fail(why, strchr(host, '%') ?
				    "IPv6 scope ids like %eth0 are not supported" :
				    "not an IPv6 address", -EINVAL);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		a.len = sizeof(*sin6);
		*out = a;
		return 0;
	}
	colon = strrchr(s, ':');
	if (!colon)
		return fail(why, "missing port (write ip:port or [ip6]:port)", -EINVAL);
	if (strchr(s, ':') != colon)
		return fail(why, "an IPv6 address must be in brackets, like [::1]:7001", -EINVAL);
	n = (size_t)(colon - s);
	if (n >= sizeof(host))
		return fail(why, "not a numeric IPv4 address (host names are not resolved)",
			    -EINVAL);
	memcpy(host, s, n);
	host[n] = '\0';
	if (parse_port(colon + 1, &port, why) < 0)
		return -EINVAL;
	sin = (struct sockaddr_in *)&a.ss;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return fail(why, "not a numeric IPv4 address (host names are not resolved)",
			    -EINVAL);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	a.len = sizeof(*sin);
	*out = a;
	return 0;
}

int cfg_parse_addr(const char *s, struct cfg_addr *out)
{
	return cfg__parse_addr(s, out, NULL);
}

/* "10.0.0.0/24", "fd00::/64", or a bare address meaning one host (/32 or
 * /128). The length is decimal digits only. Host bits are not checked. */
int cfg__parse_prefix(const char *s, struct cfg_prefix *out, const char **why)
{
	struct cfg_prefix p;
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash, *q;
	uint64_t len;
	unsigned max;
	size_t n;

	memset(&p, 0, sizeof(p));
	if (!s || !*s)
		return fail(why, "empty prefix (write addr/len, like 10.0.0.0/24)", -EINVAL);
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(host))
		return fail(why, "not an IPv4 or IPv6 address", -EINVAL);
	memcpy(host, s, n);
	host[n] = '\0';
	p.family = strchr(host, ':') ? AF_INET6 : AF_INET;
	max = p.family == AF_INET6 ? 128 : 32;
	if (inet_pton(p.family, host, p.addr) != 1)
		return fail(why, p.family == AF_INET6 ? "not an IPv6 address (and no brackets here)" :
			    "not a numeric IPv4 address", -EINVAL);
	len = max;
	if (slash) {
		q = slash + 1;
		if (read_digits(&q, &len) < 0 || *q || len > max)
			return fail(why, p.family == AF_INET6 ?
				    "the prefix length must be a number from 0 to 128" :
				    "the prefix length must be a number from 0 to 32", -EINVAL);
	}
	p.len = (uint8_t)len;
	*out = p;
	return 0;
}

int cfg__parse_host(const char *s, int *family, uint8_t addr[16], const char **why)
{
	uint8_t a[16] = { 0 };
	int fam;

	if (!s || !*s)
		return fail(why, "empty address (write one like 192.168.1.2 or fd00::2)", -EINVAL);
	if (strchr(s, '/'))
		return fail(why, "an address, not a prefix", -EINVAL);
	fam = AF_INET;
	if (inet_pton(AF_INET, s, a) != 1) {
		fam = AF_INET6;
		if (inet_pton(AF_INET6, s, a) != 1)
			return fail(why, "not a numeric IPv4 or IPv6 address (no brackets, no port "
				    "here)", -EINVAL);
	}
	if (fam == AF_INET ? (a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0) || a[0] >= 224 :
	    IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)(void *)a) ||
	    IN6_IS_ADDR_MULTICAST((struct in6_addr *)(void *)a))
		return fail(why, "the unspecified address or a multicast one serves nothing",
			    -EINVAL);
	*family = fam;
	memcpy(addr, a, 16);
	return 0;
}

bool cfg__prefix_mask(const struct cfg_prefix *p, struct cfg_prefix *masked)
{
	unsigned bytes = p->family == AF_INET6 ? 16 : 4;
	bool set = false;
	unsigned i, bit;
	uint8_t keep;

	*masked = *p;
	for (i = 0; i < bytes; i++) {
		bit = i * 8;
		if (bit >= p->len)
			keep = 0;
		else if (p->len - bit >= 8)
			keep = 0xff;
		else
			keep = (uint8_t)(0xff << (8 - (p->len - bit)));
		if (p->addr[i] & ~keep)
			set = true;
		masked->addr[i] = p->addr[i] & keep;
	}
	return set;
}

int cfg_parse_prefix(const char *s, struct cfg_prefix *out)
{
	struct cfg_prefix p, m;

	if (cfg__parse_prefix(s, &p, NULL) < 0 || cfg__prefix_mask(&p, &m))
		return -EINVAL;
	*out = p;
	return 0;
}

int cfg__parse_mode(const char *s, mode_t *out, const char **why)
{
	unsigned long v = 0;
	const char *p;

	if (!s || !*s)
		return fail(why, "empty string is not a mode (write an octal string like \"0660\")",
			    -EINVAL);
	if (strspn(s, "01234567") != strlen(s))
		return fail(why, "a mode is octal digits only, like \"0660\"", -EINVAL);
	for (p = s; *p == '0'; p++)
		;
	if (strlen(p) > 3)
		return fail(why, "above 0777 (setuid, setgid and sticky bits are not allowed)",
			    -ERANGE);
	for (; *p; p++)
		v = v * 8 + (unsigned long)(*p - '0');
	if (v > 0777)
		return fail(why, "above 0777 (setuid, setgid and sticky bits are not allowed)",
			    -ERANGE);
	*out = (mode_t)v;
	return 0;
}

void cfg__fmt_size(char *buf, size_t n, uint64_t v)
{
	static const struct {
		const char *unit;
		uint64_t mult;
	} u[] = { { "TiB", TiB }, { "GiB", GiB }, { "MiB", MiB }, { "KiB", KiB } };
	size_t i;

	for (i = 0; v && i < sizeof(u) / sizeof(u[0]); i++) {
		if (v % u[i].mult == 0) {
			snprintf(buf, n, "%llu%s", (unsigned long long)(v / u[i].mult), u[i].unit);
			return;
		}
	}
	snprintf(buf, n, "%lluB", (unsigned long long)v);
}

void cfg__fmt_duration(char *buf, size_t n, uint64_t ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} u[] = { { "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 } };
	size_t i;

	for (i = 0; ms && i < sizeof(u) / sizeof(u[0]); i++) {
		if (ms % u[i].ms == 0) {
			snprintf(buf, n, "%llu%s", (unsigned long long)(ms / u[i].ms), u[i].unit);
			return;
		}
	}
	snprintf(buf, n, ms ? "%llums" : "%llu", (unsigned long long)ms);
}

void cfg__fmt_prefix(char *buf, size_t n, const struct cfg_prefix *p)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(p->family, p->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, n, "%s/%u", a, p->len);
}

bool cfg__addr_equal(const struct cfg_addr *a, const struct cfg_addr *b)
{
	const struct sockaddr_in6 *a6, *b6;
	const struct sockaddr_in *a4, *b4;

	if (a->len != b->len || a->ss.ss_family != b->ss.ss_family)
		return false;
	if (a->ss.ss_family == AF_INET) {
		a4 = (const struct sockaddr_in *)&a->ss;
		b4 = (const struct sockaddr_in *)&b->ss;
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	}
	if (a->ss.ss_family == AF_INET6) {
		a6 = (const struct sockaddr_in6 *)&a->ss;
		b6 = (const struct sockaddr_in6 *)&b->ss;
		return a6->sin6_port == b6->sin6_port &&
		       memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) == 0;
	}
	return memcmp(&a->ss, &b->ss, a->len) == 0;
}

bool cfg__prefix_equal(const struct cfg_prefix *a, const struct cfg_prefix *b)
{
	return a->family == b->family && a->len == b->len &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

const char *cfg_transport_name(enum cfg_transport t)
{
	switch (t) {
	case CFG_TRANSPORT_AUTO:
		return "auto";
	case CFG_TRANSPORT_RDMA:
		return "rdma";
	case CFG_TRANSPORT_SHM:
		return "shm";
	case CFG_TRANSPORT_TCP:
		return "tcp";
	}
	return "unknown";
}
