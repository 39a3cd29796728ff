"""make_test benchmark: the README's test command on a fresh clone, its wall time beside the
least any schedule of its CPU could take on this machine, and where that CPU goes.

The repository's committed HEAD is cloned into a temporary directory and `make test` runs there
from nothing (virtualenvs, the SAM CLI's, the browser check), as CI does. Its CPU time is
counted two ways: exactly, by a cgroup-v1 `cpuacct` group the command and every process it
starts run in (when this runs as root on a machine that mounts one, as CI's and this one do);
and by component, from every process of the command's tree read once a second (`psutil`: a
process that starts and ends between two reads is missed, so the components add up to a
little less than the exact total). The baseline beside the wall time is `cpu_bound_s`, the CPU
time over the machine's cores: no order of the same tests can finish sooner, so
`packing` = the suite's wall time over it says whether the workers wait on each other (well
above 1) or the machine is simply full (near 1). The 1-minute load average is read every 10 s.

    .venv/bin/python benchmarks/make_test.py            # about 17 minutes on 2 CPUs
    .venv/bin/python benchmarks/make_test.py test-fast  # another target of the Makefile

CPU by test module: the benchmark loads this file into pytest as well (`-p
benchmarks.make_test`, below), and each xdist worker moves into a cpuacct group of its own
inside the benchmark's, so every process a test starts (Airflow, Spark JVMs, servers, browsers)
is counted with the worker; at each change of test module the worker notes what its group
used since the last change. A module's teardown is counted with it; a session-wide resource
(the Spark session, the shared Airflow) with the module that uses it when it runs.

The last line:

    BENCH make_test wall_s=... suite_s=... passed=... cpu_s=... cpu_bound_s=... packing=...
        spark_cpu_s=... airflow_cpu_s=... pytest_cpu_s=... load_median=...
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
SAMPLE_SECONDS = 1.0
# What the benchmark tells the workers it loads into (the plugin half of this file, below).
MODULES_FILE_ENV = "MAKE_TEST_BENCH_MODULES"  # the JSON lines every worker appends to
GROUP_ENV = "MAKE_TEST_BENCH_GROUP"  # the benchmark's cpuacct group
TOP_MODULES = 15
LOAD_SECONDS = 10.0
SUMMARY = re.compile(r"\b(?P<passed>\d+) passed\b.* in (?P<seconds>[\d.]+)s")
FAILED = re.compile(r"\b(?P<failed>\d+) (?:failed|errors?)\b")

# Component of a process, from its command line (Airflow names its processes with setproctitle).
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("org.apache.spark", "spark: JVMs"),
    ("spark_jobs.engine", "spark: job drivers (Python)"),
    ("pyspark.daemon", "spark: job drivers (Python)"),
    ("airflow api-server", "airflow: api-server"),
    ("airflow scheduler", "airflow: scheduler"),
    ("airflow dag-processor", "airflow: dag-processor"),
    ("airflow worker", "airflow: executor workers and tasks"),
    ("airflow task", "airflow: executor workers and tasks"),
    ("airflow db migrate", "airflow: other"),
    ("airflow serve-logs", "airflow: other"),
    ("execnet", "pytest: workers (tests, in-process doubles, Spark's Python side)"),
    ("exec(eval(sys.stdin.readline()))", "pytest: workers (tests, in-process doubles, Spark's Python side)"),
    ("-m pytest", "pytest: main process"),
    ("backfill_local.demo", "demo (the demo test's subprocess)"),
    ("chrom", "browser"),
    ("moto", "moto servers"),
    ("sam ", "sam build"),
    ("uv ", "setup (uv, pip)"),
    ("pip", "setup (uv, pip)"),
)


def component(cmdline: str) -> str:
    return next((name for key, name in COMPONENTS if key in cmdline), "other")


class TreeSampler:
    """CPU seconds of every process under `root` (the root included), by component."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[tuple[int, float], tuple[str, float]] = {}
        self.unnamed: dict[tuple[int, float], str] = {}  # the command lines of "other" processes
        self.loads: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        next_load = 0.0
        while True:
            self._read()
            if time.monotonic() >= next_load:
                self.loads.append(os.getloadavg()[0])
                next_load = time.monotonic() + LOAD_SECONDS
            if self._stop.wait(SAMPLE_SECONDS):
                self._read()
                return

    def _read(self) -> None:
        try:
            processes = [psutil.Process(self.root)]
            processes += processes[0].children(recursive=True)
        except psutil.Error:
            processes = []
        for process in processes:
            with contextlib.suppress(psutil.Error):
                key = (process.pid, process.create_time())
                times = process.cpu_times()
                # Named by the first command line that says what it is: `spark-submit` is a
                # shell script that execs the JVM in the same process (first seen as the
                # script, it is named again), while Airflow's processes and pytest's workers
                # retitle themselves later (setproctitle) and keep their first name.
                known = self.seen.get(key)
                cmdline = " ".join(process.cmdline())
                name = known[0] if known and known[0] != "other" else component(cmdline)
                self.seen[key] = (name, times.user + times.system)
                if name == "other":
                    self.unnamed[key] = cmdline
                else:
                    self.unnamed.pop(key, None)

    def by_component(self) -> dict[str, float]:
        """Component -> CPU seconds, the largest first."""
        totals: dict[str, float] = {}
        for name, seconds in self.seen.values():
            totals[name] = totals.get(name, 0.0) + seconds
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def largest_unnamed(self, count: int) -> list[tuple[float, str]]:
        """The `count` "other" processes that used the most CPU: (seconds, command line)."""
        found = [(self.seen[key][1], cmdline) for key, cmdline in self.unnamed.items()]
        return sorted(found, reverse=True)[:count]


@contextlib.contextmanager
def cpuacct_group() -> Iterator[Path | None]:
    """A fresh cgroup-v1 cpuacct group (None where this cannot make one: not root, no v1 mount)."""
    group = CPUACCT / f"make-test-bench-{os.getpid()}"
    try:
        group.mkdir()
    except OSError:
        yield None
        return
    try:
        yield group
    finally:
        for child in [*group.glob("worker-*"), group]:  # the workers' groups first
            with contextlib.suppress(OSError):
                child.rmdir()  # fails while a leftover process is still in it: the next run makes its own


def suite_summary(output: str) -> tuple[int, int, float | None]:
    """passed, failed (errors included) and the suite's seconds, from pytest's last summary line."""
    for line in reversed(output.splitlines()):
        if match := SUMMARY.search(line):
            failed = FAILED.search(line)
            return int(match["passed"]), int(failed["failed"]) if failed else 0, float(match["seconds"])
    return 0, 0, None


def main(targets: list[str]) -> int:
    cores = os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="make-test-bench-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True, capture_output=True, text=True
    ).stdout.strip()
    log_path = work / "make-test.log"
    print(f"make {' '.join(targets)} in a fresh clone of {head} ({clone}); output in {log_path}", flush=True)
    with cpuacct_group() as group, log_path.open("w") as log:
        began = time.monotonic()
        # The group is joined before `make` starts, so everything it starts is counted.
        join = f"echo $$ > {group / 'cgroup.procs'} && " if group else ""
        make = " ".join(["make", *targets])
        modules_file = work / "modules.jsonl"
        env = dict(os.environ)
        if group:
            env.update(
                {
                    "PYTEST_ADDOPTS": "-p benchmarks.make_test",
                    MODULES_FILE_ENV: str(modules_file),
                    GROUP_ENV: str(group),
                }
            )
        command = subprocess.Popen(
            ["sh", "-c", f"{join}exec {make}"], cwd=clone, stdout=log, stderr=log, env=env
        )
        with TreeSampler(command.pid) as sampler:
            returncode = command.wait()
        wall = time.monotonic() - began
        exact = int((group / "cpuacct.usage").read_text()) / 1e9 if group else None
    passed, failed, seconds = suite_summary(log_path.read_text(errors="replace"))
    suite = seconds if seconds is not None else wall
    components = sampler.by_component()
    sampled = sum(components.values())
    cpu = exact if exact is not None else sampled
    bound = cpu / cores
    print(
        f"\n{make} exited {returncode}: {passed} passed, {failed} failed; suite {suite:.0f} s, whole {wall:.0f} s"
    )
    print(
        f"CPU: {cpu:.0f} s ({'cpuacct cgroup' if exact is not None else 'sampled'}), {sampled:.0f} s sampled"
    )
    print(f"{'component':<66} {'CPU s':>8} {'share':>6}")
    for name, seconds in components.items():
        print(f"{name:<66} {seconds:8.0f} {seconds / sampled:6.1%}")
    for seconds, cmdline in sampler.largest_unnamed(5):
        print(f"  other: {seconds:6.0f} s  {cmdline[:140]}")
    by_module = module_totals(modules_file)
    if by_module:
        print(
            f"{'test module (its worker group: the tests and every process they start)':<66} {'CPU s':>8} {'share':>6}"
        )
        for name, seconds in list(by_module.items())[:TOP_MODULES]:
            print(f"{name:<66} {seconds:8.0f} {seconds / cpu:6.1%}")
        rest = list(by_module.values())[TOP_MODULES:]
        print(f"{f'the other {len(rest)} modules':<66} {sum(rest):8.0f} {sum(rest) / cpu:6.1%}")
    loads = sampler.loads or [os.getloadavg()[0]]
    print(
        f"load (1 min) every {LOAD_SECONDS:.0f} s: start {loads[0]:.1f}, median {statistics.median(loads):.1f}, "
        f"max {max(loads):.1f}, end {loads[-1]:.1f}"
    )
    spark = sum(s for name, s in components.items() if name.startswith("spark"))
    airflow = sum(s for name, s in components.items() if name.startswith("airflow"))
    pytest_cpu = sum(s for name, s in components.items() if name.startswith("pytest"))
    if returncode == 0:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"BENCH make_test wall_s={wall:.0f} suite_s={suite:.0f} passed={passed} failed={failed}"
        f" cpu_s={cpu:.0f} cpu_bound_s={bound:.0f} packing={suite / bound:.2f} spark_cpu_s={spark:.0f}"
        f" airflow_cpu_s={airflow:.0f} pytest_cpu_s={pytest_cpu:.0f} load_median={statistics.median(loads):.1f}"
    )
    return returncode


def module_totals(path: Path) -> dict[str, float]:
    """Test module -> CPU seconds (`<collection>`: a worker's start up to its first test), the largest first."""
    totals: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            totals[row["module"]] = totals.get(row["module"], 0.0) + row["cpu_s"]
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


# -- the plugin half: loaded into `make test`'s pytest processes with `-p benchmarks.make_test` --
class WorkerModules:
    """One xdist worker in a cpuacct group of its own; a line per test module it ran."""

    def __init__(self, group: Path, out: Path, worker: str) -> None:
        self.group, self.out, self.worker = group, out, worker
        self.module = "<collection>"
        self.used = self._usage()

    def _usage(self) -> int:
        return int((self.group / "cpuacct.usage").read_text())

    def next_module(self, module: str | None) -> None:
        """Note what the group used since the last call for the module that ran, then follow `module`."""
        if module == self.module:
            return
        used = self._usage()
        row = {"module": self.module, "cpu_s": (used - self.used) / 1e9, "worker": self.worker}
        with self.out.open("a") as out:  # one short line per write: the workers' lines do not mix
            out.write(json.dumps(row) + "\n")
        self.module, self.used = module or "", used


_worker_modules: WorkerModules | None = None


def pytest_configure(config: object) -> None:
    global _worker_modules
    worker, parent, out = (
        os.environ.get(name) for name in ("PYTEST_XDIST_WORKER", GROUP_ENV, MODULES_FILE_ENV)
    )
    if not (worker and parent and out):
        return  # the controller (its workers read PYTEST_ADDOPTS too), or pytest outside the benchmark
    # Not for the processes the tests start: a pytest among them would load this plugin again.
    os.environ.pop("PYTEST_ADDOPTS", None)
    group = Path(parent) / f"worker-{worker}"
    with contextlib.suppress(OSError):
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        _worker_modules = WorkerModules(group, Path(out), worker)


def pytest_runtest_protocol(item: object, nextitem: object) -> None:
    if _worker_modules is not None:
        _worker_modules.next_module(item.nodeid.split("::", 1)[0])  # type: ignore[attr-defined]


def pytest_unconfigure(config: object) -> None:
    if _worker_modules is not None:
        _worker_modules.next_module(None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["test"]))
