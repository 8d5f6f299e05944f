"""Power caps from the command line: the options, the summary and files of a capped run,
power_beta in the inputs, one-line errors for bad power input (exit 2, nothing written), and
`cosim workload values`."""

from __future__ import annotations

import json

import pytest

from cosim.cli import main
from cosim.paths import PLATFORMS_DIR
from cosim.workload.swf import read_swf
from cosim.workload.value import read_values

NODES = str(PLATFORMS_DIR / "kumbhare2048-nodes.toml")
LINE = "{id} {submit} -1 {run} {n} -1 -1 {n} {wall} -1 1 -1 -1 {exe} -1 -1 -1 -1\n"


def _swf(tmp_path, header="; CosimApp: 1 value=4 soft=2 hard=6 power_beta=0.5\n", n=30):
    path = tmp_path / "p.swf"
    path.write_text("; MaxNodes: 8\n" + header + "".join(
        LINE.format(id=i, submit=7 * i, run=40 + 13 * i % 70, n=1 + i % 4,
                    wall=60 + 13 * i % 90, exe=1 + i % 2) for i in range(1, n + 1)))
    return path


def test_a_capped_run_from_the_command_line(tmp_path, capsys):
    swf = _swf(tmp_path)
    out = tmp_path / "o"
    assert main(["run", "--workload", str(swf), "--platform", NODES, "--hosts", "8",
                 "--priority", "vpt", "--power-cap", "0.55", "--power-dynamic", "--out",
                 str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["batch"] == "greedy" and s["power_strategy"] == "best" and s["power_dynamic"]
    assert s["power_cap_w"] == pytest.approx(0.55 * 8 * 230, abs=1e-3)
    assert 0 < s["mean_power_w"] <= s["peak_power_w"] <= s["power_cap_w"]
    assert s["energy_j"] > s["idle_energy_j"] == 0.0
    assert s["energy_per_value"] == pytest.approx(s["energy_j"] / s["productivity"])
    rows = (out / "jobs.csv").read_text().splitlines()
    head = rows[0].split(",")
    assert head[-3:] == ["value", "energy_j", "power"]
    done = [r.split(",") for r in rows[1:] if ",completed," in r]
    assert done and all(r[-1].split()[0].endswith(f"@{r[2]}") for r in done)
    ran = [r.split(",") for r in rows[1:] if ",completed," in r or ",killed," in r]
    assert sum(float(r[-2]) for r in ran) == pytest.approx(s["energy_j"], rel=1e-9)
    # power_beta from the CosimApp line reached the jobs
    assert {j.power_beta for j in read_swf(swf).jobs} == {0.5, None}


def test_watts_and_fractions(tmp_path, capsys):
    swf = _swf(tmp_path)
    for cap, watts in (("1012W", 1012.0), ("1.012kW", 1012.0), ("0.55", 0.55 * 1840)):
        assert main(["run", "--workload", str(swf), "--platform", NODES, "--hosts", "8",
                     "--priority", "vpe", "--power-cap", cap, "--power-strategy", "uniform",
                     "--out", str(tmp_path / cap), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["power_cap_w"] == pytest.approx(watts)


@pytest.mark.parametrize("args, problem", [
    (["--power-cap", "1.5"], "field power-cap: a fraction of the machine's maximal power"),
    (["--power-cap", "lots"], "field power-cap: expected a fraction (0.6) or watts"),
    (["--power-cap", "100W"], "field power-cap: 100 W is below what one host needs"),
    (["--power-strategy", "min"], "field power-cap: --power-strategy and --power-dynamic "
     "need a power cap"),
    (["--power-cap", "0.6", "--batch", "conservative", "--priority", "vpt"],
     "field batch: --priority vpt ranks by decaying values"),
    (["--power-cap", "0.6", "--rca", "yield"], "field power-cap: a power cap is not combined"),
    (["--power-cap", "0.6", "--platform", "ib256"], "field power: --power-cap needs a power "
     "table"),
])
def test_bad_power_input_is_one_line(tmp_path, capsys, args, problem):
    swf = _swf(tmp_path)
    base = ["run", "--workload", str(swf), "--hosts", "8", "--out", str(tmp_path / "o")]
    if "--platform" not in args:
        base += ["--platform", NODES]
    assert main(base + args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and problem in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_power_table_in_the_trace(tmp_path, capsys):
    swf = _swf(tmp_path, "; CosimApp: 1 power_table=60:2,115:1\n")
    jobs = {j.id: j for j in read_swf(swf).jobs}
    assert jobs[2].power_table == ((60.0, 2.0), (115.0, 1.0)) and jobs[1].power_table is None
    bad = _swf(tmp_path, "; CosimApp: 1 power_table=60:1,115:2\n")
    assert main(["run", "--workload", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "p.swf:2: field power_table: watts must rise and slowdowns must not" in \
        capsys.readouterr().err


def test_bad_power_beta_names_the_line(tmp_path, capsys):
    swf = _swf(tmp_path, "; CosimApp: 1 power_beta=1.5\n")
    assert main(["run", "--workload", str(swf), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "p.swf:2: field power_beta: must be a number in [0, 1]" in err
    csv = tmp_path / "v.csv"
    csv.write_text("job_id,value,soft_s,hard_s,power_beta\n1,1,10,20,x\n")
    assert main(["run", "--workload", str(_swf(tmp_path, "")), "--values", str(csv),
                 "--out", str(tmp_path / "o")]) == 2
    assert "v.csv:2: field power_beta: not a number" in capsys.readouterr().err


def test_app_jobs_under_a_cap_are_refused(tmp_path, capsys):
    from cosim.paths import TRACES_DIR

    assert main(["run", "--workload", str(TRACES_DIR / "esp-mandelbrot.swf"), "--platform",
                 str(PLATFORMS_DIR / "kumbhare2048.toml"), "--hosts", "64", "--batch",
                 "greedy", "--power-cap", "0.6", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a power cap needs trace jobs" in err[0]


def test_the_sidecars_beta_wins_over_a_traces_table(tmp_path, capsys):
    from cosim.experiment import RunOptions, prepare

    swf = _swf(tmp_path, "; CosimApp: 2 power_table=60:2,115:1\n")
    csv = tmp_path / "v.csv"
    csv.write_text("job_id,value,soft_s,hard_s,power_beta\n1,2,100,300,0.1\n")
    jobs = {j.id: j for j in prepare(RunOptions(workload=str(swf), values=str(csv))).workload.jobs}
    assert jobs[1].power_curve == 0.1 and jobs[3].power_curve == ((60.0, 2.0), (115.0, 1.0))


def test_the_sidecar_carries_power_beta(tmp_path, capsys):
    swf = _swf(tmp_path, "")
    csv = tmp_path / "v.csv"
    csv.write_text("job_id,value,soft_s,hard_s,power_beta\n1,2,100,300,0.1\n2,3,50,60,\n")
    betas = {}
    values = read_values(csv, read_swf(swf).jobs, betas=betas)
    assert betas == {1: 0.1} and set(values) == {1, 2}
    assert main(["run", "--workload", str(swf), "--values", str(csv), "--platform", NODES,
                 "--hosts", "8", "--priority", "vpt", "--power-cap", "0.7", "--out",
                 str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["productivity"] > 0


def test_cosim_workload_values(tmp_path, capsys):
    swf = _swf(tmp_path, "")
    out = tmp_path / "gen"
    assert main(["workload", "values", str(swf), "--seed", "3", "--arrival-scale", "0.5",
                 "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    scaled = out / "p-x0.5.swf"
    assert str(scaled) in printed and (out / "values.csv").exists()
    jobs = read_swf(scaled).jobs
    before = [j.submit for j in read_swf(swf).jobs]
    assert max(j.submit for j in jobs) == min(before) + (max(before) - min(before)) // 2
    values = read_values(out / "values.csv", jobs)
    assert set(values) == {j.id for j in jobs}
    assert {v.v for v in values.values()} <= {1.0, 4.0, 16.0}
    assert main(["workload", "values", str(swf), "--classes", "1:0.5,2:0.4", "-o",
                 str(out)]) == 2
    assert "field classes" in capsys.readouterr().err


def test_the_power_series_reaches_results_the_trace_and_a_plot(tmp_path, capsys):
    from cosim.output.hdf5 import read_results

    out = tmp_path / "o"
    assert main(["run", "--workload", str(_swf(tmp_path)), "--platform", NODES, "--hosts",
                 "8", "--priority", "vpt", "--power-cap", "0.6", "--power-dynamic", "--trace",
                 "batch", "--plots", "--out", str(out), "--quiet"]) == 0
    (run,) = read_results(out / "results.h5")
    series = run.power_series
    assert len(series) > 2 and series["watts"].max() == run.metrics["peak_power_w"]
    assert (out / "power.png").stat().st_size > 0
    otf2 = pytest.importorskip("otf2")
    with otf2.reader.open(str(out / "trace" / "traces.otf2")) as trace:
        samples = [ev for _, ev in trace.events if type(ev).__name__ == "Metric"
                   and ev.metric.metric_class.members[0].name == "system power"]
    assert [(ev.time, ev.values[0]) for ev in samples] == \
        [(int(t), float(w)) for t, w in series.tolist()]


def test_the_study_script_on_a_small_trace(tmp_path, capsys):
    """scripts/reproduce_value_power.py end to end on a 60-job trace: every (algorithm,
    variant, cap) row, the seeds averaged, a row equal to the same run made directly, and
    dynamic VPT equal to static `max` at a 100 % cap (nothing to reallocate)."""
    from cosim.experiment import RunOptions, execute
    from cosim.testing.study import load_script

    mod = load_script("reproduce_value_power")
    if mod is None:
        pytest.skip("not a source checkout: the scripts are not installed")
    swf = _swf(tmp_path, "", n=60)
    out = tmp_path / "study"
    assert mod.main(["--traces", str(swf), "--seeds", "2", "--caps", "0.6,1", "--out",
                     str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 * len(mod.VARIANTS) * 2 and all(r["seeds"] == 2 for r in rows)
    by = {(r["algorithm"], r["variant"], r["cap"]): r for r in rows}
    direct = [execute(RunOptions(
        workload=str(out / "inputs" / "p-load1.15.swf"),
        values=str(out / "inputs" / f"p-values-seed{seed}.csv"), platform=mod.PLATFORM_PATH,
        hosts=8, priority="vpe", batch="greedy", power_cap=0.6, power_strategy="uniform",
        seed=seed)).summary["normalized_productivity"] for seed in (0, 1)]
    assert by["vpe", "uniform", 0.6]["normalized_productivity"] == pytest.approx(
        sum(direct) / 2, rel=1e-12)
    # VPT's best level is p_max (the run time only grows below it): at 100 % dynamic has
    # nothing to reallocate and equals static max (VP-8)
    assert by["vpt", "dynamic", 1.0]["normalized_productivity"] == \
        by["vpt", "max", 1.0]["normalized_productivity"]
    assert (out / "table.csv").exists() and (out / "value_power.png").stat().st_size > 0


@pytest.mark.serial  # (times signals and process ends: alone, `make test`)
def test_sigterm_takes_the_study_scripts_interrupt_path():
    """`cosim.testing.study.sigterm_as_interrupt`: inside the block SIGTERM raises
    KeyboardInterrupt (the scripts' Ctrl-C path: the sweep stops its workers, exit 130);
    the previous handler comes back after it."""
    import os
    import signal

    from cosim.testing.study import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)  # (handled at the next bytecode)
            for _ in range(10**6):
                pass
    assert signal.getsignal(signal.SIGTERM) == before
