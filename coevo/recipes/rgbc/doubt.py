"""Human check of the reference-in-doubt bucket (RGBC proposal §method step 2; docs/rgbc.md).

``export``: a blind sample for human labelling. It mixes the bucket (nu = 0 and a stable mode) with
control tasks from the rest of nu's domain, in random order, each row showing the question and the
two candidate answers (reference and mode) in random order, so the labeller sees neither nu, nor
the stratum, nor which answer is the reference. The key (stratum sizes, which answer is which)
goes to a separate file.

``import``: the labeller's ``correct_answer`` per id gives, for the mode anchor,
precision = share of bucket tasks whose mode is the right answer, and recall = share of the
wrong references in nu's domain that the bucket catches with the right mode (strata weighted by
their sampling fractions). The gate (P >= 0.80 and R >= 0.75 by default) decides whether the
bucket may enter training (``rgbc.doubt_policy=anchor``) or stays diagnostic (``drop``).
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from coevo.ledger import views
from coevo.ledger.store import open_run_ledger, Ledger, LedgerError


class DoubtError(Exception):
    pass


def _open(run_dir: Path) -> Ledger:
    try:
        return open_run_ledger(run_dir)
    except LedgerError as e:
        raise DoubtError(str(e)) from None


def _config(led: Ledger) -> dict:
    import yaml

    return yaml.safe_load(views.run_info(led)["config_yaml"] or "{}") or {}


def export_doubt(run_dir: Path, n: int = 200, seed: int = 0) -> dict:
    """Write ``doubt/export.csv``, ``doubt/export.jsonl`` (for the labeller) and ``doubt/key.json``."""
    if n < 1:
        raise DoubtError("--n must be at least 1")
    led = _open(run_dir)
    try:
        run_id = views.run_info(led)["run_id"]
        pool = views.doubt_pool(led, run_id)
    finally:
        led.close()
    if not pool:
        raise DoubtError(f"{run_dir}: no task with nu defined (no screen-bearing task with a confirm group)")
    rng = random.Random(seed)
    bucket = [r for r in pool if r["in_doubt"]]
    control = [r for r in pool if not r["in_doubt"]]
    n_b = min(len(bucket), max(n - len(control), (n + 1) // 2))
    n_c = min(len(control), n - n_b)
    picked = [("bucket", r) for r in rng.sample(bucket, n_b)] + [("control", r) for r in rng.sample(control, n_c)]
    rng.shuffle(picked)
    out = Path(run_dir) / "doubt"
    out.mkdir(exist_ok=True)
    rows, key = [], {}
    for i, (stratum, r) in enumerate(picked):
        rid = f"d{i:04d}"
        pair = [("reference", r["reference"]), ("mode", r["mode_answer"])]
        rng.shuffle(pair)
        rows.append({"id": rid, "question": r["question"], "answer_1": pair[0][1], "answer_2": pair[1][1],
                     "correct_answer": ""})
        key[rid] = {"task_id": r["task_id"], "step": r["step"], "stratum": stratum, "reference": r["reference"],
                    "mode": r["mode_answer"], "order": [pair[0][0], pair[1][0]]}
    with open(out / "export.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["id", "question", "answer_1", "answer_2", "correct_answer"])
        wr.writeheader()
        wr.writerows(rows)
    with open(out / "export.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    strata = {"bucket": {"N": len(bucket), "n": n_b}, "control": {"N": len(control), "n": n_c}}
    (out / "key.json").write_text(json.dumps({"run_id": run_id, "seed": seed, "strata": strata, "items": key},
                                             indent=2))
    return {"exported": len(rows), "strata": strata, "csv": str(out / "export.csv"),
            "jsonl": str(out / "export.jsonl"), "key": str(out / "key.json")}


def _norm(x) -> str | None:
    s = "" if x is None else str(x).strip()
    if not s:
        return None
    try:
        return str(int(s))
    except ValueError:
        return s


def anchor_precision_recall(items: list[dict], strata: dict) -> dict:
    """Precision and recall of the mode anchor from labelled items (dicts with stratum, reference,
    mode, human). Strata are weighted by N / n (stratified estimate of the recall)."""
    w = {s: (v["N"] / v["n"] if v["n"] else 0.0) for s, v in strata.items()}
    lab = [it for it in items if it["human"] is not None]
    b = [it for it in lab if it["stratum"] == "bucket"]
    tp_b = sum(1 for it in b if it["mode"] == it["human"])
    precision = tp_b / len(b) if b else None
    caught = sum(w["bucket"] for it in b if it["reference"] != it["human"] and it["mode"] == it["human"])
    wrong = sum(w[it["stratum"]] for it in lab if it["reference"] != it["human"])
    recall = caught / wrong if wrong > 0 else None
    return {"n_labelled": len(lab), "n_bucket_labelled": len(b), "precision": precision, "recall": recall,
            "bucket_mode_right": tp_b, "wrong_reference_weighted": wrong,
            "wrong_reference_labelled": sum(1 for it in lab if it["reference"] != it["human"])}


def import_labels(run_dir: Path, labels: Path, min_precision: float | None = None,
                  min_recall: float | None = None) -> dict:
    """Score the mode anchor against human labels and apply the gate; writes ``doubt/gate.json``."""
    kpath = Path(run_dir) / "doubt" / "key.json"
    if not kpath.is_file():
        raise DoubtError(f"no export in {run_dir} (run `coevo doubt export {run_dir}` first)")
    if not Path(labels).is_file():
        raise DoubtError(f"labels file not found: {labels}")
    key = json.loads(kpath.read_text())
    led = _open(run_dir)
    try:
        rc = _config(led).get("rgbc", {})
    finally:
        led.close()
    p_min = rc.get("doubt_gate_precision", 0.80) if min_precision is None else min_precision
    r_min = rc.get("doubt_gate_recall", 0.75) if min_recall is None else min_recall
    with open(labels, newline="") as f:
        rd = csv.DictReader(f)
        if rd.fieldnames is None or "id" not in rd.fieldnames or "correct_answer" not in rd.fieldnames:
            raise DoubtError(f"{labels}: expected a CSV with columns id and correct_answer")
        got = {r["id"].strip(): _norm(r["correct_answer"]) for r in rd}
    unknown = sorted(set(got) - set(key["items"]))
    if unknown:
        raise DoubtError(f"{labels}: {len(unknown)} ids not in the export (first: {unknown[0]})")
    items = [{"stratum": v["stratum"], "reference": _norm(v["reference"]), "mode": _norm(v["mode"]),
              "human": got.get(k)} for k, v in key["items"].items()]
    res = anchor_precision_recall(items, key["strata"])
    passed = (res["precision"] is not None and res["recall"] is not None
              and res["precision"] >= p_min and res["recall"] >= r_min)
    res.update({"min_precision": p_min, "min_recall": r_min, "gate_passed": passed,
                "decision": ("the bucket may enter training: rgbc.doubt_policy=anchor" if passed else
                             "the bucket stays diagnostic: rgbc.doubt_policy=drop"),
                "strata": key["strata"]})
    (Path(run_dir) / "doubt" / "gate.json").write_text(json.dumps(res, indent=2))
    return res
