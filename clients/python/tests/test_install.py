"""`pip install ./clients/python` into a venv, offline (--no-index: nothing may come from a
package index; the build backend is in the tree), then the installed no-op worker drains rows
from a real node and stops on SIGTERM. An editable install points at the tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import support
from support import stage, statuses

import outboxd

ROWS = 300


def run(args: list, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=120,
                          **kwargs)


class InstallTest(unittest.TestCase):
    def setUp(self) -> None:
        self.directory = tempfile.TemporaryDirectory(prefix="outboxd-py-install-")
        self.addCleanup(self.directory.cleanup)
        # The installed copy, not the tree: no PYTHONPATH, and a directory of our own.
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def venv(self, name: str) -> str:
        path = os.path.join(self.directory.name, name)
        run([sys.executable, "-m", "venv", "--system-site-packages", path])
        return os.path.join(path, "bin")

    def test_pip_install_offline_and_run_the_noop_worker(self) -> None:
        bin_dir = self.venv("venv")
        installed = run([os.path.join(bin_dir, "pip"), "install", "--no-index",
                         "--disable-pip-version-check", support.CLIENT_DIR], env=self.env,
                        cwd=self.directory.name)
        self.assertIn("Successfully installed outboxd-0.1.0", installed.stdout)
        python = os.path.join(bin_dir, "python")
        where = run([python, "-c", "import outboxd, os; print(os.path.dirname(outboxd.__file__))"],
                    env=self.env, cwd=self.directory.name).stdout.strip()
        self.assertTrue(where.startswith(os.path.dirname(bin_dir)), where)
        self.assertTrue(os.path.isfile(os.path.join(where, "py.typed")))
        self.assertTrue(os.access(os.path.join(bin_dir, "outboxd-noop-worker"), os.X_OK))

        stage([outboxd.OutboxRow(f"install-{i}", 0, "noop", namespace="install")
               for i in range(ROWS)])
        worker = subprocess.Popen(
            [python, "-m", "outboxd.bench", "--url", support.worker_url(0), "--namespaces",
             "install", "--activity-types", "noop", "--max-in-flight", "64", "--worker-id",
             "installed-noop"], env=self.env, cwd=self.directory.name,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while statuses("install") != {"done": ROWS} and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertEqual(statuses("install"), {"done": ROWS})
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=20)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        self.assertEqual(worker.returncode, 0, err)
        stats = json.loads(out.strip().splitlines()[-1])
        self.assertEqual((stats["tasks_completed"], stats["tasks_failed"]), (ROWS, 0))

    def test_editable_install_points_at_the_tree(self) -> None:
        bin_dir = self.venv("editable")
        run([os.path.join(bin_dir, "pip"), "install", "--no-index", "--disable-pip-version-check",
             "-e", support.CLIENT_DIR], env=self.env, cwd=self.directory.name)
        where = run([os.path.join(bin_dir, "python"), "-c",
                     "import outboxd; print(outboxd.__file__)"],
                    env=self.env, cwd=self.directory.name).stdout.strip()
        self.assertEqual(where, os.path.join(support.SRC_DIR, "outboxd", "__init__.py"))


if __name__ == "__main__":
    unittest.main()
