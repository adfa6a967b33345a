/*-------------------------------------------------------------------------
 *
 * colindex_page_eval.c
 *	  GpuTopK over a column index on the CPU: a page's entries evaluated a
 *	  column at a time.
 *
 * A page is one batch of entries, slot by slot.  The key, a column's or
 * the key program's (key_steps.h), is computed one step at a time over
 * every slot: a step is a loop over arrays (a value per slot a level); a
 * slot not in use is computed too, on whatever its arrays hold.  The
 * candidates are the entries read (in use, and not marked dead where those
 * are skipped) whose keys can still enter the round's top-k.  Once the
 * round's cut is at NULL's key and that key is above every value's (NULLS
 * FIRST, a key type where no value shares it), only entries with a NULL
 * key can enter: the candidates are then found from the null bitmaps
 * alone, and no value is read.
 *
 * Before that, a page's summary (kernels/page_bounds.h) may show that
 * none of its entries passes the filter, or that none has a key the round
 * can still take: the page is then skipped unread.
 *
 * A vector key (a bound on a pgvector distance, scan_vector_key.c) is
 * computed entry by entry, for the entries read only: each is a loop over
 * the vector's elements (vector_bounds.h, as the GPU's kernel computes it).
 *
 * The compiled WHERE clauses (filter_steps.h) then run over the
 * candidates only, a step at a time in the same way: over arrays of the
 * candidates' values gathered from the page when they are few, else over
 * every slot.
 *
 * Each element of a loop is computed by the same functions as the per-row
 * interpreters of the heap scan and the GPU kernel (kernels/gpu_index.cu),
 * so every device gives an entry the same truth value and key; only the
 * order of the work differs.  The interpreter's dispatch happens once per
 * page instead of once per entry, and the loops are short and regular
 * enough for the compiler to unroll or vectorize.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/pg_bitutils.h"
#include "port/pg_bswap.h"

#include "colindex_page_eval.h"
#include "key_batch.h"
#include "page_bounds.h"

/* bytes between prefetches: a cache line on x86-64 and most of arm64 */
#define PREFETCH_STRIDE 64

/* the filter runs over every slot when more than 1/this of them are candidates */
#define GATHER_FRACTION 4

/* a register's values over a page: a key and a null flag per slot */
typedef struct RegisterVector
{
	uint64	   *values;
	bool	   *isnull;
} RegisterVector;

/* a column the filter reads into a register */
typedef struct ColumnLoad
{
	int			column;			/* of the index */
	FilterValueKind kind;
	bool		to_float8;
	bool		value_needed;	/* or only whether it is NULL */
	int			reg;
} ColumnLoad;

/* bytes of a page from offset */
typedef struct PageRange
{
	int			offset;
	int			length;
} PageRange;

struct IndexPageEval
{
	const ColIndexLayout *layout;
	int			stride;			/* slots of an array: the page's, rounded up to 8 */
	bool		skip_killed;
	/* the filter, if nsteps > 0 */
	int			nloads;
	ColumnLoad *loads;
	int			nsteps;
	const FilterStep *steps;
	const FilterValueSet *sets;
	RegisterVector *registers;
	uint8	   *truths;			/* a stack of results, a truth value per slot each */
	int			nregisters;
	const FilterRegister *constants;	/* the registers as bound: run constants' values */
	ValueRange *register_ranges;	/* over a page's summary */
	uint8	   *truth_sets;		/* a stack of those of page_bounds.h */
	/* the key: an index column's, or a program's (scan_key_program.c) */
	KeyType		key_type;
	bool		desc;
	uint64		null_key;
	bool		null_key_on_top;	/* above every value's key */
	int			key_column;		/* or -1 */
	int			nkey_steps;
	const KeyStep *key_steps;
	int		   *key_step_columns;	/* the index column of each column step */
	KeyBatch   *key_batch;		/* the program over a page's slots */
	uint8	   *key_nulls;		/* a bitmap of the slots where it reads a NULL */
	KeyRange   *key_ranges;		/* the program's stack over a page's summary */
	/* or a vector key's: its index column, or -1, and what keys it */
	int			vector_column;
	const VectorKeySpec *vector_spec;
	bool		vector_query_null;
	double	   *vector_stack;	/* its steps' stack and NULL flags */
	bool	   *vector_nulls;
	uint8	   *keep;			/* the entries kept */
	bool		key_may_raise;	/* the key program's steps, on some values */
	/* the parts of a page read: bitmaps first, then the columns' values */
	int			nbitmap_ranges;
	PageRange	bitmap_ranges[2 + 2 * INDEX_MAX_KEYS];
	int			nvalue_ranges;
	PageRange	value_ranges[2 * INDEX_MAX_KEYS];
};

/* The index column that holds the table's column attno. */
static int
index_column(const ColIndexLayout *layout, const AttrNumber *attnos, AttrNumber attno)
{
	int			i = colindex_column_of(layout, attnos, attno);

	if (i < 0)
		elog(ERROR, "column %d is not in the column index", attno);
	return i;
}

static void
add_range(PageRange *ranges, int *n, int offset, int length)
{
	ranges[*n].offset = offset;
	ranges[(*n)++].length = length;
}

/* An index column's null bitmap and values among the parts of a page read. */
static void
add_column_ranges(IndexPageEval *eval, int column)
{
	const ColIndexLayout *layout = eval->layout;

	Assert(eval->nvalue_ranges < lengthof(eval->value_ranges));
	add_range(eval->bitmap_ranges, &eval->nbitmap_ranges,
			  layout->null_offsets[column], (layout->capacity + 7) / 8);
	add_range(eval->value_ranges, &eval->nvalue_ranges,
			  layout->value_offsets[column], layout->capacity * layout->widths[column]);
}

static void
prepare_filter(IndexPageEval *eval, FilterProgram *filter, const AttrNumber *attnos)
{
	const ColIndexLayout *layout = eval->layout;
	FilterProgramParts parts;

	scan_filter_program_parts(filter, &parts);
	eval->nloads = parts.nloads;
	eval->loads = palloc(sizeof(ColumnLoad) * Max(parts.nloads, 1));
	for (int i = 0; i < parts.nloads; i++)
	{
		ColumnLoad *load = &eval->loads[i];

		load->column = index_column(layout, attnos, parts.loads[i].attno);
		load->kind = scan_filter_value_kind(layout->types[load->column]);
		load->to_float8 = parts.loads[i].to_float8;
		load->value_needed = parts.loads[i].value_needed;
		load->reg = parts.loads[i].reg;
		add_column_ranges(eval, load->column);
	}
	eval->nsteps = parts.nsteps;
	eval->steps = parts.steps;
	eval->sets = parts.sets;
	eval->registers = palloc(sizeof(RegisterVector) * Max(parts.nregisters, 1));
	for (int r = 0; r < parts.nregisters; r++)
	{
		RegisterVector *reg = &eval->registers[r];

		/* a run constant's value in every slot; a column's is loaded for each page */
		reg->values = palloc(sizeof(uint64) * eval->stride);
		reg->isnull = palloc(sizeof(bool) * eval->stride);
		for (int j = 0; j < eval->stride; j++)
		{
			reg->values[j] = parts.registers[r].value;
			reg->isnull[j] = parts.registers[r].isnull;
		}
	}
	eval->truths = palloc((Size) eval->stride * Max(parts.nsteps, 1));
	eval->nregisters = parts.nregisters;
	eval->constants = parts.registers;
	eval->register_ranges = palloc(sizeof(ValueRange) * Max(parts.nregisters, 1));
	eval->truth_sets = palloc(Max(parts.nsteps, 1));
}

static void
prepare_key(IndexPageEval *eval, const IndexSelectSpec *spec, const AttrNumber *attnos)
{
	const ColIndexLayout *layout = eval->layout;

	eval->key_type = spec->key_type;
	eval->desc = spec->desc;
	eval->null_key = key_null(spec->key_type, spec->nulls_first);
	/* a row whose program raises shares the top key with NULL (key_steps.h) */
	eval->null_key_on_top = spec->nulls_first && key_null_is_exact(spec->key_type) &&
		!(spec->key_program && scan_key_program_may_raise(spec->key_program));
	eval->key_column = -1;
	eval->vector_column = -1;
	if (spec->vector_key)
	{
		eval->vector_column = index_column(layout, attnos,
										   scan_vector_key_column(spec->vector_key));
		eval->vector_spec = scan_vector_key_spec(spec->vector_key);
		eval->vector_query_null = scan_vector_key_query_null(spec->vector_key);
		eval->vector_stack = palloc(sizeof(double) * Max(eval->vector_spec->nsteps, 1));
		eval->vector_nulls = palloc(sizeof(bool) * Max(eval->vector_spec->nsteps, 1));
		eval->null_key_on_top = false;
		add_column_ranges(eval, eval->vector_column);
		return;
	}
	if (spec->key_attno > 0)
	{
		eval->key_column = index_column(layout, attnos, spec->key_attno);
		add_column_ranges(eval, eval->key_column);
		return;
	}
	Assert(spec->key_type == KEY_FLOAT8);
	eval->key_steps = scan_key_program_steps(spec->key_program, &eval->nkey_steps);
	eval->key_step_columns = palloc(sizeof(int) * eval->nkey_steps);
	for (int i = 0; i < eval->nkey_steps; i++)
		if (key_step_is_column(&eval->key_steps[i]))
		{
			eval->key_step_columns[i] = index_column(layout, attnos,
													 eval->key_steps[i].column);
			add_column_ranges(eval, eval->key_step_columns[i]);
		}
	eval->key_batch = key_batch_create(eval->key_steps, eval->nkey_steps, layout->capacity);
	eval->key_may_raise = scan_key_program_may_raise(spec->key_program);
	eval->key_ranges = palloc(sizeof(KeyRange) * eval->nkey_steps);
}

IndexPageEval *
colindex_page_eval_create(const IndexSelectSpec *spec, const ColIndexLayout *layout,
						  const AttrNumber *attnos, bool skip_killed)
{
	IndexPageEval *eval = palloc0(sizeof(IndexPageEval));

	eval->layout = layout;
	eval->stride = TYPEALIGN(8, layout->capacity);
	eval->skip_killed = skip_killed;
	/* read 64 slots at a time */
	eval->keep = palloc(TYPEALIGN(64, layout->capacity));
	eval->key_nulls = palloc(TYPEALIGN(64, layout->capacity) / 8);
	add_range(eval->bitmap_ranges, &eval->nbitmap_ranges,
			  layout->live_offset, (layout->capacity + 7) / 8);
	add_range(eval->bitmap_ranges, &eval->nbitmap_ranges,
			  layout->killed_offset, (layout->capacity + 7) / 8);
	if (spec->filter)
		prepare_filter(eval, spec->filter, attnos);
	prepare_key(eval, spec, attnos);
	return eval;
}

/* Whether, with the round's cut at floor, only entries with a NULL key can enter. */
static inline bool
only_nulls_enter(const IndexPageEval *eval, uint64 floor)
{
	return eval->null_key_on_top && floor == eval->null_key;
}

/*
 * The ranges of a page brought into the CPU's second-level cache (a
 * locality hint of 2): brought into the first, a page's hundred-odd lines
 * took the slots its loads need, and the weighted sum of 8 over 3M entries
 * took 50-51 ms in one process instead of 43-46 (2 cores, A/B).
 */
static inline void
prefetch_ranges(Page page, const PageRange *ranges, int n)
{
#ifdef __GNUC__
	for (int i = 0; i < n; i++)
		for (int at = 0; at < ranges[i].length; at += PREFETCH_STRIDE)
			__builtin_prefetch((const char *) page + ranges[i].offset + at, 0, 2);
#endif
}

/* The largest key an entry of a page with this summary can have. */
static uint64
page_key_bound(IndexPageEval *eval, const char *summary)
{
	ValueRange	range;
	int			top = 0;

	/* a vector column's summary holds no values */
	if (eval->vector_column >= 0)
		return PG_UINT64_MAX;
	if (eval->key_column >= 0)
	{
		range = page_summary_range(summary, eval->key_column);
		return key_column_bound(eval->key_type, &range, eval->desc, eval->null_key);
	}
	for (int i = 0; i < eval->nkey_steps; i++)
	{
		const KeyStep *step = &eval->key_steps[i];

		if (!key_step_is_column(step))
		{
			if (!key_range_apply(step, eval->key_ranges, &top))
				return KEY_PROGRAM_ERROR_KEY;
			continue;
		}
		range = page_summary_range(summary, eval->key_step_columns[i]);
		eval->key_ranges[top++] = key_range_of_column(step, &range);
	}
	return key_range_bound(&eval->key_ranges[0], eval->desc, eval->null_key);
}

/*
 * What a data page's summary says (page_bounds.h): false where none of its
 * entries passes the filter, else true and the largest key one can have in
 * *bound.  A page without a summary may hold any key.
 */
bool
colindex_page_eval_bound(IndexPageEval *eval, Page page, uint64 *bound)
{
	const char *summary = (const char *) page + eval->layout->summary_offset;

	*bound = PG_UINT64_MAX;
	if (eval->layout->summary_offset == 0)
		return true;
	if (eval->nsteps > 0)
	{
		for (int r = 0; r < eval->nregisters; r++)
		{
			ValueRange *range = &eval->register_ranges[r];

			range->lo = range->hi = eval->constants[r].value;
			range->may_null = eval->constants[r].isnull;
			range->may_value = !eval->constants[r].isnull;
		}
		for (int i = 0; i < eval->nloads; i++)
		{
			ValueRange	range = page_summary_range(summary, eval->loads[i].column);

			eval->register_ranges[eval->loads[i].reg] =
				eval->loads[i].to_float8 ? range_to_float8(range) : range;
		}
		if (!filter_range_may_pass(eval->steps, eval->nsteps, eval->register_ranges,
								   eval->sets, eval->truth_sets))
			return false;
	}
	*bound = page_key_bound(eval, summary);
	return true;
}

/* Whether a data page's summary shows that no entry of it passes, or has a key of at least floor. */
bool
colindex_page_eval_skips(IndexPageEval *eval, Page page, uint64 floor)
{
	uint64		bound;

	return !colindex_page_eval_bound(eval, page, &bound) || bound < floor;
}

/*
 * Start bringing the parts of a page that colindex_page_eval reads with the
 * round's cut at floor into the CPU's cache: called for a page ahead while
 * this one is evaluated, it hides the memory's latency (the cut only
 * rises).  The page need not be locked, as nothing is read.
 */
void
colindex_page_eval_prefetch(const IndexPageEval *eval, Page page, uint64 floor)
{
	prefetch_ranges(page, eval->bitmap_ranges, eval->nbitmap_ranges);
	if (!only_nulls_enter(eval, floor))
		prefetch_ranges(page, eval->value_ranges, eval->nvalue_ranges);
}

/*
 * Of a bitmap, the 64 bits of the slots from first (a multiple of 64), bit
 * i for slot first + i.  The 8 bytes may reach past the bitmap's end: in a
 * page every bitmap is followed by other parts of the page, and the
 * arrays of an IndexPageEval have room for them.
 */
static inline uint64
bitmap_word(const uint8 *bitmap, int first)
{
	uint64		word;

	memcpy(&word, bitmap + first / 8, sizeof(word));
#ifdef WORDS_BIGENDIAN
	word = pg_bswap64(word);
#endif
	return word;
}

/* Of the 64 slots from first (a multiple of 64) and below high, those read. */
static inline uint64
readable_word(const IndexPageEval *eval, Page page, int first, int high)
{
	uint64		bits = bitmap_word((const uint8 *) page + eval->layout->live_offset, first);

	if (eval->skip_killed)
		bits &= ~bitmap_word((const uint8 *) page + eval->layout->killed_offset, first);
	if (high - first < 64)
		bits &= (UINT64CONST(1) << (high - first)) - 1;
	return bits;
}

/* A null bitmap at offset in the page as flags, for the first n slots rounded up to 8. */
static void
null_flags(Page page, int offset, int n, bool *flags)
{
	const uint8 *bits = (const uint8 *) page + offset;

	for (int first = 0; first < n; first += 8)
	{
		/* byte i of the copies keeps bit i; adding 0x7f to it carries any into its top bit */
		uint64		spread = ((uint64) bits[first / 8] * UINT64CONST(0x0101010101010101)) &
			UINT64CONST(0x8040201008040201);

		spread = ((spread + UINT64CONST(0x7f7f7f7f7f7f7f7f)) >> 7) &
			UINT64CONST(0x0101010101010101);
		memcpy(flags + first, &spread, sizeof(spread));
	}
}

/* A column's values as keys into a register, of a kind (and width) the compiler knows. */
static pg_attribute_always_inline void
load_values(uint64 *keys, const char *values, int width, FilterValueKind kind,
			bool to_float8, int n)
{
	for (int j = 0; j < n; j++)
		keys[j] = filter_value_key(kind, values + j * width, to_float8);
}

static void
load_column(IndexPageEval *eval, const ColumnLoad *load, Page page, int n)
{
	const ColIndexLayout *layout = eval->layout;
	RegisterVector *reg = &eval->registers[load->reg];
	const char *values = (const char *) page + layout->value_offsets[load->column];

	null_flags(page, layout->null_offsets[load->column], n, reg->isnull);
	if (!load->value_needed)
		return;
	switch (load->kind)
	{
		case VALUE_INT2:
			if (load->to_float8)
				load_values(reg->values, values, sizeof(int16), VALUE_INT2, true, n);
			else
				load_values(reg->values, values, sizeof(int16), VALUE_INT2, false, n);
			break;
		case VALUE_INT4:
			if (load->to_float8)
				load_values(reg->values, values, sizeof(int32), VALUE_INT4, true, n);
			else
				load_values(reg->values, values, sizeof(int32), VALUE_INT4, false, n);
			break;
		case VALUE_INT8:
			if (load->to_float8)
				load_values(reg->values, values, sizeof(int64), VALUE_INT8, true, n);
			else
				load_values(reg->values, values, sizeof(int64), VALUE_INT8, false, n);
			break;
		case VALUE_FLOAT4:
			load_values(reg->values, values, sizeof(float4), VALUE_FLOAT4, false, n);
			break;
		case VALUE_FLOAT8:
			load_values(reg->values, values, sizeof(float8), VALUE_FLOAT8, false, n);
			break;
		case VALUE_BOOL:
			load_values(reg->values, values, sizeof(bool), VALUE_BOOL, false, n);
			break;
		case VALUE_TEXT:
			/* an index entry holds a text value's dictionary code (VALUE_INT4) */
			pg_unreachable();
	}
}

/* A column's values and null flags of the n candidates in slots into its register. */
static void
gather_column(IndexPageEval *eval, const ColumnLoad *load, Page page, const uint16 *slots, int n)
{
	const ColIndexLayout *layout = eval->layout;
	RegisterVector *reg = &eval->registers[load->reg];
	const char *values = (const char *) page + layout->value_offsets[load->column];
	const char *nulls = (const char *) page + layout->null_offsets[load->column];
	int			width = layout->widths[load->column];

	for (int i = 0; i < n; i++)
		reg->isnull[i] = COLINDEX_BIT(nulls, slots[i]) != 0;
	if (load->value_needed)
		for (int i = 0; i < n; i++)
			reg->values[i] = filter_value_key(load->kind, values + slots[i] * width,
											  load->to_float8);
}

/* A comparison of two registers in every slot, of a kind the compiler knows. */
static pg_attribute_always_inline void
compare_values(uint8 *out, const RegisterVector *l, const RegisterVector *r,
			   FilterComparison cmp, int n)
{
	const uint64 *lvalues = l->values;
	const bool *lnull = l->isnull;
	const uint64 *rvalues = r->values;
	const bool *rnull = r->isnull;

	for (int j = 0; j < n; j++)
	{
		FilterRegister a = {lvalues[j], lnull[j]};
		FilterRegister b = {rvalues[j], rnull[j]};

		out[j] = filter_compare(&a, &b, cmp);
	}
}

static void
compare_registers(uint8 *out, const RegisterVector *l, const RegisterVector *r,
				  FilterComparison cmp, int n)
{
	switch (cmp)
	{
		case CMP_LT:
			compare_values(out, l, r, CMP_LT, n);
			break;
		case CMP_LE:
			compare_values(out, l, r, CMP_LE, n);
			break;
		case CMP_EQ:
			compare_values(out, l, r, CMP_EQ, n);
			break;
		case CMP_GE:
			compare_values(out, l, r, CMP_GE, n);
			break;
		case CMP_GT:
			compare_values(out, l, r, CMP_GT, n);
			break;
		case CMP_NE:
			compare_values(out, l, r, CMP_NE, n);
			break;
	}
}

/*
 * Run the filter's steps over the n candidates in slots, or (slots NULL)
 * over the first n slots: their truth values, in the same order.
 */
static const uint8 *
filter_slots(IndexPageEval *eval, Page page, const uint16 *slots, int n)
{
	int			stride = eval->stride;
	int			top = 0;

	for (int i = 0; i < eval->nloads; i++)
		if (slots)
			gather_column(eval, &eval->loads[i], page, slots, n);
		else
			load_column(eval, &eval->loads[i], page, n);
	for (int i = 0; i < eval->nsteps; i++)
	{
		const FilterStep *step = &eval->steps[i];
		uint8	   *out = eval->truths + (Size) top * stride;
		uint8	   *last = out - stride;
		const uint64 *values = NULL;
		const bool *isnull = NULL;
		const FilterValueSet *set = &eval->sets[step->right];
		int			arg = step->arg;

		if (step->kind == STEP_IN || step->kind == STEP_IS_NULL || step->kind == STEP_TRUTH)
		{
			values = eval->registers[step->left].values;
			isnull = eval->registers[step->left].isnull;
		}
		switch ((FilterStepKind) step->kind)
		{
			case STEP_COMPARE:
				compare_registers(out, &eval->registers[step->left],
								  &eval->registers[step->right],
								  (FilterComparison) step->arg, n);
				top++;
				break;
			case STEP_IN:
				for (int j = 0; j < n; j++)
				{
					FilterRegister x = {values[j], isnull[j]};

					out[j] = filter_in_set(&x, set, arg != 0);
				}
				top++;
				break;
			case STEP_IS_NULL:
				for (int j = 0; j < n; j++)
					out[j] = isnull[j] != (arg != 0) ? TRUTH_TRUE : TRUTH_FALSE;
				top++;
				break;
			case STEP_TRUTH:
				for (int j = 0; j < n; j++)
					out[j] = isnull[j] ? TRUTH_NULL : (values[j] ? TRUTH_TRUE : TRUTH_FALSE);
				top++;
				break;
			case STEP_BOOL_TEST:
				for (int j = 0; j < n; j++)
					last[j] = filter_bool_test((FilterTruth) last[j], (FilterBoolTest) arg);
				break;
			case STEP_NOT:
				for (int j = 0; j < n; j++)
					last[j] = last[j] == TRUTH_NULL ? TRUTH_NULL :
						(last[j] == TRUTH_TRUE ? TRUTH_FALSE : TRUTH_TRUE);
				break;
			case STEP_AND:
			case STEP_OR:
				{
					FilterTruth deciding = step->kind == STEP_AND ? TRUTH_FALSE : TRUTH_TRUE;

					top -= arg;
					out = eval->truths + (Size) top * stride;
					for (int a = 1; a < arg; a++)
					{
						const uint8 *other = out + (Size) a * stride;

						for (int j = 0; j < n; j++)
						{
							FilterTruth pair[2] = {out[j], other[j]};

							out[j] = filter_combine(pair, 2, deciding);
						}
					}
					top++;
				}
				break;
		}
	}
	Assert(top == 1);
	return eval->truths;
}

/*
 * The keys of the first n slots whose bits are set in nulls: NULL's key,
 * kept if at least floor.
 */
static void
null_keys(uint64 *keys, uint8 *keep, const uint8 *nulls, int n, uint64 null_key,
		  uint64 floor)
{
	/* NULLs are rare: the bitmap a word at a time */
	for (int first = 0; first < n; first += 64)
		for (uint64 bits = bitmap_word(nulls, first); bits != 0; bits &= bits - 1)
		{
			int			j = first + pg_rightmost_one_pos64(bits);

			if (j < n)
			{
				keys[j] = null_key;
				keep[j] = null_key >= floor;
			}
		}
}

/*
 * The keys of n values of a type (and width) the compiler knows, NULLs
 * aside, and whether each is at least floor: a loop for each direction,
 * which the compiler vectorizes.
 */
static pg_attribute_always_inline void
keys_of_values(uint64 *keys, uint8 *keep, const char *values, int width, KeyType type,
			   bool desc, uint64 floor, int n)
{
#define KEYS_LOOP(DESC) \
	for (int j = 0; j < n; j++) \
	{ \
		keys[j] = key_of_stored(type, values + j * width, DESC); \
		keep[j] = keys[j] >= floor; \
	}
	if (desc)
		KEYS_LOOP(true)
	else
		KEYS_LOOP(false)
#undef KEYS_LOOP
}

/* The keys of the first n slots, a column's, and whether each is at least floor. */
static void
column_keys(IndexPageEval *eval, Page page, int n, uint64 floor, uint64 *keys)
{
	const ColIndexLayout *layout = eval->layout;
	const char *values = (const char *) page + layout->value_offsets[eval->key_column];
	const uint8 *nulls = (const uint8 *) page + layout->null_offsets[eval->key_column];
	bool		desc = eval->desc;
	uint64		null_key = eval->null_key;

	switch (eval->key_type)
	{
		case KEY_INT2:
			keys_of_values(keys, eval->keep, values, sizeof(int16), KEY_INT2, desc, floor, n);
			break;
		case KEY_INT4:
		case KEY_DATE:
			keys_of_values(keys, eval->keep, values, sizeof(int32), KEY_INT4, desc, floor, n);
			break;
		case KEY_FLOAT4:
			keys_of_values(keys, eval->keep, values, sizeof(float4), KEY_FLOAT4, desc, floor, n);
			break;
		case KEY_FLOAT8:
			keys_of_values(keys, eval->keep, values, sizeof(float8), KEY_FLOAT8, desc, floor, n);
			break;
		case KEY_INT8:
		case KEY_TIMESTAMP:
		case KEY_TIMESTAMPTZ:
			keys_of_values(keys, eval->keep, values, sizeof(int64), KEY_INT8, desc, floor, n);
			break;
	}
	null_keys(keys, eval->keep, nulls, n, null_key, floor);
}

/* The key program's NULLs over the first n slots: any of its columns' (into key_nulls). */
static void
program_key_nulls(IndexPageEval *eval, Page page, int n)
{
	int			nbytes = TYPEALIGN(64, n) / 8;

	memset(eval->key_nulls, 0, nbytes);
	for (int i = 0; i < eval->nkey_steps; i++)
		if (key_step_is_column(&eval->key_steps[i]))
		{
			const uint8 *nulls = (const uint8 *) page +
				eval->layout->null_offsets[eval->key_step_columns[i]];

			for (int b = 0; b < nbytes; b += sizeof(uint64))
			{
				uint64		ours;
				uint64		theirs;

				memcpy(&ours, eval->key_nulls + b, sizeof(ours));
				memcpy(&theirs, nulls + b, sizeof(theirs));
				ours |= theirs;
				memcpy(eval->key_nulls + b, &ours, sizeof(ours));
			}
		}
}

/* a page whose entries a key program's column steps read (push_column) */
typedef struct PageColumns
{
	IndexPageEval *eval;
	Page		page;
} PageColumns;

/* Whether any of the first n bits of a null bitmap at offset in the page is set. */
static bool
any_null(Page page, int offset, int n)
{
	const uint8 *bits = (const uint8 *) page + offset;
	uint8		any = 0;

	for (int i = 0; i < n / 8; i++)
		any |= bits[i];
	if (n % 8 != 0)
		any |= bits[n / 8] & ((1 << (n % 8)) - 1);
	return any != 0;
}

/*
 * A column step's values as doubles (a float4 column's where they lie),
 * and a NULL flag per slot where any is NULL; whether any is (a
 * KeyBatchColumn).
 */
static bool
push_column(void *arg, int step, double *out, const float **floats, uint8 *nulls, int n)
{
	PageColumns *source = arg;
	IndexPageEval *eval = source->eval;
	int			column = eval->key_step_columns[step];
	const char *values = (const char *) source->page + eval->layout->value_offsets[column];
	int			width = eval->layout->widths[column];

	/* a loop of each kind, which the compiler vectorizes */
	switch ((KeyStepKind) eval->key_steps[step].kind)
	{
		case KEY_STEP_INT2_COLUMN:
			for (int j = 0; j < n; j++)
				out[j] = ((const int16 *) values)[j];
			break;
		case KEY_STEP_INT4_COLUMN:
			for (int j = 0; j < n; j++)
				out[j] = ((const int32 *) values)[j];
			break;
		case KEY_STEP_FLOAT4_COLUMN:
			*floats = (const float *) values;
			break;
		default:
			for (int j = 0; j < n; j++)
				out[j] = key_step_column_value(&eval->key_steps[step],
											   values + (Size) j * width);
			break;
	}
	if (!any_null(source->page, eval->layout->null_offsets[column], n))
		return false;
	null_flags(source->page, eval->layout->null_offsets[column], n, (bool *) nulls);
	return true;
}

/*
 * The key program's keys, and whether each is at least floor: its steps,
 * each over every slot (key_batch.c), checked where the page's entries may
 * raise.  A slot where a step raises gets KEY_PROGRAM_ERROR_KEY, unless a
 * column it reads is NULL.
 */
static void
program_keys(IndexPageEval *eval, Page page, int n, uint64 floor, bool checked, uint64 *keys)
{
	PageColumns source = {eval, page};
	uint8	   *keep = eval->keep;
	const double *values;
	const uint8 *nulls;
	const uint8 *errors;

	program_key_nulls(eval, page, n);
	key_batch_run(eval->key_batch, n, checked, push_column, &source, &values, &nulls, &errors);
	keys_of_values(keys, keep, (const char *) values, sizeof(float8), KEY_FLOAT8, eval->desc,
				   floor, n);
	null_keys(keys, keep, eval->key_nulls, n, eval->null_key, floor);
	/* PostgreSQL raises for the row whatever is NULL elsewhere in it */
	if (checked)
		for (int j = 0; j < n; j++)
			if (errors[j])
			{
				keys[j] = KEY_PROGRAM_ERROR_KEY;
				keep[j] = true;
			}
}

/*
 * A vector key's keys of the first n slots, and whether each is at least
 * floor: the distance's bound (vector_bounds.h) of the slots read only,
 * their values being long.
 */
static void
vector_keys(IndexPageEval *eval, Page page, int n, uint64 floor, uint64 *keys)
{
	const ColIndexLayout *layout = eval->layout;
	int			column = eval->vector_column;
	const uint8 *nulls = (const uint8 *) page + layout->null_offsets[column];

	memset(eval->keep, 0, n);
	for (int first = 0; first < n; first += 64)
		for (uint64 bits = readable_word(eval, page, first, n); bits != 0; bits &= bits - 1)
		{
			int			j = first + pg_rightmost_one_pos64(bits);

			if (COLINDEX_BIT(nulls, j) || eval->vector_query_null)
				keys[j] = eval->null_key;
			else
				keys[j] = vector_data_key(eval->vector_spec,
										  (const unsigned char *)
										  colindex_slot_value_pointer(layout, page, column, j) +
										  VARHDRSZ,
										  eval->vector_stack, eval->vector_nulls);
			eval->keep[j] = keys[j] >= floor;
		}
}

/* Whether any of 64 flags is set. */
static inline bool
any_kept(const uint8 *keep)
{
	uint64		any = 0;

	for (int i = 0; i < 64; i += sizeof(uint64))
	{
		uint64		word;

		memcpy(&word, keep + i, sizeof(word));
		any |= word;
	}
	return any != 0;
}

/*
 * The candidates of the first high slots whose bits are set in bits (a
 * bitmap of the page's slots, or NULL: all), into slots[] with the key
 * given for each in keys[] (or, with one_key, that key); returns how many,
 * and adds the entries read to *scanned.
 */
static int
readable_candidates(const IndexPageEval *eval, Page page, int high, const uint8 *bits,
					const uint8 *keep, uint64 *keys, uint16 *slots, uint64 *scanned)
{
	int			n = 0;

	for (int first = 0; first < high; first += 64)
	{
		uint64		readable = readable_word(eval, page, first, high);

		*scanned += pg_popcount64(readable);
		if (bits)
			readable &= bitmap_word(bits, first);
		else if (!any_kept(keep + first))
			continue;
		for (; readable != 0; readable &= readable - 1)
		{
			int			j = first + pg_rightmost_one_pos64(readable);

			if (bits || keep[j])
			{
				keys[n] = bits ? eval->null_key : keys[j];
				slots[n++] = j;
			}
		}
	}
	return n;
}

/* The candidates when only NULL keys can enter: from the key's null bitmaps. */
static int
null_candidates(IndexPageEval *eval, Page page, int high, uint64 *keys, uint16 *slots,
				uint64 *scanned)
{
	const uint8 *nulls = eval->key_nulls;

	if (eval->key_column >= 0)
		nulls = (const uint8 *) page + eval->layout->null_offsets[eval->key_column];
	else
		program_key_nulls(eval, page, high);
	return readable_candidates(eval, page, high, nulls, NULL, keys, slots, scanned);
}

/*
 * The candidates whose keys are at least floor: every slot's key computed,
 * the program's checked unless the page's bound shows that none raises.
 */
static int
key_candidates(IndexPageEval *eval, Page page, int high, uint64 floor, uint64 bound,
			   uint64 *keys, uint16 *slots, uint64 *scanned)
{
	uint8	   *keep = eval->keep;

	if (eval->vector_column >= 0)
		vector_keys(eval, page, high, floor, keys);
	else if (eval->key_column >= 0)
		column_keys(eval, page, high, floor, keys);
	else
		program_keys(eval, page, high, floor,
					 eval->key_may_raise && bound == KEY_PROGRAM_ERROR_KEY, keys);
	memset(keep + high, 0, TYPEALIGN(64, high) - high);
	return readable_candidates(eval, page, high, NULL, keep, keys, slots, scanned);
}

/* Of the n candidates, those that pass the filter, kept in order; returns how many. */
static int
filter_candidates(IndexPageEval *eval, Page page, int high, uint64 *keys, uint16 *slots,
				  int n)
{
	bool		gathered = n * GATHER_FRACTION <= high;
	const uint8 *truths = gathered ? filter_slots(eval, page, slots, n) :
		filter_slots(eval, page, NULL, high);
	int			kept = 0;

	for (int i = 0; i < n; i++)
		if (truths[gathered ? i : slots[i]] == TRUTH_TRUE)
		{
			keys[kept] = keys[i];
			slots[kept++] = slots[i];
		}
	return kept;
}

/*
 * The keys of a data page's entries that are read, pass the filter and are
 * at least floor, with their slots, in slot order (keys has room for the
 * page's slots); returns how many, and adds the entries read to *scanned.
 * bound is the page's from its summary (colindex_page_eval_bound), or
 * KEY_PROGRAM_ERROR_KEY where not known.
 */
BATCH_VARIANTS int
colindex_page_eval(IndexPageEval *eval, Page page, uint64 floor, uint64 bound, uint64 *keys,
				   uint16 *slots, uint64 *scanned)
{
	int			high = colindex_data_header(page)->high;
	int			n;

	if (only_nulls_enter(eval, floor))
		n = null_candidates(eval, page, high, keys, slots, scanned);
	else
		n = key_candidates(eval, page, high, floor, bound, keys, slots, scanned);
	if (eval->nsteps > 0 && n > 0)
		n = filter_candidates(eval, page, high, keys, slots, n);
	return n;
}
