/*
 * test_gpu.c
 *	  The GPU top-k backend against the CPU backend (and against a plain sort
 *	  for the smaller inputs), on a machine with a GPU.
 *
 * Usage: test_gpu [SEED] [CASES] [MAX_LOG_N] [forced|grouped|fault]; the
 * seed is printed.  First THREADS threads run a top-k each at once (on
 * several devices where there are), all needing the cost model before it
 * is calibrated.  Then cases draw n, k, key width, mode, distribution, and
 * either a device-resident run with a random plan (bitonic or radix, with
 * or without delegates, or the cost model's) or a streamed run in batches
 * of odd sizes; every other case reuses one object (gpu_topk_reset), and
 * some streamed runs set their batch size.  With "forced", every case is
 * resident with a random plan and there are no threads: the cost model is
 * never calibrated (for runs under compute-sanitizer's slower tools).
 *
 * Then the grouped top-k (kernels/gpu_grouped.h) runs a fixed list of
 * cases on rows drawn from the same seed, at most 2^MAX_LOG_N rows each,
 * against a plain sort; with "grouped", only those.
 *
 * With "fault", only gpu_inject_device_fault runs, which must answer
 * GPU_DEVICE_LOST (the process's context on device 0 is then unusable).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_topk.h"
#include "gpu_api.h"
#include "gpu_grouped.h"
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

/* ------------------------------------------------------------ threads */

#define THREADS 4

typedef struct ThreadCase
{
	int			index;
	int			device;
	uint64_t	seed;
	size_t		n;
	int			failures;
} ThreadCase;

/*
 * One thread's top-k on its own object and device, as the GPU service runs
 * them: keys in malloc'ed memory page-locked by gpu_host_register, streamed
 * in batches of 2^18 keys, then resident with the cost model's plan and
 * with bitonic forced, each against the CPU backend.
 */
static void *
thread_case(void *arg)
{
	ThreadCase *tc = (ThreadCase *) arg;
	TestRng		rng = {tc->seed};
	int			width = (tc->index & 1) ? 8 : 4;
	TopkMode	mode = (tc->index & 2) ? TOPK_WITH_TIES : TOPK_EXACT;
	uint64_t	k = 1 + rng_next(&rng) % 256;
	size_t		n = tc->n;
	void	   *keys = malloc(n * width);
	void	   *dev;
	GpuTopkPlan bitonic = {GPU_TOPK_BITONIC, 0};
	CpuTopk    *cpu;
	GpuTopk    *gpu;
	TopkResult	cr;
	TopkResult	gr;
	char		label[128];

	if (keys == NULL)
	{
		fprintf(stderr, "thread %d: out of memory\n", tc->index);
		exit(2);
	}
	make_keys(keys, n, width, DIST_UNIFORM, &rng);
	cpu = cpu_topk_create(width, k, mode);
	if (cpu == NULL || !cpu_topk_push(cpu, keys, n) || !cpu_topk_result(cpu, &cr))
	{
		fprintf(stderr, "thread %d: CPU backend out of memory\n", tc->index);
		exit(2);
	}
	REQUIRE(gpu_set_device(tc->device));
	REQUIRE(gpu_host_register(keys, n * width));
	REQUIRE(gpu_device_alloc(n * width, &dev));
	REQUIRE(gpu_topk_create(width, k, mode, &gpu));
	for (int run = 0; run < 3; run++)
	{
		if (run == 0)
		{
			/* the first use of the cost model, in every thread at once */
			REQUIRE(gpu_topk_set_stream_batch(gpu, (size_t) 1 << 18));
			REQUIRE(gpu_topk_push(gpu, keys, n));
		}
		else
		{
			REQUIRE(gpu_copy_to_device(dev, keys, n * width, NULL));
			REQUIRE(gpu_synchronize());
			REQUIRE(gpu_topk_device(gpu, dev, n, run == 1 ? NULL : &bitonic, NULL));
		}
		REQUIRE(gpu_topk_result(gpu, &gr));
		snprintf(label, sizeof(label), "thread %d on device %d (n=%zu k=%llu %d-byte %s run %d)",
				 tc->index, tc->device, n, (unsigned long long) k, width,
				 mode == TOPK_EXACT ? "exact" : "with-ties", run);
		if (!same_answer(keys, n, width, &cr, &gr, label))
			tc->failures++;
	}
	gpu_topk_destroy(gpu);
	REQUIRE(gpu_device_free(dev));
	REQUIRE(gpu_host_unregister(keys));
	cpu_topk_destroy(cpu);
	free(keys);
	return NULL;
}

/*
 * THREADS threads at once, each on its own device where there are several
 * our kernels run on; run before anything else has used the cost model.
 */
static void
test_threads(uint64_t seed, size_t max_n, int devices)
{
	pthread_t	threads[THREADS];
	ThreadCase	tcs[THREADS];

	for (int i = 0; i < THREADS; i++)
	{
		GpuDeviceInfo info;

		tcs[i].index = i;
		tcs[i].device = i % devices;
		if (gpu_device_info(tcs[i].device, &info) != GPU_OK ||
			info.cc_major < GPU_MIN_CC_MAJOR || tcs[i].device >= GPU_MAX_DEVICES)
			tcs[i].device = 0;
		tcs[i].seed = seed + i;
		tcs[i].n = max_n < ((size_t) 1 << 22) ? max_n : (size_t) 1 << 22;
		tcs[i].failures = 0;
		if (pthread_create(&threads[i], NULL, thread_case, &tcs[i]) != 0)
		{
			fprintf(stderr, "test_gpu: could not start a thread\n");
			exit(2);
		}
	}
	for (int i = 0; i < THREADS; i++)
	{
		pthread_join(threads[i], NULL);
		failures += tcs[i].failures;
	}
}

/* ------------------------------------------------------ grouped top-k */

/* a row of the grouped top-k with its payload, for the reference */
typedef struct GroupedRow
{
	uint64_t	group;
	uint64_t	key;
	uint64_t	payload;
} GroupedRow;

/* how a grouped case draws its rows */
typedef enum GroupedShape
{
	SHAPE_ONE_GROUP,			/* every row in one group */
	SHAPE_MANY_GROUPS,			/* about 3 rows a group, few distinct keys */
	SHAPE_SKEWED,				/* half the rows in one group, 1 or 2 in the others */
	SHAPE_EQUAL_KEYS,			/* about 10 rows a group, one key each */
	SHAPE_SMALL_GROUPS			/* about 20 rows a group */
} GroupedShape;

static const char *const shape_names[] = {
	"one-group", "many-groups", "skewed", "equal-keys", "small-groups"
};

typedef struct GroupedCase
{
	GroupedShape shape;
	size_t		n;				/* rows of the first run; later runs halve it */
	uint64_t	k;
	size_t		batch_cap;
	size_t		sizes[4];		/* the pushes' sizes, cycled; 0 ends the list */
	int			runs;			/* on one object */
} GroupedCase;

#define MEBI ((size_t) 1 << 20)

static const GroupedCase grouped_cases[] = {
	{SHAPE_MANY_GROUPS, 0, 3, 1000, {1000}, 1},
	{SHAPE_ONE_GROUP, 200000, 7, MEBI, {MEBI}, 1},
	{SHAPE_ONE_GROUP, 100000, 1, MEBI, {MEBI}, 1},
	{SHAPE_MANY_GROUPS, 3000000, 2, MEBI, {MEBI}, 2},
	{SHAPE_SKEWED, 4000000, 10, MEBI, {MEBI}, 1},
	{SHAPE_EQUAL_KEYS, 1000000, 3, MEBI, {MEBI}, 1},
	{SHAPE_MANY_GROUPS, 2000000, 1, MEBI, {MEBI}, 1},
	{SHAPE_SMALL_GROUPS, 1000000, 1000, MEBI, {MEBI}, 1},
	/* past the floor of 8 batches: a compaction mid-run */
	{SHAPE_MANY_GROUPS, 10000000, 3, 1000003, {1, 1000003, 7}, 1},
	/* a floor of 64Ki rows: many compactions, and the ring of copy events */
	{SHAPE_SKEWED, 600000, 4, 4099, {1, 4099, 7, 1234}, 2},
};

/* a bijection of 64-bit words (splitmix64's finalizer): distinct groups */
static uint64_t
mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* the group word of group id: 0 and all ones among them */
static uint64_t
group_word(uint64_t id, uint64_t salt)
{
	if (id == 1)
		return UINT64_MAX;
	return id == 0 ? 0 : mix64(id ^ salt);
}

/* a key from few distinct values, extremes among them */
static uint64_t
narrow_key(TestRng *rng, uint64_t values)
{
	uint64_t	v = rng_next(rng) % (values + 2);

	return v == values ? UINT64_MAX : (v == values + 1 ? 0 : v * UINT64_C(0x0101010101));
}

static void
fill_grouped(GroupedKey *keys, uint64_t *payloads, size_t n, GroupedShape shape,
			 TestRng *rng)
{
	uint64_t	salt = rng_next(rng);
	bool		wide = rng_next(rng) & 1;

	for (size_t i = 0; i < n; i++)
	{
		uint64_t	id = 0;
		uint64_t	key = 0;

		switch (shape)
		{
			case SHAPE_ONE_GROUP:
				id = 2;
				key = wide ? rng_next(rng) : narrow_key(rng, 64);
				break;
			case SHAPE_MANY_GROUPS:
				id = rng_next(rng) % (n / 3 + 1);
				key = narrow_key(rng, 16);
				break;
			case SHAPE_SKEWED:
				id = (rng_next(rng) & 1) ? 2 : 3 + rng_next(rng) % (n / 2 + 1);
				key = narrow_key(rng, 1000);
				break;
			case SHAPE_EQUAL_KEYS:
				id = rng_next(rng) % (n / 10 + 1);
				key = mix64(id + salt);
				break;
			case SHAPE_SMALL_GROUPS:
				id = rng_next(rng) % (n / 20 + 1);
				key = rng_next(rng);
				break;
		}
		keys[i].group = group_word(id, salt);
		keys[i].key = key;
		payloads[i] = i;
	}
}

/* by group, then key, then payload, all descending */
static int
compare_rows(const void *a, const void *b)
{
	const GroupedRow *x = a;
	const GroupedRow *y = b;

	if (x->group != y->group)
		return x->group < y->group ? 1 : -1;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	if (x->payload != y->payload)
		return x->payload < y->payload ? 1 : -1;
	return 0;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * The expected answer, sorted by compare_rows: in each group, the rows
 * ranked below k and those whose key is the k-th's.
 */
static GroupedRow *
grouped_reference(const GroupedKey *keys, const uint64_t *payloads, size_t n, uint64_t k,
				  size_t *count)
{
	GroupedRow *rows = malloc((n ? n : 1) * sizeof(GroupedRow));
	size_t		kept = 0;
	size_t		start = 0;

	for (size_t i = 0; i < n; i++)
	{
		rows[i].group = keys[i].group;
		rows[i].key = keys[i].key;
		rows[i].payload = payloads[i];
	}
	qsort(rows, n, sizeof(GroupedRow), compare_rows);
	for (size_t i = 0; i < n; i++)
	{
		if (i > 0 && rows[i].group != rows[i - 1].group)
			start = i;
		if (i - start < k || rows[i].key == rows[start + k - 1].key)
			rows[kept++] = rows[i];
	}
	*count = kept;
	return rows;
}

/*
 * Check the GPU's answer: each group's rows adjacent and best first, and
 * the same rows (group, key, payload) as the reference, in any order.
 */
static bool
check_grouped(const GroupedKey *keys, const uint64_t *payloads, size_t n, uint64_t k,
			  const GroupedKey *gkeys, const uint64_t *gpayloads, size_t gcount,
			  const char *label)
{
	size_t		count;
	GroupedRow *expect = grouped_reference(keys, payloads, n, k, &count);
	GroupedRow *got = malloc((gcount ? gcount : 1) * sizeof(GroupedRow));
	uint64_t   *heads = malloc((gcount ? gcount : 1) * sizeof(uint64_t));
	size_t		nheads = 0;
	bool		ok = true;

	if (gcount != count)
	{
		fprintf(stderr, "%s: GPU gave %zu rows, expected %zu\n", label, gcount, count);
		ok = false;
	}
	for (size_t i = 0; ok && i < gcount; i++)
	{
		if (i == 0 || gkeys[i].group != gkeys[i - 1].group)
			heads[nheads++] = gkeys[i].group;
		else if (gkeys[i].key > gkeys[i - 1].key)
		{
			fprintf(stderr, "%s: row %zu out of order in its group\n", label, i);
			ok = false;
		}
		got[i].group = gkeys[i].group;
		got[i].key = gkeys[i].key;
		got[i].payload = gpayloads[i];
	}
	if (ok)
	{
		qsort(heads, nheads, sizeof(uint64_t), compare_u64);
		for (size_t i = 1; ok && i < nheads; i++)
			if (heads[i] == heads[i - 1])
			{
				fprintf(stderr, "%s: the rows of group %llx are not adjacent\n", label,
						(unsigned long long) heads[i]);
				ok = false;
			}
	}
	if (ok)
	{
		qsort(got, gcount, sizeof(GroupedRow), compare_rows);
		for (size_t i = 0; ok && i < gcount; i++)
			if (compare_rows(&got[i], &expect[i]) != 0)
			{
				fprintf(stderr, "%s: row %zu of the sorted answer is (%llx, %llx, %llu), expected (%llx, %llx, %llu)\n",
						label, i, (unsigned long long) got[i].group,
						(unsigned long long) got[i].key, (unsigned long long) got[i].payload,
						(unsigned long long) expect[i].group,
						(unsigned long long) expect[i].key,
						(unsigned long long) expect[i].payload);
				ok = false;
			}
	}
	free(expect);
	free(got);
	free(heads);
	return ok;
}

/* Push n rows in batches of the case's sizes, waiting for the input every other push. */
static void
push_grouped(GpuGroupedTopk *g, const GroupedCase *gc, const GroupedKey *keys,
			 const uint64_t *payloads, size_t n)
{
	int			nsizes = 0;
	size_t		done = 0;

	while (nsizes < 4 && gc->sizes[nsizes] > 0)
		nsizes++;
	REQUIRE(gpu_grouped_push(g, keys, payloads, 0));
	for (int b = 0; done < n; b++)
	{
		size_t		batch = gc->sizes[b % nsizes];

		if (batch > n - done)
			batch = n - done;
		REQUIRE(gpu_grouped_push(g, keys + done, payloads + done, batch));
		if (b & 1)
			REQUIRE(gpu_grouped_wait_input(g));
		done += batch;
	}
}

/*
 * The object of a grouped case: cases of batch capacity MEBI share one, as a
 * pool would, made anew by gpu_grouped_reset; before that, now and then a
 * run is left unfinished (abandoned by the reset).  The rows pushed then
 * are those of the case before.
 */
static GpuGroupedTopk *
grouped_object(const GroupedCase *gc, int c, GpuGroupedTopk **pooled,
			   const GroupedKey *keys, const uint64_t *payloads, size_t most)
{
	GpuGroupedTopk *g;

	if (gc->batch_cap != MEBI)
	{
		REQUIRE(gpu_grouped_create(gc->k, gc->batch_cap, &g));
		return g;
	}
	if (*pooled == NULL)
	{
		REQUIRE(gpu_grouped_create(gc->k, gc->batch_cap, pooled));
		return *pooled;
	}
	if (c % 2 == 0)
		REQUIRE(gpu_grouped_push(*pooled, keys, payloads, most < MEBI ? most : MEBI));
	REQUIRE(gpu_grouped_reset(*pooled, gc->k));
	return *pooled;
}

/* The grouped cases; returns how many runs were checked. */
static int
test_grouped(uint64_t seed, size_t max_n)
{
	int			ncases = sizeof(grouped_cases) / sizeof(grouped_cases[0]);
	TestRng		rng = {seed};
	size_t		most = 1;
	GroupedKey *keys;
	uint64_t   *payloads;
	GpuGroupedTopk *pooled = NULL;
	int			runs = 0;

	for (int c = 0; c < ncases; c++)
		if (grouped_cases[c].n > most)
			most = grouped_cases[c].n;
	most = most < max_n ? most : max_n;
	REQUIRE(gpu_host_alloc(most * sizeof(GroupedKey), (void **) &keys));
	REQUIRE(gpu_host_alloc(most * sizeof(uint64_t), (void **) &payloads));

	for (int c = 0; c < ncases; c++)
	{
		const GroupedCase *gc = &grouped_cases[c];
		GpuGroupedTopk *g;

		g = grouped_object(gc, c, &pooled, keys, payloads, most);
		for (int r = 0; r < gc->runs; r++)
		{
			size_t		n = (gc->n < max_n ? gc->n : max_n) >> r;
			const GroupedKey *gkeys;
			const uint64_t *gpayloads;
			size_t		gcount;
			double		copy_ms;
			double		kernel_ms;
			char		label[256];

			fill_grouped(keys, payloads, n, gc->shape, &rng);
			push_grouped(g, gc, keys, payloads, n);
			REQUIRE(gpu_grouped_result(g, &gkeys, &gpayloads, &gcount));
			gpu_grouped_times(g, &copy_ms, &kernel_ms);
			snprintf(label, sizeof(label),
					 "grouped case %d (%s n=%zu k=%llu batch=%zu run %d)", c,
					 shape_names[gc->shape], n, (unsigned long long) gc->k,
					 gc->batch_cap, r + 1);
			if (!check_grouped(keys, payloads, n, gc->k, gkeys, gpayloads, gcount, label))
				failures++;
			else if (!(copy_ms >= 0 && kernel_ms >= 0) ||
					 (n >= MEBI && (copy_ms <= 0 || kernel_ms <= 0)))
			{
				fprintf(stderr, "%s: device times %g ms (copies), %g ms (kernels)\n",
						label, copy_ms, kernel_ms);
				failures++;
			}
			runs++;
		}
		if (g != pooled)
			gpu_grouped_destroy(g);
	}
	gpu_grouped_destroy(pooled);
	gpu_host_free(keys);
	gpu_host_free(payloads);
	return runs;
}

int
main(int argc, char **argv)
{
	uint64_t	seed = argc > 1 && argv[1][0] ? strtoull(argv[1], NULL, 10) : (uint64_t) time(NULL);
	int			cases = argc > 2 ? atoi(argv[2]) : 300;
	int			max_log_n = argc > 3 ? atoi(argv[3]) : 26;
	bool		forced = argc > 4 && strcmp(argv[4], "forced") == 0;
	bool		grouped_only = argc > 4 && strcmp(argv[4], "grouped") == 0;
	bool		fault = argc > 4 && strcmp(argv[4], "fault") == 0;
	size_t		max_n = (size_t) 1 << max_log_n;
	TestRng		rng = {seed};
	void	   *host;
	void	   *dev;
	int			count;
	int			resident = 0;
	int			streamed = 0;
	int			grouped;
	GpuTopk    *pooled = NULL;

	printf("test_gpu: seed %llu, %d cases, n up to 2^%d\n", (unsigned long long) seed,
		   cases, max_log_n);
	REQUIRE(gpu_device_count(&count));
	REQUIRE(gpu_device_open(0));
	if (fault)
	{
		GpuStatus	status = gpu_inject_device_fault();

		printf("test_gpu: injected fault: status %d, %s\n", (int) status, gpu_last_error());
		return status == GPU_DEVICE_LOST ? 0 : 1;
	}
	if (!forced && !grouped_only)
		test_threads(seed, max_n, count);
	REQUIRE(gpu_host_alloc(max_n * 8, &host));
	REQUIRE(gpu_device_alloc(max_n * 8, &dev));

	for (int c = 0; c < cases && !grouped_only; c++)
	{
		size_t		n = draw_n(&rng, max_log_n);
		uint64_t	k = draw_k(&rng, n);
		int			width = (rng_next(&rng) & 1) ? 8 : 4;
		TopkMode	mode = (rng_next(&rng) % 3 == 0) ? TOPK_WITH_TIES : TOPK_EXACT;
		Distribution d = rng_next(&rng) % DIST_COUNT;
		bool		stream = rng_next(&rng) % 3 == 0 && !forced;
		bool		reuse = c % 2 == 1;
		size_t		stream_batch = 0;
		GpuTopkPlan plan = {GPU_TOPK_AUTO, 0};
		GpuTopkPlan used = {GPU_TOPK_AUTO, 0};
		char		label[320];
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

		/*
		 * Odd cases reuse one object, made anew by gpu_topk_reset as a pool
		 * would; before that, now and then a streamed run is left unfinished
		 * (abandoned by the reset: its keys are this case's, taken at the
		 * last case's width).  None of this draws from rng, so that seeds
		 * replay as before.
		 */
		if (!reuse)
			REQUIRE(gpu_topk_create(width, k, mode, &gpu));
		else if (pooled == NULL)
			REQUIRE(gpu_topk_create(width, k, mode, &pooled));
		else
		{
			if (c % 8 == 3 && n > 0 && !forced)
				REQUIRE(gpu_topk_push(pooled, host, n / 2 + 1));
			REQUIRE(gpu_topk_reset(pooled, width, k, mode));
		}
		if (reuse)
			gpu = pooled;
		if (stream)
		{
			size_t		done = 0;

			/* a third of streamed runs in batches of 4Ki to 1Mi keys, odd sizes among them */
			if (c % 3 == 2)
			{
				stream_batch = ((size_t) 1 << (12 + c % 9)) + c % 7;
				REQUIRE(gpu_topk_set_stream_batch(gpu, stream_batch));
			}

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
				 "case %d (n=%zu k=%llu %d-byte %s %s %s plan=%s/%d batch=%zu%s)", c, n,
				 (unsigned long long) k, width, distribution_name(d),
				 mode == TOPK_EXACT ? "exact" : "with-ties",
				 stream ? "streamed" : "resident",
				 used.algorithm == GPU_TOPK_BITONIC ? "bitonic" :
				 used.algorithm == GPU_TOPK_RADIX ? "radix" : "-", used.log_subrange,
				 stream_batch, reuse ? " reused" : "");
		if (!same_answer(host, n, width, &cr, &gr, label) ||
			(n <= SORT_CHECK_MAX && !check_result(host, n, width, k, mode, &gr, label)))
			failures++;
		if (!reuse)
			gpu_topk_destroy(gpu);
		cpu_topk_destroy(cpu);
	}
	gpu_topk_destroy(pooled);
	gpu_host_free(host);
	gpu_device_free(dev);
	grouped = test_grouped(seed, max_n);
	printf("test_gpu: %d resident and %d streamed cases, %d grouped runs\n", resident,
		   streamed, grouped);
	if (failures)
	{
		printf("test_gpu: %d FAILED (seed %llu)\n", failures, (unsigned long long) seed);
		return 1;
	}
	printf("test_gpu: all passed\n");
	return 0;
}
