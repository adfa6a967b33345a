/*
 * gpu_topk_calibrate.cu
 *	  The cost model's parameters, measured on the device: timed runs of
 *	  every family of plans, and least squares fits of their lines.
 *
 * The first use of the model on a device calibrates it for that device
 * (about 0.17 s on an H200), once per process: the bandwidth of the
 * delegate pass and of copies to the device, the time of a launch, then
 * for each key width radix and its delegates on the correction grid (their
 * lines fitted to those times), bitonic at two sizes per log2 k, and every
 * family's measured / line on the grid.  Calibration keys are shaped like common data, so that radix
 * runs as many passes as it would on real keys.
 *
 * Threads may need the model at once (the GPU service runs a thread per
 * job): a device's first users wait on its mutex while one of them
 * measures, and everyone after reads the published parameters without
 * locking.  Devices are measured independently of one another.
 *
 * The measurement runs plans through gpu_topk.cu and fits the lines of
 * gpu_topk_cost.cu; the files that choose plans (gpu_topk_plan.cu,
 * gpu_topk_stream.cu) read its result through current_calibration.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "gpu_topk_internal.cuh"
#include "keys.h"

using namespace topk;

/* calibration input: keys */
#define CALIBRATION_KEYS ((size_t) 1 << 26)

/* a device's parameters, and whether they are measured (set once, after them) */
struct DeviceModel
{
	std::atomic<bool> ready{false};
	GpuTopkCalibration cal;
};

static DeviceModel models[GPU_MAX_DEVICES];
/* held while a device's model is measured */
static std::mutex measuring[GPU_MAX_DEVICES];

/*
 * Calibration keys from a hash of their position, shaped like common data
 * (shared high bits take radix more passes than hashed bits do): for 4-byte
 * keys, those of float4 values in [0, 1), like scores; for 8-byte keys,
 * those of int8 values in [0, 2^46), like ids or timestamps.
 */
template <typename K>
__global__ void
fill_calibration_keys(K *keys, size_t n)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		unsigned long long z = i * 0x9e3779b97f4a7c15ull;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z ^= z >> 31;
		if (sizeof(K) == 4)
			keys[i] = (K) key_from_float4((float) (z >> 40) / (float) (1 << 24), true);
		else
			keys[i] = (K) key_from_int64((int64_t) (z >> 18), true);
	}
}

__global__ void
empty_kernel(void)
{
}

/* The fastest of a few runs of fn (after one to warm up), by the host clock. */
template <typename F>
static GpuStatus
time_best(int runs, F fn, double *seconds)
{
	double		best = 1e30;

	for (int r = 0; r <= runs; r++)
	{
		auto		start = std::chrono::steady_clock::now();
		double		t;

		GPU_TRY(fn());
		t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		if (r > 0 && t < best)
			best = t;
	}
	*seconds = best;
	return GPU_OK;
}


/* seconds of a device-resident top-k of the first n calibration keys */
static GpuStatus
time_run(GpuTopk *t, const void *keys, size_t n, uint64_t k, GpuTopkPlan plan,
		 double *seconds)
{
	t->k = k;
	return time_best(2, [&] {
		return run_device_plan(t, keys, n, plan, NULL);
	}, seconds);
}

/* a measured run: n, k and its seconds */
struct Sample
{
	double		n;
	double		k;
	double		t;
};

/*
 * Least squares of the samples' seconds on their plan features (see
 * plan_features).  A coefficient that comes out negative drops its feature
 * and the rest are refitted, so the model never predicts less for more
 * work.  For delegates only a and e are fitted, to what the physical terms
 * leave: the keys read (n and g) at read_s each, and the top-k of the m
 * delegates at radix_s per key, radix's own rate (their features are too
 * collinear with the others to be fitted).
 */
static void
fit_family(const Sample *smp, int count, bool delegates, double read_s,
		   double radix_s, double coef[5])
{
	/* scales that bring the features to similar magnitudes */
	const double scale[5] = {1, 1e-6, 1e-4, 1e-6, 1e-3};
	bool		used[5] = {true, !delegates, false, false, true};

	for (;;)
	{
		double		m[5][6] = {{0}};
		int			idx[5];
		int			f = 0;
		bool		negative = false;

		for (int j = 0; j < 5; j++)
			if (used[j])
				idx[f++] = j;
		for (int s = 0; s < count; s++)
		{
			double		x[5];
			double		t = smp[s].t;

			plan_features((size_t) smp[s].n, (uint64_t) smp[s].k, delegates, x);
			if (delegates)
				t -= read_s * (x[1] + x[3]) + radix_s * x[2];
			for (int r = 0; r < f; r++)
			{
				for (int q = 0; q < f; q++)
					m[r][q] += x[idx[r]] * scale[idx[r]] * x[idx[q]] * scale[idx[q]];
				m[r][f] += x[idx[r]] * scale[idx[r]] * t;
			}
		}
		/* Gauss-Jordan elimination with partial pivoting */
		for (int col = 0; col < f; col++)
		{
			int			piv = col;

			for (int r = col + 1; r < f; r++)
				if (fabs(m[r][col]) > fabs(m[piv][col]))
					piv = r;
			for (int q = 0; q <= f; q++)
				std::swap(m[col][q], m[piv][q]);
			for (int r = 0; r < f; r++)
				if (r != col && m[col][col] != 0)
				{
					double		ratio = m[r][col] / m[col][col];

					for (int q = col; q <= f; q++)
						m[r][q] -= ratio * m[col][q];
				}
		}
		for (int j = 0; j < 5; j++)
			coef[j] = 0;
		for (int r = 0; r < f; r++)
		{
			double		v = m[r][r] != 0 ? m[r][f] / m[r][r] : 0;

			coef[idx[r]] = v * scale[idx[r]];
			if (v < 0 && idx[r] != 0)
			{
				used[idx[r]] = false;
				negative = true;
			}
		}
		if (!negative)
		{
			if (delegates)
			{
				coef[1] = coef[3] = read_s;
				coef[2] = radix_s;
			}
			return;
		}
	}
}

/* seconds of each plan of a family at the correction grid; 0 where it does not apply */
typedef double GridTimes[GPU_TOPK_CORRECTION_N][GPU_TOPK_CORRECTION_K];

static GpuStatus
time_grid(GpuTopk *t, const void *keys, GpuTopkFamily f, GridTimes times)
{
	for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
		for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
		{
			size_t		n = (size_t) 1 << gpu_topk_correction_log_n[i];
			uint64_t	k = (uint64_t) 1 << gpu_topk_correction_log_k[j];

			times[i][j] = 0;
			if (plan_applies(f, n, k))
				GPU_TRY(time_run(t, keys, n, k, family_plan(f, n, k), &times[i][j]));
		}
	return GPU_OK;
}

/* fit a radix family's line to its grid times */
static void
fit_grid(const GpuTopkCalibration *c, int w, GpuTopkFamily f, GridTimes times, double coef[5])
{
	Sample		smp[GPU_TOPK_CORRECTION_N * GPU_TOPK_CORRECTION_K];
	int			count = 0;

	for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
		for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
			if (times[i][j] > 0)
			{
				smp[count].n = (double) ((size_t) 1 << gpu_topk_correction_log_n[i]);
				smp[count].k = (double) ((uint64_t) 1 << gpu_topk_correction_log_k[j]);
				smp[count].t = times[i][j];
				count++;
			}
	fit_family(smp, count, f == GPU_TOPK_FAMILY_RADIX_DELEGATES,
			   (w ? 8 : 4) / c->read_bytes_per_s, c->radix[w][1], coef);
}

/*
 * The lines of every family for one key width, and their corrections: radix
 * first (delegates use its rate), then bitonic's line per log2 k from n =
 * 2^16 and 2^21, then every family on the correction grid.
 */
static GpuStatus
calibrate_blocks(GpuTopkCalibration *c, GpuTopk *t, const void *keys)
{
	int			w = width_index(t->key_width);
	GridTimes	times[GPU_TOPK_FAMILIES];
	GpuTopkPlan bitonic = {GPU_TOPK_BITONIC, 0};

	GPU_TRY(time_grid(t, keys, GPU_TOPK_FAMILY_RADIX, times[GPU_TOPK_FAMILY_RADIX]));
	fit_grid(c, w, GPU_TOPK_FAMILY_RADIX, times[GPU_TOPK_FAMILY_RADIX], c->radix[w]);
	GPU_TRY(time_grid(t, keys, GPU_TOPK_FAMILY_RADIX_DELEGATES, times[GPU_TOPK_FAMILY_RADIX_DELEGATES]));
	fit_grid(c, w, GPU_TOPK_FAMILY_RADIX_DELEGATES, times[GPU_TOPK_FAMILY_RADIX_DELEGATES],
			 c->delegates[w]);
	for (int l = 0; l <= 8; l++)
	{
		double		t1;
		double		t2;
		size_t		n1 = (size_t) 1 << 16;
		size_t		n2 = (size_t) 1 << 21;

		GPU_TRY(time_run(t, keys, n1, (uint64_t) 1 << l, bitonic, &t1));
		GPU_TRY(time_run(t, keys, n2, (uint64_t) 1 << l, bitonic, &t2));
		c->bitonic[w][l][1] = std::max(0.0, (t2 - t1) / (double) (n2 - n1));
		c->bitonic[w][l][0] = std::max(0.0, t1 - c->bitonic[w][l][1] * n1);
	}
	GPU_TRY(time_grid(t, keys, GPU_TOPK_FAMILY_BITONIC, times[GPU_TOPK_FAMILY_BITONIC]));
	GPU_TRY(time_grid(t, keys, GPU_TOPK_FAMILY_BITONIC_DELEGATES,
				  times[GPU_TOPK_FAMILY_BITONIC_DELEGATES]));

	for (int f = 0; f < GPU_TOPK_FAMILIES; f++)
		for (int i = 0; i < GPU_TOPK_CORRECTION_N; i++)
			for (int j = 0; j < GPU_TOPK_CORRECTION_K; j++)
			{
				double		line = line_cost(c, w, (GpuTopkFamily) f,
											 (size_t) 1 << gpu_topk_correction_log_n[i],
											 (uint64_t) 1 << gpu_topk_correction_log_k[j]);

				c->correction[w][f][i][j] = times[f][i][j] > 0 && line > 0 ?
					times[f][i][j] / line : 0;
			}
	return GPU_OK;
}

/* the lines and corrections of one key width, on an object of its own */
static GpuStatus
calibrate_width(GpuTopkCalibration *c, const void *keys, int key_width)
{
	GpuTopk    *t;
	GpuStatus	status;

	GPU_TRY(gpu_topk_create(key_width, 1, TOPK_EXACT, &t));
	status = calibrate_blocks(c, t, keys);
	gpu_topk_destroy(t);
	return status;
}

/*
 * Measure the model on the current device into *out.  The runs it times
 * are given their plans (run_device_plan), so none of them consults the
 * model being measured.
 */
static GpuStatus
calibrate(GpuTopkCalibration *out)
{
	GpuTopkCalibration c;
	Device		dev;
	void	   *keys = NULL;
	uint32_t   *delegates = NULL;
	void	   *host = NULL;
	double		t = 0;
	int			device;
	GpuStatus	status = GPU_OK;
	size_t		copy_bytes = (size_t) 64 << 20;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	GPU_CHECK(cudaDeviceGetAttribute(&dev.sm_count, cudaDevAttrMultiProcessorCount, device),
			  "Reading device properties");
	dev.cooperative = false;	/* the delegate pass, the one use here, needs none */
	GPU_CHECK(cudaStreamCreateWithFlags(&dev.stream, cudaStreamNonBlocking), "Creating a stream");
	memset(&c, 0, sizeof(c));

#define CAL(call, what) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { status = gpu_fail(e_, what); goto done; } } while (0)
#define CAL_STATUS(call) \
	do { status = (call); if (status != GPU_OK) goto done; } while (0)

	CAL(cudaMalloc(&keys, CALIBRATION_KEYS * sizeof(uint64_t)), "Allocating calibration memory");
	CAL(cudaMalloc(&delegates, (CALIBRATION_KEYS >> 12) * sizeof(uint32_t)),
		"Allocating calibration memory");
	/* copies first: they overwrite the keys, which are filled after */
	CAL(cudaHostAlloc(&host, copy_bytes, cudaHostAllocDefault), "Allocating calibration memory");
	memset(host, 0x5a, copy_bytes);
	CAL_STATUS(time_best(3, [&] {
		GPU_CHECK(cudaMemcpyAsync(keys, host, copy_bytes, cudaMemcpyHostToDevice, dev.stream),
				  "Timing copies to the device");
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing copies to the device");
		return GPU_OK;
	}, &t));
	c.copy_bytes_per_s = copy_bytes / t;

	fill_calibration_keys<uint32_t><<<1024, 256, 0, dev.stream>>>((uint32_t *) keys, CALIBRATION_KEYS);
	CAL(cudaStreamSynchronize(dev.stream), "Preparing calibration keys");

	CAL_STATUS(time_best(3, [&] {
		subrange_max<uint32_t>(dev, (uint32_t *) keys, CALIBRATION_KEYS, 12, delegates);
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing the delegate pass");
		return GPU_OK;
	}, &t));
	c.read_bytes_per_s = CALIBRATION_KEYS * sizeof(uint32_t) / t;

	CAL_STATUS(time_best(3, [&] {
		for (int i = 0; i < 100; i++)
			empty_kernel<<<1, 32, 0, dev.stream>>>();
		GPU_CHECK(cudaStreamSynchronize(dev.stream), "Timing kernel launches");
		return GPU_OK;
	}, &t));
	c.launch_s = t / 100;

	CAL_STATUS(calibrate_width(&c, keys, 4));
	fill_calibration_keys<uint64_t><<<1024, 256, 0, dev.stream>>>((uint64_t *) keys, CALIBRATION_KEYS);
	CAL(cudaStreamSynchronize(dev.stream), "Preparing calibration keys");
	CAL_STATUS(calibrate_width(&c, keys, 8));
	*out = c;

done:
	if (keys)
		cudaFree(keys);
	if (delegates)
		cudaFree(delegates);
	if (host)
		cudaFreeHost(host);
	cudaStreamDestroy(dev.stream);
	return status;
#undef CAL
#undef CAL_STATUS
}

/*
 * The cost model's parameters for the current device, measured on its first
 * use in the process.  A failed measurement publishes nothing: the next use
 * tries again.
 */
GpuStatus
current_calibration(const GpuTopkCalibration **cal)
{
	int			device;
	DeviceModel *m;

	GPU_CHECK(cudaGetDevice(&device), "Finding the device");
	if (device < 0 || device >= GPU_MAX_DEVICES)
	{
		char		action[128];

		snprintf(action, sizeof(action),
				 "Calibrating the cost model on device %d (the engine serves devices 0 to %d)",
				 device, GPU_MAX_DEVICES - 1);
		return gpu_fail(cudaErrorInvalidDevice, action);
	}
	m = &models[device];
	/* acquire: a model seen ready is seen whole */
	if (!m->ready.load(std::memory_order_acquire))
	{
		std::lock_guard<std::mutex> hold(measuring[device]);

		/* another thread may have measured it while this one waited */
		if (!m->ready.load(std::memory_order_acquire))
		{
			GPU_TRY(calibrate(&m->cal));
			m->ready.store(true, std::memory_order_release);
		}
	}
	*cal = &m->cal;
	return GPU_OK;
}

/* ---------------------------------------------------------------- C API */

extern "C" GpuStatus
gpu_topk_calibration(GpuTopkCalibration *cal)
{
	const GpuTopkCalibration *current;

	GPU_TRY(current_calibration(&current));
	*cal = *current;
	return GPU_OK;
}
