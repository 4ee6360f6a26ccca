"""How the prompt hook's relevance floor trades silence against noise, on LoCoMo.

The hook injects the top `MNEMO_INJECT_TOP_K` memories of a keyword-only read (no model in a hook
process) whose relevance reaches `MNEMO_INJECT_MIN_RELEVANCE`. Each category 1-4 question is a
prompt; its evidence turns are what would have helped. Per floor: the share of prompts that get
any injection, the share of injected memories that are evidence (precision), and the share of
prompts with at least one evidence memory injected. Tune on conv-26 and conv-30, report the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from mnemo_mcp.config import Settings
from mnemo_mcp.embedding import FastEmbedEmbedder
from mnemo_mcp.service import MemoryService

from .locomo import load_locomo

FLOORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
DEFAULT_OUT = Path("benchmarks/results/injection_floor.json")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.injection_floor",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one conversation, 40 questions")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = p.parse_args(argv)
    convs = load_locomo(a.data)
    if a.quick:
        convs = convs[1:2]
    embedder = FastEmbedEmbedder()
    # per split, per floor: [prompts, prompts injected, injected items, evidence items, prompts with evidence]
    stats: dict[str, dict[float, list[int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            svc = MemoryService(Settings(db=Path(tmp) / f"{conv.sample_id}.db"), embedder)
            memory_of = dict(
                zip(
                    (t.dia_id for t in conv.turns),
                    (
                        r.id
                        for r in svc.write_many([{"content": t.content, "allow_duplicate": True} for t in conv.turns])
                    ),
                )
            )
            questions = [q for q in conv.questions if q.category in (1, 2, 3, 4)][: 40 if a.quick else None]
            per = stats.setdefault(conv.split, {f: [0, 0, 0, 0, 0] for f in FLOORS})
            for q in questions:
                gold = {memory_of[d] for d in q.evidence}
                items = svc.read(q.question, top_k=a.top_k, keyword_only=True, record=False).items
                for floor in FLOORS:
                    shown = [it for it in items if it.relevance >= floor]
                    hits = sum(it.id in gold for it in shown)
                    row = per[floor]
                    row[0] += 1
                    row[1] += bool(shown)
                    row[2] += len(shown)
                    row[3] += hits
                    row[4] += hits > 0
            svc.close()
    print(f"keyword-only injection, top {a.top_k}, LoCoMo categories 1-4")
    print(f"{'split':6} {'floor':>5} {'prompts':>8} {'injected':>9} {'precision':>10} {'helped':>7}")
    out = {}
    for split, per in stats.items():
        for floor, (n, injected, items, hits, helped) in per.items():
            r = {
                "prompts": n,
                "injected_share": injected / n,
                "precision": hits / items if items else 0.0,
                "helped_share": helped / n,
            }
            out.setdefault(split, {})[str(floor)] = r
            print(
                f"{split:6} {floor:>5.1f} {n:>8} {r['injected_share']:>9.2f} {r['precision']:>10.3f} "
                f"{r['helped_share']:>7.2f}"
            )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"benchmark": "injection_floor", "top_k": a.top_k, "results": out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
