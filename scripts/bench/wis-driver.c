/* A minimal will-it-scale driver for one task: the published testcase() runs in a child pinned
 * to one CPU, bumping a counter in shared memory; the parent reads it after SECONDS and prints
 * the rate. (will-it-scale's own main.c does the same, plus hwloc and many tasks.)
 * usage: wis-driver SECONDS CPU */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void testcase(unsigned long long *iterations, unsigned long nr);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	int cpu = argc > 2 ? atoi(argv[2]) : 0;
	unsigned long long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pid_t child = fork();
	if (child == 0) {
		sched_setaffinity(0, sizeof(set), &set);
		testcase(counter, 0);
		_exit(0);
	}
	/* Skip the start, as faultscale's warmup does. */
	usleep(100000);
	unsigned long long before = *counter;
	double start = now();
	usleep((useconds_t)(seconds * 1e6));
	unsigned long long after = *counter;
	double elapsed = now() - start;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	printf("per_sec %.0f\n", (after - before) / elapsed);
	return 0;
}
