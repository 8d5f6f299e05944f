"""The RCA paper's setup: its arrival scheme, its Table 1 calibration, and the metrics that
let a reader test either reading of its Eq. 1 (occupancy, ESP efficiency)."""

from __future__ import annotations

import math

import pytest

from cosim.cli import main
from cosim.output import metrics
from cosim.platform import load_platform
from cosim.workload.esp import JOB_MIX, generate_esp
from cosim.workload.esp_calibrate import TABLE1_IMAGES, TABLE1_MAX_ITER
from cosim.workload.jobs import Job, JobOutcome

S = 1_000_000_000


def test_rca_arrival_golden_on_256_hosts():
    """Hand computation: T_min = 2,809,904 / 256 = 10,976.1875 s; the block of 2 x 256 hosts
    takes 21 jobs, m = 207 later jobs in thirds of 69, d = 0.5 T_min / 208 = 26.385 s. Z1 at
    70 d = 1,846.95 -> 1,847 s; nothing for 0.1 T_min = 1,097.62 s; the second third from
    Z1 + 1,097.62 + d on; Z2 70 d after Z1 + gap: 4,791.53 -> 4,792 s; the last job 69 d
    after Z2 + gap: 7,709.7 -> 7,710 s."""
    w = generate_esp(app="psia", platform=load_platform("ib256"), seed=0, arrival="rca")
    t_min, d, gap = 10976.1875, 0.5 * 10976.1875 / 208, 0.1 * 10976.1875
    assert w.initial_block == 21
    z = sorted(j.submit / S for j in w.jobs if j.category == "Z")
    assert z == [1847, 4792]
    later = sorted(j.submit / S for j in w.jobs if j.category != "Z")[21:]
    expected = ([round(k * d) for k in range(1, 70)]
                + [round(70 * d + gap + k * d) for k in range(1, 70)]
                + [round(140 * d + 2 * gap + k * d) for k in range(1, 70)])
    assert later == expected and later[-1] == 7710
    assert all(j.priority == 1 for j in w.jobs if j.category == "Z")
    assert sum(1 for j in w.jobs if j.submit == 0) == 21
    notes = " ".join(text for _, text in w.header)
    assert "Z1 at 1847 s, Z2 at 4792 s" in notes and "arrival=rca" in notes
    assert "gap=0.1" in notes
    assert t_min == w.t_min / S


def test_rca_arrival_keeps_the_order_and_splits_uneven_thirds():
    """The same permutation as arrival esp (only the times differ); m = 3q + r later jobs:
    the first r thirds get one more."""
    plat = load_platform("ib256")
    ms = set()
    for hosts in (16, 40, 100, 3, 7):  # m % 3 takes 0, 1 and 2 among them
        a = generate_esp(app="psia", platform=plat, seed=3, hosts=hosts, arrival="esp")
        b = generate_esp(app="psia", platform=plat, seed=3, hosts=hosts, arrival="rca",
                         gap=0.25, span=0.4)
        order = [(j.category, j.hosts) for j in sorted(a.jobs, key=lambda j: (j.submit, j.id))
                 if j.category != "Z"]
        assert order == [(j.category, j.hosts) for j in sorted(
            b.jobs, key=lambda j: (j.submit, j.id)) if j.category != "Z"]
        m = 228 - b.initial_block
        ms.add(m % 3)
        z1, z2 = sorted(j.submit for j in b.jobs if j.category == "Z")
        later = sorted(j.submit for j in b.jobs if j.category != "Z")[b.initial_block:]
        first = m // 3 + (1 if m % 3 else 0)
        second = m // 3 + (1 if m % 3 == 2 else 0)
        assert sum(t < z1 for t in later) == first
        assert sum(z1 < t < z2 for t in later) == second
        gap = 0.25 * b.t_min
        assert min(t for t in later if t > z1) - z1 >= round(gap / S) * S  # the pause
    assert ms == {0, 1, 2}  # every remainder of m / 3 was tried


@pytest.mark.parametrize("app", ["psia", "mandelbrot"])
def test_table1_calibration_by_formula(app):
    """PSIA: Table 1's images at one cost per image whose balanced host-time over the whole
    workload is the targets'. Mandelbrot: Table 1's max_iter (G corrected to 10 M) with one
    scale for the workload, so that the jobs' STATIC run times — measured with the ALS loop
    model on each job's costs exactly as the ALS builds them — add up to the targets'
    host-time."""
    from cosim.als.launch import loop_on_hosts
    from cosim.als.techniques import get
    from cosim.workload import TaskCosts, load_app

    plat = load_platform("ib256")
    hosts, speed = 16, plat.hosts[0].speed
    image = {"width": "32"} if app == "mandelbrot" else {"points": "512"}
    w = generate_esp(app=app, platform=plat, seed=0, hosts=hosts, calibrate_by="table1",
                     app_params=image)
    by_cat = {j.category: j for j in w.jobs}
    target_hs = sum(t.count * w.sizes[t.category] * t.target_s for t in JOB_MIX)
    assert target_hs == w.host_seconds
    assert all(math.ceil(1.5 * j.runtime / S) * S == j.walltime for j in w.jobs)
    if app == "psia":
        per_image = target_hs * speed / sum(t.count * TABLE1_IMAGES[t.category]
                                            for t in JOB_MIX)
        for c, j in by_cat.items():
            assert j.app_params["images"] == str(TABLE1_IMAGES[c])
            assert float(j.app_params["total_flop"]) == pytest.approx(
                per_image * TABLE1_IMAGES[c], rel=1e-12)
        return
    assert TABLE1_MAX_ITER["G"] == TABLE1_MAX_ITER["H"] == 10_000_000
    static_hs = 0.0
    for t in JOB_MIX:
        j = by_cat[t.category]
        assert j.app_params["max_iter"] == str(TABLE1_MAX_ITER[t.category])
        params = {k: v for k, v in j.app_params.items() if k != "total_flop"}
        base = load_app("mandelbrot", overrides=params)
        total = float(j.app_params["total_flop"])
        costs = TaskCosts.from_array(base.flop * (total / base.total), model=base.model,
                                     label="", params={})
        run, _ = loop_on_hosts(costs=costs, platform=plat, hosts=j.hosts,
                               technique=get("STATIC"), record=False)
        static_hs += t.count * j.hosts * run.run().makespan / S
    assert static_hs == pytest.approx(target_hs, rel=1e-6)


def test_paper_scale_and_static_calibration():
    plat = load_platform("ib256")
    one = generate_esp(app="psia", platform=plat, seed=0, hosts=16, calibrate_by="table1",
                       app_params={"points": "512"})
    two = generate_esp(app="psia", platform=plat, seed=0, hosts=16, calibrate_by="table1",
                       app_params={"points": "512"}, paper_scale=2)
    for a, b in zip(one.jobs, two.jobs):
        assert float(b.app_params["total_flop"]) == pytest.approx(
            2 * float(a.app_params["total_flop"]), rel=1e-12)
    bal = generate_esp(app="mandelbrot", platform=plat, seed=0, hosts=16,
                       app_params={"width": "32"})
    st = generate_esp(app="mandelbrot", platform=plat, seed=0, hosts=16,
                      calibrate_by="static", app_params={"width": "32"})
    less = 0
    for a, b in zip(bal.jobs, st.jobs):  # STATIC is slower than balanced: less work
        assert float(b.app_params["total_flop"]) <= float(a.app_params["total_flop"])
        less += float(b.app_params["total_flop"]) < float(a.app_params["total_flop"])
        assert b.walltime == math.ceil(1.5 * b.runtime / S) * S
        assert a.walltime == 3 * a.runtime
    assert less == sum(1 for j in st.jobs if j.pes > 1) > 0  # one PE: STATIC is balanced


def test_generator_options_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "w.swf"
    assert main(["workload", "esp", "--app", "psia", "--hosts", "16", "--arrival", "rca",
                 "--gap", "0.2", "--calibrate", "table1", "--app-param", "points=512",
                 "-o", str(out)]) == 0
    text = out.read_text()
    assert "gap=0.2" in text and "calibrate=table1" in text and "points=512" in text
    for args, needle in ((["--gap", "0.2"], "field gap: a gap after the Z jobs belongs to "
                                            "--arrival rca"),
                         (["--arrival", "rca", "--gap", "-1"], "field gap: must be a number"),
                         (["--paper-scale", "0"], "field paper-scale: must be a number > 0"),
                         (["--app-param", "widht=3"], "widht"),
                         (["--calibrate", "table1", "--app-param", "max_iter=9"],
                          "field app-param.max_iter: max_iter is set by the calibration"),
                         (["--app-param", "total_flop=9"], "field app-param.total_flop"),
                         (["--arrival", "zero", "--span", "0.3"], "field span")):
        capsys.readouterr()
        code = main(["workload", "esp", "--app", "mandelbrot", "--hosts", "16",
                     "-o", str(tmp_path / "bad.swf"), *args])
        err = capsys.readouterr().err
        assert code == 2 and needle in err, err
        assert not (tmp_path / "bad.swf").exists()


def _job(i, hosts, run_s):
    return Job(id=i, submit=0, hosts=hosts, pes=hosts, walltime=run_s * S, runtime=run_s * S)


def test_occupancy_and_esp_efficiency_by_hand():
    """2 hosts. J1 holds hosts 0-1 on [0, 100), yields host 1 at 40 and lends it at 50 to J2,
    which runs on it [50, 80). Utilization counts computing time: (200 - 60 + 30) / 200 =
    0.85; occupancy counts allocated time, the lent host leaving its owner at the lend:
    (200 - 50 + 30) / 200 = 0.9; T_min = (2 x 100 + 1 x 30) / 2 = 115 s over a makespan of
    100 s: an ESP efficiency of 1.15 (lending beat the minimum of the stated run times)."""
    j1, j2 = _job(1, 2, 100), _job(2, 1, 30)
    outs = [JobOutcome(job=j1, start=0, end=100 * S, hosts=(0, 1), status="completed",
                       yielded=((1, 40 * S),), lent=((1, 50 * S),)),
            JobOutcome(job=j2, start=50 * S, end=80 * S, hosts=(1,), status="completed",
                       borrowed=((1, 50 * S),))]
    assert metrics.utilization(outs, 2) == pytest.approx(0.85)
    assert metrics.occupancy(outs, 2) == pytest.approx(0.9)
    assert metrics.esp_efficiency(outs, 2) == pytest.approx(1.15)
    rigid = [JobOutcome(job=j1, start=0, end=100 * S, hosts=(0, 1), status="completed"),
             JobOutcome(job=_job(2, 1, 50), start=100 * S, end=150 * S, hosts=(0,),
                        status="completed")]
    assert metrics.occupancy(rigid, 2) == metrics.utilization(rigid, 2) == pytest.approx(
        250 / 300)
    assert metrics.esp_efficiency(rigid, 2) == pytest.approx(125 / 150)
    assert metrics.occupancy([], 2) == metrics.esp_efficiency([], 2) == 0.0
