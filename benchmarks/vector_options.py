"""The vector side of a read at scale, option by option: how fast each finds a read's 100 nearest
memories, how many of sqlite-vec's exact top 10 / top 100 it finds, and what it keeps in memory.

    python -m benchmarks.vector_options --data ../shared/data/locomo/locomo_dev.json [--n 100000] [--stores DIR]

The store is benchmarks.speed's (LoCoMo turns repeated to N, the real model); queries are LoCoMo
questions, embedded once beforehand (the embedding costs the same for every option). Options:

  vec0 float       sqlite-vec's KNN over the float32 vectors (what reads did before; the floor's KNN)
  vec0 bit + rescore  a bit[384] vec0 table, KNN for the 1000 nearest by Hamming distance, then
                   their exact cosines (vec_distance_cosine on the stored float vector)
  vec0 int8 + rescore  an int8[384] vec0 table (each dimension scaled to [-127, 127]), KNN for
                   300, then exact cosines
  vec0 partitions  domain as vec0 partition key, the store split over 10 domains, a read in one;
                   against the same split with domain as a metadata filter (the schema's)
  memory float32   the in-memory index reads use (storage/vectors.py): a BLAS product, then
                   sqlite-vec's exact arithmetic on the candidates
  memory bits + rescore  bit codes in memory (48 bytes a memory), Hamming distance for the 1000
                   nearest, exact cosines from the float32 matrix, or from sqlite-vec's chunk
                   blobs read in place (then only the codes and each vector's place are kept)

Timings depend on the machine and its load: compare options within one run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import make_embedder
from mnemo_mcp.storage import vectors
from mnemo_mcp.storage.db import connect

from .common import percentile
from .speed import build, corpus, questions

K = 100
DEFAULT_OUT = Path("benchmarks/results/vector_options.json")


def _timed(fn: Callable[[np.ndarray], list[int]], queries: np.ndarray, exact: list[list[int]]) -> dict[str, float]:
    fn(queries[0])
    ms, r10, r100 = [], 0.0, 0.0
    for q, ex in zip(queries, exact):
        t = time.perf_counter()
        got = fn(q)
        ms.append((time.perf_counter() - t) * 1000)
        r10 += len(set(got[:10]) & set(ex[:10])) / 10
        r100 += len(set(got[:K]) & set(ex[:K])) / K
    n = len(queries)
    return {"p50_ms": percentile(ms, 0.5), "p95_ms": percentile(ms, 0.95), "recall@10": r10 / n, "recall@100": r100 / n}


def _rescore(conn: apsw.Connection, q: np.ndarray, rowids: list[int]) -> list[int]:
    blob = q.tobytes()
    scored = [
        (
            conn.execute(
                "SELECT vec_distance_cosine(embedding, ?) FROM memory_vectors WHERE rowid = ?", (blob, r)
            ).fetchone()[0],
            r,
        )
        for r in rowids
    ]
    return [r for _, r in sorted(scored)[:K]]


def _quantized_table(
    conn: apsw.Connection, name: str, kind: str, matrix: np.ndarray, rowids: np.ndarray, scale: np.ndarray | None
) -> None:
    conn.execute(f"CREATE VIRTUAL TABLE {name} USING vec0(embedding {kind}[{matrix.shape[1]}])")
    with conn:
        for r, v in zip(rowids.tolist(), matrix):
            if kind == "bit":
                blob = np.packbits(v > 0).tobytes()
                conn.execute(f"INSERT INTO {name}(rowid, embedding) VALUES (?, vec_bit(?))", (r, blob))
            else:
                blob = np.clip(np.round(v / scale), -127, 127).astype(np.int8).tobytes()
                conn.execute(f"INSERT INTO {name}(rowid, embedding) VALUES (?, vec_int8(?))", (r, blob))


def measure(db: Path, queries: np.ndarray) -> dict[str, Any]:
    conn = connect(db, 10_000)
    index = vectors.VectorIndex(queries.shape[1])
    vectors.single_threaded_blas()
    conn.execute("BEGIN")
    index._reload(conn, 0)
    conn.execute("COMMIT")
    matrix, rowids = index.matrix[: index.n], index.rowids[: index.n]
    mask = index.allowed(None, False)

    def vec0_float(q: np.ndarray) -> list[int]:
        return [
            r
            for r, _ in conn.execute(
                "SELECT rowid, distance FROM memory_vectors WHERE embedding MATCH ? AND k = ?", (q.tobytes(), K)
            )
        ]

    exact = [vec0_float(q) for q in queries]
    out: dict[str, Any] = {"n": int(index.n)}
    out["vec0 float"] = _timed(vec0_float, queries, exact) | {"memory_mb": 0.0}
    out["memory float32"] = _timed(lambda q: [r for r, _ in index.knn(q, K, mask)], queries, exact) | {
        "memory_mb": index.nbytes() / 2**20
    }
    out |= _bit_codes(conn, index, queries, exact)
    _quantized_table(conn, "opt_bits", "bit", matrix, rowids, None)
    out["vec0 bit + rescore"] = _timed(
        lambda q: _rescore(
            conn,
            q,
            [
                r
                for (r,) in conn.execute(
                    "SELECT rowid FROM opt_bits WHERE embedding MATCH vec_bit(?) AND k = 1000",
                    (np.packbits(q > 0).tobytes(),),
                )
            ],
        ),
        queries,
        exact,
    ) | {"memory_mb": 0.0}
    scale = np.abs(matrix).max(axis=0) / 127
    _quantized_table(conn, "opt_int8", "int8", matrix, rowids, scale)
    out["vec0 int8 + rescore"] = _timed(
        lambda q: _rescore(
            conn,
            q,
            [
                r
                for (r,) in conn.execute(
                    "SELECT rowid FROM opt_int8 WHERE embedding MATCH vec_int8(?) AND k = 300",
                    (np.clip(np.round(q / scale), -127, 127).astype(np.int8).tobytes(),),
                )
            ],
        ),
        queries,
        exact,
    ) | {"memory_mb": 0.0}
    out |= _partitions(conn, matrix, rowids, queries)
    conn.close()
    return out


def _bit_codes(
    conn: apsw.Connection, index: vectors.VectorIndex, queries: np.ndarray, exact: list[list[int]]
) -> dict[str, Any]:
    """Bit codes in memory, the 1,000 nearest by Hamming distance re-scored exactly, with the
    floats from the in-memory matrix or read in place from sqlite-vec's chunk blobs."""
    matrix, rowids = index.matrix[: index.n], index.rowids[: index.n]
    out: dict[str, Any] = {}
    codes = np.packbits(matrix > 0, axis=1)
    words = codes.view(np.uint64)

    def memory_bits(q: np.ndarray, m: int = 1000) -> list[int]:
        qw = np.packbits(q > 0).view(np.uint64)
        ham = np.bitwise_count(words ^ qw).sum(axis=1, dtype=np.uint16)
        cand = np.argpartition(ham, m)[:m]
        d = vectors.vec0_distances(matrix[cand], index.sq_norms[cand], q)
        return rowids[cand[np.lexsort((-rowids[cand], d))[:K]]].tolist()

    out["memory bits + rescore from the matrix"] = _timed(memory_bits, queries, exact) | {
        "memory_mb": (codes.nbytes + rowids.nbytes + matrix.nbytes + index.sq_norms.nbytes) / 2**20
    }
    where = {r: (c, o) for r, c, o in conn.execute("SELECT rowid, chunk_id, chunk_offset FROM memory_vectors_rowids")}
    chunk_of = np.array([where[int(r)][0] for r in rowids], dtype=np.int64)
    offset_of = np.array([where[int(r)][1] for r in rowids], dtype=np.int64)
    dim = matrix.shape[1]

    def bits_blob_rescore(q: np.ndarray, m: int = 1000) -> list[int]:
        qw = np.packbits(q > 0).view(np.uint64)
        ham = np.bitwise_count(words ^ qw).sum(axis=1, dtype=np.uint16)
        cand = np.argpartition(ham, m)[:m]
        buf = bytearray(4 * dim * len(cand))
        conn.execute("BEGIN")
        try:
            blobs: dict[int, Any] = {}
            for i, slot in enumerate(cand.tolist()):
                chunk = int(chunk_of[slot])
                blob = blobs.get(chunk)
                if blob is None:
                    blob = blobs[chunk] = conn.blob_open(
                        "main", "memory_vectors_vector_chunks00", "vectors", chunk, False
                    )
                blob.seek(int(offset_of[slot]) * 4 * dim)
                blob.read_into(buf, i * 4 * dim, 4 * dim)
            for blob in blobs.values():
                blob.close()
        finally:
            conn.execute("COMMIT")
        vecs = np.frombuffer(bytes(buf), dtype=np.float32).reshape(len(cand), dim)
        d = vectors.vec0_distances(vecs, vectors._sums_of_squares(vecs), q)
        return rowids[cand[np.lexsort((-rowids[cand], d))[:K]]].tolist()

    out["memory bits + rescore from sqlite-vec's blobs"] = _timed(bits_blob_rescore, queries, exact) | {
        "memory_mb": (codes.nbytes + rowids.nbytes + chunk_of.nbytes + offset_of.nbytes) / 2**20
    }
    return out


def _partitions(conn: apsw.Connection, matrix: np.ndarray, rowids: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    """The same vectors over 10 domains, a read in domain d0: partition key against metadata filter."""
    dim = matrix.shape[1]
    conn.execute(f"CREATE VIRTUAL TABLE opt_part USING vec0(domain text partition key, embedding float[{dim}])")
    conn.execute(f"CREATE VIRTUAL TABLE opt_meta USING vec0(embedding float[{dim}], domain text)")
    with conn:
        for i, (r, v) in enumerate(zip(rowids.tolist(), matrix)):
            d = f"d{i % 10}"
            conn.execute("INSERT INTO opt_part(rowid, domain, embedding) VALUES (?, ?, ?)", (r, d, v.tobytes()))
            conn.execute("INSERT INTO opt_meta(rowid, embedding, domain) VALUES (?, ?, ?)", (r, v.tobytes(), d))

    def meta(q: np.ndarray) -> list[int]:
        sql = "SELECT rowid FROM opt_meta WHERE embedding MATCH ? AND k = ? AND domain = 'd0'"
        return [r for (r,) in conn.execute(sql, (q.tobytes(), K))]

    def part(q: np.ndarray) -> list[int]:
        sql = "SELECT rowid FROM opt_part WHERE embedding MATCH ? AND k = ? AND domain = 'd0'"
        return [r for (r,) in conn.execute(sql, (q.tobytes(), K))]

    exact = [meta(q) for q in queries]
    return {
        "vec0 metadata filter, 1 of 10 domains": _timed(meta, queries, exact) | {"memory_mb": 0.0},
        "vec0 partitions, 1 of 10 domains": _timed(part, queries, exact) | {"memory_mb": 0.0},
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.vector_options",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, required=True, help="path to locomo_dev.json")
    p.add_argument("--n", type=int, default=100_000, help="memories in the store")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--stores", type=Path, help="reuse STORES/n<N>/memory.db (as benchmarks.speed --stores)")
    p.add_argument("--quick", action="store_true", help="CI size: N=2000, 20 queries")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    n, nq = (2000, 20) if a.quick else (a.n, a.queries)
    base = Settings(db=Path(tempfile.gettempdir()) / "unused.db")
    embedder = make_embedder(base.embed_model, base.model_cache_dir)
    qs = np.stack([embedder.embed_query(q) for q in questions(a.data)[:nq]])
    with tempfile.TemporaryDirectory(prefix="mnemo-vecopt-") as tmp:
        db = Path(tmp) / "memory.db"
        built = a.stores / f"n{n}" / "memory.db" if a.stores else None
        if built is not None and built.exists():
            shutil.copy(built, db)
        else:
            build(db, corpus(a.data, n), embedder)
        result = measure(db, qs)
    print(f"N={result['n']}, {nq} queries, k={K}: p50 / p95 ms, recall of sqlite-vec's exact top 10 / top 100, memory")
    for name, r in result.items():
        if isinstance(r, dict):
            print(
                f"  {name:<48} {r['p50_ms']:7.2f} {r['p95_ms']:7.2f}   {r['recall@10']:.3f} {r['recall@100']:.3f}   "
                f"{r['memory_mb']:7.1f} MB"
            )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
