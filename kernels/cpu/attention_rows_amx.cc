// The rows kernel (attention_rows.h) on AMX tiles for a pool of bf16 keys and values; a pool of
// f32 runs on the AVX-512 rows kernel, so that f32 keys and values keep f32 products.
// - Logits sixteen queries by sixteen entries a tile: the queries rounded to bf16 as A tiles
//   (each query's 32 dimensions of a step are one tile row), each block of sixteen keys as B
//   tiles (a 16 x 16 transpose of four-byte pairs of dimensions), one TDPBF16PS per 32
//   dimensions; then scaled and the log-votes added in f32.
// - The softmax per query over the entries its row sees in f32 on AVX-512 (vector_exp_avx512.h,
//   the other kernels' exponential), its weights and totals what the caller's scores read; the
//   same pass rounds the weights to bf16 for the value sum.
// - The value sum sixteen queries by sixteen dimensions a tile: the weights rounded to bf16 as
//   A tiles (32 entries a step), the values of each pair of entries interleaved as B tiles,
//   four tiles of sums (64 dimensions) a pass; divided by the totals in f32.
// Products of bf16 are exact and summed in f32, as the bf16 matmuls' (subnormals flushed).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/vector_exp_avx512.h"

namespace kvd::kernels::cpu {
namespace {

using amx::kTileRows;
using amx::kTileSlots;

// Dimensions of a logit tile step, and entries of a value tile step: a TDPBF16PS's 32 inputs.
constexpr int32_t kStepInputs = 32;
// Entries of a logit tile, and dimensions of a value tile: a tile row's sixteen f32 sums.
constexpr int32_t kTileColumns = 16;
// Tiles of sums one pass keeps (tmm0-3): the logits of 64 queries over sixteen entries, or 64
// dimensions of sixteen queries' value sums.
constexpr int kLogitTilesPerPass = 4;
constexpr int kValueSumTiles = 4;

// The task's tile buffers, each tile 1 KiB (sixteen rows of 64 bytes), reused call to call.
struct TileBuffers {
  std::vector<float> queries;    // [query tile][step][row][16 pairs]
  std::vector<float> keys;       // [block of entries][step][pair][16 entries]
  std::vector<float> log_votes;  // [entry]
  std::vector<float> weights;    // [step][row][16 pairs]: one query tile's weights
  std::vector<float> values;     // [step][dimension tile][pair of entries][16 dimensions]
};

int32_t Steps(int32_t inputs) { return (inputs + kStepInputs - 1) / kStepInputs; }
// Tiles of sixteen rows (queries, entries) or of sixteen columns (dimensions) that `count` takes.
int32_t Tiles(int32_t count) { return (count + kTileRows - 1) / kTileRows; }

// The first `left` of sixteen lanes, none where `left` is zero or less.
KVD_AVX512 inline __mmask16 Lanes(int64_t left) { return TailMask(std::max<int64_t>(left, 0)); }

// `low` and `high` rounded to bf16 in one vector, in order: low's sixteen values, then high's
// (four-byte pair i holds values 2i and 2i + 1 of the 32).
KVD_AMX_BF16 inline __m512 Pairs(__m512 low, __m512 high) {
  const __m512bh pairs = _mm512_cvtne2ps_pbh(high, low);
  return reinterpret_cast<const __m512&>(pairs);
}

// The sixteen pairs of bf16 from `from`'s floats [0, count) (the rest zero), in one vector.
KVD_AMX_BF16 inline __m512 RoundedPairs(const float* from, int32_t count) {
  return Pairs(_mm512_maskz_loadu_ps(Lanes(count), from),
               _mm512_maskz_loadu_ps(Lanes(count - 16), from + 16));
}

// A task's view of the pool and rows, its queries numbered q = r * group + g (row r, head g).
struct Rows {
  const AttentionRows& a;
  const uint16_t* keys = static_cast<const uint16_t*>(a.pool->keys);
  const uint16_t* values = static_cast<const uint16_t*>(a.pool->values);
  int32_t queries = a.rows * a.group;
  int32_t entries = a.first_entries + a.rows - 1;  // what the last row sees
  int32_t dim_steps = Steps(a.head_dim);
  int32_t Entries(int32_t q) const { return a.first_entries + q / a.group; }
  int64_t HeadOffset(int32_t q) const {
    return (q / a.group) * a.row_stride + int64_t{q % a.group} * a.head_dim;
  }
  float* Weights(int32_t q) const { return a.weights + q * a.weight_stride; }
};

// Query tile t's step s at buffers.queries[(t * dim_steps + s) * kTileSlots]: query 16t + j's
// dimensions [32s, 32s + 32) as row j; rows past the last query zero.
KVD_AMX_BF16 void PackQueries(const Rows& rows, TileBuffers& buffers) {
  const int32_t tiles = Tiles(rows.queries);
  buffers.queries.resize(static_cast<size_t>(tiles) * rows.dim_steps * kTileSlots);
  for (int32_t t = 0; t < tiles; ++t) {
    for (int32_t s = 0; s < rows.dim_steps; ++s) {
      float* tile = &buffers.queries[(static_cast<size_t>(t) * rows.dim_steps + s) * kTileSlots];
      for (int32_t j = 0; j < kTileRows; ++j) {
        const int32_t q = t * kTileRows + j;
        const __m512 pairs =
            q < rows.queries ? RoundedPairs(rows.a.queries + rows.HeadOffset(q) + s * kStepInputs,
                                            rows.a.head_dim - s * kStepInputs)
                             : _mm512_setzero_ps();
        _mm512_storeu_ps(tile + j * kTileColumns, pairs);
      }
    }
  }
}

// The keys of every entry the last row sees as B tiles, block b (entries [16b, 16b + 16)) and
// step s (dimensions [32s, 32s + 32)) at buffers.keys[(b * dim_steps + s) * kTileSlots]: pair i
// of the dimensions of entry 16b + e in row i, lane e; entries past the last, and pairs past
// the head, zero.
KVD_AMX_BF16 void PackKeys(const Rows& rows, TileBuffers& buffers) {
  const int32_t head_dim = rows.a.head_dim;
  const int32_t blocks = Tiles(rows.entries);
  buffers.keys.resize(static_cast<size_t>(blocks) * rows.dim_steps * kTileSlots);
  float* tile = buffers.keys.data();
  for (int32_t b = 0; b < blocks; ++b) {
    const int32_t first = b * kTileColumns;
    const int32_t count = std::min(kTileColumns, rows.entries - first);
    for (int32_t s = 0; s < rows.dim_steps; ++s, tile += kTileSlots) {
      const int32_t dims = std::min(kStepInputs, head_dim - s * kStepInputs);
      const __mmask32 mask = dims >= 32 ? ~__mmask32{0} : (__mmask32{1} << dims) - 1;
      __m512 v[16];
#pragma GCC unroll 16
      for (int e = 0; e < 16; ++e) {
        v[e] = e < count
                   ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(
                         mask, rows.keys + rows.a.slots[first + e] * head_dim + s * kStepInputs))
                   : _mm512_setzero_ps();
      }
      Transpose16(v);
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(tile + i * kTileColumns, v[i]);
    }
  }
}

// Every entry's log-vote at buffers.log_votes[e], zero past the last up to a whole block.
KVD_AMX_BF16 void GatherLogVotes(const Rows& rows, TileBuffers& buffers) {
  buffers.log_votes.assign(static_cast<size_t>(Tiles(rows.entries)) * kTileColumns, 0.0f);
  for (int32_t e = 0; e < rows.entries; ++e) {
    buffers.log_votes[e] = rows.a.pool->log_votes[rows.a.slots[e]];
  }
}

// The logit tiles of kTiles query tiles (from `queries`) over the block of keys at `keys`, into
// tmm0-3 (tmm4 and tmm5 the queries in turn, tmm6 the keys), then stored to `logits`.
template <int kTiles>
KVD_AMX_BF16 inline __attribute__((always_inline)) void LogitTiles(const float* queries,
                                                                   const float* keys,
                                                                   int32_t dim_steps,
                                                                   float* logits) {
  const int64_t tile_stride = int64_t{dim_steps} * kTileSlots;  // one query tile's steps
  amx::ZeroTiles<kTiles>();
  for (int32_t s = 0; s < dim_steps; ++s, queries += kTileSlots, keys += kTileSlots) {
    _tile_loadd(6, keys, amx::kTileRowBytes);
    _tile_loadd(4, queries, amx::kTileRowBytes);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kTiles > 1) {
      _tile_loadd(5, queries + tile_stride, amx::kTileRowBytes);
      _tile_dpbf16ps(1, 5, 6);
    }
    if constexpr (kTiles > 2) {
      _tile_loadd(4, queries + 2 * tile_stride, amx::kTileRowBytes);
      _tile_dpbf16ps(2, 4, 6);
    }
    if constexpr (kTiles > 3) {
      _tile_loadd(5, queries + 3 * tile_stride, amx::kTileRowBytes);
      _tile_dpbf16ps(3, 5, 6);
    }
  }
  amx::StoreTiles<kTiles>(logits);
}

// Every query's logits over every entry the last row sees, written to its weights: q · k ·
// scale + log-vote, sixteen entries at a time (past the last entry, lanes the softmax never
// reads), four query tiles a pass so that their sums build up side by side.
KVD_AMX_BF16 void Logits(const Rows& rows, const TileBuffers& buffers) {
  const float* const queries = buffers.queries.data();
  const int32_t query_tiles = Tiles(rows.queries);
  const __m512 scale = _mm512_set1_ps(rows.a.scale);
  alignas(64) float logits[kLogitTilesPerPass * kTileSlots];
  for (int32_t first = 0; first < rows.entries; first += kTileColumns) {
    const float* keys =
        buffers.keys.data() + int64_t{first} / kTileColumns * rows.dim_steps * kTileSlots;
    const __m512 log_votes = _mm512_loadu_ps(buffers.log_votes.data() + first);
    for (int32_t t = 0; t < query_tiles; t += kLogitTilesPerPass) {
      const float* tile_queries = queries + static_cast<int64_t>(t) * rows.dim_steps * kTileSlots;
      switch (std::min(kLogitTilesPerPass, query_tiles - t)) {
        case 1:
          LogitTiles<1>(tile_queries, keys, rows.dim_steps, logits);
          break;
        case 2:
          LogitTiles<2>(tile_queries, keys, rows.dim_steps, logits);
          break;
        case 3:
          LogitTiles<3>(tile_queries, keys, rows.dim_steps, logits);
          break;
        default:
          LogitTiles<4>(tile_queries, keys, rows.dim_steps, logits);
          break;
      }
      const int32_t pass_queries =
          std::min(kLogitTilesPerPass * kTileRows, rows.queries - t * kTileRows);
      for (int32_t j = 0; j < pass_queries; ++j) {
        const __m512 sum = _mm512_load_ps(logits + j * kTileColumns);
        _mm512_storeu_ps(rows.Weights(t * kTileRows + j) + first,
                         _mm512_fmadd_ps(sum, scale, log_votes));
      }
    }
  }
}

// The values of every entry the last row sees as B tiles, step s (entries [32s, 32s + 32)) and
// dimension tile d at buffers.values[(s * dim_tiles + d) * kTileSlots]: entries 32s + 2i and
// 32s + 2i + 1 of dimensions [16d, 16d + 16) interleaved in row i (entries past the last, and
// dimensions past the head, zero).
KVD_AMX_BF16 void PackValues(const Rows& rows, TileBuffers& buffers) {
  const AttentionRows& a = rows.a;
  const int32_t steps = Steps(rows.entries);
  const int32_t dim_tiles = Tiles(a.head_dim);
  buffers.values.resize(static_cast<size_t>(steps) * dim_tiles * kTileSlots);
  // Lane 2k takes element k of the first entry's sixteen, lane 2k + 1 element k of the second's.
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  float* const tiles = buffers.values.data();
  for (int32_t s = 0; s < steps; ++s) {
    for (int32_t i = 0; i < kTileRows; ++i) {
      const int32_t e = s * kStepInputs + 2 * i;
      const uint16_t* first = e < rows.entries ? rows.values + a.slots[e] * a.head_dim : nullptr;
      const uint16_t* second =
          e + 1 < rows.entries ? rows.values + a.slots[e + 1] * a.head_dim : nullptr;
      for (int32_t d = 0; d < dim_tiles; ++d) {
        const __mmask16 mask = TailMask(a.head_dim - d * kTileColumns);
        const __m256i low = first != nullptr
                                ? _mm256_maskz_loadu_epi16(mask, first + d * kTileColumns)
                                : _mm256_setzero_si256();
        const __m256i high = second != nullptr
                                 ? _mm256_maskz_loadu_epi16(mask, second + d * kTileColumns)
                                 : _mm256_setzero_si256();
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
        _mm512_storeu_si512(tiles + (int64_t{s} * dim_tiles + d) * kTileSlots + i * kTileColumns,
                            _mm512_permutexvar_epi16(interleave, both));
      }
    }
  }
}

// Query q's softmax over its entries: its logits in its weights turned into exp(logit − max),
// their sum returned; and the weights rounded to bf16 as row j of query tile A tiles, step s at
// tiles[s * kTileSlots], for `steps` steps (zero past its entries).
KVD_AMX_BF16 double SoftmaxRow(const Rows& rows, int32_t q, int32_t j, int32_t steps,
                               float* tiles) {
  float* const weights = rows.Weights(q);
  const int32_t entries = rows.Entries(q);
  __m512 max16 = _mm512_set1_ps(-INFINITY);
  for (int32_t e = 0; e < entries; e += 16) {
    max16 = _mm512_max_ps(max16, _mm512_mask_loadu_ps(max16, TailMask(entries - e), weights + e));
  }
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(max16));
  __m512 sum16 = _mm512_setzero_ps();
  for (int32_t s = 0; s < steps; ++s) {
    const int32_t e = s * kStepInputs;
    const __mmask16 low = Lanes(entries - e);
    const __mmask16 high = Lanes(entries - e - 16);
    const __m512 w_low = _mm512_maskz_mov_ps(
        low, ExpOfNonPositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(low, weights + e), max)));
    const __m512 w_high = _mm512_maskz_mov_ps(
        high, ExpOfNonPositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(high, weights + e + 16), max)));
    sum16 = _mm512_add_ps(sum16, _mm512_add_ps(w_low, w_high));
    _mm512_mask_storeu_ps(weights + e, low, w_low);
    _mm512_mask_storeu_ps(weights + e + 16, high, w_high);
    _mm512_storeu_ps(tiles + s * kTileSlots + j * kTileColumns, Pairs(w_low, w_high));
  }
  return _mm512_reduce_add_ps(sum16);
}

// Query tile t's softmax (SoftmaxRow for each of its queries, the totals to a.totals) and its
// weights as A tiles in buffers.weights, `steps` steps; rows past the last query zero.
KVD_AMX_BF16 void SoftmaxTile(const Rows& rows, int32_t t, int32_t steps, TileBuffers& buffers) {
  buffers.weights.resize(static_cast<size_t>(steps) * kTileSlots);
  float* const tiles = buffers.weights.data();
  for (int32_t j = 0; j < kTileRows; ++j) {
    const int32_t q = t * kTileRows + j;
    if (q < rows.queries) {
      rows.a.totals[q] = SoftmaxRow(rows, q, j, steps, tiles);
    } else {
      for (int32_t s = 0; s < steps; ++s) {
        _mm512_storeu_ps(tiles + s * kTileSlots + j * kTileColumns, _mm512_setzero_ps());
      }
    }
  }
}

// Tiles of sums [0, kTiles) of one value pass, stored to `sums`: the weights' A tiles (`steps`
// steps from `weights`) by kTiles dimension tiles of the values' B tiles (from `values`, a step
// `dim_tiles` tiles), tmm4 the weights, tmm5 and tmm6 the values in turn.
template <int kTiles>
KVD_AMX_BF16 void ValuePass(const float* weights, const float* values, int32_t dim_tiles,
                            int32_t steps, float* sums) {
  amx::ZeroTiles<kTiles>();
  for (int32_t s = 0; s < steps; ++s, weights += kTileSlots, values += dim_tiles * kTileSlots) {
    _tile_loadd(4, weights, amx::kTileRowBytes);
    _tile_loadd(5, values, amx::kTileRowBytes);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (kTiles > 1) {
      _tile_loadd(6, values + kTileSlots, amx::kTileRowBytes);
      _tile_dpbf16ps(1, 4, 6);
    }
    if constexpr (kTiles > 2) {
      _tile_loadd(5, values + 2 * kTileSlots, amx::kTileRowBytes);
      _tile_dpbf16ps(2, 4, 5);
    }
    if constexpr (kTiles > 3) {
      _tile_loadd(6, values + 3 * kTileSlots, amx::kTileRowBytes);
      _tile_dpbf16ps(3, 4, 6);
    }
  }
  amx::StoreTiles<kTiles>(sums);
}

// Every query's weighted value sum divided by its total, a query tile at a time.
KVD_AMX_BF16 void Values(const Rows& rows, TileBuffers& buffers) {
  const AttentionRows& a = rows.a;
  const int32_t dim_tiles = Tiles(a.head_dim);
  alignas(64) float sums[kValueSumTiles * kTileSlots];
  for (int32_t t = 0; t * kTileRows < rows.queries; ++t) {
    const int32_t tile_queries = std::min(kTileRows, rows.queries - t * kTileRows);
    // The queries are in row order, so the tile's last sees the most entries; past its own
    // entries a query's weights are zero.
    const int32_t entries = rows.Entries(t * kTileRows + tile_queries - 1);
    const int32_t steps = Steps(entries);
    SoftmaxTile(rows, t, steps, buffers);
    amx::StoresBeforeTileLoads();
    for (int32_t d = 0; d < dim_tiles; d += kValueSumTiles) {
      const int32_t tiles = std::min(kValueSumTiles, dim_tiles - d);
      const float* values = buffers.values.data() + int64_t{d} * kTileSlots;
      switch (tiles) {
        case 1:
          ValuePass<1>(buffers.weights.data(), values, dim_tiles, steps, sums);
          break;
        case 2:
          ValuePass<2>(buffers.weights.data(), values, dim_tiles, steps, sums);
          break;
        case 3:
          ValuePass<3>(buffers.weights.data(), values, dim_tiles, steps, sums);
          break;
        default:
          ValuePass<4>(buffers.weights.data(), values, dim_tiles, steps, sums);
          break;
      }
      for (int32_t j = 0; j < tile_queries; ++j) {
        const int32_t q = t * kTileRows + j;
        const __m512 inverse = _mm512_set1_ps(static_cast<float>(1.0 / a.totals[q]));
        float* out = a.out + rows.HeadOffset(q);
        for (int32_t i = 0; i < tiles; ++i) {
          const int32_t dim = (d + i) * kTileColumns;
          _mm512_mask_storeu_ps(
              out + dim, TailMask(a.head_dim - dim),
              _mm512_mul_ps(_mm512_load_ps(sums + i * kTileSlots + j * kTileColumns), inverse));
        }
      }
    }
  }
}

// A thread keeps its buffers for the next call up to this many bytes each; a chunk of a longer
// context (packed keys and values grow by 2 · head_dim bytes an entry) frees what it took.
constexpr size_t kKeptBufferBytes = size_t{8} << 20;

void ReleaseLargeBuffers(TileBuffers& buffers) {
  for (std::vector<float>* buffer :
       {&buffers.queries, &buffers.keys, &buffers.log_votes, &buffers.weights, &buffers.values}) {
    if (buffer->capacity() * sizeof(float) > kKeptBufferBytes) std::vector<float>().swap(*buffer);
  }
}

KVD_AMX_BF16 void RunOnTiles(const AttentionRows& a) {
  thread_local TileBuffers buffers;
  const Rows rows{a};
  amx::ConfigureTiles();
  PackQueries(rows, buffers);
  PackKeys(rows, buffers);
  GatherLogVotes(rows, buffers);
  PackValues(rows, buffers);
  amx::StoresBeforeTileLoads();
  Logits(rows, buffers);
  Values(rows, buffers);
  _tile_release();
  ReleaseLargeBuffers(buffers);
}

void Run(const AttentionRows& a) {
  if (a.pool->dtype == DType::kBF16) {
    RunOnTiles(a);
  } else {
    Avx512AttentionRows()(a);
  }
}

}  // namespace

AttentionRowsKernel AmxBf16AttentionRows() { return Run; }

}  // namespace kvd::kernels::cpu
