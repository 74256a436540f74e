/* SPDX-License-Identifier: MIT */
/* smcproxyd: command line, configuration, daemonizing. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfg.h"
#include "log.h"
#include "privdrop.h"
#include "smcd.h"
#include "version.h"

/* Exit statuses (smcproxyd(8)). */
#define EXIT_CONFIG	2	/* the configuration is invalid */
#define EXIT_STARTUP	1	/* could not start: ports, permissions, ... */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: smcproxyd [-c FILE] [--foreground]\n"
		"       smcproxyd [-c FILE] --check-config\n"
		"       smcproxyd --print-default-config | --version | --help\n"
		"\n"
		"Transparent TCP-to-SMC proxy: carries connections that iptables\n"
		"REDIRECT sends to it to their original destination.\n"
		"\n"
		"  -c, --config FILE        JSON configuration (default: the embedded one)\n"
		"  -t, --check-config       validate the configuration and exit\n"
		"  -p, --print-default-config  print the embedded configuration\n"
		"  -f, --foreground         do not detach (use under systemd)\n"
		"  -V, --version            print the version\n"
		"  -h, --help               this text\n");
}

/* What the systemd unit's LimitNOFILE= gives. */
#define NOFILE_AS_ROOT	1048576

/*
 * File descriptors are the first thing a busy relay runs out of (each TCP
 * flow holds two sockets and two pipes): take all the hard limit allows,
 * and as root (before dropping it) raise the hard limit first to what the
 * unit gives. Registered RDMA memory is pinned: as root, lift
 * RLIMIT_MEMLOCK as the unit's LimitMEMLOCK=infinity does (CAP_IPC_LOCK,
 * which the daemon keeps, lifts it too).
 */
static void raise_limits(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (geteuid() == 0 && rl.rlim_max < NOFILE_AS_ROOT) {
			struct rlimit up = { NOFILE_AS_ROOT, NOFILE_AS_ROOT };

			/* Above fs.nr_open the kernel refuses: keep what we had. */
			if (setrlimit(RLIMIT_NOFILE, &up) == 0)
				rl = up;
		}
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (geteuid() == 0) {
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

/* A copy of path's directory part ("" for none); the caller frees it. */
static char *dir_of(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash && slash != path ? strndup(path, (size_t)(slash - path)) : strdup("");
}

/*
 * Started as root with a "user": what only root may do is done (the
 * limits, SO_MARK checked, the directories for our sockets made for the
 * user); become it (privdrop.c) before anything else is set up, since the
 * kernel refuses rdma_cm and uverbs calls on a file opened under other
 * credentials (ib_safe_file_access(): EACCES), and before the worker
 * threads start, which inherit the credentials. What is left, the
 * listeners (CAP_NET_BIND_SERVICE), the sockets, the devices and the
 * secret, is set up as the user, as under the systemd unit.
 */
static int drop_root(const struct privdrop *pd)
{
	char errbuf[512];
	int err;

	if (!pd->needed)
		return 0;
	err = privdrop_apply(pd, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		return err;
	}
	log_info("running as user %s (uid %u, gid %u) with " PRIVDROP_CAPS_TEXT "%s only",
		 pd->user, (unsigned)pd->uid, (unsigned)pd->gid, pd->keep_bpf ? ", CAP_BPF" : "");
	return 0;
}

/* Without SO_MARK our outbound connections would be redirected to us
 * again; find out now rather than on the first flow. */
static int check_mark(uint32_t mark)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0)
		err = -errno;
	close(fd);
	return err;
}

/*
 * Classic detach (fork, setsid, fork), with a pipe so that the first parent
 * exits only once the daemon is listening, with 0, or has failed, with the
 * daemon's exit status: "smcproxyd && client" works. The daemon writes one
 * byte, its status; EOF without it means it died before it could say.
 */
static int daemonize(int *ready_fd)
{
	int p[2], status;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		waitpid(pid, &status, 0);	/* the middle child, gone at once */
		if (read(p[0], &c, 1) == 1)
			_exit((unsigned char)c);
		_exit(EXIT_STARTUP);
	}
	close(p[0]);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);	/* the first parent reads the pipe, not this one */
	if (chdir("/") < 0)
		return -errno;
	*ready_fd = p[1];
	return 0;
}

/*
 * Started with fd 0, 1 or 2 closed, our own descriptors (the readiness
 * pipe, libuv's epoll fd) would take those numbers and detach_stdio()
 * would overwrite them. Keep them taken by /dev/null from the start.
 */
static void reserve_stdio(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && fd <= STDERR_FILENO)
		fcntl(fd, F_SETFD, 0);	/* stays for good, like a real stdio */
	if (fd > STDERR_FILENO)
		close(fd);
}

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 't' },
		{ "print-default-config", no_argument, NULL, 'p' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *path = NULL;
	bool check = false, foreground = false;
	struct cfg_errors errs = { 0 };
	struct privdrop pd;
	char errbuf[512], *dir;
	struct cfg *cfg;
	struct smcd d;
	int ready_fd = -1, opt, err;
	char *abs_path = NULL;

	reserve_stdio();
	while ((opt = getopt_long(argc, argv, "c:tpfVh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = true;
			break;
		case 'p':
			fputs(cfg_default_json(), stdout);
			return 0;
		case 'f':
			foreground = true;
			break;
		case 'V':
			printf("smcproxyd %s\n", SMCPROXY_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_CONFIG;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "smcproxyd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_CONFIG;
	}

	err = path ? cfg_load_file(path, &cfg, &errs) : cfg_load_default(&cfg, &errs);
	if (err) {
		fputs(errs.text ? errs.text : "", stderr);
		if (!errs.text)
			fprintf(stderr, "smcproxyd: configuration: %s\n", strerror(-err));
		cfg_errors_free(&errs);
		return EXIT_CONFIG;
	}
	if (check) {
		printf("%s: configuration OK\n", cfg->source);
		cfg_free(cfg);
		return 0;
	}
	/* Reload reads the file again, after daemonize() went to "/". */
	if (path) {
		abs_path = realpath(path, NULL);
		if (!abs_path) {
			fprintf(stderr, "smcproxyd: %s: %s\n", path, strerror(errno));
			cfg_free(cfg);
			return EXIT_CONFIG;
		}
		path = abs_path;
	}

	log_open(cfg->log.level);
	/* A peer that vanished must cost us an EPIPE, not our life: splice()
	 * into a socket has no MSG_NOSIGNAL, and neither has libuv's write. */
	signal(SIGPIPE, SIG_IGN);
	/* Before anything is set up: a user that does not exist is a
	 * mistake to say now, not after the daemon listened as root. */
	err = privdrop_prepare(&pd, cfg->user, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s; exiting", errbuf);
		cfg_free(cfg);
		return EXIT_STARTUP;
	}
	pd.keep_bpf = cfg->intercept.mode == CFG_INTERCEPT_EBPF;
	if (geteuid() == 0 && !pd.needed)
		log_info("running as root with every capability, as \"user\": \"\" asks");
	raise_limits();
	err = check_mark(cfg->mark);
	if (err) {
		log_err("cannot set SO_MARK %u on outbound sockets: %s (needs CAP_NET_ADMIN); exiting",
			cfg->mark, strerror(-err));
		cfg_free(cfg);
		return EXIT_STARTUP;
	}
	if (!foreground) {
		err = daemonize(&ready_fd);
		if (err) {
			log_err("cannot detach: %s; exiting", strerror(-err));
			if (ready_fd >= 0)
				(void)!write(ready_fd, (char[]){ EXIT_STARTUP }, 1);
			return EXIT_STARTUP;
		}
	}
	/* The directories the daemon's sockets go in, made now (as root)
	 * for the user it will run as. */
	privdrop_mkdir(&pd, cfg->shm.dir, 0755);
	dir = dir_of(cfg->stats.socket);
	privdrop_mkdir(&pd, dir, 0755);
	free(dir);
	err = drop_root(&pd);
	if (!err)
		err = smcd_init(&d, cfg, path, ready_fd);
	free(abs_path);
	if (err) {
		if (ready_fd >= 0)
			(void)!write(ready_fd, (char[]){ EXIT_STARTUP }, 1);
		return EXIT_STARTUP;
	}
	if (!foreground) {
		log_use_syslog();
		detach_stdio();
	}
	return smcd_run(&d);
}
