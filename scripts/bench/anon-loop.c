/*
 * Reference loop for scripts/bench-loop: the anon workload written plainly in C, so
 * faultscale's harness and loop can be compared against it on the same CPU.
 *
 * usage: anon-loop SECONDS CHUNK_BYTES CPU
 * prints: faults_per_sec <value>
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_alarm(int sig) { (void)sig; stop = 1; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s SECONDS CHUNK_BYTES CPU\n", argv[0]);
		return 2;
	}
	double seconds = atof(argv[1]);
	size_t chunk = strtoull(argv[2], NULL, 0);
	long page = sysconf(_SC_PAGESIZE);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[3]), &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	/* Same as faultscale's anon workload: 4 KiB faults even for chunks >= 2 MiB. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	signal(SIGALRM, on_alarm);
	struct itimerval timer = { .it_value = { (long)seconds, (long)((seconds - (long)seconds) * 1e6) } };
	unsigned long long iterations = 0;
	double start = now();
	setitimer(ITIMER_REAL, &timer, NULL);
	while (!stop) {
		char *x = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (x == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		for (size_t off = 0; off < chunk; off += page)
			x[off] = 0;
		munmap(x, chunk);
		iterations++;
	}
	double elapsed = now() - start;
	printf("faults_per_sec %.1f\n", iterations * (double)(chunk / page) / elapsed);
	return 0;
}
