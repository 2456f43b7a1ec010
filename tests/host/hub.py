"""A loopback Hugging Face Hub for the real `hf` CLI (it honours HF_ENDPOINT).

It answers the four calls `hf download REPO [--include ...] --local-dir DIR` makes in
huggingface_hub 2.4.0 (`_snapshot_download.py`, `file_download.py`), with the shapes that
release parses:

- `GET /api/models/{repo}/revision/{revision}`: the repo's info, `sha` (the commit) and `siblings`;
- `GET /api/models/{repo}/tree/{commit}?recursive=...`: one entry per file (`type`, `oid`, `size`,
  `path`), as `RepoFile` reads it;
- `HEAD /{repo}/resolve/{commit}/{file}`: `X-Repo-Commit`, `ETag` and `Content-Length`, no Xet
  headers, so the client takes the plain HTTP download;
- `GET /{repo}/resolve/{commit}/{file}`: the bytes.

As the Hub does: an unknown repo is 404 with `X-Error-Code: RepoNotFound`, an unknown file 404
with `EntryNotFound`, a revision that is neither `main` nor the repo's commit 404 with
`RevisionNotFound`, a gated repo's file asked without a token 401 with `GatedRepo` (huggingface_hub
`utils/_http.py` turns each code into its own error). Every request is recorded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from tests.runner.loopback import LoopbackServer, QuietHandler


@dataclass
class HubRepo:
    files: dict[str, bytes]
    gated: bool = False
    commit: str = field(default="")

    def __post_init__(self) -> None:
        digest = hashlib.sha1(json.dumps(sorted((k, len(v)) for k, v in self.files.items())).encode())
        self.commit = self.commit or digest.hexdigest()


class LoopbackHub(LoopbackServer):
    """`repos[owner/name]` = HubRepo; `requests` records (method, path, had a token)."""

    def __init__(self, repos: dict[str, HubRepo]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, bool]] = []
        hub = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                hub.answer(self, head=False)

            def do_HEAD(self) -> None:
                hub.answer(self, head=True)

        super().__init__(Handler)

    def answer(self, handler: QuietHandler, *, head: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        token = handler.headers.get("authorization", "").startswith("Bearer ")
        self.requests.append((handler.command, path, token))
        if path.startswith("/api/models/"):
            rest = path.removeprefix("/api/models/")
            for marker in ("/revision/", "/tree/"):
                if marker in rest:
                    repo_id, _, revision = rest.partition(marker)
                    repo = self.find(handler, repo_id, token)
                    if repo is None:
                        return
                    if revision.split("/", 1)[0] not in ("main", repo.commit):
                        self.error(handler, 404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
                        return
                    if marker == "/revision/":
                        body = {"id": repo_id, "modelId": repo_id, "sha": repo.commit, "private": False,
                                "gated": "auto" if repo.gated else False,
                                "siblings": [{"rfilename": name} for name in sorted(repo.files)]}  # fmt: skip
                    else:
                        body = [{"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data), "path": name}
                                for name, data in sorted(repo.files.items())]  # fmt: skip
                    self.send(handler, 200, json.dumps(body).encode(), {"content-type": "application/json"}, head)
                    return
        elif "/resolve/" in path:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            repo = self.find(handler, repo_id, token, download=True)
            if repo is None:
                return
            revision, _, filename = rest.partition("/")
            if revision not in ("main", repo.commit):
                self.error(handler, 404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
                return
            if filename not in repo.files:
                self.error(handler, 404, "EntryNotFound", f"{filename} does not exist on the Hub", head)
                return
            data = repo.files[filename]
            headers = {"content-type": "application/octet-stream", "X-Repo-Commit": repo.commit,
                       "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}  # fmt: skip
            self.send(handler, 200, data, headers, head)
            return
        self.error(handler, 404, "RepoNotFound", f"no route {path}", head)

    def find(self, handler: QuietHandler, repo_id: str, token: bool, *, download: bool = False) -> HubRepo | None:
        """The repo; a gated one's files only with a token (its info and file list are public, as
        on the Hub: a gated repo's page lists its files to anyone)."""
        repo = self.repos.get(repo_id)
        if repo is None:
            self.error(handler, 404, "RepoNotFound", "Repository not found", handler.command == "HEAD")
            return None
        if repo.gated and not token and download:
            message = f"Access to model {repo_id} is restricted. You must have access to it and be authenticated."
            self.error(handler, 401, "GatedRepo", message, handler.command == "HEAD")
            return None
        return repo

    def error(self, handler: QuietHandler, status: int, code: str, message: str, head: bool) -> None:
        body = json.dumps({"error": message}).encode()
        headers = {"content-type": "application/json", "X-Error-Code": code, "X-Error-Message": message}
        self.send(handler, status, body, headers, head)

    @staticmethod
    def send(handler: QuietHandler, status: int, data: bytes, headers: dict[str, str], head: bool) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        if not head:
            handler.wfile.write(data)

    def env(self) -> dict[str, str]:
        """What the `hf` CLI needs to use this hub and nothing else."""
        return {"HF_ENDPOINT": self.url, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_XET": "1"}
