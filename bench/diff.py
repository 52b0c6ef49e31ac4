"""Two evaluation runs compared question by question (`topica eval diff`).

A change to the ranking moves a few questions each way; the means hide which. Given two
runs' JSON (`eval locomo|beam --json`, or `results.json` of `--out`), each question
both runs answered is matched by its conversation and text, and for every budget the
method's recall_all (or its key-sentence view) is compared: the mean of each run over
the matched questions, the questions won and lost, and which.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

VIEWS = {"all": "recall_all", "key": "recall_key"}


def keyed(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, int], Mapping[str, Any]]:
    """Records by (conversation, question, how many times it was asked before)."""
    seen: Counter = Counter()
    out = {}
    for record in records:
        asked = (record["conversation"], record["question"])
        out[(*asked, seen[asked])] = record
        seen[asked] += 1
    return out


def diff_runs(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    method: str = "topica",
    view: str = "all",
    before_method: str | None = None,
) -> dict[str, Any]:
    """`method`'s recall in both runs over the questions both answered, by budget; with
    `before_method`, that method's in the `before` run against `method`'s in `after`
    (one run given twice: where a baseline recalls what Topica does not).

    Raises ValueError when a run has no per-question records (`questions`) or malformed
    ones, or its method answered none of them."""
    field = VIEWS[view]
    old_method = before_method or method
    sides = []
    for name, run, wanted in (("before", before, old_method), ("after", after, method)):
        if "questions" not in run:
            raise ValueError(f"the {name} run has no per-question records")
        try:
            sides.append(keyed([r for r in run["questions"] if wanted in r[field]]))
        except (KeyError, TypeError):
            raise ValueError(f"the {name} run's per-question records are malformed") from None
    old, new = sides
    if not old or not new:
        raise ValueError(f"no questions answered by {old_method} and {method} in the runs")
    common = [key for key in old if key in new]
    budgets = sorted({b for key in common for b in old[key][field][old_method]}, key=int)
    sides_of = (old_method, method)
    rows = []
    for budget in budgets:
        pairs = [
            (key, old[key][field][old_method].get(budget), new[key][field][method].get(budget))
            for key in common
        ]
        pairs = [(key, a, b) for key, a, b in pairs if a is not None and b is not None]
        rows.append(
            {
                "budget": int(budget),
                "questions": len(pairs),
                "before": sum(a for _, a, _ in pairs) / len(pairs) if pairs else None,
                "after": sum(b for _, _, b in pairs) / len(pairs) if pairs else None,
                "won": [moved(old[key], new[key], a, b, sides_of) for key, a, b in pairs if b > a],
                "lost": [moved(old[key], new[key], a, b, sides_of) for key, a, b in pairs if b < a],
            }
        )
    return {
        "method": method,
        "before_method": old_method,
        "view": field,
        "matched": len(common),
        "only_before": len(old) - len(common),
        "only_after": len(new) - len(common),
        "budgets": rows,
        "by_category": by_category(rows),
    }


def moved(
    record: Mapping[str, Any],
    later: Mapping[str, Any],
    before: float,
    after: float,
    methods: tuple[str, str],
) -> dict[str, Any]:
    """A question that moved, with its evidence's places in each run's order where both
    runs recorded them (`bench.scoring.evidence_places`; absent in older runs)."""
    out = {
        "conversation": record["conversation"],
        "question": record["question"],
        "category": record["category"],
        "before": before,
        "after": after,
    }
    recorded = [run.get("evidence_places") for run in (record, later)]
    places = [
        found.get(name) if isinstance(found, Mapping) else None
        for found, name in zip(recorded, methods, strict=True)
    ]
    if all(isinstance(p, Mapping) for p in places):
        out["places"] = {"before": dict(places[0]), "after": dict(places[1])}
    return out


def places_text(places: Mapping[str, Mapping[str, int | None]]) -> str:
    """' · evidence at 3, 41 → 2, 12' (never offered: '–')."""

    def side(found: Mapping[str, int | None]) -> str:
        return ", ".join("–" if place is None else str(place) for place in found.values())

    return f" · evidence at {side(places['before'])} → {side(places['after'])}"


def by_category(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """{budget: {category: questions won minus questions lost}} for the categories moved."""
    net: dict[str, dict[str, int]] = {}
    for row in rows:
        counts: dict[str, int] = defaultdict(int)
        for question in row["won"]:
            counts[str(question["category"])] += 1
        for question in row["lost"]:
            counts[str(question["category"])] -= 1
        net[str(row["budget"])] = {c: n for c, n in sorted(counts.items()) if n}
    return net


def show_diff(result: Mapping[str, Any], console: Console, listed: int = 10) -> None:
    """The table of budgets, then up to `listed` questions won and lost at each budget."""
    old, new = result["before_method"], result["method"]
    title = f"{new}: {result['view']} before → after, by budget"
    if old != new:
        title = f"{result['view']} of {old} (before) → {new} (after), by budget"
    table = Table(title=title)
    for column in ("budget", "questions", "before", "after", "won", "lost"):
        table.add_column(column, justify="right")
    for row in result["budgets"]:
        before, after = row["before"], row["after"]
        table.add_row(
            f"{row['budget']:,}",
            str(row["questions"]),
            "–" if before is None else f"{before:.3f}",
            "–" if after is None else f"{after:.3f}",
            str(len(row["won"])),
            str(len(row["lost"])),
        )
    console.print(table)
    if result["only_before"] or result["only_after"]:
        console.print(
            f"Not compared: {result['only_before']} questions only in the first run, "
            f"{result['only_after']} only in the second."
        )
    for row in result["budgets"]:
        for sign, questions in (("+", row["won"]), ("−", row["lost"])):
            for question in questions[:listed]:
                console.print(
                    f"{row['budget']:>6,} {sign} [{question['category']}] "
                    f"{question['conversation']}: {question['question']}"
                    + (places_text(question["places"]) if "places" in question else ""),
                    markup=False,
                    highlight=False,
                )
            if len(questions) > listed:
                console.print(f"{row['budget']:>6,} {sign} … {len(questions) - listed} more")
