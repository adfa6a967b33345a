/*
 * gpu_topk_cost.cu
 *	  The cost model of the GPU top-k engine: the work of each plan, its
 *	  predicted time, and the cheapest plan for n keys and a top k.
 *
 * A plan's time is a line in the work it does, fitted per key width and
 * family of plans (radix or bitonic, each directly or behind delegates),
 * times a correction measured on a grid of n and k; gpu_topk.h gives the
 * lines and gpu_topk_calibrate.cu measures their parameters.  Everything
 * here is host arithmetic over a GpuTopkCalibration given by the caller,
 * and calls no other file of the engine: choosing a plan costs no device
 * work once the device is calibrated (gpu_topk_plan.cu applies the model
 * with the current device's calibration).
 */
#include <math.h>

#include <algorithm>

#include "gpu_topk_internal.cuh"

using namespace topk;

/* [w] of the calibration's arrays: 0 for 4-byte keys, 1 for 8-byte keys */
int
width_index(int key_width)
{
	return key_width == 8 ? 1 : 0;
}

/*
 * Dr. Top-k's subrange size, 2^((log2 n - log2 k + 3) / 2), balances the
 * delegates against the keys of the subranges they select.  Rounded down:
 * on adversarial order (all selected subranges above the cut) the gather
 * keeps k * 2^log_s keys, so the smaller size bounds the worst case.
 */
static int
dr_topk_log_subrange(size_t n, uint64_t k)
{
	int			a = (int) floor((log2((double) n) - log2((double) (k ? k : 1)) + 3) / 2);

	return std::max(MIN_LOG_SUBRANGE, std::min(MAX_LOG_SUBRANGE, a));
}

/*
 * The work of a plan over n keys (see GpuTopkCalibration): 1, n, and for
 * delegates m, g and p; for radix the answer's size.
 */
void
plan_features(size_t n, uint64_t k, bool delegates, double x[5])
{
	x[0] = 1;
	x[1] = (double) n;
	x[2] = 0;
	x[3] = 0;
	x[4] = (double) std::min<uint64_t>(k, n);
	if (delegates)
	{
		size_t		s = (size_t) 1 << dr_topk_log_subrange(n, k);
		size_t		m = (n + s - 1) / s;
		double		ratio = (double) k / (double) m;
		double		g = (double) std::min<size_t>((size_t) std::min<uint64_t>(k, m) * s, n);

		x[2] = (double) m;
		x[3] = g;
		/* with k >= m every subrange is selected and every key passes */
		x[4] = ratio >= 1 ? (double) n :
			std::min(g, ratio < 1e-9 ? (double) k : k * -log1p(-ratio) / ratio);
	}
}

/*
 * Whether delegates can prune: with fewer than 2k subranges of Dr. Top-k's
 * size, the top-k of the delegates selects half of them or more.
 */
static bool
delegates_prune(size_t n, uint64_t k)
{
	size_t		s = (size_t) 1 << dr_topk_log_subrange(n, k);

	return s < n && (n + s - 1) / s >= 2 * k;
}

static GpuTopkFamily
family_of(GpuTopkPlan plan)
{
	if (plan.algorithm == GPU_TOPK_BITONIC)
		return plan.log_subrange > 0 ? GPU_TOPK_FAMILY_BITONIC_DELEGATES : GPU_TOPK_FAMILY_BITONIC;
	return plan.log_subrange > 0 ? GPU_TOPK_FAMILY_RADIX_DELEGATES : GPU_TOPK_FAMILY_RADIX;
}

/* the plan of a family for n keys and a top k */
GpuTopkPlan
family_plan(GpuTopkFamily f, size_t n, uint64_t k)
{
	GpuTopkPlan plan;

	plan.algorithm = (f == GPU_TOPK_FAMILY_BITONIC || f == GPU_TOPK_FAMILY_BITONIC_DELEGATES) ?
		GPU_TOPK_BITONIC : GPU_TOPK_RADIX;
	plan.log_subrange = (f == GPU_TOPK_FAMILY_RADIX_DELEGATES ||
						 f == GPU_TOPK_FAMILY_BITONIC_DELEGATES) ? dr_topk_log_subrange(n, k) : 0;
	return plan;
}

/* whether the cost model considers a family's plan for n keys and a top k */
bool
plan_applies(GpuTopkFamily f, size_t n, uint64_t k)
{
	GpuTopkPlan plan = family_plan(f, n, k);

	if (plan.algorithm == GPU_TOPK_BITONIC && k > BITONIC_MAX_K)
		return false;
	return plan.log_subrange == 0 || delegates_prune(n, k);
}

/* the family's line (see GpuTopkCalibration), in seconds */
double
line_cost(const GpuTopkCalibration *c, int w, GpuTopkFamily f, size_t n, uint64_t k)
{
	const double *coef;
	double		x[5];
	double		t = 0;

	if (f == GPU_TOPK_FAMILY_BITONIC)
		return c->bitonic[w][log2_ceil(k)][0] + c->bitonic[w][log2_ceil(k)][1] * n;
	coef = f == GPU_TOPK_FAMILY_RADIX ? c->radix[w] : c->delegates[w];
	plan_features(n, k, f != GPU_TOPK_FAMILY_RADIX, x);
	for (int j = 0; j < 5; j++)
		t += coef[j] * x[j];
	return t;
}

/* the grid of the measured correction, in log2 n and log2 k */
const int	gpu_topk_correction_log_n[GPU_TOPK_CORRECTION_N] = {20, 22, 24, 26};
const int	gpu_topk_correction_log_k[GPU_TOPK_CORRECTION_K] = {0, 5, 8, 10, 14, 18};

/* the cell of a sorted grid at or below v, and v's fraction of the way on */
static void
grid_position(double v, const int *grid, int len, int *cell, double *frac)
{
	int			i = 0;

	if (v <= grid[0])
	{
		*cell = 0;
		*frac = 0;
		return;
	}
	if (v >= grid[len - 1])
	{
		*cell = len - 2;
		*frac = 1;
		return;
	}
	while (v > grid[i + 1])
		i++;
	*cell = i;
	*frac = (v - grid[i]) / (grid[i + 1] - grid[i]);
}

/*
 * The measured correction of a family's line at n and k: bilinear in
 * log n and log k over the grid points where the plan ran, 1 where it ran
 * at none of the four around.
 */
static double
correction(const GpuTopkCalibration *c, int w, GpuTopkFamily f, size_t n, uint64_t k)
{
	int			i;
	int			j;
	double		fn;
	double		fk;
	double		sum = 0;
	double		weights = 0;

	grid_position(log2((double) n), gpu_topk_correction_log_n, GPU_TOPK_CORRECTION_N, &i, &fn);
	grid_position(log2((double) (k ? k : 1)), gpu_topk_correction_log_k, GPU_TOPK_CORRECTION_K, &j, &fk);
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
		{
			double		r = c->correction[w][f][i + a][j + b];
			double		weight = (a ? fn : 1 - fn) * (b ? fk : 1 - fk);

			if (r > 0)
			{
				sum += weight * r;
				weights += weight;
			}
		}
	return weights > 0 ? sum / weights : 1;
}

/* the predicted seconds of a plan: its family's corrected line */
double
plan_cost(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, GpuTopkPlan plan)
{
	int			w = width_index(key_width);
	GpuTopkFamily f = family_of(plan);
	double		t = line_cost(c, w, f, n, k) * correction(c, w, f, n, k);

	/* with ties, bitonic reads its input once more */
	if (mode == TOPK_WITH_TIES && f == GPU_TOPK_FAMILY_BITONIC)
		t += c->launch_s + (double) n * key_width / c->read_bytes_per_s;
	return t;
}

/*
 * The cheapest plan by the model among those that apply: bitonic (small k)
 * or radix, each directly or (if delegates is true) behind delegates.
 */
GpuTopkPlan
best_plan(const GpuTopkCalibration *c, size_t n, uint64_t k, int key_width,
		  TopkMode mode, bool delegates, double *seconds)
{
	GpuTopkPlan best = family_plan(GPU_TOPK_FAMILY_RADIX, n, k);
	double		best_t = plan_cost(c, n, k, key_width, mode, best);

	for (int f = GPU_TOPK_FAMILY_RADIX + 1; f < GPU_TOPK_FAMILIES; f++)
	{
		GpuTopkPlan plan = family_plan((GpuTopkFamily) f, n, k);
		double		pt;

		if (!plan_applies((GpuTopkFamily) f, n, k) || (plan.log_subrange && !delegates))
			continue;
		pt = plan_cost(c, n, k, key_width, mode, plan);
		if (pt < best_t)
		{
			best = plan;
			best_t = pt;
		}
	}
	if (seconds)
		*seconds = best_t;
	return best;
}
