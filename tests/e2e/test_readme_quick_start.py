"""The README's researcher quick start, run as pasted: the server block in a process of its own
(the first terminal), the session block in bash (the second), then the notebook block with that
session's TOKEN. Only the port differs (a free one for 8000)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def quick_start_blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of the README's researcher quick start."""
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("## Quick start: a researcher", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def wait_for(port: int, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"the aggregator did not listen on {port} within {seconds} s")


def test_the_researcher_quick_start_runs_as_pasted(tmp_path):
    blocks = quick_start_blocks()
    assert [lang for lang, _ in blocks] == ["sh", "sh", "python"]
    (_, server), (_, session), (_, notebook) = blocks
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
    }
    first = subprocess.Popen(
        ["bash", "-euc", server.replace("8000", str(port))],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_for(port, first)
        script = session.replace("8000", str(port)) + (
            # the notebook, with the session's TOKEN in its environment
            "\npython - <<'NOTEBOOK'\n" + notebook.replace("8000", str(port)) + "NOTEBOOK\n"
        )
        done = subprocess.run(
            ["bash", "-euc", script], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        os.killpg(first.pid, 15)
        first.wait(timeout=30)
    out = done.stdout
    assert "respondents" in out  # plan
    assert re.search(r"^\s*yes\s+0\.\d+", out, flags=re.M)  # results: the smokes share row
    assert "< 30" in out and "≥ 50" in out  # the banded breakdown
    assert (tmp_path / "answers.csv").read_text("utf-8").count("\n") == 2001  # header + reports
    assert "rrreg" in (tmp_path / "analysis.R").read_text("utf-8")
    assert "smokes ~ region + I(age / 10)" in out  # the notebook's regression summary
