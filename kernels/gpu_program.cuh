/*
 * gpu_program.cuh
 *	  Running a GpuRowProgram (gpu_program.h) on one row in a kernel.
 *
 * A reader gives a column's value: Row::value(const GpuColumn &, bool
 * *isnull) returns a pointer to the stored value, or sets *isnull.
 */
#ifndef GPU_PROGRAM_CUH
#define GPU_PROGRAM_CUH

#include "gpu_program.h"

/*
 * Point the program's value sets, described as offsets into the set values
 * (src/scan_gpu_program.c), at those values in device memory.
 */
static inline void
program_place_sets(GpuRowProgram *p, const uint64_t *device_values)
{
	for (int i = 0; i < p->nsets; i++)
		p->sets[i].values = device_values + (uintptr_t) p->sets[i].values;
}

/* A thread's registers and stacks for the program. */
struct ProgramState
{
	FilterRegister regs[GPU_PROGRAM_MAX_REGISTERS];
	FilterTruth truths[GPU_PROGRAM_MAX_STEPS];
	double		stack[GPU_PROGRAM_MAX_KEY_STEPS];
	bool		nulls[GPU_PROGRAM_MAX_KEY_STEPS];

	__device__ void init(const GpuRowProgram *p)
	{
		for (int i = 0; i < p->nregisters; i++)
			regs[i] = p->registers[i];
	}
};

/*
 * A key program that is a sum of terms (GpuRowProgram's terms): its value
 * over the row, computed as its steps would compute it, operation by
 * operation in the same order, without their stack.  False where a column
 * is NULL or a result is infinite, NaN or, of a product of non-zero
 * operands, zero (key_step_suspect): the steps then settle the row, raising or not as
 * PostgreSQL would.
 */
template <typename Row>
static __device__ bool
sum_of_terms(const GpuRowProgram *p, const Row &row, double *value)
{
	double		sum = 0;
	int			suspect = 0;

	for (int t = 0; t < p->nterms; t++)
	{
		const GpuKeyTerm *term = &p->terms[t];
		const GpuKeyStep *ks = &p->key_steps[term->column_step];
		bool		isnull;
		const void *v = row.value(ks->column, &isnull);
		double		x;

		if (isnull)
			return false;
		x = key_step_column_value(&ks->step, v);
		if (term->multiply != 0)
		{
			KeyStepKind kind = (KeyStepKind) term->multiply;

			double		l = term->constant_first ? term->constant : x;
			double		r = term->constant_first ? x : term->constant;

			x = key_step_value(kind, l, r);
			suspect |= key_step_suspect(kind, l, r, x);
		}
		if (t == 0)
			sum = x;
		else
		{
			double		before = sum;

			sum = key_step_value((KeyStepKind) term->combine, before, x);
			suspect |= key_step_suspect((KeyStepKind) term->combine, before, x, sum);
		}
	}
	*value = sum;
	return !suspect;
}

/* What a program's vector key computes a row's key with. */
static __device__ VectorKeySpec
program_vector_spec(const GpuRowProgram *p)
{
	const GpuVectorKey *vk = &p->vector;
	VectorKeySpec spec = {(VectorDistanceKind) vk->kind, (VectorElement) vk->element,
	vk->dims, vk->query, vk->query_norm, vk->steps, vk->nsteps, p->desc};

	return spec;
}

/* Whether the filter (if any) accepts the row. */
template <typename Row>
static __device__ bool
program_row_passes(const GpuRowProgram *p, const Row &row, ProgramState *s)
{
	if (p->nsteps == 0)
		return true;
	for (int i = 0; i < p->nloads; i++)
	{
		const GpuLoad *load = &p->loads[i];
		FilterRegister *reg = &s->regs[load->reg];
		const void *v = row.value(load->column, &reg->isnull);

		if (!reg->isnull && load->value_needed)
			reg->value = filter_value_key((FilterValueKind) load->column.kind, v,
										  load->to_float8);
	}
	return filter_steps_run(p->steps, p->nsteps, s->regs, p->sets, s->truths);
}

/* The row's key, or false when the filter rejects the row. */
template <typename Row>
static __device__ bool
program_row_key(const GpuRowProgram *p, const Row &row, ProgramState *s, uint64_t *key)
{
	bool		isnull;
	const void *v;

	if (!program_row_passes(p, row, s))
		return false;
	if (p->key_is_vector)
	{
		const GpuVectorKey *vk = &p->vector;
		VectorKeySpec spec = program_vector_spec(p);

		v = row.value(vk->column, &isnull);
		*key = isnull || vk->query_null ? key_null(KEY_FLOAT8, p->nulls_first) :
			vector_stored_key(&spec, (const unsigned char *) v, s->stack, s->nulls);
		return true;
	}
	if (!p->key_is_program)
	{
		v = row.value(p->key_column, &isnull);
		*key = isnull ? key_null((KeyType) p->key_type, p->nulls_first) :
			key_of_stored((KeyType) p->key_type, v, p->desc);
		return true;
	}
	{
		int			top = 0;
		double		sum;

		if (p->nterms > 0 && sum_of_terms(p, row, &sum))
		{
			*key = key_from_float8(sum, p->desc);
			return true;
		}
		for (int i = 0; i < p->nkey_steps; i++)
		{
			const GpuKeyStep *ks = &p->key_steps[i];

			if (!key_step_is_column(&ks->step))
			{
				/* where PostgreSQL raises, the row is a candidate (key_steps.h) */
				if (!key_step_apply(&ks->step, s->stack, s->nulls, &top))
				{
					*key = KEY_PROGRAM_ERROR_KEY;
					return true;
				}
				continue;
			}
			v = row.value(ks->column, &s->nulls[top]);
			s->stack[top] = s->nulls[top] ? 0 : key_step_column_value(&ks->step, v);
			top++;
		}
		*key = s->nulls[0] ? key_null((KeyType) p->key_type, p->nulls_first) :
			key_from_float8(s->stack[0], p->desc);
		return true;
	}
}

#endif							/* GPU_PROGRAM_CUH */
