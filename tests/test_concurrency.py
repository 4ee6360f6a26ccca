"""Several processes on one database (a SQLite file, a PostgreSQL database): no lost update, no
locking error surfaces."""

from __future__ import annotations

import multiprocessing as mp
import random

import pytest

from mnemo_mcp.config import Settings
from mnemo_mcp.core.rules import delta_rule
from mnemo_mcp.embedding import HashEmbedder
from mnemo_mcp.service import MemoryService

SHARED = ("shared memory one", "shared memory two")


def _worker(db: str, seed: int, rounds: int, errors) -> None:
    rng = random.Random(seed)
    svc = MemoryService(Settings(db=db), HashEmbedder())
    try:
        ids = [svc.write(text).id for text in SHARED]
        for i in range(rounds):
            r = svc.read("shared memory", top_k=2)
            svc.feedback(ids, outcome=rng.choice([-1.0, -0.5, 0.5, 1.0]), read_id=r.read_id)
            svc.rate(ids[i % 2], rating=rng.choice([-1, 1]))
            svc.write(f"process {seed} note {i}", allow_duplicate=True)  # near-identical on purpose
    except Exception as err:  # reported to the parent: any error here fails the test
        errors.put(f"{seed}: {type(err).__name__}: {err}")
    finally:
        svc.close()


@pytest.mark.slow
def test_concurrent_processes_lose_no_feedback_rating_or_write(db):
    db = str(db)  # a file, or a PostgreSQL URL: four processes on it either way
    procs, rounds = 4, 25
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(db, seed, rounds, errors)) for seed in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
        assert w.exitcode == 0
    assert errors.empty(), errors.get()

    svc = MemoryService(Settings(db=db), HashEmbedder())
    assert svc.stats().total == len(SHARED) + procs * rounds
    shared_ids = [svc.read(text, top_k=1, record=False).items[0].id for text in SHARED]
    with svc.store.db.read():
        for mid in shared_ids:
            row = svc.store.get(mid)
            events = svc.store.feedback_events(mid)
            assert row["feedback_count"] == len(events) == procs * rounds
            # Every event starts from the valence the previous one left: no interleaving.
            value = 0.0
            for e in events:
                assert e["valence_before"] == pytest.approx(value)
                value = delta_rule(value, e["outcome"], e["rate"])
            assert row["valence"] == pytest.approx(value)
    total_ratings = sum(svc.quality(mid).rating_count for mid in shared_ids)
    assert total_ratings == procs * rounds
    svc.close()
