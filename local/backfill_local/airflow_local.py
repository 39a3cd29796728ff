"""A real Airflow 3 on 127.0.0.1 for tests and the demo: api-server, scheduler and dag-processor
with a throwaway AIRFLOW_HOME, SQLite, LocalExecutor, low parallelism, no example DAGs, and
SimpleAuthManager with a known user so `POST /auth/token` works.

    with LocalAirflow(dags_folder=Path("dags")) as airflow:
        airflow.wait_for_dags(["backfill"])
        run = airflow.trigger("backfill", run_id="x", conf={...})
        airflow.wait_for_run("backfill", "x")

Every process is started in its own session and stopped (TERM, then KILL) on exit, also when
booting fails halfway. CLI (what the demo uses, also handy by hand):

    python -m backfill_local.airflow_local --dags-folder dags --port 8080
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backfill_local import cache_dir
from backfill_orchestrator.errors import ServiceError
from backfill_orchestrator.http import HttpError, HttpSession, retrying_session

DEFAULT_USER = "admin"
DEFAULT_PASSWORD = "admin"
DEFAULT_PARALLELISM = 3
COMPONENTS = ("api-server", "scheduler", "dag-processor")
# The health report's names for the components we start.
HEALTH_KEYS = ("metadatabase", "scheduler", "dag_processor")
TERMINAL_RUN_STATES = frozenset({"success", "failed"})
# `responsive=True` (the demo): a few processes on a small machine, DAG files that never change
# while it runs. The scheduler loops again at once when it did something and naps when idle
# (1 s by default; 0.2 s cost it about 3x the CPU of 1 s on a long run, taken from Spark), so a
# finished task's successors are queued within half a second; each DAG file is parsed once
# instead of every 10 s (the parsing cost 170 s of CPU over a 35-minute run on a loaded
# machine, 26 s parsed once), which leaves the CPU to the tasks.
# Tests take only the parse-once part (their DAG files are all written before the boot): 64 -> 51 s
# of CPU for tests/airflow/test_backfill_dag.py alone, idle machine.
PARSE_ONCE_SETTINGS = {
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "600",
}
RESPONSIVE_SETTINGS = {
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
    **PARSE_ONCE_SETTINGS,
}


class AirflowBootError(ServiceError, RuntimeError):
    """Airflow did not become healthy; the message carries the tail of each component's log."""


class AirflowApiError(ServiceError, RuntimeError):
    """The REST API answered with an error status."""

    def __init__(self, method: str, path: str, status: int, body: str):
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class AirflowTimeout(ServiceError, TimeoutError):
    """Something we waited for in Airflow did not happen in time."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def airflow_env(
    *,
    home: Path,
    dags_folder: Path,
    port: int,
    parallelism: int,
    user: str,
    passwords_file: Path,
    jwt_secret: str,
) -> dict[str, str]:
    """Configuration for every component, as AIRFLOW__SECTION__KEY variables (nothing in airflow.cfg)."""
    base_url = f"http://127.0.0.1:{port}"
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(parallelism),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
        "AIRFLOW__CORE__FERNET_KEY": "",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__API__BASE_URL": base_url,
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
        # Every component signs or checks JWTs (the scheduler signs task tokens, the api-server
        # checks them): one shared secret, or tasks are refused.
        "AIRFLOW__API_AUTH__JWT_SECRET": jwt_secret,
        "AIRFLOW__API_AUTH__JWT_ISSUER": "backfill-local",
        # Quick to notice new files and runs; one parsing process keeps memory down.
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "300",
        # A task's supervisor talks to the api-server for it (state, XCom, heartbeats). On a
        # loaded machine (2 cores, load 16) the one api-server worker on SQLite can take longer
        # than Airflow's 5 s to answer; a timed-out request is retried, which only adds load.
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
        # The supervisor kills its task after this many heartbeats failed in a row (Airflow: 3,
        # about a minute without the api-server). A failed heartbeat takes at least 9 s (5 s
        # apart, 4 s of the client's own retries), so 40 lets a task ride out an api-server
        # outage (or overload) up to the backfill DAG's `[backfill] api_outage_seconds` (300 s,
        # which is `[scheduler] task_instance_heartbeat_timeout`: the scheduler's own limit).
        "AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS": "40",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
        "AIRFLOW__METRICS__STATSD_ON": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "NO_PROXY": "127.0.0.1,localhost",
    }


@dataclass
class _Component:
    name: str
    process: subprocess.Popen
    log_path: Path

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


@dataclass
class LocalAirflow:
    """Boot on `start()` (or `with`), stop on `stop()`; see the module docstring."""

    dags_folder: Path
    home: Path | None = None
    port: int = 0
    parallelism: int = DEFAULT_PARALLELISM
    user: str = DEFAULT_USER
    password: str = DEFAULT_PASSWORD
    extra_env: Mapping[str, str] = field(default_factory=dict)
    boot_timeout: float = 180.0
    responsive: bool = False  # RESPONSIVE_SETTINGS (extra_env still wins)
    # Talk to an Airflow that runs elsewhere (REST helpers only; start/stop are then not used).
    external_url: str | None = None
    _components: list[_Component] = field(default_factory=list, init=False)
    _own_home: bool = field(default=False, init=False)
    _token: str | None = field(default=None, init=False)
    _session: HttpSession | None = field(default=None, init=False)
    env: dict[str, str] = field(default_factory=dict, init=False)
    boot_seconds: float | None = field(default=None, init=False)

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> LocalAirflow:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self.external_url.rstrip("/") if self.external_url else f"http://127.0.0.1:{self.port}"

    @property
    def logs_dir(self) -> Path:
        assert self.home is not None
        return self.home / "component-logs"

    def start(self) -> None:
        began = time.monotonic()
        if self.home is None:
            self.home = Path(tempfile.mkdtemp(prefix="airflow-home-"))
            self._own_home = True
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        passwords_file = self.home / "passwords.json"
        passwords_file.write_text(json.dumps({self.user: self.password}))
        self.env = {
            **os.environ,
            **airflow_env(
                home=self.home,
                dags_folder=Path(self.dags_folder).resolve(),
                port=self.port,
                parallelism=self.parallelism,
                user=self.user,
                passwords_file=passwords_file,
                jwt_secret=secrets.token_hex(32),
            ),
            **(RESPONSIVE_SETTINGS if self.responsive else {}),
            **self.extra_env,
        }
        self.logs_dir.mkdir(exist_ok=True)
        try:
            self._migrate()
            for name in COMPONENTS:
                self._launch(name)
            self._wait_healthy()
            self._warm_execution_api()
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - began

    def stop(self) -> None:
        """TERM every component's process group, KILL what is left after 20 s; drop a temp home."""
        for component in self._components:
            _signal_group(component.process, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for component in self._components:
            try:
                component.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for component in self._components:
            # Children (task runners, gunicorn/uvicorn workers) share the group: KILL catches stragglers.
            _signal_group(component.process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                component.process.wait(timeout=5)
        self._components.clear()
        if self._session is not None:
            self._session.close()
            self._session = None
        if self._own_home and self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)

    def pids(self) -> list[int]:
        return [component.process.pid for component in self._components]

    def kill(self, names: Iterable[str] = COMPONENTS) -> list[int]:
        """SIGKILL these components at once with every process they started, as a lost host or
        container would: LocalExecutor workers, task supervisors and task processes (which
        Airflow puts in process groups of their own). A process that started a session of its
        own is left alone: the local Spark job (dags/backfill_runtime/runners/local.py) stands
        for a job on a cluster, which outlives Airflow, and stops by itself when it sees its
        task process gone. The database, the port and the configuration stay for `relaunch`.
        Returns the pids killed."""
        import psutil

        wanted = set(names)
        unknown = wanted - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; expected some of {COMPONENTS}")
        doomed = [component for component in self._components if component.name in wanted]
        victims: list[psutil.Process] = []
        for component in doomed:
            session = _session_of(component.process.pid)
            try:
                tree = psutil.Process(component.process.pid)
                members = [tree, *tree.children(recursive=True)]
            except psutil.NoSuchProcess:
                members = []
            victims += [process for process in members if _session_of(process.pid) == session]
        for process in victims:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(victims, timeout=10)
        for component in doomed:
            with contextlib.suppress(subprocess.TimeoutExpired):
                component.process.wait(timeout=5)
            self._components.remove(component)
        if self._session is not None:  # its pooled connections went with the api-server
            self._session.close()
            self._session = None
        return [process.pid for process in victims]

    def relaunch(self, names: Iterable[str] = COMPONENTS) -> None:
        """Start the components `kill` stopped again, on the same database, port and
        configuration (so the tokens the scheduler signed stay valid), and wait until healthy."""
        running = {component.name for component in self._components}
        for name in COMPONENTS:
            if name in set(names) and name not in running:
                self._launch(name)
        self._wait_healthy()

    def _airflow(self) -> list[str]:
        return [sys.executable, "-m", "airflow"]

    def _migrate(self) -> None:
        """`airflow db migrate`, or a copy of the empty database it made for an earlier boot with
        the same Airflow install (the migration alone costs about 7 s of CPU per boot)."""
        database = self.home / "airflow.db" if self.home else None
        default_conn = (
            database is not None
            and self.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{database}"
        )
        cached = _migrated_database()
        if default_conn and cached is not None and cached.exists() and not database.exists():
            shutil.copyfile(cached, database)
            return
        self._run_migrate()
        if default_conn and cached is not None and not cached.exists():
            with contextlib.suppress(OSError):  # a cache only: a read-only install migrates every boot
                cached.parent.mkdir(parents=True, exist_ok=True)
                partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
                shutil.copyfile(database, partial)
                os.replace(partial, cached)  # atomic: a concurrent boot copies a whole file or none

    def _run_migrate(self) -> None:
        log_path = self.logs_dir / "db-migrate.log"
        with log_path.open("wb") as log:
            result = subprocess.run(
                [*self._airflow(), "db", "migrate"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if result.returncode != 0:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
            raise AirflowBootError(f"airflow db migrate failed (exit {result.returncode}):\n{tail}")

    def _launch(self, name: str) -> None:
        args = [*self._airflow(), name]
        if name == "api-server":
            args += ["--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        log_path = self.logs_dir / f"{name}.log"
        log = log_path.open("wb")
        process = subprocess.Popen(
            args,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()  # the child holds its own descriptor
        self._components.append(_Component(name, process, log_path))

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.boot_timeout
        probe = retrying_session(retries=0, timeout=3)  # the loop asks again
        last = "no answer yet"
        try:
            while time.monotonic() < deadline:
                for component in self._components:
                    if component.process.poll() is not None:
                        raise AirflowBootError(
                            f"{component.name} exited with {component.process.returncode}:\n{component.tail()}"
                        )
                try:
                    response = probe.get(f"{self.url}/api/v2/monitor/health")
                    if response.status_code < 400:
                        health = response.json()
                        states = {key: (health.get(key) or {}).get("status") for key in HEALTH_KEYS}
                        if all(state == "healthy" for state in states.values()):
                            return
                        last = f"health: {states}"
                    else:
                        last = f"health: HTTP {response.status_code}"
                except (HttpError, ValueError) as error:  # ValueError: an answer that is not JSON
                    last = f"health: {type(error).__name__}"
                time.sleep(1)
        finally:
            probe.close()
        logs = "\n\n".join(f"--- {c.name} ---\n{c.tail()}" for c in self._components)
        raise AirflowBootError(f"Airflow not healthy after {self.boot_timeout:.0f} s ({last})\n{logs}")

    def _warm_execution_api(self) -> None:
        """The api-server builds its task execution API (`/execution`, versioned routes) on
        the first request to it: 3 s at a load of 4, 11 s at a load of 7, which the first
        task of the first DAG run would otherwise wait for (between its "Pre Execute" and its
        start). Asked once here, at boot, where it overlaps whatever the caller does meanwhile."""
        session = retrying_session(retries=0, timeout=self.boot_timeout)
        try:
            answer = session.get(f"{self.url}/execution/health")
        except HttpError as error:
            raise AirflowBootError(f"the task execution API did not answer: {error}") from None
        finally:
            session.close()
        if answer.status_code >= 400:
            raise AirflowBootError(f"the task execution API answered HTTP {answer.status_code}")

    # -- measurements ----------------------------------------------------------------
    def memory_rss_bytes(self) -> int:
        """Resident memory of every process we started and their children, right now."""
        import psutil

        total = 0
        for component in self._components:
            try:
                parent = psutil.Process(component.process.pid)
                for process in [parent, *parent.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += process.memory_info().rss
            except psutil.Error:
                continue
        return total

    # -- REST API (`/api/v2`, bearer token from `/auth/token`) -------------------------
    def token(self, *, refresh: bool = False) -> str:
        if self._token is None or refresh:
            response = self._http().post(
                f"{self.url}/auth/token", json={"username": self.user, "password": self.password}
            )
            if response.status_code not in (200, 201):
                raise AirflowApiError("POST", "/auth/token", response.status_code, response.text)
            self._token = response.json()["access_token"]
        return self._token

    def api(
        self, method: str, path: str, *, json_body: Any = None, params: Mapping[str, Any] | None = None
    ) -> Any:
        """Call `/api/v2<path>`; refreshes the token once on 401; raises AirflowApiError on >= 400."""
        for attempt in (0, 1):
            response = self._http().request(
                method,
                f"{self.url}/api/v2{path}",
                json=json_body,
                params=params,
                headers={"Authorization": f"Bearer {self.token(refresh=attempt == 1)}"},
            )
            if response.status_code != 401:
                break
        if response.status_code >= 400:
            raise AirflowApiError(method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def _http(self) -> HttpSession:
        """Retries (connection errors, 429, 5xx) and a 30 s read timeout: on a loaded machine
        this Airflow shares the cores with what calls it, and answers in seconds, not 10 s."""
        if self._session is None:
            self._session = retrying_session(timeout=(3.05, 30.0))
        return self._session

    def dags(self) -> dict[str, dict[str, Any]]:
        return {dag["dag_id"]: dag for dag in self.api("GET", "/dags", params={"limit": 1000})["dags"]}

    def import_errors(self) -> list[dict[str, Any]]:
        return self.api("GET", "/importErrors", params={"limit": 1000})["import_errors"]

    def wait_for_dags(self, dag_ids: Iterable[str], *, timeout: float = 120.0) -> dict[str, dict[str, Any]]:
        """Wait until the dag-processor has parsed these DAGs; fail at once on an import error."""
        wanted = set(dag_ids)
        deadline = time.monotonic() + timeout
        while True:
            errors = self.import_errors()
            if errors:
                details = "\n".join(f"{e.get('filename')}: {e.get('stack_trace', '')[-800:]}" for e in errors)
                raise AirflowApiError("GET", "/importErrors", 200, f"import errors:\n{details}")
            found = self.dags()
            if wanted <= found.keys():
                return found
            if time.monotonic() > deadline:
                raise AirflowTimeout(
                    f"DAGs not parsed after {timeout:.0f} s: {sorted(wanted - found.keys())}"
                )
            time.sleep(2)

    def trigger(
        self, dag_id: str, *, run_id: str, conf: Mapping[str, Any], logical_date: str | None = None
    ) -> dict[str, Any]:
        body = {"dag_run_id": run_id, "logical_date": logical_date, "conf": dict(conf)}
        return self.api("POST", f"/dags/{dag_id}/dagRuns", json_body=body)

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]

    def wait_for_run(self, dag_id: str, run_id: str, *, timeout: float = 600.0, poll: float = 2.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            state = self.run_state(dag_id, run_id)
            if state in TERMINAL_RUN_STATES:
                return state
            if time.monotonic() > deadline:
                raise AirflowTimeout(f"{dag_id} run {run_id} still {state} after {timeout:.0f} s")
            time.sleep(poll)

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns", params={"limit": 1000, "order_by": "logical_date"})[
            "dag_runs"
        ]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 1000})[
            "task_instances"
        ]

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, *, map_index: int = -1, try_number: int = 1
    ) -> str:
        """The task's log as text (for failure messages in tests and the demo)."""
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
        try:
            content = self.api("GET", path, params={"map_index": map_index, "full_content": "true"})
        except AirflowApiError as error:
            return f"<log unavailable: {error}>"
        lines = content.get("content") if isinstance(content, dict) else content
        if isinstance(lines, list):
            return "\n".join(_log_line(line) for line in lines)
        return str(lines)


def demo_dags_folder(source: Path, target: Path, *, dag_files: Sequence[str]) -> Path:
    """A DAGs folder with only `dag_files` (files or packages of `source`) and the packages
    they import: the dag-processor parses what a run needs and nothing else."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__")
    for entry in sorted(source.iterdir()):
        dag_entry = entry.suffix == ".py" or (entry.is_dir() and not (entry / "__init__.py").exists())
        if entry.name == "__pycache__" or (dag_entry and entry.name not in dag_files):
            continue
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, ignore=ignore)
        else:
            shutil.copy2(entry, target / entry.name)
    return target


def _migrated_database() -> Path | None:
    """Where this Python environment keeps an empty database migrated by its Airflow version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        airflow_version = version("apache-airflow")
    except PackageNotFoundError:
        return None
    return cache_dir() / f"airflow-{airflow_version}-migrated.db"


def _log_line(line: Any) -> str:
    """Airflow 3 logs are structured: the event, then any exception as `Type: message`."""
    if not isinstance(line, dict):
        return str(line)
    text = str(line.get("event", ""))
    for error in line.get("error_detail") or []:
        text += f"\n  {error.get('exc_type')}: {error.get('exc_value')}"
    return text


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:  # gone already
        return None


def _signal_group(process: subprocess.Popen, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


# -- CLI --------------------------------------------------------------------------------
def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # TERM stops like Ctrl-C: through `finally`, so the components stop too


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backfill_local.airflow_local", description="Run a local Airflow 3 until Ctrl-C."
    )
    parser.add_argument("--dags-folder", default="dags", type=Path)
    parser.add_argument(
        "--home", type=Path, default=None, help="AIRFLOW_HOME (default: a temporary directory)"
    )
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--parallelism", type=int, default=DEFAULT_PARALLELISM)
    args = parser.parse_args(argv)
    if not args.dags_folder.is_dir():
        print(f"airflow_local: {args.dags_folder}: no such directory", file=sys.stderr)
        return 2
    airflow = LocalAirflow(
        dags_folder=args.dags_folder, home=args.home, port=args.port, parallelism=args.parallelism
    )
    try:
        airflow.start()
    except AirflowBootError as error:
        print(f"airflow_local: {error}", file=sys.stderr)
        return 1
    try:
        print(
            f"Airflow {airflow.url} (user {airflow.user} / {airflow.password}) booted in "
            f"{airflow.boot_seconds:.1f} s, {airflow.memory_rss_bytes() / 2**20:.0f} MiB; Ctrl-C stops it",
            flush=True,
        )
        signal.signal(signal.SIGTERM, _interrupt)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        airflow.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
