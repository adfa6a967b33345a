/*-------------------------------------------------------------------------
 *
 * scan_gpu_program.c
 *	  A scan's compiled WHERE clauses and ranking key described for a GPU
 *	  kernel.
 *
 * The filter program's parts (scan_filter_program.c) and the key program's
 * steps (scan_key_program.c) are plain data already: they are copied into
 * a GpuRowProgram, each column they read described by the caller (where
 * an index entry or a heap tuple holds it), and the filter's value sets
 * gathered into one array that travels with the program.  A key program
 * that is a sum of terms, each a column or a column times a constant, is
 * also described as those terms, which the kernels compute without the
 * program's stack (kernels/gpu_program.cuh).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "scan_gpu_program.h"

static bool
describe_filter(const GpuProgramSource *source, GpuRowProgram *p, uint64 **set_values,
				size_t *nset_values)
{
	FilterProgramParts parts;
	size_t		nvalues = 0;

	scan_filter_program_parts(source->filter, &parts);
	if (parts.nloads > GPU_PROGRAM_MAX_LOADS || parts.nregisters > GPU_PROGRAM_MAX_REGISTERS ||
		parts.nsteps > GPU_PROGRAM_MAX_STEPS || parts.nsets > GPU_PROGRAM_MAX_SETS)
		return false;
	p->nloads = parts.nloads;
	for (int i = 0; i < parts.nloads; i++)
	{
		if (!source->column_of(source->arg, parts.loads[i].attno, &p->loads[i].column))
			return false;
		p->loads[i].reg = parts.loads[i].reg;
		p->loads[i].to_float8 = parts.loads[i].to_float8;
		p->loads[i].value_needed = parts.loads[i].value_needed;
	}
	p->nregisters = parts.nregisters;
	memcpy(p->registers, parts.registers, sizeof(FilterRegister) * parts.nregisters);
	p->nsteps = parts.nsteps;
	memcpy(p->steps, parts.steps, sizeof(FilterStep) * parts.nsteps);
	p->nsets = parts.nsets;
	for (int i = 0; i < parts.nsets; i++)
		nvalues += parts.sets[i].nvalues;
	*set_values = palloc(sizeof(uint64) * Max(nvalues, 1));
	for (int i = 0; i < parts.nsets; i++)
	{
		p->sets[i] = parts.sets[i];
		/* an offset into the set values, which the GPU side makes a device pointer */
		p->sets[i].values = (const uint64 *) (uintptr_t) *nset_values;
		memcpy(*set_values + *nset_values, parts.sets[i].values,
			   sizeof(uint64) * parts.sets[i].nvalues);
		*nset_values += parts.sets[i].nvalues;
	}
	return true;
}

static bool
is_multiply(const KeyStep *step)
{
	return step->kind == KEY_STEP_MUL || step->kind == KEY_STEP_MUL4;
}

static bool
is_combine(const KeyStep *step)
{
	return step->kind == KEY_STEP_ADD || step->kind == KEY_STEP_SUB ||
		step->kind == KEY_STEP_ADD4 || step->kind == KEY_STEP_SUB4;
}

/*
 * The term at step i of the program: a column, or a column and a constant
 * with a product; returns the step after it, or -1 where none starts there.
 */
static int
read_term(const GpuRowProgram *p, int i, GpuKeyTerm *term)
{
	const GpuKeyStep *s = p->key_steps;
	int			n = p->nkey_steps;

	memset(term, 0, sizeof(GpuKeyTerm));
	if (i + 2 < n && is_multiply(&s[i + 2].step) &&
		((key_step_is_column(&s[i].step) && s[i + 1].step.kind == KEY_STEP_CONST) ||
		 (s[i].step.kind == KEY_STEP_CONST && key_step_is_column(&s[i + 1].step))))
	{
		term->constant_first = s[i].step.kind == KEY_STEP_CONST;
		term->column_step = term->constant_first ? i + 1 : i;
		term->constant = s[term->constant_first ? i : i + 1].step.value;
		term->multiply = s[i + 2].step.kind;
		return i + 3;
	}
	if (i < n && key_step_is_column(&s[i].step))
	{
		term->column_step = i;
		return i + 1;
	}
	return -1;
}

/* The key program as terms, where it is a sum of them (in postfix: t0 t1 op1 t2 op2 ...). */
static void
describe_terms(GpuRowProgram *p)
{
	int			nterms = 0;
	int			i = read_term(p, 0, &p->terms[0]);

	if (i < 0)
		return;
	nterms++;
	while (i < p->nkey_steps)
	{
		i = read_term(p, i, &p->terms[nterms]);
		if (i < 0 || i >= p->nkey_steps || !is_combine(&p->key_steps[i].step))
			return;
		p->terms[nterms++].combine = p->key_steps[i++].step.kind;
	}
	/* a sum after all: the kernels use its terms */
	p->nterms = nterms;
}

/* A vector key, its query as the run bound it. */
static bool
describe_vector_key(const GpuProgramSource *source, GpuRowProgram *p)
{
	GpuVectorKey *vk = &p->vector;
	const VectorKeySpec *spec = scan_vector_key_spec(source->vector_key);

	if (spec->dims > GPU_PROGRAM_MAX_VECTOR_DIMS || spec->nsteps > GPU_PROGRAM_MAX_KEY_STEPS ||
		!source->vector_column_of(source->arg, scan_vector_key_column(source->vector_key),
								  &vk->column))
		return false;
	p->key_is_vector = true;
	p->key_is_program = false;
	vk->kind = spec->kind;
	vk->element = spec->element;
	vk->query_null = scan_vector_key_query_null(source->vector_key);
	vk->dims = spec->dims;
	vk->query_norm = spec->query_norm;
	vk->nsteps = spec->nsteps;
	memcpy(vk->steps, spec->steps, sizeof(KeyStep) * spec->nsteps);
	if (!vk->query_null)
		memcpy(vk->query, spec->query, sizeof(float) * spec->dims);
	return true;
}

static bool
describe_key(const GpuProgramSource *source, GpuRowProgram *p)
{
	const KeyStep *steps;
	int			nsteps;

	p->key_type = source->key_type;
	p->desc = source->desc;
	p->nulls_first = source->nulls_first;
	p->key_is_program = source->key_attno == 0;
	if (source->vector_key)
		return describe_vector_key(source, p);
	if (!p->key_is_program)
		return source->column_of(source->arg, source->key_attno, &p->key_column);
	if (source->key_program == NULL)
		return false;
	steps = scan_key_program_steps(source->key_program, &nsteps);
	if (nsteps > GPU_PROGRAM_MAX_KEY_STEPS)
		return false;
	p->nkey_steps = nsteps;
	for (int i = 0; i < nsteps; i++)
	{
		p->key_steps[i].step = steps[i];
		if (key_step_is_column(&steps[i]) &&
			!source->column_of(source->arg, steps[i].column, &p->key_steps[i].column))
			return false;
	}
	describe_terms(p);
	return true;
}

bool
scan_gpu_program_describe(const GpuProgramSource *source, GpuRowProgram *program,
						  uint64 **set_values, size_t *nset_values)
{
	memset(program, 0, sizeof(GpuRowProgram));
	*set_values = NULL;
	*nset_values = 0;
	return describe_key(source, program) &&
		(source->filter == NULL || describe_filter(source, program, set_values, nset_values));
}
