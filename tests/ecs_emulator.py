"""An Alibaba Cloud ECS (2014-05-26) emulator for the tests: the one stand-in the project allows,
for a service this sandbox cannot reach. It speaks what the official SDK speaks (RPC style: POST /
with every parameter in the query, the action and version in x-acs-* headers), verifies the
ACS3-HMAC-SHA256 signature with the account's secret, and fails as the service does: JSON bodies
{RequestId, HostId, Code, Message, Recommend} with the service's HTTP statuses
(SignatureDoesNotMatch 400, InvalidAccessKeyId.NotFound 404, Throttling.User 400,
OperationDenied.NoStock 403, IncorrectInstanceStatus 403, InvalidInstanceId.NotFound 404).

Instances move through Pending -> Starting -> Running (and Stopping -> Stopped) on timers; their
public addresses come from a pool the test gives (loopback addresses where real sshd daemons run).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "2014-05-26"
NO_REGION = ("ModifyInstanceAttribute",)  # actions whose region is the endpoint's, not a parameter


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(code)
        self.status, self.code, self.message = status, code, message


@dataclass
class FakeInstance:
    id: str
    name: str
    instance_type: str
    image: str
    zone: str
    region: str
    tags: dict[str, str]
    status: str = "Pending"
    public_ip: str = ""
    private_ip: str = ""
    created: str = ""
    stopped_mode: str = "Not-applicable"
    spot_strategy: str = "NoSpot"
    security_groups: list[str] = field(default_factory=list)
    key_pair: str = ""
    until: float = 0.0  # when the current transition ends
    next_status: str = ""

    def to_api(self) -> dict:
        return {"InstanceId": self.id, "InstanceName": self.name, "InstanceType": self.instance_type,
                "Status": self.status, "ImageId": self.image, "ZoneId": self.zone, "RegionId": self.region,
                "CreationTime": self.created, "StoppedMode": self.stopped_mode, "SpotStrategy": self.spot_strategy,
                "InstanceNetworkType": "vpc", "HostName": self.name.replace(".", "-"),
                "PublicIpAddress": {"IpAddress": [self.public_ip] if self.public_ip else []},
                "InnerIpAddress": {"IpAddress": []},
                "EipAddress": {"AllocationId": "", "IpAddress": "", "InternetChargeType": ""},
                "VpcAttributes": {"VpcId": "vpc-emu", "VSwitchId": "vsw-emu", "NatIpAddress": "",
                                  "PrivateIpAddress": {"IpAddress": [self.private_ip] if self.private_ip else []}},
                "Tags": {"Tag": [{"TagKey": k, "TagValue": v} for k, v in self.tags.items()]},
                "SecurityGroupIds": {"SecurityGroupId": list(self.security_groups)}, "KeyPairName": self.key_pair,
                "OperationLocks": {"LockReason": []}}


@dataclass
class Fault:
    action: str
    status: int
    code: str
    message: str
    times: int = 1
    after: int = 0  # let this many calls of the action through first
    kind: str = "error"  # error: answer it; drop: do the call, then close without a reply; slow: wait `delay` first
    delay: float = 0.0


class Dropped(Exception):
    """The call was carried out but its reply is lost (the connection closes unanswered)."""


@dataclass
class Emulator:
    """The account's state and the rules; ``start()`` serves it on 127.0.0.1."""

    access_key_id: str
    access_key_secret: str
    region: str = "cn-zhangjiakou"
    addresses: list[str] = field(default_factory=list)  # public IPs handed out in order
    boot_s: float = 0.3  # Pending/Starting -> Running
    stop_s: float = 0.3  # Stopping -> Stopped
    stock: int = 100  # instances RunInstances may create before OperationDenied.NoStock
    instances: dict[str, FakeInstance] = field(default_factory=dict)
    deleted: dict[str, FakeInstance] = field(default_factory=dict)
    calls: list[tuple[str, dict]] = field(default_factory=list)  # (action, params): never a secret
    faults: list[Fault] = field(default_factory=list)
    rules: list[dict] = field(default_factory=list)  # security-group rules authorized
    tokens: dict[str, list[str]] = field(default_factory=dict)  # RunInstances ClientToken -> the ids it made
    nonces: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ serving
    def start(self) -> str:
        """Serve in a thread; the SDK endpoint ``127.0.0.1:PORT`` (protocol HTTP)."""
        emu = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    status, doc = emu.handle("POST", self.path, {k: v for k, v in self.headers.items()}, body)
                except Dropped:
                    self.close_connection = True
                    return
                data = json.dumps(doc).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json;charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # a client that gave up (slow reply)
                    self.close_connection = True

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def fail(self, action: str, code: str = "", status: int = 0, message: str = "", times: int = 1, after: int = 0,
             kind: str = "error", delay: float = 0.0) -> None:
        """The next ``times`` calls of ``action`` (after ``after`` good ones) answer this error, or
        (kind ``drop``) are carried out with the reply lost, or (kind ``slow``) answered ``delay`` s late."""
        self.faults.append(Fault(action, status, code, message or code, times, after, kind, delay))

    def live(self) -> list[FakeInstance]:
        with self.lock:
            self._advance()
            return list(self.instances.values())

    # ------------------------------------------------------------------ protocol
    def handle(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, dict]:
        request_id = str(uuid.uuid4()).upper()
        try:
            params = self._verify(method, path, headers, body)
            action = headers.get("x-acs-action") or headers.get("X-Acs-Action") or ""
            version = headers.get("x-acs-version") or headers.get("X-Acs-Version") or ""
            if version != VERSION:
                raise ApiError(400, "InvalidVersion", f"Specified parameter Version is not valid: {version!r}")
            with self.lock:
                self.calls.append((action, dict(params)))
                fault = self._inject(action)
            if fault is not None and fault.kind == "slow":
                time.sleep(fault.delay)
            with self.lock:
                self._advance()
                fn = getattr(self, f"_{action}", None)
                if fn is None:
                    raise ApiError(404, "InvalidAction.NotFound", f"Specified api {action!r} is not found")
                if action not in NO_REGION and params.get("RegionId") != self.region:
                    raise ApiError(404, "InvalidRegionId.NotFound", "The specified RegionId does not exist.")
                out = fn(params)
            if fault is not None and fault.kind == "drop":
                raise Dropped(action)
            return 200, {"RequestId": request_id, **out}
        except ApiError as err:
            return err.status, {"RequestId": request_id, "HostId": "ecs.aliyuncs.com", "Code": err.code,
                                "Message": err.message,
                                "Recommend": f"https://api.aliyun.com/troubleshoot?q={err.code}&product=Ecs"}

    def _verify(self, method: str, path: str, headers: dict, body: bytes) -> dict[str, str]:
        """ACS3-HMAC-SHA256 over the canonical request, as the SDK builds it; the query's parameters."""
        h = {k.lower(): v for k, v in headers.items()}
        auth = h.get("authorization", "")
        if not auth.startswith("ACS3-HMAC-SHA256 "):
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards.")
        try:
            parts = dict(p.split("=", 1) for p in auth.split(" ", 1)[1].split(","))
            credential, signed, signature = parts["Credential"], parts["SignedHeaders"], parts["Signature"]
        except (KeyError, ValueError):
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards.") from None
        if credential != self.access_key_id:
            raise ApiError(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        names = signed.split(";")
        required = {"host", "x-acs-action", "x-acs-version", "x-acs-date", "x-acs-signature-nonce",
                    "x-acs-content-sha256"}
        if not required <= set(names) or any(n not in h for n in names):
            raise ApiError(400, "IncompleteSignature", "The request signature does not conform to Aliyun standards.")
        payload = hashlib.sha256(body).hexdigest()
        if payload != h["x-acs-content-sha256"]:
            raise ApiError(400, "InvalidParameter.ContentSha256", "x-acs-content-sha256 does not match the body")
        url = urllib.parse.urlsplit(path)
        query = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        canonical_query = "&".join(f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}"
                                   for k, v in sorted(query))
        canonical_headers = "".join(f"{n}:{h[n].strip()}\n" for n in names)
        canonical = f"{method}\n{url.path or '/'}\n{canonical_query}\n{canonical_headers}\n{signed}\n{payload}"
        to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
        expected = hmac.new(self.access_key_secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise ApiError(400, "SignatureDoesNotMatch", "Specified signature is not matched with our calculation.")
        nonce = h["x-acs-signature-nonce"]
        with self.lock:
            if nonce in self.nonces:
                raise ApiError(400, "SignatureNonceUsed", "Specified signature nonce was used already.")
            self.nonces.add(nonce)
        return dict(query)

    def _inject(self, action: str) -> Fault | None:
        for f in self.faults:
            if f.action == action and f.times > 0:
                if f.after > 0:
                    f.after -= 1
                    return None
                f.times -= 1
                if f.kind == "error":
                    raise ApiError(f.status, f.code, f.message)
                return f
        return None

    def _advance(self) -> None:
        now = time.monotonic()
        for inst in self.instances.values():
            if inst.next_status and now >= inst.until:
                inst.status, inst.next_status = inst.next_status, ""
                if inst.status == "Starting":  # Pending -> Starting -> Running
                    inst.next_status, inst.until = "Running", now + self.boot_s / 2

    # ------------------------------------------------------------------ actions
    @staticmethod
    def _list(params: dict, prefix: str) -> list[str]:
        out, i = [], 1
        while f"{prefix}.{i}" in params:
            out.append(params[f"{prefix}.{i}"])
            i += 1
        return out

    def _tags(self, params: dict) -> dict[str, str | None]:
        """Tag.N.Key/Value; a key without a value (a filter: the key present, any value) maps to None."""
        out, i = {}, 1
        while f"Tag.{i}.Key" in params:
            out[params[f"Tag.{i}.Key"]] = params.get(f"Tag.{i}.Value")
            i += 1
        return out

    def _get(self, ids: list[str]) -> list[FakeInstance]:
        if not ids:
            raise ApiError(400, "MissingParameter.InstanceIds", "The input parameter InstanceId is mandatory.")
        missing = [i for i in ids if i not in self.instances]
        if missing:
            raise ApiError(404, "InvalidInstanceId.NotFound", "The specified InstanceId does not exist.")
        return [self.instances[i] for i in ids]

    def _DescribeInstances(self, p: dict) -> dict:  # noqa: N802 - the API's action names
        found = list(self.instances.values())
        tags = self._tags(p)
        found = [i for i in found if all(k in i.tags if v is None else i.tags.get(k) == v for k, v in tags.items())]
        if p.get("InstanceName"):
            pattern = p["InstanceName"]
            found = [i for i in found if (i.name.startswith(pattern[:-1]) if pattern.endswith("*") else i.name == pattern)]
        if p.get("InstanceIds"):
            ids = json.loads(p["InstanceIds"])
            found = [i for i in found if i.id in ids]
        if p.get("Status"):
            found = [i for i in found if i.status == p["Status"]]
        if p.get("NextToken") or p.get("MaxResults"):  # token paging
            size, start = int(p.get("MaxResults") or 10), int(p.get("NextToken") or 0)
        else:  # page numbers, from 1
            size = min(int(p.get("PageSize") or 10), 100)
            start = (int(p.get("PageNumber") or 1) - 1) * size
        page = found[start:start + size]
        token = str(start + size) if start + size < len(found) else ""
        return {"TotalCount": len(found), "PageSize": size, "PageNumber": start // size + 1, "NextToken": token,
                "Instances": {"Instance": [i.to_api() for i in page]}}

    def _RunInstances(self, p: dict) -> dict:  # noqa: N802
        for need in ("ImageId", "InstanceType"):
            if not p.get(need):
                raise ApiError(400, f"MissingParameter.{need}", f"The input parameter {need} is mandatory.")
        token = p.get("ClientToken")
        if token and token in self.tokens:  # the same request again (its reply was lost): the same answer
            return {"InstanceIdSets": {"InstanceIdSet": list(self.tokens[token])}, "OrderId": "emu", "TradePrice": 0.0}
        amount = int(p.get("Amount", 1))
        if len(self.instances) + amount > self.stock:
            raise ApiError(403, "OperationDenied.NoStock",
                           "The requested resource is sold out in the specified zone; try other types of resources "
                           "or other regions and zones.")
        if p.get("SpotStrategy") == "SpotWithPriceLimit" and not p.get("SpotPriceLimit"):
            raise ApiError(400, "InvalidSpotPriceLimit.NotSupported", "SpotPriceLimit is required with SpotWithPriceLimit")
        ids = []
        for _ in range(amount):
            n = len(self.instances) + len(self.deleted)
            inst = FakeInstance(
                id=f"i-emu{uuid.uuid4().hex[:16]}", name=p.get("InstanceName", ""), instance_type=p["InstanceType"],
                image=p["ImageId"], zone=p.get("ZoneId") or f"{self.region}-a", region=self.region,
                tags={k: v or "" for k, v in self._tags(p).items()}, created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                private_ip=f"172.16.0.{10 + n}", spot_strategy=p.get("SpotStrategy", "NoSpot"),
                security_groups=[p["SecurityGroupId"]] if p.get("SecurityGroupId") else [],
                key_pair=p.get("KeyPairName", ""),
                next_status="Starting", until=time.monotonic() + self.boot_s / 2)
            if int(p.get("InternetMaxBandwidthOut") or 0) > 0:
                used = {i.public_ip for i in self.instances.values()}
                free = [a for a in self.addresses if a not in used]
                inst.public_ip = free[0] if free else f"198.51.100.{n + 1}"

            self.instances[inst.id] = inst
            ids.append(inst.id)
        if token:
            self.tokens[token] = ids
        return {"InstanceIdSets": {"InstanceIdSet": ids}, "OrderId": "emu", "TradePrice": 0.0}

    def _status_change(self, p: dict, allowed: tuple[str, ...], now: str, then: str, delay: float) -> dict:
        insts = self._get(self._list(p, "InstanceId"))
        bad = [i for i in insts if i.status not in allowed]
        if bad:
            raise ApiError(403, "IncorrectInstanceStatus",
                           "The current status of the resource does not support this operation.")
        out = []
        for i in insts:
            prev = i.status
            i.status, i.next_status, i.until = now, then, time.monotonic() + delay
            out.append({"InstanceId": i.id, "Code": "200", "Message": "success", "PreviousStatus": prev,
                        "CurrentStatus": now})
        return {"InstanceResponses": {"InstanceResponse": out}}

    def _StartInstances(self, p: dict) -> dict:  # noqa: N802
        out = self._status_change(p, ("Stopped",), "Starting", "Running", self.boot_s)
        for i in self._get(self._list(p, "InstanceId")):
            i.stopped_mode = "Not-applicable"
        return out

    def _StopInstances(self, p: dict) -> dict:  # noqa: N802
        out = self._status_change(p, ("Running",), "Stopping", "Stopped", self.stop_s)
        for i in self._get(self._list(p, "InstanceId")):
            i.stopped_mode = p.get("StoppedMode", "KeepCharging")
        return out

    def _DeleteInstances(self, p: dict) -> dict:  # noqa: N802
        insts = self._get(self._list(p, "InstanceId"))
        force = p.get("Force", "false").lower() == "true"
        # Force releases a Running instance too; one still booting or stopping cannot be released.
        if any(i.status != "Stopped" and (not force or i.status != "Running") for i in insts):
            raise ApiError(403, "IncorrectInstanceStatus",
                           "The current status of the resource does not support this operation.")
        for i in insts:
            self.deleted[i.id] = self.instances.pop(i.id)
        return {}

    def _ModifyInstanceAttribute(self, p: dict) -> dict:  # noqa: N802
        (inst,) = self._get([p.get("InstanceId", "")])
        if "InstanceName" in p:
            inst.name = p["InstanceName"]
        return {}

    def _AuthorizeSecurityGroup(self, p: dict) -> dict:  # noqa: N802
        if not p.get("SecurityGroupId"):
            raise ApiError(400, "MissingParameter.SecurityGroupId", "The input parameter SecurityGroupId is mandatory.")
        rule = {k: p.get(k) for k in ("SecurityGroupId", "IpProtocol", "PortRange", "SourceCidrIp", "Policy")}
        if rule not in self.rules:  # an identical rule again is accepted, as the service does
            self.rules.append(rule)
        return {}
