"""Debian's chromium, headless, opening pages from disk as a person's browser would (tests/setup.sh
installs it). Every request chromium makes goes through a proxy on loopback that answers nothing and
keeps what it was asked for, so a test can say that no request left the page. Chromium asks Google's
services for the time, updates and accounts on its own whatever the flags; ``own_hosts`` learns those
from a blank page, and ``page_requests`` leaves them out."""
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


def own_hosts(tmp: Path) -> set[str]:
    """The hosts chromium asks on its own while it shows a blank page from disk."""
    blank = tmp / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body>blank</body></html>", encoding="utf-8")
    with offline() as proxy:
        dom(blank, proxy, tmp / "blank-profile")
    return {_host(line) for line in proxy.seen}
