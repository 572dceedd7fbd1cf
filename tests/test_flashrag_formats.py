"""FlashRAG split files ship as ``.jsonl``, ``.json`` (a JSON array) and ``.parquet``: all three
load into the same examples through coevo.qa.benchmarks (``load_benchmark`` finds each form)."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coevo.qa.benchmarks import BenchmarkError, benchmark_path, load_benchmark, load_qa_file

ROWS = [{"id": "test_0", "question": "who got the first nobel prize in physics", "golden_answers": ["Wilhelm Conrad Röntgen"]},
        {"id": "test_1", "question": "when is the next deadpool movie being released",
         "golden_answers": ["May 18, 2018", "2018"]},
        {"id": "test_2", "question": "", "golden_answers": ["x"]},  # malformed: no question
        {"id": "test_3", "question": "which mode is used for short wave broadcast service",
         "golden_answers": ["Olivia", "AM"]}]


def write(d, form):
    d.mkdir(parents=True, exist_ok=True)
    if form == "jsonl":
        (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    elif form == "json":
        (d / "test.json").write_text(json.dumps(ROWS, indent=4, ensure_ascii=False))
    else:
        pq.write_table(pa.Table.from_pylist(ROWS), d / "test.parquet")
    return d


@pytest.mark.parametrize("form", ["jsonl", "json", "parquet"])
def test_split_forms_load_alike(tmp_path, form):
    write(tmp_path / "nq", form)
    assert benchmark_path("nq", tmp_path).name == f"test.{form}"
    load = load_benchmark("nq", tmp_path)
    assert [(e.qid, e.question, e.golds) for e in load.examples] == [
        ("test_0", ROWS[0]["question"], ["Wilhelm Conrad Röntgen"]),
        ("test_1", ROWS[1]["question"], ["May 18, 2018", "2018"]),
        ("test_3", ROWS[3]["question"], ["Olivia", "AM"])]
    assert load.malformed == [(3 if form != "json" else 17, "no 'question' string")]


def test_jsonl_preferred_and_missing_names_all_tried(tmp_path):
    write(tmp_path / "nq", "parquet")
    write(tmp_path / "nq", "jsonl")
    assert benchmark_path("nq", tmp_path).name == "test.jsonl"
    with pytest.raises(BenchmarkError, match=r"test\.json, .*test\.parquet"):
        benchmark_path("hotpotqa", tmp_path)


def test_damaged_parquet_is_one_line(tmp_path):
    (tmp_path / "test.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(BenchmarkError, match="cannot read parquet file"):
        load_qa_file(tmp_path / "test.parquet", "nq")
