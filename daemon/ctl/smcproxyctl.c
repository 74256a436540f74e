/* SPDX-License-Identifier: MIT */
/*
 * smcproxyctl: asks a running smcproxyd for its counters, flows, links and
 * peers, to reload its configuration, or (debug) to fail a link on purpose,
 * over the stats/control socket (protocol in ctl_proto.h, smcproxyctl(8)).
 *
 * One request per run: connect, send one line, read one line, render it.
 * Every step shares one 5 s deadline, so a wedged daemon cannot hang a
 * monitoring script.
 *
 * Exit status: 0 success, 1 the daemon answered with an error (or not at
 * all, or garbage), 2 usage, 3 cannot connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cfg.h"
#include "ctl_proto.h"
#include "ctl_render.h"
#include "version.h"

#define CTL_DEFAULT_SOCKET	"/run/smcproxy/smcproxyd.sock"
#define CTL_TIMEOUT_MS		5000

enum {
	EXIT_DAEMON = 1,
	EXIT_USAGE = 2,
	EXIT_CONNECT = 3,
};

static const char usage_text[] =
	"Usage: smcproxyctl [--socket PATH | -c CONFIG] [--json | --prometheus] COMMAND\n"
	"\n"
	"Commands:\n"
	"  stats    counters: flows by mode, fallbacks by reason, bytes, errors, CQs\n"
	"  flows    the flows open now (at most 10000 are listed)\n"
	"  links    links of the link groups (rdma: device, queue pair, CQ)\n"
	"  peers    peers the daemon knows\n"
	"  reload   make smcproxyd re-read its configuration file\n"
	"  debug fail-link LGR LINK\n"
	"           fail rdma link LINK of link group LGR (ids as `links` shows\n"
	"           them); needs \"debug\": {\"fail_link\": true} in the daemon's config\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH   the daemon's stats socket (default " CTL_DEFAULT_SOCKET ")\n"
	"  -c, --config FILE   take the socket path from stats.socket in FILE\n"
	"  -j, --json          print the daemon's reply as indented JSON\n"
	"  -p, --prometheus    print Prometheus text format (not for reload, debug)\n"
	"  -h, --help          show this help\n"
	"  -V, --version       show the version\n"
	"\n"
	"Exit status: 0 success, 1 daemon error or no reply, 2 usage, 3 cannot connect.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("smcproxyctl: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'smcproxyctl --help'.\n", stderr);
	return EXIT_USAGE;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes. Returns 0,
 * -ETIMEDOUT, or -errno from poll. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int rc;

	for (;;) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&pfd, 1, (int)left);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/*
 * Connects to the UNIX socket at path. A full listen backlog makes a
 * non-blocking AF_UNIX connect fail with EAGAIN rather than EINPROGRESS,
 * so this connects blocking with SO_SNDTIMEO bounding the wait, then
 * switches to non-blocking for the exchange. Returns the fd or -errno
 * (-ETIMEDOUT when the backlog stayed full until the deadline).
 */
static int ctl_connect(const char *path, int64_t deadline)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t left = deadline - now_ms();
	struct timeval tv = {
		.tv_sec = left / 1000,
		.tv_usec = (left % 1000) * 1000,
	};
	int fd, rc;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		goto out_close;
	do
		rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	while (rc < 0 && errno == EINTR && now_ms() < deadline);
	if (rc < 0) {
		if (errno == EAGAIN || errno == EINPROGRESS || errno == EINTR)
			errno = ETIMEDOUT;
		goto out_close;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		goto out_close;
	return fd;

out_close:
	rc = -errno;
	close(fd);
	return rc;
}

/* Sends all of buf. -EPIPE and -ECONNRESET mean the daemon hung up, which
 * it does after refusing a client: the caller still reads its reply. */
static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		int rc;

		if (n >= 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Reads one reply line (up to and including "\n") into a malloc'd *line.
 * Returns its length, -ECONNRESET/-EPIPE-like errors, -ETIMEDOUT,
 * -EMSGSIZE past CTL_REPLY_MAX, or -ENODATA when the daemon closed the
 * connection before a full line (*line then holds what came, if anything,
 * and *len_out its length).
 */
static ssize_t recv_line(int fd, char **line, size_t *len_out, int64_t deadline)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nl;
	int rc;

	*line = NULL;
	*len_out = 0;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *p;

			cap = cap ? 2 * cap : 16384;
			p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n > 0) {
			nl = memchr(buf + len, '\n', (size_t)n);
			len += (size_t)n;
			buf[len] = '\0';
			if (nl) {
				/* Anything after the first line is not ours: one
				 * request, one reply. */
				len = (size_t)(nl - buf) + 1;
				buf[len] = '\0';
				*line = buf;
				*len_out = len;
				return (ssize_t)len;
			}
			if (len > CTL_REPLY_MAX) {
				free(buf);
				return -EMSGSIZE;
			}
			continue;
		}
		if (n == 0) {
			*line = buf;
			*len_out = len;
			return -ENODATA;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			rc = -errno;
			free(buf);
			return rc;
		}
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc < 0) {
			free(buf);
			return rc;
		}
	}
}

/* Where the socket is: --socket, else stats.socket of -c CONFIG, else the
 * default. Returns 0 with a malloc'd *path, or an exit status. */
static int resolve_socket(const char *opt_socket, const char *opt_config,
			  char **path)
{
	struct cfg_errors errs = { 0 };
	struct cfg *cfg = NULL;
	int rc;

	if (opt_socket) {
		*path = strdup(opt_socket);
		return *path ? 0 : EXIT_DAEMON;
	}
	if (!opt_config) {
		*path = strdup(CTL_DEFAULT_SOCKET);
		return *path ? 0 : EXIT_DAEMON;
	}
	rc = cfg_load_file(opt_config, &cfg, &errs);
	if (rc < 0) {
		/* The config module's lines already name file:line:column. */
		if (errs.text && errs.len)
			fprintf(stderr, "%s%s", errs.text,
				errs.text[errs.len - 1] == '\n' ? "" : "\n");
		else
			fprintf(stderr, "smcproxyctl: %s: %s\n", opt_config,
				strerror(-rc));
		fprintf(stderr, "smcproxyctl: cannot take the socket path from %s\n",
			opt_config);
		cfg_errors_free(&errs);
		return EXIT_USAGE;
	}
	cfg_errors_free(&errs);
	*path = strdup(cfg->stats.socket && *cfg->stats.socket ?
		       cfg->stats.socket : CTL_DEFAULT_SOCKET);
	cfg_free(cfg);
	return *path ? 0 : EXIT_DAEMON;
}

static int report_connect_error(const char *path, int err)
{
	const char *hint = "";

	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		hint = " (is smcproxyd running?)";
		break;
	case EACCES:
	case EPERM:
		hint = " (run as root or as a member of the socket's group)";
		break;
	case ETIMEDOUT:
		hint = " (smcproxyd is not accepting connections)";
		break;
	case ENAMETOOLONG:
		hint = " (a UNIX socket path holds at most 107 bytes)";
		break;
	}
	fprintf(stderr, "smcproxyctl: cannot connect to %s: %s%s\n",
		path, strerror(err), hint);
	return EXIT_CONNECT;
}

/* "reload", "debug fail-link": what the messages call the request. */
static const char *request_label(const struct ctl_request *req)
{
	if (req->cmd == CTL_CMD_DEBUG && ctl_debug_op_name(req->op))
		return req->op == CTL_DEBUG_FAIL_LINK ? "debug fail-link" : "debug";
	return ctl_cmd_name(req->cmd);
}

/* Prints the daemon's error reply. Its text is printed as it came: reload
 * errors are several "file:line:column: key: message" lines. */
static void report_daemon_error(const char *path, const struct ctl_request *req,
				const char *msg)
{
	size_t n = strlen(msg);

	if (strcmp(msg, CTL_ERR_PERMISSION) == 0) {
		fprintf(stderr, "smcproxyctl: %s: smcproxyd refused the request: "
			"permission denied (run as root or as a member of the "
			"socket's group)\n", path);
		return;
	}
	if (memchr(msg, '\n', n))
		fprintf(stderr, "smcproxyctl: %s failed:\n%s%s", request_label(req),
			msg, n && msg[n - 1] == '\n' ? "" : "\n");
	else
		fprintf(stderr, "smcproxyctl: %s failed: %s\n", request_label(req), msg);
}

/*
 * The exchange: send the request line, read one reply line, parse it.
 * Returns 0 with *reply set, or an exit status after printing why.
 */
static int ctl_exchange(const char *path, const struct ctl_request *creq, json_t **reply)
{
	int64_t deadline = now_ms() + CTL_TIMEOUT_MS;
	char err[CTL_ERRMSG_MAX], *req, *line;
	size_t reqlen, len;
	ssize_t n;
	int fd, rc;

	fd = ctl_connect(path, deadline);
	if (fd < 0)
		return report_connect_error(path, -fd);

	req = ctl_request_encode(creq, &reqlen);
	if (!req) {
		close(fd);
		fprintf(stderr, "smcproxyctl: out of memory\n");
		return EXIT_DAEMON;
	}
	rc = send_all(fd, req, reqlen, deadline);
	free(req);
	if (rc == -ETIMEDOUT) {
		close(fd);
		fprintf(stderr, "smcproxyctl: %s: smcproxyd did not take the "
			"request within %d s\n", path, CTL_TIMEOUT_MS / 1000);
		return EXIT_DAEMON;
	}

	/* Even when sending failed, the daemon may have said why before it
	 * hung up (permission denied): read that first. */
	n = recv_line(fd, &line, &len, deadline);
	close(fd);
	if (n < 0) {
		if (n == -ETIMEDOUT)
			fprintf(stderr, "smcproxyctl: %s: no reply from smcproxyd "
				"within %d s\n", path, CTL_TIMEOUT_MS / 1000);
		else if (n == -ENODATA && len == 0)
			fprintf(stderr, "smcproxyctl: %s: smcproxyd closed the "
				"connection without replying\n", path);
		else if (n == -ENODATA)
			fprintf(stderr, "smcproxyctl: %s: reply cut short after "
				"%zu bytes\n", path, len);
		else if (n == -EMSGSIZE)
			fprintf(stderr, "smcproxyctl: %s: reply longer than %d "
				"bytes\n", path, CTL_REPLY_MAX);
		else
			fprintf(stderr, "smcproxyctl: %s: reading the reply: %s\n",
				path, strerror((int)-n));
		free(line);
		return EXIT_DAEMON;
	}

	rc = ctl_reply_parse(line, len, reply, err, sizeof(err));
	free(line);
	if (rc == -EPROTONOSUPPORT) {
		fprintf(stderr, "smcproxyctl: %s: %s in the reply (this smcproxyctl "
			"speaks version %d: are smcproxyd and smcproxyctl from the "
			"same release?)\n", path, err, CTL_PROTO_VERSION);
		return EXIT_DAEMON;
	}
	if (rc < 0) {
		fprintf(stderr, "smcproxyctl: %s: %s\n", path, err);
		return EXIT_DAEMON;
	}
	return 0;
}

/*
 * The arguments after "debug": fail-link LGR LINK. LGR is checked here as
 * the daemon would (1 to 16 hex digits), LINK is a decimal index, so that
 * a typo is a usage error and nothing is sent. Returns 0 or an exit status.
 */
static int parse_debug_args(int argc, char **argv, struct ctl_request *req)
{
	unsigned long link;
	char *end;
	int op;

	if (argc < 1)
		return usage_error("%s", "debug needs an operation: debug fail-link LGR LINK");
	op = ctl_debug_op_from_name(argv[0]);
	if (op < 0)
		return usage_error("unknown debug operation '%s' (expected fail-link)", argv[0]);
	req->op = (enum ctl_debug_op)op;
	if (argc < 3)
		return usage_error("%s", "usage: debug fail-link LGR LINK (the LGR and LINK "
				   "columns of smcproxyctl links)");
	if (argc > 3)
		return usage_error("unexpected argument '%s' (debug fail-link LGR LINK)",
				   argv[3]);
	if (ctl_lgr_prefix(argv[1], req->lgr) < 0)
		return usage_error("invalid LGR '%s': expected 1 to 16 hex digits of a "
				   "link-group id, as smcproxyctl links shows", argv[1]);
	errno = 0;
	link = strtoul(argv[2], &end, 10);
	if (errno || argv[2][0] < '0' || argv[2][0] > '9' || *end ||
	    link > CTL_LINK_INDEX_MAX)
		return usage_error("invalid LINK '%s': expected a link index, as "
				   "smcproxyctl links shows", argv[2]);
	req->link = (unsigned)link;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const char *opt_socket = NULL, *opt_config = NULL, *fmtopt = NULL;
	enum ctl_format fmt = CTL_FORMAT_TABLE;
	char err[CTL_ERRMSG_MAX], *path = NULL;
	struct ctl_request req = { 0 };
	json_t *reply = NULL;
	int c, cmd, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:c:jphV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt_socket = optarg;
			break;
		case 'c':
			opt_config = optarg;
			break;
		case 'j':
		case 'p':
			if (fmtopt && (fmt == CTL_FORMAT_JSON) != (c == 'j'))
				return usage_error("%s", "--json and --prometheus "
						   "exclude each other");
			fmt = c == 'j' ? CTL_FORMAT_JSON : CTL_FORMAT_PROMETHEUS;
			fmtopt = argv[optind - 1];
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("smcproxyctl %s\n", SMCPROXY_VERSION);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument",
					   argv[optind - 1]);
		default:
			/* A long option is reported as written ("--json=3");
			 * optopt names a bad short one even inside a cluster
			 * like -jx. */
			if (strncmp(argv[optind - 1], "--", 2) == 0)
				return usage_error("unknown option or stray argument "
						   "in '%s'", argv[optind - 1]);
			if (optopt) {
				char opt[3] = { '-', (char)optopt, '\0' };

				return usage_error("unknown option '%s'", opt);
			}
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (opt_socket && opt_config)
		return usage_error("%s", "--socket and -c exclude each other");
	if (optind >= argc)
		return usage_error("%s", "no command given (stats, flows, links, "
				   "peers, reload or debug)");
	cmd = ctl_cmd_from_name(argv[optind]);
	if (cmd < 0)
		return usage_error("unknown command '%s' (expected stats, flows, "
				   "links, peers, reload or debug)", argv[optind]);
	req.cmd = (enum ctl_cmd)cmd;
	if (cmd == CTL_CMD_DEBUG) {
		rc = parse_debug_args(argc - optind - 1, argv + optind + 1, &req);
		if (rc)
			return rc;
	} else if (argc - optind > 1) {
		return usage_error("unexpected argument '%s' (one command per run)",
				   argv[optind + 1]);
	}
	/* Checked before connecting: a reload must not happen only for its
	 * reply to be unprintable. */
	if (!ctl_render_supported(fmt, cmd))
		return usage_error("--prometheus does not apply to '%s'",
				   argv[optind]);

	rc = resolve_socket(opt_socket, opt_config, &path);
	if (rc)
		return rc;

	rc = ctl_exchange(path, &req, &reply);
	if (rc)
		goto out;

	if (!ctl_reply_ok(reply)) {
		/* Scripts asking for JSON get the error object too. */
		if (fmt == CTL_FORMAT_JSON)
			ctl_render(stdout, fmt, cmd, reply, err, sizeof(err));
		report_daemon_error(path, &req, ctl_reply_error(reply));
		rc = EXIT_DAEMON;
		goto out;
	}
	if (ctl_render(stdout, fmt, cmd, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "smcproxyctl: %s: %s\n", path, err);
		rc = EXIT_DAEMON;
		goto out;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "smcproxyctl: writing the output: %s\n",
			strerror(errno));
		rc = EXIT_DAEMON;
	}
out:
	json_decref(reply);
	free(path);
	return rc;
}
