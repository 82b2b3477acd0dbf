"""Debian's chromium, headless, opening pages from disk as a person's browser would (tests/setup.sh
installs it). Every request chromium makes goes through a proxy on loopback that answers nothing and
keeps what it was asked for, so a test can say that no request left the page. Chromium asks Google's
services for the time, updates and accounts on its own whatever the flags; ``own_hosts`` learns those
from a blank page, and ``page_requests`` leaves them out.

``Devtools`` drives chromium over its DevTools protocol (a pipe, no port): it opens a page at a
window size, sees every request a page attempts (and fails each but a file:// load of the site),
every window it opens, and clicks as a person does; ``click_every_control`` clicks each control a
page offers (plotly's toolbar, menus and legend, dialogs, buttons)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# chromium's own traffic (updates, sync, field trials) is turned off: what reaches the proxy is the page's
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--metrics-recording-only", "--mute-audio",
         "--disable-features=OptimizationHints,OptimizationGuideModelDownloading,OptimizationHintsFetching",
         "--virtual-time-budget=8000")


def executable() -> str:
    found = shutil.which("chromium")
    assert found, "chromium is not installed: run tests/setup.sh (it installs Debian's chromium)"
    return found


def _host(line: str) -> str:
    """The host of a proxy request line: "CONNECT h:443 HTTP/1.1" or "GET http://h/path HTTP/1.1"."""
    target = line.split(" ")[1] if " " in line else line
    return target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]


class Requests:
    """A proxy that answers nothing: it keeps the first line of every request sent to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.seen.append(conn.recv(4096).decode("latin-1").split("\r\n", 1)[0])
                except OSError:
                    self.seen.append("(a connection that sent nothing)")

    def close(self) -> None:
        self.sock.close()

    def page_requests(self, own: set[str]) -> list[str]:
        """What was asked of hosts other than chromium's own services."""
        return [line for line in self.seen if _host(line) not in own]


@contextmanager
def offline() -> Iterator[Requests]:
    """Requests chromium sends anywhere (loopback included) while the block runs."""
    proxy = Requests()
    try:
        yield proxy
    finally:
        proxy.close()


def _run(page: Path, proxy: Requests, profile: Path, *what: str, size: tuple[int, int] = (1300, 1800)) -> str:
    cmd = [executable(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
           f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>", *what,
           page.resolve().as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout


def dom(page: Path, proxy: Requests, profile: Path) -> str:
    """The page's DOM after its scripts ran."""
    return _run(page, proxy, profile, "--dump-dom")


def screenshot(page: Path, proxy: Requests, profile: Path, out: Path, size: tuple[int, int] = (1300, 1800)) -> Path:
    _run(page, proxy, profile, f"--screenshot={out}", size=size)
    assert out.is_file(), f"chromium wrote no screenshot of {page}"
    return out


# Google's account service, which chromium asks on its own at some starts and not others (on 2026-11-28 a
# blank page's start did not, a later page's did): never a page's, whose own attempts DevTools sees anyway
CHROMIUM_SERVICES = frozenset({"accounts.google.com"})


def own_hosts(tmp: Path) -> set[str]:
    """The hosts chromium asks on its own while it shows a blank page from disk, and its account service."""
    blank = tmp / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body>blank</body></html>", encoding="utf-8")
    with offline() as proxy:
        dom(blank, proxy, tmp / "blank-profile")
    return {_host(line) for line in proxy.seen} | CHROMIUM_SERVICES


# every chart of the site's pages drawn and fitted to its legend (site.js marks each so)
DRAWN = "[...document.querySelectorAll('.chart')].every(c => c.hasAttribute('data-drawn'))"


class Devtools:
    """Chromium driven over its DevTools protocol on a pipe (``--remote-debugging-pipe``: fd 3 in,
    fd 4 out, messages ended by NUL), so a test can click a page's controls as a person would and
    see every request the page attempts: the Network domain reports each one before it is sent,
    and request interception (the Fetch domain) fails every one that is not a file:// load under
    ``allowed``, so none leaves the machine. The proxy of ``offline`` stays behind both."""

    def __init__(self, profile: Path, proxy: Requests, allowed: Path, size: tuple[int, int] = (1300, 900)) -> None:
        import os

        assert not profile.exists(), f"{profile}: give chromium a new profile (on one it used, it cannot open the pipe)"
        self.allowed = allowed.resolve().as_uri() + "/"
        self.attempted: list[str] = []  # every request a page attempted that is not a file:// load under allowed
        self.events: list[dict] = []
        self._next, self._buf, self.session, self.target = 0, b"", "", ""
        import fcntl

        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        for name in ("cmd_r", "res_w"):  # above 4, so that bash's "3<&N 4>&M" never closes what it set
            fd = locals()[name]
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            cmd_r, res_w = (moved, res_w) if name == "cmd_r" else (cmd_r, moved)
        # bash puts the pipes at the fds chromium reads and writes (3 and 4), then becomes chromium
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{cmd_r} 4>&{res_w} {cmd_r}<&- {res_w}>&-', "chromium", executable(),
             *FLAGS[:-1], f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
             f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
             "--remote-debugging-pipe", "about:blank"],
            pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        os.close(cmd_r)
        os.close(res_w)
        self.size = size

    def close(self) -> None:
        """Chromium asked to close, and its process group ended if it has not in 10 s (a renderer left
        behind would hold the profile, and the next chromium on it would hand over to it and exit)."""
        import os
        import signal

        try:
            self.send("Browser.close", session="", wait=False)
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        for fd in (self._cmd_w, self._res_r):
            os.close(fd)

    def _read(self, timeout: float) -> dict | None:
        import json
        import os
        import select

        while b"\0" not in self._buf:
            ready, _, _ = select.select([self._res_r], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self._res_r, 1 << 20)
            assert chunk, "chromium closed its DevTools pipe"
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def _event(self, message: dict) -> None:
        method, params = message.get("method", ""), message.get("params", {})
        self.events.append(message)
        url = ""
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
        elif method == "Network.webSocketCreated":
            url = params["url"]
        elif method in ("Target.targetCreated", "Target.targetInfoChanged") and params["targetInfo"]["type"] == "page" \
                and params["targetInfo"]["targetId"] != self.target:
            url = params["targetInfo"]["url"]  # a window the page opened (plotly's "Share" opens its cloud's)
            if url not in ("", "about:blank"):  # seen: closed, so that the page under test stays in front
                self.send("Target.closeTarget", {"targetId": params["targetInfo"]["targetId"]}, wait=False, session="")
        elif method == "Fetch.requestPaused":
            url = params["request"]["url"]
            ok = url.startswith(self.allowed)
            self.send("Fetch.continueRequest" if ok else "Fetch.failRequest",
                      {"requestId": params["requestId"], **({} if ok else {"errorReason": "BlockedByClient"})},
                      wait=False)
        if url and url not in ("about:blank", "") and not url.startswith(self.allowed):
            self.attempted.append(f"{method}: {url}")

    def send(self, method: str, params: dict | None = None, wait: bool = True, session: str | None = None) -> dict:
        """A command to the page's session (the browser's with ``session=""``); its result."""
        import json
        import os

        self._next += 1
        ident = self._next
        message = {"id": ident, "method": method, "params": params or {}}
        if (self.session if session is None else session):
            message["sessionId"] = self.session if session is None else session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        while wait:
            got = self._read(60)
            assert got is not None, f"chromium did not answer {method} in 60 s"
            if got.get("id") == ident:
                assert "error" not in got, f"{method}: {got['error']}"
                return got.get("result", {})
            self._event(got)
        return {}

    def pump(self, seconds: float) -> None:
        """Take the events of the next ``seconds`` (requests, windows opened)."""
        import time

        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            got = self._read(left)
            if got is not None and "id" not in got:
                self._event(got)

    def open(self, page: Path) -> None:
        """A new tab on the page (the last one closed), its requests watched and intercepted, once it
        has loaded and its charts are drawn; ``attempted`` starts again empty."""
        self.attempted = []
        self.send("Target.setDiscoverTargets", {"discover": True}, session="")
        if self.target:
            self.send("Target.closeTarget", {"targetId": self.target}, session="")
        self.target = self.send("Target.createTarget", {"url": "about:blank"}, session="")["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": self.target, "flatten": True},
                                 session="")["sessionId"]
        for method, params in (("Network.enable", {}), ("Page.enable", {}), ("Runtime.enable", {}),
                               ("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}),
                               ("Emulation.setDeviceMetricsOverride", {"width": self.size[0], "height": self.size[1],
                                                                       "deviceScaleFactor": 1, "mobile": False})):
            self.send(method, params)
        self.send("Page.navigate", {"url": page.resolve().as_uri()})
        self.wait_for(f"document.readyState === 'complete' && {DRAWN}")

    def resize(self, width: int, height: int) -> None:
        """The window's size from now on (the page open, if any, is laid out again)."""
        self.size = (width, height)
        if self.session:
            self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                              "mobile": False})
            self.pump(0.05)
            self.wait_for(DRAWN)  # plotly's charts follow the window after a resize event

    def screenshot(self, out: Path) -> Path:
        """The window as it shows now, as a PNG."""
        import base64

        out.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"]))
        return out

    def dom(self) -> str:
        """The page's DOM as it is now (what ``--dump-dom`` prints once the scripts ran)."""
        return str(self.evaluate("document.documentElement.outerHTML"))

    def evaluate(self, expression: str) -> object:
        got = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        assert "exceptionDetails" not in got, f"{expression}: {got['exceptionDetails']}"
        return got["result"].get("value")

    def wait_for(self, expression: str, seconds: float = 30) -> None:
        import time

        end = time.monotonic() + seconds
        while not self.evaluate(expression):
            assert time.monotonic() < end, f"the page never came to {expression!r}"
            self.pump(0.05)

    def click(self, x: float, y: float) -> None:
        """A person's click (the mouse moved there, pressed and released)."""
        for kind, extra in (("mouseMoved", {}), ("mousePressed", {"button": "left", "clickCount": 1}),
                            ("mouseReleased", {"button": "left", "clickCount": 1})):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def type_text(self, selector: str, text: str) -> None:
        """Focus the element and type as a person does (an input event per keystroke)."""
        self.evaluate(f"document.querySelector({json_string(selector)}).focus()")
        self.send("Input.insertText", {"text": text})

    def pick(self, selector: str, value: str) -> None:
        """Choose an option of a <select>, as a person's pick does (its change event)."""
        self.evaluate(f"(() => {{ const s = document.querySelector({json_string(selector)}); s.value = "
                      f"{json_string(value)}; s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()")


def json_string(text: str) -> str:
    import json

    return json.dumps(text)


# The controls a page offers (plotly's toolbar buttons, its menus' buttons, legend entries, any dialog a
# button opens, the page's own buttons and inputs), each with a key that names it across plotly's
# redraws; locate(key) brings one into view and gives its centre.
CONTROLS = """window.__controls = () => {
  const out = new Map();
  const add = (key, el, chart) => out.set(key, [el, chart]);
  document.querySelectorAll(".js-plotly-plot").forEach(chart => {
    const id = chart.id;
    chart.querySelectorAll(".modebar-btn").forEach(b => add(id + " toolbar " + b.getAttribute("data-title"), b, chart));
    chart.querySelectorAll(".updatemenu-button").forEach(b => add(id + " menu " + b.textContent, b, chart));
    chart.querySelectorAll(".legend .traces").forEach((t, i) => {
      const toggle = t.querySelector(".legendtoggle");
      if (toggle) add(id + " legend " + i + " " + t.textContent, toggle, chart);
    });
  });
  document.querySelectorAll("button:not(.modebar-btn), [role=button], input[type=button], input[type=submit], " +
                            "[class*=dialog] a").forEach((b, i) => add("page " + (b.id || b.textContent || i), b, null));
  for (const [key, [el]] of [...out]) {
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0)) out.delete(key);
  }
  return out;
};
window.__seen = [];
window.__next = clicked => {  // the next control to click: one the last click brought up first, then in page order
  const controls = window.__controls(), keys = [...controls.keys()];
  const fresh = keys.filter(k => !window.__seen.includes(k) && !clicked.includes(k));
  window.__seen = keys;
  const key = fresh[0] || keys.find(k => !clicked.includes(k));
  return key === undefined ? null : window.__locate(key, controls);
};
window.__locate = (key, controls) => { const got = (controls || window.__controls()).get(key); if (!got) return null;
  const [el, chart] = got; el.scrollIntoView({block: "center"});
  const c = chart ? chart.getBoundingClientRect() : null, r = el.getBoundingClientRect();
  return {key: key, x: r.left + r.width / 2, y: r.top + r.height / 2,
          hover: c ? [c.left + c.width / 2, c.top + c.height / 2] : null};
};"""


def click_every_control(tools: Devtools) -> list[str]:
    """Click each control of the page once, as a person would (the mouse over its chart first, so that
    the toolbar shows), those that a click brings up (a dialog's buttons) first; the keys clicked."""
    tools.evaluate(CONTROLS)
    clicked: list[str] = []
    for _ in range(300):
        at = tools.evaluate(f"window.__next({json_string_list(clicked)})")
        if at is None:
            return clicked
        if at["hover"]:
            tools.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": at["hover"][0], "y": at["hover"][1]})
        tools.click(at["x"], at["y"])
        clicked.append(at["key"])
        tools.pump(0.01)
    raise AssertionError(f"the page's controls kept coming: {clicked[-10:]}")


def json_string_list(items: list[str]) -> str:
    import json

    return json.dumps(items)
