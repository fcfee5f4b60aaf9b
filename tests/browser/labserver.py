"""A JupyterLab server for the tests, on 127.0.0.1 and a free port.

Started from this Python (the project's .venv, where requirements-lab.txt puts
JupyterLab), with the venv's kernelspec first on the Jupyter path, a random
token, the repository as its root, and every per-user directory (config,
runtime, data, settings, workspaces) in a fresh temporary directory, so that
nothing of a developer's own Jupyter setup is used or changed. Its settings:
no autosave (a test must never write the book's notebooks), no news, no update
check, a read-only extension manager (nothing asks PyPI).
"""
from __future__ import annotations

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
import urllib.error
import urllib.request
from pathlib import Path

#: User settings of the lab, by plugin.
SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.home = Path(tempfile.mkdtemp(prefix="speclib-lab-"))
        self.log_path = self.home / "server.log"
        self.proc = None

    def start(self, timeout: float = 120.0) -> "LabServer":
        dirs = {name: self.home / name for name in ("config", "runtime", "data", "settings", "workspaces")}
        for d in dirs.values():
            d.mkdir()
        for plugin, values in SETTINGS.items():
            path = dirs["settings"] / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        venv_share = Path(sys.prefix) / "share" / "jupyter"
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            JUPYTER_PATH=os.pathsep.join(filter(None, [str(venv_share), os.environ.get("JUPYTER_PATH")])),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONHASHSEED="0",
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        cmd = [
            sys.executable, "-m", "jupyterlab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
            # window.jupyterapp: the tests open each notebook in one loaded lab
            "--LabApp.expose_app_in_browser=True",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI machines and containers run as root
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log()}")
            try:
                self.api("api/status")
                return self
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not answer in {timeout:.0f} s:\n{self.log()}")
                time.sleep(0.25)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-5000:]

    def lab_url(self, path: str = "") -> str:
        """The lab opened on one file (or on none), in a fresh workspace (``reset``)."""
        return f"{self.url}lab{'/tree/' + path if path else ''}?token={self.token}&reset"

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(self.url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def kernel_state(self, path: str):
        """The execution state of the kernel of the session on ``path``, or None."""
        for session in self.api("api/sessions"):
            if session.get("path") == path and session.get("kernel"):
                return session["kernel"].get("execution_state")
        return None

    def shut_down_sessions(self):
        for session in self.api("api/sessions"):
            self.api(f"api/sessions/{session['id']}", method="DELETE")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            # The server shuts its kernels down on SIGTERM.
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()
        shutil.rmtree(self.home, ignore_errors=True)
