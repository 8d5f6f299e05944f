"""Batsim interop (`cosim.workload.batsim`): JSON workloads in (delay profiles as trace jobs,
others refused by name), ``batsim_jobs.csv`` out with Batsim's columns, read by evalys."""

from __future__ import annotations

import csv
import json

import pytest

from cosim.cli import main
from cosim.errors import InputError
from cosim.experiment import RunOptions, execute, prepare
from cosim.workload.batsim import BATSIM_COLUMNS, read_batsim

WORKLOAD = {
    "nb_res": 4,
    "jobs": [
        {"id": "1", "subtime": 0, "res": 4, "profile": "d100", "walltime": 200},
        {"id": 2, "subtime": 1, "res": 1, "profile": "d10"},
        {"id": "w0!3", "subtime": 2.5, "res": 2, "profile": "d10", "walltime": 5},
        {"id": 4, "subtime": 3, "res": 8, "profile": "d10"},
    ],
    "profiles": {"d100": {"type": "delay", "delay": 100},
                 "d10": {"type": "delay", "delay": 10}},
}


def _write(tmp_path, doc, name="w.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=1))
    return str(path)


def test_delay_profiles_are_trace_jobs_on_the_machine_of_nb_res(tmp_path):
    said: list[str] = []
    w = read_batsim(_write(tmp_path, WORKLOAD), max_hosts=4, warn=said.append)
    assert [(j.id, j.submit, j.hosts, j.runtime, j.walltime, j.category) for j in w.jobs] == [
        (1, 0, 4, 100 * 10**9, 200 * 10**9, "d100"),
        (2, 10**9, 1, 10 * 10**9, 10 * 10**9, "d10"),  # no walltime: its run time
        (3, 2_500_000_000, 2, 10 * 10**9, 5 * 10**9, "d10")]
    assert [j.id for j in w.rejected] == [4] and "job 4 needs 8 hosts" in said[0]
    p = prepare(RunOptions(workload=_write(tmp_path, WORKLOAD, "x.json")))
    assert p.n_hosts == 4  # nb_res sizes the replay


@pytest.mark.parametrize("change, problem", [
    (lambda d: d["profiles"].update(d10={"type": "parallel_homogeneous", "cpu": 1e9,
                                         "com": 0}),
     "job 2: profile 'd10' is of type 'parallel_homogeneous'; cosim replays delay profiles"),
    (lambda d: d["jobs"][0].update(profile="nope"), "job 1: profile 'nope' is not defined"),
    (lambda d: d["jobs"][1].update(id="two"), "field jobs[1].id: jobs[1]: id 'two' is not an "
                                              "integer"),
    (lambda d: d["jobs"][1].update(id=1), "job id 1 appears twice"),
    (lambda d: d["jobs"][0].pop("res"), "job 1: no 'res'"),
    (lambda d: d["jobs"][0].update(res=0), "jobs[0].res must be a positive integer"),
    (lambda d: d["jobs"][0].update(subtime=-1), "jobs[0].subtime must be a number of seconds"),
    (lambda d: d.update(nb_res="many"), "nb_res must be a positive integer"),
])
def test_bad_workloads_are_one_line_naming_the_job(tmp_path, change, problem):
    doc = json.loads(json.dumps(WORKLOAD))
    change(doc)
    with pytest.raises(InputError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        read_batsim(_write(tmp_path, doc))


def test_invalid_json_names_its_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text('{\n "nb_res": 4,\n "jobs": [\n')
    assert main(["run", "--workload", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cosim: error: {path}:4: not valid JSON") and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_batsim_jobs_csv_has_batsims_columns_and_semantics(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--workload", _write(tmp_path, WORKLOAD), "--out", str(out),
                 "-q"]) == 0
    rows = list(csv.DictReader((out / "batsim_jobs.csv").open()))
    assert tuple(rows[0]) == BATSIM_COLUMNS
    by_id = {r["job_id"]: r for r in rows}
    assert by_id["1"] | {} == {
        "job_id": "1", "workload_name": "w", "profile": "d100", "submission_time": "0",
        "requested_number_of_resources": "4", "requested_time": "200", "success": "1",
        "final_state": "COMPLETED_SUCCESSFULLY", "starting_time": "0", "execution_time": "100",
        "finish_time": "100", "waiting_time": "0", "turnaround_time": "100", "stretch": "1.0",
        "allocated_resources": "0-3", "consumed_energy": "-1", "metadata": ""}
    assert by_id["3"]["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert by_id["3"]["success"] == "0" and by_id["3"]["execution_time"] == "5"
    assert by_id["3"]["allocated_resources"] == "1-2" and by_id["3"]["waiting_time"] == "97.5"
    assert by_id["4"]["final_state"] == "REJECTED" and by_id["4"]["starting_time"] == "-1"
    assert by_id["4"]["allocated_resources"] == ""


# evalys's own `DataFrame.rename(inplace=True)` (evalys/jobset.py), deprecated by pandas 3.1:
# a warning about evalys, not about the file cosim wrote
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.rename")
def test_evalys_reads_and_plots_the_schedule(tmp_path):
    evalys = pytest.importorskip("evalys.jobset", reason="evalys is in the test extra")
    import matplotlib

    matplotlib.use("Agg")
    from cosim.paths import TRACES_DIR

    out = tmp_path / "kth"
    trace = TRACES_DIR / "HPC2N-sample-3171jobs_from-alea.swf.gz"
    rec = execute(RunOptions(workload=str(trace)))
    from cosim.experiment import write_outputs

    write_outputs(rec, out)
    js = evalys.JobSet.from_csv(str(out / "batsim_jobs.csv"))
    assert len(js.df) == rec.summary["jobs"] and js.MaxProcs == 240
    assert (js.df["waiting_time"] >= 0).all()
    # its load never passes the machine, ends at 0, and its area is the jobs' host-time
    load = js.utilisation["load"]
    assert load.max() <= 240 and load.iloc[-1] == 0
    ran = js.df[js.df["starting_time"] >= 0]
    assert js.utilisation["area"].sum() == pytest.approx(
        (ran["execution_time"] * ran["requested_number_of_resources"]).sum())
    import matplotlib.pyplot as plt

    js.plot()  # its load and queue (with_details adds a Gantt chart of every job: slow)
    plt.gcf().savefig(tmp_path / "evalys.png")
    plt.close("all")
    assert (tmp_path / "evalys.png").stat().st_size > 10_000


def test_a_resource_is_a_host_with_all_its_cores(tmp_path):
    """On hosts of 2 cores (tiny8x2), a job asking for 4 resources gets 4 hosts (8 PEs), and
    batsim_jobs.csv gives back the 4 it asked for."""
    doc = {"nb_res": 8, "jobs": [{"id": 1, "subtime": 0, "res": 4, "profile": "d"}],
           "profiles": {"d": {"type": "delay", "delay": 5}}}
    (job,) = read_batsim(_write(tmp_path, doc), cores_per_host=2).jobs
    assert (job.hosts, job.pes) == (4, 8)
    out = tmp_path / "run"
    assert main(["run", "--workload", _write(tmp_path, doc, "m.json"), "--platform", "tiny8x2",
                 "--out", str(out), "-q"]) == 0
    (row,) = csv.DictReader((out / "batsim_jobs.csv").open())
    assert row["requested_number_of_resources"] == "4" and row["allocated_resources"] == "0-3"
