"""The fake Slack's files: files_upload_v2's three steps, and files.delete, as strict as Slack.

    files.getUploadURLExternal   filename and a positive byte `length`: a file ID and a one-time upload URL
    POST <upload URL>            exactly `length` bytes, once (else HTTP 400; an unknown URL is 404)
    files.completeUploadExternal the uploaded files, shared into `channel_id` (an ID, the bot a member) and,
                                 with `thread_ts`, into the thread of a message that exists there; a file
                                 not uploaded yet, or completed before, is `file_not_found`
    files.delete                 a file of the bot's: `file_not_found` if never made, `file_deleted` twice

Every completed file is kept (with `deleted_at` once deleted) so tests can read what Slack was sent.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.slack_answers import Answer, error_answer, json_param


@dataclass
class PendingFile:
    """A file between getUploadURLExternal and completeUploadExternal."""

    id: str
    filename: str
    length: int
    content: bytes | None = None


@dataclass
class Files:
    """The files of the workspace; `upload_base()` is the fake's URL (upload URLs point at it)."""

    upload_base: Callable[[], str]
    clock: Callable[[], float]
    pending: dict[str, PendingFile] = field(default_factory=dict)
    uploads: list[dict[str, Any]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def upload_url(self, params: Mapping[str, Any]) -> Answer:
        length = str(params.get("length", ""))
        if not params.get("filename") or not length.isdigit() or int(length) <= 0:
            return error_answer("invalid_arguments")
        file_id = f"F{next(self._ids):08d}"
        self.pending[file_id] = PendingFile(file_id, str(params["filename"]), int(length))
        return {"ok": True, "upload_url": f"{self.upload_base()}/upload/{file_id}", "file_id": file_id}

    def receive(self, file_id: str, body: bytes) -> tuple[int, str]:
        """The upload URL's answer to a POST of `body`: (HTTP status, text)."""
        pending = self.pending.get(file_id)
        if pending is None:
            return 404, "unknown upload"
        if pending.content is not None:
            return 400, "already uploaded"
        if len(body) != pending.length:
            return 400, f"length mismatch: {len(body)} bytes sent, {pending.length} announced"
        pending.content = body
        return 200, f"OK - {len(body)}"

    def complete(self, params: Mapping[str, Any], where: Mapping[str, Any]) -> Answer:
        """Share uploaded files; `where` is the channel and thread the workspace checked."""
        files = json_param(params.get("files"))
        if not isinstance(files, list) or not files or not all(isinstance(f, dict) for f in files):
            return error_answer("invalid_arguments")
        found = [self.pending.get(str(f.get("id", ""))) for f in files]
        ready = [(f, p, p.content) for f, p in zip(files, found, strict=True) if p and p.content is not None]
        if len(ready) < len(files):
            return error_answer("file_not_found")
        done = []
        for f, pending, content in ready:
            del self.pending[pending.id]
            upload = {"id": pending.id, "filename": pending.filename, "length": pending.length}
            upload |= {"content": content, "title": f.get("title"), "at": self.clock(), **where}
            self.uploads.append(upload)
            done.append({"id": pending.id, "title": f.get("title")})
        return {"ok": True, "files": done}

    def delete(self, params: Mapping[str, Any]) -> Answer:
        file_id = str(params.get("file") or "")
        upload = next((u for u in self.uploads if u["id"] == file_id), None)
        if upload is None:
            return error_answer("file_not_found")
        if upload.get("deleted_at") is not None:
            return error_answer("file_deleted")
        upload["deleted_at"] = self.clock()
        return {"ok": True}

    def shown(self) -> list[dict[str, Any]]:
        """The uploads not deleted."""
        return [u for u in self.uploads if u.get("deleted_at") is None]
