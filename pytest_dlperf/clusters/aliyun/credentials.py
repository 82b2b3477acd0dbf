"""Alibaba Cloud credentials, from the environment or the Alibaba credentials file, held so that
the secret never reaches a log, a report, an exception or a repr."""
from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field
from pathlib import Path

# The Alibaba Cloud SDKs' names first, then FastGPU's (ncluster/ecluster users have these set).
ID_VARS = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIYUN_ACCESS_KEY_ID")
SECRET_VARS = ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIYUN_ACCESS_KEY_SECRET")
REGION_VARS = ("ALIBABA_CLOUD_REGION_ID", "ALIYUN_DEFAULT_REGION")
CREDENTIALS_FILE_VAR = "ALIBABA_CLOUD_CREDENTIALS_FILE"
DEFAULT_FILE = Path("~/.alibabacloud/credentials.ini")  # the credentials library's default


class CredentialsError(Exception):
    """No usable credentials: says where they were looked for (never what they are)."""


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    access_key_secret: str = field(repr=False)
    source: str = ""  # where they came from, for messages

    def __repr__(self) -> str:
        return f"Credentials(access_key_id={mask(self.access_key_id)!r}, source={self.source!r})"

    __str__ = __repr__

    def scrub(self, text: str) -> str:
        """``text`` with the secret (and the full key id) replaced: for anything shown or written."""
        if self.access_key_secret:
            text = text.replace(self.access_key_secret, "***")
        if self.access_key_id:
            text = text.replace(self.access_key_id, mask(self.access_key_id))
        return text


def mask(key_id: str) -> str:
    """An AccessKey ID shown as its last four characters: enough to tell keys apart."""
    return f"***{key_id[-4:]}" if len(key_id) > 4 else "***"


def _first(env: dict, names: tuple[str, ...]) -> tuple[str, str] | None:
    for name in names:
        if env.get(name):
            return name, env[name]
    return None


def load(env: dict | None = None, profile: str = "default") -> Credentials:
    """The environment's AccessKey pair, else the credentials file's ``[profile]`` section
    (``type = access_key``, ``access_key_id``, ``access_key_secret``)."""
    env = dict(os.environ if env is None else env)
    key_id, secret = _first(env, ID_VARS), _first(env, SECRET_VARS)
    if key_id and secret:
        return Credentials(key_id[1], secret[1], f"environment ({key_id[0]}, {secret[0]})")
    if key_id or secret:
        have, lack = (key_id, SECRET_VARS) if key_id else (secret, ID_VARS)
        raise CredentialsError(f"{have[0]} is set but none of {', '.join(lack)}: set both halves of the AccessKey pair")
    path = Path(env.get(CREDENTIALS_FILE_VAR) or DEFAULT_FILE).expanduser()
    if not path.is_file():
        raise CredentialsError(f"no Alibaba Cloud credentials: set {ID_VARS[0]} and {SECRET_VARS[0]} "
                               f"(or {ID_VARS[1]}/{SECRET_VARS[1]}), or write {path} "
                               f"([{profile}] access_key_id = ..., access_key_secret = ...)")
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error as exc:
        raise CredentialsError(f"{path}: not an INI file ({type(exc).__name__}); expected "
                               f"[{profile}] access_key_id = ..., access_key_secret = ...") from None
    section = env.get("ALIBABA_CLOUD_PROFILE", profile)
    if not parser.has_section(section):
        raise CredentialsError(f"{path}: no [{section}] section")
    sec = parser[section]
    kind = sec.get("type", "access_key")
    if kind != "access_key" or not sec.get("access_key_id") or not sec.get("access_key_secret"):
        raise CredentialsError(f"{path} [{section}]: needs type = access_key with access_key_id and "
                               f"access_key_secret (type {kind!r} is not supported here)")
    return Credentials(sec["access_key_id"], sec["access_key_secret"], f"{path} [{section}]")


def region(env: dict | None = None, given: str | None = None) -> str:
    """The region: the option, else ALIBABA_CLOUD_REGION_ID or FastGPU's ALIYUN_DEFAULT_REGION."""
    env = dict(os.environ if env is None else env)
    found = given or (_first(env, REGION_VARS) or ("", ""))[1]
    if not found:
        raise CredentialsError(f"no region: pass --dlperf-aliyun-region (dlperf cluster: --region) or set {REGION_VARS[0]} or {REGION_VARS[1]} "
                               "(e.g. cn-zhangjiakou)")
    return found
