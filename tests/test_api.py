"""The Python API (`cosim.api`): its documented example, option checking, and results equal to
``cosim run``'s."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

import cosim.api as api
from cosim.cli import main
from cosim.errors import InputError

TRACE = api.trace("lublin_256.swf.gz")


def test_the_documented_example_runs_as_written():
    result = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 7 and result.failed == 0


def test_options_are_checked_and_typed_like_sweep_specs():
    opt = api.options({"workload": TRACE, "hosts": "64", "rca": "yield"}, hosts=32,
                      technique_params={"min_chunk": 4})
    assert opt.hosts == 32 and opt.rca == "yield" and opt.technique_params == {"min_chunk": "4"}
    with pytest.raises(InputError, match="field hostz: not a run option"):
        api.options(workload=TRACE, hostz=3)
    with pytest.raises(InputError, match="field hosts:"):
        api.options(workload=TRACE, hosts="many")
    with pytest.raises(InputError, match="field out: not a run option"):
        api.options(workload=TRACE, out="somewhere")
    with pytest.raises(InputError, match="needs a workload"):
        api.options(batch="easy")
    with pytest.raises(InputError, match="no built-in trace 'nope.swf'"):
        api.trace("nope.swf")


def test_a_simulated_run_writes_what_cosim_run_writes(tmp_path, capsys):
    result = api.simulate(workload=TRACE, batch="easy", hosts=128, seed=3, warn=[].append)
    out = result.write(tmp_path / "api", trace="batch", plots=True)
    assert main(["run", "--workload", TRACE, "--batch", "easy", "--hosts", "128", "--seed",
                 "3", "--out", str(tmp_path / "cli"), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for name in ("jobs.csv", "schedule.swf"):
        assert (out / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    written = json.loads((out / "summary.json").read_text())
    for key in ("jobs", "utilization", "mean_wait_s", "loss_of_capacity", "hosts"):
        assert written[key] == cli[key] == result.summary[key]
    assert (out / "results.h5").is_file() and (out / "trace" / "traces.otf2").is_file()
    assert (out / "utilization.png").is_file() and written["plots"]
    assert len(result.jobs) == 10_000 and result.jobs["id"].tolist() == sorted(
        result.jobs["id"].tolist())
    times, busy = result.series()["busy_hosts"]
    assert np.all(np.diff(times) > 0) and busy.max() <= 128
    assert result.workers.size == 0 and result.chunks is None


def test_tables_as_pandas_frames_with_text_as_str():
    pd = pytest.importorskip("pandas", reason="pandas is in the test extra; without it "
                                              "to_pandas raises ImportError with a hint")
    said: list[str] = []
    result = api.simulate(workload=TRACE, hosts=64, warn=said.append)
    assert said[-1].endswith("jobs rejected in all (larger than 64 hosts)")
    jobs = result.to_pandas("jobs")
    assert isinstance(jobs, pd.DataFrame) and len(jobs) == len(result.jobs)
    assert jobs["status"].map(type).eq(str).all() and set(jobs["status"]) <= {
        "completed", "killed", "rejected"}
    assert np.array_equal(jobs["wait_s"].to_numpy(), result.jobs["wait_s"], equal_nan=True)
    assert len(result.to_pandas("allocations")) == len(result.allocations)
    with pytest.raises(InputError, match="no chunk table"):
        result.to_pandas("chunks")
    with pytest.raises(InputError, match="unknown table"):
        result.to_pandas("nope")


def test_a_results_file_reads_back_as_frames_with_text_as_str(tmp_path):
    pytest.importorskip("pandas", reason="pandas is in the test extra")
    result = api.simulate(workload=TRACE, hosts=128, warn=[].append)
    out = result.write(tmp_path / "r")
    (tables,) = api.read(out / "results.h5").values()
    back = api.frame(tables, "jobs")
    assert back.equals(result.to_pandas("jobs"))
    assert set(back["status"]) <= {"completed", "killed", "rejected"}
    assert api.frame(tables, "allocations")["role"].dtype.kind in "iu"


def test_run_options_take_keyword_changes_and_a_full_trace_needs_its_chunks(tmp_path):
    base = api.options(workload=api.trace("esp-mandelbrot.swf"), hosts=256)
    small = api.simulate(base, seed=3, warn=[].append)
    assert small.summary["hosts"] == 256 and small.record.opt.seed == 3
    with pytest.raises(InputError, match="field trace: a full trace needs the apps' chunks"):
        small.write(tmp_path / "w", trace="full")
    assert not (tmp_path / "w").exists()  # nothing written
    small.write(tmp_path / "b", trace="batch")
    assert (tmp_path / "b" / "trace" / "traces.otf2").is_file()


def test_warnings_go_to_the_callback_or_to_python_warnings(tmp_path):
    swf = tmp_path / "w.swf"
    swf.write_text("; MaxNodes: 4\n1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    said: list[str] = []
    api.simulate(workload=str(swf), hosts=6, warn=said.append)
    assert len(said) == 1 and "header describes a machine of 4 hosts" in said[0]
    with pytest.warns(UserWarning, match="header describes"):
        api.simulate(workload=str(swf), hosts=6)
