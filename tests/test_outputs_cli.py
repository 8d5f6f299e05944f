"""The outputs of ``cosim run`` as a user gets them: results.h5, the OTF2 trace, the plots,
and ``cosim report`` / ``cosim plot`` on the file; bad files give one line and exit 2.

One co-simulated run of a 16-host ESP-Mandelbrot workload (small images) is shared by the
tests of this module.
"""

from __future__ import annotations

import json

import pytest

from cosim.cli import main
from cosim.output.hdf5 import read_provenance, read_results
from cosim.runner import EXECUTION_STATS
from cosim.testing.tracecheck import check_trace

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def esp16(tmp_path_factory):
    d = tmp_path_factory.mktemp("esp")
    path = d / "esp16.swf"
    assert main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16", "--seed", "1",
                 "-o", str(path)]) == 0
    return path


def run(esp16, out, *extra):
    return main(["run", "--workload", str(esp16), "--hosts", "16", "--technique", "GSS",
                 "--rca", "yield", "--app-overrides", "width=48", "--out", str(out),
                 "--json", *extra])


@pytest.fixture(scope="module")
def full_run(esp16, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "gss"
    assert run(esp16, out, "--trace", "full", "--plots", "--chunks") == 0
    return out


def test_a_run_writes_every_output(full_run):
    summary = json.loads((full_run / "summary.json").read_text())
    assert summary["results"] == str(full_run / "results.h5")
    (tables,) = read_results(full_run / "results.h5")
    assert tables.run_id == "gss"
    assert tables.config["technique"] == "GSS" and tables.config["rca"] == "yield"
    assert tables.metrics["makespan_s"] == summary["makespan_s"]
    # a reproducible file: what depends on the execution is in summary.json only
    assert tables.stats == summary["stats"]
    assert set(summary["execution"]) == set(EXECUTION_STATS)
    assert not set(EXECUTION_STATS) & set(tables.stats)
    assert tables.chunks is not None and len(tables.chunks) == summary["stats"]["chunk_events"]
    assert "command" in read_provenance(full_run / "results.h5")
    # the trace passes the semantic checker and has one chunk Enter per chunk row
    trace = check_trace(full_run / "trace")
    assert trace.enters["compute chunk"] == len(tables.chunks)
    assert summary["trace"]["events"] == trace.events
    names = ("utilization.png", "gantt-gss.png", "distributions.png", "imbalance.png")
    for name in names:
        data = (full_run / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000
    assert sorted(summary["plots"]) == sorted(str(full_run / n) for n in names)


def test_rerunning_gives_the_same_results(esp16, full_run, tmp_path, capsys):
    assert run(esp16, tmp_path / "gss") == 0
    capsys.readouterr()
    (a,) = read_results(full_run / "results.h5")
    (b,) = read_results(tmp_path / "gss" / "results.h5")
    for name in ("jobs", "allocations", "workers"):
        x, y = getattr(a, name), getattr(b, name)  # bit for bit (NaN values included)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert dict(a.metrics) == dict(b.metrics) and dict(a.stats) == dict(b.stats)
    assert b.chunks is None  # chunk tables only with --chunks
    assert not (tmp_path / "gss" / "trace").exists()  # no trace unless asked (not main job)


def test_report_and_plot_commands(full_run, tmp_path, capsys):
    capsys.readouterr()
    assert main(["report", str(full_run / "results.h5")]) == 0
    table = capsys.readouterr().out
    assert "gss" in table and "GSS" in table and "makespan" in table
    assert main(["report", str(full_run / "results.h5"), "--csv"]) == 0
    head, row = capsys.readouterr().out.strip().splitlines()
    assert head.startswith("run_id,") and row.startswith("gss,")
    assert main(["plot", str(full_run / "results.h5"), "--out", str(tmp_path / "p")]) == 0
    written = capsys.readouterr().out.split()
    assert [p.split("/")[-1] for p in written] == ["utilization.png", "gantt-gss.png",
                                                    "distributions.png", "imbalance.png"]
    assert all((tmp_path / "p").joinpath(p.split("/")[-1]).exists() for p in written)


@pytest.mark.parametrize("content", [None, b"not an hdf5 file"])
def test_bad_results_file_is_one_line_exit_2(tmp_path, capsys, content):
    path = tmp_path / "results.h5"
    if content is not None:
        path.write_bytes(content)
    for argv in (["report", str(path)], ["plot", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0] and "Traceback" not in err[0]


def test_unknown_trace_level_is_refused(esp16, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(esp16, tmp_path / "x", "--trace", "everything")
    assert exc.value.code == 2


# -- jobs.csv columns and a malleable run ------------------------------------------------

JOBS_COLUMNS = ["job_id", "submit_s", "start_s", "end_s", "hosts", "pes", "status", "wait_s",
                "walltime_s", "runtime_s", "category", "app", "host_list", "yielded", "lent",
                "borrowed", "kind", "shrinks", "expands", "pe_seconds", "value", "energy_j",
                "power"]


def _csv(path):
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_jobs_csv_has_the_malleability_columns_last(full_run):
    rows = _csv(full_run / "jobs.csv")
    assert list(rows[0]) == JOBS_COLUMNS  # the old columns keep their positions
    (tables,) = read_results(full_run / "results.h5")
    j = tables.jobs
    assert [r["kind"] for r in rows] == [k.decode() for k in j["kind"]]
    assert all(r["shrinks"] == r["expands"] == "0" for r in rows)
    assert [float(r["pe_seconds"]) for r in rows] == j["pe_seconds"].tolist()


@pytest.fixture(scope="module")
def malleable_run(tmp_path_factory):
    import numpy as np

    from cosim.testing.workloads import lublin_like

    d = tmp_path_factory.mktemp("mall")
    swf = d / "small.swf"
    jobs = lublin_like(40, 8, np.random.default_rng(4), load=0.9, cores=2)
    swf.write_text("".join(
        f"{j.id} {j.submit // 10**9} -1 {j.runtime // 10**9} {j.pes} -1 -1 {j.pes} "
        f"{j.walltime // 10**9} -1 1 1 1 1 1 1 -1 -1\n" for j in jobs))
    out = d / "equi"
    assert main(["run", "--workload", str(swf), "--platform", "tiny8x2", "--malleable",
                 "equi", "--malleable-fraction", "1", "--trace", "batch", "--plots",
                 "--out", str(out), "--json"]) == 0
    return out


def test_a_malleable_run_writes_its_resizes_everywhere(malleable_run, capsys):
    capsys.readouterr()
    summary = json.loads((malleable_run / "summary.json").read_text())
    rows = _csv(malleable_run / "jobs.csv")
    assert list(rows[0]) == JOBS_COLUMNS
    assert {r["kind"] for r in rows} == {"malleable"}
    shrinks = sum(int(r["shrinks"]) for r in rows)
    expands = sum(int(r["expands"]) for r in rows)
    assert shrinks > 0 and expands > 0
    assert (shrinks, expands) == (summary["stats"]["shrinks"], summary["stats"]["expands"])
    (tables,) = read_results(malleable_run / "results.h5")
    assert tables.jobs["shrinks"].sum() == shrinks and tables.jobs["expands"].sum() == expands
    assert [float(r["pe_seconds"]) for r in rows] == tables.jobs["pe_seconds"].tolist()
    assert (tables.allocations["core"] > 0).any()  # PE-level: hosts shared
    trace = check_trace(malleable_run / "trace")
    assert summary["trace"]["events"] == trace.events
    assert trace.max_depth == 1  # level batch: the resizes are counter samples
    for name in ("utilization.png", "gantt-equi.png"):
        assert (malleable_run / name).read_bytes().startswith(PNG)
