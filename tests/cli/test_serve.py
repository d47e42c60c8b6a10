"""``symgrad serve`` answered on localhost and driven in headless Chromium: a shared URL renders its law on load, a
query typed into the form shows its law, a hostile expression is refused in one line and runs nothing, and long
work shows progress and can be cancelled."""

from __future__ import annotations

import ctypes
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser import Opened, browser  # noqa: F401 - the fixture

from symgrad.cli import main, serve
from symgrad.cli.serve import explain_argv
from symgrad.core.errors import SymgradError


def _ends_with_us() -> None:
    """In the server's process before it starts: on Linux, the kernel ends it when the test process ends, even one
    that was killed and ran no finalizer."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """``symgrad serve --port 0`` (a free port, named in its first line), stopped when the tests are done."""
    command = [sys.executable, "-c", "import sys; from symgrad.cli import main; sys.exit(main())", "serve"]
    process = subprocess.Popen(
        [*command, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=_ends_with_us
    )
    try:
        first = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert found, f"symgrad serve did not start: {first}{process.stdout.read() if process.poll() else ''}"
        yield found.group(0)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def request(address: str, path: str, method: str = "GET") -> dict:
    try:
        with urllib.request.urlopen(urllib.request.Request(address + path, method=method), timeout=10) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return json.loads(error.read())


def start(address: str, query: dict[str, str | list[str]]) -> str:
    answer = request(address, "/jobs?" + urllib.parse.urlencode(query, doseq=True), "POST")
    assert "id" in answer, answer
    return answer["id"]


def wait(address: str, key: str, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while (job := request(address, f"/jobs/{key}"))["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    return job


def law_shown(opened: Opened) -> dict:
    opened.page.wait_for_selector("#result .katex", timeout=60_000)
    opened.page.wait_for_function("document.getElementById('go').disabled === false", timeout=60_000)
    return opened.inspect() | {
        "status": opened.page.inner_text("#status"),
        "text": opened.page.inner_text("#result"),
    }


def test_a_shared_url_renders_its_law_on_load(server: str, browser) -> None:  # noqa: F811
    query = "expr=torch.tanh(W @ x).sum()&shape=W=k,n&shape=x=n&wrt=W"
    opened = Opened(browser)
    try:
        opened.page.goto(f"{server}/?{urllib.parse.quote(query, safe='=&')}")
        assert opened.page.input_value("#expr") == "torch.tanh(W @ x).sum()"
        assert opened.page.input_value("#shape") == "W=k,n x=n"
        seen = law_shown(opened)
    finally:
        opened.close()
    assert seen["errors"] == [] and seen["untypeset"] == 0 and seen["formulas"] >= 3, seen
    assert seen["svgs"] == 1 and seen["wide"] == [], seen
    assert "grad_W = torch.outer(1 - torch.tanh(W @ x) ** 2, x)" in seen["text"]
    assert opened.script_errors == []


def test_a_page_of_another_origin_that_frames_the_playground_starts_no_job(server: str, browser) -> None:  # noqa: F811
    """A page of another origin holding the playground's URL in a hidden frame: Chromium refuses to show the frame
    (frame-ancestors 'none'), so no script of the playground's runs there and no derivation starts; a link to the
    same URL opened from that page fills the form and waits for its Run button."""
    query = urllib.parse.urlencode({"expr": "torch.det(A)", "shape": "A=7,7"})
    elsewhere = "http://elsewhere.test/"
    framing = f'<html><body><iframe src="{server}/?{query}" style="display:none"></iframe>'
    framing += f'<a id="link" href="{server}/?{query}">shared</a></body></html>'
    opened = Opened(browser)
    try:
        opened.page.route(elsewhere, lambda route: route.fulfill(status=200, content_type="text/html", body=framing))
        opened.page.goto(elsewhere)
        opened.page.wait_for_timeout(1500)  # longer than a framed page would take to post its query
        (frame,) = opened.page.frames[1:]
        assert frame.url.startswith("chrome-error://")  # refused: the playground's page never loaded there
        opened.page.click("#link")
        opened.page.wait_for_selector("#expr")
        assert opened.page.input_value("#expr") == "torch.det(A)"
        opened.page.wait_for_timeout(1000)
        assert opened.page.inner_text("#result") == ""
    finally:
        opened.close()
    assert not [url for url in opened.requests if "/jobs" in url], opened.requests


def test_a_query_typed_into_the_form_shows_its_law_and_its_url(server: str, browser) -> None:  # noqa: F811
    opened = Opened(browser)
    try:
        opened.page.goto(server + "/")
        opened.page.fill("#expr", "(X @ w).sigmoid().sum()")
        opened.page.fill("#shape", "X=m, n w=n")  # a space after a comma, as the command line takes it
        opened.page.fill("#wrt", "w")
        opened.page.select_option("#lang", "en")
        opened.page.click("#go")
        seen = law_shown(opened)
        url = opened.page.url
    finally:
        opened.close()
    assert seen["errors"] == [] and seen["formulas"] >= 3, seen
    assert "grad_w = " in seen["text"]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert query["expr"] == ["(X @ w).sigmoid().sum()"] and query["shape"] == ["X=m,n", "w=n"]
    assert query["wrt"] == ["w"]


def test_a_hostile_expression_is_refused_and_runs_nothing(server: str, browser, tmp_path: Path) -> None:  # noqa: F811
    marker = tmp_path / "ran"
    hostile = f"__import__('os').system('touch {marker}')"
    job = wait(server, start(server, {"expr": hostile}))
    assert job["state"] == "done" and job["code"] == 2 and job["html"] == ""
    assert job["error"] and "\n" not in job["error"]
    opened = Opened(browser)
    try:
        opened.page.goto(f"{server}/?" + urllib.parse.urlencode({"expr": hostile}))
        opened.page.wait_for_selector("#status.error", timeout=30_000)
        shown = opened.page.inner_text("#status")
    finally:
        opened.close()
    assert shown == job["error"]
    assert not marker.exists()


def test_long_work_shows_progress_and_can_be_cancelled(server: str) -> None:
    key = start(server, {"expr": "(A @ B).tanh().sum()", "shape": ["A=12,12", "B=12,12"], "wrt": "A"})
    deadline = time.monotonic() + 30
    while not (job := request(server, f"/jobs/{key}"))["progress"] and time.monotonic() < deadline:
        assert job["state"] == "running", job
        time.sleep(0.2)
    assert "limit 30 s" in job["progress"], job
    assert request(server, f"/jobs/{key}", "DELETE") == {"cancelled": True, "state": "cancelled"}
    assert request(server, f"/jobs/{key}")["state"] == "cancelled"


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ({"expr": ["x.sum()"], "module": ["model.py:Net"]}, "unknown query name 'module'"),
        ({"expr": ["  "]}, "type an expression"),
        ({"expr": ["x.sum()"], "lang": ["fr"]}, "lang is en or zh"),
        ({"expr": ["x.sum()"], "wrt": ["x", "y"]}, "wrt is given once"),
        ({"expr": ["x.sum()"], "check": ["maybe"]}, "check is yes or no"),
    ],
)
def test_a_query_names_only_what_the_command_line_takes(query: dict, refusal: str) -> None:
    with pytest.raises(SymgradError, match=refusal):
        explain_argv(query, time_limit=5)


def test_nothing_typed_becomes_an_option() -> None:
    argv = explain_argv({"expr": ["--verify=model.py:f"], "shape": ["--module=m.py:N"]}, time_limit=5)
    assert argv[-2:] == ["--", "--verify=model.py:f"] and "--shape=--module=m.py:N" in argv


def test_the_time_limit_names_what_the_form_has(capsys) -> None:
    """Stopped at its time limit, a playground derivation suggests the form's box that skips the proofs (and symbolic
    sizes only where a size is a number), never a command-line option the form does not have."""
    argv = explain_argv({"expr": ["(A @ B).tanh().sum()"], "shape": ["A=12,12", "B=12,12"], "wrt": ["A"]}, time_limit=1)
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "tick 'skip the proofs and checks'" in line and "symbolic ones" in line
    assert "--" not in line
    symbolic = {"expr": ["F.cross_entropy(torch.tanh(X @ W1) @ W2, y)"], "order": ["2"], "wrt": ["W1"],
                "shape": ["X=m,d", "W1=d,h", "W2=h,c", "y=m"]}  # fmt: skip
    assert main(explain_argv(symbolic, time_limit=0.5)) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.endswith("tick 'skip the proofs and checks' (the formulas stay)"), line


def test_the_form_skips_the_proofs_by_a_box() -> None:
    argv = explain_argv({"expr": ["x.sum()"], "shape": ["x=n"], "check": ["no"]}, time_limit=30)
    assert "--no-check" in argv and argv[-2:] == ["--", "x.sum()"]
    assert "--no-check" not in explain_argv({"expr": ["x.sum()"], "check": ["yes"]}, time_limit=30)
    assert 'id="skip" name="skip" checked' in serve.playground({"expr": ["x.sum()"], "check": ["no"]})


@pytest.mark.slow
def test_a_second_order_law_of_a_two_layer_net_fits_the_playgrounds_time_limit(capsys) -> None:
    """The Hessian of a two-layer network's cross-entropy at symbolic sizes, proofs included, within the
    playground's default limit of CPU time (it took 45 s)."""
    symbolic = {"expr": ["F.cross_entropy(torch.tanh(X @ W1) @ W2, y)"], "order": ["2"], "wrt": ["W1"],
                "shape": ["X=m,d", "W1=d,h", "W2=h,c", "y=m"]}  # fmt: skip
    assert main(explain_argv(symbolic, time_limit=30)) == 0
    assert "proved the Hessian law" in capsys.readouterr().out


def test_a_connection_that_never_finishes_its_headers_is_closed(server: str) -> None:
    """Half a request's headers, then silence: the playground closes the connection after its deadline (it kept
    such a connection open for good), and answers the next request as before."""
    host, port = urllib.parse.urlsplit(server).netloc.split(":")
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        connection.settimeout(serve.HEADERS_WITHIN + 10)
        started = time.monotonic()
        assert connection.recv(100) == b""  # closed, with nothing said
        assert serve.HEADERS_WITHIN - 1 <= time.monotonic() - started <= serve.HEADERS_WITHIN + 5
    with urllib.request.urlopen(server + "/", timeout=10) as answer:
        assert answer.status == 200


def test_second_order_and_chinese_by_query(server: str) -> None:
    job = wait(server, start(server, {"expr": "(x * x).sum()", "shape": "x=n", "order": "2", "lang": "zh"}))
    assert job["state"] == "done" and job["code"] == 0, job
    assert "Hessian" in job["html"] and "create_graph" in job["html"]


def test_a_busy_port_is_one_line(server: str, capsys) -> None:
    port = server.rsplit(":", 1)[1]
    assert main(["serve", "--port", port]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"symgrad: error: cannot listen on 127.0.0.1:{port}: ") and err.count("\n") == 1


def test_a_request_for_another_host_name_is_refused(server: str) -> None:
    """A page elsewhere whose name points here (DNS rebinding) does not reach the playground."""
    asked = urllib.request.Request(server + "/", headers={"Host": "attacker.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(asked, timeout=10)
    refused.value.close()
    assert refused.value.code == 400


def test_a_lost_server_shows_an_error_and_frees_the_form(server: str, browser) -> None:  # noqa: F811
    opened = Opened(browser)
    try:
        opened.page.goto(server + "/")
        opened.page.route("**/jobs**", lambda route: route.abort())
        opened.page.fill("#expr", "(x * x).sum()")
        opened.page.fill("#shape", "x=n")
        opened.page.click("#go")
        opened.page.wait_for_selector("#status.error", timeout=10_000)
        freed = opened.page.evaluate("document.getElementById('go').disabled === false")
    finally:
        opened.close()
    assert freed


def test_queries_the_form_cannot_make_are_answered_in_one_line(server: str) -> None:
    with urllib.request.urlopen(server + "/?lang=en&lang=zh", timeout=10) as page:  # the first valid language
        assert page.status == 200 and '<html lang="en">' in page.read().decode()
    asked = urllib.request.Request(
        server + "/jobs?expr=x.sum()&shape=x=n", method="POST", headers={"Sec-Fetch-Site": "cross-site"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(asked, timeout=10)
    with refused.value:
        assert refused.value.code == 403 and "own page only" in json.loads(refused.value.read())["error"]
    key = start(server, {"expr": "(x * x).sum()", "shape": "x=n"})
    done = wait(server, key)
    assert done["state"] == "done" and request(server, f"/jobs/{key}")["seconds"] == done["seconds"]
    assert request(server, f"/jobs/{key}", "DELETE") == {"cancelled": False, "state": "done"}


def test_a_derivation_whose_page_stopped_asking_is_ended(monkeypatch) -> None:
    monkeypatch.setattr(serve, "ABANDONED_AFTER", 0.5)
    jobs = serve.Jobs(30, main)
    try:
        key = jobs.start({"expr": ["(A @ B).tanh().sum()"], "shape": ["A=12,12", "B=12,12"], "wrt": ["A"]})
        time.sleep(1.0)  # nobody asks
        jobs.sweep()
        assert jobs.jobs[key].state == "cancelled" and not jobs.jobs[key].process.is_alive()
    finally:
        jobs.close()


def test_no_page_may_frame_the_playground_and_a_link_from_elsewhere_waits_for_run(server: str) -> None:
    """Every response forbids framing and sniffing; the query in a URL opened from another site's page (a link, a
    hidden frame) fills the form without running it, while one typed or bookmarked (Sec-Fetch-Site none) runs."""
    query = "/?" + urllib.parse.urlencode({"expr": "torch.det(A)", "shape": "A=3,3"})
    pages = {}
    for site in ("cross-site", "same-site", "none", "same-origin"):
        asked = urllib.request.Request(server + query, headers={"Sec-Fetch-Site": site})
        with urllib.request.urlopen(asked, timeout=10) as answer:
            assert answer.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
            assert answer.headers["X-Frame-Options"] == "DENY"
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
            pages[site] = answer.read().decode("utf-8")
    assert all('value="torch.det(A)"' in page for page in pages.values())  # the form is filled in every case
    runs = {site: "if (true && new URLSearchParams" in page for site, page in pages.items()}
    assert runs == {"cross-site": False, "same-site": False, "none": True, "same-origin": True}
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server + "/jobs/none", timeout=10)
    assert missing.value.headers["X-Frame-Options"] == "DENY"
    missing.value.close()


def test_listening_beyond_this_machine_warns_and_answers_only_its_own_names() -> None:
    """--host 0.0.0.0 says what it exposes, and still refuses a request addressed to a name that is not this
    machine's (DNS rebinding) unless --allow-host names it."""
    command = [sys.executable, "-c", "import sys; from symgrad.cli import main; sys.exit(main())", "serve"]
    argv = [*command, "--host", "0.0.0.0", "--port", "0", "--allow-host", "playground.test"]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ends_with_us
    )
    try:
        port = re.search(r"http://0\.0\.0\.0:(\d+)/", process.stdout.readline()).group(1)
        warning = process.stderr.readline()
        assert warning.startswith("symgrad: warning: --host 0.0.0.0 lets anyone who reaches this machine run")
        assert "playground.test" in warning
        codes = {}
        for name in ("attacker.example", "127.0.0.1", "playground.test"):
            asked = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": name})
            try:
                with urllib.request.urlopen(asked, timeout=10) as answer:
                    codes[name] = answer.status
            except urllib.error.HTTPError as refused:
                codes[name] = refused.code
                refused.close()
        assert codes == {"attacker.example": 400, "127.0.0.1": 200, "playground.test": 200}
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def _runs_a_helper(pid_file: str) -> Callable[[list[str]], int]:
    """A derivation that starts a long-running program of its own (as explain starts Graphviz's dot), says where,
    and waits on it."""

    def run(argv: list[str]) -> int:
        helper = subprocess.Popen(["sleep", "60"])
        Path(pid_file).write_text(str(helper.pid), encoding="utf-8")
        helper.wait()
        return 0

    return run


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie, waiting to be reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_a_cancel_ends_the_programs_the_derivation_started(tmp_path: Path) -> None:
    """Cancelling ends the derivation's whole process group: Graphviz's dot, started by it, no longer runs on
    outside the limit of two jobs."""
    pid_file = tmp_path / "helper.pid"
    jobs = serve.Jobs(30, _runs_a_helper(str(pid_file)))
    try:
        key = jobs.start({"expr": ["x.sum()"], "shape": ["x=2"], "wrt": ["x"]})
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        helper = int(pid_file.read_text())
        assert _alive(helper)
        assert jobs.cancel(key) == {"cancelled": True, "state": "cancelled"}
        deadline = time.monotonic() + 5
        while _alive(helper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(helper)
    finally:
        jobs.close()
