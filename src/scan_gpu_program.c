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
 * gathered into one array that travels with the program.
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
describe_key(const GpuProgramSource *source, GpuRowProgram *p)
{
	const KeyStep *steps;
	int			nsteps;

	p->key_type = source->key_type;
	p->desc = source->desc;
	p->nulls_first = source->nulls_first;
	p->key_is_program = source->key_attno == 0;
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
