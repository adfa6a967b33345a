/*
 * test_gpu.c
 *	  The GPU top-k backend against the CPU backend (and against a plain sort
 *	  for the smaller inputs), on a machine with a GPU.
 *
 * Usage: test_gpu [SEED] [CASES] [MAX_LOG_N] [forced]; the seed is printed.
 * Cases draw n, k, key width, mode, distribution, and either a
 * device-resident run with a random plan (bitonic or radix, with or without
 * delegates, or the cost model's) or a streamed run in batches of odd
 * sizes.  With "forced", every case is resident with a random plan: the
 * cost model is never calibrated (for runs under compute-sanitizer's
 * slower tools).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_topk.h"
#include "gpu_api.h"
#include "gpu_topk.h"
#include "testlib.h"

/* inputs at most this large are also checked against a full sort */
#define SORT_CHECK_MAX ((size_t) 1 << 21)

static int	failures = 0;

#define REQUIRE(call) \
	do { \
		GpuStatus s_ = (call); \
		if (s_ != GPU_OK) \
		{ \
			fprintf(stderr, "%s: %s\n", #call, gpu_last_error()); \
			exit(2); \
		} \
	} while (0)

/* Same answer as the CPU's: keys equal item by item, valid distinct refs. */
static bool
same_answer(const void *keys, size_t n, int width, const TopkResult *cpu,
			const TopkResult *gpu, const char *label)
{
	unsigned char *seen;
	bool		ok = true;

	if (cpu->count != gpu->count)
	{
		fprintf(stderr, "%s: GPU gave %zu items, CPU %zu\n", label, gpu->count, cpu->count);
		return false;
	}
	seen = calloc(n ? n : 1, 1);
	for (size_t i = 0; ok && i < gpu->count; i++)
	{
		const TopkItem *g = &gpu->items[i];

		if (g->key != cpu->items[i].key)
		{
			fprintf(stderr, "%s: item %zu: GPU key %llx, CPU key %llx\n", label, i,
					(unsigned long long) g->key, (unsigned long long) cpu->items[i].key);
			ok = false;
			break;
		}
		if (g->ref >= n || seen[g->ref])
		{
			fprintf(stderr, "%s: item %zu: bad or repeated reference %llu\n", label, i,
					(unsigned long long) g->ref);
			ok = false;
			break;
		}
		seen[g->ref] = 1;
		if (key_at(keys, width, g->ref) != g->key)
		{
			fprintf(stderr, "%s: item %zu: key does not match its reference\n", label, i);
			ok = false;
		}
	}
	free(seen);
	return ok;
}

/* n of a case: mostly small or odd sizes, some powers of two; at most 2^max_log_n */
static size_t
draw_n(TestRng *rng, int max_log_n)
{
	size_t		max_n = (size_t) 1 << max_log_n;
	size_t		n;

	switch (rng_next(rng) % 5)
	{
		case 0:
			n = rng_next(rng) % 40;
			break;
		case 1:
			n = rng_next(rng) % 10000;
			break;
		case 2:
			n = rng_next(rng) % (1 << 20);
			break;
		case 3:
			n = (size_t) 1 << (10 + rng_next(rng) % (max_log_n - 9));
			break;
		default:
			n = rng_next(rng) % max_n;
			break;
	}
	return n < max_n ? n : max_n;
}

static uint64_t
draw_k(TestRng *rng, size_t n)
{
	switch (rng_next(rng) % 7)
	{
		case 0:
			return rng_next(rng) % 3;
		case 1:
			return n + rng_next(rng) % 2;
		case 2:
			return n ? 1 + rng_next(rng) % n : 1;
		case 3:
			return 1 + rng_next(rng) % 256;
		case 4:
			return (uint64_t) 1 << (rng_next(rng) % 21);
		default:
			return 1 + rng_next(rng) % 5000;
	}
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 && argv[1][0] ? strtoull(argv[1], NULL, 10) : (uint64_t) time(NULL);
	int			cases = argc > 2 ? atoi(argv[2]) : 300;
	int			max_log_n = argc > 3 ? atoi(argv[3]) : 26;
	bool		forced = argc > 4 && strcmp(argv[4], "forced") == 0;
	size_t		max_n = (size_t) 1 << max_log_n;
	TestRng		rng = {seed};
	void	   *host;
	void	   *dev;
	int			count;
	int			resident = 0;
	int			streamed = 0;

	printf("test_gpu: seed %llu, %d cases, n up to 2^%d\n", (unsigned long long) seed,
		   cases, max_log_n);
	REQUIRE(gpu_device_count(&count));
	REQUIRE(gpu_device_open(0));
	REQUIRE(gpu_host_alloc(max_n * 8, &host));
	REQUIRE(gpu_device_alloc(max_n * 8, &dev));

	for (int c = 0; c < cases; c++)
	{
		size_t		n = draw_n(&rng, max_log_n);
		uint64_t	k = draw_k(&rng, n);
		int			width = (rng_next(&rng) & 1) ? 8 : 4;
		TopkMode	mode = (rng_next(&rng) % 3 == 0) ? TOPK_WITH_TIES : TOPK_EXACT;
		Distribution d = rng_next(&rng) % DIST_COUNT;
		bool		stream = rng_next(&rng) % 3 == 0 && !forced;
		GpuTopkPlan plan = {GPU_TOPK_AUTO, 0};
		GpuTopkPlan used = {GPU_TOPK_AUTO, 0};
		char		label[256];
		CpuTopk    *cpu;
		GpuTopk    *gpu;
		TopkResult	cr;
		TopkResult	gr;

		if (mode == TOPK_WITH_TIES && (d == DIST_ALL_EQUAL || d == DIST_FEW_DISTINCT) &&
			n > ((size_t) 1 << 22))
			d = DIST_UNIFORM;	/* keeps the answer (all ties) small */
		if (rng_next(&rng) % 4 != 0 || forced)
		{
			plan.algorithm = (rng_next(&rng) & 1) ? GPU_TOPK_BITONIC : GPU_TOPK_RADIX;
			plan.log_subrange = (rng_next(&rng) & 1) ? 0 : 7 + (int) (rng_next(&rng) % 8);
		}
		make_keys(host, n, width, d, &rng);

		cpu = cpu_topk_create(width, k, mode);
		if (cpu == NULL || !cpu_topk_push(cpu, host, n) || !cpu_topk_result(cpu, &cr))
		{
			fprintf(stderr, "CPU backend out of memory\n");
			return 2;
		}

		REQUIRE(gpu_topk_create(width, k, mode, &gpu));
		if (stream)
		{
			size_t		done = 0;

			while (done < n)
			{
				size_t		batch = 1 + rng_next(&rng) % ((rng_next(&rng) & 1) ? 777 : 3000001);

				if (batch > n - done)
					batch = n - done;
				REQUIRE(gpu_topk_push(gpu, (char *) host + done * width, batch));
				done += batch;
			}
			streamed++;
		}
		else
		{
			REQUIRE(gpu_copy_to_device(dev, host, n * width, NULL));
			REQUIRE(gpu_synchronize());
			REQUIRE(gpu_topk_device(gpu, dev, n, &plan, &used));
			resident++;
		}
		REQUIRE(gpu_topk_result(gpu, &gr));

		snprintf(label, sizeof(label),
				 "case %d (n=%zu k=%llu %d-byte %s %s %s plan=%s/%d)", c, n,
				 (unsigned long long) k, width, distribution_name(d),
				 mode == TOPK_EXACT ? "exact" : "with-ties",
				 stream ? "streamed" : "resident",
				 used.algorithm == GPU_TOPK_BITONIC ? "bitonic" :
				 used.algorithm == GPU_TOPK_RADIX ? "radix" : "-", used.log_subrange);
		if (!same_answer(host, n, width, &cr, &gr, label) ||
			(n <= SORT_CHECK_MAX && !check_result(host, n, width, k, mode, &gr, label)))
			failures++;
		gpu_topk_destroy(gpu);
		cpu_topk_destroy(cpu);
	}
	gpu_host_free(host);
	gpu_device_free(dev);
	printf("test_gpu: %d resident and %d streamed cases\n", resident, streamed);
	if (failures)
	{
		printf("test_gpu: %d FAILED (seed %llu)\n", failures, (unsigned long long) seed);
		return 1;
	}
	printf("test_gpu: all passed\n");
	return 0;
}
