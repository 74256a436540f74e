/* SPDX-License-Identifier: MIT */
/*
 * flowcheck: load generator and byte-exact verifier for the integration
 * tests. It runs on both ends of a proxied TCP connection and proves that
 * every byte crossed in both directions, in order, with the half-close and
 * reset semantics the application would have seen without the proxy.
 *
 *   flowcheck serve --listen ADDR:PORT [--listen ...] [--verbose]
 *   flowcheck run   --connect ADDR:PORT [--flows N] [--concurrency N]
 *                   [--max-size SIZE | --size SIZE] [--seed S] [--timeout SEC]
 *                   [--mode normal|half-client|half-server|reset|client-reset]
 *                   [--rate BYTES] [--reset-within MS] [--quiet]
 *   flowcheck probe --connect ADDR:PORT [--expect refused,reset,eof,...]
 *                   [--within MS] [--send N]
 *   flowcheck hold  --connect ADDR:PORT --count N [--seconds S] [--exchange SIZE]
 *   flowcheck sha256 < FILE      (self-check: compare with sha256sum)
 *
 * The wire protocol of one flow (all integers big-endian):
 *
 *   client -> server  64-byte header: "FLOWCHK1", mode u32, pad u32,
 *                     len_up u64, len_down u64, seed u64, rate u64,
 *                     reset_after u64, pad u64
 *   client -> server  len_up pseudo-random bytes (stream "up", from seed)
 *   server -> client  len_down pseudo-random bytes (stream "down", from seed)
 *   server -> client  trailer: sha256(up as received) || sha256(down as sent)
 *
 * Each sender hashes what it hands to send(), each receiver hashes what
 * recv() gives it, and the client compares the two pairs. Both directions
 * run at once (full duplex), so a relay that is slow on one side gets
 * back-pressure on the other rather than a lock-step exchange.
 *
 * The modes change only the order of events:
 *   normal       both streams at once; client FIN after up, server sends the
 *                trailer once it has read the client's EOF, then FIN.
 *   half-client  the server sends nothing until it has read the client's
 *                FIN: the whole down stream crosses a half-closed flow.
 *   half-server  the server sends down + sha256(down) and its FIN at once;
 *                the client sends up only after it has read that EOF. The
 *                server checks up against the stream it regenerates from the
 *                seed and reports the result in its own summary (it can no
 *                longer talk to the client).
 *   reset        the server sends reset_after bytes of down, waits for some
 *                up bytes, then closes with SO_LINGER 0 (RST). The client
 *                must see ECONNRESET within --reset-within ms of the last
 *                byte it received, and what it did receive must be a prefix
 *                of the down stream.
 *   client-reset the mirror image: the client sends half its up stream,
 *                waits for some down bytes, then resets; the server (which
 *                keeps sending) must see ECONNRESET, and counts the flow ok
 *                in its summary only then.
 *
 * run prints one "FAIL flow N: kind: detail" line per failed flow, then
 * "flows: N ok, N failed" and, unless --quiet, "bytes: up N down N" (bytes
 * handed to send() and returned by recv(), headers and trailers included:
 * exactly what a relay in the middle moved) and "time: S s". Exit status 0
 * only if every flow passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HDR_LEN		64
#define TRAILER_LEN	64
#define DIGEST_LEN	32
#define MAGIC		"FLOWCHK1"
#define CHUNK		(64 * 1024)
#define RXBUF		(256 * 1024)
#define RESET_RX_MIN	(64 * 1024)

enum fc_mode {
	M_NORMAL, M_HALF_CLIENT, M_HALF_SERVER, M_RESET, M_CLIENT_RESET, M__MAX
};
static const char *const mode_names[M__MAX] = {
	"normal", "half-client", "half-server", "reset", "client-reset",
};

/* ------------------------------------------------------------------ */
/* SHA-256 (FIPS 180-4), small and portable.                           */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0]; b = h[1]; c = h[2]; d = h[3];
	e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) +
		     ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		hh = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void sha256_blocks_c(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	for (; nblocks; nblocks--, p += 64)
		sha256_block(h, p);
}

#if defined(__x86_64__)
/*
 * The same compression with the x86 SHA extensions, several times faster:
 * with 200 flows of megabytes hashed on both ends, the portable code would
 * make flowcheck, not the relay, the bottleneck on a 2-core machine. Used
 * only when CPUID says so and a self-test agrees with the portable code.
 */
#include <cpuid.h>
#include <immintrin.h>

__attribute__((target("sha,sse4.1,ssse3")))
static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
					     0x0405060700010203ULL);
	__m128i st0, st1, tmp, msg, m[4], abef, cdgh;

	tmp = _mm_loadu_si128((const __m128i *)&h[0]);
	st1 = _mm_loadu_si128((const __m128i *)&h[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);		/* CDAB */
	st1 = _mm_shuffle_epi32(st1, 0x1B);		/* EFGH */
	st0 = _mm_alignr_epi8(tmp, st1, 8);		/* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);		/* CDGH */

	for (; nblocks; nblocks--, p += 64) {
		abef = st0;
		cdgh = st1;
		for (int g = 0; g < 16; g++) {	/* four rounds per step */
			if (g < 4)
				m[g] = _mm_shuffle_epi8(_mm_loadu_si128(
					(const __m128i *)(p + 16 * g)), bswap);
			msg = _mm_add_epi32(m[g & 3], _mm_loadu_si128(
					(const __m128i *)&sha_k[4 * g]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
			if (g >= 3 && g < 15) {
				tmp = _mm_alignr_epi8(m[g & 3], m[(g - 1) & 3], 4);
				m[(g + 1) & 3] = _mm_add_epi32(m[(g + 1) & 3], tmp);
				m[(g + 1) & 3] = _mm_sha256msg2_epu32(m[(g + 1) & 3],
								      m[g & 3]);
			}
			msg = _mm_shuffle_epi32(msg, 0x0E);
			st0 = _mm_sha256rnds2_epu32(st0, st1, msg);
			if (g >= 1 && g <= 12)
				m[(g - 1) & 3] = _mm_sha256msg1_epu32(m[(g - 1) & 3],
								      m[g & 3]);
		}
		st0 = _mm_add_epi32(st0, abef);
		st1 = _mm_add_epi32(st1, cdgh);
	}

	tmp = _mm_shuffle_epi32(st0, 0x1B);		/* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);		/* DCHG */
	st0 = _mm_blend_epi16(tmp, st1, 0xF0);		/* DCBA */
	st1 = _mm_alignr_epi8(st1, tmp, 8);		/* ABEF */
	_mm_storeu_si128((__m128i *)&h[0], st0);
	_mm_storeu_si128((__m128i *)&h[4], st1);
}
#endif

static void (*sha256_blocks)(uint32_t h[8], const uint8_t *p, size_t nblocks) =
	sha256_blocks_c;

static void sha256_pick(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	uint8_t buf[3 * 64];
	uint32_t h1[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, h2[8];

	if (getenv("FLOWCHECK_NO_SHANI"))
		return;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) ||
	    !(c & bit_SSSE3))
		return;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_SHA))
		return;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	memcpy(h2, h1, sizeof(h1));
	sha256_blocks_c(h1, buf, 3);
	sha256_blocks_ni(h2, buf, 3);
	if (!memcmp(h1, h2, sizeof(h1)))
		sha256_blocks = sha256_blocks_ni;
#endif
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->n = 0;
}

static void sha256_update(struct sha256 *s, const uint8_t *p, size_t n)
{
	s->len += n;
	if (s->n) {
		size_t take = 64 - s->n < n ? 64 - s->n : n;
		memcpy(s->buf + s->n, p, take);
		s->n += take;
		p += take;
		n -= take;
		if (s->n < 64)
			return;
		sha256_blocks(s->h, s->buf, 1);
		s->n = 0;
	}
	if (n >= 64) {
		sha256_blocks(s->h, p, n / 64);
		p += n & ~(size_t)63;
		n &= 63;
	}
	memcpy(s->buf, p, n);
	s->n = n;
}

/* Writes the digest; s is left finalised (use a copy to keep hashing). */
static void sha256_final(struct sha256 *s, uint8_t out[DIGEST_LEN])
{
	uint64_t bits = s->len * 8;
	int i;

	s->buf[s->n++] = 0x80;
	if (s->n > 56) {
		memset(s->buf + s->n, 0, 64 - s->n);
		sha256_block(s->h, s->buf);
		s->n = 0;
	}
	memset(s->buf + s->n, 0, 56 - s->n);
	for (i = 0; i < 8; i++)
		s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_block(s->h, s->buf);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

/* The digest of what s has hashed so far; s itself goes on hashing. */
static void sha256_digest(const struct sha256 *s, uint8_t out[DIGEST_LEN])
{
	struct sha256 h = *s;

	sha256_final(&h, out);
}

static void hex8(const uint8_t *d, char out[17])
{
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/*
 * Compares the digest of what s has hashed so far with want. If they
 * differ, writes the first 8 bytes of each in hex to got_hex and want_hex
 * (for the failure message) and returns true.
 */
static bool digest_differs(const struct sha256 *s, const uint8_t *want,
			   char got_hex[17], char want_hex[17])
{
	uint8_t d[DIGEST_LEN];

	sha256_digest(s, d);
	if (!memcmp(d, want, DIGEST_LEN))
		return false;
	hex8(d, got_hex);
	hex8(want, want_hex);
	return true;
}

/* ------------------------------------------------------------------ */
/* Pseudo-random streams: splitmix64, consumed 8 bytes at a time, with  */
/* the leftover of a partial word kept so any chunking gives the same   */
/* byte sequence.                                                        */

struct gen {
	uint64_t s;
	uint8_t left[8];
	unsigned nleft;
};

#define STREAM_UP	0x7570737472656d31ULL
#define STREAM_DOWN	0x646f776e73747231ULL

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void gen_init(struct gen *g, uint64_t seed, uint64_t stream)
{
	g->s = seed ^ stream;
	g->nleft = 0;
}

static void gen_fill(struct gen *g, uint8_t *p, size_t n)
{
	while (n && g->nleft) {
		*p++ = g->left[8 - g->nleft--];
		n--;
	}
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v = splitmix(&g->s);
		memcpy(p, &v, 8);
	}
	if (n) {
		uint64_t v = splitmix(&g->s);
		memcpy(g->left, &v, 8);
		g->nleft = 8;
		while (n--)
			*p++ = g->left[8 - g->nleft--];
	}
}

/* ------------------------------------------------------------------ */
/* Small helpers.                                                      */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;
	fputs("flowcheck: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		die("out of memory");
	return p;
}

/* "ADDR:PORT" or "[V6ADDR]:PORT". */
static void parse_addr(const char *str, struct sockaddr_storage *ss,
		       socklen_t *len)
{
	char host[128];
	const char *port;
	memset(ss, 0, sizeof(*ss));

	if (str[0] == '[') {
		const char *end = strchr(str, ']');
		if (!end || end[1] != ':' || (size_t)(end - str - 1) >= sizeof(host))
			die("bad address '%s'", str);
		memcpy(host, str + 1, end - str - 1);
		host[end - str - 1] = 0;
		port = end + 2;
	} else {
		const char *colon = strrchr(str, ':');
		if (!colon || (size_t)(colon - str) >= sizeof(host))
			die("bad address '%s' (want ADDR:PORT)", str);
		memcpy(host, str, colon - str);
		host[colon - str] = 0;
		port = colon + 1;
	}
	char *end;
	unsigned long p = strtoul(port, &end, 10);
	if (*port == 0 || *end || p > 65535)
		die("bad port in '%s'", str);

	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)p);
		*len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*sin6);
	} else {
		die("bad address '%s'", str);
	}
}

/* Integers with an optional KiB/MiB/GiB (or K/M/G) suffix. */
static uint64_t parse_size(const char *str)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(str, &end, 10);
	if (errno || end == str)
		die("bad size '%s'", str);
	uint64_t mul = 1;
	if (!strcmp(end, "") || !strcmp(end, "B"))
		mul = 1;
	else if (!strcmp(end, "K") || !strcmp(end, "KiB"))
		mul = 1024;
	else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
		mul = 1024 * 1024;
	else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
		mul = 1024ULL * 1024 * 1024;
	else
		die("bad size unit in '%s' (use KiB, MiB or GiB)", str);
	return (uint64_t)v * mul;
}

static int parse_mode(const char *str)
{
	for (int m = 0; m < M__MAX; m++)
		if (!strcmp(str, mode_names[m]))
			return m;
	die("unknown mode '%s'", str);
}

/* SO_ERROR: what a non-blocking connect or a dead connection left on the
 * socket, 0 if nothing. */
static int sock_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return err;
}

/* Appends what fits of p[0..n) to buf, which holds *got of cap bytes;
 * returns how many bytes it took. */
static size_t take_into(uint8_t *buf, size_t *got, size_t cap,
			const uint8_t *p, size_t n)
{
	size_t take = cap - *got;

	if (take > n)
		take = n;
	memcpy(buf + *got, p, take);
	*got += take;
	return take;
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ------------------------------------------------------------------ */
/* Connections, shared by the client and the server.                    */

enum fail_kind {
	K_CONNECT, K_RESET, K_EOF, K_TIMEOUT, K_MISMATCH, K_PROTOCOL,
	K_SLOW, K_ERROR, K__MAX
};
static const char *const kind_names[K__MAX] = {
	"connect", "reset", "eof", "timeout", "mismatch", "protocol",
	"slow", "error",
};

enum tx_phase {
	TX_HDR,		/* client: header queued, payload next */
	TX_PAYLOAD,	/* payload being generated */
	TX_TRAILER,	/* trailer queued; shutdown when it has gone */
	TX_DONE,	/* SHUT_WR done */
};

enum ev_kind { EV_CONN, EV_LISTENER, EV_SIGNAL };

struct conn {
	int kind;		/* EV_CONN; first member, see struct evsrc */
	int fd;
	bool is_client;
	bool closed;
	bool connecting;
	bool tx_blocked;	/* send() said EAGAIN: wait for EPOLLOUT */
	bool want_reset;	/* server, reset mode: RST at the next step */
	bool paused;		/* rate limited until wake_at */
	bool rx_eof;		/* EOF read with everything expected */
	uint32_t events;	/* current epoll interest */
	unsigned idx;		/* client: flow number */
	struct conn *next, *prev;	/* live list */
	struct conn *gnext;		/* graveyard list */

	uint32_t mode;
	uint64_t len_up, len_down, seed, rate, reset_after;
	double t_start, t_last_rx, wake_at;

	/* transmit */
	enum tx_phase phase;
	uint8_t *txbuf;
	size_t txoff, txlen;
	uint64_t tx_payload;
	struct gen txgen;
	struct sha256 txhash;

	/* receive */
	uint8_t hdr[HDR_LEN];
	size_t hdr_got;
	uint64_t rx_payload;
	struct sha256 rxhash;
	struct gen rxgen;	/* expected bytes, where the receiver checks */
	struct sha256 rxexp;
	uint8_t trailer[TRAILER_LEN];
	size_t trail_got, trail_len;

	uint64_t wire_tx, wire_rx;
};

struct evsrc {
	int kind;
	int fd;
};

static int epfd = -1;
static uint8_t rxbuf[RXBUF];
static uint8_t cmpbuf[RXBUF];
static struct conn *conns;	/* all live connections, for rate wake-ups */
static struct conn *graveyard;	/* closed, freed after the epoll batch */
static unsigned npaused;
static bool verbose;

static void conn_link(struct conn *c)
{
	c->next = conns;
	c->prev = NULL;
	if (conns)
		conns->prev = c;
	conns = c;
}

static void conn_unlink(struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static void update_interest(struct conn *c)
{
	if (c->closed)
		return;
	uint32_t want = 0;
	if (!c->rx_eof)
		want |= EPOLLIN;
	if (c->connecting || (c->tx_blocked && !c->paused))
		want |= EPOLLOUT;
	if (want == c->events)
		return;
	struct epoll_event ev = { .events = want, .data.ptr = c };
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
	c->events = want;
}

/* Adds c to the epoll set, with c->events as its interest. */
static void conn_watch(struct conn *c)
{
	struct epoll_event ev = { .events = c->events, .data.ptr = c };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/* Plain close, or with SO_LINGER 0 so the kernel sends an RST. */
static void conn_close(struct conn *c, bool rst)
{
	if (c->closed)
		return;
	if (rst) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->closed = true;
	if (c->paused)
		npaused--;
	c->paused = false;
	conn_unlink(c);
	c->gnext = graveyard;
	graveyard = c;
}

/*
 * Closed connections are freed only here, between epoll batches, so that
 * code further up the stack that just closed one may still look at
 * c->closed.
 */
static void reap(void)
{
	while (graveyard) {
		struct conn *c = graveyard;
		graveyard = c->gnext;
		free(c->txbuf);
		free(c);
	}
}

/* Parks c until t: wake_paused() makes progress on it then. */
static void conn_pause_until(struct conn *c, double t)
{
	c->wake_at = t;
	if (!c->paused)
		npaused++;
	c->paused = true;
}

/*
 * Queues the next payload chunk, respecting the rate limit. Returns false
 * (and arms the wake-up) when the rate says wait.
 */
static bool tx_gen_payload(struct conn *c, uint64_t limit)
{
	uint64_t left = limit - c->tx_payload;
	size_t n = left < CHUNK ? (size_t)left : CHUNK;

	if (c->rate) {
		double t = now_s();
		double allowed = c->rate * (t - c->t_start) + 16384.0 -
				 (double)c->tx_payload;
		if (allowed < 1.0) {
			conn_pause_until(c, c->t_start + (c->tx_payload + 4096.0 -
							  16384.0) / c->rate);
			return false;
		}
		if ((double)n > allowed)
			n = (size_t)allowed;
	}
	gen_fill(&c->txgen, c->txbuf, n);
	sha256_update(&c->txhash, c->txbuf, n);
	c->tx_payload += n;
	c->txoff = 0;
	c->txlen = n;
	return true;
}

/*
 * Before a deliberate RST, let the peer acknowledge what we sent: SO_LINGER
 * 0 drops unsent data, and the tests want a stream cut after real bytes
 * crossed. Polls every 5 ms through the rate-limit wake-up.
 */
static bool outq_empty(struct conn *c)
{
	int queued = 0;

	if (ioctl(c->fd, SIOCOUTQ, &queued) == 0 && queued > 0) {
		conn_pause_until(c, now_s() + 0.005);
		return false;
	}
	return true;
}

/*
 * Reset modes: asks for the RST (want_reset) once some of the peer's
 * stream has arrived (RESET_RX_MIN bytes, or all of a shorter one) and
 * the peer has acknowledged all we sent.
 */
static void arm_reset(struct conn *c, uint64_t peer_len)
{
	uint64_t need = peer_len < RESET_RX_MIN ? peer_len : RESET_RX_MIN;

	if (c->rx_payload >= need && outq_empty(c))
		c->want_reset = true;
}

static void tx_shutdown(struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->phase = TX_DONE;
}

/* Client: what to send once the buffer is empty. */
static bool client_tx_next(struct conn *c)
{
	switch (c->phase) {
	case TX_HDR:
		c->phase = TX_PAYLOAD;
		/* fall through */
	case TX_PAYLOAD:
		if (c->mode == M_HALF_SERVER && !c->rx_eof)
			return false;
		if (c->mode == M_CLIENT_RESET) {
			if (c->tx_payload < c->reset_after)
				return tx_gen_payload(c, c->reset_after);
			arm_reset(c, c->len_down);
			return false;
		}
		if (c->tx_payload < c->len_up)
			return tx_gen_payload(c, c->len_up);
		tx_shutdown(c);
		return false;
	case TX_TRAILER:
	case TX_DONE:
		return false;
	}
	return false;
}

/* Server: what to send once the buffer is empty. */
static bool server_tx_next(struct conn *c)
{
	uint64_t limit;

	switch (c->phase) {
	case TX_HDR:		/* header not read yet */
		return false;
	case TX_PAYLOAD:
		if (c->mode == M_HALF_CLIENT && !c->rx_eof)
			return false;
		limit = c->len_down;
		if (c->mode == M_RESET && c->reset_after < limit)
			limit = c->reset_after;
		if (c->tx_payload < limit)
			return tx_gen_payload(c, limit);
		if (c->mode == M_RESET) {
			arm_reset(c, c->len_up);
			return false;
		}
		if (c->mode == M_HALF_SERVER) {
			sha256_digest(&c->txhash, c->txbuf);
			c->txoff = 0;
			c->txlen = DIGEST_LEN;
			c->phase = TX_TRAILER;
			return true;
		}
		if (!c->rx_eof)
			return false;
		sha256_digest(&c->rxhash, c->txbuf);
		sha256_digest(&c->txhash, c->txbuf + DIGEST_LEN);
		c->txoff = 0;
		c->txlen = TRAILER_LEN;
		c->phase = TX_TRAILER;
		return true;
	case TX_TRAILER:
		tx_shutdown(c);
		return false;
	case TX_DONE:
		return false;
	}
	return false;
}

/* Returns 0, or a positive errno when the connection failed. */
static int tx_pump(struct conn *c)
{
	/*
	 * At most this much per call: a fast peer would otherwise keep one
	 * connection sending forever while the others starve. Stopping early
	 * keeps EPOLLOUT armed, which fires again at once.
	 */
	size_t budget = 4 * CHUNK;

	for (;;) {
		if (c->txoff == c->txlen) {
			if (budget == 0) {
				c->tx_blocked = true;
				return 0;
			}
			bool more = c->is_client ? client_tx_next(c) : server_tx_next(c);
			if (!more)
				break;
		}
		ssize_t w = send(c->fd, c->txbuf + c->txoff, c->txlen - c->txoff,
				 MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				c->tx_blocked = true;
				return 0;
			}
			return errno;
		}
		c->txoff += (size_t)w;
		c->wire_tx += (uint64_t)w;
		budget = (size_t)w < budget ? budget - (size_t)w : 0;
	}
	c->tx_blocked = false;
	return 0;
}

/*
 * What differs between the two ends on receive and on progress; the loops
 * that call them are shared. rx consumes payload and returns false if it
 * ended the flow; on_eof and error may end it too; check_done ends it when
 * it is complete.
 */
typedef bool conn_rx_fn(struct conn *c, const uint8_t *p, size_t n);
typedef void conn_fn(struct conn *c);
typedef void conn_error_fn(struct conn *c, int err, const char *where);

/*
 * Reads at most 4 buffers per call (a fast peer must not starve the other
 * connections; level-triggered epoll reports the rest) and hands them to
 * rx, an EOF to on_eof and a failure to on_error. Returns false if the
 * connection was closed on the way.
 */
static bool conn_recv(struct conn *c, conn_rx_fn *rx, conn_fn *on_eof,
		      conn_error_fn *on_error)
{
	for (int i = 0; i < 4; i++) {
		ssize_t r = recv(c->fd, rxbuf, sizeof(rxbuf), 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			on_error(c, errno, "recv");
			return false;
		}
		if (r == 0) {
			on_eof(c);
			return !c->closed;
		}
		c->wire_rx += (uint64_t)r;
		if (!rx(c, rxbuf, (size_t)r))
			return false;
	}
	return true;
}

/* Sends what can go now, then ends the flow if it is complete. */
static void conn_progress(struct conn *c, conn_error_fn *on_error,
			  conn_fn *check_done)
{
	int err;

	if (c->closed)
		return;
	err = tx_pump(c);
	if (err) {
		on_error(c, err, "send");
		return;
	}
	check_done(c);
	update_interest(c);
}

/* Both directions are gone (EPOLLHUP after our EOF) but we still had data
 * to send: the peer or the relay gave up on the flow. */
static bool conn_hung_up(const struct conn *c, uint32_t ev)
{
	return !c->closed && (ev & EPOLLHUP) && c->rx_eof &&
	       c->phase != TX_DONE && !c->paused && !c->tx_blocked;
}

/* ------------------------------------------------------------------ */
/* Client.                                                             */

struct client {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	unsigned flows, concurrency;
	uint64_t max_size, fixed_size;
	uint64_t seed, rate;
	double timeout, reset_within;
	uint32_t mode;
	bool quiet;

	unsigned started, active, ok, failed;
	unsigned kinds[K__MAX];
	uint64_t wire_up, wire_down;
	struct gen sizes;
};

static struct client cl;

static void flow_done(struct conn *c, bool ok)
{
	bool rst = c->want_reset;

	cl.wire_up += c->wire_tx;
	cl.wire_down += c->wire_rx;
	cl.active--;
	if (ok)
		cl.ok++;
	else
		cl.failed++;
	conn_close(c, rst);
}

static void __attribute__((format(printf, 3, 4)))
flow_fail(struct conn *c, enum fail_kind k, const char *fmt, ...)
{
	va_list ap;
	printf("FAIL flow %u: %s: ", c->idx, kind_names[k]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (mode %s, up %" PRIu64 "/%" PRIu64 " down %" PRIu64 "/%" PRIu64
	       ", %.3f s)\n", mode_names[c->mode], c->tx_payload, c->len_up,
	       c->rx_payload, c->len_down, now_s() - c->t_start);
	cl.kinds[k]++;
	flow_done(c, false);
}

/* A socket error (from recv, send or SO_ERROR) ends the flow. */
static void client_error(struct conn *c, int err, const char *where)
{
	bool is_reset = err == ECONNRESET || err == EPIPE;

	if (c->mode == M_RESET && is_reset && !c->connecting) {
		double lat = now_s() - c->t_last_rx;
		if (lat > cl.reset_within / 1000.0)
			flow_fail(c, K_SLOW, "reset arrived %.3f s after the last byte "
				  "(limit %.3f s)", lat, cl.reset_within / 1000.0);
		else {
			if (verbose)
				printf("flow %u: reset after %" PRIu64 " down bytes, "
				       "%.3f s after the last byte\n",
				       c->idx, c->rx_payload, lat);
			flow_done(c, true);
		}
		return;
	}
	if (c->connecting)
		flow_fail(c, K_CONNECT, "%s", strerror(err));
	else
		flow_fail(c, is_reset ? K_RESET : K_ERROR, "%s: %s", where,
			  strerror(err));
}

static void client_check_done(struct conn *c)
{
	char a[17], b[17];

	if (c->closed)
		return;
	if (c->want_reset) {		/* client-reset: the RST is the end */
		flow_done(c, true);
		return;
	}
	if (!c->rx_eof || c->phase != TX_DONE)
		return;
	if (c->mode == M_NORMAL || c->mode == M_HALF_CLIENT) {
		if (digest_differs(&c->txhash, c->trailer, a, b)) {
			flow_fail(c, K_MISMATCH, "up stream sha256 differs: "
				  "sent %s..., server received %s...", a, b);
			return;
		}
		if (digest_differs(&c->rxhash, c->trailer + DIGEST_LEN, a, b)) {
			flow_fail(c, K_MISMATCH, "down stream sha256 differs: "
				  "received %s..., server sent %s...", a, b);
			return;
		}
	}
	/* half-server checked the down digest at EOF; the server checks up. */
	flow_done(c, true);
}

/* Consumes received bytes according to the mode. Returns false if the flow
 * was failed. */
static bool client_rx(struct conn *c, const uint8_t *p, size_t n)
{
	uint64_t expect = c->len_down;
	if (c->mode == M_RESET && c->reset_after < expect)
		expect = c->reset_after;

	c->t_last_rx = now_s();
	if (c->rx_payload < expect) {
		uint64_t want = expect - c->rx_payload;
		size_t take = n < want ? n : (size_t)want;
		sha256_update(&c->rxhash, p, take);
		if (c->mode == M_RESET || c->mode == M_CLIENT_RESET) {
			/* a reset may cut the stream anywhere: compare bytes */
			gen_fill(&c->rxgen, cmpbuf, take);
			if (memcmp(cmpbuf, p, take)) {
				flow_fail(c, K_MISMATCH, "down stream differs near "
					  "offset %" PRIu64, c->rx_payload);
				return false;
			}
		}
		c->rx_payload += take;
		p += take;
		n -= take;
	}
	if (n && c->trail_got < c->trail_len) {
		size_t take = take_into(c->trailer, &c->trail_got, c->trail_len, p, n);
		p += take;
		n -= take;
	}
	if (n) {
		flow_fail(c, K_PROTOCOL, "%zu bytes more than expected", n);
		return false;
	}
	return true;
}

static void client_on_eof(struct conn *c)
{
	uint64_t expect = c->len_down;

	if (c->mode == M_RESET || c->mode == M_CLIENT_RESET) {
		flow_fail(c, K_EOF, "clean close where a reset was expected");
		return;
	}
	if (c->rx_payload < expect || c->trail_got < c->trail_len) {
		flow_fail(c, K_EOF, "stream ended early (trailer %zu/%zu)",
			  c->trail_got, c->trail_len);
		return;
	}
	c->rx_eof = true;
	if (c->mode == M_HALF_SERVER) {
		char a[17], b[17];
		if (digest_differs(&c->rxhash, c->trailer, a, b))
			flow_fail(c, K_MISMATCH, "down stream sha256 differs: "
				  "received %s..., server sent %s...", a, b);
	}
}

static void client_start(unsigned idx)
{
	struct conn *c = calloc(1, sizeof(*c));
	uint64_t r;

	if (!c)
		die("out of memory");
	c->kind = EV_CONN;
	c->is_client = true;
	c->idx = idx;
	c->mode = cl.mode;
	c->rate = cl.rate;
	c->seed = splitmix(&cl.sizes.s);
	if (cl.fixed_size != UINT64_MAX) {
		c->len_up = c->len_down = cl.fixed_size;
	} else if (idx == 0) {			/* edge cases first */
		c->len_up = c->len_down = 0;
	} else if (idx == 1) {
		c->len_up = 1;
		c->len_down = cl.max_size;
	} else if (idx == 2) {
		c->len_up = cl.max_size;
		c->len_down = 1;
	} else {
		r = splitmix(&cl.sizes.s);
		c->len_up = r % (cl.max_size + 1);
		r = splitmix(&cl.sizes.s);
		c->len_down = r % (cl.max_size + 1);
	}
	if (c->mode == M_RESET) {
		/* Plenty of up data so the client is mid-stream at the RST. */
		c->reset_after = c->len_down / 2;
		c->len_up = 256ULL * 1024 * 1024;
	} else if (c->mode == M_CLIENT_RESET) {
		c->reset_after = c->len_up / 2;
		c->len_down = 256ULL * 1024 * 1024;
	}
	c->trail_len = c->mode == M_RESET || c->mode == M_CLIENT_RESET ? 0 :
		       c->mode == M_HALF_SERVER ? DIGEST_LEN : TRAILER_LEN;
	c->txbuf = xmalloc(CHUNK);
	gen_init(&c->txgen, c->seed, STREAM_UP);
	gen_init(&c->rxgen, c->seed, STREAM_DOWN);
	sha256_init(&c->txhash);
	sha256_init(&c->rxhash);

	uint8_t *h = c->txbuf;
	memset(h, 0, HDR_LEN);
	memcpy(h, MAGIC, 8);
	put32(h + 8, c->mode);
	put64(h + 16, c->len_up);
	put64(h + 24, c->len_down);
	put64(h + 32, c->seed);
	put64(h + 40, c->rate);
	put64(h + 48, c->reset_after);
	c->txlen = HDR_LEN;
	c->phase = TX_HDR;

	c->t_start = c->t_last_rx = now_s();
	cl.started++;
	cl.active++;
	conn_link(c);

	c->fd = socket(cl.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		printf("FAIL flow %u: connect: socket: %s\n", idx, strerror(errno));
		cl.kinds[K_CONNECT]++;
		cl.active--;
		cl.failed++;
		conn_unlink(c);
		free(c->txbuf);
		free(c);
		return;
	}
	c->connecting = true;
	c->events = EPOLLOUT;
	conn_watch(c);
	if (connect(c->fd, (struct sockaddr *)&cl.addr, cl.addrlen) < 0 &&
	    errno != EINPROGRESS)
		client_error(c, errno, "connect");
}

static void client_progress(struct conn *c)
{
	conn_progress(c, client_error, client_check_done);
}

static void client_event(struct conn *c, uint32_t ev)
{
	int err;

	if (c->connecting) {
		err = sock_error(c->fd);
		if (err) {
			client_error(c, err, "connect");
			return;
		}
		if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		c->connecting = false;
		c->t_start = c->t_last_rx = now_s();
	}
	if ((ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !c->rx_eof) {
		if (!conn_recv(c, client_rx, client_on_eof, client_error))
			return;
	} else if ((ev & EPOLLERR) && c->rx_eof) {
		err = sock_error(c->fd);
		if (err) {
			client_error(c, err, "socket");
			return;
		}
	}
	client_progress(c);
	if (conn_hung_up(c, ev))
		flow_fail(c, K_ERROR, "connection hung up");
}

static void wake_paused(void (*progress)(struct conn *))
{
	double t = now_s();
	struct conn *c, *next;

	if (!npaused)
		return;
	for (c = conns; c; c = next) {
		next = c->next;
		if (c->paused && c->wake_at <= t) {
			c->paused = false;
			npaused--;
			progress(c);
		}
	}
}

static int next_timeout_ms(double deadline)
{
	double t = now_s(), until = deadline;
	if (npaused) {
		for (struct conn *c = conns; c; c = c->next)
			if (c->paused && c->wake_at < until)
				until = c->wake_at;
	}
	double ms = (until - t) * 1000.0;
	if (ms < 0)
		return 0;
	if (ms > 1000)
		return 1000;
	return (int)ms + 1;
}

static void usage(void)
{
	fputs("usage:\n"
	      "  flowcheck serve --listen ADDR:PORT [--listen ...] [--verbose]\n"
	      "  flowcheck run --connect ADDR:PORT [--flows N] [--concurrency N]\n"
	      "        [--max-size SIZE | --size SIZE] [--seed S] [--timeout SEC]\n"
	      "        [--mode normal|half-client|half-server|reset|client-reset]\n"
	      "        [--rate BYTES]\n"
	      "        [--reset-within MS] [--quiet] [--verbose]\n"
	      "  flowcheck probe --connect ADDR:PORT [--expect LIST] [--within MS] [--send N]\n"
	      "        LIST: comma-separated of refused,reset,eof,data,timeout\n"
	      "  flowcheck hold --connect ADDR:PORT --count N [--seconds S] [--exchange SIZE]\n"
	      "  flowcheck sha256 < FILE\n",
	      stderr);
	exit(2);
}

static const char *arg_value(int *i, int argc, char **argv)
{
	if (*i + 1 >= argc)
		die("%s needs a value", argv[*i]);
	return argv[++*i];
}

static int cmd_run(int argc, char **argv)
{
	bool have_addr = false;

	cl.flows = 200;
	cl.concurrency = 200;
	cl.max_size = 8 * 1024 * 1024;
	cl.fixed_size = UINT64_MAX;
	cl.seed = 1;
	cl.timeout = 120;
	cl.reset_within = 2000;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--connect")) {
			parse_addr(arg_value(&i, argc, argv), &cl.addr, &cl.addrlen);
			have_addr = true;
		} else if (!strcmp(a, "--flows"))
			cl.flows = (unsigned)atoi(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--concurrency"))
			cl.concurrency = (unsigned)atoi(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--max-size"))
			cl.max_size = parse_size(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--size"))
			cl.fixed_size = parse_size(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--seed"))
			cl.seed = strtoull(arg_value(&i, argc, argv), NULL, 0);
		else if (!strcmp(a, "--timeout"))
			cl.timeout = atof(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--mode"))
			cl.mode = (uint32_t)parse_mode(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--rate"))
			cl.rate = parse_size(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--reset-within"))
			cl.reset_within = atof(arg_value(&i, argc, argv));
		else if (!strcmp(a, "--quiet"))
			cl.quiet = true;
		else if (!strcmp(a, "--verbose"))
			verbose = true;
		else
			usage();
	}
	if (!have_addr || cl.concurrency == 0)
		usage();
	gen_init(&cl.sizes, cl.seed, 0x73697a6573ULL);

	double t0 = now_s(), deadline = t0 + cl.timeout;
	struct epoll_event evs[256];

	while (cl.ok + cl.failed < cl.flows) {
		while (cl.active < cl.concurrency && cl.started < cl.flows)
			client_start(cl.started);
		if (now_s() >= deadline)
			break;
		int n = epoll_wait(epfd, evs, 256, next_timeout_ms(deadline));
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (!c->closed)
				client_event(c, evs[i].events);
		}
		wake_paused(client_progress);
		reap();
	}
	while (conns) {
		struct conn *c = conns;
		flow_fail(c, K_TIMEOUT, "no end after %.0f s (%s, %s)",
			  cl.timeout, c->connecting ? "connecting" :
			  c->phase == TX_DONE ? "sent all" : "sending",
			  c->rx_eof ? "received all" : "receiving");
	}
	reap();
	if (cl.started < cl.flows) {
		printf("FAIL flows %u..%u: timeout: never started\n",
		       cl.started, cl.flows - 1);
		cl.kinds[K_TIMEOUT] += cl.flows - cl.started;
		cl.failed += cl.flows - cl.started;
	}
	printf("flows: %u ok, %u failed\n", cl.ok, cl.failed);
	if (!cl.quiet) {
		printf("bytes: up %" PRIu64 " down %" PRIu64 "\n", cl.wire_up,
		       cl.wire_down);
		printf("time: %.2f s\n", now_s() - t0);
	}
	if (cl.failed) {
		printf("failures:");
		for (int k = 0; k < K__MAX; k++)
			if (cl.kinds[k])
				printf(" %s=%u", kind_names[k], cl.kinds[k]);
		printf("\n");
	}
	return cl.failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Server.                                                             */

struct server_stats {
	uint64_t conns, ok, failed, aborted, wire_rx, wire_tx;
};
static struct server_stats srv;

static void __attribute__((format(printf, 3, 4)))
srv_end(struct conn *c, int result, const char *fmt, ...)
{
	/* result: 0 ok, 1 failed (verification), 2 aborted (peer went away) */
	va_list ap;

	if (result == 1 || (result == 2 && verbose)) {
		fprintf(stderr, "serve: %s: ", result == 1 ? "FAIL" : "aborted");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, " (mode %s, up %" PRIu64 "/%" PRIu64 " down %"
			PRIu64 "/%" PRIu64 ")\n", c->hdr_got == HDR_LEN ?
			mode_names[c->mode] : "?", c->rx_payload, c->len_up,
			c->tx_payload, c->len_down);
	}
	if (result == 0)
		srv.ok++;
	else if (result == 1)
		srv.failed++;
	else
		srv.aborted++;
	srv.wire_rx += c->wire_rx;
	srv.wire_tx += c->wire_tx;
	conn_close(c, c->want_reset);
}

static bool server_parse_header(struct conn *c)
{
	const uint8_t *h = c->hdr;
	if (memcmp(h, MAGIC, 8)) {
		srv_end(c, 1, "bad magic");
		return false;
	}
	c->mode = get32(h + 8);
	if (c->mode >= M__MAX) {
		srv_end(c, 1, "bad mode %u", c->mode);
		return false;
	}
	c->len_up = get64(h + 16);
	c->len_down = get64(h + 24);
	c->seed = get64(h + 32);
	c->rate = get64(h + 40);
	c->reset_after = get64(h + 48);
	gen_init(&c->txgen, c->seed, STREAM_DOWN);
	gen_init(&c->rxgen, c->seed, STREAM_UP);
	c->phase = TX_PAYLOAD;
	c->t_start = now_s();
	return true;
}

static void server_check_done(struct conn *c)
{
	if (c->closed)
		return;
	if (c->want_reset) {
		srv_end(c, 0, "reset sent");
		return;
	}
	if (c->phase == TX_DONE && c->rx_eof)
		srv_end(c, 0, "ok");
}

static void server_error(struct conn *c, int err, const char *where)
{
	if (c->mode == M_CLIENT_RESET && c->hdr_got == HDR_LEN &&
	    (err == ECONNRESET || err == EPIPE))
		srv_end(c, 0, "reset seen");
	else
		srv_end(c, 2, "%s: %s", where, strerror(err));
}

static void server_progress(struct conn *c)
{
	conn_progress(c, server_error, server_check_done);
}

static bool server_rx(struct conn *c, const uint8_t *p, size_t n)
{
	if (c->hdr_got < HDR_LEN) {
		size_t take = take_into(c->hdr, &c->hdr_got, HDR_LEN, p, n);
		p += take;
		n -= take;
		if (c->hdr_got == HDR_LEN && !server_parse_header(c))
			return false;
	}
	if (!n)
		return true;
	if (c->rx_payload + n > c->len_up) {
		srv_end(c, 1, "%zu bytes more than announced",
			(size_t)(c->rx_payload + n - c->len_up));
		return false;
	}
	sha256_update(&c->rxhash, p, n);
	if (c->mode == M_CLIENT_RESET) {
		gen_fill(&c->rxgen, cmpbuf, n);
		if (memcmp(cmpbuf, p, n)) {
			srv_end(c, 1, "up stream differs near offset %" PRIu64,
				c->rx_payload);
			return false;
		}
	}
	if (c->mode == M_HALF_SERVER) {
		gen_fill(&c->rxgen, cmpbuf, n);
		sha256_update(&c->rxexp, cmpbuf, n);
	}
	c->rx_payload += n;
	return true;
}

static void server_on_eof(struct conn *c)
{
	if (c->hdr_got < HDR_LEN) {
		srv_end(c, 2, "eof before the header");
		return;
	}
	if (c->mode == M_CLIENT_RESET) {
		srv_end(c, 1, "clean close where a reset was expected");
		return;
	}
	if (c->rx_payload < c->len_up) {
		srv_end(c, 2, "eof after %" PRIu64 " of %" PRIu64 " up bytes",
			c->rx_payload, c->len_up);
		return;
	}
	c->rx_eof = true;
	if (c->mode == M_HALF_SERVER) {
		uint8_t want[DIGEST_LEN];
		char a[17], b[17];
		sha256_digest(&c->rxexp, want);
		if (digest_differs(&c->rxhash, want, a, b))
			srv_end(c, 1, "up stream sha256 differs: received %s..., "
				"expected %s...", a, b);
	}
}

static void server_event(struct conn *c, uint32_t ev)
{
	if ((ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !c->rx_eof) {
		if (!conn_recv(c, server_rx, server_on_eof, server_error))
			return;
	} else if (ev & (EPOLLERR | EPOLLHUP)) {
		int err = sock_error(c->fd);
		if (err) {
			server_error(c, err, "socket");
			return;
		}
	}
	server_progress(c);
	if (conn_hung_up(c, ev))
		srv_end(c, 2, "connection hung up");
}

static void server_accept(struct evsrc *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			if (errno == ECONNABORTED)
				continue;
			fprintf(stderr, "serve: accept: %s\n", strerror(errno));
			return;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c)
			die("out of memory");
		c->kind = EV_CONN;
		c->fd = fd;
		c->txbuf = xmalloc(CHUNK);
		c->phase = TX_HDR;
		sha256_init(&c->txhash);
		sha256_init(&c->rxhash);
		sha256_init(&c->rxexp);
		c->events = EPOLLIN;
		conn_link(c);
		srv.conns++;
		conn_watch(c);
	}
}

#define MAX_LISTEN 16
static struct evsrc listeners[MAX_LISTEN];

static int cmd_serve(int argc, char **argv)
{
	int nlisten = 0;
	char names[1024] = "";

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--verbose")) {
			verbose = true;
			continue;
		}
		if (strcmp(argv[i], "--listen"))
			usage();
		const char *a = arg_value(&i, argc, argv);
		struct sockaddr_storage ss;
		socklen_t len;
		int one = 1;
		parse_addr(a, &ss, &len);
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ss.ss_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, len) < 0)
			die("bind %s: %s", a, strerror(errno));
		if (listen(fd, 4096) < 0)
			die("listen %s: %s", a, strerror(errno));
		if (nlisten == MAX_LISTEN)
			die("at most %d --listen", MAX_LISTEN);
		struct evsrc *l = &listeners[nlisten];
		l->kind = EV_LISTENER;
		l->fd = fd;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = l };
		epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 " %s", a);
		nlisten++;
	}
	if (!nlisten)
		usage();

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	struct evsrc sig = { .kind = EV_SIGNAL, .fd = signalfd(-1, &mask, SFD_CLOEXEC) };
	if (sig.fd < 0)
		die("signalfd: %s", strerror(errno));
	struct epoll_event sev = { .events = EPOLLIN, .data.ptr = &sig };
	epoll_ctl(epfd, EPOLL_CTL_ADD, sig.fd, &sev);

	printf("serve: listening on%s\n", names);
	fflush(stdout);

	struct epoll_event evs[256];
	for (;;) {
		int n = epoll_wait(epfd, evs, 256, next_timeout_ms(now_s() + 1.0));
		if (n < 0 && errno != EINTR)
			die("epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct evsrc *s = evs[i].data.ptr;
			if (s->kind == EV_SIGNAL)
				goto out;
			if (s->kind == EV_LISTENER) {
				server_accept(s);
				continue;
			}
			struct conn *c = (struct conn *)s;
			if (!c->closed)
				server_event(c, evs[i].events);
		}
		wake_paused(server_progress);
		reap();
	}
out:
	printf("serve: %" PRIu64 " connections, %" PRIu64 " ok, %" PRIu64
	       " failed, %" PRIu64 " aborted, %u open; bytes: up %" PRIu64
	       " down %" PRIu64 "\n", srv.conns, srv.ok, srv.failed, srv.aborted,
	       (unsigned)(srv.conns - srv.ok - srv.failed - srv.aborted),
	       srv.wire_rx, srv.wire_tx);
	return srv.failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* probe: one connection, report how it ended.                          */

static int cmd_probe(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool have_addr = false;
	const char *expect = "reset";
	double within = 2000;
	size_t send_n = 0;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--connect")) {
			parse_addr(arg_value(&i, argc, argv), &ss, &len);
			have_addr = true;
		} else if (!strcmp(argv[i], "--expect"))
			expect = arg_value(&i, argc, argv);
		else if (!strcmp(argv[i], "--within"))
			within = atof(arg_value(&i, argc, argv));
		else if (!strcmp(argv[i], "--send"))
			send_n = (size_t)parse_size(arg_value(&i, argc, argv));
		else
			usage();
	}
	if (!have_addr)
		usage();

	const char *outcome = NULL;
	char detail[128] = "";
	double t0 = now_s(), deadline = t0 + within / 1000.0;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));

	int err = 0;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno != EINPROGRESS)
			err = errno;
		else {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int ms = (int)((deadline - now_s()) * 1000);
			if (poll(&pfd, 1, ms < 0 ? 0 : ms) == 0)
				outcome = "timeout";
			else
				err = sock_error(fd);
		}
	}
	if (!outcome && err)
		outcome = err == ECONNREFUSED ? "refused" :
			  err == ECONNRESET ? "reset" : "error";
	if (!outcome && send_n) {
		uint8_t junk[4096];
		memset(junk, 'x', sizeof(junk));
		while (send_n) {
			ssize_t w = send(fd, junk, send_n < sizeof(junk) ? send_n :
					 sizeof(junk), MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EAGAIN)
					break;
				err = errno;
				outcome = err == ECONNRESET || err == EPIPE ? "reset" : "error";
				break;
			}
			send_n -= (size_t)w;
		}
	}
	while (!outcome) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int ms = (int)((deadline - now_s()) * 1000);
		if (ms < 0 || poll(&pfd, 1, ms) == 0) {
			outcome = "timeout";
			break;
		}
		char b[4096];
		ssize_t r = recv(fd, b, sizeof(b), 0);
		if (r > 0) {
			outcome = "data";
			break;
		}
		if (r == 0) {
			outcome = "eof";
			break;
		}
		if (errno == EINTR || errno == EAGAIN)
			continue;
		err = errno;
		outcome = err == ECONNRESET ? "reset" : "error";
	}
	if (err && !strcmp(outcome, "error"))
		snprintf(detail, sizeof(detail), " (%s)", strerror(err));
	printf("probe: %s%s after %.0f ms\n", outcome, detail, (now_s() - t0) * 1000);
	close(fd);

	/* match outcome against the comma-separated list */
	size_t ol = strlen(outcome);
	for (const char *p = expect; *p; ) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == ol && !strncmp(p, outcome, l))
			return 0;
		p += l + (e ? 1 : 0);
	}
	printf("probe: FAIL: expected %s\n", expect);
	return 1;
}

/* ------------------------------------------------------------------ */
/* hold: open N connections and keep them open.                         */
/*
 * With --exchange SIZE every connection is a normal-mode flow that
 * answers twice: at the open it sends its header and SIZE bytes of up and
 * reads the SIZE bytes of down the server sends at once; then it idles
 * (--seconds, or until SIGUSR1); then it sends SIZE more bytes of up and
 * its FIN, and reads the trailer, whose digests must match both streams.
 * All connections are open at once throughout. Prints
 * "hold: N answered twice, N failed" and exits 1 if any did not.
 */

static volatile sig_atomic_t stop_hold, again_hold;
static unsigned hold_reported;		/* failures printed */
static void on_stop(int sig)
{
	(void)sig;
	stop_hold = 1;
}

static void on_again(int sig)
{
	(void)sig;
	again_hold = 1;
}

struct hold_flow {
	uint64_t seed;
	struct gen up, down;
	struct sha256 up_hash, down_hash;
	uint32_t got;			/* bytes of this phase read */
	uint8_t trailer[TRAILER_LEN];
	bool failed;
};

/* Sends all of p (small: it fits the socket's buffer) or fails the flow. */
static void hold_send(int fd, struct hold_flow *f, const uint8_t *p, size_t n)
{
	ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

	if (w < 0 || (size_t)w != n) {
		if (!f->failed && hold_reported++ < 3)
			printf("FAIL flow: send: %s\n", w < 0 ? strerror(errno) : "short");
		f->failed = true;
	}
}

/* Up bytes of the next phase, hashed as sent. */
static void hold_send_up(int fd, struct hold_flow *f, uint8_t *buf, size_t size)
{
	gen_fill(&f->up, buf, size);
	sha256_update(&f->up_hash, buf, size);
	hold_send(fd, f, buf, size);
}

/*
 * Reads until every live flow has want bytes of this phase (down bytes,
 * checked against the stream; or the trailer, then EOF) or the deadline
 * passes. Returns how many flows are still waiting.
 */
static unsigned hold_read(struct pollfd *pfd, struct hold_flow *fl, unsigned count,
			  size_t want, bool trailer, double deadline)
{
	uint8_t buf[4096], exp[4096];
	unsigned waiting = 0;

	for (unsigned i = 0; i < count; i++) {
		fl[i].got = 0;
		pfd[i].events = fl[i].failed ? 0 : POLLIN;
		waiting += !fl[i].failed;
	}
	while (waiting && now_s() < deadline && !stop_hold) {
		if (poll(pfd, count, 100) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (unsigned i = 0; i < count; i++) {
			struct hold_flow *f = &fl[i];
			size_t room = trailer ? sizeof(f->trailer) + 1 - f->got : want - f->got;
			ssize_t n;

			if (!pfd[i].events || !pfd[i].revents)
				continue;
			if (room > sizeof(buf))
				room = sizeof(buf);
			n = recv(pfd[i].fd, buf, room, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (trailer && n == 0 && f->got == sizeof(f->trailer)) {
				pfd[i].events = 0;	/* trailer, then EOF: done */
				waiting--;
				continue;
			}
			if (n <= 0 || (trailer && f->got + (size_t)n > sizeof(f->trailer))) {
				if (hold_reported++ < 3)
					printf("FAIL flow %u: %s after %u bytes: %s\n", i,
					       trailer ? "trailer" : "down", f->got,
					       n < 0 ? strerror(errno) : n ? "too long" : "eof");
				f->failed = true;
				pfd[i].events = 0;
				waiting--;
				continue;
			}
			if (trailer) {
				memcpy(f->trailer + f->got, buf, (size_t)n);
			} else {
				gen_fill(&f->down, exp, (size_t)n);
				sha256_update(&f->down_hash, buf, (size_t)n);
				if (memcmp(buf, exp, (size_t)n)) {
					if (hold_reported++ < 3)
						printf("FAIL flow %u: down bytes differ\n", i);
					f->failed = true;
				}
			}
			f->got += (uint32_t)n;
			if (f->failed || (!trailer && f->got == want)) {
				pfd[i].events = 0;
				waiting--;
			}
		}
	}
	return waiting;
}

/* The two answers of --exchange; returns the flows that failed. */
static unsigned hold_exchange(struct pollfd *pfd, unsigned count, size_t size,
			      double seconds)
{
	struct hold_flow *fl = calloc(count, sizeof(*fl));
	uint8_t *buf = xmalloc(HDR_LEN + size);
	unsigned failed = 0, late;

	if (!fl)
		die("out of memory");
	for (unsigned i = 0; i < count; i++) {
		struct hold_flow *f = &fl[i];

		f->seed = 0x686f6c64ULL + i;
		gen_init(&f->up, f->seed, STREAM_UP);
		gen_init(&f->down, f->seed, STREAM_DOWN);
		sha256_init(&f->up_hash);
		sha256_init(&f->down_hash);
		memset(buf, 0, HDR_LEN);
		memcpy(buf, MAGIC, 8);
		put32(buf + 8, M_NORMAL);
		put64(buf + 16, 2 * size);
		put64(buf + 24, size);
		put64(buf + 32, f->seed);
		hold_send(pfd[i].fd, f, buf, HDR_LEN);
		hold_send_up(pfd[i].fd, f, buf, size);
	}
	late = hold_read(pfd, fl, count, size, false, now_s() + 60);
	for (unsigned i = 0; i < count; i++)
		failed += fl[i].failed;
	printf("hold: %u answered once, %u failed, %u late\n", count - failed - late,
	       failed, late);
	fflush(stdout);

	double until = now_s() + seconds;
	while (!stop_hold && !again_hold && now_s() < until)
		usleep(20000);

	for (unsigned i = 0; i < count; i++) {
		if (fl[i].failed)
			continue;
		hold_send_up(pfd[i].fd, &fl[i], buf, size);
		if (shutdown(pfd[i].fd, SHUT_WR) < 0)
			fl[i].failed = true;
	}
	late = hold_read(pfd, fl, count, 0, true, now_s() + 60);
	failed = 0;
	for (unsigned i = 0; i < count; i++) {
		struct hold_flow *f = &fl[i];
		char g[17], w[17];

		if (!f->failed && f->got == sizeof(f->trailer) &&
		    !digest_differs(&f->up_hash, f->trailer, g, w) &&
		    !digest_differs(&f->down_hash, f->trailer + DIGEST_LEN, g, w))
			continue;
		f->failed = true;
		failed++;
	}
	printf("hold: %u answered twice, %u failed\n", count - failed, failed);
	free(buf);
	free(fl);
	return failed;
}

static int cmd_hold(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool have_addr = false;
	unsigned count = 0;
	double seconds = 10;
	uint64_t exchange = 0;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--connect")) {
			parse_addr(arg_value(&i, argc, argv), &ss, &len);
			have_addr = true;
		} else if (!strcmp(argv[i], "--count"))
			count = (unsigned)atoi(arg_value(&i, argc, argv));
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(arg_value(&i, argc, argv));
		else if (!strcmp(argv[i], "--exchange"))
			exchange = parse_size(arg_value(&i, argc, argv));
		else
			usage();
	}
	if (!have_addr || !count || exchange > 1024 * 1024)
		usage();

	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	struct sigaction sa_again = { .sa_handler = on_again };
	sigaction(SIGUSR1, &sa_again, NULL);

	struct pollfd *pfd = calloc(count, sizeof(*pfd));
	unsigned connected = 0, failed = 0, pending = 0;
	if (!pfd)
		die("out of memory");
	for (unsigned i = 0; i < count; i++) {
		pfd[i].fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (pfd[i].fd < 0)
			die("socket: %s", strerror(errno));
		pfd[i].events = POLLOUT;
		if (connect(pfd[i].fd, (struct sockaddr *)&ss, len) == 0) {
			connected++;
			pfd[i].events = 0;
		} else if (errno == EINPROGRESS) {
			pending++;
		} else {
			failed++;
			pfd[i].events = 0;
		}
	}
	double deadline = now_s() + 5;
	while (pending && now_s() < deadline && !stop_hold) {
		if (poll(pfd, count, 100) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (unsigned i = 0; i < count; i++) {
			if (!pfd[i].events || !pfd[i].revents)
				continue;
			if (sock_error(pfd[i].fd))
				failed++;
			else
				connected++;
			pfd[i].events = 0;
			pending--;
		}
	}
	printf("hold: %u connected, %u failed, %u pending\n", connected, failed,
	       pending);
	fflush(stdout);
	int rc = 0;
	if (exchange) {
		if (failed || pending || hold_exchange(pfd, count, exchange, seconds))
			rc = 1;
	} else {
		double until = now_s() + seconds;
		while (!stop_hold && now_s() < until)
			usleep(20000);
	}
	for (unsigned i = 0; i < count; i++)
		close(pfd[i].fd);
	free(pfd);
	printf("hold: closed\n");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	sha256_pick();
	if (!strcmp(argv[1], "sha256")) {
		/* sha256 of stdin, for checking the implementation */
		struct sha256 h;
		uint8_t d[DIGEST_LEN];
		ssize_t r;
		sha256_init(&h);
		while ((r = read(0, rxbuf, sizeof(rxbuf))) > 0)
			sha256_update(&h, rxbuf, (size_t)r);
		sha256_final(&h, d);
		for (int i = 0; i < DIGEST_LEN; i++)
			printf("%02x", d[i]);
		printf("  -%s\n", sha256_blocks == sha256_blocks_c ? "" : " (sha-ni)");
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1: %s", strerror(errno));
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc, argv);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc, argv);
	if (!strcmp(argv[1], "probe"))
		return cmd_probe(argc, argv);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(argc, argv);
	usage();
}
