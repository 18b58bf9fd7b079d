"""`python -m numpy_transformer data ...` against a local HTTP server: never the real hosts.

The server (http.server on 127.0.0.1, in a thread) serves small fixture files at the paths the
package asks for, answers Range requests, and can cut a download short. Each test runs the
command as a user types it, in a fresh process, and checks its exit status and messages:
a good download, a digest that differs, a cut and resumed download, a folder already complete,
a server that cannot be reached.
"""

import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from doors import blocked_places
from numpy_transformer.data.download import DATASETS

README = Path(__file__).resolve().parents[2] / "README.md"
# No proxy for 127.0.0.1, whatever the machine running the tests is set up with.
ENV = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy",
                                                                 "all_proxy")}


class Handler(BaseHTTPRequestHandler):
    """GET of a fixture file, whole (200) or from a byte on (206), maybe cut short."""

    def do_GET(self):
        state = self.server.state
        body, asked = state["files"].get(self.path), self.headers.get("Range")
        state["requests"].append((self.path, asked))
        if body is None:
            return self.send_error(404)
        start = int(asked.removeprefix("bytes=").split("-")[0]) if asked and state["ranges"] \
            else 0
        if start >= len(body) > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        cut = state["cut"].pop(self.path, None)      # only the first request is cut
        self.wfile.write(body[start:cut])
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """The server's state: files {url path: bytes}, requests [(path, Range)], cut {path: n}."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.state = {"files": {}, "requests": [], "cut": {}, "ranges": True,
                   "url": f"http://127.0.0.1:{httpd.server_address[1]}"}
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.state
    httpd.shutdown()
    httpd.server_close()


def fixtures(server, dataset):
    """Serve small stand-ins for every file of `dataset`; {path under OUT: saved bytes}."""
    saved = {}
    for i, remote in enumerate(DATASETS[dataset].files):
        text = "".join(f"line {n} of file {i}: ein mann, a man.\n" for n in range(40)).encode()
        saved[remote.path] = text
        server["files"]["/" + remote.source] = gzip.compress(text) if remote.gzipped else text
    return saved


def manifest(folder, saved):
    path = folder / "manifest.json"
    path.write_text(json.dumps({k: hashlib.sha256(v).hexdigest() for k, v in saved.items()}))
    return path


def data(*args, cwd):
    return subprocess.run([sys.executable, "-m", "numpy_transformer", "data", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120, env=ENV,
                          stdin=subprocess.DEVNULL)


def ok(done):
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def error(done, *words):
    """Exit status 2 and one `error: ...` line holding every word."""
    assert done.returncode == 2, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def leftovers(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("dataset", ["shakespeare", "multi30k"])
def test_a_good_download_saves_checked_files_and_prints_the_readme_commands(
        server, tmp_path, dataset):
    saved = fixtures(server, dataset)
    out = ok(data(dataset, "--out", "data", "--base-url", server["url"], "--manifest",
                  manifest(tmp_path, saved), "--no-progress", cwd=tmp_path))
    for name, text in saved.items():
        assert (tmp_path / "data" / name).read_bytes() == text, name   # .gz ones decompressed
    assert leftovers(tmp_path / "data") == sorted(saved)                  # no .part, no .gz
    assert len(server["requests"]) == len(saved)
    commands = [line.strip() for line in out.splitlines() if "python -m" in line]
    shown = "".join(p.read_text() for p in [README, *README.parent.glob("docs/*.md")])
    assert commands and all(c in shown for c in commands), commands     # README or docs/
    # the training commands name their configs/ file, which reads the data where it was saved
    configs = [c.split("--config ")[1].split()[0] for c in commands if "--config " in c]
    assert configs, commands
    wanted = ("data/tinyshakespeare.txt" if dataset == "shakespeare" else
              "data/multi30k/tok/train.lc.norm.tok.de")
    assert all(wanted in (README.parent / name).read_text() for name in configs), configs


def test_data_saved_elsewhere_prints_the_whole_commands(tmp_path):
    from numpy_transformer.tools.recipes import printed_commands
    lines = printed_commands("shakespeare", {"tinyshakespeare.txt": "elsewhere/t.txt"})
    assert lines[0] == "python -m numpy_transformer train-lm --text elsewhere/t.txt --steps 4000"


def test_a_digest_that_differs_is_refused_and_the_download_deleted(server, tmp_path):
    saved = fixtures(server, "shakespeare")            # not the real text: the built-in
    expected = DATASETS["shakespeare"].files[0].sha256  # digest refuses it
    actual = hashlib.sha256(saved["tinyshakespeare.txt"]).hexdigest()
    line = error(data("shakespeare", "--out", tmp_path / "d", "--base-url", server["url"],
                      cwd=tmp_path), "tinyshakespeare.txt", expected, actual, "deleted")
    assert "sha256" in line
    assert leftovers(tmp_path / "d") == []


def test_a_damaged_gzip_is_refused_and_deleted(server, tmp_path):
    saved = fixtures(server, "multi30k")
    raw = next(f for f in DATASETS["multi30k"].files if f.gzipped)
    server["files"]["/" + raw.source] = b"not gzip at all"
    error(data("multi30k", "--out", tmp_path / "d", "--base-url", server["url"], "--manifest",
               manifest(tmp_path, saved), cwd=tmp_path), raw.path, "gzip", "deleted")
    assert raw.path not in leftovers(tmp_path / "d")
    assert not [p for p in leftovers(tmp_path / "d") if p.endswith(".part")]


def test_a_cut_download_fails_cleanly_and_a_rerun_resumes_with_a_range(server, tmp_path):
    saved = fixtures(server, "shakespeare")
    path = "/" + DATASETS["shakespeare"].files[0].source
    server["cut"][path] = 300
    args = ("shakespeare", "--out", tmp_path / "d", "--base-url", server["url"], "--manifest",
            manifest(tmp_path, saved))
    error(data(*args, cwd=tmp_path), "after 300 of", "resume")
    assert leftovers(tmp_path / "d") == ["tinyshakespeare.txt.part"]   # never the final name
    assert (tmp_path / "d" / "tinyshakespeare.txt.part").stat().st_size == 300
    assert "resuming after 300 bytes" in ok(data(*args, cwd=tmp_path))
    assert server["requests"] == [(path, None), (path, "bytes=300-")]
    assert (tmp_path / "d" / "tinyshakespeare.txt").read_bytes() == saved["tinyshakespeare.txt"]
    assert leftovers(tmp_path / "d") == ["tinyshakespeare.txt"]


@pytest.mark.parametrize("server_answer", ["ignores Range", "416"])
def test_a_part_file_the_server_cannot_continue_is_started_over(server, tmp_path,
                                                               server_answer):
    saved = fixtures(server, "shakespeare")
    server["ranges"] = server_answer == "416"
    text = saved["tinyshakespeare.txt"]
    part = tmp_path / "d" / "tinyshakespeare.txt.part"
    part.parent.mkdir()
    part.write_bytes(b"x" * (len(text) + 5 if server["ranges"] else 50))
    ok(data("shakespeare", "--out", tmp_path / "d", "--base-url", server["url"], "--manifest",
            manifest(tmp_path, saved), cwd=tmp_path))
    assert (tmp_path / "d" / "tinyshakespeare.txt").read_bytes() == text
    assert leftovers(tmp_path / "d") == ["tinyshakespeare.txt"]


def test_a_complete_folder_is_checked_not_downloaded_again(server, tmp_path):
    saved = fixtures(server, "multi30k")
    args = ("multi30k", "--out", tmp_path / "d", "--base-url", server["url"], "--manifest",
            manifest(tmp_path, saved))
    ok(data(*args, cwd=tmp_path))
    server["requests"].clear()
    out = ok(data(*args, cwd=tmp_path))
    assert server["requests"] == []
    assert out.count("already there, sha256 ok") == len(saved)
    (tmp_path / "d" / "multi30k" / "val.en").write_text("edited\n")
    error(data(*args, cwd=tmp_path), "val.en", "expected sha256", "move it away")
    assert server["requests"] == []


def test_a_server_that_cannot_be_reached_or_lacks_the_file_is_a_clear_error(server, tmp_path):
    with socket.socket() as s:                      # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    error(data("shakespeare", "--out", tmp_path / "d", "--base-url", f"http://127.0.0.1:{port}",
               cwd=tmp_path), "cannot download", f"127.0.0.1:{port}", "--base-url")
    error(data("shakespeare", "--out", tmp_path / "d", "--base-url", server["url"],
               cwd=tmp_path), "HTTP 404", "input.txt")
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("dataset", ["shakespeare", "multi30k"])
def test_an_out_that_cannot_hold_the_files_is_refused_before_any_download(server, tmp_path,
                                                                          dataset):
    """A file, a path under a file, a dangling symbolic link or a link loop as --out (and,
    for a user other than root, a folder without write permission) is refused naming --out
    and the path, before a byte is asked of the server; files there are left as they were."""
    outs = {**blocked_places(tmp_path), "a_file/data": "is a file"}
    for out, why in outs.items():
        done = data(dataset, "--out", out, "--base-url", server["url"], cwd=tmp_path)
        error(done, "--out", repr(out), why)
        assert "downloading" not in done.stdout
    error(data(dataset, "--out", "", "--base-url", server["url"], cwd=tmp_path), "--out", "''")
    assert server["requests"] == []
    assert (tmp_path / "a_file").read_text() == "kept\n"
    assert os.readlink(tmp_path / "dangling") == "nowhere"


def test_a_manifest_naming_another_file_is_refused(server, tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"train.txt": "0" * 64}))
    error(data("shakespeare", "--base-url", server["url"], "--manifest", path, cwd=tmp_path),
          "--manifest", "train.txt")
    assert server["requests"] == []


def test_the_help_lists_every_file_and_the_mirror_options(tmp_path):
    out = ok(data("--help", cwd=tmp_path))
    assert "--base-url" in out and "--manifest" in out
    assert all(f.path in out for d in DATASETS.values() for f in d.files)
