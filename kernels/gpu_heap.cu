/*
 * gpu_heap.cu
 *	  Heap pages read in place from shared_buffers, tuples deformed, the
 *	  filter and key run, and the keys that pass pushed to a top-k (see
 *	  gpu_heap.h).
 *
 * pages_kernel takes one page per thread block at a time: the block copies
 * the page from mapped host memory into shared memory in 16-byte words
 * (one pass over the bus, coalesced), then each thread takes a line
 * pointer.  A normal one's tuple is deformed as heap_deform_tuple does it:
 * fixed offsets for the leading fixed-width attributes of a tuple without
 * NULLs, else a walk over the attributes (null bitmap, alignment, varlena
 * headers).  Rows that pass are compacted by a block-wide scan and one
 * atomic add per line-pointer group into arrays of keys and TIDs, which the
 * engine's streamed top-k filters against its running cut.
 *
 * On a page marked decide (not all-visible) each tuple's header is also
 * read against the query's snapshot (tuple_visibility.h): a tuple it
 * settles invisible is skipped, one it does not settle goes to the top-k
 * marked GPU_HEAP_TID_UNDECIDED.  The page is read in place while writers
 * may change its tuples' headers (xmax, hint bits; not the columns, not
 * the line pointers the scan counted), each 16-byte word at its own
 * moment, so a header copied may mix two moments.  After the copy the
 * kernel reads the page's LSN again: where it is still the one the scan
 * read under the page's share lock, no logged change to the page ended in
 * between, and the header rules cannot be misled: a hint bit is set only
 * after the change it speaks of ended (its xmax written, logged and
 * committed), and a change still under way shows the rules either the old
 * header or one without hint bits, which leaves the tuple to the CPU.
 * Where the LSN moved, every tuple of the page goes to the CPU.  A groups
 * job cannot take a row out of its group later, so where a page leaves any
 * tuple undecided, none of its rows is read: its block goes back to the
 * scan (GroupRows).  A copy
 * in the page cache is the page at one LSN and needs no second look; one
 * whose tuples were left undecided is filled again at its next read, as
 * hint bits set since may settle them.
 *
 * With a page cache, each page's slot is chosen on the host before the
 * kernel runs (cache_acquire): a current copy is read from device memory
 * instead of over the bus; a page without one is read over the bus and
 * written into the slot taken for it, which becomes current once the
 * kernel is done (cache_release).  A slot being filled or read is never
 * given to another page, and a page whose copy is being filled by another
 * kernel is read over the bus.  A page the scan did not pin is read from
 * its copy or not at all: the scan reads it itself.
 *
 * The page layout constants are PostgreSQL's (bufpage.h, itemid.h,
 * htup_details.h, varatt.h); the header cannot be included here.
 */
#include <mutex>
#include <unordered_map>
#include <vector>

#include <cub/cub.cuh>

#include "gpu_error.h"
#include "gpu_heap.h"
#include "gpu_groups.cuh"
#include "gpu_program.cuh"
#include "gpu_resources.cuh"

#define PAGE_THREADS 256

/* a batch's counts: rows keyed, tuples read, settled, undecided */
#define HEAP_COUNTS 4

/* why a groups job's page was not read (undecided[p]): it left tuples undecided, */
#define PAGE_LEFT_UNDECIDED 1
/* or it holds a row that the groups cannot (GroupRows::holds) */
#define PAGE_UNHELD 2

/* PostgreSQL's page and tuple layout */
#define PAGE_HEADER_BYTES 24	/* SizeOfPageHeaderData: line pointers follow */
#define LP_NORMAL 1
#define TUPLE_INFOMASK2 18		/* t_infomask2: natts in HEAP_NATTS_MASK */
#define TUPLE_INFOMASK 20		/* t_infomask: HEAP_HASNULL */
#define TUPLE_HOFF 22
#define TUPLE_BITS 23
#define HEAP_NATTS_MASK 0x07FF
#define HEAP_HASNULL 0x0001
#define VARTAG_ONDISK 18

/* a page's slot for the kernel: none, read the copy, or fill it */
#define SLOT_NONE 0xFFFFFFFFu
#define SLOT_FILL 0x80000000u

struct RelationKey
{
	uint32_t	relation[3];

	bool		operator==(const RelationKey &o) const
	{
		return relation[0] == o.relation[0] && relation[1] == o.relation[1] &&
			relation[2] == o.relation[2];
	}
};

struct RelationKeyHash
{
	size_t		operator()(const RelationKey &k) const
	{
		uint64_t	h = (uint64_t) k.relation[2] * 0x9E3779B97F4A7C15ull;

		return (size_t) (h ^ (((uint64_t) k.relation[1] << 32 | k.relation[0]) + (h << 6)));
	}
};

/*
 * A relation's blocks that have slots: each block's, or SLOT_NONE; and,
 * where the cache follows the WAL, where the last record seen to change
 * each block started, from known_from on (records before it were not seen).
 */
struct RelationSlots
{
	std::vector<uint32_t> slot_of;
	std::vector<uint64_t> changed_at;
	uint64_t	known_from;
	uint32_t	resident;		/* blocks with a slot */

	uint32_t	find(uint32_t block) const
	{
		return block < slot_of.size() ? slot_of[block] : SLOT_NONE;
	}

	uint64_t	last_change(uint32_t block) const
	{
		return block < changed_at.size() ? changed_at[block] : 0;
	}
};

enum SlotState
{
	SLOT_FREE,
	SLOT_FILLING,
	SLOT_CURRENT
};

struct SlotInfo
{
	RelationKey relation;
	uint32_t	block;
	uint64_t	lsn;
	uint64_t	vm_lsn;			/* a visibility map LSN that vouches for it, or 0 */
	uint64_t	verified_at;	/* a query's wal_lsn before the page was read with
								 * this copy's LSN, or 0 */
	uint32_t	lines;			/* the line pointers it was read with */
	uint32_t	readers;		/* kernels reading or filling it */
	uint8_t		state;			/* a SlotState */
	bool		used;			/* read since the clock hand last passed */
	bool		undecided;		/* read last for a decide page, it left tuples undecided */
};

/*
 * Slots are found by relation, then by block in an array: a batch's pages
 * are of one relation and mostly consecutive, so that finding them costs
 * one hash lookup per batch, not one per page.
 */
struct GpuPageCache
{
	uint4	   *slots;			/* device memory, page_size bytes each */
	uint32_t	nslots;
	int32_t		page_size;
	std::mutex	lock;
	std::unordered_map<RelationKey, RelationSlots, RelationKeyHash> relations;
	std::vector<SlotInfo> info;
	uint32_t	hand;
	uint64_t	wal_from;		/* where the WAL is followed from, or 0 */
	uint64_t	wal_upto;		/* every record before it seen */
};

struct GpuHeapReader
{
	GpuHeapQuery *query;		/* on the device */
	uint64_t   *set_values;
	size_t		set_values_cap;
	int32_t		max_lines;
	int32_t		page_size;
	GpuHeapPage *pages;			/* a batch's descriptions */
	size_t		pages_cap;
	uint32_t   *slots;			/* and each page's cache slot (SLOT_*) */
	size_t		slots_cap;
	std::vector<uint32_t> host_slots;
	std::vector<uint8_t> host_by_wal;	/* and whether the WAL vouched for it */
	uint8_t    *undecided;		/* and whether it left tuples undecided */
	size_t		undecided_cap;
	std::vector<uint8_t> host_undecided;
	std::vector<uint32_t> missed;	/* a batch's blocks sent back (read_pages) */
	RelationKey relation;		/* the query's table */
	uint64_t	wal_lsn;		/* and its wal_lsn */
	uint64_t   *keys;			/* its rows' keys (of key_width bytes) and TIDs */
	size_t		keys_cap;
	uint64_t   *tids;
	size_t		tids_cap;
	Span		kernel;			/* around the kernel */
	unsigned long long *counts; /* keyed, read, settled, undecided (HEAP_COUNTS) */
	unsigned long long *host_counts;
	int			key_width;
	int			multiprocessors;
};

/* The bytes a varlena value takes, from its header (VARSIZE_ANY). */
static __device__ __forceinline__ uint32_t
varlena_size(const uint8_t *p)
{
	if (p[0] & 1)
	{
		/* a short header, or an external pointer's */
		if (p[0] == 1)
			return 2 + (p[1] == VARTAG_ONDISK ? 16 : 8);
		return p[0] >> 1;
	}
	return ((uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
			(uint32_t) p[3] << 24) >> 2;
}

static __device__ __forceinline__ uint32_t
align_up(uint32_t offset, int align)
{
	return (offset + align - 1) & ~(uint32_t) (align - 1);
}

/* a tuple on the page in shared memory, for program_row_key */
struct HeapRow
{
	const GpuHeapQuery *q;
	const uint8_t *tuple;
	const uint8_t *data;		/* its columns, after the header */
	int			natts;
	bool		hasnull;

	/* t may be NULL for a row not to be read */
	__device__ HeapRow(const GpuHeapQuery *query, const uint8_t *t)
		: q(query), tuple(t), data(t ? t + t[TUPLE_HOFF] : NULL),
		  natts(t ? (t[TUPLE_INFOMASK2] | t[TUPLE_INFOMASK2 + 1] << 8) & HEAP_NATTS_MASK : 0),
		  hasnull(t && (t[TUPLE_INFOMASK] & HEAP_HASNULL))
	{
	}

	__device__ const void *value(const GpuColumn &c, bool *isnull) const
	{
		uint32_t	offset = 0;

		/* a column added since the row was written: NULL (no default: see the host) */
		*isnull = c.attno > natts;
		if (*isnull)
			return NULL;
		if (!hasnull && c.attno <= q->fixed_natts)
			return data + q->fixed_offsets[c.attno - 1];
		for (int a = 0; a < c.attno; a++)
		{
			GpuHeapAttr attr = q->attrs[a];

			if (hasnull && !(tuple[TUPLE_BITS + (a >> 3)] & (1 << (a & 7))))
			{
				if (a == c.attno - 1)
				{
					*isnull = true;
					return NULL;
				}
				continue;
			}
			/* a varlena's short header is not aligned (att_align_pointer) */
			if (attr.len > 0 || data[offset] == 0)
				offset = align_up(offset, attr.align);
			if (a == c.attno - 1)
				break;
			offset += attr.len > 0 ? (uint32_t) attr.len : varlena_size(data + offset);
		}
		return data + offset;
	}
};

/*
 * What the top-k's kernel does with a line pointer's row (tuple, or NULL
 * for none): the key of a row that passes goes, with its TID, into arrays
 * compacted by a block-wide scan; counts[0] gets their number, counts[3]
 * that of those whose visibility is left to the CPU (undecided).  Every
 * thread of the block calls it at once.
 */
template <typename K>
struct TopkRows
{
	typedef cub::BlockScan<uint32_t, PAGE_THREADS> Scan;
	struct Shared
	{
		typename Scan::TempStorage scan;
		uint32_t	base;
	};

	/* a page's undecided tuples go to the top-k, each marked */
	static constexpr bool whole_pages = false;

	K		   *keys;
	uint64_t   *tids;
	unsigned long long *counts;

	__device__ void row(Shared &shared, const GpuHeapQuery *q, const uint8_t *tuple,
						uint32_t block, int line, bool undecided, ProgramState *state) const
	{
		uint64_t	key = 0;
		uint32_t	pass = tuple != NULL &&
			program_row_key(&q->program, HeapRow(q, tuple), state, &key);
		uint32_t	offset;
		uint32_t	total;

		Scan(shared.scan).ExclusiveSum(pass, offset, total);
		if (threadIdx.x == 0 && total > 0)
			shared.base = (uint32_t) atomicAdd(&counts[0], (unsigned long long) total);
		__syncthreads();
		if (pass)
		{
			keys[shared.base + offset] = (K) key;
			tids[shared.base + offset] = (uint64_t) block << 16 | (uint64_t) (line + 1) |
				(undecided ? GPU_HEAP_TID_UNDECIDED : 0);
			if (undecided)
				atomicAdd(&counts[3], 1ull);
		}
		__syncthreads();
	}
};

/*
 * What the grouped kernel does with a row: one that passes goes to its
 * group.  counts[0] gets the rows that pass, and groups.ngroups the groups
 * made, a warp's at a time.  A row once added cannot be taken out of its
 * group, so a decide page that leaves any tuple undecided is not read at
 * all (whole_pages): it goes back to the scan, which decides its tuples
 * itself, and no row this sees is undecided.  Nor is a page with a visible
 * row whose text group the GPU does not hold (holds).
 */
struct GroupRows
{
	struct Shared
	{
	};

	static constexpr bool whole_pages = true;

	GroupsView	groups;
	unsigned long long *counts;

	/* whether every page's rows are looked at first: a text grouping's */
	__device__ bool checks_rows() const
	{
		return groups.spec->columns[0].kind == VALUE_TEXT;
	}

	__device__ bool holds(const GpuHeapQuery *q, const uint8_t *tuple) const
	{
		return groups_hold_row(groups, HeapRow(q, tuple));
	}

	__device__ void row(Shared &shared, const GpuHeapQuery *q, const uint8_t *tuple,
						uint32_t block, int line, bool undecided, ProgramState *state) const
	{
		bool		pass = false;
		bool		made;
		HeapRow		heap_row(q, tuple);

		if (tuple != NULL)
			pass = program_row_passes(&q->program, heap_row, state);
		made = groups_add_row(groups, pass ? &heap_row : (const HeapRow *) NULL);
		groups_count_rows(groups, pass, made, &counts[0]);
	}
};

/*
 * Whether the page read in place at from still has the LSN lsn, read again
 * after the block's copy of it (see the header comment).
 */
static __device__ bool
lsn_unchanged(const uint4 *from, uint64_t lsn)
{
	const volatile uint32_t *header = (const volatile uint32_t *) from;

	__threadfence_system();
	return ((uint64_t) header[0] << 32 | header[1]) == lsn;
}

/*
 * The tuple of line pointer line (from 0) of the page copied to page that
 * its description d lets the kernel read (normal, and in the mask where
 * there is one), or NULL.
 */
static __device__ const uint8_t *
line_tuple(const uint8_t *page, const GpuHeapPage &d, int line)
{
	uint32_t	item = *(const uint32_t *) (page + PAGE_HEADER_BYTES + 4 * line);

	if (((item >> 15) & 3) != LP_NORMAL ||
		(d.masked && !((d.normal[line >> 5] >> (line & 31)) & 1)))
		return NULL;
	return page + (item & 0x7FFF);
}

/*
 * Every page's rows, each normal line pointer's visible or undecided
 * tuple's to rows.row (and every other line pointer's as NULL, so that a
 * block's threads call it together); counts[1] gets the tuples read that
 * were not settled invisible, counts[2] the tuples of decide pages that
 * their headers settled, undecided[p] (cleared) 1 where page p left some
 * undecided.  Where Rows::whole_pages, such a page's rows are not read.
 */
template <typename Rows>
__global__ void
__launch_bounds__(PAGE_THREADS)
pages_kernel(const char *buffers, const GpuHeapPage *pages, size_t npages, uint4 *cache,
			 const uint32_t *slots, const GpuHeapQuery *q, Rows rows,
			 unsigned long long *counts, uint8_t *undecided)
{
	__shared__ typename Rows::Shared shared;
	__shared__ bool settles;	/* whether the page's headers may settle visibility */
	extern __shared__ uint4 page_words[];
	const uint8_t *page = (const uint8_t *) page_words;
	int			nwords = q->page_size / (int) sizeof(uint4);
	ProgramState state;
	TupleSnapshot snapshot = {q->snapshot.xmin, q->snapshot.xmax, q->snapshot.complete != 0,
	q->snapshot.ninprogress, q->snapshot.inprogress, q->snapshot.no_own_xids != 0};
	unsigned long long read = 0;
	unsigned long long settled = 0;

	state.init(&q->program);
	for (size_t p = blockIdx.x; p < npages; p += gridDim.x)
	{
		GpuHeapPage d = pages[p];
		uint32_t	slot = cache ? slots[p] : SLOT_NONE;
		uint4	   *copy = slot == SLOT_NONE ? NULL :
			cache + (size_t) (slot & ~SLOT_FILL) * nwords;
		const uint4 *from = copy && !(slot & SLOT_FILL) ? copy :
			(const uint4 *) (buffers + (size_t) d.buffer * q->page_size);
		int			lines;

		for (int i = threadIdx.x; i < nwords; i += PAGE_THREADS)
		{
			uint4		word = from[i];

			page_words[i] = word;
			if (copy && (slot & SLOT_FILL))
				copy[i] = word;
		}
		__syncthreads();
		if (d.decide)
		{
			if (threadIdx.x == 0)
				settles = from == copy || lsn_unchanged(from, d.lsn);
			__syncthreads();
		}
		lines = min((int) d.lines, q->max_lines);
		if constexpr (Rows::whole_pages)
		{
			if (d.decide || rows.checks_rows())
			{
				bool		left = false;
				bool		unheld = false;

				for (int line = threadIdx.x; line < lines; line += PAGE_THREADS)
				{
					const uint8_t *tuple = line_tuple(page, d, line);
					TupleVisibility visibility = TUPLE_VISIBLE;

					if (tuple != NULL && d.decide)
						visibility = settles ? tuple_visibility(tuple, &snapshot) :
							TUPLE_UNDECIDED;
					left |= tuple != NULL && visibility == TUPLE_UNDECIDED;
					unheld |= tuple != NULL && visibility == TUPLE_VISIBLE &&
						!rows.holds(q, tuple);
				}
				/* the block's; also the barrier before the next page replaces the words */
				left = __syncthreads_or(left);
				unheld = __syncthreads_or(unheld);
				if (left || unheld)
				{
					if (threadIdx.x == 0)
						undecided[p] = (left ? PAGE_LEFT_UNDECIDED : 0) |
							(unheld ? PAGE_UNHELD : 0);
					continue;
				}
			}
		}
		for (int first = 0; first < lines; first += PAGE_THREADS)
		{
			int			line = first + threadIdx.x;
			const uint8_t *tuple = line < lines ? line_tuple(page, d, line) : NULL;
			TupleVisibility visibility = TUPLE_VISIBLE;

			if (tuple != NULL && d.decide)
			{
				visibility = settles ? tuple_visibility(tuple, &snapshot) : TUPLE_UNDECIDED;
				settled += visibility != TUPLE_UNDECIDED;
				if (visibility == TUPLE_INVISIBLE)
					tuple = NULL;
				if (visibility == TUPLE_UNDECIDED)
					undecided[p] = 1;
			}
			read += tuple != NULL;
			rows.row(shared, q, tuple, d.block, line, visibility == TUPLE_UNDECIDED, &state);
		}
		/* the page's words are read: the next page may replace them */
		__syncthreads();
	}
	if (read > 0)
		atomicAdd(&counts[1], read);
	if (settled > 0)
		atomicAdd(&counts[2], settled);
}

static GpuStatus
reader_init(GpuHeapReader *r)
{
	int			device;

	GPU_CHECK(cudaGetDevice(&device), "Finding the current device");
	GPU_CHECK(cudaDeviceGetAttribute(&r->multiprocessors, cudaDevAttrMultiProcessorCount, device),
			  "Finding the device's multiprocessors");
	GPU_CHECK(cudaMalloc(&r->query, sizeof(GpuHeapQuery)), "Allocating device memory");
	GPU_CHECK(cudaMalloc(&r->counts, HEAP_COUNTS * sizeof(unsigned long long)),
			  "Allocating device memory");
	GPU_CHECK(cudaMallocHost(&r->host_counts, HEAP_COUNTS * sizeof(unsigned long long)),
			  "Allocating pinned host memory");
	return span_create(&r->kernel);
}

extern "C" GpuStatus
gpu_heap_reader_create(GpuHeapReader **out)
{
	return object_create("Allocating a heap page reader", reader_init, gpu_heap_reader_destroy,
						 out);
}

extern "C" void
gpu_heap_reader_destroy(GpuHeapReader *r)
{
	if (r == NULL)
		return;
	stream_drain(cudaStreamPerThread);
	cudaFree(r->query);
	cudaFree(r->set_values);
	cudaFree(r->pages);
	cudaFree(r->slots);
	cudaFree(r->undecided);
	cudaFree(r->keys);
	cudaFree(r->tids);
	cudaFree(r->counts);
	pinned_free(r->host_counts);
	span_destroy(&r->kernel);
	delete r;
}

/* Device memory for n items of unit bytes at *ptr, *cap items so far. */
static GpuStatus
ensure(void **ptr, size_t *cap, size_t n, size_t unit)
{
	if (n <= *cap)
		return GPU_OK;
	cudaFree(*ptr);
	*ptr = NULL;
	*cap = 0;
	GPU_CHECK(cudaMalloc(ptr, n * unit), "Allocating device memory for a heap scan");
	*cap = n;
	return GPU_OK;
}

extern "C" GpuStatus
gpu_page_cache_create(size_t bytes, int32_t page_size, GpuPageCache **out)
{
	GpuPageCache *c;
	size_t		nslots = std::min<size_t>(bytes / (size_t) page_size, SLOT_FILL - 1);

	*out = NULL;
	if (nslots == 0)
		return GPU_OK;
	c = new(std::nothrow) GpuPageCache();
	if (c == NULL)
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating host memory");
	c->nslots = (uint32_t) nslots;
	c->page_size = page_size;
	c->hand = 0;
	try
	{
		c->info.assign(nslots, SlotInfo());
	}
	catch (const std::bad_alloc &)
	{
		delete c;
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating host memory for the page cache");
	}
	if (cudaMalloc(&c->slots, nslots * (size_t) page_size) != cudaSuccess)
	{
		cudaGetLastError();
		delete c;
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating device memory for the page cache");
	}
	*out = c;
	return GPU_OK;
}

extern "C" void
gpu_page_cache_destroy(GpuPageCache *c)
{
	if (c == NULL)
		return;
	cudaFree(c->slots);
	delete c;
}

extern "C" void
gpu_page_cache_follow_wal(GpuPageCache *c, uint64_t from)
{
	std::lock_guard<std::mutex> guard(c->lock);

	c->wal_from = from;
	c->wal_upto = from;
}

/* A change to a block (or the whole relation) of a relation with slots. */
static void
note_change(RelationSlots &rs, const GpuWalChange &change)
{
	if (change.block == GPU_WAL_WHOLE_RELATION)
	{
		rs.known_from = std::max(rs.known_from, change.lsn + 1);
		return;
	}
	if (change.block >= rs.changed_at.size())
		rs.changed_at.resize(std::max<size_t>((size_t) change.block + 1, rs.slot_of.size()), 0);
	rs.changed_at[change.block] = std::max(rs.changed_at[change.block], change.lsn);
}

extern "C" void
gpu_page_cache_wal_changes(GpuPageCache *c, const GpuWalChange *changes, size_t n, uint64_t upto)
{
	std::lock_guard<std::mutex> guard(c->lock);

	if (c->wal_from == 0)
		return;
	try
	{
		for (size_t i = 0; i < n; i++)
		{
			RelationKey key = {{changes[i].relation[0], changes[i].relation[1],
			changes[i].relation[2]}};
			auto		found = c->relations.find(key);

			if (found != c->relations.end())
				note_change(found->second, changes[i]);
		}
	}
	catch (const std::bad_alloc &)
	{
		/* a change not kept: nothing read before upto is vouched for */
		c->wal_from = upto;
	}
	c->wal_upto = std::max(c->wal_upto, upto);
}

extern "C" uint64_t
gpu_page_cache_wal_upto(GpuPageCache *c)
{
	std::lock_guard<std::mutex> guard(c->lock);

	return c->wal_from == 0 ? 0 : c->wal_upto;
}

/* Slot i no longer holds its block. */
static void
cache_forget(GpuPageCache *c, uint32_t i)
{
	SlotInfo   &s = c->info[i];
	auto		found = c->relations.find(s.relation);

	s.state = SLOT_FREE;
	if (found == c->relations.end())
		return;
	found->second.slot_of[s.block] = SLOT_NONE;
	if (--found->second.resident == 0)
		c->relations.erase(found);
}

/* A slot no kernel uses, by the clock, made free; SLOT_NONE if every one is busy. */
static uint32_t
cache_victim(GpuPageCache *c)
{
	for (uint32_t tries = 0; tries < 2 * c->nslots; tries++)
	{
		uint32_t	i = c->hand;
		SlotInfo   &s = c->info[i];

		c->hand = (c->hand + 1) % c->nslots;
		if (s.readers > 0)
			continue;
		if (s.used)
		{
			s.used = false;
			continue;
		}
		if (s.state != SLOT_FREE)
			cache_forget(c, i);
		return i;
	}
	return SLOT_NONE;
}

/* The slots of a relation's blocks, or NULL where it has none. */
static const RelationSlots *
relation_slots(GpuPageCache *c, const RelationKey &relation)
{
	auto		found = c->relations.find(relation);

	return found == c->relations.end() ? NULL : &found->second;
}

/* A free slot for a pinned page to fill: SLOT_NONE if none (or no memory). */
static uint32_t
cache_take(GpuPageCache *c, const GpuHeapReader *r, const GpuHeapPage &page)
{
	uint32_t	slot = cache_victim(c);

	if (slot == SLOT_NONE)
		return SLOT_NONE;
	try
	{
		auto		made = c->relations.try_emplace(r->relation);
		RelationSlots &rs = made.first->second;

		/* records seen before the relation had slots were not kept */
		if (made.second)
			rs.known_from = c->wal_upto;
		if (page.block >= rs.slot_of.size())
			rs.slot_of.resize((size_t) page.block + 1, SLOT_NONE);
		rs.slot_of[page.block] = slot;
		rs.resident++;
	}
	catch (const std::bad_alloc &)
	{
		return SLOT_NONE;
	}
	c->info[slot] = SlotInfo{r->relation, page.block, page.lsn, page.vm_lsn, r->wal_lsn, page.lines,
	0, SLOT_FILLING, true};
	return slot;
}

/*
 * Whether the WAL vouches for slot's copy of block as the page a query of
 * wal_lsn must read: no record that changed the block started at or after
 * the wal_lsn of the query that last read the page with the copy's LSN,
 * and every record before wal_lsn has been seen (src/service_wal.c).
 */
static bool
wal_vouches(const GpuPageCache *c, const RelationSlots &rs, const SlotInfo &s, uint64_t wal_lsn)
{
	return wal_lsn != 0 && c->wal_from != 0 && c->wal_upto >= wal_lsn &&
		s.verified_at >= std::max(c->wal_from, rs.known_from) &&
		rs.last_change(s.block) < s.verified_at;
}

/*
 * Each page's slot (SLOT_*): the copy to read, or one to fill, or none.
 * A pinned page's copy is current while its LSN is the page's; an unpinned
 * page's while its vm_lsn is, or while the WAL vouches for it.  An
 * unpinned page is read with the line pointers its copy was read with:
 * the scan that read the page counted them under its lock, and a copy
 * filled while a writer added a tuple may hold part of it beyond them.
 * Unpinned pages without a current copy go to r->missed; the others are
 * moved to the front of pages, their slots into r->host_slots, the
 * copies' readers counted.  Returns their number.
 */
static size_t
cache_acquire(GpuHeapReader *r, GpuPageCache *c, GpuHeapPage *pages, size_t n,
			  GpuHeapCounts *counts)
{
	std::lock_guard<std::mutex> guard(c->lock);
	const RelationSlots *rs = relation_slots(c, r->relation);
	size_t		kept = 0;

	for (size_t p = 0; p < n; p++)
	{
		GpuHeapPage page = pages[p];
		bool		unpinned = page.buffer == GPU_HEAP_UNPINNED;
		uint32_t	found;
		uint32_t	slot = SLOT_NONE;

		found = rs ? rs->find(page.block) : SLOT_NONE;
		if (found != SLOT_NONE)
		{
			SlotInfo   &s = c->info[found];
			bool		by_map = unpinned && page.vm_lsn != 0 && s.vm_lsn == page.vm_lsn;
			bool		by_wal = unpinned && !by_map && wal_vouches(c, *rs, s, r->wal_lsn);
			bool		current = s.state == SLOT_CURRENT &&
				(unpinned ? by_map || by_wal : page.lsn != 0 && s.lsn == page.lsn);

			/* a copy that left tuples undecided may lack hint bits set since */
			if (page.decide && s.undecided)
				current = false;

			if (current)
			{
				slot = found;
				s.used = true;
				if (unpinned)
					page.lines = s.lines;
				/* the same page under a visibility map word read before it */
				if (!unpinned && page.vm_lsn != 0)
					s.vm_lsn = page.vm_lsn;
				/* and after the WAL's position the query read */
				if (!unpinned)
					s.verified_at = std::max(s.verified_at, r->wal_lsn);
				counts->pages_cached++;
				counts->pages_unpinned += unpinned;
				counts->pages_wal_vouched += by_wal;
				counts->pages_wal_decided += by_wal && page.decide;
				r->host_by_wal[kept] = by_wal;
			}
			else if (!unpinned && page.lsn != 0 && s.state == SLOT_CURRENT && s.readers == 0)
			{
				/* the page changed: its copy is refilled */
				slot = found | SLOT_FILL;
				s.lsn = page.lsn;
				s.vm_lsn = page.vm_lsn;
				s.verified_at = r->wal_lsn;
				s.lines = page.lines;
				s.state = SLOT_FILLING;
			}
			/* else a kernel fills it or reads the old copy: this one reads the page */
		}
		else if (!unpinned && page.lsn != 0)
		{
			slot = cache_take(c, r, page);
			if (slot != SLOT_NONE)
				slot |= SLOT_FILL;
			/* the relation's entry may have been made or dropped */
			rs = relation_slots(c, r->relation);
		}
		if (unpinned && slot == SLOT_NONE)
		{
			r->missed.push_back(page.block);
			continue;
		}
		if (slot != SLOT_NONE)
			c->info[slot & ~SLOT_FILL].readers++;
		pages[kept] = page;
		r->host_slots[kept++] = slot;
	}
	return kept;
}

/*
 * The kernel is done with the slots of pages: filled ones are current, or
 * free if it failed; each notes whether its page, read as a decide page,
 * left tuples undecided (r->host_undecided).
 */
static void
cache_release(GpuHeapReader *r, GpuPageCache *c, const GpuHeapPage *pages, size_t n, bool filled)
{
	std::lock_guard<std::mutex> guard(c->lock);

	for (size_t p = 0; p < n; p++)
	{
		uint32_t	slot = r->host_slots[p];
		SlotInfo   *s;

		if (slot == SLOT_NONE)
			continue;
		s = &c->info[slot & ~SLOT_FILL];
		s->readers--;
		if (filled && (pages[p].decide || (slot & SLOT_FILL)))
			s->undecided = pages[p].decide && (r->host_undecided[p] & PAGE_LEFT_UNDECIDED);
		if (!(slot & SLOT_FILL))
			continue;
		if (filled)
			s->state = SLOT_CURRENT;
		else
			cache_forget(c, slot & ~SLOT_FILL);
	}
}

/* Without a cache: the unpinned pages go to r->missed, the others to the front. */
static size_t
split_unpinned(GpuHeapReader *r, GpuHeapPage *pages, size_t n)
{
	size_t		kept = 0;

	for (size_t p = 0; p < n; p++)
	{
		if (pages[p].buffer == GPU_HEAP_UNPINNED)
			r->missed.push_back(pages[p].block);
		else
			pages[kept++] = pages[p];
	}
	return kept;
}

extern "C" GpuStatus
gpu_heap_set_query(GpuHeapReader *r, const GpuHeapQuery *query, const uint64_t *set_values,
				   size_t nset_values)
{
	GpuHeapQuery q = *query;

	GPU_TRY(ensure((void **) &r->set_values, &r->set_values_cap, nset_values > 0 ? nset_values : 1,
				   sizeof(uint64_t)));
	program_place_sets(&q.program, r->set_values);
	if (nset_values > 0)
		GPU_CHECK(cudaMemcpyAsync(r->set_values, set_values, nset_values * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying a heap scan's query");
	GPU_CHECK(cudaMemcpyAsync(r->query, &q, sizeof(q), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying a heap scan's query");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Copying a heap scan's query");
	r->max_lines = q.max_lines;
	r->page_size = q.page_size;
	memcpy(r->relation.relation, q.relation, sizeof(r->relation.relation));
	r->wal_lsn = q.wal_lsn;
	r->key_width = key_width((KeyType) q.program.key_type);
	return GPU_OK;
}

/*
 * The kernel over a batch whose descriptions (and slots) are on the
 * device: its rows' keys into r->keys and r->tids, or with groups its rows
 * into them.
 */
static GpuStatus
launch_pages_kernel(GpuHeapReader *r, GpuPageCache *cache, const char *buffers, size_t n,
					GpuGroups *groups)
{
	int			grid = (int) std::min<size_t>(n, (size_t) r->multiprocessors * 8);
	uint4	   *slots = cache ? cache->slots : NULL;

	if (groups)
	{
		GroupRows	rows = {gpu_groups_view(groups), r->counts};

		pages_kernel<<<grid, PAGE_THREADS, r->page_size, cudaStreamPerThread>>>(
			buffers, r->pages, n, slots, r->slots, r->query, rows, r->counts, r->undecided);
	}
	else if (r->key_width == 4)
	{
		TopkRows<uint32_t> rows = {(uint32_t *) r->keys, r->tids, r->counts};

		pages_kernel<<<grid, PAGE_THREADS, r->page_size, cudaStreamPerThread>>>(
			buffers, r->pages, n, slots, r->slots, r->query, rows, r->counts, r->undecided);
	}
	else
	{
		TopkRows<uint64_t> rows = {(uint64_t *) r->keys, r->tids, r->counts};

		pages_kernel<<<grid, PAGE_THREADS, r->page_size, cudaStreamPerThread>>>(
			buffers, r->pages, n, slots, r->slots, r->query, rows, r->counts, r->undecided);
	}
	GPU_CHECK(cudaGetLastError(), "Launching the heap page reader");
	return GPU_OK;
}

/* The batch read (see launch_pages_kernel), its counts in r->host_counts. */
static GpuStatus
read_batch(GpuHeapReader *r, GpuPageCache *cache, const char *buffers, const GpuHeapPage *pages,
		   size_t n, GpuGroups *groups, double *kernel_ms)
{
	GPU_CHECK(cudaMemcpyAsync(r->pages, pages, n * sizeof(GpuHeapPage), cudaMemcpyHostToDevice,
							  cudaStreamPerThread), "Copying page descriptions");
	if (cache)
		GPU_CHECK(cudaMemcpyAsync(r->slots, r->host_slots.data(), n * sizeof(uint32_t),
								  cudaMemcpyHostToDevice, cudaStreamPerThread),
				  "Copying page descriptions");
	GPU_CHECK(cudaMemsetAsync(r->undecided, 0, n, cudaStreamPerThread), "Clearing a batch's counts");
	GPU_CHECK(cudaMemsetAsync(r->counts, 0, HEAP_COUNTS * sizeof(unsigned long long),
							  cudaStreamPerThread),
			  "Clearing a batch's counts");
	GPU_CHECK(cudaEventRecord(r->kernel.begun, cudaStreamPerThread), "Recording an event");
	GPU_TRY(launch_pages_kernel(r, cache, buffers, n, groups));
	GPU_CHECK(cudaEventRecord(r->kernel.ended, cudaStreamPerThread), "Recording an event");
	GPU_CHECK(cudaMemcpyAsync(r->host_counts, r->counts, HEAP_COUNTS * sizeof(unsigned long long),
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying a batch's counts");
	GPU_CHECK(cudaMemcpyAsync(r->host_undecided.data(), r->undecided, n,
							  cudaMemcpyDeviceToHost, cudaStreamPerThread),
			  "Copying a batch's counts");
	GPU_CHECK(cudaStreamSynchronize(cudaStreamPerThread), "Reading heap pages");
	GPU_TRY(span_add_ms(&r->kernel, kernel_ms));
	return GPU_OK;
}

/* The most rows n pages (the batch's kept ones) can hold. */
static uint64_t
rows_bound(const GpuHeapReader *r, const GpuHeapPage *pages, size_t n)
{
	uint64_t	rows = 0;

	for (size_t p = 0; p < n; p++)
		rows += std::min<uint64_t>(pages[p].lines, (uint64_t) r->max_lines);
	return rows;
}

/*
 * Read a batch: the pages with a copy or pinned, into the top-k's arrays
 * or into groups; the blocks of the others into missed, and of a groups
 * job's pages left undecided (GroupRows).  *kept: the pages read.
 */
static GpuStatus
read_pages(GpuHeapReader *r, GpuPageCache *cache, const char *buffers, GpuHeapPage *pages,
		   size_t n, GpuGroups *groups, uint32_t *missed, size_t *nmissed, GpuHeapCounts *counts,
		   size_t *kept)
{
	GpuStatus	status = GPU_OK;

	*nmissed = 0;
	*kept = 0;
	if (n == 0)
		return GPU_OK;
	GPU_TRY(ensure((void **) &r->pages, &r->pages_cap, n, sizeof(GpuHeapPage)));
	GPU_TRY(ensure((void **) &r->slots, &r->slots_cap, n, sizeof(uint32_t)));
	GPU_TRY(ensure((void **) &r->undecided, &r->undecided_cap, n, sizeof(uint8_t)));
	if (groups == NULL)
	{
		/* keys of up to 8 bytes */
		GPU_TRY(ensure((void **) &r->keys, &r->keys_cap, n * (size_t) r->max_lines,
					   sizeof(uint64_t)));
		GPU_TRY(ensure((void **) &r->tids, &r->tids_cap, n * (size_t) r->max_lines,
					   sizeof(uint64_t)));
	}
	try
	{
		r->missed.clear();
		r->missed.reserve(n);
		r->host_undecided.assign(n, 0);
		if (cache)
		{
			r->host_slots.resize(n);
			r->host_by_wal.assign(n, 0);
		}
	}
	catch (const std::bad_alloc &)
	{
		return gpu_fail(cudaErrorMemoryAllocation, "Allocating host memory");
	}
	*kept = cache ? cache_acquire(r, cache, pages, n, counts) : split_unpinned(r, pages, n);
	if (*kept > 0)
	{
		if (groups)
			status = gpu_groups_reserve(groups, rows_bound(r, pages, *kept));
		if (status == GPU_OK)
			status = read_batch(r, cache, buffers, pages, *kept, groups, &counts->kernel_ms);
		if (cache)
			cache_release(r, cache, pages, *kept, status == GPU_OK);
	}
	GPU_TRY(status);
	/*
	 * A groups job's pages not read (GroupRows): those left undecided go
	 * back, to be read again; those with rows the groups cannot hold are
	 * counted, for the scan to group the table itself.
	 */
	for (size_t p = 0; groups && p < *kept; p++)
	{
		if (r->host_undecided[p] == 0)
			continue;
		if (cache && r->host_slots[p] != SLOT_NONE && !(r->host_slots[p] & SLOT_FILL))
		{
			counts->pages_cached--;
			counts->pages_unpinned -= pages[p].buffer == GPU_HEAP_UNPINNED;
			counts->pages_wal_vouched -= r->host_by_wal[p];
			counts->pages_wal_decided -= r->host_by_wal[p] && pages[p].decide;
		}
		if (r->host_undecided[p] & PAGE_UNHELD)
			counts->pages_unheld++;
		else
		{
			/* an unpinned one goes back as if it had no copy, to be pinned */
			r->missed.push_back(pages[p].block);
			counts->pages_undecided += pages[p].buffer != GPU_HEAP_UNPINNED;
		}
	}
	memcpy(missed, r->missed.data(), r->missed.size() * sizeof(uint32_t));
	*nmissed = r->missed.size();
	if (*kept == 0)
		return GPU_OK;
	counts->rows_keyed += r->host_counts[0];
	counts->rows_read += r->host_counts[1];
	counts->rows_settled += r->host_counts[2];
	counts->rows_undecided += r->host_counts[3];
	return GPU_OK;
}

extern "C" GpuStatus
gpu_heap_read(GpuHeapReader *r, GpuPageCache *cache, const char *buffers, GpuHeapPage *pages,
			  size_t n, GpuTopk *t, uint32_t *missed, size_t *nmissed, GpuHeapCounts *counts)
{
	size_t		kept;

	GPU_TRY(read_pages(r, cache, buffers, pages, n, NULL, missed, nmissed, counts, &kept));
	if (kept == 0)
		return GPU_OK;
	return gpu_topk_push_device(t, r->keys, r->tids, r->host_counts[0]);
}

extern "C" GpuStatus
gpu_heap_read_groups(GpuHeapReader *r, GpuPageCache *cache, const char *buffers,
					 GpuHeapPage *pages, size_t n, GpuGroups *groups, uint32_t *missed,
					 size_t *nmissed, GpuHeapCounts *counts)
{
	size_t		kept;

	return read_pages(r, cache, buffers, pages, n, groups, missed, nmissed, counts, &kept);
}
